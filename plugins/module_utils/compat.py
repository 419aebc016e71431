# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Version-compatibility resolver for dlbox.stack.

Pure Python, standard library only, Python 3.8 compatible: it may run on target hosts.

The data (``data/compat.yml``, loaded on the controller by ``plugin_utils.compat_data``) says what
exists and what fits; this module applies the rules:

* parts of the stack the request leaves open are CHOSEN (newest that fits; driver branches prefer
  long-term-support branches that are not end-of-life on the data date);
* parts the request names are CHECKED and never silently changed;
* every violated rule becomes one plain-words error naming what was asked, why it fails and what
  would work instead. All violations are collected, not just the first.

GPUs: ``resolve`` takes the host's GPUs classified by ``plugin_utils.gpu_catalog`` (controller only;
pass its ``GpuIndex`` as ``gpu_index`` and ``resolve`` calls its ``classify``); GPUs that carry no
``arch`` are planned from their ``compute_capability``.

Public API: ``resolve`` and the version helpers ``parse_version``, ``compare_versions``,
``version_matches``, ``driver_branch_of``.
"""

from __future__ import annotations

import re

from ansible_collections.dlbox.stack.plugins.module_utils.stack_input import (
    LATEST_WORDS,
    NONE_WORDS,
    check_host_arch,
    check_request,
)

__all__ = [
    "parse_version",
    "compare_versions",
    "version_matches",
    "driver_branch_of",
    "resolve",
]

CPU_VARIANT = "cpu"
PYPI_VARIANT = "pypi"
_NONE_WORDS = NONE_WORDS
_LATEST_WORDS = LATEST_WORDS
DEFAULT_MACHINE = "x86_64"  # hardware.arch when the plan does not name one
DEFAULT_DRIVER_METHOD = "nvidia_repo"  # request driver_method: nvidia_repo (NVIDIA's CUDA repository) or distro
# distro_drivers flavour names per kernel-module flavour, in order of preference (a workstation first)
_ARCHIVE_FLAVOURS = {"open": ("desktop-open", "server-open", "tesla-open"), "proprietary": ("desktop", "server", "tesla")}


# --------------------------------------------------------------------------------------------
# Version helpers
# --------------------------------------------------------------------------------------------

_NUM_RE = re.compile(r"\d+")
_VERSION_RE = re.compile(r"\d+(?:\.\d+)*")
_PARSED = {}


def parse_version(value):
    """Return the leading numeric components of a version as a tuple of ints.

    ``"12.4.1"`` -> ``(12, 4, 1)``; ``"2.5.0a0+872d"`` -> ``(2, 5, 0)``; ``"R580"`` -> ``(580,)``;
    ``12.4`` (a float from YAML) -> ``(12, 4)``. ``None``/empty -> ``()``.
    """
    if value is None:
        return ()
    text = str(value)
    cached = _PARSED.get(text)
    if cached is not None:
        return cached
    clean = text.strip().lower()
    if clean.startswith("r") and clean[1:2].isdigit():
        clean = clean[1:]
    match = _VERSION_RE.match(clean)
    parsed = tuple(int(part) for part in match.group(0).split(".")) if match else ()
    if len(_PARSED) < 4096:
        _PARSED[text] = parsed
    return parsed


def compare_versions(left, right):
    """Compare two versions numerically; missing trailing parts count as 0. Returns -1, 0 or 1."""
    a, b = list(parse_version(left)), list(parse_version(right))
    width = max(len(a), len(b))
    a += [0] * (width - len(a))
    b += [0] * (width - len(b))
    return (a > b) - (a < b)


def _ge(left, right):
    return compare_versions(left, right) >= 0


def _le(left, right):
    return compare_versions(left, right) <= 0


def version_matches(spec, version):
    """True when ``version`` starts with every component of ``spec`` ("12.4" matches "12.4.1")."""
    want, have = parse_version(spec), parse_version(version)
    return bool(want) and have[: len(want)] == want


def driver_branch_of(version):
    """Driver branch (major) of a driver version: ``"550.54.14"`` -> ``550``; None when unknown."""
    parts = parse_version(version)
    return parts[0] if parts else None


def _mm(version):
    """``"12.4.1"`` -> ``"12.4"``."""
    parts = parse_version(version)
    return ".".join(str(p) for p in parts[:2])


def _major(version):
    parts = parse_version(version)
    return parts[0] if parts else None


def _ym(value):
    """Year-month tuple of a date-like value (``"2026-11-29"``, ``"2028-06"``)."""
    nums = [int(n) for n in _NUM_RE.findall(str(value))]
    return tuple(nums[:2]) if len(nums) >= 2 else None


def _unconfirmed(entry):
    """True when the entry is graded U (unconfirmed)."""
    return (entry or {}).get("grade") == "U"


# --------------------------------------------------------------------------------------------
# Data index (built once per data object)
# --------------------------------------------------------------------------------------------


class _Index(object):
    """Sorted and keyed views of the data, so that one plan costs little."""

    def __init__(self, data):
        self.data = data
        self.date = str(data.get("date", ""))
        self.archs = data.get("architectures") or {}
        cuda = data.get("cuda") or {}
        self.minor_compat = {int(e["major"]): e for e in cuda.get("minor_compat") or []}
        self.cuda = sorted(cuda.get("releases") or [], key=lambda e: parse_version(e["version"]), reverse=True)
        self.cuda_never_released = [str(e["version"]) for e in cuda.get("never_released") or []]
        self.cuda_toolkit_package = cuda.get("toolkit_package")
        self.branches = sorted(data.get("driver_branches") or [], key=lambda e: int(e["branch"]), reverse=True)
        self.branch = {int(e["branch"]): e for e in self.branches}
        # the oldest driver branch and CUDA release the data covers: older ones are out of scope
        self.oldest_branch = int(self.branches[-1]["branch"]) if self.branches else None
        self.oldest_cuda = self.cuda[-1]["version"] if self.cuda else None
        self.cudnn = sorted(data.get("cudnn") or [], key=lambda e: parse_version(e["version"]), reverse=True)
        self.nccl = sorted(data.get("nccl") or [], key=lambda e: parse_version(e["version"]), reverse=True)
        pytorch = data.get("pytorch") or {}
        self.pt_base = str(pytorch.get("index_url_base") or "").rstrip("/")
        self.pytorch = sorted(pytorch.get("releases") or [], key=lambda e: parse_version(e["version"]), reverse=True)
        self.variant_cuda = {}  # "cu128" -> "12.8": the CUDA of a PyTorch build name
        for rel in self.pytorch:
            for variant in rel.get("variants") or []:
                self.variant_cuda.setdefault(variant["name"], str(variant["cuda"]))
        self.tensorflow = sorted(data.get("tensorflow") or [], key=lambda e: parse_version(e["version"]), reverse=True)
        self.jetpack = sorted(data.get("jetpack") or [], key=lambda e: parse_version(e["version"]), reverse=True)
        self.jetson_pytorch = data.get("jetson_pytorch") or {}
        osdata = data.get("os") or {}
        self.distros = osdata.get("distros") or {}
        self.default_python = osdata.get("default_python")
        self.machines = data.get("machines") or {}
        self.distro_drivers = (data.get("distro_drivers") or {}).get("distros") or {}
        self.repo_arch = osdata.get("repo_arch") or {}
        self.fabric = data.get("fabric_manager") or {}
        self.driver_packages = data.get("driver_packages") or {}
        self.kernel_modules = data.get("kernel_modules") or {}

    def cuda_release(self, spec):
        """The CUDA release a spec names ("12.4", "12.4.1"), or None."""
        for rel in self.cuda:
            if version_matches(rel["version"], spec) or version_matches(spec, rel["version"]):
                if len(parse_version(spec)) <= 2 or any(
                    version_matches(spec, u["version"]) for u in rel.get("updates") or []
                ):
                    return rel
        return None

    def arch_for_cc(self, cc):
        for key, arch in self.archs.items():
            if _ge(cc, arch["cc_min"]) and _le(cc, arch["cc_max"]):
                return key
        return None

    def first_open_modules_arch(self):
        """The oldest architecture the open kernel modules support (by cc_min), or None."""
        allowed = [a for a in self.archs.values() if a.get("open_modules") in ("allowed", "required")]
        return min(allowed, key=lambda a: parse_version(a["cc_min"])) if allowed else None

    def last_cudnn_for(self, cc):
        """The newest cuDNN whose CC range covers ``cc``, or None."""
        return next((e for e in self.cudnn if _cc_covered(cc, e["cc_min"], e["cc_max"])), None)


_INDEX_CACHE = {}


def _index(data):
    cached = _INDEX_CACHE.get(id(data))
    if cached is not None and cached.data is data:
        return cached
    if len(_INDEX_CACHE) > 16:
        _INDEX_CACHE.clear()
    built = _Index(data)
    _INDEX_CACHE[id(data)] = built
    return built


# --------------------------------------------------------------------------------------------
# Host GPUs (classified by plugin_utils.gpu_catalog on the controller)
# --------------------------------------------------------------------------------------------


def _classified(idx, gpus, gpu_index):
    """The host's GPUs with ``arch``/``cc``: from ``gpu_index.classify`` when given, else as they come
    (already classified), with the architecture of ``compute_capability`` for a GPU that has none."""
    gpus = gpu_index.classify(gpus) if gpu_index is not None else [dict(g or {}) for g in gpus or []]
    for gpu in gpus:
        if "arch" not in gpu:
            cc = gpu.get("cc") or gpu.get("compute_capability") or gpu.get("compute_cap")
            gpu.update(arch=idx.arch_for_cc(cc) if cc else None, cc=str(cc) if cc else None, known=False,
                       catalog_name=gpu.get("catalog_name") or gpu.get("name") or "unknown NVIDIA GPU")
        if gpu.get("arch") and not gpu.get("arch_name"):
            gpu["arch_name"] = (idx.archs.get(gpu["arch"]) or {}).get("name")
    return gpus


# --------------------------------------------------------------------------------------------
# The plan
# --------------------------------------------------------------------------------------------


class _Plan(object):
    """Everything one resolution needs; rule functions read it and return error strings."""

    def __init__(self, data, host, request, gpu_index=None):
        self.idx = _index(data)
        self.gpu_index = gpu_index
        self.host = host or {}
        self.request = dict(request or {})
        self.errors = []
        self.warnings = []
        self.notes = []
        self.stack = {
            "driver": None,
            "cuda": None,
            "cudnn": None,
            "nccl": None,
            "pytorch": None,
            "tensorflow": None,
            "python": None,
            "fabric_manager": None,
            "jetpack": None,
            "container_toolkit": None,
        }
        self.arch = str(self.host.get("arch") or DEFAULT_MACHINE)
        os_facts = self.host.get("os") or {}
        self.os_key = os_facts.get("key") or (
            "%s-%s" % (os_facts["id"], os_facts["version_id"]) if os_facts.get("id") and os_facts.get("version_id") else None
        )
        self.os_entry = self.idx.distros.get(self.os_key) if self.os_key else None
        driver = self.host.get("driver") or {}
        self.installed = str(driver["version"]) if driver.get("version") else None
        if not self.installed and (self.host.get("modules") or {}).get("nvidia_version"):
            self.installed = str(self.host["modules"]["nvidia_version"])
        self.gpus = [g for g in _classified(self.idx, self.host.get("gpus") or [], gpu_index) if not g.get("jetson")]
        self.jetson = self.host.get("jetson")
        self.nvswitch = bool(self.host.get("nvswitches"))
        self.kinds = None
        self.limits = None
        self.driver = None  # {"branch": int, "version": str|None, "installed": bool, "changed": bool}
        self.python = None

    def add(self, errors):
        for msg in errors:
            if msg not in self.errors:
                self.errors.append(msg)

    def warn(self, msg):
        if msg not in self.warnings:
            self.warnings.append(msg)

    def note(self, msg):
        if msg not in self.notes:
            self.notes.append(msg)

    def asked(self, key):
        value = self.request.get(key)
        return value not in (None, "", "auto")


def _kinds(p):
    """One GPU per distinct model (an 8-GPU host is checked once per model)."""
    if p.kinds is None or p.kinds[0] is not p.gpus:
        seen, out = set(), []
        for gpu in p.gpus:
            key = (gpu.get("catalog_name"), gpu.get("cc"), gpu.get("pci_device_id"))
            if key not in seen:
                seen.add(key)
                out.append(gpu)
        p.kinds = (p.gpus, out)
    return p.kinds[1]


def _gpu_label(gpu):
    arch = gpu.get("arch_name") or "unknown architecture"
    return "%s (%s, CC %s)" % (gpu.get("catalog_name"), arch, gpu.get("cc") or "?")


def _cc_short(gpu):
    return "compute capability %s (%s)" % (gpu.get("cc") or "?", gpu.get("catalog_name"))


# ---------------- GPU limits ----------------


def _gpu_limits(p):
    """What the host's GPUs allow: module flavours, driver branch range, CUDA range."""
    lim = {
        "modules": set(["open", "proprietary"]),
        "modules_why": {},
        "branch_max": None,
        "branch_min": None,
        "cuda_min": None,
        "cuda_max": None,
    }
    for gpu in _kinds(p):
        arch = p.idx.archs.get(gpu.get("arch")) or {}
        if not arch:
            continue
        cc = gpu.get("cc")
        rule = gpu.get("open_modules") or arch.get("open_modules")
        if rule == "unsupported":
            lim["modules"].discard("open")
            lim["modules_why"].setdefault("open", gpu)
        elif rule == "required":
            lim["modules"].discard("proprietary")
            lim["modules_why"].setdefault("proprietary", gpu)
        last_branch = arch.get("last_driver_branch")
        if last_branch and (lim["branch_max"] is None or last_branch < lim["branch_max"][0]):
            lim["branch_max"] = (int(last_branch), gpu)
        first_cuda = (arch.get("first_cuda_by_cc") or {}).get(cc) or arch.get("first_cuda")
        last_cuda = (arch.get("last_cuda_by_cc") or {}).get(cc) or arch.get("last_cuda")
        min_branch = arch.get("min_driver_branch") or 0
        rel = p.idx.cuda_release(first_cuda) if first_cuda else None
        if rel and rel.get("toolkit_driver_min"):
            min_branch = max(min_branch, driver_branch_of(rel["toolkit_driver_min"]))
        if min_branch and (lim["branch_min"] is None or min_branch > lim["branch_min"][0]):
            lim["branch_min"] = (int(min_branch), gpu)
        if first_cuda and (lim["cuda_min"] is None or compare_versions(first_cuda, lim["cuda_min"][0]) > 0):
            lim["cuda_min"] = (str(first_cuda), gpu)
        if last_cuda and (lim["cuda_max"] is None or compare_versions(last_cuda, lim["cuda_max"][0]) < 0):
            lim["cuda_max"] = (str(last_cuda), gpu)
    return lim


def rule_gpus_supported(p):
    """GPUs outside everything in scope, unknown GPUs, and GPUs that cannot share one driver."""
    errors = []
    for gpu in _kinds(p):
        if not gpu.get("arch") and gpu.get("legacy_branch"):
            errors.append(
                "%s is supported only by NVIDIA's legacy %s drivers (NVIDIA's device list), older than every driver "
                "branch in scope; replace the GPU." % (gpu.get("catalog_name"), gpu["legacy_branch"])
            )
            continue
        if not gpu.get("arch"):
            errors.append(
                "GPU %s is not in the GPU catalog (data/gpu_catalog.yml, data/compat.yml of %s) and its compute "
                "capability is unknown, so no driver or CUDA can be checked for it; regenerate the catalog "
                "(make gpu-catalog), add it to data/compat.yml or plan with hardware: {gpus: [...]}."
                % (gpu.get("catalog_name"), p.idx.date)
            )
            continue
        arch = p.idx.archs[gpu["arch"]]
        last_cuda = (arch.get("last_cuda_by_cc") or {}).get(gpu.get("cc")) or arch.get("last_cuda")
        if arch.get("last_driver_branch") and p.idx.oldest_branch and arch["last_driver_branch"] < p.idx.oldest_branch:
            errors.append(
                "%s is not supported by any driver branch or CUDA release in scope: its last driver branch is R%s "
                "and its last CUDA is %s; replace the GPU." % (_gpu_label(gpu), arch["last_driver_branch"], arch.get("last_cuda"))
            )
        elif last_cuda and p.idx.oldest_cuda and compare_versions(last_cuda, p.idx.oldest_cuda) < 0:
            errors.append(
                "%s is not supported by any CUDA release in scope: its last CUDA is %s, older than CUDA %s; replace the GPU."
                % (_gpu_label(gpu), last_cuda, p.idx.oldest_cuda)
            )
    lim = p.limits
    if not lim["modules"]:
        errors.append(
            "No kernel module flavour fits all GPUs: %s needs the proprietary modules and %s needs the open modules; "
            "put these GPUs in different hosts." % (_gpu_label(lim["modules_why"]["open"]), _gpu_label(lim["modules_why"]["proprietary"]))
        )
    if lim["branch_min"] and lim["branch_max"] and lim["branch_min"][0] > lim["branch_max"][0]:
        errors.append(
            "No driver branch supports all GPUs: %s needs R%s or newer, %s is supported only up to R%s; put these GPUs "
            "in different hosts." % (_gpu_label(lim["branch_min"][1]), lim["branch_min"][0], _gpu_label(lim["branch_max"][1]), lim["branch_max"][0])
        )
    if lim["cuda_min"] and lim["cuda_max"] and compare_versions(lim["cuda_min"][0], lim["cuda_max"][0]) > 0:
        errors.append(
            "No CUDA release supports all GPUs: %s needs CUDA >= %s, %s stops at CUDA %s; put these GPUs in different "
            "hosts." % (_gpu_label(lim["cuda_min"][1]), lim["cuda_min"][0], _gpu_label(lim["cuda_max"][1]), lim["cuda_max"][0])
        )
    return errors


# ---------------- driver branch ----------------


def _branch_is_eol(p, entry):
    if entry.get("status") == "eol":
        return True
    eol = _ym(entry.get("eol")) if entry.get("eol") not in (None, "ended") else None
    today = _ym(p.idx.date)
    if entry.get("eol") == "ended":
        return True
    return bool(eol and today and eol < today)


def _branch_order(p):
    """Driver branches in order of preference: non-EOL LTSB, PB, others (newest first), then EOL ones."""

    def rank(entry):
        eol = _branch_is_eol(p, entry)
        kind = {"LTSB": 0, "PB": 1}.get(entry.get("designation"), 2)
        return (1 if eol else 0, kind, -int(entry["branch"]))

    return sorted(p.idx.branches, key=rank)


def rule_driver_branch(p, branch, what):
    """A driver branch against the GPUs. ``what`` names it in messages ("Driver branch R595")."""
    errors = []
    lim = p.limits
    if lim["branch_max"] and branch > lim["branch_max"][0]:
        gpu = lim["branch_max"][1]
        errors.append(
            "%s does not support %s: R%s is the last driver branch for %s; use driver_branch: %s."
            % (what, _gpu_label(gpu), lim["branch_max"][0], gpu.get("arch_name"), lim["branch_max"][0])
        )
    if lim["branch_min"] and branch < lim["branch_min"][0]:
        gpu = lim["branch_min"][1]
        best = _preferred_branch(p)
        errors.append(
            "%s does not support %s: it needs driver branch R%s or newer; use driver_branch: %s."
            % (what, _gpu_label(gpu), lim["branch_min"][0], best if best else lim["branch_min"][0])
        )
    return errors


def _requested_driver_floor(p):
    """(branch, reason) minima that requested CUDA / PyTorch variant / cuDNN impose on the driver."""
    floors = []
    if p.asked("cuda"):
        rel = p.idx.cuda_release(p.request["cuda"])
        floor = p.idx.minor_compat.get(_major(rel["version"])) if rel else None
        if floor:
            floors.append((int(floor["branch_min"]), "CUDA %s" % rel["version"]))
    variant = str(p.request.get("pytorch_variant") or "")
    if variant in p.idx.variant_cuda:
        floor = p.idx.minor_compat.get(_major(p.idx.variant_cuda[variant]))
        if floor:
            floors.append((int(floor["branch_min"]), "PyTorch %s" % variant))
    return floors


def _driver_method(p):
    requested = p.request.get("driver_method")
    return str(requested).strip().lower() if requested not in (None, "", "auto") else DEFAULT_DRIVER_METHOD


def _module_flavours(p):
    """The kernel-module flavours this plan may use: the requested one, else those the GPUs allow."""
    requested = p.request.get("kernel_modules")
    if requested not in (None, "", "auto"):
        return (str(requested).lower(),)
    return tuple(sorted(p.limits["modules"])) or ("open", "proprietary")


def _archive_branches(p):
    """The OS archive's driver branches (distro_drivers.distros.<os>.distro.branches), or []."""
    return ((p.idx.distro_drivers.get(p.os_key) or {}).get("distro") or {}).get("branches") or []


def driver_release(p, branch, method, flavours):
    """The confirmed release of ``branch`` for an install method, or None when the data confirms none.

    nvidia_repo: the newest Linux version of the branch in driver_branches (NVIDIA's release notes);
    distro: the OS archive's package of one of ``flavours`` that installs this branch itself (not a
    transitional package pulling another branch). Returns {version, package, flavour}.
    """
    if method == "distro":
        for archive_branch in _archive_branches(p):
            if int(archive_branch["branch"]) != branch:
                continue
            for flavour in flavours:
                for name in _ARCHIVE_FLAVOURS.get(flavour, ()):
                    found = (archive_branch.get("flavours") or {}).get(name)
                    if found and found.get("pulls_branch") is None:
                        return {"version": found["version"], "package": found["package"], "flavour": name}
        return None
    entry = p.idx.branch.get(branch) or {}
    versions = [v for v in entry.get("versions") or [] if driver_branch_of(v) == branch]
    if not versions:
        return None
    return {"version": max(versions, key=parse_version), "package": None, "flavour": None}


def _installable_branches(p, method):
    """Text naming the branches with a confirmed release for the method (for messages)."""
    if method == "distro":
        found = [int(b["branch"]) for b in _archive_branches(p) if driver_release(p, int(b["branch"]), method, _module_flavours(p))]
    else:
        found = [int(e["branch"]) for e in p.idx.branches if driver_release(p, int(e["branch"]), method, ())]
    return ", ".join("R%s" % b for b in found) or "none"


def _preferred_branch(p):
    """The branch the resolver would choose for these GPUs and requests (ignores installed drivers)."""
    floors = _requested_driver_floor(p)
    method, flavours = _driver_method(p), _module_flavours(p)
    for entry in _branch_order(p):
        branch = int(entry["branch"])
        if (rule_driver_branch_quiet(p, branch) and all(branch >= f for f, _name in floors)
                and driver_release(p, branch, method, flavours) is not None):
            return branch
    return None


def rule_driver_branch_quiet(p, branch):
    lim = p.limits
    if lim["branch_max"] and branch > lim["branch_max"][0]:
        return False
    if lim["branch_min"] and branch < lim["branch_min"][0]:
        return False
    return True


def _pick_driver(p):
    """Decide the driver branch: requested (checked), installed (kept) or chosen."""
    requested = p.request.get("driver_branch")
    installed_branch = driver_branch_of(p.installed) if p.installed else None
    if requested not in (None, "", "auto"):
        branch = driver_branch_of(requested)
        entry = p.idx.branch.get(branch) if branch else None
        if entry is None:
            known = ", ".join(str(e["branch"]) for e in _branch_order(p) if not _branch_is_eol(p, e))
            p.add(["Driver branch '%s' is not a known branch in data/compat.yml; use one of: %s." % (requested, known)])
            return None
        p.add(rule_driver_branch(p, branch, "Driver branch R%s" % branch))
        for floor, reason in _requested_driver_floor(p):
            if branch < floor:
                p.add(["%s needs driver branch R%s or newer, but driver_branch: %s was requested; request driver_branch: %s or newer, or a "
                       "CUDA %s.x build." % (reason, floor, branch, floor, _max_major_for_branch(p, branch))])
        method = _driver_method(p)
        if installed_branch != branch and driver_release(p, branch, method, _module_flavours(p)) is None:
            if method == "distro":
                p.add(["Driver branch R%s is not installable from %s's own archive (driver_method: distro ships %s); request one "
                       "of those, or driver_method: nvidia_repo." % (branch, p.os_key or "this OS", _installable_branches(p, method))])
            else:
                p.warn("Driver branch R%s has no Linux release confirmed in data/compat.yml; the version NVIDIA's repository "
                       "installs is unknown here (confirmed: %s)." % (branch, _installable_branches(p, method)))
        if _branch_is_eol(p, entry):
            p.warn("Driver branch R%s is end-of-life on %s (%s); prefer R%s." % (branch, p.idx.date, entry.get("eol"), _preferred_branch(p)))
        changed = installed_branch is not None and installed_branch != branch
        if changed:
            p.note("The installed driver %s (R%s) will be replaced by driver branch R%s." % (p.installed, installed_branch, branch))
        version = p.installed if installed_branch == branch else None
        return {"branch": branch, "version": version, "installed": version is not None, "changed": changed, "entry": entry}
    if installed_branch is not None:
        entry = p.idx.branch.get(installed_branch) or {"branch": installed_branch}
        errors = rule_driver_branch(p, installed_branch, "The installed driver %s" % p.installed)
        errors = [m[:-1] + " to replace it." if "use driver_branch" in m else m for m in errors]
        p.add(errors)
        if entry.get("status") and _branch_is_eol(p, entry):
            p.warn("The installed driver %s belongs to branch R%s, end-of-life on %s; request driver_branch: %s to upgrade."
                   % (p.installed, installed_branch, p.idx.date, _preferred_branch(p)))
        p.note("Keeping the installed driver %s (R%s); request driver_branch to change it." % (p.installed, installed_branch))
        return {"branch": installed_branch, "version": p.installed, "installed": True, "changed": False, "entry": entry}
    branch = _preferred_branch(p)
    if branch is None:
        lim = p.limits
        floors = [(f, why) for f, why in _requested_driver_floor(p) if lim["branch_max"] and f > lim["branch_max"][0]]
        if floors:
            gpu = lim["branch_max"][1]
            top = lim["branch_max"][0]
            p.add(["%s needs driver branch R%s or newer, but %s is supported only up to driver branch R%s; ask for "
                   "a CUDA %s.x build instead." % (floors[0][1], floors[0][0], _gpu_label(gpu), top,
                                                   _max_major_for_branch(p, top))])
        elif not p.errors:
            method = _driver_method(p)
            where = "%s's own archive" % (p.os_key or "this OS") if method == "distro" else "NVIDIA's repository"
            other = "nvidia_repo" if method == "distro" else "distro"
            p.add(["No driver branch that fits these GPUs and requests has a confirmed release in %s (driver_method: %s "
                   "installs %s); try driver_method: %s." % (where, method, _installable_branches(p, method), other)])
        return None
    entry = p.idx.branch[branch]
    if _branch_is_eol(p, entry):
        p.warn("Driver branch R%s is the newest that supports these GPUs, but it is end-of-life on %s; no security updates."
               % (branch, p.idx.date))
    return {"branch": branch, "version": None, "installed": False, "changed": False, "entry": entry}


def _max_major_for_branch(p, branch):
    best = None
    for major, floor in p.idx.minor_compat.items():
        if branch >= int(floor["branch_min"]) and (best is None or major > best):
            best = major
    return best


def _driver_desc(p):
    drv = p.driver
    if drv is None:
        return "no driver"
    if drv.get("version") and drv.get("installed"):
        return "the installed driver %s" % drv["version"]
    return "driver branch R%s" % drv["branch"]


def _driver_at_least(p, version):
    """Does the planned driver satisfy ``version``? Unknown exact version -> compare branches."""
    drv = p.driver
    if drv is None:
        return True
    if drv.get("version"):
        return _ge(drv["version"], version)
    need = driver_branch_of(version)
    return drv["branch"] >= need


def _suggest_branch_for(p, cuda_major):
    floor = p.idx.minor_compat.get(cuda_major)
    if not floor:
        return None
    for entry in _branch_order(p):
        branch = int(entry["branch"])
        if (branch >= int(floor["branch_min"]) and rule_driver_branch_quiet(p, branch)
                and driver_release(p, branch, _driver_method(p), _module_flavours(p)) is not None):
            return branch
    return None


def rule_driver_floor(p, cuda_version, what, fix=None):
    """A CUDA X.Y runtime/toolkit against the planned driver (minor-version compatibility floor)."""
    major = _major(cuda_version)
    floor = p.idx.minor_compat.get(major)
    if not floor or _driver_at_least(p, floor["driver_min"]):
        return []
    alternatives = _fitting_cuda_majors(p)
    if fix is None:
        fix = "use a CUDA %s build" % "/".join("%s.x" % m for m in alternatives) if alternatives else "nothing else fits"
    branch = _suggest_branch_for(p, major)
    change = (", or request driver_branch: %s (or newer) to change the driver" % branch) if branch else ""
    return [
        "%s needs driver >= %s (CUDA %s.x minor-version compatibility floor), but %s is older; %s%s."
        % (what, floor["driver_min"], major, _driver_desc(p), fix, change)
    ]


def _fitting_cuda_majors(p):
    return sorted((m for m, f in p.idx.minor_compat.items() if _driver_at_least(p, f["driver_min"])), reverse=True)


# ---------------- kernel modules ----------------


def rule_kernel_modules(p, flavour):
    errors = []
    lim = p.limits
    if flavour not in ("open", "proprietary"):
        return ["kernel_modules: '%s' is not a module flavour; use open or proprietary." % flavour]
    if flavour == "proprietary" and "proprietary" not in lim["modules"]:
        gpu = lim["modules_why"]["proprietary"]
        errors.append(
            "Proprietary kernel modules do not support %s: %s requires the open kernel modules; use kernel_modules: open."
            % (_gpu_label(gpu), gpu.get("catalog_name") if gpu.get("open_modules") == "required" else gpu.get("arch_name"))
        )
    if flavour == "open" and "open" not in lim["modules"]:
        gpu = lim["modules_why"]["open"]
        first = p.idx.first_open_modules_arch()
        need = " they need %s (CC %s) or newer;" % (first["name"], first["cc_min"]) if first else ""
        errors.append(
            "Open kernel modules do not support %s:%s use kernel_modules: proprietary." % (_gpu_label(gpu), need)
        )
    return errors


def _pick_modules(p):
    if p.driver is None:
        return None
    requested = p.request.get("kernel_modules")
    branch = p.driver["branch"]
    removed = p.idx.kernel_modules.get("proprietary_removed_from_branch")
    if requested not in (None, "", "auto"):
        flavour = str(requested).lower()
        p.add(rule_kernel_modules(p, flavour))
    elif "open" in p.limits["modules"] and (
        "proprietary" not in p.limits["modules"] or branch >= int(p.idx.kernel_modules["open_default_from_branch"])
    ):
        flavour = "open"
    elif "proprietary" in p.limits["modules"]:
        flavour = "proprietary"
    else:
        flavour = "open"
    if flavour == "proprietary" and removed and branch >= int(removed):
        p.warn("The R%s Driver Installation Guide has a section 'Proprietary Kernel Modules Removed' (content unconfirmed); "
               "proprietary modules may not exist for this branch." % branch)
    return flavour


def _driver_packages(p, flavour):
    entry = p.driver.get("entry") or {}
    style = p.idx.driver_packages.get(entry.get("packages") or "versioned") or {}
    branch = p.driver["branch"]
    names = list(style.get(flavour) or []) + list(style.get("lock") or [])
    return [str(n).replace("{branch}", str(branch)) for n in names]


# ---------------- CUDA ----------------


def rule_cuda(p, rel, what=None):
    """A CUDA release against GPUs, driver and OS."""
    what = what or "CUDA %s" % rel["version"]
    errors = []
    version = rel["version"]
    lim = p.limits
    if lim["cuda_min"] and compare_versions(version, lim["cuda_min"][0]) < 0:
        gpu = lim["cuda_min"][1]
        errors.append("%s does not support %s: it needs CUDA >= %s; use cuda: '%s' or newer."
                      % (what, _gpu_label(gpu), lim["cuda_min"][0], lim["cuda_min"][0]))
    if lim["cuda_max"] and compare_versions(version, lim["cuda_max"][0]) > 0:
        gpu = lim["cuda_max"][1]
        branch = lim["branch_max"][0] if lim["branch_max"] else None
        errors.append("%s does not support %s: the last CUDA for CC %s is %s; use cuda: '%s' or older%s."
                      % (what, _gpu_label(gpu), gpu.get("cc"), lim["cuda_max"][0], lim["cuda_max"][0],
                         " (driver branch R%s)" % branch if branch else ""))
    errors += rule_driver_floor(p, version, what)
    if p.os_entry and p.os_entry.get("last_cuda") and compare_versions(version, p.os_entry["last_cuda"]) > 0:
        errors.append("%s is not available for %s: the last CUDA for it is %s; use cuda: '%s' or upgrade the OS."
                      % (what, p.os_key, p.os_entry["last_cuda"], p.os_entry["last_cuda"]))
    return errors


def _cuda_native(p, rel):
    """True when the planned driver is at least the toolkit's own (GA) driver."""
    need = rel.get("toolkit_driver_min")
    return bool(need) and _driver_at_least(p, need)


def _cuda_advice(p, rel):
    version = rel["version"]
    if p.driver is not None:
        need = rel.get("toolkit_driver_min")
        if need and not _driver_at_least(p, need):
            p.warn("CUDA %s's own driver is %s; %s runs it in minor-version compatibility mode (PTX of newer "
                   "architectures cannot be JIT-compiled, some features missing)." % (version, need, _driver_desc(p)))
        elif not need:
            guess = rel.get("toolkit_driver_min_unconfirmed")
            p.warn("CUDA %s no longer bundles a Linux driver and its driver floor is unconfirmed%s; only the CUDA %s.x "
                   "floor is certain." % (version, " (>= %s reported)" % guess if guess else "", _major(version)))
    if p.os_key and p.os_entry and p.os_key not in (rel.get("os") or []):
        p.warn("CUDA %s is not listed for %s in data/compat.yml (the per-OS list is unconfirmed); check NVIDIA's "
               "repository %s." % (version, p.os_key, p.os_entry.get("repo_distro")))


def _cudnn_fits(p, entry, cuda_version, tf=None):
    return not rule_cudnn(p, entry, cuda_version, quiet=True) and (
        tf is None or tf.get("and_cuda") or _major(entry["version"]) == _major(tf["cudnn"])
    )


def _pick_cuda(p, tf):
    requested = p.request.get("cuda")
    if requested not in (None, "", "auto"):
        rel = p.idx.cuda_release(requested)
        if rel is None:
            known = ", ".join(r["version"] for r in p.idx.cuda[:8])
            skipped = [v for v in p.idx.cuda_never_released if version_matches(v, requested)]
            why = " (%s was never released)" % skipped[0] if skipped else ""
            p.add(["CUDA '%s' is not a CUDA release in data/compat.yml%s; use one of: %s, ..."
                   % (requested, why, known)])
            return None
        p.add(rule_cuda(p, rel))
        _cuda_advice(p, rel)
        return rel
    best, best_key = None, None
    for rel in p.idx.cuda:
        if rule_cuda(p, rel):
            continue
        if tf is not None and _major(rel["version"]) != _major(tf["cuda"]):
            continue
        if p.os_key and p.os_entry and p.os_key not in (rel.get("os") or []):
            continue
        has_cudnn = any(_cudnn_fits(p, c, rel["version"], tf) for c in p.idx.cudnn)
        key = (_cuda_native(p, rel), has_cudnn, parse_version(rel["version"]))
        if best_key is None or key > best_key:
            best, best_key = rel, key
    if best is None:
        p.warn("No CUDA toolkit release in data/compat.yml fits these GPUs, this driver and OS; the plan has no CUDA toolkit.")
        return None
    _cuda_advice(p, best)
    return best


def _cuda_out(p, rel):
    updates = rel.get("updates") or []
    parts = parse_version(rel["version"])
    return {
        "version": rel["version"],
        "latest_update": updates[-1]["version"] if updates else None,
        "toolkit_driver_min": rel.get("toolkit_driver_min"),
        "package": p.idx.cuda_toolkit_package.format(major=parts[0], minor=parts[1]),
    }


# ---------------- cuDNN ----------------


def _cc_covered(cc, cc_min, cc_max):
    """cc within [cc_min, cc_max]; cc_max covers its whole major (binary compatibility)."""
    if cc is None:
        return True
    return _ge(cc, cc_min) and _major(cc) <= _major(cc_max)


def rule_cudnn(p, entry, cuda_version, quiet=False):
    """A cuDNN release against the CUDA toolkit, the GPUs and the driver."""
    errors = []
    version = entry["version"]
    if cuda_version:
        build = (entry.get("builds") or {}).get(str(_major(cuda_version)))
        if not build:
            if quiet:
                return ["x"]
            majors = ", ".join(sorted(entry.get("builds") or {}))
            errors.append("cuDNN %s has no build for CUDA %s.x (builds: CUDA %s); use a cuDNN with a CUDA %s build%s."
                          % (version, _major(cuda_version), majors, _major(cuda_version), _cudnn_hint(p, cuda_version)))
        elif not (_ge(_mm(cuda_version), build[0]) and _le(_mm(cuda_version), build[1])):
            if quiet:
                return ["x"]
            errors.append("cuDNN %s's CUDA %s build covers CUDA %s to %s, not %s%s."
                          % (version, _major(cuda_version), build[0], build[1], cuda_version, _cudnn_hint(p, cuda_version)))
    for gpu in _kinds(p):
        if not _cc_covered(gpu.get("cc"), entry["cc_min"], entry["cc_max"]):
            if quiet:
                return ["x"]
            last = p.idx.last_cudnn_for(gpu.get("cc"))
            if last is not None and compare_versions(gpu.get("cc"), entry["cc_min"]) < 0:
                fix = "cuDNN %s is the last for %s; use cudnn: '%s'" % (_mm(last["version"]), gpu.get("arch_name"), _mm(last["version"]))
            else:
                fix = _cudnn_hint(p, cuda_version).lstrip("; ") or "no cuDNN in data/compat.yml covers it"
            errors.append("cuDNN %s does not support %s: it covers CC %s to %s; %s."
                          % (version, _gpu_label(gpu), entry["cc_min"], entry["cc_max"], fix))
    need = (entry.get("driver_min") or {}).get(str(_major(cuda_version))) if cuda_version else None
    if need and not _driver_at_least(p, need):
        if quiet:
            return ["x"]
        errors.append("cuDNN %s for CUDA %s.x needs driver >= %s, but %s is older." % (version, _major(cuda_version), need, _driver_desc(p)))
    return errors


def _cudnn_hint(p, cuda_version):
    for entry in p.idx.cudnn:
        if not rule_cudnn(p, entry, cuda_version, quiet=True):
            return "; use cudnn: '%s'" % entry["version"]
    return ""


def _pick_cudnn(p, cuda_rel, tf):
    requested = p.request.get("cudnn")
    cuda_version = cuda_rel["version"] if cuda_rel else None
    if requested not in (None, "", "auto"):
        if str(requested).lower() in _NONE_WORDS:
            return None
        entry = next((e for e in p.idx.cudnn if version_matches(requested, e["version"])), None)
        if entry is None:
            p.add(["cuDNN '%s' is not in data/compat.yml; known: %s." % (requested, ", ".join(e["version"] for e in p.idx.cudnn))])
            return None
        p.add(rule_cudnn(p, entry, cuda_version))
        if tf is not None and not tf.get("and_cuda") and _major(entry["version"]) != _major(tf["cudnn"]):
            p.add(["TensorFlow %s uses the system cuDNN %s.x (no [and-cuda] extra), but cuDNN %s was requested; use cudnn: '%s'."
                   % (tf["version"], _major(tf["cudnn"]), entry["version"], tf["cudnn"])])
        return entry
    if cuda_rel is None:
        return None
    for entry in p.idx.cudnn:
        if _cudnn_fits(p, entry, cuda_version, tf):
            if _unconfirmed(entry):
                p.warn("cuDNN %s: part of its support range is unconfirmed (%s)." % (entry["version"], entry.get("source")))
            return entry
    p.warn("No cuDNN in data/compat.yml has a build for CUDA %s that supports these GPUs; the plan has no system cuDNN."
           % cuda_version)
    return None


# ---------------- Python ----------------


def _os_python(p):
    if p.os_entry and p.os_entry.get("python"):
        return str(p.os_entry["python"])
    return None


def _in_range(version, rng):
    return _ge(version, rng["min"]) and _le(version, rng["max"])


def _requested_frameworks(p):
    """Releases named by the request, for the Python choice."""
    out = []
    if p.asked("pytorch") and str(p.request["pytorch"]).lower() not in _NONE_WORDS + _LATEST_WORDS:
        rel = _find_release(p.idx.pytorch, p.request["pytorch"])
        if rel:
            out.append(("PyTorch", rel))
    if p.asked("tensorflow") and str(p.request["tensorflow"]).lower() not in _NONE_WORDS + _LATEST_WORDS:
        rel = _find_release(p.idx.tensorflow, p.request["tensorflow"])
        if rel:
            out.append(("TensorFlow", rel))
    return out


def _pick_python(p):
    requested = p.request.get("python")
    os_python = _os_python(p)
    if requested not in (None, "", "auto"):
        version = _mm(requested)
        if not version or _major(version) != 3:
            p.add(["python: '%s' is not a Python 3 version like '%s'." % (requested, p.idx.default_python)])
            return None
        if os_python and version != os_python:
            p.note("Python %s is not %s's default python3 (%s); the environment role must provide it (e.g. uv or a PPA)."
                   % (version, p.os_key, os_python))
        return version
    frameworks = _requested_frameworks(p)
    if os_python and all(_in_range(os_python, rel["python"]) for _name, rel in frameworks):
        return os_python
    if frameworks:
        lo = max((rel["python"]["min"] for _name, rel in frameworks), key=parse_version)
        hi = min((rel["python"]["max"] for _name, rel in frameworks), key=parse_version)
        if compare_versions(lo, hi) <= 0:
            version = _mm(hi)
            p.note("Python %s chosen for %s; %s (the OS default) is outside their range, so the environment role must "
                   "provide Python %s." % (version, " and ".join("%s %s" % (n, r["version"]) for n, r in frameworks),
                                           os_python or "the OS python", version))
            return version
        p.add(["No Python version fits %s: their ranges do not overlap; pick releases with a common Python."
               % " and ".join("%s %s (%s to %s)" % (n, r["version"], r["python"]["min"], r["python"]["max"]) for n, r in frameworks)])
        return None
    return os_python or p.idx.default_python


def rule_python(p, name, rel, python):
    rng = rel["python"]
    if python is None or _in_range(python, rng):
        return []
    releases = p.idx.pytorch if name == "PyTorch" else p.idx.tensorflow
    other = next((r for r in releases if _in_range(python, r["python"])), None)
    alt = (" or %s %s, which supports Python %s" % (name, other["version"], python)) if other else ""
    return ["Python %s is outside %s %s's range (%s to %s); use a Python from %s to %s%s."
            % (python, name, rel["version"], rng["min"], rng["max"], rng["min"], rng["max"], alt)]


# ---------------- PyTorch ----------------


def _find_release(releases, spec):
    spec = str(spec)
    for rel in releases:
        if version_matches(rel["version"], spec) and len(parse_version(spec)) >= 2:
            if len(parse_version(spec)) == 2 or spec in (rel.get("patches") or []) or any(
                version_matches(spec, patch) for patch in rel.get("patches") or []
            ):
                return rel
    return None


def _requested_release(p, label, releases, requested):
    """The release a request names, checked against the planned Python; None (with an error) if unknown."""
    rel = _find_release(releases, requested)
    if rel is None:
        p.add(["%s '%s' is not a release in data/compat.yml; known: %s."
               % (label, requested, ", ".join(r["version"] for r in releases))])
        return None
    p.add(rule_python(p, label, rel, p.python))
    return rel


def _variant_archs(p, variant):
    if p.arch == "aarch64":
        return variant.get("archs_aarch64"), bool(variant.get("ptx_aarch64"))
    return variant.get("archs"), bool(variant.get("ptx"))


def _arch_covers(cc, archs, ptx):
    """An sm_XY cubin runs on the same major with minor >= Y; PTX of the newest arch JITs forward."""
    if cc is None:
        return True
    want = parse_version(cc)
    for arch in archs:
        have = parse_version(arch)
        if have[0] == want[0] and have[1:] <= want[1:]:
            return True
    if ptx and archs and want > max(parse_version(a) for a in archs):
        return True
    return False


def _uncovered(p, variant):
    archs, ptx = _variant_archs(p, variant)
    if archs is None:
        return []
    return [g for g in _kinds(p) if not _arch_covers(g.get("cc"), archs, ptx)]


def _variant_fits(p, rel, variant):
    """Variant covers every GPU and the driver runs its CUDA."""
    if variant.get("name") == CPU_VARIANT:
        return True
    archs, _ptx = _variant_archs(p, variant)
    if archs is None and p.arch == "aarch64":
        return False
    return not _uncovered(p, variant) and not rule_driver_floor(p, variant["cuda"], "x")


def _variant_order(rel):
    """Stable variants newest CUDA first, then experimental ones."""
    return sorted(rel.get("variants") or [], key=lambda v: (not v.get("experimental"), parse_version(v["cuda"])), reverse=True)


def _suggest_pytorch(p, rel):
    """'use cu126' or 'use PyTorch >= 2.7 with cu128' for a release that has no fitting variant."""
    fitting = [v for v in _variant_order(rel) if _variant_fits(p, rel, v)]
    if fitting:
        return "use %s" % fitting[0]["name"]
    newer = sorted((r for r in p.idx.pytorch if compare_versions(r["version"], rel["version"]) > 0), key=lambda r: parse_version(r["version"]))
    for other in newer:
        fit = [v for v in _variant_order(other) if _variant_fits(p, other, v)]
        if fit:
            return "use PyTorch >= %s with %s" % (other["version"], fit[0]["name"])
    for other in p.idx.pytorch:
        fit = [v for v in _variant_order(other) if _variant_fits(p, other, v)]
        if fit:
            return "use PyTorch %s with %s" % (other["version"], fit[0]["name"])
    return "no PyTorch CUDA build in data/compat.yml fits; use pytorch_variant: cpu"


def rule_pytorch_variant(p, rel, variant, named_variant):
    """One PyTorch CUDA build against the GPUs and the driver."""
    errors = []
    label = "PyTorch %s %s" % (rel["version"], variant["name"]) if named_variant else "PyTorch %s" % rel["version"]
    archs, _ptx = _variant_archs(p, variant)
    if archs is None and p.arch == "aarch64" and p.gpus:
        errors.append("%s: the GPU architectures of its aarch64 build are not in data/compat.yml; %s."
                      % (label, _suggest_pytorch(p, rel)))
    for gpu in _uncovered(p, variant):
        errors.append("%s has no build for %s; %s." % (label, _cc_short(gpu), _suggest_pytorch(p, rel)))
    if not errors:
        fitting = [v["name"] for v in _variant_order(rel) if _variant_fits(p, rel, v)]
        fix = ("use %s" % " or ".join(fitting)) if fitting else "use pytorch_variant: cpu"
        errors += rule_driver_floor(p, variant["cuda"], "PyTorch %s %s" % (rel["version"], variant["name"]), fix)
    return errors


def _pick_pytorch(p):
    requested = p.request.get("pytorch")
    req_variant = p.request.get("pytorch_variant")
    req_variant = str(req_variant).lower() if req_variant not in (None, "", "auto") else None
    if requested is not None and str(requested).lower() in _NONE_WORDS:
        return None
    cpu_only = not p.gpus
    if req_variant and req_variant.startswith("cu") and cpu_only:
        p.add(["pytorch_variant: %s was requested but no NVIDIA GPU was found; use pytorch_variant: cpu, or plan with "
               "hardware: {gpus: [...]}." % req_variant])
        return None
    if requested not in (None, "", "auto") and str(requested).lower() not in _LATEST_WORDS:
        rel = _requested_release(p, "PyTorch", p.idx.pytorch, requested)
        if rel is None:
            return None
        return _pytorch_variant_for(p, rel, req_variant, cpu_only, str(requested))
    # choose the newest release that fits Python, GPUs and driver
    first = None
    for rel in p.idx.pytorch:
        if p.python and not _in_range(p.python, rel["python"]):
            continue
        if cpu_only:
            return _pytorch_out(p, rel, None, CPU_VARIANT)
        variants = _variant_order(rel)
        if req_variant == PYPI_VARIANT:
            variants = [v for v in variants if v["name"] == rel.get("pypi_default")]
        elif req_variant:
            variants = [v for v in variants if v["name"] == req_variant] if req_variant != CPU_VARIANT else []
            if req_variant == CPU_VARIANT:
                return _pytorch_out(p, rel, None, CPU_VARIANT)
        for variant in variants:
            if first is None:
                first = (rel, variant)
            if _variant_fits(p, rel, variant):
                return _pytorch_finish(p, rel, variant, req_variant == PYPI_VARIANT, None)
    if req_variant and first is not None:
        p.add(rule_pytorch_variant(p, first[0], first[1], True))
        return None
    if req_variant and req_variant not in (CPU_VARIANT, PYPI_VARIANT):
        p.add(["No PyTorch release in data/compat.yml has a %s build that fits %s and Python %s; %s."
               % (req_variant, ", ".join(_gpu_label(g) for g in _kinds(p)) or "this host", p.python,
                  "use pytorch_variant: cpu or another CUDA variant")])
        return None
    p.warn("No PyTorch CUDA build in data/compat.yml fits %s with %s and Python %s; the plan has no PyTorch "
           "(request pytorch_variant: cpu for a CPU build)." % (", ".join(_gpu_label(g) for g in _kinds(p)), _driver_desc(p), p.python))
    return None


def _pytorch_variant_for(p, rel, req_variant, cpu_only, requested):
    if req_variant == CPU_VARIANT or cpu_only:
        return _pytorch_out(p, rel, None, CPU_VARIANT, requested)
    if req_variant == PYPI_VARIANT:
        variant = next((v for v in rel["variants"] if v["name"] == rel.get("pypi_default")), None)
        if variant is None:
            p.add(["PyTorch %s's PyPI default build (%s) is not described in data/compat.yml." % (rel["version"], rel.get("pypi_default"))])
            return None
        p.add(rule_pytorch_variant(p, rel, variant, True))
        return _pytorch_finish(p, rel, variant, True, requested)
    if req_variant:
        variant = next((v for v in rel["variants"] if v["name"] == req_variant), None)
        if variant is None:
            names = ", ".join([v["name"] for v in _variant_order(rel)] + [CPU_VARIANT])
            p.add(["PyTorch %s has no %s build (builds: %s); use one of those or another release."
                   % (rel["version"], req_variant, names)])
            return None
        p.add(rule_pytorch_variant(p, rel, variant, True))
        return _pytorch_finish(p, rel, variant, False, requested)
    for variant in _variant_order(rel):
        if _variant_fits(p, rel, variant):
            return _pytorch_finish(p, rel, variant, False, requested)
    # nothing fits: report against the newest stable build
    variant = _variant_order(rel)[0]
    p.add(rule_pytorch_variant(p, rel, variant, False) or rule_pytorch_variant(p, rel, variant, True))
    return None


def _pytorch_finish(p, rel, variant, pypi, requested):
    if variant.get("experimental"):
        p.warn("PyTorch %s %s is an experimental build." % (rel["version"], variant["name"]))
    if _unconfirmed(rel):
        p.warn("PyTorch %s: some facts are unconfirmed (%s)." % (rel["version"], rel.get("source")))
    if rel.get("notes"):
        p.note("PyTorch %s: %s" % (rel["version"], rel["notes"]))
    return _pytorch_out(p, rel, variant, PYPI_VARIANT if pypi else variant["name"], requested)


def _pytorch_out(p, rel, variant, name, requested=None):
    patches = rel.get("patches") or [rel["version"]]
    version = patches[-1]
    if requested and len(parse_version(requested)) >= 3:
        version = next((x for x in patches if version_matches(requested, x)), str(requested))
    out = {
        "version": version,
        "variant": name,
        "index_url": None if name == PYPI_VARIANT else "%s/%s" % (p.idx.pt_base, name),
        "cuda": variant["cuda"] if variant else None,
        "cudnn": variant.get("cudnn") if variant else None,
        "torchvision": rel.get("torchvision"),
        "torchaudio": rel.get("torchaudio"),
    }
    return out


# ---------------- TensorFlow ----------------


def _pick_tensorflow(p):
    requested = p.request.get("tensorflow")
    if requested in (None, "", "auto", False) or str(requested).lower() in _NONE_WORDS:
        return None
    if str(requested).lower() in _LATEST_WORDS or requested is True:
        for rel in p.idx.tensorflow:
            if p.python and not _in_range(p.python, rel["python"]):
                continue
            if p.asked("cuda") and _major(p.request["cuda"]) != _major(rel["cuda"]):
                continue
            if p.gpus and rule_driver_floor(p, rel["cuda"], "x"):
                continue
            return rel
        majors = sorted(set(_major(r["cuda"]) for r in p.idx.tensorflow))
        p.add(["No TensorFlow release in data/compat.yml fits Python %s%s; TensorFlow is built for CUDA %s only."
               % (p.python, " and CUDA %s" % p.request["cuda"] if p.asked("cuda") else "",
                  "/".join("%s.x" % m for m in majors))])
        return None
    return _requested_release(p, "TensorFlow", p.idx.tensorflow, requested)


def rule_tensorflow(p, rel, cuda_rel):
    errors = []
    if cuda_rel is not None and _major(cuda_rel["version"]) != _major(rel["cuda"]):
        errors.append(
            "TensorFlow %s is not built for CUDA %s: it is tested with CUDA %s and %s; use cuda: '%s' (or leave cuda unset)."
            % (rel["version"], cuda_rel["version"], rel["cuda"],
               "tensorflow[and-cuda] keeps every NVIDIA package below %s" % (_major(rel["cuda"]) + 1) if rel.get("and_cuda")
               else "it loads the system CUDA %s.x libraries" % _major(rel["cuda"]),
               _newest_cuda_of_major(p, _major(rel["cuda"])))
        )
    if p.gpus:
        errors += rule_driver_floor(p, rel["cuda"], "TensorFlow %s (CUDA %s)" % (rel["version"], rel["cuda"]))
        for gpu in _kinds(p):
            arch = p.idx.archs.get(gpu.get("arch")) or {}
            first_cuda = (arch.get("first_cuda_by_cc") or {}).get(gpu.get("cc")) or arch.get("first_cuda")
            if first_cuda and compare_versions(first_cuda, rel["cuda"]) > 0:
                p.warn("TensorFlow %s is tested with CUDA %s, which predates %s; kernels for it are JIT-compiled from PTX "
                       "(slow first start, unconfirmed)." % (rel["version"], rel["cuda"], _gpu_label(gpu)))
    return errors


def _newest_cuda_of_major(p, major):
    for rel in p.idx.cuda:
        if _major(rel["version"]) == major and not rule_cuda(p, rel):
            return rel["version"]
    return "%s.x" % major


# ---------------- NCCL and Fabric Manager ----------------


def _pick_nccl(p, cuda_rel):
    if cuda_rel is None or (len(p.gpus) < 2 and not p.nvswitch):
        return None
    major = str(_major(cuda_rel["version"]))
    for entry in p.idx.nccl:
        if major in [str(m) for m in entry.get("cuda_majors") or []]:
            if _unconfirmed(entry):
                p.warn("NCCL %s for CUDA %s.x: the CUDA %s build is unconfirmed in the data (%s)."
                       % (entry["version"], major, major, entry.get("source")))
            return {"version": entry["version"], "cuda_major": int(major)}
    p.warn("No NCCL in data/compat.yml names a CUDA %s.x build; multi-GPU jobs use the NCCL bundled with the framework." % major)
    return None


def _pick_fabric_manager(p):
    if not p.nvswitch or p.driver is None:
        return None
    branch = p.driver["branch"]
    rule = None
    for entry in p.idx.fabric.get("packages") or []:
        hi = entry.get("branch_max")
        if branch >= int(entry["branch_min"]) and (hi is None or branch <= int(hi)):
            rule = entry
    if rule is None:
        p.add(["No Fabric Manager package is known for driver branch R%s; NVSwitch systems need one." % branch])
        return None
    package = str(rule["package"]).replace("{branch}", str(branch))
    packages = [package]
    if rule.get("meta"):
        packages.append(str(rule["meta"]).replace("{branch}", str(branch)))
    nvl5 = p.idx.fabric.get("nvlink5") or {}
    if nvl5 and any(compare_versions(g.get("cc"), nvl5["cc_min"]) >= 0 and g.get("form") == "sxm" for g in _kinds(p)):
        packages += list(nvl5.get("extra_packages") or [])
        arch_name = (p.idx.archs.get(p.idx.arch_for_cc(nvl5["cc_min"])) or {}).get("name")
        p.note("NVLink5 (%s) systems also need %s besides Fabric Manager." % (arch_name, ", ".join(nvl5.get("extra_packages") or [])))
    exact = p.driver["version"] if p.driver.get("installed") else None
    version = exact or "%s.*" % branch
    p.warn("Fabric Manager and the driver must have exactly the same version: pin %s to %s and upgrade both "
           "together, or nvidia-fabricmanager.service will not start." % (package, exact or "the R%s driver version that gets installed" % branch))
    return {"package": package, "version": version, "branch": branch, "packages": packages,
            "service": p.idx.fabric["service"]}


# ---------------- NVIDIA Container Toolkit ----------------


def _pick_container_toolkit(p):
    """The container toolkit the docker/nvidia_container_toolkit roles install, from data ``container_toolkit``.

    ``{default_version: "1.18.2", min_version: "1.18.1", packages: [...], docker_cdi_min: "25.0"}`` ->
    ``{"version": "1.18.2", "min_version": "1.18.1", "packages": [...], "docker_cdi_min": "25.0"}``;
    None when the data has no such section.
    """
    entry = p.idx.data.get("container_toolkit") or {}
    if not entry.get("default_version"):
        return None
    if entry.get("min_version") and compare_versions(entry["default_version"], entry["min_version"]) < 0:
        p.add(["data/compat.yml: container_toolkit default_version %s is older than its min_version %s; fix the data."
               % (entry["default_version"], entry["min_version"])])
    if _unconfirmed(entry):
        p.warn("NVIDIA Container Toolkit %s: the data for it is unconfirmed (%s)." % (entry["default_version"], entry.get("source")))
    return {"version": str(entry["default_version"]), "min_version": str(entry.get("min_version") or entry["default_version"]),
            "packages": list(entry.get("packages") or []), "docker_cdi_min": entry.get("docker_cdi_min")}


# ---------------- host summary ----------------


def _host_summary(p):
    groups = []
    for gpu in p.gpus:
        for group in groups:
            if group["name"] == gpu.get("catalog_name") and group["pci_device_id"] == gpu.get("pci_device_id"):
                group["count"] += 1
                break
        else:
            groups.append({"name": gpu.get("catalog_name"), "pci_device_id": gpu.get("pci_device_id"),
                           "architecture": gpu.get("arch_name"), "cc": gpu.get("cc"), "known": gpu.get("known"), "count": 1})
    return {
        "gpus": groups,
        "gpu_count": len(p.gpus),
        "architectures": sorted(set(g.get("arch_name") for g in p.gpus if g.get("arch_name"))),
        "compute_capabilities": sorted(set(g.get("cc") for g in p.gpus if g.get("cc")), key=parse_version),
        "arch": p.arch,
        "os": p.os_key,
        "driver_installed": p.installed,
        "nvswitch": p.nvswitch,
        "jetson": p.jetson or None,
        "planning": bool(p.host.get("planning")),
    }


# ---------------- the three paths: CPU only, Jetson, discrete GPUs ----------------


def _resolve_cpu(p):
    p.note("No NVIDIA GPU was found on this host: the plan is a CPU-only stack (no driver, CUDA or cuDNN; PyTorch "
           "cpu wheels).")
    for key, what in (("driver_branch", "a driver branch"), ("kernel_modules", "kernel modules"), ("cuda", "CUDA"),
                      ("cudnn", "cuDNN"), ("jetpack", "JetPack")):
        if p.asked(key):
            p.add(["%s was requested (%s: %s) but no NVIDIA GPU was found on this host; drop %s, or plan with hardware: "
                   "{gpus: [...]}." % (what[0].upper() + what[1:], key, p.request[key], key)])
    p.python = _pick_python(p)
    tf = _pick_tensorflow(p)
    p.stack["python"] = {"version": p.python} if p.python else None
    p.stack["pytorch"] = _pick_pytorch(p)
    p.stack["tensorflow"] = _tf_out(tf) if tf else None


def _jetson_family(p):
    model = (p.jetson or {}).get("model") or ""
    if p.gpu_index is not None:
        found = p.gpu_index.candidates(model) if model else []
    else:  # no catalog index: a hand-kept Jetson entry whose name's words all appear in the model
        words = set(re.findall(r"[a-z0-9]+", model.lower()))
        found = [e for e in p.idx.data.get("gpus") or []
                 if model and set(re.findall(r"[a-z0-9]+", str(e.get("name")).lower())) <= words]
    found = [e for e in found if e.get("jetson")]
    if len(found) == 1:
        return found[0]
    families = set(e.get("jetson_family") for e in found)
    if len(families) == 1 and found:
        return found[0]
    return None


def _resolve_jetson(p):
    entry = _jetson_family(p)
    model = (p.jetson or {}).get("model")
    for key in ("driver_branch", "kernel_modules"):
        if p.asked(key):
            p.add(["%s: %s was requested, but Jetson modules get their GPU driver from the L4T BSP (JetPack); drop %s."
                   % (key, p.request[key], key)])
    if entry is None:
        p.add(["Jetson model '%s' is not in the GPU catalog of data/compat.yml; add it or plan with hardware: {gpus: "
               "['Jetson AGX Orin']}." % model])
        return
    family = entry.get("jetson_family")
    l4t = (p.jetson or {}).get("l4t")
    installed_jp = None
    if l4t:
        installed_jp = next((j for j in p.idx.jetpack if any(version_matches(x, l4t) or x == str(l4t) for x in j["l4t"])), None)
        if installed_jp is None:
            p.warn("L4T %s is not in data/compat.yml's JetPack table; the JetPack stack cannot be checked." % l4t)
    jp = None
    if p.asked("jetpack"):
        wanted = str(p.request["jetpack"])
        jp = next((j for j in p.idx.jetpack if j["version"] == wanted), None) or next(
            (j for j in p.idx.jetpack if version_matches(wanted, j["version"])), None)
        if jp is None:
            p.add(["JetPack '%s' is not in data/compat.yml; known: %s." % (p.request["jetpack"], ", ".join(j["version"] for j in p.idx.jetpack))])
            return
        if family not in jp["devices"]:
            options = [j["version"] for j in p.idx.jetpack if family in j["devices"]]
            p.add(["JetPack %s does not support %s (it supports %s); use jetpack: '%s'."
                   % (jp["version"], entry["name"], ", ".join(jp["devices"]), options[0] if options else "?")])
        if installed_jp is not None and installed_jp is not jp:
            if _major(installed_jp["version"]) != _major(jp["version"]):
                p.add(["JetPack %s was requested but this module runs L4T %s (JetPack %s); moving between JetPack %s and %s "
                       "needs a reflash, which this collection does not do; drop jetpack or reflash first."
                       % (jp["version"], l4t, installed_jp["version"], _major(installed_jp["version"]), _major(jp["version"]))])
            else:
                p.warn("JetPack %s was requested; this module runs JetPack %s (L4T %s): upgrade through NVIDIA's Jetson apt "
                       "repository." % (jp["version"], installed_jp["version"], l4t))
    elif installed_jp is not None:
        jp = installed_jp
        p.note("JetPack %s detected (L4T %s): Jetson stacks follow the flashed JetPack." % (jp["version"], l4t))
    else:
        candidates = [j for j in p.idx.jetpack if family in j["devices"] and j.get("cuda")]
        with_pytorch = [j for j in candidates if (j.get("pytorch") or {}).get("route") and family in (j["pytorch"].get("families") or [])]
        jp = (with_pytorch or candidates or [None])[0]
        if jp is None:
            p.add(["No JetPack in data/compat.yml supports %s." % entry["name"]])
            return
        p.note("JetPack %s chosen for %s: the newest JetPack with a known PyTorch route for it%s."
               % (jp["version"], entry["name"], "" if l4t else " (the module must be flashed with it)"))
    if jp.get("notes"):
        p.warn("JetPack %s: %s" % (jp["version"], jp["notes"]))
    p.note("Jetson modules need no discrete GPU driver: the driver is part of L4T (JetPack).")
    p.stack["jetpack"] = {"version": jp["version"], "l4t": l4t or jp["l4t"][-1], "ubuntu": jp["ubuntu"], "cuda": jp.get("cuda"),
                          "cudnn": jp.get("cudnn"), "tensorrt": jp.get("tensorrt"), "device": entry["name"], "family": family}
    if p.asked("cuda") and jp.get("cuda") and _major(p.request["cuda"]) != _major(jp["cuda"]):
        p.add(["CUDA %s was requested, but JetPack %s is built on CUDA %s; use cuda: '%s' or another JetPack."
               % (p.request["cuda"], jp["version"], jp["cuda"], jp["cuda"])])
    cuda = _mm(p.request["cuda"]) if p.asked("cuda") else jp.get("cuda")
    p.stack["cuda"] = {"version": cuda} if cuda else None
    p.stack["cudnn"] = {"version": str(p.request["cudnn"]) if p.asked("cudnn") else jp.get("cudnn")} if (jp.get("cudnn") or p.asked("cudnn")) else None
    p.os_key = "ubuntu-%s" % jp["ubuntu"]
    p.os_entry = p.idx.distros.get(p.os_key)
    if p.asked("tensorflow") and str(p.request["tensorflow"]).lower() not in _NONE_WORDS:
        p.add(["TensorFlow for Jetson is not covered by data/compat.yml (no facts); drop tensorflow on Jetson."])
    route_key = (jp.get("pytorch") or {}).get("route") if family in ((jp.get("pytorch") or {}).get("families") or []) else None
    route = p.idx.jetson_pytorch.get(route_key) if route_key else None
    p.python = _mm(p.request["python"]) if p.asked("python") else ((route or {}).get("python") or _os_python(p))
    p.stack["python"] = {"version": p.python} if p.python else None
    if p.request.get("pytorch") is not None and str(p.request["pytorch"]).lower() in _NONE_WORDS:
        return
    if route is None:
        p.warn("No PyTorch build for %s on JetPack %s is confirmed in data/compat.yml; the plan has no PyTorch."
               % (entry["name"], jp["version"]))
        return
    if route.get("from_pytorch_releases"):
        p.arch = "aarch64"
        p.gpus = [dict(entry, catalog_name=entry["name"], arch_name=p.idx.archs[entry["arch"]]["name"], cc=str(entry["cc"]))]
        p.driver = None
        if not p.asked("pytorch_variant") and route.get("variant"):
            p.request["pytorch_variant"] = route["variant"]
        p.stack["pytorch"] = _pick_pytorch(p)
        return
    if route.get("warning"):
        p.warn(route["warning"])
    if p.asked("pytorch") and not version_matches(p.request["pytorch"], route["version"]):
        p.add(["PyTorch %s was requested, but the known build for %s on JetPack %s is %s; use pytorch: '%s'."
               % (p.request["pytorch"], entry["name"], jp["version"], route["version"], _mm(route["version"]))])
    p.stack["pytorch"] = {"version": route["version"], "variant": route["variant"], "index_url": route.get("index_url"),
                          "cuda": jp.get("cuda"), "cudnn": jp.get("cudnn"), "torchvision": None, "torchaudio": None}


def _tf_out(rel):
    patches = rel.get("patches") or [rel["version"]]
    return {"version": patches[-1], "cuda": rel["cuda"], "cudnn": rel["cudnn"],
            "extra": "and-cuda" if rel.get("and_cuda") else None, "python": rel["python"]}


def _legacy_notes(p):
    for gpu in _kinds(p):
        if gpu.get("warning"):  # e.g. a device id the catalog lacks, placed by its chip
            p.warn(gpu["warning"])
        elif not gpu.get("known") and gpu.get("arch"):
            p.warn("GPU %s is not in the GPU catalog; it is planned from its compute capability %s (%s). Regenerate "
                   "data/gpu_catalog.yml (make gpu-catalog) or add it to data/compat.yml."
                   % (gpu.get("catalog_name"), gpu.get("cc"), gpu.get("arch_name")))
        arch = p.idx.archs.get(gpu.get("arch")) or {}
        if arch.get("last_driver_branch") and arch["last_driver_branch"] >= (p.idx.oldest_branch or 0):
            last_cuda = (arch.get("last_cuda_by_cc") or {}).get(gpu.get("cc")) or arch.get("last_cuda")
            last_cudnn = p.idx.last_cudnn_for(gpu.get("cc"))
            extra = (" cuDNN %s is its last cuDNN." % _mm(last_cudnn["version"])
                     if last_cudnn is not None and last_cudnn is not p.idx.cudnn[0] else "")
            p.note("%s is a legacy GPU: R%s is its last driver branch and CUDA %s its last toolkit.%s"
                   % (_gpu_label(gpu), arch["last_driver_branch"], last_cuda, extra))


def _resolve_gpus(p):
    p.add(rule_gpus_supported(p))
    _legacy_notes(p)
    p.driver = _pick_driver(p)
    if p.driver is not None:
        flavour = _pick_modules(p)
        entry = p.driver.get("entry") or {}
        method = _driver_method(p)
        release = driver_release(p, p.driver["branch"], method, (flavour,)) if flavour else None
        if method == "distro":
            packages = [release["package"]] if release else None
        else:
            packages = _driver_packages(p, flavour) if entry.get("packages") else None
        p.stack["driver"] = {
            "branch": p.driver["branch"],
            "min_version": None,  # filled below, once CUDA is known
            "kernel_modules": flavour,
            "method": method,
            "version_available": p.installed if p.driver.get("installed") else (release or {}).get("version"),
            "packages": packages,
            "designation": entry.get("designation"),
            "eol": entry.get("eol"),
            "installed": p.installed,
            "change": bool(p.driver.get("changed")) or (p.installed is None),
        }
    p.python = _pick_python(p)
    p.stack["python"] = {"version": p.python} if p.python else None
    tf = _pick_tensorflow(p)
    cuda_rel = _pick_cuda(p, tf)
    if tf is not None:
        p.add(rule_tensorflow(p, tf, cuda_rel))
        p.stack["tensorflow"] = _tf_out(tf)
    p.stack["cuda"] = _cuda_out(p, cuda_rel) if cuda_rel else None
    cudnn = _pick_cudnn(p, cuda_rel, tf)
    p.stack["cudnn"] = {"version": cudnn["version"]} if cudnn else None
    p.stack["pytorch"] = _pick_pytorch(p)
    p.stack["nccl"] = _pick_nccl(p, cuda_rel)
    p.stack["fabric_manager"] = _pick_fabric_manager(p)
    p.stack["container_toolkit"] = _pick_container_toolkit(p)
    if p.stack["driver"] is not None:
        p.stack["driver"]["min_version"] = _driver_min_version(p, cuda_rel)


def _driver_min_version(p, cuda_rel):
    """Lowest driver version of the branch that runs everything planned natively."""
    branch = p.driver["branch"]
    if p.driver.get("installed") and p.driver.get("version"):
        return p.driver["version"]
    entry = p.driver.get("entry") or {}
    candidates = [v for v in entry.get("versions") or [] if driver_branch_of(v) == branch]
    best = min(candidates, key=parse_version) if candidates else "%s.0" % branch
    if cuda_rel and cuda_rel.get("toolkit_driver_min") and driver_branch_of(cuda_rel["toolkit_driver_min"]) == branch:
        if compare_versions(cuda_rel["toolkit_driver_min"], best) > 0:
            best = cuda_rel["toolkit_driver_min"]
    return best


# --------------------------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------------------------


def rule_request_fits_host(p):
    """Requests that cannot apply to this kind of host (checked before any choice)."""
    errors = []
    if p.asked("jetpack") and p.gpus and not p.jetson:
        errors.append("jetpack: '%s' was requested, but this host has discrete NVIDIA GPUs (%s, %s), not a Jetson module; "
                      "JetPack applies to Jetson modules only: drop jetpack." % (p.request["jetpack"], _gpu_label(p.gpus[0]), p.arch))
    machine = p.idx.machines.get(p.arch) or {}
    wants_tf = p.asked("tensorflow") and str(p.request["tensorflow"]).lower() not in _NONE_WORDS and p.request["tensorflow"] is not False
    if wants_tf and p.gpus and not p.jetson and not machine.get("tensorflow_cuda"):
        errors.append("tensorflow: '%s' was requested, but TensorFlow ships no CUDA build for %s (data/compat.yml machines.%s); "
                      "drop tensorflow, or plan an x86_64 host." % (p.request["tensorflow"], p.arch, p.arch))
    return errors


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
        "stack": {key: None for key in ("driver", "cuda", "cudnn", "nccl", "pytorch", "tensorflow", "python",
                                        "fabric_manager", "jetpack", "container_toolkit")},
        "data_date": str(data.get("date", "")),
    }


def resolve(data, host, request=None, gpu_index=None):
    """Plan a stack for ``host`` (``dlbox_host`` facts shape) and ``request``; see the module docstring.

    ``gpu_index``: a ``plugin_utils.gpu_catalog.GpuIndex``; without it the host's GPUs must come classified.

    Returns ``{ok, errors, warnings, notes, host, stack, data_date}``.
    """
    problems = check_request(request) + check_host_arch(data, (host or {}).get("arch") or DEFAULT_MACHINE, _input_name(host))
    if problems:
        return refused_plan(data, problems, host)
    p = _Plan(data, host, request, gpu_index)
    p.add(list(p.host.get("planning_errors") or []))
    p.add(rule_request_fits_host(p))
    if p.os_key and p.os_entry is None:
        p.add(["OS '%s' is not one dlbox.stack plans for: data/compat.yml knows %s. Give os as "
               "<distro>-<version>, e.g. ubuntu-22.04 or debian-12." % (p.os_key, ", ".join(sorted(p.idx.distros)))])
    p.limits = _gpu_limits(p)
    if p.jetson:
        _resolve_jetson(p)
    elif not p.gpus:
        if not p.host.get("planning_errors"):
            _resolve_cpu(p)
    else:
        _resolve_gpus(p)
    virt = p.host.get("virtualization") or {}
    if virt.get("container") and p.stack.get("driver"):
        p.warn("This host is a container (%s): the NVIDIA driver comes from the machine that runs it and cannot be "
               "installed here." % (virt.get("container_type") or "unknown type"))
    if p.host.get("secure_boot") and p.stack.get("driver"):
        p.note("Secure Boot is on: the DKMS-built NVIDIA modules must be signed with an enrolled key (MOK).")
    return {
        "ok": not p.errors,
        "errors": p.errors,
        "warnings": p.warnings,
        "notes": p.notes,
        "host": _host_summary(p),
        "stack": p.stack,
        "data_date": p.idx.date,
    }
