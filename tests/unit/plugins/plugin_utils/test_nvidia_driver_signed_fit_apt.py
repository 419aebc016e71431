# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The running kernel's signed module of an OLDER driver point release (red-team of issue 44), judged by the REAL apt of
this machine (no root, no network) on the FIXTURE archive of molecule/nvidia_driver_signed with a module for the running
kernel of an older point release (tests/aptrepo/specs/ubuntu-noble-signed-old-module.yml: Ubuntu's names and Depends;
kernel 6.8.0-1001's module Depends nvidia-kernel-common-580 (<= 580.105.08-1), (>= 580.105.08), the driver is 580.178.04,
the shape of the recorded noble-updates case in tests/fixtures/holds/ubuntu2404-noble-updates-nvidia-580.txt). The host is that scenario's
machine before run 1: running 6.8.0-1001, the HWE meta installed with its kernel 6.8.0-1002, no driver (dpkg status
written from the archive's own stanzas). The role's read (roles/nvidia_driver/tasks/check.yml: apt-cache show of the
module, apt-cache policy of nvidia-kernel-common-580) goes to the plan as the role passes it."""

from __future__ import annotations

import os
import re
import shutil
import sys

import pytest

from ansible_collections.dlbox.stack.plugins.module_utils import kernel as k
from ansible_collections.dlbox.stack.plugins.plugin_utils import nvidia_driver_plan as p
from ansible_collections.dlbox.stack.plugins.plugin_utils.compat_data import load_compat

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", ".."))
DATA = load_compat(os.path.join(ROOT, "tests", "unit", "data", "compat-frozen.yml"))
RUNNING, NEXT = "6.8.0-1001-generic", "6.8.0-1002-generic"
OLD_MODULE = "linux-modules-nvidia-580-open-" + RUNNING
INSTALLED = {"linux-image-6.8.0-1001-generic": "6.8.0-1001.1001", "linux-modules-6.8.0-1001-generic": "6.8.0-1001.1001",
             "linux-image-6.8.0-1002-generic": "6.8.0-1002.1002", "linux-modules-6.8.0-1002-generic": "6.8.0-1002.1002",
             "linux-image-generic-hwe-24.04": "6.8.0-1002.1002"}

sys.path.insert(0, os.path.join(ROOT, "tests", "aptrepo"))
import apt_root  # noqa: E402  pylint: disable=wrong-import-position

pytestmark = pytest.mark.skipif(not (shutil.which("apt-get") and shutil.which("gpg")), reason="apt and gpg are not installed here")


@pytest.fixture(scope="module")
def apt(tmp_path_factory):
    opts, stanzas = apt_root.make_root(str(tmp_path_factory.mktemp("signed")), "ubuntu-noble-signed-old-module.yml", INSTALLED)
    assert len(stanzas) == len(INSTALLED)
    packages = [{"name": s["Package"], "version": s["Version"], "installed": True, "depends": s.get("Depends", "")} for s in stanzas]
    return opts, packages


_run = apt_root.run


def _decide(opts, packages, running_module):
    names = _run(opts, "apt-cache", "pkgnames", "linux-modules-nvidia-").stdout.split()
    kernel = {"running": RUNNING, "packages": packages, "boot": [RUNNING, NEXT],
              "module_names": k.module_names_for(names, [RUNNING, NEXT])}
    plan = {"ok": True, "errors": [], "host": {"nvswitch": False},
            "stack": {"driver": {"branch": 580, "kernel_modules": "open", "method": "distro", "packages": ["nvidia-driver-580-open"],
                                 "repo": None, "family": DATA["driver_package_names"]["family"], "min_version": "580.0",
                                 "version_available": None}, "fabric_manager": None}}
    options = dict(method="distro", branch="", kernel_modules="", profile="desktop", other_branch="refuse", change_branch=False,
                   keep_dir="/var/backups/dlbox-nvidia-driver", in_container="skip", build_kernels=[], kernel_flavour="",
                   secure_boot="auto", secure_boot_signing="auto", mok_key="", mok_certificate="",
                   shim_mok_dir="/var/lib/shim-signed/mok", pin_name="dlbox-00-nvidia-driver-branch.pref", hostname="gpu1",
                   distribution="Ubuntu", distribution_version="24.04", kernel=RUNNING, check_mode=False, request_text="{}")
    facts = {"kernel": kernel}
    if running_module is not None:
        facts["running_module"] = running_module
    return p.decide(DATA, options, plan, host={"secure_boot": True}, facts=facts)


def test_apt_refuses_the_running_kernels_module_of_an_older_point_release_with_the_driver(apt):
    # the defect as apt sees it: the plan without the read adds the module, and that set is an impossible request
    opts, packages = apt
    before = _decide(opts, packages, None)
    assert OLD_MODULE in before["set"]["packages"]
    sim = _run(opts, "apt-get", "-s", "install", "--no-install-recommends", *before["set"]["packages"])
    assert sim.returncode != 0 and OLD_MODULE in sim.stdout + sim.stderr, sim.stdout + sim.stderr


def test_the_role_read_leaves_it_out_and_the_set_installs_with_the_next_kernels_module(apt):
    opts, packages = apt
    decided = _decide(opts, packages, None)
    read = {"show": _run(opts, "apt-cache", "show", "--no-all-versions", decided["kernel"]["running_package"]).stdout,
            "policy": _run(opts, "apt-cache", "policy", decided["kernel"]["common"]).stdout}
    out = _decide(opts, packages, read)
    assert out["ok"] and OLD_MODULE not in out["set"]["packages"]
    assert out["kernel"]["fit"]["requires"] == [("<=", "580.105.08-1"), (">=", "580.105.08")]
    assert out["kernel"]["fit"]["driver_version"] == "580.178.04-0ubuntu0.24.04.1+fixture1"
    reason = out["pending_reboot_reason"]
    assert RUNNING in reason and NEXT + ", which boots next" in reason and "another driver point release" in reason
    sim = _run(opts, "apt-get", "-s", "install", "--no-install-recommends", *out["set"]["packages"])
    assert sim.returncode == 0, sim.stdout + sim.stderr
    assert re.search(r"^Inst linux-modules-nvidia-580-open-%s " % re.escape(NEXT), sim.stdout, re.M), sim.stdout
    assert re.search(r"^Inst nvidia-kernel-common-580 \(580\.178\.04-", sim.stdout, re.M), sim.stdout
