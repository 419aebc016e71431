# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 48's rule, checked whole: "unattended upgrades either move a kernel together with its module and the user
space it needs, or hold back both", for what the role finally keeps out (nvidia_driver_kernel.keep_lists over
nvidia_driver_holds.hold_list and .blacklist, as nvidia_driver_kernel.finish applies them).

The group that must move with a kernel is not listed by hand: it is read from RECORDED stanzas of Ubuntu's live archive,
tests/fixtures/holds/ubuntu2404-noble-updates-nvidia-580.txt (noble-updates restricted/multiverse Packages.gz of
2026-12-04, recorded 2026-12-06; sources in tests/fixtures/SOURCES.md) and tests/fixtures/kernel/ubuntu2404/
apt-cache-show-metas.txt (the kernel metas). From the module meta (linux-modules-nvidia-580[-server]-open-generic):
its per-ABI module, the nvidia-kernel-common it requires at exactly one driver version (>= X, <= X-1: LP #1918298), the
versioned virtual package that one provides (nvidia-kernel-common-580[-server]-580.196.07), every installed package
that depends on such a virtual package (user space, Fabric Manager, NSCQ: they can only move with it), and the
firmware named by that version. An unattended run moves the kernel meta alone when the meta is free and any member of
that group is kept out (held or blacklisted): the kernel without its module."""

from __future__ import annotations

import os
import re

import pytest

from ansible_collections.dlbox.stack.plugins.plugin_utils import nvidia_driver_holds as nh
from ansible_collections.dlbox.stack.plugins.plugin_utils import nvidia_driver_kernel as nk

FIXTURES = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "fixtures"))
BLACKLIST = ["^(lib)?nvidia(?!-mig-manager$)", "^libcuda", "^firmware-nvidia", "^xserver-xorg-video-nvidia"]  # data/compat.yml


def _stanzas(*paths):
    out = {}
    for path in paths:
        with open(path, encoding="utf-8") as handle:
            text = "\n".join(line for line in handle.read().splitlines() if not line.startswith("#"))
        for block in re.split(r"\n\s*\n", text):
            fields = dict(re.findall(r"^(\S+): (.*)$", block, re.M))
            if "Package" in fields:
                out.setdefault(fields["Package"], fields)
    return out


ARCHIVE = _stanzas(os.path.join(FIXTURES, "holds", "ubuntu2404-noble-updates-nvidia-580.txt"),
                   os.path.join(FIXTURES, "kernel", "ubuntu2404", "apt-cache-show-metas.txt"))
_VERSIONED_COMMON = re.compile(r"^nvidia-kernel-common-\d+(?:-server)?-\d+(?:\.\d+)+$")


def _depends(name):
    """[(name, op)] of a recorded Depends (alternatives flattened)."""
    found = []
    for part in re.split(r"[,|]", ARCHIVE[name].get("Depends", "")):
        match = re.match(r"\s*([a-z0-9][a-z0-9+.-]*)(?:\s*\((\S+)\s+[^)]+\))?", part)
        if match:
            found.append((match.group(1), match.group(2)))
    return found


def moves_with_kernel(module_meta, installed):
    """The packages an unattended run must move with the kernel that ``module_meta`` follows, read from the records."""
    group = {module_meta}
    per_abi = [dep for dep, _op in _depends(module_meta) if dep.startswith("linux-modules-nvidia-")]
    group.update(per_abi)
    for module in per_abi:
        ops = {}
        for dep, op in _depends(module):
            ops.setdefault(dep, set()).add(op)
        # the per-ABI module pins one driver point release of nvidia-kernel-common
        commons = [dep for dep, seen in ops.items() if {">=", "<="} <= seen]
        assert commons, "%s pins no nvidia-kernel-common version: the record changed" % module
        for common in commons:
            group.add(common)
            group.update(dep for dep, _op in _depends(common) if dep.startswith("nvidia-firmware-"))
    # everything installed that depends on a versioned nvidia-kernel-common virtual package moves with it
    for name in installed:
        if name in ARCHIVE and any(_VERSIONED_COMMON.match(dep) for dep, _op in _depends(name)):
            group.add(name)
    return group


def verdict(kept, kernel_meta, group):
    """What an unattended run does with the next kernel: together, held back, or the kernel alone."""
    if kernel_meta in kept:
        return "held back"
    return "kernel alone" if group & kept else "together"


def role_keeps(the_set, installed, signing, flavours, module_metas):
    """What the role keeps out: its holds and its unattended-upgrades blacklist after keep_lists."""
    holds = nh.hold_list(the_set, installed, signing, "distro")
    listed = nh.blacklist(the_set, installed, BLACKLIST, signing, flavours, module_metas)["names"]
    holds, listed = nk.keep_lists(holds, listed, signing, 580)
    return set(holds) | set(listed)


# The role's signed sets (data/compat.yml distro_sets precompiled: the headless no-dkms meta, the utils, the module
# meta of the flavour and the running kernel's per-ABI module), and what apt installed with them (the records' Depends).
SIGNED = {
    "desktop": (["nvidia-headless-no-dkms-580-open", "nvidia-utils-580", "linux-modules-nvidia-580-open-generic",
                 "linux-modules-nvidia-580-open-6.8.0-151-generic"],
                ["nvidia-kernel-common-580", "nvidia-firmware-580-580.196.07", "libnvidia-compute-580", "nvidia-kernel-source-580-open"]),
    "server": (["nvidia-headless-no-dkms-580-server-open", "nvidia-utils-580-server", "linux-modules-nvidia-580-server-open-generic",
                "linux-modules-nvidia-580-server-open-6.8.0-151-generic"],
               ["nvidia-kernel-common-580-server", "nvidia-firmware-580-server-580.196.07", "libnvidia-compute-580-server",
                "nvidia-compute-utils-580-server", "nvidia-kernel-source-580-server-open",
                "nvidia-fabricmanager-580", "libnvidia-nscq-580"]),  # an NVSwitch host: FM and NSCQ need the -server common
}
KERNEL = ["linux-generic", "linux-image-generic", "linux-headers-generic", "bash"]


@pytest.mark.parametrize("profile", sorted(SIGNED))
def test_the_recorded_group_is_what_the_rule_is_about(profile):
    the_set, more = SIGNED[profile]
    group = moves_with_kernel(the_set[2], the_set + more + KERNEL)
    server = "-server" if profile == "server" else ""
    # the oracle reads the records, not this list: these must come out of them
    assert {"linux-modules-nvidia-580%s-open-6.8.0-151-generic" % server, "nvidia-kernel-common-580%s" % server,
            "nvidia-firmware-580%s-580.196.07" % server, "libnvidia-compute-580%s" % server, "nvidia-utils-580%s" % server} <= group
    if server:
        assert {"nvidia-fabricmanager-580", "libnvidia-nscq-580"} <= group
    assert not group & set(KERNEL)  # the kernel metas do not depend on the module (Ubuntu's linux-meta)


@pytest.mark.parametrize("profile", sorted(SIGNED))
def test_on_the_signed_path_an_unattended_run_moves_the_kernel_with_its_module_and_user_space(profile):
    the_set, more = SIGNED[profile]
    installed = the_set + more + KERNEL
    kept = role_keeps(the_set, installed, "precompiled", ["generic"], [the_set[2]])
    assert verdict(kept, "linux-image-generic", moves_with_kernel(the_set[2], installed)) == "together", kept


def test_the_rule_catches_a_kernel_that_would_move_alone():
    # the oracle is not vacuous: the first issue-48 rule (user space held on the signed path, kernel-common free) and a
    # keep list that keeps the -server kernel-common out both let the kernel move without its module
    the_set, more = SIGNED["server"]
    installed = the_set + more + KERNEL
    group = moves_with_kernel(the_set[2], installed)
    assert verdict({"nvidia-utils-580-server", "libnvidia-compute-580-server"}, "linux-image-generic", group) == "kernel alone"
    assert verdict({"nvidia-kernel-common-580-server"}, "linux-image-generic", group) == "kernel alone"
    assert verdict({"libnvidia-nscq-580"}, "linux-image-generic", group) == "kernel alone"
    assert verdict({"linux-image-generic", "nvidia-utils-580-server"}, "linux-image-generic", group) == "held back"


# The DKMS path: DKMS builds the installed driver for every new kernel, so the kernel moves alone by design; the user
# space, Fabric Manager and NSCQ are kept out together, never nvidia-kernel-common (the user space needs it at exactly its
# version: a hold would be pointless, and it must never be held where a signed module might follow it).
SERVER_DKMS = ["nvidia-headless-580-server-open", "nvidia-utils-580-server"]
SERVER_DKMS_INSTALLED = SERVER_DKMS + ["nvidia-kernel-common-580-server", "nvidia-firmware-580-server-580.196.07",
                                       "libnvidia-compute-580-server", "nvidia-compute-utils-580-server", "nvidia-dkms-580-server-open",
                                       "nvidia-kernel-source-580-server-open", "nvidia-fabricmanager-580", "libnvidia-nscq-580"] + KERNEL


def test_on_the_dkms_path_the_user_space_is_kept_out_as_one_and_the_kernel_moves():
    kept = role_keeps(SERVER_DKMS, SERVER_DKMS_INSTALLED, "dkms", [], [])
    dependents = set(n for n in SERVER_DKMS_INSTALLED if n in ARCHIVE and any(_VERSIONED_COMMON.match(d) for d, _op in _depends(n)))
    assert {"libnvidia-compute-580-server", "nvidia-utils-580-server", "nvidia-fabricmanager-580", "libnvidia-nscq-580"} <= dependents
    assert dependents <= kept  # all of the user space tied to one kernel-common version, none left to move alone
    assert "nvidia-kernel-common-580-server" not in kept
    assert not [n for n in kept if n.startswith("linux-")] and "bash" not in kept


@pytest.mark.parametrize("name", ["nvidia-kernel-common-580", "nvidia-kernel-common-580-server",
                                  "linux-modules-nvidia-580-server-open-generic", "linux-modules-nvidia-580-server-open-6.8.0-151-generic"])
@pytest.mark.parametrize("signing", ["dkms", "precompiled"])
def test_keep_lists_never_keeps_what_follows_the_kernel_even_when_handed_it(name, signing):
    # what the -server series names, fed to keep_lists directly (a data blacklist or an older record could hand it)
    holds, listed = nk.keep_lists([name, "nvidia-utils-580-server"], [name, "nvidia-utils-580-server"], signing, 580)
    assert name not in holds and name not in listed
