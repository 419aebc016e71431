# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""R595 from NVIDIA's Ubuntu repository, judged by the REAL apt of this machine (no root, no network) on the FIXTURE
repository of molecule/gpu_host on Ubuntu 26.04 (tests/aptrepo/specs/cuda-ubuntu2604.yml), whose NVIDIA repository
starts at R595. From R590 on, NVIDIA's Ubuntu names carry no branch (nvidia-dkms-open, libnvidia-compute: its
ubuntu2404 Packages as quoted in dsx-ai-factory/infra-controller#6049), and the driver role's after-install check
expects exactly the names of data/compat.yml driver_package_names.nvidia_repo.ubuntu at the driver's version. The first
run of molecule/gpu_host on 26.04 failed that check ("with libnvidia-compute, nvidia-dkms-open at the same version")
because the fixture modelled 595 with Debian's names only; this keeps fixture and data in step."""

from __future__ import annotations

import functools
import os
import shutil
import sys

import pytest
import yaml

from ansible_collections.dlbox.stack.plugins.plugin_utils import nvidia_driver_plan as ndp

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "aptrepo"))
import apt_root  # noqa: E402  pylint: disable=wrong-import-position

pytestmark = pytest.mark.skipif(not (shutil.which("apt-get") and shutil.which("gpg")), reason="apt and gpg are not installed here")
VERSION = "595.71.05"
FAMILY = ["*nvidia*", "libcuda*", "libnvcuvid*", "libnvoptix*", "libnvidia*", "cuda-drivers*"]


@functools.lru_cache(maxsize=None)
def _nvidia_repo_ubuntu_rows():
    """data/compat.yml's rows, read once for this module (5 lookups)."""
    with open(os.path.join(ROOT, "data", "compat.yml"), encoding="utf-8") as fh:
        return yaml.safe_load(fh)["driver_package_names"]["nvidia_repo"]["ubuntu"]


def _ubuntu_names(branch):
    """The data's Ubuntu row of NVIDIA's repository for BRANCH: (open kernel package, same-version packages)."""
    rows = _nvidia_repo_ubuntu_rows()
    row = next(r for r in rows if r["branch_min"] <= branch and (r["branch_max"] is None or branch <= r["branch_max"]))
    return (row["kernel"]["open"].replace("{branch}", str(branch)),
            [n.replace("{branch}", str(branch)) for n in row["same_version"]])


def _apt(tmp_path_factory, branch):
    """The FIXTURE repository with the role's branch pin for BRANCH (o=NVIDIA, as the role writes it)."""
    root = str(tmp_path_factory.mktemp("ubuntu2604-%d" % branch))
    return apt_root.make_root(root, "cuda-ubuntu2604.yml", pin=ndp.branch_pin(branch, FAMILY, "test", "NVIDIA"))[0]


def test_the_data_names_branchless_packages_from_590():
    assert _ubuntu_names(595) == ("nvidia-dkms-open", ["libnvidia-compute"])
    assert _ubuntu_names(580) == ("nvidia-dkms-580-open", ["libnvidia-compute-580"])


def test_nvidia_open_595_installs_the_data_names_at_the_drivers_version(tmp_path_factory):
    apt = _apt(tmp_path_factory, 595)
    kernel, same = _ubuntu_names(595)
    sim = apt_root.run(apt, "apt-get", "-s", "install", "--no-install-recommends", "nvidia-open", "nvidia-driver-pinning-595")
    assert sim.returncode == 0, sim.stdout + sim.stderr
    for name in [kernel] + same:
        assert "Inst %s (%s-" % (name, VERSION) in sim.stdout, (name, sim.stdout)
    assert "Inst nvidia-kernel-open-dkms " not in sim.stdout  # Debian's name: not on Ubuntu


def test_the_580_request_keeps_its_branch_named_packages(tmp_path_factory):
    apt = _apt(tmp_path_factory, 580)
    kernel, same = _ubuntu_names(580)
    sim = apt_root.run(apt, "apt-get", "-s", "install", "--no-install-recommends", "nvidia-open-580")
    assert sim.returncode == 0, sim.stdout + sim.stderr
    for name in [kernel] + same:
        assert "Inst %s (580.95.05-" % name in sim.stdout, (name, sim.stdout)
