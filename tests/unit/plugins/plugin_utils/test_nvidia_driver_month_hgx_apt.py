# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The HGX host a month later, resolved by the REAL apt of this machine (apt-get -s, no root, no network) and the REAL
unattended-upgrade --dry-run, on the FIXTURE archive tests/aptrepo/specs/ubuntu-jammy-server-month.yml (Ubuntu's
-server series names and Depends: a point release 580.178.04 -> 580.196.07 with Fabric Manager and NSCQ at it, kernel
5.15.0-1002 whose signed module is built against it; Origin Ubuntu). The installed host is the HGX server set of
ubuntu-jammy-server.yml at 580.178.04 (the signed -server-open modules, nvidia-fabricmanager-580, libnvidia-nscq-580) on
kernel 5.15.0-1001 (dpkg status written from the archive's own stanzas), with the role's decision: the branch pin by
origin and version (nvidia_driver_plan.branch_pin), the holds and the unattended-upgrades blacklist
(nvidia_driver_holds.hold_list / blacklist, nvidia_driver_kernel.keep_lists), the update (nvidia_driver_update)."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys

import pytest

from ansible_collections.dlbox.stack.plugins.plugin_utils import nvidia_driver_holds as nh
from ansible_collections.dlbox.stack.plugins.plugin_utils import nvidia_driver_kernel as nk
from ansible_collections.dlbox.stack.plugins.plugin_utils import nvidia_driver_plan as p
from ansible_collections.dlbox.stack.plugins.plugin_utils import nvidia_driver_update as nu

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "aptrepo"))
import apt_root  # noqa: E402  pylint: disable=wrong-import-position

SPEC = "ubuntu-jammy-server-month.yml"
FAMILY = ["*nvidia*", "libcuda*", "libnvcuvid*", "libnvoptix*", "libnvidia*", "cuda-drivers*"]
OLD = "580.178.04-0ubuntu0.22.04.1+fixture1"
NEW = "580.196.07-0ubuntu0.22.04.1+fixture1"
FM, NSCQ = "nvidia-fabricmanager-580", "libnvidia-nscq-580"
USER = ["nvidia-headless-no-dkms-580-server-open", "nvidia-firmware-580-server-580.178.04", "nvidia-kernel-common-580-server",
        "nvidia-kernel-source-580-server-open", "libnvidia-compute-580-server", "nvidia-compute-utils-580-server",
        "nvidia-utils-580-server", "libnvidia-cfg1-580-server", FM, NSCQ]
KERNEL = {"linux-image-5.15.0-1001-generic": "5.15.0-1001.1001", "linux-modules-5.15.0-1001-generic": "5.15.0-1001.1001",
          "linux-modules-nvidia-580-server-open-5.15.0-1001-generic": "5.15.0-1001.1001",
          "linux-image-generic": "5.15.0.1001.1001", "linux-modules-nvidia-580-server-open-generic": "5.15.0-1001.1001",
          "linux-headers-5.15.0-1001-generic": "5.15.0-1001.1001", "linux-headers-generic": "5.15.0.1001.1001"}
# the role's signed -server set (data/compat.yml distro_sets precompiled, server profile) with Fabric Manager and NSCQ
SET = ["nvidia-headless-no-dkms-580-server-open", "nvidia-utils-580-server", "linux-modules-nvidia-580-server-open-generic",
       "linux-modules-nvidia-580-server-open-5.15.0-1001-generic", FM, NSCQ]
PATTERNS = ["^(lib)?nvidia(?!-mig-manager$)", "^libcuda", "^firmware-nvidia", "^xserver-xorg-video-nvidia"]  # data/compat.yml
MOVE_TOGETHER = ["nvidia-kernel-common-580-server", "libnvidia-compute-580-server", "nvidia-utils-580-server", FM, NSCQ]

pytestmark = pytest.mark.skipif(not (shutil.which("apt-get") and shutil.which("gpg")), reason="apt and gpg are not installed here")


def _installed_want():
    want = dict((n, OLD) for n in USER)
    want.update(KERNEL)
    return want


def role_kept_out(signing="precompiled"):
    """The role's holds and unattended-upgrades blacklist for this host (as nvidia_driver_kernel.finish applies them)."""
    installed = USER + list(KERNEL)
    holds = nh.hold_list(SET, installed, signing, "distro")
    listed = nh.blacklist(SET, installed, PATTERNS, signing, ["generic"], ["linux-modules-nvidia-580-server-open-generic"])["names"]
    return nk.keep_lists(holds, listed, signing, 580)


@pytest.fixture(scope="module")
def apt(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("hgxmonth"))
    want = _installed_want()
    opts, stanzas = apt_root.make_root(root, SPEC, want, pin=p.branch_pin(580, FAMILY, "test", "Ubuntu"))
    assert len(stanzas) == len(want)
    installed = [{"name": s["Package"], "version": s["Version"], "arch": "amd64"} for s in stanzas]
    return opts, installed, root


def with_holds(root, opts, held):
    """A copy of the dpkg status with ``held`` on hold (dpkg's 'hold ok installed', what apt-mark hold writes): the opts."""
    status = os.path.join(root, "state", "status")
    out = os.path.join(root, "state", "status-held-%d" % len(os.listdir(os.path.join(root, "state"))))
    blocks = []
    with open(status, encoding="utf-8") as fh:
        for block in fh.read().split("\n\n"):
            name = (re.findall(r"^Package: (\S+)$", block, re.M) or [""])[0]
            blocks.append(block.replace("Status: install ok installed", "Status: hold ok installed") if name in held else block)
    with open(out, "w", encoding="utf-8") as fh:
        fh.write("\n\n".join(blocks))
    return opts + ["-o", "Dir::State::status=%s" % out]


def show(opts, title):
    """apt-mark showhold and apt-cache policy of the driver, FM, NSCQ and the kernel metas, printed (-s shows them)."""
    held = apt_root.run(opts, "apt-mark", "showhold").stdout
    policy = apt_root.run(opts, "apt-cache", "policy", "nvidia-headless-no-dkms-580-server-open", FM, NSCQ,
                          "nvidia-kernel-common-580-server", "linux-image-generic", "linux-modules-nvidia-580-server-open-generic").stdout
    print("== %s\n-- apt-mark showhold:\n%s-- apt-cache policy:\n%s" % (title, held or "(none)\n", policy))
    return held.split()


def inst(sim):
    """{name: new version} of the Inst lines of an apt-get -s run."""
    return dict(re.findall(r"^Inst (\S+) (?:\[[^\]]*\] )?\((\S+)", sim, re.M))


def test_month_hgx_update_moves_driver_fabric_manager_and_nscq_together(apt):
    opts, installed, _root = apt
    show(opts, "before nvidia_driver_update")
    names = nu.update_names(installed, FAMILY, 580)
    assert FM in names and NSCQ in names, names
    sim = apt_root.run(opts, "apt-get", "-s", "install", "--no-install-recommends", *names)
    print("-- apt-get -s install %s\n%s" % (" ".join(names), sim.stdout))
    out = nu.update_plan(installed, FAMILY, 580, {"stdout": sim.stdout, "stderr": sim.stderr, "rc": sim.returncode}, fm_package=FM)
    assert out["ok"] and out["action"] == "update", out
    assert (out["installed_version"], out["available_version"]) == ("580.178.04", "580.196.07")
    exact = dict(n.split("=", 1) for n in out["install_names"])
    for name in MOVE_TOGETHER + ["nvidia-headless-no-dkms-580-server-open", "nvidia-compute-utils-580-server",
                                 "nvidia-firmware-580-server-580.196.07"]:
        assert exact.get(name) == NEW, (name, exact)
    # the new kernel comes with its signed module, the running kernel's module respun against the new release
    assert exact.get("linux-modules-nvidia-580-server-open-5.15.0-1002-generic") == "5.15.0-1002.1002"
    assert "linux-image-5.15.0-1002-generic" in exact and exact.get("linux-image-generic") == "5.15.0.1002.1002"
    assert exact.get("linux-modules-nvidia-580-server-open-5.15.0-1001-generic") == "5.15.0-1001.1001+1"
    assert out["removes"] == [] and nh.kernel_without_module(sim.stdout, list(KERNEL)) == []


def test_month_hgx_the_update_refuses_when_fabric_manager_stays_behind(apt):
    # the control: Fabric Manager held by hand (a user's hold), the rest named: with Ubuntu's Depends (FM needs
    # nvidia-kernel-common-580-server-<its version>) apt itself refuses ("generated breaks, this may be caused by held
    # packages"), and the update is refused before any change (update_plan's "left at" check is the second line)
    opts, installed, root = apt
    held = with_holds(root, opts, [FM])
    names = nu.update_names(installed, FAMILY, 580)
    sim = apt_root.run(held, "apt-get", "-s", "install", "--no-install-recommends", *[n for n in names if n != FM])
    print(sim.stdout, sim.stderr)
    out = nu.update_plan(installed, FAMILY, 580, {"stdout": sim.stdout, "stderr": sim.stderr, "rc": sim.returncode}, fm_package=FM)
    assert not out["ok"] and any(m.startswith("apt cannot update the driver's packages together") for m in out["problems"]), out


def after(moved):
    """{name: version} of the group that must move together, after a transaction that installs ``moved``."""
    have = _installed_want()
    return dict((name, moved.get(name, have[name])) for name in MOVE_TOGETHER)


def test_month_hgx_apt_get_upgrade_without_the_update(apt):
    # without nvidia_driver_update, with the role's holds (the signed path holds nothing: the branch pin keeps the branch)
    opts, _installed, root = apt
    holds, _listed = role_kept_out("precompiled")
    held = with_holds(root, opts, holds)
    assert sorted(show(held, "the role's holds (signed path), no nvidia_driver_update")) == sorted(holds)
    # apt-get upgrade installs no new package: the kernel meta (a new kernel), the module meta (its module), the driver,
    # Fabric Manager and NSCQ (their new release needs the running kernel's respun module, which needs them) kept back together
    sim = apt_root.run(held, "apt-get", "-s", "upgrade")
    print("-- apt-get -s upgrade\n%s" % sim.stdout)
    assert sim.returncode == 0, sim.stderr
    assert set(after(inst(sim.stdout)).values()) == {OLD}, sim.stdout
    kept_back = sim.stdout.split("kept back:")[1].split("The following")[0].split()
    assert set(MOVE_TOGETHER + ["linux-image-generic", "linux-modules-nvidia-580-server-open-generic"]) <= set(kept_back), sim.stdout
    # with the new packages a kernel meta brings (what unattended-upgrades does): the kernel WITH its module, and the
    # driver, Fabric Manager and NSCQ at the one version the module needs
    sim = apt_root.run(held, "apt-get", "-s", "upgrade", "--with-new-pkgs")
    print("-- apt-get -s upgrade --with-new-pkgs\n%s" % sim.stdout)
    assert sim.returncode == 0, sim.stderr
    moved = inst(sim.stdout)
    assert set(after(moved).values()) == {NEW}, after(moved)
    assert moved.get("linux-modules-nvidia-580-server-open-5.15.0-1002-generic") == "5.15.0-1002.1002", moved
    assert nh.kernel_without_module(sim.stdout, list(KERNEL)) == [] and not re.findall(r"^Remv ", sim.stdout, re.M)


# The REAL unattended-upgrade --dry-run, through the harness of test_nvidia_driver_holds_unattended_real.py (its test
# hook main(options, rootdir), /usr/bin/python3's python3-apt, the role's template as the Package-Blacklist file).
_SPEC = importlib.util.spec_from_file_location("_uu_harness", os.path.join(HERE, "test_nvidia_driver_holds_unattended_real.py"))
UU = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(UU)
NO_UU = "unattended-upgrades (with python3-apt) is not installed here, nor unpacked in DLBOX_UNATTENDED_UPGRADE_ROOT"
needs_uu = pytest.mark.skipif(UU.PROGRAM is None, reason=NO_UU)


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    base = str(tmp_path_factory.mktemp("hgxuu"))
    subprocess.run([sys.executable, os.path.join(ROOT, "tests", "aptrepo", "build_repo.py"), os.path.join(ROOT, "tests", "aptrepo", "specs", SPEC),
                    os.path.join(base, "repo"), "--key-dir", os.path.join(base, "keys")], check=True, capture_output=True)
    return os.path.join(base, "repo")


def kernels_alone(result):
    return nh.kernel_without_module("\n".join("Inst %s (x)" % n for n in result["unpacked"]), list(KERNEL))


@needs_uu
def test_month_hgx_real_unattended_upgrade_moves_kernel_module_driver_fm_and_nscq_together(repo, tmp_path):
    holds, listed = role_kept_out("precompiled")
    result = UU.unattended(repo, str(tmp_path / "root"), holds, listed, want=_installed_want())
    print("-- the role's holds %s, blacklist %s\n%s" % (holds, listed, result["log"][-3000:]))
    for name in MOVE_TOGETHER + ["linux-image-generic", "linux-modules-nvidia-580-server-open-generic"]:
        assert name in result["upgraded"], (name, result["upgraded"])
    assert {"linux-image-5.15.0-1002-generic", "linux-modules-nvidia-580-server-open-5.15.0-1002-generic"} <= set(result["unpacked"])
    assert kernels_alone(result) == []


@needs_uu
@pytest.mark.parametrize("held", [NSCQ, "nvidia-kernel-common-580-server"])
def test_month_hgx_real_unattended_upgrade_brings_the_kernel_alone_when_one_of_the_group_is_held(repo, tmp_path, held):
    # the controls (the oracle is not vacuous): NSCQ held (it pins the 580.178.04 kernel-common through its Depends) or
    # the kernel follower held: unattended-upgrades cannot move the driver, and installs the kernel without its module
    result = UU.unattended(repo, str(tmp_path / "root"), [held], (), want=_installed_want())
    assert "linux-image-generic" in result["upgraded"] and FM not in result["upgraded"], result["upgraded"]
    assert kernels_alone(result) == ["5.15.0-1002-generic"], result["unpacked"]
