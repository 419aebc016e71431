# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Refresh dlbox.stack's vendor data from the real package indexes, and say what changed.

    python tools/data_refresh.py [--data data/compat.yml] [--write] [--check] [--report FILE]
                                 [--ubuntu-mirror URL|DIR] [--debian-mirror URL|DIR]
                                 [--debian-security-mirror URL|DIR] [--pypi URL | --pypi-recorded DIR]
                                 [--record DIR] [--today YYYY-MM-DD]

Reads, for every OS in ``distro_drivers.distros`` of the data file, the ``Packages`` indexes named
in its ``distro.sources`` (Ubuntu: restricted/multiverse of the release, -updates and -security
pockets; Debian: contrib/non-free of the release, -updates, -backports and -security), and PyPI's
JSON documents of torch, tensorflow, tensorflow-cpu, cuda-toolkit and the ``nvidia-*`` wheels. It
prints a report of what differs from the data: driver branches each release ships (at which
versions, in which flavours, and which branch a transitional package really installs), the
distribution's CUDA toolkit, NCCL and cuDNN packages, driver versions the archives ship that
``driver_branches`` does not list, and framework / wheel releases that the data does not know yet.

``--write`` rewrites the machine-maintained section ``distro_drivers`` (and only it) in place; the
report is the review. Everything else the report names is for a maintainer to edit by hand.
``--check`` only reports (even with ``--write``) and exits 1 when the report has differences. ``--record DIR`` saves trimmed copies of what
was read (the tests' recorded copies: ``DIR/{ubuntu,debian,debian-security}/dists/...`` and
``DIR/pypi/``). A source that cannot be read is reported, and its OS keeps its previous entry.
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import sys
import time
from pathlib import Path

import yaml
from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from dlboxdata import indexes, pypi

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT / "data" / "compat.yml"
# Where the archives live by default (the same mirrors tests/images uses); each is an option.
DEFAULT_MIRRORS = {
    "ubuntu": "http://archive.ubuntu.com/ubuntu",
    "debian": "http://deb.debian.org/debian",
    "debian-security": "http://deb.debian.org/debian-security",
}
# PyPI projects the report reads (names only; what they contain is read, never assumed).
PYPI_PROJECTS = (
    "torch",
    "tensorflow",
    "tensorflow-cpu",
    "cuda-toolkit",
    "nvidia-cuda-runtime",
    "nvidia-cuda-runtime-cu12",
    "nvidia-cuda-nvcc",
    "nvidia-cuda-nvcc-cu12",
    "nvidia-cudnn-cu12",
    "nvidia-cudnn-cu13",
    "nvidia-nccl-cu12",
    "nvidia-nccl-cu13",
)
SECTION = "distro_drivers"

# Package-name patterns (the archives' naming schemes) -> flavour. Ubuntu names the branch;
# Debian's unversioned packages carry it in their version.
_UBUNTU_DRIVER = re.compile(r"^nvidia-driver-(?P<branch>\d+)(?P<server>-server)?(?P<open>-open)?$")
_UBUNTU_HEADLESS = re.compile(r"^nvidia-headless-(?P<branch>\d+)(?P<server>-server)?(?P<open>-open)?$")
_DEBIAN_FLAVOURS = (
    (re.compile(r"^nvidia-driver$"), "desktop"),
    (re.compile(r"^nvidia-open-kernel-dkms$"), "desktop-open"),
    (re.compile(r"^nvidia-tesla-(?P<branch>\d+)-driver$"), "tesla"),
    (re.compile(r"^nvidia-tesla-(?P<branch>\d+)-open-kernel-dkms$"), "tesla-open"),
    (re.compile(r"^nvidia-legacy-(?P<branch>\d+)xx-driver$"), "legacy"),
)
# cuda_toolkit: Canonical's packaging of NVIDIA's CUDA ("cuda-toolkit", Ubuntu 26.04's multiverse: source cuda-meta-13-1,
# files in /usr/local/cuda-<major>.<minor> as in NVIDIA's repository; Ubuntu 26.04 release notes, "NVIDIA CUDA Toolkit -
# Now available in Ubuntu") first where the archive has it, else Debian's repackaged nvidia-cuda-toolkit (/usr/bin/nvcc).
_LIBRARIES = {"cuda_toolkit": ("cuda-toolkit", "nvidia-cuda-toolkit"), "nccl": ("libnccl2",), "cudnn": ("nvidia-cudnn",)}
_LIBRARY_NAMES = {name for names in _LIBRARIES.values() for name in names}
_CUDA_NVCC = re.compile(r"^cuda-nvcc-(?P<major>\d+)-(?P<minor>\d+)$")  # the compiler of Canonical's cuda-toolkit
# Canonical's versioned toolkit meta (cuda-toolkit-13-1, which the unversioned cuda-toolkit depends on): the data names it,
# so that cuda_method: distro installs that CUDA X.Y and an archive update to another X.Y never moves it.
_CUDA_TOOLKIT_XY = re.compile(r"^cuda-toolkit-(?P<major>\d+)-(?P<minor>\d+)$")
_RECORD_FIELDS = ("Package", "Source", "Version", "Architecture", "Depends", "Provides", "Filename", "SHA256", "Description")
_USED_NAMES = (_UBUNTU_DRIVER, _UBUNTU_HEADLESS, _CUDA_NVCC, _CUDA_TOOLKIT_XY, *(flavour[0] for flavour in _DEBIAN_FLAVOURS))


class RefreshError(RuntimeError):
    """The data file or the command line is not usable."""


# ----------------------------------------------------------------------------------------------
# Reading the archives
# ----------------------------------------------------------------------------------------------
def branch_of(version):
    """The driver branch of an upstream version: ``580.95.05`` -> 580; None when it is not one."""
    match = re.match(r"^(\d{3})\.", version)
    return int(match.group(1)) if match else None


def merged_packages(archive_for, sources, record=None):
    """``{package: (stanza, suite, pocket_kind)}`` over the sources, newest version winning per kind.

    ``pocket_kind`` is ``default`` or ``backports`` (backports are not installed unless asked for,
    so they never replace a default pocket's version). Returns ``(default, backports, read, problems)``.
    """
    chosen = {"default": {}, "backports": {}}
    read, problems = [], []
    for source in sources:
        archive = archive_for(source["archive"])
        for suite in source["suites"]:
            kind = "backports" if suite.endswith("-backports") else "default"
            for component in source["components"]:
                try:
                    stanzas = archive.packages(suite, component, source.get("arch", "amd64"))
                except indexes.IndexError_ as exc:
                    problems.append(str(exc))
                    continue
                read.append(f"{source['archive']}:{suite}/{component}")
                kept = []
                for stanza in stanzas:
                    name = stanza.get("Package", "")
                    if name not in _LIBRARY_NAMES and not any(p.match(name) for p in _USED_NAMES):
                        continue
                    kept.append(stanza)
                    have = chosen[kind].get(name)
                    if have is None or indexes.compare_versions(stanza["Version"], have[0]["Version"]) > 0:
                        chosen[kind][name] = (stanza, suite)
                if record is not None:
                    record(source["archive"], suite, component, source.get("arch", "amd64"), kept)
    return chosen["default"], chosen["backports"], read, problems


def _transitional_target(name, packages, pattern):
    """Follow ``Depends`` from ``name`` through transitional packages of the same naming scheme.

    Returns ``(final package, its branch, chain)``; the final package is the first one whose
    ``Depends`` names no other branch's package of the scheme.
    """
    chain = [name]
    current = name
    while True:
        stanza = packages[current][0]
        own = pattern.match(current)
        nxt = None
        for dep in indexes.depends_names(stanza):
            match = pattern.match(dep)
            if match and match.group("branch") != own.group("branch") and dep in packages and dep not in chain:
                nxt = dep
                break
        if nxt is None:
            return current, int(own.group("branch")), chain
        chain.append(nxt)
        current = nxt


def _flavour_entry(name, packages, pattern):
    stanza, suite = packages[name]
    entry = {
        "package": name,
        "version": indexes.upstream_version(stanza["Version"]),
        "package_version": stanza["Version"],
        "suite": suite,
    }
    final, final_branch, chain = _transitional_target(name, packages, pattern)
    own_branch = int(pattern.match(name).group("branch"))
    entry["pulls_branch"] = final_branch if final_branch != own_branch else None
    if len(chain) > 1:
        entry["pulls"] = final
    return entry


def ubuntu_branches(packages):
    """Branches from Ubuntu's ``nvidia-driver-<branch>[-server][-open]`` (+ headless) metapackages."""
    branches = {}
    for name in packages:
        match = _UBUNTU_DRIVER.match(name)
        if not match:
            continue
        flavour = ("server" if match["server"] else "desktop") + ("-open" if match["open"] else "")
        entry = _flavour_entry(name, packages, _UBUNTU_DRIVER)
        headless = name.replace("nvidia-driver-", "nvidia-headless-", 1)
        if headless in packages:
            entry["headless"] = headless
            hl = _flavour_entry(headless, packages, _UBUNTU_HEADLESS)
            if hl["pulls_branch"] != entry["pulls_branch"]:
                entry["headless_pulls_branch"] = hl["pulls_branch"]
        branches.setdefault(int(match["branch"]), {})[flavour] = entry
    return branches


def debian_branches(packages):
    """Branches from Debian's ``nvidia-driver``, ``nvidia-open-kernel-dkms``, ``nvidia-tesla-*``, legacy."""
    branches = {}
    for name in sorted(packages):
        for pattern, flavour in _DEBIAN_FLAVOURS:
            match = pattern.match(name)
            if not match:
                continue
            stanza, suite = packages[name]
            version = indexes.upstream_version(stanza["Version"])
            real = branch_of(version)
            named = int(match["branch"]) if "branch" in pattern.groupindex else None
            branch = named if named is not None else real
            if branch is None:
                continue
            entry = {"package": name, "version": version, "package_version": stanza["Version"], "suite": suite,
                     "pulls_branch": real if named is not None and real is not None and real != named else None}
            branches.setdefault(branch, {})[flavour] = entry
    return branches


def library_entry(kind, packages):
    """The distribution's CUDA toolkit / NCCL / cuDNN package, read from its version, or None."""
    for name in _LIBRARIES[kind]:
        if name not in packages:
            continue
        stanza, suite = packages[name]
        upstream = indexes.upstream_version(stanza["Version"])
        entry = {"package": name, "package_version": stanza["Version"], "suite": suite}
        if kind == "cuda_toolkit" and name == "cuda-toolkit":
            # Canonical's cuda-toolkit "13.1.1-0ubuntu1": the CUDA release; nvcc's own version is cuda-nvcc-13-1's
            # ("13.1.115-0ubuntu1"); the files are in /usr/local/cuda-13.1, nvcc in its bin/ (not on PATH).
            entry["version"] = upstream
            major_minor = ".".join(upstream.split(".")[:2])
            versioned = packages.get("cuda-toolkit-%s" % major_minor.replace(".", "-"))
            if versioned is not None:
                # "cuda-toolkit-13-1" (Depends of cuda-toolkit): the package of exactly this X.Y, installed by the cuda role
                entry.update(package=versioned[0]["Package"], package_version=versioned[0]["Version"], suite=versioned[1])
                entry["version"] = indexes.upstream_version(versioned[0]["Version"])
            compiler = packages.get("cuda-nvcc-%s" % major_minor.replace(".", "-"))
            entry["nvcc"] = indexes.upstream_version(compiler[0]["Version"]) if compiler else upstream
            entry["home"] = "/usr/local/cuda-%s" % major_minor
        elif kind == "cuda_toolkit":
            # "12.4.131~12.4.1": nvcc's own version, then the CUDA release it belongs to.
            nvcc, release = (upstream.split("~", 1) + [""])[:2]
            entry["version"] = release or nvcc
            entry["nvcc"] = nvcc
        elif kind == "nccl":
            match = re.match(r"^\d+\.\d+\.\d+", upstream)
            entry["version"] = match.group(0) if match else upstream
        else:
            # "9.0.0.312~cuda12": cuDNN's version, then the CUDA it was built for.
            version, cuda = (upstream.split("~cuda", 1) + [""])[:2]
            entry["version"] = version
            match = re.match(r"^\d+(?:\.\d+)*", cuda)
            entry["cuda"] = match.group(0) if match else None
            entry["downloads_from_nvidia"] = True
        return entry
    return None


def refresh_distro(os_id, method, archive_for, record=None):
    """A fresh ``distro`` method entry for one OS (same sources), plus what was read and what failed."""
    sources = method.get("sources") or []
    if not sources:
        raise RefreshError(f"{SECTION}.distros.{os_id}.distro.sources is empty: name the archive, suites and components")
    default, backports, read, problems = merged_packages(archive_for, sources, record)
    family = "ubuntu" if sources[0]["archive"] == "ubuntu" else "debian"
    pick = ubuntu_branches if family == "ubuntu" else debian_branches
    fresh = {"sources": sources}
    fresh["branches"] = _branch_list(pick(default))
    extra = pick(backports)
    newer = {}
    for branch, flavours in extra.items():
        for flavour, entry in flavours.items():
            base = pick(default).get(branch, {}).get(flavour)
            if base is None or indexes.compare_versions(entry["package_version"], base["package_version"]) > 0:
                newer.setdefault(branch, {})[flavour] = entry
    if newer:
        fresh["backports"] = _branch_list(newer)
    for kind in _LIBRARIES:
        fresh[kind] = library_entry(kind, default)
    return fresh, read, problems


def _branch_list(branches):
    return [{"branch": branch, "flavours": dict(sorted(branches[branch].items()))} for branch in sorted(branches, reverse=True)]


# ----------------------------------------------------------------------------------------------
# Comparing with the data
# ----------------------------------------------------------------------------------------------
def _flat(method):
    """``{(branch, flavour): entry}`` of a method entry's ``branches`` list."""
    return {(b["branch"], f): e for b in (method or {}).get("branches") or [] for f, e in (b.get("flavours") or {}).items()}


def _describe(entry):
    text = f"{entry['version']} ({entry.get('suite')})"
    if entry.get("pulls_branch"):
        text += f", transitional: installs {entry['pulls_branch']}" + (f" via {entry['pulls']}" if entry.get("pulls") else "")
    return text


def diff_distro(os_id, old, new):
    """Readable lines for one OS's ``distro`` method: + added, - removed, ~ changed."""
    lines = []
    before, after = _flat(old), _flat(new)
    for key in sorted(set(before) | set(after), key=lambda k: (-k[0], k[1])):
        branch, flavour = key
        label = f"{os_id} distro {branch} {flavour}"
        if key not in before:
            lines.append(f"  + {label}: {_describe(after[key])}")
        elif key not in after:
            lines.append(f"  - {label}: was {_describe(before[key])}")
        else:
            was, now = before[key], after[key]
            changes = []
            if was.get("package_version") != now.get("package_version"):
                changes.append(f"{was.get('package_version')} -> {now.get('package_version')}")
            if was.get("pulls_branch") != now.get("pulls_branch"):
                changes.append(f"branch mapping: installs {was.get('pulls_branch') or branch} -> {now.get('pulls_branch') or branch}")
            if was.get("suite") != now.get("suite"):
                changes.append(f"pocket {was.get('suite')} -> {now.get('suite')}")
            if changes:
                lines.append(f"  ~ {label}: " + "; ".join(changes))
    for part in ("backports",):
        b_old, b_new = _flat({"branches": (old or {}).get(part)}), _flat({"branches": new.get(part)})
        for key in sorted(set(b_old) | set(b_new), key=lambda k: (-k[0], k[1])):
            if b_old.get(key, {}).get("package_version") != b_new.get(key, {}).get("package_version"):
                now = b_new.get(key)
                lines.append(f"  {'~' if key in b_old else '+'} {os_id} {part} {key[0]} {key[1]}: "
                             + (_describe(now) if now else "no longer newer than the release"))
    for kind in _LIBRARIES:
        was, now = (old or {}).get(kind), new.get(kind)
        if (was or {}).get("package_version") != (now or {}).get("package_version"):
            lines.append(f"  {'~' if was and now else '+' if now else '-'} {os_id} {kind}: "
                         f"{(was or {}).get('version', 'none')} -> {(now or {}).get('version', 'none')}"
                         + (f" ({now['package']} {now['package_version']}, {now['suite']})" if now else ""))
    return lines


def driver_branch_gaps(data, distros):
    """Real driver versions the archives ship that ``driver_branches`` does not list (review by hand)."""
    known = {int(b["branch"]): set(b.get("versions") or []) for b in data.get("driver_branches") or []}
    seen = {}
    for os_id, entry in distros.items():
        for part in ("branches", "backports"):
            for (branch, flavour), flav in _flat({"branches": (entry.get("distro") or {}).get(part)}).items():
                if flav.get("pulls_branch"):
                    continue
                real = branch_of(flav["version"])
                if real != branch:
                    continue
                seen.setdefault(branch, {}).setdefault(flav["version"], set()).add(os_id)
    lines = []
    for branch in sorted(seen, reverse=True):
        if branch not in known:
            where = sorted({o for oses in seen[branch].values() for o in oses})
            lines.append(f"  ! branch {branch} is shipped ({', '.join(where)}) but has no driver_branches entry")
            continue
        missing = sorted((v for v in seen[branch] if v not in known[branch]), key=indexes.version_key)
        if missing:
            lines.append(f"  ? branch {branch}: " + ", ".join(f"{v} ({', '.join(sorted(seen[branch][v]))})" for v in missing)
                         + " not in driver_branches.versions")
    return lines


def _vkey(text):
    try:
        return Version(text)
    except InvalidVersion:
        return Version("0")


def _minor(text):
    return ".".join(text.split(".")[:2])


def _spec_equal(left, right):
    try:
        return SpecifierSet(left or "") == SpecifierSet(right or "")
    except ValueError:
        return (left or "") == (right or "")


def _python_floor(spec):
    match = re.search(r">=\s*(\d+\.\d+)", spec or "")
    return match.group(1) if match else None


def _file_requires_python(project, version):
    values = {f.get("requires_python") for f in pypi.files(project, version) if f.get("requires_python")}
    return sorted(values)[0] if values else None


def framework_lines(label, project, releases, extras_check=None):
    """Releases on PyPI vs a data list of ``{version: "X.Y", patches: [...], python: {min}}``."""
    lines = []
    on_pypi = pypi.release_versions(project)
    patches = {p: r for r in releases for p in r.get("patches") or []}
    minors = {r["version"]: r for r in releases}
    oldest = min((Version(m) for m in minors), default=None)
    newest = max((Version(m) for m in minors), default=None)
    for version in sorted(on_pypi, key=_vkey):
        if version in patches or oldest is None or _vkey(version) < oldest:
            continue
        minor = _minor(version)
        if minor in minors:
            lines.append(f"  + {label} {version}: new patch of {minor} (add to its patches)")
        elif Version(minor) > newest:
            lines.append(f"  + {label} {version}: new release, no {minor} entry in the data yet")
        else:
            lines.append(f"  + {label} {version}: on PyPI, no {minor} entry in the data")
    for version, release in sorted(patches.items(), key=lambda kv: _vkey(kv[0])):
        if version not in on_pypi:
            lines.append(f"  - {label} {version}: in the data, but PyPI has no (unyanked) release of it")
            continue
        floor = _python_floor(_file_requires_python(project, version))
        data_floor = (release.get("python") or {}).get("min")
        if floor and data_floor and floor != data_floor:
            lines.append(f"  ~ {label} {version}: PyPI Requires-Python >={floor}, data python.min {data_floor}")
    if extras_check:
        lines.extend(extras_check(project, minors))
    return lines


def torch_pins(project, minors):
    """The newest torch's exact pins (CUDA toolkit, cuDNN, NCCL) vs its data entry's PyPI default variant."""
    latest = (project.get("info") or {}).get("version")
    release = minors.get(_minor(latest or ""))
    if not latest or release is None:
        return []
    pins = {r.name: r.pinned() for r in pypi.requirements(project) if r.pinned() and r.extra is None}
    default = next((v for v in release.get("variants") or [] if v.get("name") == release.get("pypi_default")), {})
    lines = []
    cuda = pins.get("cuda-toolkit")
    if cuda and default and _minor(cuda) != default.get("cuda"):
        lines.append(f"  ~ torch {latest}: PyPI pins cuda-toolkit=={cuda}; data pypi_default {default.get('name')} is CUDA {default.get('cuda')}")
    for name, pin in sorted(pins.items()):
        if name.startswith("nvidia-cudnn") and default and pin != default.get("cudnn"):
            lines.append(f"  ~ torch {latest}: PyPI pins {name}=={pin}; data variant {default.get('name')} cudnn {default.get('cudnn')}")
    return lines


def tensorflow_extras(project, minors):
    """The newest tensorflow's ``[and-cuda]`` ranges vs the data's ``and_cuda``."""
    latest = (project.get("info") or {}).get("version")
    release = minors.get(_minor(latest or ""))
    if not latest or release is None:
        return []
    wanted = {"cuda": "nvidia-cuda-runtime-cu12", "cudnn": "nvidia-cudnn-cu12", "nccl": "nvidia-nccl-cu12"}
    found = {r.name: r.specifier for r in pypi.requirements(project) if r.extra == "and-cuda"}
    data = release.get("and_cuda") or {}
    lines = []
    for key, name in wanted.items():
        spec = found.get(name)
        value = data.get(key)
        if spec is None and value is None:
            continue
        same = _spec_equal(spec, value) or (value and spec == f"=={value}")
        if not same:
            lines.append(f"  ~ tensorflow {latest} [and-cuda] {name}: PyPI '{spec}', data and_cuda.{key} '{value}'")
    return lines


def wheel_lines(projects, data):
    """nvidia-* wheels and cuda-toolkit on PyPI vs the data's CUDA releases, cuDNN and NCCL lists."""
    lines = []
    cuda_known = {r["version"] for r in (data.get("cuda") or {}).get("releases") or []}
    updates_known = {u["version"] for r in (data.get("cuda") or {}).get("releases") or [] for u in r.get("updates") or []}
    oldest_cuda = min((Version(v) for v in cuda_known), default=Version("0"))
    for name in ("cuda-toolkit", "nvidia-cuda-runtime", "nvidia-cuda-nvcc"):
        project = projects.get(name)
        if not project:
            continue
        minors = sorted({_minor(v) for v in pypi.release_versions(project) if _vkey(v) >= oldest_cuda}, key=_vkey)
        new = [m for m in minors if m not in cuda_known]
        if new:
            lines.append(f"  + {name}: CUDA {', '.join(new)} on PyPI, not in cuda.releases")
        if name == "cuda-toolkit":
            unknown = [v for v in pypi.release_versions(project) if _minor(v) in cuda_known and v not in updates_known]
            if unknown:
                lines.append(f"  + cuda-toolkit: {', '.join(sorted(unknown, key=_vkey))} on PyPI, not in cuda.releases[].updates")
    for name, key in (("nvidia-cudnn-cu12", "cudnn"), ("nvidia-cudnn-cu13", "cudnn"), ("nvidia-nccl-cu12", "nccl"), ("nvidia-nccl-cu13", "nccl")):
        project = projects.get(name)
        if not project:
            continue
        known = [e["version"] for e in data.get(key) or []]
        newest = max(known, key=_vkey) if known else "0"
        new = [v for v in pypi.release_versions(project) if _vkey(v) > _vkey(newest)]
        if new:
            lines.append(f"  + {name}: {', '.join(sorted(new, key=_vkey))} newer than the newest {key} entry ({newest})")
    return lines


# ----------------------------------------------------------------------------------------------
# Writing the section
# ----------------------------------------------------------------------------------------------
SECTION_HEADER = """\
# ---------------------------------------------------------------------------------------------------
# What each OS can really install, per install method. MACHINE-MAINTAINED: `make data-refresh`
# (tools/data_refresh.py --write) rewrites this section from the live archives; its report is the
# review. Edit by hand only `sources` (which indexes to read) and the nvidia_repo entries.
#   distros.<os id>                 key of os.distros
#     distro:                       the OS's own archive (apt, no extra repository)
#       sources: [{archive: ubuntu|debian|debian-security, suites: [...], components: [...]}]
#       branches: newest first; for each driver branch the archive names, per flavour:
#         flavours.<flavour>:       Ubuntu: desktop, desktop-open, server, server-open
#                                   (nvidia-driver-<branch>[-server][-open]; headless = nvidia-headless-...);
#                                   Debian: desktop (nvidia-driver), desktop-open (nvidia-open-kernel-dkms),
#                                   tesla / tesla-open (nvidia-tesla-<branch>-...), legacy (nvidia-legacy-<branch>xx-driver)
#           package, version (upstream), package_version (apt's), suite (pocket apt takes it from)
#           pulls_branch: null when the package installs its own branch; else the branch it really
#                         installs (a transitional package, found by following its Depends), `pulls`
#                         naming the package at the end of that chain
#       A branch is installable by this method when one of its flavours has pulls_branch: null.
#       backports: same shape, only entries newer than the release's (apt takes them only when asked)
#       cuda_toolkit / nccl / cudnn: the distribution's nvidia-cuda-toolkit / libnccl2 / nvidia-cudnn
#         (nvidia-cudnn downloads cuDNN from NVIDIA when installed), or null
#       date: the day a refresh last found a change here (a refresh that finds none leaves the file alone)
#     nvidia_repo:                  NVIDIA's CUDA repository: not readable from where this is refreshed,
#       verifiable: false           so nothing in it is confirmed here (grade U)
# ---------------------------------------------------------------------------------------------------
"""


_YAML_WORDS = ("null", "true", "false", "yes", "no", "on", "off", "y", "n")


def _scalar(value):
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str) and re.fullmatch(r"[A-Za-z][A-Za-z0-9+\-]*", value) and value.lower() not in _YAML_WORDS:
        return value
    return json.dumps(str(value))


def _flow(mapping):
    if isinstance(mapping, list):
        return "[" + ", ".join(_flow(v) if isinstance(v, (dict, list)) else _scalar(v) for v in mapping) + "]"
    return "{" + ", ".join(f"{k}: {_flow(v) if isinstance(v, (dict, list)) else _scalar(v)}" for k, v in mapping.items()) + "}"


def _wrapped_flow(prefix, mapping, width=158):
    """``prefix`` + a flow mapping, wrapped after commas so no line passes ``width`` columns."""
    items = [f"{k}: {_flow(v) if isinstance(v, (dict, list)) else _scalar(v)}" for k, v in mapping.items()]
    lines, current = [], prefix + "{"
    indent = " " * len(current)
    for pos, item in enumerate(items):
        piece = item + ("}" if pos == len(items) - 1 else ",")
        if current not in (prefix + "{", indent) and len(current) + 1 + len(piece) > width:
            lines.append(current)
            current = indent + piece
        else:
            current += ("" if current in (prefix + "{", indent) else " ") + piece
    lines.append(current if items else prefix + "{}")
    return lines


def render_section(section):
    """The YAML text of the ``distro_drivers`` section (header comment included)."""
    out = [SECTION_HEADER.rstrip("\n"), f"{SECTION}:"]
    for key in ("date", "source", "grade"):
        out.append(f"  {key}: {section[key] if key == 'date' else _scalar(section[key])}")
    out.append("  distros:")
    for os_id, methods in section["distros"].items():
        out.append(f"    {os_id}:")
        for method, entry in methods.items():
            out.append(f"      {method}:")
            for key, value in entry.items():
                if key in ("branches", "backports"):
                    out.append(f"        {key}:")
                    for branch in value:
                        out.append(f"          - branch: {branch['branch']}")
                        out.append("            flavours:")
                        for flavour, flav in branch["flavours"].items():
                            out.extend(_wrapped_flow(f"              {flavour}: ", flav))
                elif key == "sources":
                    out.append("        sources:")
                    for source in value:
                        out.extend(_wrapped_flow("          - ", source))
                elif key == "date":
                    out.append(f"        date: {value}")
                elif isinstance(value, dict):
                    out.extend(_wrapped_flow(f"        {key}: ", value))
                else:
                    out.append(f"        {key}: {_flow(value) if isinstance(value, list) else _scalar(value)}")
    return "\n".join(out) + "\n"


def replace_section(text, rendered):
    """``text`` (the data file) with the section replaced by ``rendered`` (appended when absent)."""
    lines = text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if line.startswith(f"{SECTION}:")), None)
    if start is None:
        return text.rstrip("\n") + "\n\n" + rendered
    while start > 0 and lines[start - 1].startswith("#"):
        start -= 1
    end = next((i for i in range(start + 1, len(lines)) if re.match(r"^[A-Za-z_]", lines[i]) and not lines[i].startswith("#")
                and not lines[i].startswith(f"{SECTION}:")), len(lines))
    while end > start and end < len(lines) and (lines[end - 1].startswith("#") or not lines[end - 1].strip()):
        end -= 1
    tail = "".join(lines[end:]).lstrip("\n")
    return "".join(lines[:start]) + rendered + ("\n" + tail if tail else "")


# ----------------------------------------------------------------------------------------------
# The run
# ----------------------------------------------------------------------------------------------
class Recorder:
    """Saves trimmed copies of the indexes and PyPI documents read (the tests' recorded copies)."""

    def __init__(self, folder):
        self.folder = Path(folder)

    def index(self, archive, suite, component, arch, stanzas):
        """Write the stanzas the refresh uses as ``<archive>/dists/<suite>/<component>/binary-<arch>/Packages``."""
        trimmed = [{k: s[k].split("\n")[0] if k == "Description" else s[k] for k in _RECORD_FIELDS if k in s} for s in stanzas]
        indexes.write_index(trimmed, self.folder / archive / "dists" / suite / component / f"binary-{arch}" / "Packages")

    def project(self, name, document):
        """Write one project document, one file entry per release (yanked only when all were)."""
        trimmed = pypi.trim_project(document)
        for version, entries in trimmed["releases"].items():
            if entries:
                first = dict(entries[0])
                first["yanked"] = all(e.get("yanked") for e in entries)
                trimmed["releases"][version] = [first]
        pypi.write_recorded(self.folder / "pypi", name, trimmed)


def _dates_to_text(value):
    if isinstance(value, datetime.date):
        return value.isoformat()
    if isinstance(value, dict):
        return {k: _dates_to_text(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_dates_to_text(v) for v in value]
    return value


def _same_dates_only(old_text, new_text):
    """True when two data texts differ only in ``date:`` lines (a refresh that found nothing new)."""
    def strip(text):
        return [line for line in text.splitlines() if not re.match(r"^\s*date: ", line)]
    return strip(old_text) == strip(new_text)


def load_data(path):
    """The data file as text and parsed (dates kept as text)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise RefreshError(f"cannot read {path}: {exc.strerror}") from exc
    try:
        data = _dates_to_text(yaml.safe_load(text))
    except yaml.YAMLError as exc:
        raise RefreshError(f"{path} is not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise RefreshError(f"{path}: not a mapping")
    return text, data


def run(args, out):
    """Refresh; write the report to ``out``; return the exit status."""
    started = time.monotonic()
    text, data = load_data(args.data)
    section = data.get(SECTION)
    if not isinstance(section, dict) or not isinstance(section.get("distros"), dict) or not section["distros"]:
        raise RefreshError(f"{args.data}: no '{SECTION}.distros' section to refresh (each OS needs distro.sources)")
    mirrors = dict(DEFAULT_MIRRORS)
    mirrors.update({k: v for k, v in (("ubuntu", args.ubuntu_mirror), ("debian", args.debian_mirror),
                                      ("debian-security", args.debian_security_mirror)) if v})
    archives = {}

    def archive_for(name):
        if name not in mirrors:
            raise RefreshError(f"unknown archive '{name}' in {SECTION}.distros.*.distro.sources (known: {', '.join(mirrors)})")
        return archives.setdefault(name, indexes.Archive(mirrors[name], timeout=args.timeout))

    recorder = Recorder(args.record) if args.record else None
    today = args.today or datetime.date.today().isoformat()
    report = [f"dlbox.stack data refresh, {today}: {args.data}"]
    changes = 0
    new_distros = {}
    diff_lines, problems, read = [], [], []
    t_archives = time.monotonic()
    for os_id, methods in section["distros"].items():
        methods = dict(methods or {})
        old = methods.get("distro") or {}
        fresh, os_read, os_problems = refresh_distro(os_id, old, archive_for, recorder.index if recorder else None)
        read += os_read
        problems += [f"{os_id}: {p}" for p in os_problems]
        if not os_read:
            problems.append(f"{os_id}: no index could be read; its entry is kept as it was")
            new_distros[os_id] = methods
            continue
        fresh["date"] = today
        fresh["source"] = "Packages of " + "; ".join(
            f"{s['archive']} {' '.join(s['suites'])} ({', '.join(s['components'])})" for s in fresh["sources"])
        fresh["grade"] = "P"
        ordered = {k: fresh[k] for k in ("sources", "branches", "backports", "cuda_toolkit", "nccl", "cudnn", "date", "source", "grade") if k in fresh}
        diff_lines += diff_distro(os_id, old, ordered)
        methods["distro"] = ordered
        methods.setdefault("nvidia_repo", {"verifiable": False, "note": "NVIDIA's CUDA repository cannot be read where this is refreshed",
                                           "source": "not read", "grade": "U"})
        new_distros[os_id] = {"distro": methods["distro"], **{k: v for k, v in methods.items() if k != "distro"}}
    t_archives = time.monotonic() - t_archives

    report.append("")
    report.append(f"== Distribution archives ({SECTION}; --write updates this section) ==")
    report.extend(diff_lines or ["  (no change)"])
    changes += len(diff_lines)
    gap_lines = driver_branch_gaps(data, new_distros)
    report.append("")
    report.append("== Driver versions the archives ship vs driver_branches (edit by hand) ==")
    report.extend(gap_lines or ["  (nothing new)"])
    changes += len(gap_lines)

    t_pypi = time.monotonic()
    index = pypi.PyPI(args.pypi, recorded=args.pypi_recorded, timeout=args.timeout)
    projects = {}
    for name in PYPI_PROJECTS:
        try:
            projects[name] = index.project(name)
        except pypi.PyPIError as exc:
            problems.append(f"PyPI {name}: {exc}")
            continue
        if recorder:
            recorder.project(name, projects[name])
    t_pypi = time.monotonic() - t_pypi
    pypi_lines = []
    if "torch" in projects:
        pypi_lines += framework_lines("torch", projects["torch"], (data.get("pytorch") or {}).get("releases") or [], torch_pins)
    if "tensorflow" in projects:
        pypi_lines += framework_lines("tensorflow", projects["tensorflow"], data.get("tensorflow") or [], tensorflow_extras)
    if "tensorflow-cpu" in projects:
        cpu = set(pypi.release_versions(projects["tensorflow-cpu"]))
        for release in data.get("tensorflow") or []:
            missing = [p for p in release.get("patches") or [] if p not in cpu]
            if missing:
                pypi_lines.append(f"  - tensorflow-cpu: no {', '.join(missing)} on PyPI")
    pypi_lines += wheel_lines(projects, data)
    report.append("")
    report.append("== PyPI vs pytorch / tensorflow / cuda / cudnn / nccl (edit by hand) ==")
    report.extend(pypi_lines or ["  (nothing new)"])
    changes += len(pypi_lines)

    if problems:
        report.append("")
        report.append("== Not read (best-effort sources; their entries are kept) ==")
        report.extend(f"  ! {p}" for p in problems)

    new_section = {"date": today, "source": section.get("source") or "Packages indexes of Ubuntu's and Debian's archives",
                   "grade": section.get("grade") or "P", "distros": new_distros}
    new_text = replace_section(text, render_section(new_section))
    written = False
    if args.write and not args.check and new_text != text and (diff_lines or not _same_dates_only(text, new_text)):
        Path(args.data).write_text(new_text, encoding="utf-8")
        written = True
    fetched = sum(entry[1] for a in archives.values() for entry in a.fetched)
    report.append("")
    report.append("== Summary ==")
    report.append(f"  indexes read: {len(read)} ({fetched / 1e6:.1f} MB) in {t_archives:.1f} s; "
                  f"PyPI documents: {index.requests} ({index.bytes / 1e6:.1f} MB) in {t_pypi:.1f} s; total {time.monotonic() - started:.1f} s")
    report.append(f"  differences: {len(diff_lines)} in {SECTION}, {len(gap_lines)} driver versions to review, "
                  f"{len(pypi_lines)} PyPI findings, {len(problems)} sources not read")
    pending = bool(diff_lines) or (new_text != text and not _same_dates_only(text, new_text))
    report.append(f"  {SECTION}: " + ("written to " + str(args.data) if written else
                                      "not written (run with --write to apply)" if pending else "unchanged"))
    out.write("\n".join(report) + "\n")
    if args.report:
        Path(args.report).parent.mkdir(parents=True, exist_ok=True)
        Path(args.report).write_text("\n".join(report) + "\n", encoding="utf-8")
    return 1 if args.check and (changes or pending) else 0


def parse_args(argv=None):
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=str(DEFAULT_DATA), help="the data file (default: data/compat.yml)")
    parser.add_argument("--write", action="store_true", help=f"rewrite the '{SECTION}' section in place")
    parser.add_argument("--check", action="store_true", help="report only (never write); exit 1 when the report has differences")
    parser.add_argument("--report", help="also write the report to this file")
    parser.add_argument("--ubuntu-mirror", help=f"Ubuntu archive base URL or local folder (default {DEFAULT_MIRRORS['ubuntu']})")
    parser.add_argument("--debian-mirror", help=f"Debian archive base URL or local folder (default {DEFAULT_MIRRORS['debian']})")
    parser.add_argument("--debian-security-mirror",
                        help=f"Debian security archive base URL or local folder (default {DEFAULT_MIRRORS['debian-security']})")
    parser.add_argument("--pypi", default=pypi.DEFAULT_BASE, help="PyPI JSON API base (default %(default)s)")
    parser.add_argument("--pypi-recorded", help="read PyPI documents from this folder of recorded copies instead")
    parser.add_argument("--record", help="save trimmed copies of everything read under this folder")
    parser.add_argument("--today", help="the date written into the section (default: today)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per download (default %(default)s)")
    return parser.parse_args(argv)


def main(argv=None):
    """Entry point."""
    args = parse_args(argv)
    if args.today and not re.fullmatch(r"\d{4}-\d{2}-\d{2}", args.today):
        print(f"data_refresh: --today must be YYYY-MM-DD, not {args.today!r}", file=sys.stderr)
        return 2
    try:
        return run(args, sys.stdout)
    except (RefreshError, indexes.IndexError_, pypi.PyPIError) as exc:
        print(f"data_refresh: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
