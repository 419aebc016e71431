# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""NSCQ with Ubuntu's server driver and Fabric Manager, judged by the REAL apt of this machine (no root, no network) on
the FIXTURE archive of molecule/server_hgx_default (tests/aptrepo/specs/ubuntu-jammy-server.yml: Ubuntu's names and
Depends, marker payloads; libnvidia-nscq-580 as the recorded noble-updates stanza has it). What the role reads
(apt-cache madison of Fabric Manager and NSCQ, roles/nvidia_driver/tasks/check.yml) gives the names the role hands apt
in the driver's transaction (plugin_utils.nvlink5_fabric.versions), and apt installs them together."""

from __future__ import annotations

import os
import shutil
import sys

import pytest

from ansible_collections.dlbox.stack.plugins.plugin_utils import nvidia_driver_plan as ndp
from ansible_collections.dlbox.stack.plugins.plugin_utils import nvlink5_fabric as nf

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", ".."))
DRIVER = "580.178.04-0ubuntu0.22.04.1+fixture1"
SERVER_SET = ["nvidia-headless-no-dkms-580-server-open", "nvidia-utils-580-server", "linux-modules-nvidia-580-server-open-generic"]

sys.path.insert(0, os.path.join(ROOT, "tests", "aptrepo"))
import apt_root  # noqa: E402  pylint: disable=wrong-import-position

pytestmark = pytest.mark.skipif(not (shutil.which("apt-get") and shutil.which("gpg")), reason="apt and gpg are not installed here")


@pytest.fixture(scope="module")
def apt(tmp_path_factory):
    return apt_root.make_root(str(tmp_path_factory.mktemp("jammy-server")), "ubuntu-jammy-server.yml")[0]


_run = apt_root.run


def test_madison_gives_nscq_at_the_drivers_version_and_apt_installs_it_with_fabric_manager(apt):
    madison = _run(apt, "apt-cache", "madison", "nvidia-fabricmanager-580", "libnvidia-nscq-580").stdout
    fm = ndp.fabric_manager_version(madison, "nvidia-fabricmanager-580", DRIVER)
    assert fm["ok"] and fm["version"] == DRIVER
    fabric = nf.fabric_set({"package": "nvidia-fabricmanager-580", "nscq": {"package": "libnvidia-nscq-580"}}, {})
    got = nf.versions(fabric, madison, DRIVER)
    assert got["ok"] and got["install_names"] == ["libnvidia-nscq-580=%s" % DRIVER] and got["warning"] == ""
    names = SERVER_SET + ["nvidia-fabricmanager-580=" + DRIVER] + got["install_names"]
    sim = _run(apt, "apt-get", "-s", "install", "--no-install-recommends", *names)
    assert sim.returncode == 0, sim.stdout + sim.stderr
    assert "Inst libnvidia-nscq-580 (%s " % DRIVER in sim.stdout and "Inst nvidia-fabricmanager-580 (%s " % DRIVER in sim.stdout


def test_nscq_depends_on_the_server_series_at_the_drivers_version(apt):
    """The same Depends as Fabric Manager (the versioned virtual nvidia-kernel-common-580-server-<version>, provided by
    the server series' nvidia-kernel-common-580-server): NSCQ must follow the driver, which is why the role pins it to
    the driver's exact version and holds it with it."""
    depends = _run(apt, "apt-cache", "depends", "libnvidia-nscq-580").stdout
    assert "Depends: <nvidia-kernel-common-580-server-580.178.04>\n    nvidia-kernel-common-580-server\n" in depends
