# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The hold and unattended-upgrades rule (plugin_utils.nvidia_driver_holds, issue 48), on RECORDED stanzas of Ubuntu's
live archive: tests/fixtures/holds/ubuntu2404-noble-updates-nvidia-580.txt (noble-updates restricted/multiverse
Packages, 2026-12-06) and tests/fixtures/kernel/ubuntu2404/apt-cache-show-metas.txt (the kernel metas, 2026-12-02)."""

from __future__ import annotations

import os
import re

import pytest

from ansible_collections.dlbox.stack.plugins.plugin_utils import nvidia_driver_holds as nh

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.normpath(os.path.join(HERE, "..", "..", "..", "fixtures"))


def _stanzas(path):
    """{package: {field: value}} of an apt-cache show / Packages text (comments left out)."""
    text = "\n".join(line for line in open(path).read().splitlines() if not line.startswith("#"))
    out = {}
    for block in re.split(r"\n\s*\n", text):
        fields, key = {}, None
        for line in block.splitlines():
            if line.startswith(" ") and key:
                fields[key] += "\n" + line
            elif ":" in line:
                key, value = line.split(":", 1)
                fields[key] = value.strip()
        if "Package" in fields:
            out.setdefault(fields["Package"], fields)
    return out


def _depends(fields):
    """[(name, op, version)] of a Depends field (alternatives flattened)."""
    out = []
    for part in re.split(r"[,|]", fields.get("Depends", "")):
        match = re.match(r"\s*(\S+)(?:\s*\((\S+)\s+([^)]+)\))?", part)
        if match:
            out.append((match.group(1), match.group(2), match.group(3)))
    return out


UBUNTU = _stanzas(os.path.join(FIXTURES, "holds", "ubuntu2404-noble-updates-nvidia-580.txt"))
METAS = _stanzas(os.path.join(FIXTURES, "kernel", "ubuntu2404", "apt-cache-show-metas.txt"))
BLACKLIST = ["^(lib)?nvidia(?!-mig-manager$)", "^libcuda", "^firmware-nvidia", "^xserver-xorg-video-nvidia"]


def _exact_version_needs(name):
    """The packages ``name`` requires at exactly one version: (>= X) with (<= X-1) on the same name, or a versioned
    virtual package (``nvidia-kernel-common-580-server-580.196.07``) that one package Provides."""
    deps = _depends(UBUNTU[name])
    ranges = {}
    for dep, op, _version in deps:
        if op:
            ranges.setdefault(dep, set()).add(op)
    out = set(dep for dep, ops in ranges.items() if {">=", "<="} <= ops or "=" in ops)
    providers = dict((p.split(" ")[0], pkg) for pkg, f in UBUNTU.items() for p in f.get("Provides", "").split(", ") if p)
    out |= set(providers[dep] for dep, _op, _v in deps if re.search(r"-\d+\.\d+\.\d+$", dep) and dep in providers)
    return out


def test_the_recorded_archive_ties_the_user_space_to_one_kernel_common():
    # every user-space package of the driver needs exactly its own nvidia-kernel-common (a virtual package of the
    # version that only that common provides), and so do Fabric Manager and NSCQ
    for name in ("libnvidia-compute-580", "nvidia-utils-580", "libnvidia-compute-580-server", "nvidia-utils-580-server",
                 "nvidia-fabricmanager-580", "libnvidia-nscq-580"):
        needs = _exact_version_needs(name)
        assert needs and all(n.startswith("nvidia-kernel-common-580") for n in needs), (name, needs)
    assert _exact_version_needs("nvidia-fabricmanager-580") == {"nvidia-kernel-common-580-server"}


def test_the_per_abi_module_needs_kernel_common_at_exactly_its_driver_version():
    for abi in ("6.8.0-149-generic", "6.8.0-151-generic"):
        name = "linux-modules-nvidia-580-open-" + abi
        assert _exact_version_needs(name) == {"nvidia-kernel-common-580"}
        assert nh.follows_kernel(name)
    # the module of an older kernel was built against the older point release: the archive has no module of the
    # newer point release for it, so a point release leaves that kernel without a module
    built = dict((abi, re.search(r"\(= ([\d.]+)-", UBUNTU["linux-modules-nvidia-580-open-" + abi]["Built-Using"]).group(1))
                 for abi in ("6.8.0-149-generic", "6.8.0-151-generic"))
    assert built == {"6.8.0-149-generic": "580.178.04", "6.8.0-151-generic": "580.196.07"}
    assert _exact_version_needs("linux-modules-nvidia-580-server-open-6.8.0-151-generic") == {"nvidia-kernel-common-580-server"}


def test_the_kernel_metas_do_not_depend_on_the_module_meta():
    # why a kernel can come without its module: linux-image-generic names no linux-modules-nvidia-*, and the module
    # meta names no kernel meta
    for meta in ("linux-image-generic", "linux-image-generic-hwe-24.04", "linux-generic"):
        assert not [d for d, _o, _v in _depends(METAS[meta]) if "nvidia" in d]
    assert not [d for d, _o, _v in _depends(UBUNTU["linux-modules-nvidia-580-open-generic"]) if d.startswith("linux-image")]


@pytest.mark.parametrize("name", ["nvidia-kernel-common-580", "nvidia-kernel-common-580-server", "linux-modules-nvidia-580-open-generic",
                                  "linux-modules-nvidia-580-server-open-6.8.0-151-generic", "linux-objects-nvidia-580-open-7.0.0-44-generic",
                                  "linux-signatures-nvidia-7.0.0-44-generic"])
def test_what_follows_the_kernel(name):
    assert name in UBUNTU or name.startswith(("linux-objects", "linux-signatures"))
    assert nh.follows_kernel(name)


@pytest.mark.parametrize("name", ["libnvidia-compute-580", "nvidia-utils-580-server", "nvidia-fabricmanager-580", "libnvidia-nscq-580",
                                  "nvidia-headless-no-dkms-580-server-open", "nvidia-kernel-common", "nvidia-kernel-source-580-open"])
def test_what_does_not_follow_the_kernel(name):
    assert not nh.follows_kernel(name)


def _installed(*names):
    return list(names)


SERVER_DKMS = ["nvidia-headless-580-server-open", "nvidia-utils-580-server"]
SERVER_DKMS_INSTALLED = SERVER_DKMS + ["nvidia-kernel-common-580-server", "libnvidia-compute-580-server", "nvidia-compute-utils-580-server",
                                       "nvidia-dkms-580-server-open", "nvidia-kernel-source-580-server-open", "nvidia-fabricmanager-580",
                                       "libnvidia-nscq-580", "bash"]


def test_dkms_path_holds_the_set_never_kernel_common():
    held = nh.hold_list(SERVER_DKMS, SERVER_DKMS_INSTALLED, "dkms", "distro")
    assert held == SERVER_DKMS
    listed = nh.blacklist(SERVER_DKMS, SERVER_DKMS_INSTALLED, BLACKLIST, "dkms")
    # the user space, FM and NSCQ stay out of unattended runs together; the kernel moves alone (DKMS builds for it)
    assert {"libnvidia-compute-580-server", "nvidia-fabricmanager-580", "libnvidia-nscq-580"} <= set(listed["names"])
    assert "nvidia-kernel-common-580-server" not in listed["names"] and "bash" not in listed["names"]
    assert not [n for n in listed["names"] if n.startswith("linux-")]


def test_nvidia_repo_holds_every_installed_driver_package_but_not_kernel_common():
    family = ["nvidia-driver-cuda", "nvidia-kernel-open-dkms", "libnvidia-compute-580", "nvidia-kernel-common-580"]
    held = nh.hold_list(["cuda-drivers-580", "nvidia-kernel-open-dkms"], family, "dkms", "nvidia_repo", family)
    assert held == ["nvidia-kernel-open-dkms", "nvidia-driver-cuda", "libnvidia-compute-580"]


SIGNED_SET = ["nvidia-headless-no-dkms-580-open", "nvidia-utils-580", "linux-modules-nvidia-580-open-generic",
              "linux-modules-nvidia-580-open-6.8.0-151-generic"]
SIGNED_INSTALLED = SIGNED_SET + ["nvidia-kernel-common-580", "libnvidia-compute-580", "linux-image-generic", "linux-generic"]


def test_signed_path_holds_nothing_and_blacklists_nothing_that_must_move_with_the_kernel():
    # red-team of issue 48: blacklisting the kernel metas kept every security kernel out of unattended-upgrades
    # forever. Ubuntu's design: the kernel meta, the module meta, nvidia-kernel-common and the user space (which depends
    # on that exact nvidia-kernel-common-580-<version>) move together
    assert nh.hold_list(SIGNED_SET, SIGNED_INSTALLED, "precompiled", "distro") == []
    listed = nh.blacklist(SIGNED_SET, SIGNED_INSTALLED, BLACKLIST, "precompiled", ["generic"], ["linux-modules-nvidia-580-open-generic"])
    names = set(listed["names"])
    for name in ("linux-generic", "linux-image-generic", "linux-headers-generic", "linux-modules-nvidia-580-open-generic",
                 "nvidia-kernel-common-580", "libnvidia-compute-580", "nvidia-utils-580"):
        assert name not in names, listed
    assert "move together" in listed["reason"]


def test_signed_blacklist_lets_the_new_module_and_what_it_depends_on_move():
    # from the recorded data: the per-ABI module depends on nvidia-kernel-common-580 (>= X); every user-space package
    # depends on nvidia-kernel-common-580-<its version> (provided only by that nvidia-kernel-common): none of them
    # may be blacklisted, or the module (and with the kernel metas free, the kernel) moves without it
    listed = set(nh.blacklist(SIGNED_SET, SIGNED_INSTALLED, BLACKLIST, "precompiled", ["generic", "generic-hwe-24.04"],
                              ["linux-modules-nvidia-580-open-generic", "linux-modules-nvidia-580-open-generic-hwe-24.04"])["names"])
    for name in UBUNTU:
        assert name not in listed, name
    for meta in ("linux-image-generic", "linux-image-generic-hwe-24.04", "linux-generic", "linux-generic-hwe-24.04"):
        assert meta in METAS and meta not in listed


def test_signed_keep_out_keeps_user_space_module_and_kernel_metas_out_together():
    """issue 48's red team HIGH 2: on the signed path an unattended run replaced the user space under the loaded module
    (NVML mismatch; Fabric Manager refusing the old module until a reboot: aws/aws-parallelcluster#3034,
    Azure/azhpc-images#86). nvidia_driver_unattended_signed: keep_out keeps ALL of them out together, so neither the
    driver nor a kernel moves alone; the default (together) is Ubuntu's design and is unchanged."""
    flavours, metas = ["generic", "generic-hwe-24.04"], ["linux-modules-nvidia-580-open-generic",
                                                         "linux-modules-nvidia-580-open-generic-hwe-24.04"]
    kept = nh.blacklist(SIGNED_SET, SIGNED_INSTALLED, BLACKLIST, "precompiled", flavours, metas, "keep_out")
    names = set(kept["names"])
    for name in ("linux-generic", "linux-image-generic", "linux-headers-generic", "linux-generic-hwe-24.04",
                 "linux-image-generic-hwe-24.04", "linux-modules-nvidia-580-open-generic",
                 "linux-modules-nvidia-580-open-generic-hwe-24.04", "nvidia-kernel-common-580", "libnvidia-compute-580",
                 "nvidia-utils-580"):
        assert name in names, (name, kept)
    assert "nvidia_driver_unattended_signed: keep_out" in kept["reason"]
    assert nh.blacklist(SIGNED_SET, SIGNED_INSTALLED, BLACKLIST, "precompiled", flavours, metas)["names"] == []
    # the DKMS path is the same whatever the signed choice (the kernel moves alone there)
    assert (nh.blacklist(SIGNED_SET, SIGNED_INSTALLED, BLACKLIST, "dkms", flavours, metas, "keep_out")
            == nh.blacklist(SIGNED_SET, SIGNED_INSTALLED, BLACKLIST, "dkms", flavours, metas))


def test_kernel_without_module_reports_a_kernel_that_would_come_alone():
    sim = ("Inst linux-image-6.8.0-1003-generic (6.8.0-1003.1003 x [amd64])\n"
           "Inst linux-modules-6.8.0-1003-generic (6.8.0-1003.1003 x [amd64])\n"
           "Inst linux-image-generic-hwe-24.04 [6.8.0-1002.1002] (6.8.0-1003.1003 x [amd64])\n")
    assert nh.kernel_without_module(sim, ["linux-modules-nvidia-580-open-6.8.0-1002-generic"]) == ["6.8.0-1003-generic"]
    sim += "Inst linux-modules-nvidia-580-open-6.8.0-1003-generic (6.8.0-1003.1003 x [amd64])\n"
    assert nh.kernel_without_module(sim) == []
    assert nh.kernel_without_module("") == []


def test_release_what_the_role_no_longer_wants_held_on_a_branch_change():
    recorded = ["nvidia-headless-570-server-open", "nvidia-utils-570-server"]
    held_now = recorded + ["docker-ce"]
    changes = nh.hold_changes(SERVER_DKMS, held_now, recorded)
    assert changes == {"hold": SERVER_DKMS, "release": recorded, "keep_user": ["docker-ce"], "wanted": SERVER_DKMS}


def test_release_kernel_followers_held_by_an_older_rollback():
    # roles/nvidia_driver/tasks/rollback.yml before issue 48 held every kept package, the module packages included
    held_now = ["linux-modules-nvidia-580-open-generic", "linux-modules-nvidia-580-open-6.8.0-151-generic", "nvidia-kernel-common-580",
                "nvidia-utils-580"]
    changes = nh.hold_changes([], held_now, recorded=[])
    assert changes["release"] == held_now[:3]
    assert changes["keep_user"] == ["nvidia-utils-580"]  # not the role's (no record): the user's hold stays


def test_method_change_releases_nvidia_repo_holds():
    recorded = ["cuda-drivers-580", "nvidia-driver-cuda", "libnvidia-compute-580"]
    changes = nh.hold_changes(["nvidia-headless-no-dkms-580-open"], recorded, recorded, installed_names=["libnvidia-compute-580"])
    # a hold on a package no longer installed goes with it; the installed one is released
    assert changes["release"] == ["libnvidia-compute-580"]


def test_holds_are_idempotent():
    changes = nh.hold_changes(SERVER_DKMS, SERVER_DKMS, SERVER_DKMS)
    assert changes == {"hold": [], "release": [], "keep_user": [], "wanted": SERVER_DKMS}


def test_rollback_restores_the_holds_as_they_were_without_kernel_followers():
    # as roles/nvidia_driver/tasks/rollback.yml asks: the holds before the change, apt-mark showhold after the
    # rollback, the failed branch's holds as the role's (nvidia_driver_hold_changes -> hold_changes)
    before = ["nvidia-headless-570-server-open", "nvidia-utils-570-server", "linux-modules-nvidia-570-server-open-generic"]
    role_held = ["nvidia-headless-580-server-open", "nvidia-utils-580-server"]
    out = nh.hold_changes(before, role_held + ["docker-ce"], role_held)
    assert out["hold"] == before[:2] and out["release"] == role_held and out["keep_user"] == ["docker-ce"]


def test_never_hold_what_follows_the_kernel_even_when_asked():
    changes = nh.hold_changes(["nvidia-utils-580", "nvidia-kernel-common-580", "linux-modules-nvidia-580-open-generic"], [])
    assert changes["hold"] == changes["wanted"] == ["nvidia-utils-580"]


def test_showhold_names_with_an_architecture_are_compared_by_name():
    # apt-mark showhold prints a foreign architecture's package as name:arch (apt's cmdline/apt-mark.cc
    # ShowSelection: FullName(true) for a package not of the native architecture)
    held_now = ["libnvidia-compute-580", "libnvidia-compute-580:i386", "nvidia-utils-580"]
    changes = nh.hold_changes(["libnvidia-compute-580", "nvidia-utils-580"], held_now, recorded=["libnvidia-compute-580", "nvidia-utils-580"])
    assert changes["hold"] == [] and changes["release"] == [] and changes["keep_user"] == []
    # a branch change releases both architectures' holds, as printed (dpkg --set-selections takes name:arch)
    changes = nh.hold_changes(["libnvidia-compute-595"], held_now, recorded=["libnvidia-compute-580", "nvidia-utils-580"],
                              installed_names=["libnvidia-compute-580", "nvidia-utils-580"])
    assert changes["release"] == held_now and changes["hold"] == ["libnvidia-compute-595"]


def test_a_host_without_a_record_releases_no_hold_it_cannot_prove_the_roles():
    # hosts set up before issue 48 have no holds.json. Issue 48 red-team 11: the driver-name pattern took the NVIDIA
    # Container Toolkit's and CUDA's runtime holds (libnvidia-container1, libnvidia-container-tools, libcudart12) for the
    # role's and released them. Without a record no hold is the role's (a branch change releases the old branch's own
    # holds in install.yml, "Release the holds of the old branch"); what follows the kernel is still released
    held_now = ["nvidia-driver-580-open", "libnvidia-compute-580:i386", "nvidia-fabricmanager-580", "docker-ce",
                "nvidia-container-toolkit", "libnvidia-container1", "libnvidia-container-tools", "libcudart12",
                "linux-modules-nvidia-580-open-generic"]
    changes = nh.hold_changes(["nvidia-driver-595-open"], held_now, recorded=None)
    assert changes["release"] == ["linux-modules-nvidia-580-open-generic"]
    assert "libnvidia-container1" in changes["keep_user"] and "libcudart12" in changes["keep_user"]
    assert "libnvidia-container-tools" in changes["keep_user"] and "nvidia-driver-580-open" in changes["keep_user"]
    # with a record, only what it names is the role's
    assert nh.hold_changes(["nvidia-driver-595-open"], held_now, recorded=["nvidia-driver-580-open"])["release"] == [
        "nvidia-driver-580-open", "linux-modules-nvidia-580-open-generic"]


def test_the_blacklist_leaves_the_container_toolkit_to_unattended_upgrades():
    # issue 48 red-team 12: ^(lib)?nvidia matched nvidia-container-toolkit and libnvidia-container1, whose releases carry
    # security fixes (CVE-2024-0132); data/compat.yml's patterns leave them out, the driver's packages stay in
    from ansible_collections.dlbox.stack.plugins.plugin_utils import compat_data
    patterns = compat_data.load_compat()["driver_package_names"]["upgrade_blacklist"]
    installed = ["nvidia-container-toolkit", "nvidia-container-toolkit-base", "libnvidia-container1", "libnvidia-container-tools",
                 "libnvidia-compute-580", "nvidia-utils-580", "libnvidia-gl-580", "nvidia-mig-manager"]
    names = nh.blacklist(["nvidia-driver-580"], installed, patterns, "dkms")["names"]
    assert names == ["libnvidia-compute-580", "libnvidia-gl-580", "nvidia-driver-580", "nvidia-utils-580"]


def test_the_recorded_kernel_common_needs_its_versions_firmware_by_name():
    # noble-updates: nvidia-kernel-common-580 580.196.07 Depends nvidia-firmware-580-580.196.07: each point release brings
    # a new firmware NAME, the old one stays installed with nothing depending on it
    firmware = [d for d, _op, _v in _depends(UBUNTU["nvidia-kernel-common-580"]) if d.startswith("nvidia-firmware-")]
    assert firmware == ["nvidia-firmware-580-580.196.07"]
    assert nh.versioned_firmware(firmware[0]) and not nh.versioned_firmware("nvidia-firmware")  # NVIDIA's 590+ name


FW_OLD, FW_NEW = "nvidia-firmware-580-580.178.04", "nvidia-firmware-580-580.196.07"
REPO_AFTER_UPDATE = ["nvidia-driver-cuda", "libnvidia-compute-580", "nvidia-kernel-common-580", FW_OLD, FW_NEW,
                     "nvidia-firmware-580-server-580.95.05"]


def test_superseded_firmware_is_the_older_of_each_series():
    names = [FW_NEW, FW_OLD, "nvidia-firmware-580-server-580.95.05", "nvidia-firmware-580-server-580.178.04:i386",
             "nvidia-firmware-595-595.71.05", "nvidia-firmware"]
    # versions compared as numbers (580.95.05 < 580.178.04), each series on its own, the branch-less name never
    assert nh.superseded_firmware(names) == [FW_OLD, "nvidia-firmware-580-server-580.95.05"]
    assert nh.superseded_firmware([FW_OLD]) == []


def test_after_a_point_release_only_the_newest_firmware_is_held():
    # nvidia_repo holds every installed driver package: before, both firmware names (and one more each update)
    held = nh.hold_list(["cuda-drivers-580"], REPO_AFTER_UPDATE, "dkms", "nvidia_repo", REPO_AFTER_UPDATE)
    assert FW_NEW in held and FW_OLD not in held
    assert "nvidia-firmware-580-server-580.95.05" in held  # the only one of its series


def test_the_superseded_firmwares_hold_is_released():
    # the record of the run before the update held the old firmware; the plan after it wants the new one
    recorded = ["nvidia-driver-cuda", "libnvidia-compute-580", FW_OLD]
    wanted = ["nvidia-driver-cuda", "libnvidia-compute-580", FW_NEW]
    changes = nh.hold_changes(wanted, recorded, recorded)
    assert changes["release"] == [FW_OLD] and changes["hold"] == [FW_NEW]
    # piled up by an older role (held, not recorded as wanted any more or no record at all): released too
    assert nh.hold_changes(wanted, recorded + [FW_NEW], recorded=None)["release"] == [FW_OLD]
    # held by hand beside a record without it: a superseded firmware's hold only keeps apt from removing it
    assert nh.hold_changes(wanted, [FW_OLD, FW_NEW], recorded=[FW_NEW])["release"] == [FW_OLD]
    # even asked for (a rollback's holds from before), an older firmware beside a newer one is not held again
    assert nh.hold_changes([FW_OLD, FW_NEW], [], [])["hold"] == [FW_NEW]


def test_a_rollback_holds_a_foreign_architecture_again_once():
    # the holds recorded before a branch change keep name:arch (nvidia_driver_rollback.kept_holds); a rollback holds
    # that architecture's package again, and a second time nothing
    before = ["libnvidia-compute-570", "libnvidia-compute-570:i386", "nvidia-kernel-common-570:amd64"]
    changes = nh.hold_changes(before, ["docker-ce"], recorded=["libnvidia-compute-580"])
    assert changes["hold"] == ["libnvidia-compute-570", "libnvidia-compute-570:i386"]  # never a kernel follower, arch or not
    again = nh.hold_changes(before, ["libnvidia-compute-570", "libnvidia-compute-570:i386", "docker-ce"], recorded=before)
    assert again["hold"] == [] and again["release"] == [] and again["keep_user"] == ["docker-ce"]


# The server profile's signed set (data/compat.yml: nvidia-headless-no-dkms-{branch}{server}{open},
# linux-modules-nvidia-{branch}{server}{open}-{flavour}) on the RECORDED noble-updates stanzas of its -server-open packages.
SERVER_SIGNED_SET = ["nvidia-headless-no-dkms-580-server-open", "nvidia-utils-580-server", "linux-modules-nvidia-580-server-open-generic"]


def test_server_open_signed_set_recorded_ties_hold_nothing_and_blacklist_nothing():
    # recorded: the headless meta needs nvidia-kernel-common-580-server at exactly its own version ((>= X), (<= X-1)), as
    # the per-ABI module does; the module meta needs the per-ABI module at its own version and that common (>= X)
    assert {"nvidia-kernel-common-580-server", "libnvidia-compute-580-server"} <= _exact_version_needs("nvidia-headless-no-dkms-580-server-open")
    assert _exact_version_needs("linux-modules-nvidia-580-server-open-6.8.0-151-generic") == {"nvidia-kernel-common-580-server"}
    meta = _depends(UBUNTU["linux-modules-nvidia-580-server-open-generic"])
    assert ("linux-modules-nvidia-580-server-open-6.8.0-151-generic", "=", "6.8.0-151.151+1") in meta
    assert ("nvidia-kernel-common-580-server", ">=", "580.196.07") in meta
    for name in ("linux-modules-nvidia-580-server-open-generic", "linux-modules-nvidia-580-server-open-6.8.0-151-generic",
                 "nvidia-kernel-common-580-server"):
        assert name in UBUNTU and nh.follows_kernel(name)
    for name in ("nvidia-headless-no-dkms-580-server-open", "nvidia-utils-580-server", "nvidia-fabricmanager-580", "libnvidia-nscq-580"):
        assert name in UBUNTU and not nh.follows_kernel(name)
    installed = SERVER_SIGNED_SET + ["linux-modules-nvidia-580-server-open-6.8.0-151-generic", "nvidia-kernel-common-580-server",
                                     "libnvidia-compute-580-server", "nvidia-compute-utils-580-server", "nvidia-fabricmanager-580",
                                     "libnvidia-nscq-580", "linux-generic", "linux-image-generic"]
    # a hold on the headless meta would freeze nvidia-kernel-common-580-server, which the next kernel's module needs newer
    assert nh.hold_list(SERVER_SIGNED_SET, installed, "precompiled", "distro") == []
    listed = nh.blacklist(SERVER_SIGNED_SET, installed, BLACKLIST, "precompiled", ["generic"], ["linux-modules-nvidia-580-server-open-generic"])
    assert listed["names"] == []
    assert "linux-modules-nvidia-580-server-open-generic" in listed["reason"]


# NVIDIA's own package (its driver repository for Ubuntu 22.04, 550.54.15; Ubuntu's names before 590): the RECORDED control
# of nvidia-driver-550 (tests/fixtures/holds/nvidia-driver-local-repo-ubuntu2204-550-control.txt, source in its header).
NVIDIA = _stanzas(os.path.join(FIXTURES, "holds", "nvidia-driver-local-repo-ubuntu2204-550-control.txt"))


def test_nvidias_driver_meta_ties_kernel_common_and_dkms_to_its_version_and_the_rule_holds_the_set_not_kernel_common():
    deps = _depends(NVIDIA["nvidia-driver-550"])
    for name in ("nvidia-kernel-common-550", "nvidia-dkms-550"):
        assert {(op, v) for d, op, v in deps if d == name} == {("<=", "550.54.15-1"), (">=", "550.54.15")}, name
    assert NVIDIA["nvidia-driver-550"]["Section"] == "non-free/libs"  # NVIDIA's build, not Ubuntu archive's restricted
    user = [d for d, op, _v in deps if op == "="]
    installed = ["nvidia-driver-550", "nvidia-kernel-common-550", "nvidia-dkms-550"] + user
    # the DKMS path (NVIDIA's repository before 590 builds the module with DKMS): the set and NVIDIA's installed driver
    # packages held, nvidia-kernel-common-550 never (it follows the kernel); the same in the unattended-upgrades blacklist
    held = nh.hold_list(["nvidia-driver-550"], installed, "dkms", "nvidia_repo", installed)
    assert "nvidia-driver-550" in held and "nvidia-dkms-550" in held and "libnvidia-compute-550" in held
    assert "nvidia-kernel-common-550" not in held and nh.follows_kernel("nvidia-kernel-common-550")
    listed = nh.blacklist(["nvidia-driver-550"], installed, BLACKLIST, "dkms")["names"]
    assert set(held) <= set(listed) and "nvidia-kernel-common-550" not in listed
