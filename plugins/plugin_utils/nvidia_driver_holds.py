# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which driver packages are held, which are kept from unattended-upgrades, and which holds the role releases (pure).

One rule, read from Ubuntu's and NVIDIA's packaging (recorded ``apt-cache show`` stanzas in
tests/fixtures/holds/, sources in tests/fixtures/SOURCES.md):

- every user-space package of a driver version depends on ``nvidia-kernel-common-<branch>[-server]-<version>``
  (a virtual package only that exact ``nvidia-kernel-common`` provides: ``libnvidia-compute-580``,
  ``nvidia-utils-580``, ``nvidia-fabricmanager-580``, ``libnvidia-nscq-580``), so the user space, Fabric Manager and
  NSCQ move together or not at all;
- Ubuntu's signed per-ABI module ``linux-modules-nvidia-580-open-<abi>`` depends on ``nvidia-kernel-common-580
  (>= X), (<= X-1)``: the module of a new kernel is built against the driver version of the archive at that time,
  so a kernel published with a driver point release can only bring its module together with the whole new user
  space; and the kernel metas (``linux-image-generic``) do not depend on the module meta, so apt and
  unattended-upgrades can install the kernel without it.

Hence:

- **held** (``apt-mark hold``): on the DKMS path the driver's user space (DKMS builds the installed version for every
  new kernel, so the kernel may move alone); never what must follow the kernel (:data:`FOLLOWS_KERNEL`:
  ``linux-{modules,objects,signatures}-nvidia-*``, ``nvidia-kernel-common-<b>[-server]``); on the signed precompiled
  path nothing (a hold on the user space freezes the module meta while the kernel meta moves); the branch pin keeps the
  branch there;
- **unattended-upgrades blacklist**: on the DKMS path the driver's user space (DKMS builds the installed version for
  every new kernel); on the signed path NOTHING of the driver, its module or the kernel (Ubuntu's design): the kernel
  meta, the module meta, ``nvidia-kernel-common`` and the user space (which depends on that exact
  ``nvidia-kernel-common-<b>-<version>``) must all be free to move, so an unattended run moves the kernel together with
  its module and the driver version that module needs, security kernels included. Blacklisting the kernel metas (the
  first issue-48 rule) kept every security kernel out forever. Where the archive's next kernel has no module the
  allowed origins can bring, :func:`kernel_without_module` reports it (the role warns on each run);
- **released**: what the role held before (its record) and no longer wants held (a branch change, a method change,
  a rollback, the signed path), and any hold on a package that must follow the kernel (older versions of the role
  held them after a rollback). A hold the user set on another package stays.
"""

from __future__ import annotations

import re

from ansible_collections.dlbox.stack.plugins.module_utils import kernel as k
from ansible_collections.dlbox.stack.plugins.plugin_utils.roles import _spec

# Packages that must follow the kernel: never held. The per-ABI and flavour module packages, and the user-space
# package the per-ABI module requires at exactly its own driver version.
FOLLOWS_KERNEL = re.compile(r"^(?:linux-(?:modules|objects|signatures)-nvidia-.+|nvidia-kernel-common-\d+(?:-server)?)$")
# A kernel meta of a flavour: linux-<flavour>, linux-image-<flavour>, linux-headers-<flavour> (the names apt follows
# to new kernels; the per-ABI linux-image-6.8.0-151-generic are not metas).
_PER_ABI = re.compile(r"^linux-(?:image|headers|modules|modules-extra|image-unsigned)-\d+\.\d+(?:\.\d+)?-\d+")


def follows_kernel(name):
    """True for a package that must follow the kernel (never held)."""
    return bool(FOLLOWS_KERNEL.match(name or ""))


# Ubuntu's firmware package (NVIDIA's Ubuntu repository's too before 590) carries the driver version in its NAME:
# nvidia-kernel-common-580 580.196.07 Depends nvidia-firmware-580-580.196.07 (tests/fixtures/holds/, noble-updates), and the
# -server series nvidia-firmware-580-server-<version>. Each point release brings a new name and leaves the old one installed
# (nothing depends on it any more; apt would autoremove it, but not while held): a hold on every installed firmware package
# piled up one more per update, never released. Only the newest of a series is held.
_FIRMWARE = re.compile(r"^nvidia-firmware-(?P<series>\d+(?:-server)?)-(?P<version>\d+(?:\.\d+)+)$")


def _version_key(version):
    return [int(x) for x in version.split(".")]


def versioned_firmware(name):
    """True for a firmware package whose name carries its driver version (``nvidia-firmware-580-server-580.196.07``)."""
    return bool(_FIRMWARE.match(bare(name)))


def superseded_firmware(names):
    """The versioned firmware packages among ``names`` (``nvidia-firmware-580-580.178.04``, ``name:arch`` too) that a newer
    one of the same series (``580``, ``580-server``) among them replaces; in the order given."""
    found = [(n, _FIRMWARE.match(bare(n))) for n in _unique(names or ())]
    newest = {}
    for _name, match in found:
        if match:
            series, version = match.group("series"), match.group("version")
            if series not in newest or _version_key(version) > _version_key(newest[series]):
                newest[series] = version
    return [n for n, match in found if match and match.group("version") != newest[match.group("series")]]


def _unique(names):
    out = []
    for name in names:
        if name and name not in out:
            out.append(name)
    return out


def hold_list(set_packages, installed_names, signing, method="distro", family_installed=()):
    """The packages the role holds: the driver set that dpkg has (NVIDIA's repository: every installed driver package,
    the branch-less names included), without what follows the kernel; nothing on the signed precompiled path."""
    if signing == "precompiled":
        return []
    have = set(installed_names or ())
    names = [n for n in set_packages or () if n in have]
    if method == "nvidia_repo":
        names += list(family_installed or ())
    old = set(superseded_firmware(list(have) + names))
    return [n for n in _unique(names) if not follows_kernel(n) and n not in old]


def kernel_metas(flavours, module_metas=()):
    """The names apt follows to a new kernel for each flavour (linux-<f>, linux-image-<f>, linux-headers-<f>), and the
    module metas (``linux-modules-nvidia-580-open-<f>``) given."""
    out = []
    for flavour in flavours or ():
        if flavour:
            out += ["linux-%s" % flavour, "linux-image-%s" % flavour, "linux-headers-%s" % flavour]
    return _unique(out + list(module_metas or ()))


SIGNED_CHOICES = _spec.choices("nvidia_driver", "nvidia_driver_unattended_signed")  # the argument spec's (issue 47)


def blacklist(set_packages, installed_names, patterns, signing, flavours=(), module_metas=(), signed="together"):
    """The unattended-upgrades blacklist: {names, reason}.

    The driver's user space (the set and every installed package matching ``patterns``, data's
    ``upgrade_blacklist``) without what follows the kernel. On the signed path (``signed``, the role's
    ``nvidia_driver_unattended_signed``): ``together`` keeps nothing out (Ubuntu's design: kernel, module and user space
    move together in an unattended run, security kernels included, with a reboot pending each time); ``keep_out`` keeps
    them ALL out together: the user space, what follows the kernel (the module metas, nvidia-kernel-common) and the
    kernel metas of the installed ``flavours``, so an unattended run never replaces the user space under a loaded module
    (NVML's "Driver/library version mismatch", Fabric Manager refusing the old module until a reboot:
    aws/aws-parallelcluster#3034, Azure/azhpc-images#86) and never brings a kernel alone either; kernels and driver then
    move only with the role (``nvidia_driver_update``) or an administrator's apt run.
    """
    compiled = [re.compile(p) for p in patterns or ()]
    user = list(_unique(list(set_packages or ()) + sorted(n for n in installed_names or ()
                                                          if any(p.search(n) for p in compiled))))
    if signing != "precompiled":
        return {"names": sorted(n for n in user if not follows_kernel(n)),
                "reason": "the driver's user space; the kernel moves alone (DKMS builds the installed driver for it)"}
    kernel = kernel_metas(flavours, module_metas)
    if signed == "keep_out":
        return {"names": sorted(_unique(user + kernel)),
                "reason": ("on Ubuntu's signed path, kept out together (nvidia_driver_unattended_signed: keep_out): the "
                           "driver's user space, its module metas and the kernel metas (%s); kernel and driver move only "
                           "with nvidia_driver_update or an administrator's apt run, never under a loaded module"
                           % ", ".join(kernel or ["none installed"]))}
    return {"names": [],
            "reason": ("nothing on Ubuntu's signed path: the kernel and module metas (%s), nvidia-kernel-common and the "
                       "user space move together, as Ubuntu designed them (the next kernel's signed module needs the "
                       "driver version published with it)" % ", ".join(kernel or ["none installed"]))}


_INST = re.compile(r"^Inst\s+(?P<name>\S+)\s+(?P<old>\[[^\]]*\]\s+)?\(")
_NEW_IMAGE = re.compile(r"^linux-image-(?:unsigned-)?(?P<abi>\d+\.\d+(?:\.\d+)?-\d+-[a-z][a-z0-9-]*)$")
_ABI_MODULE = re.compile(r"^linux-modules-nvidia-\d+(?:-server)?(?:-open)?-(?P<abi>\d+\.\d+(?:\.\d+)?-\d+-[a-z][a-z0-9-]*)$")


def kernel_without_module(simulation, installed_names=()):
    """The kernel releases an ``apt-get -s upgrade --with-new-pkgs`` (what unattended-upgrades does with the allowed
    origins) would install without the signed NVIDIA module of that release: [abi]. Empty when every new kernel
    comes with its ``linux-modules-nvidia-<b>[-server][-open]-<abi>`` (in the same run or installed already). Only new
    kernels count (an ``Inst`` line without ``[old version]``)."""
    found = [m for m in (_INST.match(line.strip()) for line in (simulation or "").splitlines()) if m]
    installs = [m.group("name") for m in found]
    new = [m.group("name") for m in found if not m.group("old")]
    have = set(installed_names or ()) | set(installs)
    modules = set(m.group("abi") for m in (_ABI_MODULE.match(n) for n in have) if m)
    out = []
    for name in new:
        match = _NEW_IMAGE.match(name)
        if match and match.group("abi") not in modules and match.group("abi") not in out:
            out.append(match.group("abi"))
    return out


def bare(name):
    """A package name without ``:arch`` (``apt-mark showhold`` prints ``libnvidia-compute-580:i386``)."""
    return (name or "").strip().split(":", 1)[0]


def hold_changes(wanted, held_now, recorded=(), installed_names=None):
    """{hold, release, keep_user, wanted}: what to hold, what to release, which holds are left as the user's, and the
    holds wanted (without what follows the kernel: the role's record).

    ``wanted``: :func:`hold_list` (or a rollback's holds as printed before the change, ``name:arch`` included).
    ``held_now``: ``apt-mark showhold`` (``name`` or ``name:arch``, compared by name;
    released as printed, so that the foreign architecture's hold goes too). ``recorded``: what the role held on its
    last run (its record); ``None``: no record (a host set up before the role kept one): no hold is proven the role's,
    so none is released as the role's (issue 48 red-team 11). Released: a recorded hold no longer wanted, a hold on a
    package that follows the kernel, and a hold on a firmware package a newer one of its series replaces (:func:`superseded_firmware`: each point release
    is a new name). ``installed_names``: dpkg's packages (a hold on a package no longer installed is left: dpkg drops it
    with the package).
    """
    held = _unique(h.strip() for h in held_now or () if h and h.strip())
    held_bare = set(bare(h) for h in held)
    have = None if installed_names is None else set(bare(n) for n in installed_names)
    old = set(bare(n) for n in superseded_firmware(list(wanted or ()) + held + sorted(have or ())))
    want = [n for n in _unique(wanted or ()) if not follows_kernel(bare(n)) and bare(n) not in old]
    if recorded is None:
        # no record (a host set up before the role kept one): no hold is proven the role's. The driver-name pattern took
        # libnvidia-container1, libnvidia-container-tools and libcudart12 for the role's and released them (issue 48
        # red-team 11); only what follows the kernel or a superseded firmware is released below.
        rec = set()
    else:
        rec = set(bare(r) for r in recorded)
    release = [h for h in held if bare(h) not in want and (bare(h) in rec or follows_kernel(bare(h)) or bare(h) in old)
               and (have is None or bare(h) in have)]
    # a wanted name:arch (a rollback's holds as apt-mark printed them) is held when that architecture's is not
    hold = [n for n in want if n not in held_bare and n not in held]
    keep_user = [h for h in held if bare(h) not in want and h not in release]
    return {"hold": hold, "release": release, "keep_user": keep_user, "wanted": want}


def kernel_flavours(the_set, kernel_flavour, kernel_facts):
    """The signed path's kernel flavours (the installed image metas', and the plan's) and their module metas."""
    if (the_set or {}).get("signing") != "precompiled":
        return [], []
    flavours = _unique([m["flavour"] for m in k.image_metas((kernel_facts or {}).get("packages") or [])] + [kernel_flavour])
    module = next((n for n in the_set.get("packages") or () if kernel_flavour and n.startswith("linux-modules-nvidia-")
                   and n.endswith("-" + kernel_flavour)), None)
    prefix = module[:-len(kernel_flavour)] if module else None
    return flavours, ([prefix + f for f in flavours] if prefix else [])


def apply(out, method, installed_names, family_installed, kernel_facts=None):
    """``nvidia_driver_plan``'s hook after the install: ``holds``, ``blacklist`` and ``blacklist_reason`` of ``out``
    (``out['unattended_signed']``: the role's ``nvidia_driver_unattended_signed``, :func:`blacklist`)."""
    the_set = out.get("set") or {}
    out["holds"] = hold_list(the_set.get("packages"), installed_names, the_set.get("signing"), method, family_installed)
    flavours, module_metas = kernel_flavours(the_set, (out.get("kernel") or {}).get("flavour"), kernel_facts)
    listed = blacklist(the_set.get("packages"), installed_names, out.get("upgrade_blacklist"), the_set.get("signing"),
                       flavours, module_metas, out.get("unattended_signed") or "together")
    out["blacklist"], out["blacklist_reason"] = listed["names"], listed["reason"]
    return out
