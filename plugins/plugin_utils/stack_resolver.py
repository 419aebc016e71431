# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The stack resolver of dlbox.stack (controller only): plans driver, CUDA, cuDNN, NCCL, PyTorch, TensorFlow,
Python, Fabric Manager and JetPack for a host.

The data (``data/compat.yml``, loaded and indexed by ``plugin_utils.compat_data.load_compat_index``) says what
exists and what fits; ``stack_rules`` says what breaks; this module chooses:

* parts of the stack the request leaves open are CHOSEN (newest that fits; driver branches prefer
  long-term-support branches that are not end-of-life on the data date and have a confirmed release for
  the install method);
* parts the request names are CHECKED and never silently changed;
* every violated rule becomes one plain-words error naming what was asked, why it fails and what
  would work instead. All violations are collected, not just the first.

Each ``pick_*`` returns its choice (and writes messages to the ``Report``); ``resolve`` assembles the plan.
The input is checked first (``stack_input``): a plan for bad input is refused before anything is chosen.

GPUs: ``resolve`` takes the host's GPUs classified by ``plugin_utils.gpu_catalog`` (pass its ``GpuIndex``
as ``gpu_index`` and ``resolve`` calls its ``classify``); GPUs that carry no ``arch`` are planned from their
``compute_capability``.
"""

from __future__ import annotations

import re

from ansible_collections.dlbox.stack.plugins.plugin_utils.versions import (
    compare_versions,
    driver_branch_of,
    major_minor,
    major_of,
    parse_version,
    version_matches,
    year_month,
)
from ansible_collections.dlbox.stack.plugins.plugin_utils.compat_index import (
    CompatIndex,
)
from ansible_collections.dlbox.stack.plugins.plugin_utils.nvidia_driver_plan import branch_component, driver_packages
from ansible_collections.dlbox.stack.plugins.plugin_utils import nvlink5_detect
from ansible_collections.dlbox.stack.plugins.plugin_utils.stack_input import (
    LATEST_WORDS,
    NONE_WORDS,
    check_host_arch,
    check_request,
)
from ansible_collections.dlbox.stack.plugins.plugin_utils.stack_context import (
    ARCHIVE_FLAVOURS,
    CPU_VARIANT,
    DEFAULT_MACHINE,
    JETSON_MACHINE,
    PYPI_VARIANT,
    PlanContext,
    Report,
    STACK_PARTS,
    archive_branches,
    branch_is_eol,
    branch_order,
    driver_at_least,
    driver_branch_fits,
    driver_description,
    driver_method,
    driver_release,
    gpu_label,
    in_range,
    installable_branches,
    module_flavours,
    newest_cuda_major_for_branch,
    os_python,
    preferred_branch,
    repo_branch_min,
    requested_driver_floors,
    unconfirmed,
)
from ansible_collections.dlbox.stack.plugins.plugin_utils.stack_rules import (
    cuda_fits,
    cuda_native,
    cudnn_fits_framework,
    driver_runs_cuda,
    find_release,
    rule_cuda,
    rule_cudnn,
    rule_driver_branch,
    rule_gpus_supported,
    rule_kernel_modules,
    rule_python,
    rule_pytorch_variant,
    rule_request_fits_host,
    rule_tensorflow,
    tensorflow_newer_gpus,
    variant_fits,
    variant_order,
)

__all__ = ["resolve", "refused_plan"]


def archive_ships_fabric_manager(plan):
    """Does the OS archive ship NVIDIA Fabric Manager (data driver_package_names.distro.<family>.fabric_manager)?

    Ubuntu's does (nvidia-fabricmanager-<branch>), Debian's does not; an OS family the data does not name counts as
    shipping it (the role refuses such an OS on its own).
    """
    family = (plan.os_key or "").split("-", 1)[0]
    names = ((plan.index.driver_names.get("distro") or {}).get(family)) or {}
    return bool(names.get("fabric_manager", True))


def nvlink5_model_system(plan):
    """The NVLink5 system these GPUs belong to by their model (data fabric_manager.nvlink5): ``"hgx"`` (SXM modules of an
    HGX B200/B300 board: Fabric Manager with NVLSM, libnvsdm and NSCQ), ``"nvl"`` (GB200/GB300 NVL compute trays: IMEX,
    no local Fabric Manager) or None. The fallback of :func:`fabric_decision` where the host shows nothing (a fresh
    host, a cloud instance without the VPD file, a plan from GPU names).
    """
    nvl5 = plan.index.fabric.get("nvlink5") or {}
    names = set((nvl5.get("nvl") or {}).get("names") or [])
    if any(g.get("catalog_name") in names for g in plan.kinds):
        return "nvl"
    forms = (nvl5.get("hgx") or {}).get("forms") or []
    if any(g.get("form") in forms and g.get("cc") and compare_versions(g["cc"], nvl5["cc_min"]) >= 0 for g in plan.kinds):
        return "hgx"
    return None


def fabric_decision(plan):
    """Which NVLink fabric this host has (``nvlink5_detect.decide``): the host's evidence (``nvlink_fabric``, PCI
    NVSwitches, or the same from captures) before the GPU model, ``dlbox_plan_hardware.fabric`` before both. Kept on
    the plan once made."""
    cached = getattr(plan, "_fabric_decision", None)
    if cached is not None and cached[0] is plan.kinds:  # a derived plan with other GPUs decides again
        return cached[1]
    decision = nvlink5_detect.decide(plan.host, nvlink5_model_system(plan) if plan.kinds else None,
                                     plan.host.get("fabric_asked"))
    plan._fabric_decision = (plan.kinds, decision)  # pylint: disable=protected-access,attribute-defined-outside-init
    return decision


def nvlink5_system(plan):
    """The NVLink5 system of this host: ``"hgx"``, ``"nvl"`` or None, from :func:`fabric_decision` (detected evidence
    first, then the GPU model). None as well while the data says these systems are not supported (``rule_nvlink5``
    refuses them then).

    Their NVSwitches are no PCI devices of class 0680 (a real 8x B200 host shows none:
    openfabric-systems/simllm vastai_hgx_b200_8x); the management ports' VPD, the link speed and the fabric's cluster
    say what the host is, and the model where the host shows nothing.
    """
    nvl5 = plan.index.fabric.get("nvlink5") or {}
    if not nvl5 or not nvl5.get("supported", True) or not (nvl5.get("hgx") or nvl5.get("nvl")):
        return None
    kind = fabric_decision(plan)["kind"]
    return kind if kind in ("hgx", "nvl") else None


def nvlink5_label(plan, system):
    """'NVIDIA B200 (Blackwell, CC 10.0) on an HGX board' / '... on a GB200/GB300 NVL compute tray': for messages."""
    gpus = ", ".join(gpu_label(g) for g in plan.kinds)
    return "%s on an HGX board with NVLink5 NVSwitches" % gpus if system == "hgx" else \
        "%s on an NVL compute tray (NVLink5 switch trays)" % gpus


def _nvlink5_rows(plan, system, branch):
    """The data's package row of an NVLink5 system for a driver branch, or None."""
    rows = ((plan.index.fabric.get("nvlink5") or {}).get(system) or {}).get("packages") or []
    found = None
    for row in rows:
        if branch >= int(row["branch_min"]) and (row.get("branch_max") is None or branch <= int(row["branch_max"])):
            found = row
    return found


def pick_method(plan, report):
    """Choose NVIDIA's repository when the request names no driver_method and the OS archive cannot serve this host.

    The data's default method (``os.default_driver_method``) is the OS archive. It cannot serve a host when
    (a) the host has NVSwitches and the archive ships no Fabric Manager (Debian: the GPUs would run no CUDA work), or
    (b) on a new install (no driver installed, no driver_branch asked), the archive has no branch for these GPUs that is
    not end of life (Debian 12: R535, end of life since 2026-06). Then, where NVIDIA's repository has a supported
    branch for them, ``plan.method_choice`` becomes ``("nvidia_repo", why)`` and a note says why; the plan shows the
    reason as ``stack.driver.method_reason``. A method the request names is never changed (``pick_driver`` and
    ``pick_fabric_manager`` warn or refuse instead).
    """
    if plan.asked("driver_method") or plan.index.default_driver_method != "distro":
        return
    archive = "%s's own archive" % (plan.os_key or "this OS")
    system = nvlink5_system(plan)
    if system is not None:
        needs = "Fabric Manager, NVLSM, libnvsdm, NSCQ" if system == "hgx" else "IMEX"
        why = ("%s: data/compat.yml knows the packages these systems need (%s) only from NVIDIA's repository "
               "(fabric_manager.nvlink5)" % (nvlink5_label(plan, system), needs))
        plan.method_choice = ("nvidia_repo", why)
        report.note("The driver comes from NVIDIA's repository (driver_method: nvidia_repo): %s." % why)
        return
    if plan.nvswitch and not archive_ships_fabric_manager(plan):
        why = ("%s ships no NVIDIA Fabric Manager, without which an NVSwitch system runs no CUDA work (data/compat.yml "
               "driver_package_names.distro.%s.fabric_manager: false); NVIDIA's repository ships it at the driver's version"
               % (archive, (plan.os_key or "").split("-", 1)[0]))
        plan.method_choice = ("nvidia_repo", why)
        report.note("The driver comes from NVIDIA's repository (driver_method: nvidia_repo): %s." % why)
        return
    if plan.installed or plan.asked("driver_branch"):
        return  # a kept or requested branch: pick_driver says what the archive lacks
    archive_branch = preferred_branch(plan)
    if archive_branch is not None and not branch_is_eol(plan, plan.index.branch[archive_branch]):
        return
    plan.method_choice = ("nvidia_repo", "")
    repo_branch = preferred_branch(plan)
    if repo_branch is None or branch_is_eol(plan, plan.index.branch[repo_branch]):
        plan.method_choice = None  # no better source: the archive's branch is planned with a warning, or the plan refuses
        return
    entry = plan.index.branch[repo_branch]
    about = [entry["designation"]] if entry.get("designation") else []
    about.append("supported until %s" % entry["eol"] if entry.get("eol") not in (None, "", "ended") else "supported")
    date = archive_date(plan)
    if archive_branch is None:
        lacks = "%s has no driver branch for these GPUs (archive data of %s)" % (archive, date)
        instead = ""
    else:
        lacks = ("%s has no supported driver branch for these GPUs: its newest for them, R%s, is %s (archive data of %s)"
                 % (archive, archive_branch, eol_words(plan.index.branch[archive_branch]), date))
        instead = "; request driver_method: distro to install the archive's R%s anyway" % archive_branch
    why = "%s; NVIDIA's repository has R%s (%s)" % (lacks, repo_branch, ", ".join(about))
    plan.method_choice = ("nvidia_repo", why)
    report.note("The driver comes from NVIDIA's repository (driver_method: nvidia_repo): %s%s." % (why, instead))


def pick_driver(plan, report):
    """Decide the driver branch: requested (checked), installed (kept) or chosen."""
    pick_method(plan, report)
    requested = plan.request.get("driver_branch")
    installed_branch = driver_branch_of(plan.installed) if plan.installed else None
    if requested not in (None, "", "auto"):
        branch = driver_branch_of(requested)
        entry = plan.index.branch.get(branch) if branch else None
        if entry is None:
            known = ", ".join(str(e["branch"]) for e in branch_order(plan) if not branch_is_eol(plan, e))
            report.add(["Driver branch '%s' is not a known branch in data/compat.yml; use one of: %s." % (requested, known)])
            return None
        report.add(rule_driver_branch(plan, branch, "Driver branch R%s" % branch))
        for floor, reason in requested_driver_floors(plan):
            if branch < floor:
                report.add(["%s needs driver branch R%s or newer, but driver_branch: %s was requested; request driver_branch: %s or newer, or a "
                            "CUDA %s.x build." % (reason, floor, branch, floor, newest_cuda_major_for_branch(plan, branch))])
        method = driver_method(plan)
        floor = repo_branch_min(plan)
        if method == "nvidia_repo" and floor is not None and branch < floor and installed_branch != branch:
            report.add([repo_floor_refusal(plan, branch, floor)])
        elif installed_branch != branch and driver_release(plan, branch, method, module_flavours(plan)) is None:
            if method == "distro" and not plan.asked("driver_method") and driver_release(plan, branch, "nvidia_repo", ()) is not None:
                why = "%s; NVIDIA's repository has R%s" % (archive_lacks(plan, branch), branch)
                plan.method_choice = ("nvidia_repo", why)
                report.note("Driver branch R%s is planned from NVIDIA's repository (driver_method: nvidia_repo): %s (name "
                            "driver_method to choose the source yourself)." % (branch, why))
            elif method == "distro":
                report.add(["Driver branch R%s is not installable from %s's own archive: %s (driver_method: distro ships %s); "
                            "request driver_method: nvidia_repo, which installs R%s from NVIDIA's repository, or one of those "
                            "branches." % (branch, plan.os_key or "this OS", archive_lacks(plan, branch),
                                           installable_branches(plan, method), branch)])
            else:
                report.warn("Driver branch R%s has no Linux release confirmed in data/compat.yml; the version NVIDIA's repository "
                            "installs is unknown here (confirmed: %s)." % (branch, installable_branches(plan, method)))
        if branch_is_eol(plan, entry):
            report.warn("Driver branch R%s is %s; prefer R%s." % (branch, eol_words(entry), preferred_branch(plan)))
        changed = installed_branch is not None and installed_branch != branch
        if changed:
            report.note("The installed driver %s (R%s) will be replaced by driver branch R%s." % (plan.installed, installed_branch, branch))
        version = plan.installed if installed_branch == branch else None
        return {"branch": branch, "version": version, "installed": version is not None, "changed": changed, "entry": entry}
    if installed_branch is not None:
        entry = plan.index.branch.get(installed_branch) or {"branch": installed_branch}
        errors = rule_driver_branch(plan, installed_branch, "The installed driver %s" % plan.installed)
        errors = [m[:-1] + " to replace it." if "use driver_branch" in m else m for m in errors]
        report.add(errors)
        if entry.get("status") and branch_is_eol(plan, entry):
            newer = preferred_branch(plan)
            if newer is not None and newer > installed_branch:
                advice = "request driver_branch: %s to upgrade" % newer
            else:
                method = driver_method(plan)
                advice = "driver_method: %s installs no newer branch for these GPUs; request driver_method: %s and a newer driver_branch" % (
                    method, "distro" if method == "nvidia_repo" else "nvidia_repo")
            report.warn("The installed driver %s belongs to branch R%s, %s; %s."
                        % (plan.installed, installed_branch, eol_words(entry), advice))
        report.note("Keeping the installed driver %s (R%s); request driver_branch to change it." % (plan.installed, installed_branch))
        return {"branch": installed_branch, "version": plan.installed, "installed": True, "changed": False, "entry": entry}
    branch = preferred_branch(plan)
    if branch is None:
        limits = plan.limits
        floors = [(f, why) for f, why in requested_driver_floors(plan) if limits["branch_max"] and f > limits["branch_max"][0]]
        if floors:
            gpu = limits["branch_max"][1]
            top = limits["branch_max"][0]
            report.add(["%s needs driver branch R%s or newer, but %s is supported only up to driver branch R%s; ask for "
                        "a CUDA %s.x build instead." % (floors[0][1], floors[0][0], gpu_label(gpu), top,
                                                        newest_cuda_major_for_branch(plan, top))])
        elif not report.errors:
            method = driver_method(plan)
            where = "%s's own archive" % (plan.os_key or "this OS") if method == "distro" else "NVIDIA's repository"
            other = "nvidia_repo" if method == "distro" else "distro"
            report.add(["No driver branch that fits these GPUs and requests has a confirmed release in %s (driver_method: %s "
                        "installs %s); try driver_method: %s." % (where, method, installable_branches(plan, method), other)])
        return None
    entry = plan.index.branch[branch]
    if branch_is_eol(plan, entry):
        report.warn(eol_choice_warning(plan, branch, entry))
    else:
        short = short_support_warning(plan, branch, entry)
        if short:
            report.warn(short)
    return {"branch": branch, "version": None, "installed": False, "changed": False, "entry": entry}


SHORT_SUPPORT_MONTHS = 6  # a chosen branch whose support ends within this many months of the data's date is said


def short_support_warning(plan, branch, entry):
    """The chosen branch's support ends within SHORT_SUPPORT_MONTHS of the data's date while a branch supported longer
    fits these GPUs but has no release confirmed for this method (so it was not chosen): say both, with the way to take
    the longer one (driver_branch). Ubuntu 26.04 with driver_method nvidia_repo: R595 (PB, to 2027-03) was chosen over
    R620 (LTSB, to 2029-09) because data/compat.yml knows no R620 version of NVIDIA's repository (issue 53 red team)."""
    eol, today = year_month(entry.get("eol")), year_month(plan.index.date)
    if not eol or not today:
        return None
    left = (eol[0] - today[0]) * 12 + eol[1] - today[1]
    if left > SHORT_SUPPORT_MONTHS:
        return None
    floors = requested_driver_floors(plan)
    longer = [e for e in branch_order(plan)
              if not branch_is_eol(plan, e) and year_month(e.get("eol")) and year_month(e.get("eol")) > eol
              and driver_branch_fits(plan, int(e["branch"])) and all(int(e["branch"]) >= f for f, _n in floors)]
    if not longer:
        return None
    other = longer[0]
    where = "%s's own archive" % (plan.os_key or "this OS") if driver_method(plan) == "distro" else "NVIDIA's repository"
    return ("Driver branch R%s is supported only until %s (%d months after this data's date, %s); R%s (%s, supported until "
            "%s) fits these GPUs but data/compat.yml confirms no release of it in %s, so it was not chosen. Request "
            "driver_branch: %s to install it (its version is then the newest there) or plan the move before %s."
            % (branch, entry["eol"], left, plan.index.date, other["branch"], other.get("designation") or "designation unknown",
               other["eol"], where, other["branch"], entry["eol"]))


def repo_floor_refusal(plan, branch, floor):
    """driver_branch below the first branch of NVIDIA's repository for this OS, with the driver from that repository:
    the refusal, naming driver_branch and what works (a branch the repository has; the OS archive's own, where the host
    allows driver_method: distro)."""
    repo = (plan.os_entry or {}).get("repo_distro") or plan.os_key
    newer = [int(e["branch"]) for e in branch_order(plan) if int(e["branch"]) >= floor and driver_branch_fits(plan, int(e["branch"]))
             and not branch_is_eol(plan, e) and driver_release(plan, int(e["branch"]), "nvidia_repo", ()) is not None]
    ways = ["request driver_branch: %s (%s)" % (newer[0], ", ".join("R%s" % b for b in sorted(newer)))] if newer else []
    forced = getattr(plan, "method_choice", None)
    tail = ""
    if not plan.asked("driver_method") and forced and forced[1]:
        tail = " (driver_method: distro is no way here: %s)" % forced[1]
    elif driver_release(plan, branch, "distro", module_flavours(plan)) is not None:
        ways.append("request driver_method: distro, which installs %s's own R%s" % (plan.os_key, branch))
    return ("driver_branch: %s with the driver from NVIDIA's repository (driver_method: nvidia_repo): NVIDIA's repository %s "
            "starts at driver branch R%s and has no R%s (data/compat.yml os.distros.%s.nvidia_repo.branch_min); %s%s." % (
                branch, repo, floor, branch, plan.os_key, "; or ".join(ways) or "request a newer driver_branch", tail))


def archive_lacks(plan, branch):
    """Why the OS archive cannot give ``branch``: its packages are transitional (named with the branch they pull and
    the data's date), or it has none."""
    found = next((b for b in archive_branches(plan) if int(b["branch"]) == int(branch)), None)
    names = module_flavours(plan)
    if int(branch) < int(plan.index.kernel_modules.get("open_default_from_branch") or 0):
        names = sorted(names, key=lambda n: n != "proprietary")  # the flavour the plan would pick for that branch
    flavours = [f for name in names for f in ARCHIVE_FLAVOURS.get(name, ())]
    have = (found or {}).get("flavours") or {}
    pulls = [(have[name].get("package"), have[name].get("pulls"), have[name].get("pulls_branch"))
             for name in flavours if name in have and have[name].get("pulls_branch") is not None]
    date = archive_date(plan)
    if pulls:
        package, pulled, pulled_branch = pulls[0]
        return ("the archive's %s is a transitional package that installs %s (R%s) instead (archive data of %s)"
                % (package, pulled or "another branch", pulled_branch, date))
    return "the archive has no R%s package for these kernel modules (archive data of %s)" % (branch, date)


def archive_date(plan):
    """The date of the data on the OS archive's driver packages (distro_drivers)."""
    archive = (plan.index.distro_drivers.get(plan.os_key) or {}).get("distro") or {}
    return archive.get("date") or (plan.index.data.get("distro_drivers") or {}).get("date") or plan.index.date


def eol_words(entry):
    """'end-of-life since 2026-06 (no security updates)': the branch's own date from data/compat.yml."""
    eol = entry.get("eol")
    if eol in (None, "", "ended"):
        return "end-of-life (no security updates)"
    return "end-of-life since %s (no security updates)" % eol


def eol_choice_warning(plan, branch, entry):
    """An end-of-life branch chosen because the driver method offers nothing newer: say what would."""
    method = driver_method(plan)
    where = "%s's own archive" % (plan.os_key or "this OS") if method == "distro" else "NVIDIA's repository"
    head = "Driver branch R%s is %s, and the newest branch for these GPUs that %s has (driver_method: %s)" % (
        branch, eol_words(entry), where, method)
    other = "nvidia_repo" if method == "distro" else "distro"
    floors = requested_driver_floors(plan)
    for candidate in branch_order(plan):
        number = int(candidate["branch"])
        if (not branch_is_eol(plan, candidate) and driver_branch_fits(plan, number) and all(number >= f for f, _n in floors)
                and driver_release(plan, number, other, module_flavours(plan)) is not None):
            until = " (supported until %s)" % candidate["eol"] if candidate.get("eol") not in (None, "", "ended") else ""
            return "%s; driver_method: %s installs R%s%s for them." % (head, other, number, until)
    return "%s; no supported branch for them exists in the data's other source (driver_method: %s) either." % (head, other)


def pick_modules(plan, report):
    if plan.driver is None:
        return None
    requested = plan.request.get("kernel_modules")
    branch = plan.driver["branch"]
    removed = plan.index.kernel_modules.get("proprietary_removed_from_branch")
    if requested not in (None, "", "auto"):
        flavour = str(requested).lower()
        report.add(rule_kernel_modules(plan, flavour))
    elif "open" in plan.limits["modules"] and (
        "proprietary" not in plan.limits["modules"] or branch >= int(plan.index.kernel_modules["open_default_from_branch"])
    ):
        flavour = "open"
    elif "proprietary" in plan.limits["modules"]:
        flavour = "proprietary"
    else:
        flavour = "open"
    if flavour == "proprietary" and removed and branch >= int(removed):
        report.warn("The R%s Driver Installation Guide has a section 'Proprietary Kernel Modules Removed' (content unconfirmed); "
                    "proprietary modules may not exist for this branch." % branch)
    return flavour


def _driver_packages(plan, flavour):
    entry = plan.driver.get("entry") or {}
    style = plan.index.driver_packages.get(entry.get("packages") or "versioned") or {}
    branch = plan.driver["branch"]
    names = list(style.get(flavour) or []) + list(style.get("lock") or [])
    return [str(n).replace("{branch}", str(branch)) for n in names]


def _driver_repo_names(plan, flavour):
    """NVIDIA's repository names of the branch's own packages on this OS family (data driver_package_names).

    ``{"lock": "nvidia-driver-pinning-595" | None, "kernel_package": "nvidia-kernel-open-dkms",
    "same_version": ["nvidia-driver-cuda"], "dkms_module": "nvidia"}``; None when the data names none for this OS or branch.
    """
    branch = plan.driver["branch"]
    family = (plan.os_key or "").split("-", 1)[0]
    found = None
    for entry in (plan.index.driver_names.get("nvidia_repo") or {}).get(family) or []:
        high = entry.get("branch_max")
        if branch >= int(entry["branch_min"]) and (high is None or branch <= int(high)):
            found = entry
    if found is None:
        return None
    style = plan.index.driver_packages.get((plan.driver.get("entry") or {}).get("packages") or "versioned") or {}
    locks = [str(n).replace("{branch}", str(branch)) for n in style.get("lock") or []]
    return {
        "lock": locks[0] if locks else None,
        "kernel_package": str((found.get("kernel") or {}).get(flavour) or "").replace("{branch}", str(branch)) or None,
        "same_version": [str(n).replace("{branch}", str(branch)) for n in found.get("same_version") or []],
        "dkms_module": found.get("dkms_module"),
    }


def cuda_advice(plan, report, rel):
    version = rel["version"]
    if plan.driver is not None:
        need = rel.get("toolkit_driver_min")
        if need and not driver_at_least(plan, need):
            report.warn("CUDA %s's own driver is %s; %s runs it in minor-version compatibility mode (PTX of newer "
                        "architectures cannot be JIT-compiled, some features missing)." % (version, need, driver_description(plan)))
        elif not need:
            guess = rel.get("toolkit_driver_min_unconfirmed")
            report.warn("CUDA %s no longer bundles a Linux driver and its driver floor is unconfirmed%s; only the CUDA %s.x "
                        "floor is certain." % (version, " (>= %s reported)" % guess if guess else "", major_of(version)))
    archive = archive_cuda_toolkit(plan)
    same_major = archive is not None and major_of(archive["version"]) == major_of(version)
    if plan.os_key and plan.os_entry and plan.os_key not in (rel.get("os") or []):
        if archive is not None and ".".join(archive["version"].split(".")[:2]) == version:
            report.note("CUDA %s is not in NVIDIA's repository %s (data/compat.yml lists it for %s only); %s's own archive "
                        "ships it (%s %s, %s): the plan's stack.cuda names that package and no NVIDIA repository; install it "
                        "with cuda_method: distro (the cuda role refuses its default cuda_method: nvidia_repo for it)." % (
                            version, plan.os_entry.get("repo_distro"), ", ".join(rel.get("os") or []) or "no OS",
                            plan.os_key, archive["package"], archive["package_version"], archive["suite"]))
            if distro_cuda_minimum(plan):
                report.warn("dlbox_plan_request.cuda '%s' (cuda_method: distro) needs %s: keep that pocket enabled, or apt "
                            "installs an older one that nvcc cannot use; stack.cuda.minimum names it (data/compat.yml "
                            "os.distros.%s.distro_cuda_minimum) and the cuda role does not pin it." % (
                                version, minimum_text(plan), plan.os_key))
            return
        report.warn("CUDA %s is not listed for %s in data/compat.yml (the per-OS list is unconfirmed); check NVIDIA's "
                    "repository %s." % (version, plan.os_key, plan.os_entry.get("repo_distro")))
        return
    confirmed = ((plan.os_entry or {}).get("nvidia_repo") or {}).get("cuda_confirmed")
    if confirmed and version not in [c["version"] for c in confirmed]:
        # the OS's NVIDIA repository has confirmed releases in the data, and this is not one of them
        report.warn("CUDA %s in NVIDIA's repository %s is unconfirmed: data/compat.yml confirms only %s there "
                    "(os.distros.%s.nvidia_repo.cuda_confirmed; cuda.releases lists %s for it by repository names only); "
                    "check that %s exists before relying on it, or request cuda: '%s'." % (
                        version, plan.os_entry.get("repo_distro"),
                        ", ".join("%s (%s %s)" % (c["version"], c["package"], c["package_version"]) for c in confirmed),
                        plan.os_key, version, plan.index.cuda_toolkit_package.format(
                            major=parse_version(version)[0], minor=parse_version(version)[1]), confirmed[-1]["version"]))
    if same_major and archive.get("home") and not archive["version"].startswith(version + "."):
        # Ubuntu 26.04: Canonical's packaging of NVIDIA's CUDA (NVIDIA's layout, /usr/local/cuda-X.Y) is an alternative of
        # the same major; an older major (Debian 12's 11.8, Debian 13's 12.4 beside CUDA 13) is no alternative and not named.
        needs = [m["package"] + " " + m["version"] + " or newer from " + m["suite"] for m in distro_cuda_minimum(plan)]
        report.note("CUDA %s comes from NVIDIA's repository %s (cuda_method: nvidia_repo, the cuda role's default); %s's own "
                    "archive ships CUDA %s (%s %s, %s; files in %s), which cuda_method: distro installs instead%s." % (
                        version, plan.os_entry.get("repo_distro") if plan.os_entry else "?", plan.os_key,
                        archive["version"], archive["package"], archive["package_version"], archive["suite"], archive["home"],
                        " (it needs %s)" % ", ".join(needs) if needs else ""))


def repo_lacks_cuda(plan, rel):
    """The refusal of a requested CUDA that NVIDIA's repository has no release of for this OS, when the driver comes
    from that repository (driver_method: nvidia_repo), naming what would work; None when there is nothing to refuse.

    With the archive's driver (driver_method: distro) it stays a note (cuda_advice): the cuda role's cuda_method: distro
    installs the archive's toolkit there."""
    if not plan.os_key or not plan.os_entry or plan.os_key in (rel.get("os") or []) or driver_method(plan) != "nvidia_repo":
        return None
    version = rel["version"]
    repo = plan.os_entry.get("repo_distro") or plan.os_key
    head = ("cuda: '%s' with the driver from NVIDIA's repository (driver_method: nvidia_repo): NVIDIA's repository %s has "
            "no CUDA %s (data/compat.yml cuda.releases lists %s for %s only)" % (
                plan.request.get("cuda"), repo, version, version, ", ".join(rel.get("os") or []) or "no OS"))
    offered = [r["version"] for r in plan.index.cuda if plan.os_key in (r.get("os") or []) and cuda_fits(plan, r)]
    if offered:
        names = ["'%s'" % v for v in offered]
        ways = ["request cuda: %s (what data/compat.yml lists in NVIDIA's %s for these GPUs)" % (
            names[0] if len(names) == 1 else "%s or %s" % (", ".join(names[:-1]), names[-1]), repo)]
    else:
        head += "; data/compat.yml lists no CUDA release of NVIDIA's repository %s that fits these GPUs" % repo
        ways = []
    archive = archive_cuda_toolkit(plan)
    if archive is not None and ".".join(archive["version"].split(".")[:2]) == version:
        ways.append("request driver_method: distro and install %s's own CUDA %s with the cuda role's cuda_method: distro "
                    "(%s %s, %s)" % (plan.os_key, archive["version"], archive["package"], archive["package_version"], archive["suite"]))
    if not ways:
        ways.append("request driver_method: distro, or leave cuda out")
    return "%s; %s." % (head, "; or ".join(ways))


def archive_cuda_toolkit(plan):
    """The OS archive's CUDA toolkit (distro_drivers.distros.<os>.distro.cuda_toolkit), or None."""
    return ((plan.index.distro_drivers.get(plan.os_key) or {}).get("distro") or {}).get("cuda_toolkit")


def distro_cuda_minimum(plan):
    """Package versions the OS archive's CUDA toolkit needs at least (os.distros.<os>.distro_cuda_minimum), or []."""
    return list((plan.os_entry or {}).get("distro_cuda_minimum") or [])


def minimum_text(plan):
    """'cuda-crt-13-1 13.1.115-0ubuntu1.1 or newer from resolute-updates (why)' for each minimum, joined; '' when none."""
    return "; ".join("%s %s or newer from %s%s" % (
        m["package"], m["version"], m["suite"], " (%s)" % " ".join(m["reason"].split()) if m.get("reason") else "")
        for m in distro_cuda_minimum(plan))


def pick_cuda(plan, report, tf):
    requested = plan.request.get("cuda")
    if requested not in (None, "", "auto"):
        rel = plan.index.cuda_release(requested)
        if rel is None:
            known = ", ".join(r["version"] for r in plan.index.cuda[:8])
            skipped = [v for v in plan.index.cuda_never_released if version_matches(v, requested)]
            why = " (%s was never released)" % skipped[0] if skipped else ""
            report.add(["CUDA '%s' is not a CUDA release in data/compat.yml%s; use one of: %s, ..."
                        % (requested, why, known)])
            return None
        problems = rule_cuda(plan, rel)
        # the GPUs', driver's and OS's own limits first; then what NVIDIA's repository has for this OS
        missing = None if problems else repo_lacks_cuda(plan, rel)
        if missing:
            report.add([missing])
            return None
        report.add(problems)
        cuda_advice(plan, report, rel)
        return rel
    best, best_key = None, None
    # where the data confirms what NVIDIA's repository for this OS has (os.distros.<os>.nvidia_repo.cuda_confirmed), a
    # confirmed release wins over a newer unconfirmed one of the same fit (issue 53 red team: R595 on 26.04 fits neither
    # 13.3 nor 13.4 natively, and the unconfirmed 13.4 was chosen over the confirmed 13.3)
    confirmed = [c["version"] for c in ((plan.os_entry or {}).get("nvidia_repo") or {}).get("cuda_confirmed") or []]
    for rel in plan.index.cuda:
        if not cuda_fits(plan, rel):
            continue
        if tf is not None and major_of(rel["version"]) != major_of(tf["cuda"]):
            continue
        if plan.os_key and plan.os_entry and plan.os_key not in (rel.get("os") or []):
            continue
        has_cudnn = any(cudnn_fits_framework(plan, c, rel["version"], tf) for c in plan.index.cudnn)
        key = (cuda_native(plan, rel), has_cudnn, not confirmed or rel["version"] in confirmed, parse_version(rel["version"]))
        if best_key is None or key > best_key:
            best, best_key = rel, key
    if best is None:
        report.warn("No CUDA toolkit release in data/compat.yml fits these GPUs, this driver and OS; the plan has no CUDA toolkit.")
        return None
    cuda_advice(plan, report, best)
    return best


def archive_only_cuda(plan, rel):
    """The OS archive's toolkit when it is the only source of ``rel`` here: NVIDIA's repository has no release of it for
    this OS (cuda.releases os) and the archive ships that CUDA X.Y (Ubuntu 26.04's 13.1); else None."""
    if not plan.os_key or not plan.os_entry or plan.os_key in (rel.get("os") or []):
        return None
    archive = archive_cuda_toolkit(plan)
    if archive is None or ".".join(archive["version"].split(".")[:2]) != rel["version"]:
        return None
    return archive


def _cuda_out(plan, rel):
    updates = rel.get("updates") or []
    parts = parse_version(rel["version"])
    machine = plan.index.machines.get(plan.arch)
    archive = archive_only_cuda(plan, rel)
    if archive is not None:
        # no NVIDIA repository has it for this OS: the plan names the archive's package (cuda_method: distro), never a
        # repository the cuda role would refuse
        out = {"version": rel["version"], "latest_update": archive["version"], "latest_update_driver": None,
               "toolkit_driver_min": rel.get("toolkit_driver_min"), "package": archive["package"], "repository": None}
        minimum = distro_cuda_minimum(plan)
        if minimum:
            # package versions the archive's toolkit needs at least (Ubuntu 26.04's cuda-crt-13-1 for glibc 2.43)
            out["minimum"] = [{"package": m["package"], "version": m["version"], "suite": m["suite"]} for m in minimum]
        return out
    return {
        "version": rel["version"],
        "latest_update": updates[-1]["version"] if updates else None,
        "latest_update_driver": updates[-1].get("driver") if updates else None,
        "toolkit_driver_min": rel.get("toolkit_driver_min"),
        "package": plan.index.cuda_toolkit_package.format(major=parts[0], minor=parts[1]),
        # NVIDIA's repository directory for this OS and machine, e.g. ubuntu2204/x86_64 (None when either is unknown)
        "repository": "%s/%s" % (plan.os_entry["repo_distro"], machine["cuda_repo"]) if plan.os_entry and machine else None,
    }


def pick_cudnn(plan, report, cuda_rel, tf):
    requested = plan.request.get("cudnn")
    cuda_version = cuda_rel["version"] if cuda_rel else None
    if requested not in (None, "", "auto"):
        if str(requested).lower() in NONE_WORDS:
            return None
        entry = next((e for e in plan.index.cudnn if version_matches(requested, e["version"])), None)
        if entry is None:
            report.add(["cuDNN '%s' is not in data/compat.yml; known: %s." % (requested, ", ".join(e["version"] for e in plan.index.cudnn))])
            return None
        report.add(rule_cudnn(plan, entry, cuda_version))
        if tf is not None and not tf.get("and_cuda") and major_of(entry["version"]) != major_of(tf["cudnn"]):
            report.add(["TensorFlow %s uses the system cuDNN %s.x (no [and-cuda] extra), but cuDNN %s was requested; use cudnn: '%s'."
                        % (tf["version"], major_of(tf["cudnn"]), entry["version"], tf["cudnn"])])
        return entry
    if cuda_rel is None:
        return None
    for entry in plan.index.cudnn:
        if cudnn_fits_framework(plan, entry, cuda_version, tf):
            if unconfirmed(entry):
                report.warn("cuDNN %s: part of its support range is unconfirmed (%s)." % (entry["version"], entry.get("source")))
            return entry
    report.warn(no_cudnn_message(plan, cuda_version, tf))
    return None


def no_cudnn_message(plan, cuda_version, tf):
    """The warning of a plan whose CUDA has no cuDNN row: the request variables to change, and the newest CUDA that has one."""
    same_os = [r for r in plan.index.cuda if not (plan.os_key and plan.os_entry) or plan.os_key in (r.get("os") or [])]
    with_cudnn = [(r["version"], c["version"]) for r in same_os if cuda_fits(plan, r)
                  for c in plan.index.cudnn if cudnn_fits_framework(plan, c, r["version"], tf)]
    best = max(with_cudnn, key=lambda pair: parse_version(pair[0])) if with_cudnn else None
    way = ("request dlbox_plan_request.cuda: '%s' (cuDNN %s has a build for it), or " % best) if best else ""
    return ("dlbox_plan_request.cudnn: no cuDNN in data/compat.yml has a build for CUDA %s that supports these GPUs, so the "
            "plan has no system cuDNN (stack.cudnn is null); %sset cudnn: 'none' to plan without one." % (cuda_version, way))


def requested_frameworks(plan):
    """Releases named by the request, for the Python choice."""
    out = []
    if plan.asked("pytorch") and str(plan.request["pytorch"]).lower() not in NONE_WORDS + LATEST_WORDS:
        rel = find_release(plan.index.pytorch, plan.request["pytorch"])
        if rel:
            out.append(("PyTorch", rel))
    if plan.asked("tensorflow") and str(plan.request["tensorflow"]).lower() not in NONE_WORDS + LATEST_WORDS:
        rel = find_release(plan.index.tensorflow, plan.request["tensorflow"])
        if rel:
            out.append(("TensorFlow", rel))
    return out


def _archive_has_python(plan, report, version, asked, advice):
    """False (with the error) when the OS archive does not package Python ``version`` and the host brings none
    (python_env_interpreters: ``plan.own_pythons``). ``asked``: what asked for it; ``advice``: what to request instead
    (``{pythons}``: the archive's Pythons)."""
    packaged = [str(v) for v in (plan.os_entry or {}).get("pythons") or []]
    if not packaged or version in packaged or version in getattr(plan, "own_pythons", ()):
        return True
    # the data lists every Python the OS archive packages (Ubuntu 26.04: 3.14 only); python_env installs from it
    report.add(["%s: %s's archive packages only Python %s (data/compat.yml os.distros.%s.pythons) and "
                "dlbox.stack never builds Python; %s. To use Python %s "
                "anyway, install it yourself (e.g. `uv python install %s`), name it in python_env_interpreters "
                "({\"%s\": /path/to/python%s}) and set the environment's python: \"%s\" (python_env_environments)."
                % (asked, plan.os_key, ", ".join(packaged), plan.os_key, advice.replace("{pythons}", ", ".join(packaged)), version,
                   version, version, version, version)])
    return False


def pick_python(plan, report):
    requested = plan.request.get("python")
    distro_python = os_python(plan)
    if requested not in (None, "", "auto"):
        version = major_minor(requested)
        if not version or major_of(version) != 3:
            report.add(["python: '%s' is not a Python 3 version like '%s'." % (requested, plan.index.default_python)])
            return None
        if not _archive_has_python(plan, report, version, "python: '%s'" % requested,
                                   "request python: '%s' or leave python out" % (distro_python or "{pythons}")):
            return None
        if distro_python and version != distro_python:
            report.note("Python %s is not %s's default python3 (%s); the environment role must provide it (e.g. uv or a PPA)."
                        % (version, plan.os_key, distro_python))
        return version
    frameworks = requested_frameworks(plan)
    if distro_python and all(in_range(distro_python, rel["python"]) for _name, rel in frameworks):
        return distro_python
    if frameworks:
        lo = max((rel["python"]["min"] for _name, rel in frameworks), key=parse_version)
        hi = min((rel["python"]["max"] for _name, rel in frameworks), key=parse_version)
        if compare_versions(lo, hi) <= 0:
            version = major_minor(hi)
            # a framework whose wheels stop below the OS's only Python (TensorFlow 2.21 on Ubuntu 26.04: 3.13 at most,
            # the archive 3.14 only): refused like python: '3.13' is, not a plan the environment role cannot build
            asked = "%s needs Python %s to %s, so Python %s" % (
                " and ".join("%s %s" % (n, r["version"]) for n, r in frameworks), lo, hi, version)
            advice = ("request %s releases with wheels for Python {pythons} (data/compat.yml), or leave them out"
                      % " and ".join(n for n, _r in frameworks))
            if not _archive_has_python(plan, report, version, asked, advice):
                return None
            report.note("Python %s chosen for %s; %s (the OS default) is outside their range, so the environment role must "
                        "provide Python %s." % (version, " and ".join("%s %s" % (n, r["version"]) for n, r in frameworks),
                                                distro_python or "the OS python", version))
            return version
        report.add(["No Python version fits %s: their ranges do not overlap; pick releases with a common Python."
                    % " and ".join("%s %s (%s to %s)" % (n, r["version"], r["python"]["min"], r["python"]["max"]) for n, r in frameworks)])
        return None
    return distro_python or plan.index.default_python


def requested_release(plan, report, label, releases, requested):
    """The release a request names, checked against the planned Python; None (with an error) if unknown."""
    rel = find_release(releases, requested)
    if rel is None:
        report.add(["%s '%s' is not a release in data/compat.yml; known: %s."
                    % (label, requested, ", ".join(r["version"] for r in releases))])
        return None
    report.add(rule_python(plan, label, rel, plan.python))
    return rel


def pick_pytorch(plan, report):
    requested = plan.request.get("pytorch")
    req_variant = plan.request.get("pytorch_variant")
    req_variant = str(req_variant).lower() if req_variant not in (None, "", "auto") else None
    if requested is not None and str(requested).lower() in NONE_WORDS:
        return None
    cpu_only = not plan.gpus
    if req_variant and req_variant.startswith("cu") and cpu_only:
        report.add(["pytorch_variant: %s was requested but no NVIDIA GPU was found; use pytorch_variant: cpu, or plan with "
                    "hardware: {gpus: [...]}." % req_variant])
        return None
    if requested not in (None, "", "auto") and str(requested).lower() not in LATEST_WORDS:
        rel = requested_release(plan, report, "PyTorch", plan.index.pytorch, requested)
        if rel is None:
            return None
        return pytorch_variant_for(plan, report, rel, req_variant, cpu_only, str(requested))
    # choose the newest release that fits Python, GPUs and driver
    first = None
    for rel in plan.index.pytorch:
        if plan.python and not in_range(plan.python, rel["python"]):
            continue
        if cpu_only:
            return _pytorch_out(plan, rel, None, CPU_VARIANT)
        variants = variant_order(rel)
        if req_variant == PYPI_VARIANT:
            variants = [v for v in variants if v["name"] == rel.get("pypi_default")]
        elif req_variant:
            variants = [v for v in variants if v["name"] == req_variant] if req_variant != CPU_VARIANT else []
            if req_variant == CPU_VARIANT:
                return _pytorch_out(plan, rel, None, CPU_VARIANT)
        for variant in variants:
            if first is None:
                first = (rel, variant)
            if variant_fits(plan, rel, variant):
                return pytorch_finish(plan, report, rel, variant, req_variant == PYPI_VARIANT, None)
    if req_variant and first is not None:
        report.add(rule_pytorch_variant(plan, first[0], first[1], True))
        return None
    if req_variant and req_variant not in (CPU_VARIANT, PYPI_VARIANT):
        report.add(["No PyTorch release in data/compat.yml has a %s build that fits %s and Python %s; %s."
                    % (req_variant, ", ".join(gpu_label(g) for g in plan.kinds) or "this host", plan.python,
                       "use pytorch_variant: cpu or another CUDA variant")])
        return None
    report.warn("No PyTorch CUDA build in data/compat.yml fits %s with %s and Python %s; the plan has no PyTorch "
                "(request pytorch_variant: cpu for a CPU build)." % (", ".join(gpu_label(g) for g in plan.kinds), driver_description(plan), plan.python))
    return None


def pytorch_variant_for(plan, report, rel, req_variant, cpu_only, requested):
    if req_variant == CPU_VARIANT or cpu_only:
        return _pytorch_out(plan, rel, None, CPU_VARIANT, requested)
    if req_variant == PYPI_VARIANT:
        variant = next((v for v in rel["variants"] if v["name"] == rel.get("pypi_default")), None)
        if variant is None:
            report.add(["PyTorch %s's PyPI default build (%s) is not described in data/compat.yml." % (rel["version"], rel.get("pypi_default"))])
            return None
        report.add(rule_pytorch_variant(plan, rel, variant, True))
        return pytorch_finish(plan, report, rel, variant, True, requested)
    if req_variant:
        variant = next((v for v in rel["variants"] if v["name"] == req_variant), None)
        if variant is None:
            names = ", ".join([v["name"] for v in variant_order(rel)] + [CPU_VARIANT])
            report.add(["PyTorch %s has no %s build (builds: %s); use one of those or another release."
                        % (rel["version"], req_variant, names)])
            return None
        report.add(rule_pytorch_variant(plan, rel, variant, True))
        return pytorch_finish(plan, report, rel, variant, False, requested)
    for variant in variant_order(rel):
        if variant_fits(plan, rel, variant):
            return pytorch_finish(plan, report, rel, variant, False, requested)
    # nothing fits: report against the newest stable build
    variant = variant_order(rel)[0]
    report.add(rule_pytorch_variant(plan, rel, variant, False) or rule_pytorch_variant(plan, rel, variant, True))
    return None


def pytorch_finish(plan, report, rel, variant, pypi, requested):
    if variant.get("experimental"):
        report.warn("PyTorch %s %s is an experimental build." % (rel["version"], variant["name"]))
    if unconfirmed(rel):
        report.warn("PyTorch %s: some facts are unconfirmed (%s)." % (rel["version"], rel.get("source")))
    if rel.get("notes"):
        report.note("PyTorch %s: %s" % (rel["version"], rel["notes"]))
    return _pytorch_out(plan, rel, variant, PYPI_VARIANT if pypi else variant["name"], requested)


def _pytorch_out(plan, rel, variant, name, requested=None):
    patches = rel.get("patches") or [rel["version"]]
    version = patches[-1]
    if requested and len(parse_version(requested)) >= 3:
        version = next((x for x in patches if version_matches(requested, x)), str(requested))
    out = {
        "version": version,
        "variant": name,
        "index_url": None if name == PYPI_VARIANT else "%s/%s" % (plan.index.pt_base, name),
        "cuda": variant["cuda"] if variant else None,
        "cudnn": variant.get("cudnn") if variant else None,
        "torchvision": rel.get("torchvision"),
        "torchaudio": rel.get("torchaudio"),
    }
    return out


def pick_tensorflow(plan, report):
    requested = plan.request.get("tensorflow")
    if requested in (None, "", "auto", False) or str(requested).lower() in NONE_WORDS:
        return None
    if str(requested).lower() in LATEST_WORDS or requested is True:
        for rel in plan.index.tensorflow:
            if plan.python and not in_range(plan.python, rel["python"]):
                continue
            if plan.asked("cuda") and major_of(plan.request["cuda"]) != major_of(rel["cuda"]):
                continue
            if plan.gpus and not driver_runs_cuda(plan, rel["cuda"]):
                continue
            return rel
        majors = sorted(set(major_of(r["cuda"]) for r in plan.index.tensorflow))
        newest = plan.index.tensorflow[0] if plan.index.tensorflow else None
        if plan.python and newest and not any(in_range(plan.python, r["python"]) for r in plan.index.tensorflow):
            # Python is the reason (Ubuntu 26.04's only python3 is 3.14): say which Python would do and how to get it
            report.add(["No TensorFlow release in data/compat.yml has wheels for Python %s (the newest, %s, supports Python "
                        "%s to %s)%s: install a Python in that range (e.g. `uv python install %s`), name it in "
                        "python_env_interpreters and set the environment's python: \"%s\" (python_env_environments)." % (
                            plan.python, newest["version"], newest["python"]["min"], newest["python"]["max"],
                            "; Python %s is %s's python3" % (plan.python, plan.os_key) if plan.python == os_python(plan) else "",
                            newest["python"]["max"], newest["python"]["max"])])
            return None
        report.add(["No TensorFlow release in data/compat.yml fits Python %s%s; TensorFlow is built for CUDA %s only."
                    % (plan.python, " and CUDA %s" % plan.request["cuda"] if plan.asked("cuda") else "",
                       "/".join("%s.x" % m for m in majors))])
        return None
    return requested_release(plan, report, "TensorFlow", plan.index.tensorflow, requested)


def pick_nccl(plan, report, cuda_rel):
    if cuda_rel is None or (len(plan.gpus) < 2 and not plan.nvswitch):
        return None
    major = str(major_of(cuda_rel["version"]))
    for entry in plan.index.nccl:
        if major in [str(m) for m in entry.get("cuda_majors") or []]:
            if unconfirmed(entry):
                report.warn("NCCL %s for CUDA %s.x: the CUDA %s build is unconfirmed in the data (%s)."
                            % (entry["version"], major, major, entry.get("source")))
            return {"version": entry["version"], "cuda_major": int(major)}
    report.warn("No NCCL in data/compat.yml names a CUDA %s.x build; multi-GPU jobs use the NCCL bundled with the framework." % major)
    return None


def pick_fabric_manager(plan, report):
    if not plan.nvswitch or plan.driver is None:
        return None
    branch = plan.driver["branch"]
    method = driver_method(plan)
    if method != "nvidia_repo" and nvlink5_system(plan) == "hgx":
        report.add(["driver_method: %s cannot drive %s: data/compat.yml knows NVLSM, libnvsdm and NSCQ at the driver's "
                    "version only from NVIDIA's repository (fabric_manager.nvlink5); request driver_method: nvidia_repo or "
                    "leave driver_method unset." % (method, nvlink5_label(plan, "hgx"))])
        return None
    if method == "distro" and not archive_ships_fabric_manager(plan):
        report.add(["driver_method: distro cannot drive this NVSwitch host: %s's own archive ships no NVIDIA Fabric Manager "
                    "(data/compat.yml driver_package_names.distro.%s.fabric_manager: false), without which an NVSwitch "
                    "system runs no CUDA work (cudaErrorSystemNotReady); request driver_method: nvidia_repo, whose "
                    "repository ships Fabric Manager at the driver's version, or leave driver_method unset."
                    % (plan.os_key, (plan.os_key or "").split("-", 1)[0])])
        return None
    rule = None
    for entry in plan.index.fabric.get("packages") or []:
        hi = entry.get("branch_max")
        if (branch >= int(entry["branch_min"]) and (hi is None or branch <= int(hi))
                and entry.get("method") in (None, method)):
            rule = entry
    if rule is None:
        report.add(["No Fabric Manager package is known for driver branch R%s; NVSwitch systems need one." % branch])
        return None
    package = str(rule["package"]).replace("{branch}", str(branch))
    packages = [package]
    if rule.get("meta"):
        packages.append(str(rule["meta"]).replace("{branch}", str(branch)))
    nvl5 = plan.index.fabric.get("nvlink5") or {}
    nvlink5 = None
    if nvlink5_system(plan) == "hgx":
        nvlink5 = _nvlink5_packages(plan, report, branch)
        if nvlink5 is None:
            return None
        packages += [n for n in nvlink5["same_version"] + nvlink5["own_version"] if n not in packages]
    elif nvl5 and any(compare_versions(g.get("cc"), nvl5["cc_min"]) >= 0 and g.get("form") == "sxm" for g in plan.kinds):
        packages += list(nvl5.get("extra_packages") or [])
        arch_name = (plan.index.archs.get(plan.index.arch_for_cc(nvl5["cc_min"])) or {}).get("name")
        report.note("NVLink5 (%s) systems also need %s besides Fabric Manager." % (arch_name, ", ".join(nvl5.get("extra_packages") or [])))
    nscq = pick_nscq(plan, branch, method) if nvlink5 is None else None
    if nscq is not None:
        packages.append(nscq)
        report.note("NVSwitch host: %s (NSCQ, the NVSwitch Configuration and Query library DCGM and nvidia-smi read the "
                    "NVSwitches through) comes with Fabric Manager at exactly the driver's version; dlbox.stack.nvidia_driver "
                    "installs it in the driver's apt transaction and holds it with the driver, or says it leaves it out where "
                    "apt has it not at that version (data/compat.yml fabric_manager.nscq)." % nscq)
    exact = plan.driver["version"] if plan.driver.get("installed") else None
    version = exact or "%s.*" % branch
    pinned = [package] + (nvlink5["same_version"] if nvlink5 else [])
    report.warn("Fabric Manager and the driver must have exactly the same version: pin %s to %s and upgrade both "
                "together, or nvidia-fabricmanager.service will not start." % (
                    " and ".join(pinned), exact or "the R%s driver version that gets installed" % branch))
    need = fabric_manager_profile(plan, method)
    out = {"package": package, "version": version, "branch": branch, "packages": packages, "method": method,
           "service": plan.index.fabric["service"], "driver_profile": need[0] if need else None}
    if nvlink5 is not None:
        out["nvlink5"] = nvlink5
    if nscq is not None:
        out["nscq"] = {"package": nscq}
    return out


def pick_nscq(plan, branch, method):
    """NSCQ's package for an NVSwitch host's driver branch and install method (data fabric_manager.nscq: the last row
    that fits; a row without ``method`` fits both), or None when the data names none. NVLink5 HGX boards get it from
    ``fabric_manager.nvlink5.hgx.packages`` instead."""
    found = None
    for row in plan.index.fabric.get("nscq") or []:
        hi = row.get("branch_max")
        if branch >= int(row["branch_min"]) and (hi is None or branch <= int(hi)) and row.get("method") in (None, method):
            found = row
    return str(found["package"]).replace("{branch}", str(branch)) if found else None


def _nvlink5_driver_floor(plan, report, kind):
    """HGX B200/B300 and GB200/GB300 NVL need driver ``fabric_manager.nvlink5.driver_min`` (570.133.20: NVIDIA/
    cloud-native-docs#184) or later: an installed older driver is refused; a branch that has older versions (R570) is
    installed at its newest from NVIDIA's repository, which the plan says."""
    floor = (plan.index.fabric.get("nvlink5") or {}).get("driver_min")
    if not floor or plan.driver is None:
        return
    branch = plan.driver.get("branch")
    version = plan.driver.get("version") if plan.driver.get("installed") else None
    if version and "*" not in str(version) and compare_versions(str(version), str(floor)) < 0:
        report.add(["%s needs NVIDIA driver %s or later (NVIDIA/cloud-native-docs#184); the installed %s is older. Request "
                    "its branch's newest driver or a newer driver_branch (nvidia_driver_branch)."
                    % (nvlink5_label(plan, kind), floor, version)])
    elif branch is not None and str(branch) == str(floor).split(".", 1)[0]:
        report.note("%s needs NVIDIA driver %s or later (NVIDIA/cloud-native-docs#184): R%s is installed at its newest "
                    "version in NVIDIA's repository, never older." % (nvlink5_label(plan, kind), floor, branch))


def _nvlsm_series(plan, branch):
    """The NVLSM release series (``YYYY.MM`` of its date-based versions) NVIDIA pairs with a driver branch (data
    ``fabric_manager.nvlink5.hgx.nvlsm``), or None when the data pairs none."""
    rows = (((plan.index.fabric.get("nvlink5") or {}).get("hgx") or {}).get("nvlsm")) or []
    for row in rows:
        if branch >= int(row["branch_min"]) and (row.get("branch_max") is None or branch <= int(row["branch_max"])):
            return [str(v) for v in row.get("series") or []] or None
    return None


def _nvlink5_packages(plan, report, branch):
    """HGX B200/B300: what the NVLink5 fabric needs besides Fabric Manager, from the data's row for the branch:
    ``{same_version: [...], own_version: [...], kernel_modules: [...], left_out: [...]}``; None (with an error) when
    the data has no row for the branch."""
    nvl5 = plan.index.fabric.get("nvlink5") or {}
    _nvlink5_driver_floor(plan, report, "hgx")
    row = _nvlink5_rows(plan, "hgx", branch)
    if row is None:
        report.add(["%s: data/compat.yml names no NVLSM/libnvsdm/NSCQ packages for driver branch R%s "
                    "(fabric_manager.nvlink5.hgx.packages); request a newer driver_branch." % (nvlink5_label(plan, "hgx"), branch)])
        return None

    def fill(names):
        return [str(n).replace("{branch}", str(branch)) for n in names or []]

    arm = plan.arch != DEFAULT_MACHINE
    left_out = fill(row.get("x86_64_only")) if arm else []
    same = [n for n in fill(row.get("same_version")) if n not in left_out]
    own = [n for n in fill(row.get("own_version")) if n not in left_out]
    report.note("%s: its NVSwitches are no PCI devices (no class 0680; they sit behind ConnectX-7 management ports), so the "
                "fabric is planned from %s: Fabric Manager with %s at the driver's exact version and %s at the "
                "version NVIDIA pairs with it; NVLSM needs the kernel modules %s loaded.%s" % (
                    nvlink5_label(plan, "hgx"), _fabric_source_words(plan), ", ".join(same), ", ".join(own),
                    ", ".join((nvl5.get("hgx") or {}).get("kernel_modules") or []),
                    " %s has no %s build: left out." % (plan.arch, ", ".join(left_out)) if left_out else ""))
    if not nvl5.get("installed_by_roles", True):
        report.warn("The nvidia_driver role installs the driver and Fabric Manager only: %s are planned but not installed by "
                    "dlbox.stack yet (data/compat.yml fabric_manager.nvlink5.installed_by_roles: false); install them at "
                    "the versions above before starting nvidia-fabricmanager, or the fabric stays In Progress."
                    % ", ".join(same + own))
    else:
        report.note("dlbox.stack.nvidia_driver installs %s in the driver's apt transaction (refused before any change when one "
                    "is missing at the driver's version), holds them with the driver, loads %s at boot and checks them "
                    "before nvidia-fabricmanager starts (its start script starts NVLSM first)."
                    % (", ".join(same + own), ", ".join((nvl5.get("hgx") or {}).get("kernel_modules") or [])))
    out = {"same_version": same, "own_version": own, "left_out": left_out,
           "kernel_modules": list((nvl5.get("hgx") or {}).get("kernel_modules") or [])}
    series = _nvlsm_series(plan, branch) if "nvlsm" in own else None
    if series:
        out["own_version_series"] = {"nvlsm": series}
    elif "nvlsm" in own:
        report.warn("%s: data/compat.yml pairs no NVLSM release with driver branch R%s (fabric_manager.nvlink5.hgx.nvlsm): "
                    "the role installs the repositories' newest nvlsm unchecked; confirm in NVIDIA's Fabric Manager release "
                    "notes for R%s that this NVLSM is the one for the driver." % (nvlink5_label(plan, "hgx"), branch, branch))
    # infiniband-diags (ibstat, run by Fabric Manager's start script): the distribution's, unversioned, not held
    if (nvl5.get("hgx") or {}).get("distro_packages"):
        out["distro_packages"] = list(nvl5["hgx"]["distro_packages"])
    return out


def pick_imex(plan, report):
    """GB200/GB300 NVL compute trays: the IMEX service at the driver's version (data fabric_manager.nvlink5.nvl), or None.

    ``{package, version, packages, service, nodes_config, method}``. Fabric Manager and NVLSM run on the NVLink switch
    trays there, not on this host; IMEX channels are made by the administrator and do not survive a reboot (NVIDIA IMEX
    guide, "IMEX Channels").
    """
    if plan.driver is None or nvlink5_system(plan) != "nvl":
        return None
    nvl = (plan.index.fabric.get("nvlink5") or {}).get("nvl") or {}
    branch = plan.driver["branch"]
    method = driver_method(plan)
    label = nvlink5_label(plan, "nvl")
    if method != "nvidia_repo":
        report.add(["driver_method: %s cannot drive %s: data/compat.yml knows IMEX (nvidia-imex) only from NVIDIA's "
                    "repository (fabric_manager.nvlink5); request driver_method: nvidia_repo or leave driver_method unset."
                    % (method, label)])
        return None
    _nvlink5_driver_floor(plan, report, "nvl")
    row = _nvlink5_rows(plan, "nvl", branch)
    if row is None:
        report.add(["%s: data/compat.yml names no IMEX package for driver branch R%s (fabric_manager.nvlink5.nvl.packages); "
                    "request a newer driver_branch." % (label, branch)])
        return None
    packages = [str(n).replace("{branch}", str(branch)) for n in row.get("same_version") or []]
    exact = plan.driver["version"] if plan.driver.get("installed") else None
    report.note("%s: Fabric Manager and NVLSM run on the NVLink switch trays, not on this host; this host runs IMEX (%s) at "
                "the driver's exact version. The NVL domain also needs the switch trays' fabric up, %s naming every compute "
                "tray of the domain, and the IMEX channels (/dev/nvidia-caps-imex-channels), which the administrator "
                "creates and which do not survive a reboot; without them CUDA's multi-node NVLink calls fail with an "
                "insufficient-permission error." % (label, ", ".join(packages), nvl.get("nodes_config")))
    if not (plan.index.fabric.get("nvlink5") or {}).get("installed_by_roles", True):
        report.warn("The nvidia_driver role does not install IMEX yet: %s is planned but not installed by dlbox.stack "
                    "(data/compat.yml fabric_manager.nvlink5.installed_by_roles: false)." % ", ".join(packages))
    else:
        report.note("dlbox.stack.nvidia_driver installs %s with the driver at its version, writes %s from "
                    "nvidia_driver_imex_nodes, creates IMEX channel 0 at module load (nvidia_driver_imex_channel: channel0; "
                    "none leaves channels to the scheduler) and starts %s once the module is loaded."
                    % (", ".join(packages), nvl.get("nodes_config"), nvl.get("service")))
    return {"package": packages[0], "version": exact or "%s.*" % branch, "packages": packages, "service": nvl.get("service"),
            "nodes_config": nvl.get("nodes_config"), "method": method}


def pick_container_toolkit(plan, report):
    """The container toolkit the docker/nvidia_container_toolkit roles install, from data ``container_toolkit``.

    ``{default_version: "1.18.2", min_version: "1.18.1", packages: [...], docker_cdi_min: "25.0"}`` ->
    ``{"version": "1.18.2", "min_version": "1.18.1", "packages": [...], "docker_cdi_min": "25.0"}``;
    None when the data has no such section.
    """
    entry = plan.index.data.get("container_toolkit") or {}
    if not entry.get("default_version"):
        return None
    if entry.get("min_version") and compare_versions(entry["default_version"], entry["min_version"]) < 0:
        report.add(["data/compat.yml: container_toolkit default_version %s is older than its min_version %s; fix the data."
                    % (entry["default_version"], entry["min_version"])])
    if unconfirmed(entry):
        report.warn("NVIDIA Container Toolkit %s: the data for it is unconfirmed (%s)." % (entry["default_version"], entry.get("source")))
    return {"version": str(entry["default_version"]), "min_version": str(entry.get("min_version") or entry["default_version"]),
            "packages": list(entry.get("packages") or []), "docker_cdi_min": entry.get("docker_cdi_min")}


def _fabric_source_words(plan):
    """'the GPU model' / 'what the host shows (...)' for the plan's notes."""
    decision = fabric_decision(plan)
    if decision["source"] in ("detected", "detected+model"):
        return "what the host shows (%s)%s" % ("; ".join(decision["evidence"]),
                                               " and the GPU model" if decision["source"] == "detected+model" else "")
    if decision["source"] == "asked":
        return "dlbox_plan_hardware.fabric"
    return "the GPU model"


def _fabric_summary(plan):
    """The plan's ``host.fabric``: which NVLink fabric, from what (``source``), the evidence and any conflict."""
    decision = fabric_decision(plan)
    return {"kind": decision["kind"], "source": decision["source"], "evidence": list(decision["evidence"]),
            "conflicts": list(decision["conflicts"])}


def _host_summary(plan, stack):
    """The host part of the plan; a Jetson module runs the Ubuntu of its JetPack."""
    groups = []
    for gpu in plan.gpus:
        for group in groups:
            if group["name"] == gpu.get("catalog_name") and group["pci_device_id"] == gpu.get("pci_device_id"):
                group["count"] += 1
                break
        else:
            groups.append({"name": gpu.get("catalog_name"), "pci_device_id": gpu.get("pci_device_id"),
                           "architecture": gpu.get("arch_name"), "cc": gpu.get("cc"), "known": gpu.get("known"), "count": 1})
    return {
        "gpus": groups,
        "gpu_count": len(plan.gpus),
        "architectures": sorted(set(g.get("arch_name") for g in plan.gpus if g.get("arch_name"))),
        "compute_capabilities": sorted(set(g.get("cc") for g in plan.gpus if g.get("cc")), key=parse_version),
        "arch": plan.arch,
        "os": "ubuntu-%s" % stack["jetpack"]["ubuntu"] if stack.get("jetpack") else plan.os_key,
        "driver_installed": plan.installed,
        "nvswitch": plan.nvswitch,
        **({"fabric": _fabric_summary(plan)} if plan.kinds and fabric_decision(plan)["source"] != "none" else {}),
        "jetson": plan.jetson or None,
        "planning": bool(plan.host.get("planning")),
    }


def resolve_cpu(plan, report):
    """The stack of a host without an NVIDIA GPU: Python and CPU frameworks only."""
    report.note("No NVIDIA GPU was found on this host: the plan is a CPU-only stack (no driver, CUDA or cuDNN; PyTorch "
                "cpu wheels).")
    for key, what in (("driver_branch", "a driver branch"), ("kernel_modules", "kernel modules"), ("cuda", "CUDA"),
                      ("cudnn", "cuDNN"), ("jetpack", "JetPack")):
        if plan.asked(key):
            report.add(["%s was requested (%s: %s) but no NVIDIA GPU was found on this host; drop %s, or plan with hardware: "
                        "{gpus: [...]}." % (what[0].upper() + what[1:], key, plan.request[key], key)])
    plan.decided(python=pick_python(plan, report))
    tf = pick_tensorflow(plan, report)
    return {"python": {"version": plan.python} if plan.python else None, "pytorch": pick_pytorch(plan, report),
            "tensorflow": _tf_out(tf) if tf else None}


def _jetson_family(plan):
    model = (plan.jetson or {}).get("model") or ""
    if plan.gpu_index is not None:
        found = plan.gpu_index.candidates(model) if model else []
    else:  # no catalog index: a hand-kept Jetson entry whose name's words all appear in the model
        words = set(re.findall(r"[a-z0-9]+", model.lower()))
        found = [e for e in plan.index.data.get("gpus") or []
                 if model and set(re.findall(r"[a-z0-9]+", str(e.get("name")).lower())) <= words]
    found = [e for e in found if e.get("jetson")]
    if len(found) == 1:
        return found[0]
    families = set(e.get("jetson_family") for e in found)
    if len(families) == 1 and found:
        return found[0]
    return None


def resolve_jetson(plan, report):
    """The stack of a Jetson module: the JetPack it runs or should run, and its PyTorch route."""
    stack = {}
    entry = _jetson_family(plan)
    model = (plan.jetson or {}).get("model")
    for key in ("driver_branch", "kernel_modules"):
        if plan.asked(key):
            report.add(["%s: %s was requested, but Jetson modules get their GPU driver from the L4T BSP (JetPack); drop %s."
                        % (key, plan.request[key], key)])
    if entry is None:
        report.add(["Jetson model '%s' is not in the GPU catalog of data/compat.yml; add it or plan with hardware: {gpus: "
                    "['Jetson AGX Orin']}." % model])
        return stack
    family = entry.get("jetson_family")
    l4t = (plan.jetson or {}).get("l4t")
    installed_jp = None
    if l4t:
        installed_jp = next((j for j in plan.index.jetpack if any(version_matches(x, l4t) or x == str(l4t) for x in j["l4t"])), None)
        if installed_jp is None:
            report.warn("L4T %s is not in data/compat.yml's JetPack table; the JetPack stack cannot be checked." % l4t)
    jp = None
    if plan.asked("jetpack"):
        wanted = str(plan.request["jetpack"])
        jp = next((j for j in plan.index.jetpack if j["version"] == wanted), None) or next(
            (j for j in plan.index.jetpack if version_matches(wanted, j["version"])), None)
        if jp is None:
            report.add(["JetPack '%s' is not in data/compat.yml; known: %s." % (plan.request["jetpack"], ", ".join(j["version"] for j in plan.index.jetpack))])
            return stack
        if family not in jp["devices"]:
            options = [j["version"] for j in plan.index.jetpack if family in j["devices"]]
            report.add(["JetPack %s does not support %s (it supports %s); use jetpack: '%s'."
                        % (jp["version"], entry["name"], ", ".join(jp["devices"]), options[0] if options else "?")])
        if installed_jp is not None and installed_jp is not jp:
            if major_of(installed_jp["version"]) != major_of(jp["version"]):
                report.add(["JetPack %s was requested but this module runs L4T %s (JetPack %s); moving between JetPack %s and %s "
                            "needs a reflash, which this collection does not do; drop jetpack or reflash first."
                            % (jp["version"], l4t, installed_jp["version"], major_of(installed_jp["version"]), major_of(jp["version"]))])
            else:
                report.warn("JetPack %s was requested; this module runs JetPack %s (L4T %s): upgrade through NVIDIA's Jetson apt "
                            "repository." % (jp["version"], installed_jp["version"], l4t))
    elif installed_jp is not None:
        jp = installed_jp
        report.note("JetPack %s detected (L4T %s): Jetson stacks follow the flashed JetPack." % (jp["version"], l4t))
    else:
        candidates = [j for j in plan.index.jetpack if family in j["devices"] and j.get("cuda")]
        with_pytorch = [j for j in candidates if (j.get("pytorch") or {}).get("route") and family in (j["pytorch"].get("families") or [])]
        jp = (with_pytorch or candidates or [None])[0]
        if jp is None:
            report.add(["No JetPack in data/compat.yml supports %s." % entry["name"]])
            return stack
        report.note("JetPack %s chosen for %s: the newest JetPack with a known PyTorch route for it%s."
                    % (jp["version"], entry["name"], "" if l4t else " (the module must be flashed with it)"))
    if jp.get("notes"):
        report.warn("JetPack %s: %s" % (jp["version"], jp["notes"]))
    report.note("Jetson modules need no discrete GPU driver: the driver is part of L4T (JetPack).")
    stack["jetpack"] = {"version": jp["version"], "l4t": l4t or jp["l4t"][-1], "ubuntu": jp["ubuntu"], "cuda": jp.get("cuda"),
                        "cudnn": jp.get("cudnn"), "tensorrt": jp.get("tensorrt"), "device": entry["name"], "family": family}
    if plan.asked("cuda") and jp.get("cuda") and major_of(plan.request["cuda"]) != major_of(jp["cuda"]):
        report.add(["CUDA %s was requested, but JetPack %s is built on CUDA %s; use cuda: '%s' or another JetPack."
                    % (plan.request["cuda"], jp["version"], jp["cuda"], jp["cuda"])])
    cuda = major_minor(plan.request["cuda"]) if plan.asked("cuda") else jp.get("cuda")
    stack["cuda"] = {"version": cuda} if cuda else None
    stack["cudnn"] = {"version": str(plan.request["cudnn"]) if plan.asked("cudnn") else jp.get("cudnn")} if (jp.get("cudnn") or plan.asked("cudnn")) else None
    jetpack_os = "ubuntu-%s" % jp["ubuntu"]
    plan = plan.derived(os_key=jetpack_os, os_entry=plan.index.distros.get(jetpack_os))
    if plan.asked("tensorflow") and str(plan.request["tensorflow"]).lower() not in NONE_WORDS:
        report.add(["TensorFlow for Jetson is not covered by data/compat.yml (no facts); drop tensorflow on Jetson."])
    route_key = (jp.get("pytorch") or {}).get("route") if family in ((jp.get("pytorch") or {}).get("families") or []) else None
    route = plan.index.jetson_pytorch.get(route_key) if route_key else None
    plan.decided(python=major_minor(plan.request["python"]) if plan.asked("python") else ((route or {}).get("python") or os_python(plan)))
    stack["python"] = {"version": plan.python} if plan.python else None
    if plan.request.get("pytorch") is not None and str(plan.request["pytorch"]).lower() in NONE_WORDS:
        return stack
    if route is None:
        report.warn("No PyTorch build for %s on JetPack %s is confirmed in data/compat.yml; the plan has no PyTorch."
                    % (entry["name"], jp["version"]))
        return stack
    if route.get("from_pytorch_releases"):
        request = dict(plan.request)
        if not plan.asked("pytorch_variant") and route.get("variant"):
            request["pytorch_variant"] = route["variant"]
        module_gpu = dict(entry, catalog_name=entry["name"], arch_name=plan.index.archs[entry["arch"]]["name"], cc=str(entry["cc"]))
        wheels = plan.derived(arch=JETSON_MACHINE, gpus=[module_gpu], driver=None, request=request)
        stack["pytorch"] = pick_pytorch(wheels, report)
        return stack
    if route.get("warning"):
        report.warn(route["warning"])
    if plan.asked("pytorch") and not version_matches(plan.request["pytorch"], route["version"]):
        report.add(["PyTorch %s was requested, but the known build for %s on JetPack %s is %s; use pytorch: '%s'."
                    % (plan.request["pytorch"], entry["name"], jp["version"], route["version"], major_minor(route["version"]))])
    stack["pytorch"] = {"version": route["version"], "variant": route["variant"], "index_url": route.get("index_url"),
                        "cuda": jp.get("cuda"), "cudnn": jp.get("cudnn"), "torchvision": None, "torchaudio": None}
    if route.get("index_replaces_pypi"):
        stack["pytorch"]["index_replaces_pypi"] = True
    return stack


def _tf_out(rel):
    patches = rel.get("patches") or [rel["version"]]
    return {"version": patches[-1], "cuda": rel["cuda"], "cudnn": rel["cudnn"],
            "extra": "and-cuda" if rel.get("and_cuda") else None, "python": rel["python"],
            "and_cuda_pins": dict(rel["and_cuda"]) if rel.get("and_cuda") else None}


def legacy_notes(plan, report):
    for gpu in plan.kinds:
        if gpu.get("warning"):  # e.g. a device id the catalog lacks, placed by its chip
            report.warn(gpu["warning"])
        elif not gpu.get("known") and gpu.get("arch"):
            report.warn("GPU %s is not in the GPU catalog; it is planned from its compute capability %s (%s). Regenerate "
                        "data/gpu_catalog.yml (make gpu-catalog) or add it to data/compat.yml."
                        % (gpu.get("catalog_name"), gpu.get("cc"), gpu.get("arch_name")))
        arch = plan.index.archs.get(gpu.get("arch")) or {}
        if arch.get("last_driver_branch") and arch["last_driver_branch"] >= (plan.index.oldest_branch or 0):
            last_cuda = (arch.get("last_cuda_by_cc") or {}).get(gpu.get("cc")) or arch.get("last_cuda")
            last_cudnn = plan.index.last_cudnn_for(gpu.get("cc"))
            extra = (" cuDNN %s is its last cuDNN." % major_minor(last_cudnn["version"])
                     if last_cudnn is not None and last_cudnn is not plan.index.cudnn[0] else "")
            report.note("%s is a legacy GPU: R%s is its last driver branch and CUDA %s its last toolkit.%s"
                        % (gpu_label(gpu), arch["last_driver_branch"], last_cuda, extra))


def component_note(plan, report):
    """The archive component of the planned distro branch where the data says it is not restricted (Ubuntu 26.04's R620
    user space: multiverse only; driver_package_names.distro.<family>.branch_components): said in the plan, because
    Canonical supports multiverse less than main/restricted and a fleet's mirror may leave it out (issue 53 red team)."""
    family, _sep, version = (plan.os_key or "").partition("-")
    names = ((plan.index.data.get("driver_package_names") or {}).get("distro") or {}).get(family) or {}
    component = branch_component(names, version, plan.driver["branch"]) if version else None
    if not component:
        return
    # in the resolver's order of preference (non-EOL LTSB first)
    restricted = [int(e["branch"]) for e in branch_order(plan) if not branch_is_eol(plan, e)
                  and int(e["branch"]) < min(int(r["branch_min"]) for r in names.get("branch_components") or [])
                  and driver_branch_fits(plan, int(e["branch"]))
                  and driver_release(plan, int(e["branch"]), "distro", module_flavours(plan)) is not None]
    report.note("%s's R%s user-space packages are in its %s component, not restricted (data/compat.yml driver_package_names"
                ".distro.%s.branch_components): apt needs %s in its sources (Ubuntu's default sources have it; a lab's mirror "
                "must carry it, and the nvidia_driver role refuses naming it otherwise), and Canonical supports %s less "
                "than main/restricted.%s" % (
                    plan.os_key, plan.driver["branch"], component, family, component, component,
                    " Request driver_branch: %s (%s) for a branch from restricted." % (
                        restricted[0], "R%s: %s, supported until %s" % (
                            restricted[0], plan.index.branch[restricted[0]].get("designation") or "designation unknown",
                            plan.index.branch[restricted[0]].get("eol") or "?")) if restricted else ""))


def fabric_report(plan, report):
    """The plan says which fabric evidence it used; conflicting evidence is refused (not guessed), or noted where
    dlbox_plan_hardware.fabric settled it."""
    decision = fabric_decision(plan)
    label = ", ".join(gpu_label(g) for g in plan.kinds) or "this host"
    if decision["conflicts"] and decision["source"] != "asked":
        report.add([nvlink5_detect.refusal(decision, label)])
        return
    if decision["conflicts"]:
        report.note("dlbox_plan_hardware.fabric: %s settles conflicting NVLink fabric evidence (%s)."
                    % (plan.host.get("fabric_asked"), "; ".join(decision["conflicts"])))
    if decision["source"] == "detected" and decision["kind"] in ("hgx", "nvl") and decision["model"] != decision["kind"]:
        report.note("The NVLink fabric is %s by what the host shows (%s); the GPU model alone would not have said so."
                    % (decision["kind"], "; ".join(decision["evidence"])))


def resolve_gpus(plan, report):
    """The stack of a host with discrete NVIDIA GPUs: driver, CUDA, cuDNN, frameworks, NCCL, Fabric Manager."""
    stack = {}
    report.add(rule_gpus_supported(plan))
    legacy_notes(plan, report)
    fabric_report(plan, report)
    if nvlink5_system(plan) == "hgx" and not plan.nvswitch:
        plan.nvswitch = True  # NVLink5 NVSwitches are not PCI devices: the management ports or the GPU model say so
    if fabric_decision(plan)["kind"] == "pcie" and not plan.nvswitch:
        plan.nvswitch = True  # dlbox_plan_hardware.fabric: pcie
    plan.decided(driver=pick_driver(plan, report))
    if plan.driver is not None:
        flavour = pick_modules(plan, report)
        entry = plan.driver.get("entry") or {}
        method = driver_method(plan)
        profile, profile_why = pick_profile(plan, report, method, flavour)
        release = driver_release(plan, plan.driver["branch"], method, (flavour,), prefer=profile) if flavour else None
        repo = None
        if method == "distro":
            packages = _distro_packages(plan, flavour, profile, release)
            component_note(plan, report)
        else:
            packages = _driver_packages(plan, flavour) if entry.get("packages") else None
            repo = _driver_repo_names(plan, flavour)
        stack["driver"] = {
            "branch": plan.driver["branch"],
            "min_version": None,  # filled below, once CUDA is known
            "kernel_modules": flavour,
            "method": method,
            "method_reason": plan.method_choice[1] if plan.method_choice else None,
            "profile": profile,
            "profile_reason": profile_why,
            "version_available": plan.installed if plan.driver.get("installed") else (release or {}).get("version"),
            "packages": packages,
            "archive_package": (release or {}).get("package") if method == "distro" else None,
            "repo": repo,
            "family": list(plan.index.driver_names.get("family") or []),
            "designation": entry.get("designation"),
            "eol": entry.get("eol"),
            "installed": plan.installed,
            "change": bool(plan.driver.get("changed")) or (plan.installed is None),
        }
    plan.decided(python=pick_python(plan, report))
    stack["python"] = {"version": plan.python} if plan.python else None
    tf = pick_tensorflow(plan, report)
    cuda_rel = pick_cuda(plan, report, tf)
    if tf is not None:
        report.add(rule_tensorflow(plan, tf, cuda_rel))
        for gpu in tensorflow_newer_gpus(plan, tf):
            report.warn("TensorFlow %s is tested with CUDA %s, which predates %s; kernels for it are JIT-compiled from PTX "
                        "(slow first start, unconfirmed)." % (tf["version"], tf["cuda"], gpu_label(gpu)))
        stack["tensorflow"] = _tf_out(tf)
    stack["cuda"] = _cuda_out(plan, cuda_rel) if cuda_rel else None
    cudnn = pick_cudnn(plan, report, cuda_rel, tf)
    stack["cudnn"] = {"version": cudnn["version"]} if cudnn else None
    stack["pytorch"] = pick_pytorch(plan, report)
    stack["nccl"] = pick_nccl(plan, report, cuda_rel)
    stack["fabric_manager"] = pick_fabric_manager(plan, report)
    if stack.get("driver") is not None:
        stack["driver"]["imex"] = pick_imex(plan, report)
    stack["container_toolkit"] = pick_container_toolkit(plan, report)
    if stack.get("driver") is not None:
        stack["driver"]["min_version"] = _driver_min_version(plan, cuda_rel)
    report.add(rule_nvlink5(plan))
    return stack


def rule_nvlink5(plan):
    """HGX B200/B300 (NVLink5 SXM modules): refused while the data says dlbox.stack cannot drive them."""
    nvl5 = plan.index.fabric.get("nvlink5") or {}
    if not nvl5 or nvl5.get("supported", True):
        return []
    errors = []
    for gpu in plan.kinds:
        if gpu.get("form") == "sxm" and gpu.get("cc") and compare_versions(gpu["cc"], nvl5["cc_min"]) >= 0:
            errors.append(
                "%s is an SXM module of an NVLink5 system (HGX/DGX B200, B300): its NVSwitches are not PCIe devices, so "
                "they are not detected, and the system needs %s at the driver's version besides Fabric Manager, which "
                "dlbox.stack does not install yet (data/compat.yml fabric_manager.nvlink5.supported: false); nothing will "
                "be changed. Install the driver, Fabric Manager and %s as NVIDIA's Fabric Manager User Guide describes."
                % (gpu_label(gpu), " and ".join(nvl5.get("extra_packages") or []), ", ".join(nvl5.get("extra_packages") or [])))
    return errors


def fabric_manager_profile(plan, method):
    """The driver profile Fabric Manager's package needs on this OS and method (data fabric_manager.driver_profile):
    ``(profile, rule)`` or None."""
    if not plan.nvswitch:
        return None
    family = (plan.os_key or "").split("-", 1)[0]
    for rule in plan.index.fabric.get("driver_profile") or []:
        if rule.get("method") == method and rule.get("os_family") == family:
            return rule["profile"], rule
    return None


def pick_profile(plan, report, method, flavour):
    """The driver profile: ``server`` (compute-only, no X) or ``desktop``, and why (one phrase).

    Requested (``driver_profile``) wins, but not against Fabric Manager's dependency on the -server series; else
    server on NVSwitch hosts and where every GPU has no display output (data ``gpus[].display: false``).
    """
    need = fabric_manager_profile(plan, method)
    requested = plan.request.get("driver_profile")
    if requested not in (None, "", "auto"):
        profile = str(requested).strip().lower()
        if need is not None and need[0] != profile:
            report.add(["driver_profile: %s cannot go with Fabric Manager on this NVSwitch host: %s's Fabric Manager package "
                        "depends on the %s driver series at the driver's exact version (%s; data/compat.yml "
                        "fabric_manager.driver_profile), which the %s packages cannot satisfy; use driver_profile: %s "
                        "(nvidia_driver_profile: %s) or leave it unset." % (
                            profile, plan.os_key, need[0], str(need[1].get("depends") or "").replace(
                                "{branch}", str(plan.driver["branch"])).replace("{version}", "<version>"),
                            profile, need[0], need[0])])
        return profile, "requested (driver_profile: %s)" % profile
    if need is not None:
        return need[0], ("NVSwitch host: %s's Fabric Manager depends on the %s driver series (%s)"
                         % (plan.os_key, need[0], str(need[1].get("depends") or "").replace(
                             "{branch}", str(plan.driver["branch"])).replace("{version}", "<version>")))
    if plan.nvswitch:
        profile, why = "server", "NVSwitch host (a data-center system, no display)"
    elif nvlink5_system(plan) == "nvl":
        profile, why = "server", "NVL compute tray (a data-center system, no display)"
    elif plan.kinds and all(g.get("display") is False for g in plan.kinds):
        profile, why = "server", "%s: no display output (data/compat.yml gpus display: false)" % ", ".join(
            g.get("catalog_name") or "?" for g in plan.kinds)
    else:
        return "desktop", "GPUs with display outputs"
    family = (plan.os_key or "").split("-", 1)[0]
    suffix = (((plan.index.driver_names.get("distro") or {}).get(family)) or {}).get("server_suffix")
    if method == "distro" and suffix and flavour and plan.driver and not plan.driver.get("installed"):
        found = next((b for b in archive_branches(plan) if int(b["branch"]) == plan.driver["branch"]), None)
        if found is not None and not any(n.startswith("server") for n in (found.get("flavours") or {})):
            report.note("The server driver set is planned for these GPUs, but %s's archive has no -server package of R%s; the "
                        "desktop set is planned instead." % (plan.os_key, plan.driver["branch"]))
            return "desktop", "%s's archive has no R%s server set" % (plan.os_key, plan.driver["branch"])
    return profile, why


def _distro_packages(plan, flavour, profile, release):
    """The distribution archive's set the nvidia_driver role installs (data driver_package_names.distro): the DKMS set,
    or Canonical's signed precompiled set when Secure Boot is on (Ubuntu). The archive's package when no names fit."""
    fallback = [release["package"]] if release else None
    family = (plan.os_key or "").split("-", 1)[0]
    names = ((plan.index.driver_names.get("distro") or {}).get(family)) or {}
    if not names or not flavour:
        return fallback
    signing = "precompiled" if family == "ubuntu" and plan.host.get("secure_boot") else "dkms"
    try:
        found = driver_packages(names, plan.driver["branch"], flavour, profile, signing,
                                plan.host.get("kernel_flavour") or "generic")
    except ValueError:
        return fallback
    return found["packages"]


def _driver_min_version(plan, cuda_rel):
    """Lowest driver version of the branch that runs everything planned natively."""
    branch = plan.driver["branch"]
    if plan.driver.get("installed") and plan.driver.get("version"):
        return plan.driver["version"]
    entry = plan.driver.get("entry") or {}
    candidates = [v for v in entry.get("versions") or [] if driver_branch_of(v) == branch]
    best = min(candidates, key=parse_version) if candidates else "%s.0" % branch
    if cuda_rel and cuda_rel.get("toolkit_driver_min") and driver_branch_of(cuda_rel["toolkit_driver_min"]) == branch:
        if compare_versions(cuda_rel["toolkit_driver_min"], best) > 0:
            best = cuda_rel["toolkit_driver_min"]
    return best


def _input_name(host):
    return "dlbox_plan_hardware" if (host or {}).get("planning") else "ansible_facts['dlbox_host']"


def refused_plan(data, errors, host=None):
    """The plan for input refused before any planning: every part of the stack empty, the reasons in errors."""
    host = host or {}
    return {
        "ok": False,
        "errors": list(errors),
        "warnings": [],
        "notes": [],
        "host": {"gpus": [], "gpu_count": 0, "architectures": [], "compute_capabilities": [], "arch": host.get("arch"),
                 "os": (host.get("os") or {}).get("key"), "driver_installed": None, "nvswitch": False, "jetson": None,
                 "planning": bool(host.get("planning"))},
        "stack": dict.fromkeys(STACK_PARTS),
        "data_date": str(data.get("date", "")),
    }


def resolve(index, host, request=None, gpu_index=None, own_pythons=()):
    """Plan a stack for ``host`` (``dlbox_host`` facts shape) and ``request``; see the module docstring.

    ``index``: the ``CompatIndex`` of the data (``compat_data.load_compat_index``; a data mapping is indexed
    on the spot, which costs a little per plan). ``gpu_index``: a ``plugin_utils.gpu_catalog.GpuIndex``;
    without it the host's GPUs must come classified. ``own_pythons``: Python versions the host brings itself
    (python_env's python_env_interpreters): a requested one of them is not refused for the OS archive lacking it.

    Returns ``{ok, errors, warnings, notes, host, stack, data_date}``.
    """
    if not isinstance(index, CompatIndex):
        index = CompatIndex(index)
    problems = check_request(request) + check_host_arch(index.data, (host or {}).get("arch") or DEFAULT_MACHINE, _input_name(host))
    if problems:
        return refused_plan(index.data, problems, host)
    plan = PlanContext(index, host, request, gpu_index)
    plan.own_pythons = tuple(str(v) for v in own_pythons or ())
    report = Report()
    report.add(list(plan.host.get("planning_errors") or []))
    report.add(rule_request_fits_host(plan))
    if plan.os_key and plan.os_entry is None:
        report.add(["OS '%s' is not one dlbox.stack plans for: data/compat.yml knows %s. Give os as "
                    "<distro>-<version>, e.g. ubuntu-22.04 or debian-12." % (plan.os_key, ", ".join(sorted(plan.index.distros)))])
    elif plan.os_entry is not None and not plan.os_entry.get("supported"):
        supported = sorted(key for key, entry in plan.index.distros.items() if entry.get("supported"))
        report.warn("dlbox.stack's roles do not install on %s (data/compat.yml os.distros: supported: false): this plan is for "
                    "reference; the roles support %s." % (plan.os_key, ", ".join(supported)))
    stack = dict.fromkeys(STACK_PARTS)
    if plan.jetson:
        stack.update(resolve_jetson(plan, report))
    elif not plan.gpus:
        if not plan.host.get("planning_errors"):
            stack.update(resolve_cpu(plan, report))
    else:
        stack.update(resolve_gpus(plan, report))
    virt = plan.host.get("virtualization") or {}
    if virt.get("container") and stack.get("driver"):
        report.warn("This host is a container (%s): the NVIDIA driver comes from the machine that runs it and cannot be "
                    "installed here." % (virt.get("container_type") or "unknown type"))
    if plan.host.get("secure_boot") and stack.get("driver"):
        report.note("Secure Boot is on: the DKMS-built NVIDIA modules must be signed with an enrolled key (MOK).")
    return {
        "ok": not report.errors,
        "errors": report.errors,
        "warnings": report.warnings,
        "notes": report.notes,
        "host": _host_summary(plan, stack),
        "stack": stack,
        "data_date": plan.index.date,
    }
