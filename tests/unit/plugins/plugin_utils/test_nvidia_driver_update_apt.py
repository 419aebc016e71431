# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""nvidia_driver_update's one transaction, resolved by the REAL apt of this machine (apt-get -s, no root, no network) on
the FIXTURE archive a month later (tests/aptrepo/specs/ubuntu-noble-signed-month.yml: Ubuntu's names and Depends, a
point release 580.178.04 -> 580.196.07 and kernel 6.8.0-1003 whose signed module is built against it), with the role's
branch pin by origin and version. The installed host is Ubuntu's signed desktop set at 580.178.04 on kernel 6.8.0-1002
(dpkg status written from the archive's own stanzas)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

from ansible_collections.dlbox.stack.plugins.plugin_utils import nvidia_driver_holds as nh
from ansible_collections.dlbox.stack.plugins.plugin_utils import nvidia_driver_plan as p
from ansible_collections.dlbox.stack.plugins.plugin_utils import nvidia_driver_update as nu

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", ".."))
FAMILY = ["*nvidia*", "libcuda*", "libnvcuvid*", "libnvoptix*", "libnvidia*", "cuda-drivers*"]
OLD = "580.178.04-0ubuntu0.24.04.1+fixture1"
USER = ["nvidia-driver-580-open", "libnvidia-gl-580", "libnvidia-common-580", "nvidia-kernel-common-580", "nvidia-kernel-source-580-open",
        "libnvidia-compute-580", "libnvidia-extra-580", "nvidia-compute-utils-580", "libnvidia-decode-580", "libnvidia-encode-580",
        "nvidia-utils-580", "xserver-xorg-video-nvidia-580", "libnvidia-cfg1-580", "libnvidia-fbc1-580"]
KERNEL = {"linux-image-6.8.0-1001-generic": "6.8.0-1001.1001", "linux-modules-6.8.0-1001-generic": "6.8.0-1001.1001",
          "linux-image-6.8.0-1002-generic": "6.8.0-1002.1002", "linux-modules-6.8.0-1002-generic": "6.8.0-1002.1002",
          "linux-image-generic-hwe-24.04": "6.8.0-1002.1002", "linux-modules-nvidia-580-open-6.8.0-1002-generic": "6.8.0-1002.1002",
          "linux-modules-nvidia-580-open-generic-hwe-24.04": "6.8.0-1002.1002",
          # Ubuntu's linux-meta shape: linux-generic-hwe-24.04 -> the image and headers metas
          "linux-generic-hwe-24.04": "6.8.0-1002.1002", "linux-headers-generic-hwe-24.04": "6.8.0-1002.1002",
          "linux-headers-6.8.0-1002-generic": "6.8.0-1002.1002"}

sys.path.insert(0, os.path.join(ROOT, "tests", "aptrepo"))
import apt_root  # noqa: E402  pylint: disable=wrong-import-position

pytestmark = pytest.mark.skipif(not (shutil.which("apt-get") and shutil.which("gpg")), reason="apt and gpg are not installed here")


@pytest.fixture(scope="module")
def apt(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("month"))
    want = dict((n, OLD) for n in USER)
    want.update(KERNEL)
    opts, stanzas = apt_root.make_root(root, "ubuntu-noble-signed-month.yml", want, pin=p.branch_pin(580, FAMILY, "test", "Ubuntu"))
    assert len(stanzas) == len(want)
    installed = [{"name": s["Package"], "version": s["Version"], "arch": "amd64"} for s in stanzas]
    return opts, installed, root


def test_the_update_moves_driver_module_and_kernel_in_one_transaction(apt):
    opts, installed, _root = apt
    names = nu.update_names(installed, FAMILY, 580)
    assert "linux-modules-nvidia-580-open-generic-hwe-24.04" in names and "linux-modules-nvidia-580-open-6.8.0-1002-generic" not in names
    sim = subprocess.run(["apt-get"] + opts + ["-s", "install", "--no-install-recommends"] + names, capture_output=True, text=True,
                         check=False)
    print(sim.stdout)
    out = nu.update_plan(installed, FAMILY, 580, {"stdout": sim.stdout, "stderr": sim.stderr, "rc": sim.returncode})
    assert out["ok"], out["message"]
    assert (out["installed_version"], out["available_version"]) == ("580.178.04", "580.196.07")
    exact = dict(n.split("=", 1) for n in out["install_names"])
    for name in USER:
        assert exact.get(name) == "580.196.07-0ubuntu0.24.04.1+fixture1", (name, exact)
    # the new kernel's signed module brings its kernel; the booted kernel's module is respun against the new release
    assert exact.get("linux-modules-nvidia-580-open-6.8.0-1003-generic") == "6.8.0-1003.1003"
    assert "linux-image-6.8.0-1003-generic" in exact
    assert exact.get("linux-modules-nvidia-580-open-6.8.0-1002-generic") == "6.8.0-1002.1002+1"
    assert out["removes"] == []
    # the kernel metas move with the module meta: none left behind with the new kernel booted (red-team of issue 48:
    # linux-image-generic-hwe-24.04 stayed at 1002 while 6.8.0-1003 booted)
    for meta in ("linux-generic-hwe-24.04", "linux-image-generic-hwe-24.04", "linux-headers-generic-hwe-24.04"):
        assert exact.get(meta) == "6.8.0-1003.1003", (meta, exact)
    assert exact.get("linux-headers-6.8.0-1003-generic") == "6.8.0-1003.1003"


def test_apt_get_upgrade_keeps_the_kernel_meta_back_with_the_module_and_the_driver(apt):
    # apt-get upgrade installs no new package: the kernel meta (a new kernel), the module meta (the new kernel's module)
    # and the driver (its new point release needs that module's Provides) are kept back together; no kernel comes
    # without its module (the driver's update above moves them)
    opts, _installed, _root = apt
    sim = subprocess.run(["apt-get"] + opts + ["-s", "upgrade"], capture_output=True, text=True, check=False)
    kept_back = " ".join(sim.stdout.split("kept back:")[1].split("The following")[0].split())
    for name in ("linux-image-generic-hwe-24.04", "linux-modules-nvidia-580-open-generic-hwe-24.04", "nvidia-kernel-common-580",
                 "nvidia-driver-580-open", "libnvidia-compute-580"):
        assert name in kept_back.split(), sim.stdout
    assert not re.findall(r"^Inst (linux-image-6\.8\.0-1003\S*|linux-modules-nvidia\S*)", sim.stdout, re.M), sim.stdout


def _unattended(apt, kept_out):
    """What an unattended run moves, by the REAL apt: unattended-upgrades does not change a package its
    Package-Blacklist names (nor one whose change needs it); modelled here by dpkg's hold on those names (a FIXTURE of
    u-u's rule, not u-u itself: unattended-upgrade/unattended_upgrade.py is_pkg_change_allowed), then
    apt-get -s upgrade --with-new-pkgs (u-u installs the new kernel packages a meta brings)."""
    opts, installed, root = apt
    status = os.path.join(root, "state", "status")
    held = os.path.join(root, "state", "status-held")
    text = open(status).read()
    for name in kept_out:
        text = text.replace("Package: %s\n" % name, "Package: %s\nX-Held: yes\n" % name)
    blocks = []
    for block in text.split("\n\n"):
        if "X-Held: yes" in block:
            block = block.replace("X-Held: yes\n", "").replace("Status: install ok installed", "Status: hold ok installed")
        blocks.append(block)
    with open(held, "w") as fh:
        fh.write("\n\n".join(blocks))
    sim = subprocess.run(["apt-get"] + opts + ["-o", "Dir::State::status=%s" % held, "-s", "upgrade", "--with-new-pkgs"],
                         capture_output=True, text=True, check=False)
    assert sim.returncode == 0, sim.stderr
    return sim.stdout, [n["name"] for n in installed]


def _signed_blacklist(installed):
    names = [n["name"] for n in installed]
    return nh.blacklist(USER, names, ["^(lib)?nvidia(?!-mig-manager$)", "^libcuda", "^xserver-xorg-video-nvidia"], "precompiled",
                        ["generic-hwe-24.04"], ["linux-modules-nvidia-580-open-generic-hwe-24.04"])["names"]


def test_unattended_moves_the_kernel_with_its_module_and_driver_under_the_signed_blacklist(apt):
    # red-team of issue 48: the signed path's blacklist kept the kernel metas out of unattended-upgrades forever (no
    # security kernel ever came); Ubuntu's design moves kernel meta, module meta, nvidia-kernel-common and user space together
    out, have = _unattended(apt, _signed_blacklist(apt[1]))
    print(out)
    for name in ("linux-image-6.8.0-1003-generic", "linux-modules-nvidia-580-open-6.8.0-1003-generic", "linux-image-generic-hwe-24.04",
                 "linux-generic-hwe-24.04", "linux-modules-nvidia-580-open-generic-hwe-24.04", "nvidia-kernel-common-580",
                 "libnvidia-compute-580"):
        assert re.search(r"^Inst %s " % re.escape(name), out, re.M), name
    assert nh.kernel_without_module(out, have) == []


def test_a_kernel_whose_module_cannot_come_is_reported(apt):
    # the module's driver version not in an allowed origin (modelled: the user space kept where it is): the kernel metas
    # would bring 6.8.0-1003 alone; the role reports it (unattended-upgrades would do the same)
    opts, installed, _root = apt
    out, have = _unattended(apt, USER)
    assert re.search(r"^Inst linux-image-6\.8\.0-1003-generic ", out, re.M), out
    assert not re.search(r"^Inst linux-modules-nvidia-580-open-6\.8\.0-1003-generic ", out, re.M), out
    assert nh.kernel_without_module(out, have) == ["6.8.0-1003-generic"]
