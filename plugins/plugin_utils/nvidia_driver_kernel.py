# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The kernel side of the ``nvidia_driver`` decision (pure): which kernel flavour the signed modules follow, whether
the running kernel has a signed module, which kernel boots next, and what is never held.

Ubuntu's signed precompiled modules come as a flavour meta (``linux-modules-nvidia-580-open-generic-hwe-24.04``,
Depends the per-ABI ``linux-modules-nvidia-580-open-7.0.0-44-generic``) that follows the installed kernel meta
(``linux-image-generic-hwe-24.04``), version for version. So:

- the flavour comes from the installed kernel metas (:func:`module_utils.kernel.flavour_from_metas`, the way
  ubuntu-drivers reads them), not from ``uname -r``; ambiguous -> refused naming ``nvidia_driver_kernel_flavour``;
- the per-ABI package of the running kernel is installed too when the archive has it; otherwise the module can only
  load in the kernel that boots next, which must have one: the plan says so before any change
  (``pending_reboot_reason``), or refuses when no kernel would have one;
- neither the module packages nor the userland they require at their exact version (``nvidia-kernel-common-<branch>``)
  are held or kept from unattended-upgrades: a kernel update must bring its module. The branch is kept by the
  name-level apt pin (:func:`nvidia_driver_plan.branch_pin`) instead, which leaves the module packages (versioned by
  the kernel) free.

:func:`apply` is the hook ``nvidia_driver_plan.decide`` calls; the rest are the single decisions, unit-tested on
captures recorded against Ubuntu's live archive (tests/fixtures/kernel/).
"""

from __future__ import annotations

import re

from ansible_collections.dlbox.stack.plugins.module_utils import kernel as k
from ansible_collections.dlbox.stack.plugins.plugin_utils.lazy_import import LazyModule

_plan = LazyModule("plugin_utils.nvidia_driver_plan")  # it imports this module: its branch_pin, on first use

# Packages that must follow the kernel (never held, never kept from unattended-upgrades).
KERNEL_FOLLOWERS = re.compile(r"^linux-(?:modules|objects|signatures)-nvidia-")


def module_meta(branch, server, open_, flavour):
    """``linux-modules-nvidia-580-open-generic-hwe-24.04`` (server: ``-server``, open: ``-open``, as in data's templates)."""
    return "linux-modules-nvidia-%s%s%s-%s" % (branch, server, open_, flavour)


def decide_flavour(kernel_facts, override="", running="", branch=None, server="", open_=""):
    """{flavour, source, problem, candidates}: the flavour the signed modules follow.

    ``override``: ``nvidia_driver_kernel_flavour``. ``kernel_facts``: ``nvidia_driver_facts``' ``kernel`` result
    (``packages``: the kernel packages dpkg has, ``module_names``: the module package names apt knows), or None
    (not read: the running release's flavour, else generic, as before). Metas of several flavours on the newest
    kernel are narrowed to those whose module meta apt knows (linux-image-virtual and linux-image-generic both depend
    on the generic kernel; only generic has a module meta); more than one left, or none: refused.
    """
    out = {"flavour": None, "source": None, "problem": None, "candidates": []}
    if override:
        out.update(flavour=override, source="nvidia_driver_kernel_flavour")
        return out
    if not kernel_facts:
        out.update(flavour=k.kernel_flavour(running) or "generic", source="running kernel release")
        return out
    found = k.flavour_from_metas(kernel_facts.get("packages") or [])
    candidates = found["candidates"]
    out["candidates"] = candidates
    if not candidates:
        out.update(flavour=k.kernel_flavour(running) or "generic", source="running kernel release (no kernel meta package installed)")
        return out
    known = set(kernel_facts.get("module_names") or [])
    if branch is not None and known:
        having = [c for c in candidates if module_meta(branch, server, open_, c) in known]
        if len(having) == 1:
            out.update(flavour=having[0], source="installed kernel meta linux-image-%s" % having[0])
            return out
        if not having:
            out["problem"] = (
                "The installed kernel meta package(s) %s (kernel %s) have no signed NVIDIA module meta in the archive (%s). Set "
                "nvidia_driver_kernel_flavour to the flavour whose kernel this machine boots (the flavour part of a "
                "linux-modules-nvidia-%s%s%s-<flavour> package, e.g. generic or generic-hwe-24.04), or use DKMS "
                "(nvidia_driver_secure_boot_signing: mok). Nothing was changed." % (
                    ", ".join("linux-image-" + c for c in candidates), found["kernel"],
                    ", ".join(module_meta(branch, server, open_, c) for c in candidates), branch, server, open_))
            return out
        candidates = having
    if len(candidates) == 1:
        out.update(flavour=candidates[0], source="installed kernel meta linux-image-%s" % candidates[0])
        return out
    out["problem"] = (
        "The kernel flavour is ambiguous: the installed kernel meta packages %s all follow kernel %s, and the signed NVIDIA "
        "modules follow one of them. Set nvidia_driver_kernel_flavour to one of %s (the one whose kernels this machine "
        "should keep booting). Nothing was changed." % (", ".join("linux-image-" + c for c in candidates), found["kernel"],
                                                        ", ".join(candidates)))
    return out


def signed_module(branch, server, open_, flavour, kernel_facts, running):
    """The per-ABI package of the running kernel, or the kernel that boots next: {install, running_package, next_boot,
    pending_reboot_reason, problem}.

    ``install``: extra packages (the running kernel's ``linux-modules-nvidia-<b>-<uname -r>`` when apt knows it).
    Without it the module loads only in the kernel that boots next (newest of /boot, else the kernel the flavour's
    meta brings): ``pending_reboot_reason`` names both kernels. When apt knows a module for neither: ``problem``.
    Not read (``kernel_facts`` None): nothing extra, nothing said (the plan on the controller).
    """
    out = {"install": [], "running_package": None, "next_boot": None, "pending_reboot_reason": "", "problem": None}
    if not kernel_facts:
        return out
    known = set(kernel_facts.get("module_names") or [])
    running = kernel_facts.get("running") or running
    prefix = "linux-modules-nvidia-%s%s%s-" % (branch, server, open_)
    out["running_package"] = prefix + running
    if out["running_package"] in known:
        out["install"] = [out["running_package"]]
        return out
    packages = kernel_facts.get("packages") or []
    metas = [m for m in k.image_metas(packages) if m["flavour"] == flavour]
    boot = k.next_boot_kernel(kernel_facts.get("boot") or k.installed_kernels(packages), running)
    meta_kernel = metas[0]["kernel"] if metas else None
    # The meta brings its kernel's module (and that kernel, through the module's Depends) when it is newer.
    if meta_kernel and (boot == running or k.release_key(meta_kernel) > k.release_key(boot)):
        boot = meta_kernel
    out["next_boot"] = boot
    if boot != running and (prefix + boot in known or boot == meta_kernel):
        out["pending_reboot_reason"] = (
            "The running kernel %s has no signed NVIDIA module in the archive (no %s%s); the module is installed for "
            "kernel %s, which boots next: reboot into it to load the driver." % (running, prefix, running, boot))
        return out
    out["problem"] = (
        "The running kernel %s has no signed NVIDIA module in the archive (no %s%s), and no kernel that would boot next has "
        "one either (flavour %s: %s). Install the kernel meta package of that flavour (apt install linux-image-%s) and "
        "reboot into its kernel, set nvidia_driver_kernel_flavour to the flavour this machine boots, or use DKMS "
        "(nvidia_driver_secure_boot_signing: mok). Nothing was changed." % (
            running, prefix, running, flavour, "no linux-image-%s installed" % flavour if not metas else
            "its kernel %s has no %s%s" % (meta_kernel, prefix, meta_kernel), flavour))
    return out


def keep_lists(holds, blacklist, signing, branch):
    """Holds and the unattended-upgrades blacklist without what must follow the kernel.

    Never ``linux-{modules,objects,signatures}-nvidia-*``. On the signed precompiled path nothing is held at all: the
    per-ABI module requires ``nvidia-kernel-common-<branch>`` at exactly its own driver version (recorded Depends,
    tests/fixtures/kernel/), which a hold on the userland would freeze; the branch pin keeps the branch.
    """
    common = "nvidia-kernel-common-%s" % branch
    keep_out = [n for n in blacklist or () if not KERNEL_FOLLOWERS.match(n) and not (signing == "precompiled" and n == common)]
    held = [] if signing == "precompiled" else [n for n in holds or () if not KERNEL_FOLLOWERS.match(n)]
    return held, keep_out


def apply(out, options, facts, names, branch, kernel_modules):
    """``nvidia_driver_plan.decide``'s hook for the distribution path: fills ``out['kernel']`` and returns the flavour,
    or None after a refusal (``out['ok']`` False)."""
    facts = facts or {}
    kernel_facts = facts.get("kernel")
    server = names.get("server_suffix", "") if options.get("profile") == "server" else ""
    open_ = "-open" if kernel_modules == "open" else ""
    decided = decide_flavour(kernel_facts, options.get("kernel_flavour") or "", options.get("kernel") or "", branch, server, open_)
    out["kernel"] = {"flavour": decided["flavour"], "flavour_source": decided["source"], "candidates": decided["candidates"],
                     "install": [], "next_boot": None}
    out.setdefault("pending_reboot_reason", "")
    precompiled = (out.get("signing") or {}).get("path") == "precompiled"
    if decided["problem"] and not precompiled:
        # DKMS builds for every kernel: the flavour names no package there, so nothing to refuse
        flavour = (decided["candidates"] or [k.kernel_flavour(options.get("kernel") or "") or "generic"])[0]
        out["kernel"].update(flavour=flavour, flavour_source="not needed on the DKMS path (%s)" % ", ".join(decided["candidates"]))
        return flavour
    if decided["problem"]:
        out["ok"] = False
        out["errors"].append(decided["problem"])
        return None
    if precompiled:
        module = signed_module(branch, server, open_, decided["flavour"], kernel_facts, options.get("kernel") or "")
        out["kernel"].update(install=module["install"], next_boot=module["next_boot"], running_package=module["running_package"])
        out["pending_reboot_reason"] = module["pending_reboot_reason"]
        if module["problem"]:
            out["ok"] = False
            out["errors"].append(module["problem"])
            return None
    return decided["flavour"]


def finish(out):
    """After ``decide``: the running kernel's module package joins the set; holds and blacklist lose the kernel's."""
    the_set = out.get("set")
    extra = ((out.get("kernel") or {}).get("install")) or []
    if the_set and extra:
        the_set["packages"] = the_set["packages"] + [n for n in extra if n not in the_set["packages"]]
    if the_set and the_set.get("signing") == "precompiled" and out.get("pin") is None:
        out["pin"] = _plan.branch_pin((out.get("driver") or {}).get("branch"), out.get("family") or [],
                                      "Ubuntu's signed modules: the driver keeps its branch by name, the module packages follow the kernel")
    if "holds" in out and the_set:
        out["holds"], out["blacklist"] = keep_lists(out.get("holds"), out.get("blacklist"), the_set.get("signing"),
                                                    (out.get("driver") or {}).get("branch"))
    return out
