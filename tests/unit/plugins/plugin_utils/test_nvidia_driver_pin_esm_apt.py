# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 48 red-team 1: the branch pin and Ubuntu Pro's ESM archives, read by the REAL apt of this machine (apt-get -s
on local file: archives; no root, no network). A 20.04 host past standard support (data/compat.yml supports focal) gets
its kernels from esm.ubuntu.com, whose Release files say Origin UbuntuESM (infra) and UbuntuESMApps (apps)
(canonical/ubuntu-pro-client#928, #932; CanonicalLtd/archive-auth-mirror#43; data/compat.yml origins_also). A pin that
allowed the branch's packages from o=Ubuntu only gave the ESM kernel's signed module -1: the kernel came alone."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from ansible_collections.dlbox.stack.plugins.plugin_utils import nvidia_driver_plan as p
from ansible_collections.dlbox.stack.tests.unit.plugins.plugin_utils.test_nvidia_driver_pin_origin import FAMILY, _setup

pytestmark = pytest.mark.skipif(not shutil.which("apt-get"), reason="apt is not installed here")

OLD_ABI, NEW_ABI = "5.4.0-200", "5.4.0-201"
OLD_K, NEW_K = "5.4.0.200.198", "5.4.0.201.199"
OLD_D, NEW_D = "535.183.01-0ubuntu0.20.04.1", "535.230.02-0ubuntu0.20.04.1+esm1"


def _kernel(abi, meta_version, driver_version):
    image = "linux-image-%s-generic" % abi
    module = "linux-modules-nvidia-535-%s-generic" % abi
    return [(image, "%s.1" % abi), (module, "%s.1" % abi, "nvidia-kernel-common-535 (>= %s), %s" % (driver_version.split("-")[0], image)),
            ("linux-generic", meta_version, image),
            ("linux-modules-nvidia-535-generic", meta_version, module),
            ("nvidia-kernel-common-535", driver_version),
            ("libnvidia-compute-535", driver_version, "nvidia-kernel-common-535 (= %s)" % driver_version)]


def _status(packages):
    out = ""
    for entry in packages:
        depends = "Depends: %s\n" % entry[2] if len(entry) > 2 else ""
        out += ("Package: %s\nStatus: install ok installed\nVersion: %s\nArchitecture: amd64\n%sMaintainer: t\n"
                "Description: t\n\n" % (entry[0], entry[1], depends))
    return out


def _upgrade(tmp_path, pin_text):
    installed = _kernel(OLD_ABI, OLD_K, OLD_D)
    opts = _setup(tmp_path, pin_text, [("focal-updates", "Ubuntu", installed),
                                       ("esm-infra", "UbuntuESM", _kernel(NEW_ABI, NEW_K, NEW_D))], _status(installed))
    sim = subprocess.run(["apt-get"] + opts + ["-s", "dist-upgrade"], check=True, capture_output=True, text=True).stdout
    return dict(re.findall(r"^Inst (\S+) (?:\[\S+\] )?\((\S+)", sim, re.M))


def test_the_esm_kernel_comes_with_its_signed_module(tmp_path):
    text = p.branch_pin(535, FAMILY, "Ubuntu's signed modules", "Ubuntu")
    assert "Pin: release o=UbuntuESM\nPin-Priority: 1000" in text and "Pin: release o=UbuntuESMApps\nPin-Priority: 1000" in text
    got = _upgrade(tmp_path, text)
    assert got.get("linux-image-%s-generic" % NEW_ABI) and got.get("linux-modules-nvidia-535-%s-generic" % NEW_ABI), got
    assert got.get("linux-modules-nvidia-535-generic") == NEW_K and got.get("nvidia-kernel-common-535") == NEW_D, got


def test_a_pin_on_origin_ubuntu_alone_brings_the_esm_kernel_alone(tmp_path):
    # the control: what the role wrote before (no ESM origins): the kernel comes, its signed module is pinned out
    names = dict(p.compat_data.load_compat()["driver_package_names"], origins_also={})
    got = _upgrade(tmp_path, p.branch_pin(535, FAMILY, "Ubuntu's signed modules", "Ubuntu", names))
    assert got.get("linux-image-%s-generic" % NEW_ABI), got
    assert "linux-modules-nvidia-535-%s-generic" % NEW_ABI not in got and "nvidia-kernel-common-535" not in got, got


def test_other_origins_get_no_esm_stanza():
    assert "UbuntuESM" not in p.branch_pin(535, FAMILY, "t", "Debian") + p.branch_pin(535, FAMILY, "t", "NVIDIA")
