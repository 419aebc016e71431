# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What one resolution reads (controller only): the host's GPUs, the request, the parts decided so far, and
the driver-branch facts rules and pickers share (limits the GPUs set, branch order, what each install method
can really install)."""

from __future__ import annotations

import copy

from ansible_collections.dlbox.stack.plugins.plugin_utils.versions import (
    at_least,
    at_most,
    compare_versions,
    driver_branch_of,
    major_of,
    parse_version,
    year_month,
)

CPU_VARIANT = "cpu"  # the PyTorch build name of CPU wheels
PYPI_VARIANT = "pypi"  # request word: the build PyPI serves by default
DEFAULT_MACHINE = "x86_64"  # hardware.arch when the plan does not name one
JETSON_MACHINE = "aarch64"  # the machine architecture of Jetson modules
# distro_drivers flavour names per kernel-module flavour, in order of preference (a workstation first)
ARCHIVE_FLAVOURS = {"open": ("desktop-open", "server-open", "tesla-open"), "proprietary": ("desktop", "server", "tesla")}
STACK_PARTS = ("driver", "cuda", "cudnn", "nccl", "pytorch", "tensorflow", "python", "fabric_manager", "jetpack", "container_toolkit")


def classified_gpus(index, gpus, gpu_index):
    """The host's GPUs with ``arch``/``cc``: from ``gpu_index.classify`` when given, else as they come
    (already classified), with the architecture of ``compute_capability`` for a GPU that has none."""
    gpus = gpu_index.classify(gpus) if gpu_index is not None else [dict(g or {}) for g in gpus or []]
    for gpu in gpus:
        if "arch" not in gpu:
            cc = gpu.get("cc") or gpu.get("compute_capability") or gpu.get("compute_cap")
            gpu.update(arch=index.arch_for_cc(cc) if cc else None, cc=str(cc) if cc else None, known=False,
                       catalog_name=gpu.get("catalog_name") or gpu.get("name") or "unknown NVIDIA GPU")
        if gpu.get("arch") and not gpu.get("arch_name"):
            gpu["arch_name"] = (index.archs.get(gpu["arch"]) or {}).get("name")
    return gpus


def distinct_gpus(gpus):
    """One GPU per distinct model (an 8-GPU host is checked once per model)."""
    seen, out = set(), []
    for gpu in gpus:
        key = (gpu.get("catalog_name"), gpu.get("cc"), gpu.get("pci_device_id"))
        if key not in seen:
            seen.add(key)
            out.append(gpu)
    return out


class Report(object):
    """The errors, warnings and notes of one plan, each message once, in the order they came."""

    def __init__(self):
        self.errors = []
        self.warnings = []
        self.notes = []

    def add(self, errors):
        for message in errors:
            if message not in self.errors:
                self.errors.append(message)

    def warn(self, message):
        if message not in self.warnings:
            self.warnings.append(message)

    def note(self, message):
        if message not in self.notes:
            self.notes.append(message)


class PlanContext(object):
    """The facts one resolution reads: the data index, the host, the request, and the parts decided so far.

    Rules and pickers only read it. ``resolve`` records a decision (``driver``, ``python``) with ``decided``,
    and a plan for a different target (a Jetson module planned with aarch64 wheels) is ``derived``.
    """

    def __init__(self, index, host, request, gpu_index=None):
        self.index = index
        self.gpu_index = gpu_index
        self.host = host or {}
        self.request = dict(request or {})
        self.arch = str(self.host.get("arch") or DEFAULT_MACHINE)
        os_facts = self.host.get("os") or {}
        self.os_key = os_facts.get("key") or (
            "%s-%s" % (os_facts["id"], os_facts["version_id"]) if os_facts.get("id") and os_facts.get("version_id") else None
        )
        self.os_entry = self.index.distros.get(self.os_key) if self.os_key else None
        driver = self.host.get("driver") or {}
        self.installed = str(driver["version"]) if driver.get("version") else None
        if not self.installed and (self.host.get("modules") or {}).get("nvidia_version"):
            self.installed = str(self.host["modules"]["nvidia_version"])
        self.jetson = self.host.get("jetson")
        self.nvswitch = bool(self.host.get("nvswitches"))
        self.method_choice = None  # (method, why): the method the plan chose when the request names none
        self.driver = None  # {"branch": int, "version": str|None, "installed": bool, "changed": bool, "entry": {...}}
        self.python = None
        self._set_gpus([g for g in classified_gpus(self.index, self.host.get("gpus") or [], gpu_index) if not g.get("jetson")])

    def _set_gpus(self, gpus):
        self.gpus = gpus
        self.kinds = distinct_gpus(gpus)
        self.limits = gpu_limits(self)

    def asked(self, key):
        """Does the request name this part of the stack (not absent, empty or auto)?"""
        return self.request.get(key) not in (None, "", "auto")

    def decided(self, **parts):
        """This context with parts of the plan decided (``driver=...``, ``python=...``)."""
        for key, value in parts.items():
            if key not in ("driver", "python"):
                raise KeyError(key)
            setattr(self, key, value)
        return self

    def derived(self, gpus=None, request=None, **facts):
        """A copy planning another target: other ``gpus``, ``request``, ``arch``, ``os_key``/``os_entry``, ``driver``."""
        other = copy.copy(self)
        for key, value in facts.items():
            if key not in ("arch", "os_key", "os_entry", "driver", "python"):
                raise KeyError(key)
            setattr(other, key, value)
        if request is not None:
            other.request = dict(request)
        if gpus is not None:
            other._set_gpus(gpus)  # pylint: disable=protected-access
        return other


def gpu_label(gpu):
    arch = gpu.get("arch_name") or "unknown architecture"
    return "%s (%s, CC %s)" % (gpu.get("catalog_name"), arch, gpu.get("cc") or "?")


def cc_label(gpu):
    return "compute capability %s (%s)" % (gpu.get("cc") or "?", gpu.get("catalog_name"))


def gpu_limits(plan):
    """What the host's GPUs allow: module flavours, driver branch range, CUDA range."""
    limits = {
        "modules": set(["open", "proprietary"]),
        "modules_why": {},
        "branch_max": None,
        "branch_min": None,
        "cuda_min": None,
        "cuda_max": None,
    }
    for gpu in plan.kinds:
        arch = plan.index.archs.get(gpu.get("arch")) or {}
        if not arch:
            continue
        cc = gpu.get("cc")
        rule = gpu.get("open_modules") or arch.get("open_modules")
        if rule == "unsupported":
            limits["modules"].discard("open")
            limits["modules_why"].setdefault("open", gpu)
        elif rule == "required":
            limits["modules"].discard("proprietary")
            limits["modules_why"].setdefault("proprietary", gpu)
        last_branch = arch.get("last_driver_branch")
        if last_branch and (limits["branch_max"] is None or last_branch < limits["branch_max"][0]):
            limits["branch_max"] = (int(last_branch), gpu)
        first_cuda = (arch.get("first_cuda_by_cc") or {}).get(cc) or arch.get("first_cuda")
        last_cuda = (arch.get("last_cuda_by_cc") or {}).get(cc) or arch.get("last_cuda")
        min_branch = arch.get("min_driver_branch") or 0
        rel = plan.index.cuda_release(first_cuda) if first_cuda else None
        if rel and rel.get("toolkit_driver_min"):
            min_branch = max(min_branch, driver_branch_of(rel["toolkit_driver_min"]))
        if min_branch and (limits["branch_min"] is None or min_branch > limits["branch_min"][0]):
            limits["branch_min"] = (int(min_branch), gpu)
        if first_cuda and (limits["cuda_min"] is None or compare_versions(first_cuda, limits["cuda_min"][0]) > 0):
            limits["cuda_min"] = (str(first_cuda), gpu)
        if last_cuda and (limits["cuda_max"] is None or compare_versions(last_cuda, limits["cuda_max"][0]) < 0):
            limits["cuda_max"] = (str(last_cuda), gpu)
    return limits


def branch_is_eol(plan, entry):
    if entry.get("status") == "eol":
        return True
    eol = year_month(entry.get("eol")) if entry.get("eol") not in (None, "ended") else None
    today = year_month(plan.index.date)
    if entry.get("eol") == "ended":
        return True
    return bool(eol and today and eol < today)


def branch_order(plan):
    """Driver branches in order of preference: non-EOL LTSB, PB, others (newest first), then EOL ones."""

    def rank(entry):
        eol = branch_is_eol(plan, entry)
        kind = {"LTSB": 0, "PB": 1}.get(entry.get("designation"), 2)
        return (1 if eol else 0, kind, -int(entry["branch"]))

    return sorted(plan.index.branches, key=rank)


def requested_driver_floors(plan):
    """(branch, reason) minima that requested CUDA / PyTorch variant / cuDNN impose on the driver."""
    floors = []
    if plan.asked("cuda"):
        rel = plan.index.cuda_release(plan.request["cuda"])
        floor = plan.index.minor_compat.get(major_of(rel["version"])) if rel else None
        if floor:
            floors.append((int(floor["branch_min"]), "CUDA %s" % rel["version"]))
    variant = str(plan.request.get("pytorch_variant") or "")
    if variant in plan.index.variant_cuda:
        floor = plan.index.minor_compat.get(major_of(plan.index.variant_cuda[variant]))
        if floor:
            floors.append((int(floor["branch_min"]), "PyTorch %s" % variant))
    return floors


def driver_method(plan):
    requested = plan.request.get("driver_method")
    if requested not in (None, "", "auto"):
        return str(requested).strip().lower()
    if getattr(plan, "method_choice", None):
        return plan.method_choice[0]
    return plan.index.default_driver_method


def module_flavours(plan):
    """The kernel-module flavours this plan may use: the requested one, else those the GPUs allow."""
    requested = plan.request.get("kernel_modules")
    if requested not in (None, "", "auto"):
        return (str(requested).lower(),)
    return tuple(sorted(plan.limits["modules"])) or ("open", "proprietary")


def archive_branches(plan):
    """The OS archive's driver branches (distro_drivers.distros.<os>.distro.branches), or []."""
    return ((plan.index.distro_drivers.get(plan.os_key) or {}).get("distro") or {}).get("branches") or []


def driver_release(plan, branch, method, flavours, prefer=None):
    """The confirmed release of ``branch`` for an install method, or None when the data confirms none.

    nvidia_repo: the newest Linux version of the branch in driver_branches (NVIDIA's release notes);
    distro: the OS archive's package of one of ``flavours`` that installs this branch itself (not a
    transitional package pulling another branch); ``prefer`` ("server"/"desktop"): that archive flavour first.
    Returns {version, package, flavour}.
    """
    if method == "distro":
        for archive_branch in archive_branches(plan):
            if int(archive_branch["branch"]) != branch:
                continue
            for flavour in flavours:
                for name in sorted(ARCHIVE_FLAVOURS.get(flavour, ()), key=lambda n: not (prefer and n.startswith(prefer))):
                    found = (archive_branch.get("flavours") or {}).get(name)
                    if found and found.get("pulls_branch") is None:
                        return {"version": found["version"], "package": found["package"], "flavour": name}
        return None
    floor = repo_branch_min(plan)
    if floor is not None and branch < floor:
        return None  # NVIDIA's repository for this OS starts at a newer branch (os.distros.<os>.nvidia_repo.branch_min)
    entry = plan.index.branch.get(branch) or {}
    versions = [v for v in entry.get("versions") or [] if driver_branch_of(v) == branch]
    if not versions:
        return None
    return {"version": max(versions, key=parse_version), "package": None, "flavour": None}


def repo_branch_min(plan):
    """The first driver branch NVIDIA's repository has for this OS (data os.distros.<os>.nvidia_repo.branch_min), or None
    where the data records none (the repository then has every branch driver_branches lists)."""
    found = ((getattr(plan, "os_entry", None) or {}).get("nvidia_repo") or {}).get("branch_min")
    return int(found) if found is not None else None


def installable_branches(plan, method):
    """Text naming the branches with a confirmed release for the method (for messages)."""
    if method == "distro":
        found = [int(b["branch"]) for b in archive_branches(plan) if driver_release(plan, int(b["branch"]), method, module_flavours(plan))]
    else:
        found = [int(e["branch"]) for e in plan.index.branches if driver_release(plan, int(e["branch"]), method, ())]
    return ", ".join("R%s" % b for b in found) or "none"


def preferred_branch(plan):
    """The branch the resolver would choose for these GPUs and requests (ignores installed drivers)."""
    floors = requested_driver_floors(plan)
    method, flavours = driver_method(plan), module_flavours(plan)
    for entry in branch_order(plan):
        branch = int(entry["branch"])
        if (driver_branch_fits(plan, branch) and all(branch >= f for f, _name in floors)
                and driver_release(plan, branch, method, flavours) is not None):
            return branch
    return None


def driver_branch_fits(plan, branch):
    limits = plan.limits
    if limits["branch_max"] and branch > limits["branch_max"][0]:
        return False
    if limits["branch_min"] and branch < limits["branch_min"][0]:
        return False
    return True


def newest_cuda_major_for_branch(plan, branch):
    best = None
    for major, floor in plan.index.minor_compat.items():
        if branch >= int(floor["branch_min"]) and (best is None or major > best):
            best = major
    return best


def driver_description(plan):
    drv = plan.driver
    if drv is None:
        return "no driver"
    if drv.get("version") and drv.get("installed"):
        return "the installed driver %s" % drv["version"]
    return "driver branch R%s" % drv["branch"]


def driver_at_least(plan, version):
    """Does the planned driver satisfy ``version``? Unknown exact version -> compare branches."""
    drv = plan.driver
    if drv is None:
        return True
    if drv.get("version"):
        return at_least(drv["version"], version)
    need = driver_branch_of(version)
    return drv["branch"] >= need


def suggest_branch_for(plan, cuda_major):
    floor = plan.index.minor_compat.get(cuda_major)
    if not floor:
        return None
    for entry in branch_order(plan):
        branch = int(entry["branch"])
        if (branch >= int(floor["branch_min"]) and driver_branch_fits(plan, branch)
                and driver_release(plan, branch, driver_method(plan), module_flavours(plan)) is not None):
            return branch
    return None


def fitting_cuda_majors(plan):
    return sorted((m for m, f in plan.index.minor_compat.items() if driver_at_least(plan, f["driver_min"])), reverse=True)


def os_python(plan):
    if plan.os_entry and plan.os_entry.get("python"):
        return str(plan.os_entry["python"])
    return None


def in_range(version, rng):
    return at_least(version, rng["min"]) and at_most(version, rng["max"])


def unconfirmed(entry):
    """True when the entry is graded U (unconfirmed)."""
    return (entry or {}).get("grade") == "U"
