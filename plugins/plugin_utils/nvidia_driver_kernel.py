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
- the per-ABI package of the running kernel is installed too when the archive has it and it was built for the driver
  version this run installs (:func:`module_fit`: its ``nvidia-kernel-common-<branch>`` Depends pin one driver point
  release, and a kernel the archive no longer updates keeps a module of an older one); otherwise the module can only
  load in the kernel that boots next, which must have one: the plan says so before any change
  (``pending_reboot_reason``), or refuses when no kernel would have one;
- neither the module packages nor the userland they require at their exact version (``nvidia-kernel-common-<branch>``)
  are held or kept from unattended-upgrades: a kernel update must bring its module. The branch is kept by the
  name-level apt pin (:func:`nvidia_driver_plan.branch_pin`) instead, which leaves the module packages (versioned by
  the kernel) free.

:func:`apply` is the hook ``nvidia_driver_plan.decide`` calls; the rest are the single decisions, unit-tested on
captures recorded against Ubuntu's live archive (tests/fixtures/kernel/).

After the install (filter ``dlbox.stack.nvidia_driver_kernel``'s two filters): :func:`module_check` says which kernels
must have the module and judges ``modinfo`` (the signed path defers to the kernel that boots next when the running one
has no signed module); :func:`persistence_daemon` says whether nvidia-persistenced may start now (only with the
installed module loaded) and writes the drop-in that turns persistence mode on over the distribution's unit.
"""

from __future__ import annotations

import re

from ansible_collections.dlbox.stack.plugins.module_utils import kernel as k
from ansible_collections.dlbox.stack.plugins.module_utils.versions import debian_version_compare
from ansible_collections.dlbox.stack.plugins.plugin_utils.lazy_import import LazyModule

_plan = LazyModule("plugin_utils.nvidia_driver_plan")  # it imports this module: its branch_pin, on first use
_holds = LazyModule("plugin_utils.nvidia_driver_holds")  # the hold rule (issue 48)

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


# --- does the running kernel's per-ABI module fit the driver version installed? --------------------------------------
#
# Each per-ABI package Depends on the userland core of ONE driver point release: nvidia-kernel-common-<branch>[-server]
# (<= X-1), (>= X) (recorded: tests/fixtures/kernel/ubuntu2404/apt-cache-show-per-abi-module.txt; Canonical added that
# tight Depends to every linux-restricted-modules package, kernel-team list 2021-03-10 "[PATCH 0/1 H] UBUNTU: [packaging]
# Make the nvidia abi packages depend on nvidia-kernel-common", LP: #1918298). Only the kernels the archive still updates
# get modules rebuilt for a new point release; an older ABI's module keeps the release it was built against (recorded,
# tests/fixtures/holds/ubuntu2404-noble-updates-nvidia-580.txt: with nvidia-kernel-common-580 at 580.196.07,
# linux-modules-nvidia-580-open-6.8.0-149-generic still Depends nvidia-kernel-common-580 (<= 580.178.04-1), (>= 580.178.04)).
# Installing such a module beside the newer driver is an impossible apt request.

COMMON = "nvidia-kernel-common-%s%s"
_RELATION = re.compile(r"^\s*(?P<name>[a-z0-9][a-z0-9+.-]*)(?::[a-z0-9-]+)?\s*(?:\(\s*(?P<op><<|<=|=|>=|>>|<|>)\s*(?P<version>[^)\s]+)\s*\))?\s*$")


def common_name(branch, server):
    """``nvidia-kernel-common-580`` (server: ``nvidia-kernel-common-580-server``; the open flavour shares it)."""
    return COMMON % (branch, server)


def _stanza_field(text, field):
    """A field of the first stanza of ``apt-cache show`` output (continuation lines joined), or None."""
    value, inside = None, False
    for line in (text or "").splitlines():
        if not line.strip():
            if value is not None:
                break
            continue
        if line[:1] in (" ", "\t"):
            if inside:
                value += " " + line.strip()
            continue
        name, sep, rest = line.partition(":")
        inside = sep and name.strip().lower() == field.lower()
        if inside:
            value = rest.strip()
    return value


def common_requirement(show_text, common):
    """The relations on ``common`` in the Depends of an ``apt-cache show --no-all-versions`` stanza: [(op, version)]
    (``[("<=", "580.178.04-1"), (">=", "580.178.04")]``); None when it names none (or no stanza)."""
    depends = _stanza_field(show_text, "Depends")
    if depends is None:
        return None
    found = []
    for group in depends.split(","):
        for alternative in group.split("|"):
            match = _RELATION.match(alternative)
            if match and match.group("name") == common and len(group.split("|")) == 1:
                found.append((match.group("op") or "", match.group("version") or ""))
    return found or None


def policy_versions(policy_text):
    """``apt-cache policy NAME`` -> {installed, candidate} (None for "(none)" or missing)."""
    out = {"installed": None, "candidate": None}
    for line in (policy_text or "").splitlines():
        key, sep, value = line.strip().partition(":")
        key = key.strip().lower()
        if sep and key in out and out[key] is None:
            value = value.strip()
            out[key] = None if not value or value == "(none)" else value
    return out


def satisfies(version, relations):
    """Whether ``version`` meets every (op, version) relation (deb-version(7) order; ``<`` and ``>`` as dpkg reads them:
    ``<=`` and ``>=``)."""
    for op, wanted in relations:
        if not op:
            continue
        c = debian_version_compare(version, wanted)
        if not {"<<": c < 0, "<=": c <= 0, "<": c <= 0, "=": c == 0, ">=": c >= 0, ">": c >= 0, ">>": c > 0}[op]:
            return False
    return True


def module_fit(package, common, fit):
    """Whether the running kernel's per-ABI module can be installed with the driver this run ends with:
    {fits, known, requires, driver_version, problem}.

    ``fit``: what apt knows, read by the role after the cache refresh (roles/nvidia_driver/tasks/check.yml):
    ``show`` (``apt-cache show --no-all-versions PACKAGE``: the candidate's Depends) and ``policy`` (``apt-cache policy
    COMMON``). The driver version: the installed ``common`` (an installed driver stays at its point release unless
    nvidia_driver_update moves it), else its candidate (what a first install or a branch change brings). Not read
    (``fit`` None: the plan before the cache refresh, or on the controller): ``known`` False and ``fits`` True, as before.
    A module whose Depends name no ``common`` (an older packaging) fits; no version to compare: it fits too (apt judges).
    """
    out = {"fits": True, "known": False, "requires": None, "driver_version": None, "problem": None}
    if not fit:
        return out
    out["known"] = True
    requires = common_requirement(fit.get("show") or "", common)
    versions = policy_versions(fit.get("policy") or "")
    driver_version = versions["installed"] or versions["candidate"]
    out.update(requires=requires, driver_version=driver_version)
    if not requires or not driver_version:
        return out
    if satisfies(driver_version, requires):
        return out
    out["fits"] = False
    wanted = " ".join("%s %s" % r for r in requires if r[0])
    out["problem"] = (
        "The running kernel's signed NVIDIA module in the archive, %s, was built for another driver point release (it Depends "
        "%s %s), not driver %s, which this run %s: apt cannot install both." % (
            package, common, wanted, driver_version, "keeps (installed)" if versions["installed"] else "installs"))
    return out


def signed_module(branch, server, open_, flavour, kernel_facts, running, fit=None):
    """The per-ABI package of the running kernel, or the kernel that boots next: {install, running_package, next_boot,
    pending_reboot_reason, problem, fit}.

    ``install``: extra packages (the running kernel's ``linux-modules-nvidia-<b>-<uname -r>`` when apt knows it, dpkg has
    it, or it fits the driver version (:func:`module_fit` on ``fit``, what apt knows of it)). Without it the module loads
    only in the kernel that boots next (newest of /boot, else the kernel the flavour's meta brings): ``pending_reboot_reason``
    names both kernels (and, for a module of another driver point release, why it was left out). When apt knows a module
    for neither: ``problem``. Not read (``kernel_facts`` None): nothing extra, nothing said (the plan on the controller).
    """
    out = {"install": [], "running_package": None, "next_boot": None, "pending_reboot_reason": "", "problem": None, "fit": None}
    if not kernel_facts:
        return out
    known = set(kernel_facts.get("module_names") or [])
    running = kernel_facts.get("running") or running
    prefix = "linux-modules-nvidia-%s%s%s-" % (branch, server, open_)
    out["running_package"] = prefix + running
    packages = kernel_facts.get("packages") or []
    why_not = " (no %s%s)" % (prefix, running)
    if out["running_package"] in known:
        installed = any(p["name"] == out["running_package"] and p.get("installed") for p in packages)
        out["fit"] = module_fit(out["running_package"], common_name(branch, server), None if installed else fit)
        if out["fit"]["fits"]:
            out["install"] = [out["running_package"]]
            return out
        why_not = " for driver %s (%s was built for another driver point release: it Depends %s %s; apt cannot install it " \
                  "with this driver)" % (out["fit"]["driver_version"], out["running_package"], common_name(branch, server),
                                         " ".join("%s %s" % r for r in out["fit"]["requires"] if r[0]))
    metas = [m for m in k.image_metas(packages) if m["flavour"] == flavour]
    # the kernel GRUB boots next (nvidia_driver_facts reads its default), else the newest
    boot = kernel_facts.get("next_boot") or k.next_boot_kernel(kernel_facts.get("boot") or k.installed_kernels(packages), running)
    meta_kernel = metas[0]["kernel"] if metas else None
    # The meta brings its kernel's module (and that kernel, through the module's Depends) when it is newer.
    if meta_kernel and (boot == running or k.release_key(meta_kernel) > k.release_key(boot)):
        boot = meta_kernel
    out["next_boot"] = boot
    if boot != running and (prefix + boot in known or boot == meta_kernel):
        out["pending_reboot_reason"] = (
            "The running kernel %s has no signed NVIDIA module in the archive%s; the module is installed for kernel %s, which "
            "boots next: reboot into it to load the driver." % (running, why_not, boot))
        return out
    out["problem"] = (
        "The running kernel %s has no signed NVIDIA module in the archive%s, and no kernel that would boot "
        "next has one either (flavour %s: %s). Install the kernel meta package of that flavour (apt install linux-image-%s) "
        "and reboot into its kernel, set nvidia_driver_kernel_flavour to the flavour this machine boots, or use DKMS "
        "(nvidia_driver_secure_boot_signing: mok). Nothing was changed." % (
            running, why_not, flavour, "no linux-image-%s installed" % flavour if not metas else
            "its kernel %s has no %s%s" % (meta_kernel, prefix, meta_kernel), flavour))
    return out


def keep_lists(holds, blacklist, signing, branch):
    """Holds and the unattended-upgrades blacklist without what must follow the kernel (the rule of
    :mod:`nvidia_driver_holds`, issue 48): never ``linux-{modules,objects,signatures}-nvidia-*`` nor
    ``nvidia-kernel-common-<branch>[-server]`` held; on the signed precompiled path nothing is held (the per-ABI module
    requires ``nvidia-kernel-common-<branch>`` at exactly its own driver version, which a hold on the userland would
    freeze; the branch pin keeps the branch). Nor is anything blacklisted there: the kernel meta, the module meta,
    ``nvidia-kernel-common`` and the user space move together in unattended-upgrades (Ubuntu's design,
    :func:`nvidia_driver_holds.blacklist`)."""
    del branch  # the rule reads the names
    keep_out = [] if signing == "precompiled" else [n for n in blacklist or () if not _holds.follows_kernel(n)]
    held = [] if signing == "precompiled" else [n for n in holds or () if not _holds.follows_kernel(n)]
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
        module = signed_module(branch, server, open_, decided["flavour"], kernel_facts, options.get("kernel") or "",
                               facts.get("running_module"))
        out["kernel"].update(install=module["install"], next_boot=module["next_boot"], running_package=module["running_package"],
                             common=common_name(branch, server), fit=module["fit"])
        out["pending_reboot_reason"] = module["pending_reboot_reason"]
        if module["problem"]:
            out["ok"] = False
            out["errors"].append(module["problem"])
            return None
    return decided["flavour"]


def finish(out, package_names=None):
    """After ``decide``: the running kernel's module package joins the set; holds and blacklist lose the kernel's.
    ``package_names``: ``driver_package_names`` of the data ``decide`` read (the branch pin's names; None: the collection's)."""
    the_set = out.get("set")
    extra = ((out.get("kernel") or {}).get("install")) or []
    if the_set and extra:
        the_set["packages"] = the_set["packages"] + [n for n in extra if n not in the_set["packages"]]
    if the_set and the_set.get("signing") == "precompiled" and out.get("pin") is None:
        out["pin"] = _plan.branch_pin((out.get("driver") or {}).get("branch"), out.get("family") or [],
                                      "Ubuntu's signed modules: the driver keeps its branch by name, the module packages follow the kernel",
                                      (out.get("origins") or {}).get("ubuntu"), package_names)
    if "holds" in out and the_set:
        out["holds"], out["blacklist"] = keep_lists(out.get("holds"), out.get("blacklist"), the_set.get("signing"),
                                                    (out.get("driver") or {}).get("branch"))
    return out


# --- after the install: which kernels must have the module, and the verdict on modinfo ------------------------------

def module_check(signing, build_only=False, build_kernels=(), dkms_kernels=(), running="", next_boot="", deferred_reason="",
                 modinfo=None, expected="", headers=None, boot_kernels=None):
    """Which kernels ``modinfo -k KERNEL -F version`` must show the installed driver in, and the verdict:
    {kernels, problems, pending_reboot_reason}.

    ``signing``: the plan's signing path (``dkms`` or ``precompiled``). Build-only mode: ``build_kernels``. DKMS: every
    kernel with headers (``dkms_kernels``). Signed precompiled modules: the running kernel, and, when the plan said
    before any change that the archive has no signed module for it (``deferred_reason``, the plan's
    ``pending_reboot_reason``), the kernel that boots next (``next_boot``: GRUB's default, read after the install,
    which may have brought a newer kernel): there the running kernel may lack the module, the next one must have it,
    and the result says "pending reboot" instead of failing; the run after that reboot checks the running kernel.
    Without that deferral, a kernel that boots next other than the running one is checked too: one already in /boot
    without its signed module is a problem (the next reboot would start without a driver).

    ``modinfo``: nvidia_driver_facts' ``modinfo`` ({kernel: the version, or modinfo's error such as
    "modinfo: ERROR: Module nvidia not found."}); None: only the list. ``expected``: the installed driver version.

    DKMS with a running kernel that has no headers (:func:`dkms_without_running_headers`): the kernel that boots next
    (``next_boot``, read after the install) is checked too, "pending reboot" only where it has the module, else a problem
    that names its missing headers package. ``headers``: {kernel: whether the archive has ``linux-headers-<kernel>``
    (``apt-cache show`` 0 or 100)}; ``boot_kernels``: the releases of /boot/vmlinuz-* (None: not read).
    """
    if build_only:
        kernels = list(build_kernels or ())
    elif signing == "dkms":
        kernels = list(dkms_kernels or ())
        if running and running not in kernels and next_boot and next_boot not in kernels:
            kernels.append(next_boot)  # modinfo is read for it: does the kernel that boots next have a module?
    else:
        kernels = [running]
        # the kernel that boots next, whenever it is another: deferred (the plan said the running kernel has no signed
        # module), or a kernel already in /boot (a -security kernel an unattended run installed) whose module did not
        # come: a green run would otherwise leave a reboot without a GPU (issue 44's red team M2)
        if next_boot and next_boot != running:
            kernels.append(next_boot)
    out = {"kernels": kernels, "problems": [], "pending_reboot_reason": ""}
    if modinfo is None:
        return out
    defer = signing == "precompiled" and not build_only and len(kernels) == 2 and bool(deferred_reason)
    ahead = signing == "precompiled" and not build_only and not defer and len(kernels) == 2
    headless = signing == "dkms" and not build_only and bool(running) and running not in (dkms_kernels or ())
    if headless:
        verdict = dkms_without_running_headers(running, next_boot, list(dkms_kernels or ()), modinfo, expected, headers, boot_kernels)
        out["pending_reboot_reason"] = verdict["pending_reboot_reason"]
        out["problems"].extend([verdict["problem"]] if verdict["problem"] else [])
        kernels = [k_ for k_ in kernels if k_ in (dkms_kernels or ())]
    for kernel in kernels:
        found = str(modinfo.get(kernel, "(not asked)")).strip()
        if found == expected:
            continue
        if defer and kernel == running and str(modinfo.get(next_boot, "")).strip() == expected:
            out["pending_reboot_reason"] = (
                "pending reboot: the running kernel %s has no NVIDIA %s module (modinfo: %s); kernel %s, which boots next, "
                "has it: reboot into it to load the driver, then run the same command again (that run checks the running "
                "kernel)." % (running, expected, found or "nothing", next_boot))
            continue
        if ahead and kernel == next_boot:
            out["problems"].append(
                "modinfo -k %s says '%s', expected %s: kernel %s, which GRUB boots next, has no signed NVIDIA module (its "
                "linux-modules-nvidia-* package did not come with it), so the next reboot starts without a GPU driver. Install "
                "the module meta's package for it (apt-get install --with-new-pkgs upgrade, or apt-get install "
                "linux-modules-nvidia-<branch>[-server][-open]-%s), or make GRUB boot %s, then run the role again."
                % (kernel, found or "nothing", expected, kernel, kernel, running))
            continue
        out["problems"].append("modinfo -k %s says '%s', expected %s%s." % (
            kernel, found, expected, " (the kernel that boots next)" if defer and kernel == next_boot else ""))
    return out


def _headers_phrase(kernel, headers):
    """Why ``kernel`` has no build tree, in words: its headers package gone from the archive, or not installed."""
    available = (headers or {}).get(kernel)
    if available is False:
        return ("linux-headers-%s is not installed and the archive no longer has it (apt-cache show finds no such package: "
                "the distribution moved on to a newer kernel ABI and dropped the old headers)" % kernel)
    return "linux-headers-%s is not installed" % kernel


def dkms_without_running_headers(running, next_boot, dkms_kernels, modinfo, expected, headers=None, boot_kernels=None):
    """DKMS where the running kernel has no headers (no /lib/modules/<running>/build): DKMS builds the module for the
    kernels that have headers only (dkms(8): a build needs the kernel's build tree; DKMS 3.0.11 dkms.in refuses "Your kernel
    headers for kernel K cannot be found"), so the running kernel never gets one. {pending_reboot_reason, problem, with_module}.

    Reported as GoogleCloudPlatform/compute-gpu-installation#28 (Debian 11 on GCE: linux-headers-5.10.0-24-cloud-amd64 left
    the archive when 5.10.0-25 came; "Unable to locate package", GoogleCloudDataproc/initialization-actions#1084): the headers
    meta then brings the NEW kernel's headers, DKMS builds for that kernel, and a check of "every kernel with headers" passes
    while the kernel that boots is still the old one. "pending reboot" is only true where the kernel that boots next
    (``next_boot``: GRUB's default, else the newest of /boot) has the module; otherwise a reboot changes nothing, and the
    answer names the headers package that is missing and what to do."""
    modinfo = modinfo or {}
    with_module = [k_ for k_ in dkms_kernels if str(modinfo.get(k_, "")).strip() == expected]
    out = {"pending_reboot_reason": "", "problem": None, "with_module": with_module}
    why = _headers_phrase(running, headers)
    built = ("it built NVIDIA %s for kernel(s) %s, which have headers" % (expected, ", ".join(with_module))) if with_module \
        else "it built NVIDIA %s for no kernel (no kernel here has headers)" % expected
    nxt = str(modinfo.get(next_boot, "")).strip() if next_boot else ""
    if next_boot and next_boot != running and nxt == expected:
        out["pending_reboot_reason"] = (
            "pending reboot: the running kernel %s has no headers (%s), so DKMS cannot build the NVIDIA module for it; %s. "
            "Kernel %s boots next and has the module: reboot into it to load the driver, then run the same command again "
            "(that run checks the running kernel)." % (running, why, built, next_boot))
        return out
    if not next_boot or next_boot == running:
        where = "the kernel that boots next is the running one, %s (GRUB's default, else the newest in /boot)" % running
        missing = "linux-headers-%s" % running
    else:
        where = "the kernel that boots next, %s, has no NVIDIA %s module either (modinfo: %s; %s)" % (
            next_boot, expected, nxt or "nothing",
            "DKMS has no build for it" if next_boot in dkms_kernels else _headers_phrase(next_boot, headers))
        missing = "linux-headers-%s" % (next_boot if next_boot not in dkms_kernels else running)
    others = []
    for k_ in with_module:
        if k_ == next_boot:
            continue
        if boot_kernels is not None and k_ not in boot_kernels:
            others.append("%s has the module but is not installed (only its headers are: apt install linux-image-%s)" % (k_, k_))
        else:
            others.append("%s has the module (boot it once: grub-reboot with its entry, or make it the default: grub-set-default)" % k_)
    out["problem"] = (
        "The running kernel %s has no headers (%s), so DKMS cannot build the NVIDIA module for it, and %s: a reboot would not "
        "load the driver, so this run does not say \"pending reboot\". DKMS %s%s. Do one of: install %s (apt install %s, where "
        "an archive or snapshot still has it) and run again; or install a kernel whose headers the archive has, with them "
        "(the kernel and headers metas: Debian linux-image-amd64 linux-headers-amd64 or its cloud-amd64 flavour, Ubuntu "
        "linux-image-generic linux-headers-generic), reboot into it and run again." % (
            running, why, where, built[3:] if built.startswith("it ") else built,
            ("; " + "; ".join(others)) if others else "", missing, missing))
    return out


# --- a failed install: what apt, dpkg and DKMS said, and the end of the DKMS build log --------------------------------
#
# A DKMS package's post-installation script builds the module; when the build fails DKMS 3.0.11 (dell/dkms v3.0.11 dkms.in:
# report_build_problem 10, error() on stderr) says "Error! Bad return status for module build on kernel: <k> (x86_64)" and
# "Consult /var/lib/dkms/<module>/<version>/build/make.log for more information.", dpkg "dpkg: error processing package <p>
# (--configure):" and " installed <p> package post-installation script subprocess returned error exit status 10", and the
# packages that depend on it "dependency problems - leaving unconfigured"; apt ends with "E: Sub-process /usr/bin/dpkg
# returned an error code (1)". RECORDED: pop-os/pop#3811 (nvidia-dkms-580-open), NVIDIA/nvidia-container-toolkit#361
# (Debian 12's nvidia-kernel-dkms, module nvidia-current) (tests/fixtures/nvidia_driver_failures/, SOURCES there).

_MAKE_LOG = re.compile(r"/var/lib/dkms/[^\s'\"]+/build/make\.log")
_KEEP = re.compile(r"^(?:E:|dpkg:|Error!|Consult |\S.* post-installation script subprocess returned error exit status)")
_DPKG_FAILED = re.compile(r"^dpkg: error processing package (?P<name>\S+) \(--configure\):")


def _failure_lines(result):
    """The lines of a failed task's msg, stdout and stderr; of a loop's failed items too (``results``: the
    ``dkms install -k KERNEL`` loop of kernel.yml fails as a whole, each item carrying DKMS's own output)."""
    result = result if isinstance(result, dict) else {}
    lines = []
    for key in ("msg", "stdout", "stderr"):
        lines += str(result.get(key) or "").splitlines()
    for key in ("stdout_lines", "stderr_lines"):
        lines += [str(line) for line in result.get(key) or []]
    for item in result.get("results") or []:
        if isinstance(item, dict) and item.get("failed"):
            lines += _failure_lines(dict(item, results=None))
    return [line.strip() for line in lines if line.strip()]


def failure_logs(result):
    """The DKMS build logs (``/var/lib/dkms/<module>/<version>/build/make.log``) a failed task's msg, stdout and stderr name,
    in order, each once."""
    found = []
    for line in _failure_lines(result):
        for path in _MAKE_LOG.findall(line):
            if path not in found:
                found.append(path)
    return found


def install_failure(result, tails=None, lines=15):
    """What the rescue of a failed install says: apt's and dpkg's error lines, DKMS's (the make.log path included), the last
    ``lines`` lines of each make.log (``tails``: the registered results of ``tail`` on :func:`failure_logs`' paths: item, rc,
    stdout_lines), and for the packages dpkg did not configure, ``dpkg --configure -a``. One string."""
    result = result if isinstance(result, dict) else {}
    msg = " ".join(line.strip() for line in str(result.get("msg") or "").splitlines() if line.strip())
    kept = []
    for line in _failure_lines(dict(result, msg="")):
        if _KEEP.match(line) and line not in kept and line not in msg:
            kept.append(line)
    text = " ".join([msg] + kept)
    for tail in tails or []:
        if not isinstance(tail, dict) or not tail.get("item"):
            continue
        body = [str(x).rstrip() for x in tail.get("stdout_lines") or [] if str(x).strip()][-lines:]
        if tail.get("rc") == 0 and body:
            text += " The end of %s: %s" % (tail["item"], " | ".join(body))
        else:
            text += " %s could not be read (%s)." % (tail["item"], str(tail.get("stderr") or "").strip() or "no output")
    failed = []
    for line in _failure_lines(result):
        match = _DPKG_FAILED.match(line)
        if match and match.group("name") not in failed:
            failed.append(match.group("name"))
    if failed:
        text += (" dpkg left %s not configured: fix the cause, then run dpkg --configure -a (the next run of the role "
                 "re-runs the configure first)." % ", ".join(failed))
    return text.strip()


# --- the persistence daemon ---------------------------------------------------------------------------------------
#
# nvidia-persistenced keeps the driver initialised while no client has the GPU open; started with its default
# (--persistence-mode) it also turns persistence mode on for every GPU (nvidia-persistenced(1), option-table.h of
# NVIDIA/nvidia-persistenced). Ubuntu's unit (canonical/nvidia-graphics-drivers,
# debian/templates/nvidia-compute-utils-flavour.nvidia-persistenced.service.in) runs it with --no-persistence-mode,
# StopWhenUnneeded=true and no [Install] section: udev's 71-nvidia.rules starts it when the driver binds
# (SYSTEMD_WANTS), and persistence mode stays off. NVIDIA's own role (NVIDIA/ansible-role-nvidia-driver,
# files/nvidia-persistenced-override.conf) resets ExecStart in a drop-in. Here the drop-in keeps the shipped unit and
# its command line, with --persistence-mode instead of --no-persistence-mode, StopWhenUnneeded=false and an [Install]
# section (systemctl reads [Install] from drop-ins since systemd 236, systemd PR #7158) so that it starts at boot.

PERSISTENCED_UNIT = "nvidia-persistenced.service"
_SECTION = re.compile(r"^\s*\[(?P<name>[^\]]+)\]\s*$")


def unit_exec_start(unit_text):
    """The command of the last ``ExecStart=`` of a unit file's [Service] section ("" when none; ``ExecStart=`` alone
    resets it, as systemd reads it)."""
    starts = _unit_settings(unit_text, {"ExecStart": "Service"})
    return starts[-1].split("=", 1)[1].strip() if starts else ""


def persistence_command(command):
    """The shipped command line with persistence mode on: ``--no-persistence-mode`` becomes ``--persistence-mode``
    (added when neither is there); every other word is kept as shipped (``--user``, ``--verbose``)."""
    words = command.split()
    if not words:
        return ""
    if "--no-persistence-mode" in words:
        words = ["--persistence-mode" if w == "--no-persistence-mode" else w for w in words]
    elif "--persistence-mode" not in words:
        words.append("--persistence-mode")
    return " ".join(words)


def persistence_dropin(unit_text, unit_path=""):
    """The drop-in for nvidia-persistenced.service from the shipped unit's text, or None when it has no ExecStart."""
    command = persistence_command(unit_exec_start(unit_text))
    if not command:
        return None
    return (
        "# Written by dlbox.stack.nvidia_driver (nvidia_driver_persistence_mode: true). The unit stays as shipped%s;\n"
        "# this drop-in runs its command with persistence mode on, keeps it running when udev no longer wants it, and\n"
        "# starts it at boot. Remove it (or set nvidia_driver_persistence_mode: false) to go back to the shipped unit.\n"
        "[Unit]\n"
        "StopWhenUnneeded=false\n"
        "\n"
        "[Service]\n"
        "ExecStart=\n"
        "ExecStart=%s\n"
        "\n"
        "[Install]\n"
        "WantedBy=multi-user.target\n" % ((" (%s)" % unit_path) if unit_path else "", command))


def _unit_settings(unit_text, keys):
    """The (section, key) settings of a unit file among ``keys`` ({key: section}), in file order."""
    section, found = None, []
    for line in (unit_text or "").splitlines():
        match = _SECTION.match(line)
        if match:
            section = match.group("name").strip()
            continue
        stripped = line.strip()
        if "=" not in stripped or stripped.startswith(("#", ";")):
            continue
        key = stripped.split("=", 1)[0].strip()
        if keys.get(key) == section:
            found.append(stripped)
    return found


def overriding_dropins(dropins, ours):
    """The drop-ins that would undo the role's persistence drop-in: [(path, [settings])].

    systemd merges a unit's ``.conf`` drop-ins in the alphanumeric order of their file names, whatever directory holds
    them, after the unit file (systemd.unit(5), "drop-in"); a later file's ``ExecStart=`` (a reset and a command) and
    ``StopWhenUnneeded=`` replace the earlier ones. ``dropins``: {path: text} of the unit's drop-ins (``systemctl show -p
    DropInPaths``) other than the role's own; ``ours``: the role's drop-in path. A user's ``override.conf`` (what
    ``systemctl edit`` writes) sorts after ``dlbox-persistence-mode.conf``. Only what defeats persistence mode counts:
    a later command with ``--no-persistence-mode`` (or none), a later ``StopWhenUnneeded`` that is true. NVIDIA's own
    role's override.conf (``--persistence-mode``) is no problem."""
    name = ours.rsplit("/", 1)[-1]
    found = []
    for path in sorted(dropins or {}, key=lambda p: p.rsplit("/", 1)[-1]):
        if path == ours or path.rsplit("/", 1)[-1] <= name:
            continue
        bad = []
        text = dropins[path]
        starts = _unit_settings(text, {"ExecStart": "Service"})
        if starts:
            command = starts[-1].split("=", 1)[1].strip()
            if not command or "--no-persistence-mode" in command.split():
                bad.append(starts[-1] if command else "ExecStart= (no command)")
        for setting in _unit_settings(text, {"StopWhenUnneeded": "Unit"}):
            if setting.split("=", 1)[1].strip().lower() in ("1", "yes", "true", "on"):
                bad.append(setting)
        if bad:
            found.append((path, bad))
    return found


def _truth(setting):
    return setting.split("=", 1)[1].strip().lower() in ("1", "yes", "true", "on")


def started_by_udev(unit_text, dropins=None):
    """Whether the unit as systemd applies it (the shipped file, then the other drop-ins in file-name order,
    systemd.unit(5)) is udev's to start and stop: ``StopWhenUnneeded=`` true in the end (Ubuntu's unit; its 71-nvidia.rules
    wants it through SYSTEMD_WANTS when the driver binds) and no ``[Install]`` section to enable it by. A start by the role
    would not last: systemd stops a StopWhenUnneeded unit at once when no active unit wants it, so ``state: started``
    would report a change on every run."""
    texts = [unit_text or ""] + [(dropins or {})[p] for p in sorted(dropins or {}, key=lambda p: p.rsplit("/", 1)[-1])]
    stops = [s for text in texts for s in _unit_settings(text, {"StopWhenUnneeded": "Unit"})]
    keys = {"WantedBy": "Install", "RequiredBy": "Install", "UpheldBy": "Install", "Alias": "Install"}
    install = [s for text in texts for s in _unit_settings(text, keys)]
    return bool(stops) and _truth(stops[-1]) and not install


def loaded_module_version(sys_version="", state=None):
    """The version of the NVIDIA module the kernel has loaded: ``/sys/module/nvidia/version`` (the module's own
    MODULE_VERSION), else the ``loaded_version`` of ``nvidia_driver_state`` (nvidia-smi, else /proc/driver/nvidia/version,
    plugin_utils.driver_state); None when no module is loaded."""
    text = str(sys_version or "").strip()
    if text:
        return text
    if isinstance(state, dict) and state.get("loaded_version"):
        return str(state["loaded_version"])
    return None


def persistence_daemon(manage, build_only, installed, loaded, persistence_mode, unit_text="", unit_path="", check_mode=False,
                       dropins=None, dropin_path="", dropin_present=False):
    """What the role does with nvidia-persistenced: {manage, dropin, dropin_state, start, enable, disable,
    restart_on_change, message, problem}.

    ``manage``: the server profile with ``nvidia_driver_persistenced`` on a host systemd runs. ``installed``: the driver
    version installed. ``loaded``: :func:`loaded_module_version`. ``unit_text``/``unit_path``: the shipped unit
    (its FragmentPath), "" when systemd knows none. ``dropins``/``dropin_path``: the unit's other drop-ins ({path: text})
    and the role's own path: one that systemd applies after the role's and sets ExecStart or StopWhenUnneeded is refused
    (:func:`overriding_dropins`), before the role writes anything, instead of a drop-in that silently does nothing.

    The drop-in is written with ``persistence_mode`` (removed without it). The daemon is started only when the loaded
    module is the installed one: against an older module (a reinstall, a branch change) or none, the user-space daemon
    of the new version fails; then it waits for the reboot (the unit is enabled, so it starts at boot) and the message
    says "pending reboot". No unit in check mode: the package is not installed yet, so nothing can be said about it.
    Without ``persistence_mode`` on a unit udev starts and systemd stops when unneeded (:func:`started_by_udev`, Ubuntu's)
    the role neither enables nor starts it (``enable``/``start`` false): a start would be undone at once and report a
    change on every run; it is restarted only when the role removed its drop-in under it this run
    (``restart_on_change``, with the installed module loaded). ``dropin_present``: the role's own drop-in is there now
    (systemctl show -p DropInPaths). Its [Install] (WantedBy=multi-user.target) made ``systemctl enable`` link the unit
    into multi-user.target.wants; removing the drop-in leaves that link, and the daemon would still start at every boot,
    without persistence mode. So, going back to udev's unit, ``disable`` is true: the role disables the unit while its
    drop-in (and so its [Install]) is still there, then removes the drop-in.
    """
    out = {"manage": bool(manage), "dropin": None, "dropin_state": "absent", "start": False, "enable": False,
           "disable": False, "restart_on_change": False, "message": "", "problem": None}
    if not manage:
        return out
    if not unit_text:
        if check_mode:
            out.update(manage=False, message="Check mode: %s is not installed yet; the role would set it up after the install."
                       % PERSISTENCED_UNIT)
            return out
        out["problem"] = ("nvidia_driver_persistenced: %s is not known to systemd after the install, although the server set "
                          "ships it. Set nvidia_driver_persistenced: false to leave the daemon alone." % PERSISTENCED_UNIT)
        return out
    if persistence_mode:
        out["dropin"] = persistence_dropin(unit_text, unit_path)
        if out["dropin"] is None:
            out["problem"] = ("nvidia_driver_persistence_mode: %s (%s) has no ExecStart to run with --persistence-mode. Set "
                              "nvidia_driver_persistence_mode: false to keep the unit as it is." % (PERSISTENCED_UNIT, unit_path or "?"))
            return out
        out["dropin_state"] = "present"
        later = overriding_dropins(dropins, dropin_path) if dropin_path else []
        if later:
            out["problem"] = (
                "nvidia_driver_persistence_mode: %s would not take effect: %s. systemd merges a unit's drop-ins in the "
                "order of their file names and the later setting wins (systemd.unit(5)), so persistence mode would stay as "
                "that file has it. Move those lines out of it (or rename it to sort before %s), or set "
                "nvidia_driver_persistence_mode: false to keep the daemon as your drop-in runs it. The persistence "
                "daemon's unit was not changed." % (
                    dropin_path, "; ".join("%s (after it) sets %s" % (p, ", ".join(v)) for p, v in later),
                    dropin_path.rsplit("/", 1)[-1]))
            out["dropin"], out["dropin_state"] = None, "absent"
            return out
    udev = not persistence_mode and started_by_udev(unit_text, dropins)
    # the role's drop-in carries [Install]; the shipped unit as it is may have none (Ubuntu's): nothing to enable then
    out["enable"] = not udev
    # back to udev's unit from the role's drop-in: its boot link goes while the drop-in's [Install] still names it
    out["disable"] = bool(udev and dropin_present)
    if build_only:
        out["message"] = "Build-only mode: %s is %s, not started (no module is loaded here)." % (
            PERSISTENCED_UNIT, "left to udev" if udev else "enabled")
        return out
    if udev:
        # nvidia_driver_persistence_mode: false on Ubuntu's unit as shipped: udev starts it when the driver binds and
        # systemd stops it when unneeded; the role only restarts it when it removed its own drop-in under it this run
        out["restart_on_change"] = bool(installed) and loaded == installed
        out["message"] = (
            "nvidia_driver_persistence_mode: false: %s runs as shipped (%s): udev starts it when the NVIDIA driver binds and "
            "systemd stops it when unneeded (StopWhenUnneeded=true, no [Install]), with persistence mode off; the role "
            "neither enables nor starts it (a start would be undone by systemd at once)." % (PERSISTENCED_UNIT, unit_path or "?"))
        return out
    if installed and loaded == installed:
        out["start"] = out["restart_on_change"] = True
        return out
    out["message"] = (
        "pending reboot: %s is enabled but not started: %s, and the daemon of driver %s fails against it; it starts at "
        "the next boot, with the new module." % (
            PERSISTENCED_UNIT, "NVIDIA module %s is loaded" % loaded if loaded else "no NVIDIA module is loaded",
            installed or "(version unknown)"))
    return out
