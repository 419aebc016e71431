# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Offline mode (dlbox_offline): what one plan needs from a mirror folder, and what that folder lacks.

Pure: the caller reads the folder (made by playbooks/mirror.yml) and the host's dpkg status and passes text and file
names in; nothing here touches a host or the network. The offline preflight (playbooks/offline.yml) refuses a run
with every missing artifact listed before any change; mirror.yml asks the same question to know what to fetch.

The folder:  apt/Packages + apt/*.deb (an apt "flat" repository: dpkg-scanpackages's index and the .debs it names:
             the OS archive's packages AND those of the vendor repositories the plan's roles install from, each
             downloaded by apt against the repository's signed index), wheels/*.whl (playbooks/wheelhouse.yml's
             wheelhouse), keys/<name>.asc (each vendor repository's key, written only with its pinned fingerprint; the
             roles take it from there instead of downloading it), manifest.json.
"""

from __future__ import annotations

import re

from ansible_collections.dlbox.stack.plugins.module_utils._nccl import parse_madison, pick_build
from ansible_collections.dlbox.stack.plugins.module_utils.versions import debian_version_compare as compare_versions

# Roles of the workstation whose packages come from a vendor's repository (keyring downloaded from the vendor, a
# sources list the role writes). The folder carries a role's packages when the caller names them (needs()'s vendor:
# the role's own decision of what it installs, playbooks/tasks/offline_vendor.yml); a role that runs without them is
# refused by name.
VENDOR_ROLES = {
    "nvidia_driver": "the NVIDIA driver (the OS archive's non-free section or NVIDIA's repository)",
    "cuda": "the CUDA toolkit (NVIDIA's CUDA repository)",
    "cudnn": "cuDNN (NVIDIA's CUDA repository or PyPI)",
    "nccl": "NCCL (NVIDIA's CUDA repository)",
    "docker": "Docker (Docker's repository or the OS archive)",
    "nvidia_container_toolkit": "the NVIDIA Container Toolkit (NVIDIA's repository)",
}
SWITCH_OF_ROLE = {
    "nvidia_driver": "dlbox_install_driver", "cuda": "dlbox_install_cuda",
    "cudnn": "dlbox_install_cudnn", "nccl": "dlbox_install_nccl", "docker": "dlbox_install_docker",
    "nvidia_container_toolkit": "dlbox_install_docker", "python_env": "dlbox_install_python_env",
}
# Why a vendor role is not carried at all (the others: only with a method the folder does not carry).
NOT_CARRIED = {
    "nvidia_driver": "its packages and DKMS module are for the target's running kernel, and its decision reads the "
                     "host (the installed driver, apt's simulation against the live repository, Secure Boot), which "
                     "the mirror does not know",
}
_NAME = re.compile(r"^[a-z0-9][a-z0-9+.-]+$")
_VERSION = re.compile(r"^[0-9A-Za-z.+~:-]+$")
# name=X.Y.Z-*: any Debian revision of upstream release X.Y.Z (how a role asks apt for a picked build)
_UPSTREAM_SPEC = re.compile(r"^([a-z0-9][a-z0-9+.-]+)=([0-9][0-9A-Za-z.+~]*)-\*$")


class OfflineError(ValueError):
    """Bad input to offline mode (the message names the variable)."""


def parse_packages(text):
    """An apt Packages index (dpkg-scanpackages output) -> {name: [stanza, ...]} (one per version in the index).

    A stanza: {package, version, architecture, filename, size, sha256, depends (list of alternative groups, each a
    list of package names), provides (names)}."""
    index = {}
    for block in re.split(r"\n\s*\n", (text or "").strip()):
        fields = {}
        key = None
        for line in block.splitlines():
            if line[:1] in (" ", "\t") and key:
                fields[key] += "\n" + line.strip()
            elif ":" in line:
                key, _sep, value = line.partition(":")
                key = key.strip().lower()
                fields[key] = value.strip()
        name = fields.get("package")
        if not name:
            continue
        depends = []
        for field in ("pre-depends", "depends"):
            depends.extend(parse_relations(fields.get(field, ""), versions=True))
        index.setdefault(name, []).append({
            "package": name,
            "version": fields.get("version", ""),
            "architecture": fields.get("architecture", ""),
            "filename": fields.get("filename", ""),
            "size": int(fields.get("size", "0") or 0),
            "sha256": fields.get("sha256", ""),
            "depends": depends,
            "provides": [group[0] for group in parse_relations(fields.get("provides", ""))],
            "text": block.strip(),
        })
    return index


def parse_relations(text, versions=False):
    """'a (>= 1) | b, c:any' -> [['a', 'b'], ['c']] (architecture qualifiers and restrictions dropped); with
    versions=True each alternative is (name, op, version), op and version None where the relation has none."""
    groups = []
    for group in (text or "").split(","):
        names = []
        for alternative in group.split("|"):
            match = re.search(r"\(\s*(<<|<=|>=|>>|=|<|>)\s*([^)\s]+)\s*\)", alternative)
            name = re.sub(r"\(.*?\)|\[.*?\]|<.*?>", "", alternative).strip().split(":")[0].strip()
            if name:
                names.append((name, match.group(1), match.group(2)) if versions and match
                             else (name, None, None) if versions else name)
        if names:
            groups.append(names)
    return groups


def satisfies(version, op, wanted):
    """Whether `version` meets the relation (op, wanted); no op: any version does."""
    if op is None:
        return version is not None
    if version is None:
        return False
    order = compare_versions(version, wanted)
    return {"<<": order < 0, "<=": order <= 0, "<": order <= 0, "=": order == 0,
            ">=": order >= 0, ">": order >= 0, ">>": order > 0}[op]


def parse_dpkg_status(text):
    """`dpkg-query -W -f '${Package}\\t${Status}\\t${Version}\\t${Provides}\\n'` -> {name: version} of what is
    installed; a virtual package an installed one provides maps to '' (it meets unversioned relations only)."""
    installed = {}
    provided = {}
    for line in (text or "").splitlines():
        parts = line.split("\t")
        if len(parts) >= 3 and parts[1].strip().endswith(" installed"):
            installed[parts[0].strip().split(":")[0]] = parts[2].strip()
            if len(parts) >= 4:
                for group in parse_relations(parts[3]):
                    provided[group[0]] = ""
    provided.update(installed)
    return provided


def needs(workstation, packages, python_env=None, vendor=None):
    """What one plan needs from the mirror folder.

    workstation: the plan's role decision (dlbox_workstation: run, kernel_headers); packages: the apt packages common
    installs (common_packages + common_extra_packages); python_env: {environments, find_links, no_index,
    host_wheels, apt (python_env's own apt packages: python_env_apt())} where python_env runs; vendor: {packages:
    {role: [name or name=version, ...]} (what each vendor role installs from its repository), picks: {role:
    {packages, version, cuda}} (a role whose build is picked from the repository's candidates: nccl_request()),
    nothing: {role: why} (a role that runs but installs nothing from its repository, by its own decision), unmet:
    [{role, name, why}] (what a role's decision needs and cannot have: listed as missing), decided: {role: the role
    module's decision with its needs (role_module('decide')): what it installs, picks, adds a repository for, or why
    not (role_request)}, keys: [key name, or {name, roles}: the roles whose repository it signs; dropped where every
    one of them is a decided role whose decision adds no repository] (keys/<name>.asc the roles take)}. Returns {apt: [names],
    vendor: {role: [specs]}, picks, nothing, unmet, python_apt: [names], vendor_keys (the key names where a vendor
    role's packages are carried), key_roles ({key: [the running roles it serves]}),
    fetch: [every apt spec, sorted], roles: [vendor roles that run without their packages named: refused],
    kernel_headers: bool, python_env: {...} or None}."""
    if not isinstance(workstation, dict) or not isinstance(workstation.get("run"), dict):
        raise OfflineError("dlbox_workstation must be the plan's role decision (playbooks/plan.yml runs first)")
    if not isinstance(packages, (list, tuple)) or not all(isinstance(p, str) for p in packages):
        raise OfflineError("common_packages and common_extra_packages must be lists of package names")
    bad = [p for p in packages if not _NAME.match(p.strip())]
    if bad:
        raise OfflineError("common_packages / common_extra_packages: %s is not a Debian package name" % ", ".join(bad))
    run = workstation["run"]
    vendor = vendor or {}
    if not isinstance(vendor, dict) or not isinstance(vendor.get("packages") or {}, dict):
        raise OfflineError("the vendor roles' packages must be {packages: {role: [names]}, keys: [names]}")
    carried = {}
    for role, specs in (vendor.get("packages") or {}).items():
        _check_role(role)
        _check_specs(specs, "the packages of %s" % role)
        if run.get(role) and specs:
            carried[role] = list(specs)
    picks = {}
    for role, request in (vendor.get("picks") or {}).items():
        if role not in PICKS:
            raise OfflineError("%s: only %s pick their build from the repository" % (role, ", ".join(PICKS)))
        _check_pick(role, request)
        if run.get(role):
            picks[role] = dict(request)
    nothing = {}
    for role, why in (vendor.get("nothing") or {}).items():
        _check_role(role)
        if run.get(role) and role not in carried and role not in picks:
            nothing[role] = str(why)
    unmet = []
    for item in vendor.get("unmet") or []:
        if not isinstance(item, dict) or not item.get("name") or not item.get("why"):
            raise OfflineError("an unmet vendor artifact must be {role, name, why} (got %r)" % (item,))
        _check_role(item.get("role"))
        if run.get(item["role"]):
            unmet.append({"role": item["role"], "name": str(item["name"]), "why": str(item["why"])})
    # the roles that decide (docker, nvidia_container_toolkit): their own decision's needs (role_request)
    keyed = {}
    for role, decision in (vendor.get("decided") or {}).items():
        _check_role(role)
        request = role_request(role, bool(run.get(role)), decision)
        keyed[role] = bool(request.get("key"))
        if "error" in request:
            unmet.append({"role": role, "name": "the decision of %s" % role, "why": request["error"]})
        elif "nothing" in request:
            if run.get(role) and role not in carried and role not in picks:
                nothing[role] = request["nothing"]
        else:
            if request["packages"]:
                carried[role] = list(carried.get(role) or []) + request["packages"]
            if "pick" in request:
                picks[role] = request["pick"]
    unmet_roles = set(item["role"] for item in unmet)
    # a key: its name, or {name, roles} (the roles whose repository it signs: a missing key names those alone)
    active = set(carried) | set(picks) | unmet_roles
    key_roles = {}
    for entry in vendor.get("keys") or []:
        name, roles = (entry.get("name"), entry.get("roles")) if isinstance(entry, dict) else (entry, None)
        if not isinstance(name, str) or not _NAME.match(name):
            raise OfflineError("vendor keys: %r is not a key name (letters, digits, '+.-')" % (entry,))
        if roles is not None:
            if not isinstance(roles, (list, tuple)):
                raise OfflineError("vendor keys: the roles of key %s must be a list (got %r)" % (name, roles))
            for role in roles:
                _check_role(role)
        if roles and all(role in keyed for role in roles) and not any(keyed[role] for role in roles):
            continue  # the repository of deciding roles whose decision adds none (or that do not run)
        mine = sorted(active if roles is None else active & set(roles))
        key_roles[name] = sorted(set(key_roles.get(name, [])) | set(mine))
    keys = list(key_roles)
    env = dict(python_env or {}) if run.get("python_env") else None
    python_apt = list((env or {}).get("apt") or [])
    _check_specs(python_apt, "python_env's apt packages")
    apt = sorted(set(p.strip() for p in packages if p.strip()))
    return {
        "apt": apt,
        "vendor": carried,
        "python_apt": python_apt,
        "picks": picks,
        "nothing": nothing,
        "unmet": unmet,
        "vendor_keys": sorted(set(keys)) if carried or picks or unmet else [],
        "key_roles": key_roles if carried or picks or unmet else {},
        "fetch": sorted(set(apt + python_apt + [s for specs in carried.values() for s in specs])),
        "roles": [role for role in VENDOR_ROLES if run.get(role) and role not in carried and role not in picks
                  and role not in nothing and role not in unmet_roles],
        "kernel_headers": bool(workstation.get("kernel_headers")),
        "python_env": env,
    }


def _check_role(role):
    if role not in VENDOR_ROLES:
        raise OfflineError("%s is not a vendor role (%s)" % (role, ", ".join(VENDOR_ROLES)))


def _check_pick(role, request):
    nccl = PICKS[role] == "nccl_build"
    if not isinstance(request, dict) or not request.get("packages") or not request.get("version") \
            or (nccl and not request.get("cuda")):
        raise OfflineError("the pick of %s must be {packages, version%s} (got %r)" % (
            role, ", cuda" if nccl else "", request))
    _check_specs(request["packages"], "the packages of %s" % role)
    if not _VERSION.match(str(request["version"])) or (nccl and not re.match(r"^\d+\.\d+$", str(request["cuda"]))):
        raise OfflineError("the pick of %s: version %r%s is not a version" % (
            role, request["version"], " / CUDA %r (X.Y)" % request["cuda"] if nccl else ""))


def role_request(role, run, decision):
    """What a vendor role that decides installs, from its own decision: ``decision`` is the role module's
    ``decide`` with ``needs`` added (filter ``dlbox.stack.role_module('decide')``, as the role's preflight takes it),
    so no role's install rule is restated here. ``needs.apt``: what the role installs (its repository's prerequisites
    from the OS archive, its packages; a spec ``name=X.Y.Z-*`` is an upstream release whose build is picked from the
    repository's candidates, PICKS); ``needs.repositories``: the vendor repositories it adds (their key is carried);
    ``needs.nothing``: why it installs nothing. A decision with ``problems`` is the role's refusal.
    Returns {packages, key (bool), pick: {packages, version} where it picks} or {nothing: why} or {error: why}."""
    if not run:
        return {"nothing": "the plan does not run %s" % role}
    if not isinstance(decision, dict) or not isinstance(decision.get("needs"), dict):
        raise OfflineError("the decision of %s must be role_module('decide')'s result (with needs)" % role)
    if decision.get("problems"):
        return {"error": " ".join(str(p) for p in decision["problems"])}
    need = decision["needs"]
    specs = [str(s) for s in need.get("apt") or []]
    if not specs:
        return {"nothing": str(need.get("nothing") or "%s installs nothing from its repository" % role)}
    picked = [(s, _UPSTREAM_SPEC.match(s)) for s in specs]
    packages = [s for s, match in picked if not match]
    bad = [s for s in packages if not _NAME.match(s.split("=", 1)[0]) or ("=" in s and not _VERSION.match(s.split("=", 1)[1]))]
    if bad:
        return {"error": "%s would install %s, which is not a Debian package name (or name=version)" % (role, ", ".join(bad))}
    out = {"packages": packages, "key": bool(need.get("repositories"))}
    upstream = [match for _s, match in picked if match]
    if upstream:
        versions = sorted(set(m.group(2) for m in upstream))
        if PICKS.get(role) != "upstream" or len(versions) != 1:
            raise OfflineError("%s: name=X.Y.Z-* specs of one release are for %s only (got %s)" % (
                role, ", ".join(r for r, rule in PICKS.items() if rule == "upstream"), ", ".join(m.group(0) for m in upstream)))
        out["pick"] = {"packages": [m.group(1) for m in upstream], "version": versions[0]}
    return out


# Vendor roles whose apt version is picked from the repository's candidates, not known beforehand: NCCL's apt
# versions name the CUDA minor they are built for (2.27.7-1+cuda13.0); the nccl role picks the build for the
# installed toolkit (module_utils._nccl.pick_build, tasks/install.yml), and so do mirror.yml (from the repository)
# and the offline preflight (from the folder's index).
# The rule each picking role's version follows: nccl_build (pick_build, above); upstream (the version is the
# upstream release, X.Y.Z, and apt takes any Debian revision of it: the nvidia_container_toolkit role installs
# name=X.Y.Z-* and pins "version X.Y.Z-*"; the newest such build is picked).
PICKS = {"nccl": "nccl_build", "nvidia_container_toolkit": "upstream"}


def nccl_request(run, install=True, version="", plan=None, cuda_version="", toolkits=(), default_toolkit="",
                 packages=()):
    """What the nccl role installs, decided before any toolkit is installed (the offline preflight, mirror.yml).

    The role's rules (roles/nccl/tasks/preflight.yml): the version is nccl_version, else the plan's stack.nccl; the
    toolkit the build is for is nccl_cuda_version, else of the toolkits (here: those the cuda role installs in the
    same run, `toolkits` X.Y, and its default `default_toolkit`) the ones of the plan's CUDA major, the default one
    among them first; packages: nccl_packages, else data/compat.yml's (role_plan's data.packages).
    Returns {pick: {packages, version, cuda}} (the build is then picked from the repository's candidates, by
    pick_build as the role does), {nothing: why} (the role installs nothing: it is not refused), or
    {error: why} (the role would refuse; offline mode lists it as missing)."""
    plan = plan if isinstance(plan, dict) else None
    if not run:
        return {"nothing": "the plan does not run nccl"}
    if not install:
        return {"nothing": "nccl_install is false: the role writes nccl.conf only"}
    version = str(version or (plan or {}).get("version") or "")
    if not version:
        return {"nothing": "the plan has no NCCL and nccl_version is empty: the role installs nothing"}
    toolkits = [str(t) for t in toolkits or []]
    if cuda_version:
        cuda = str(cuda_version)
    else:
        major = str((plan or {}).get("cuda_major") or "")
        candidates = [t for t in toolkits if not major or t.split(".")[0] == major]
        cuda = (str(default_toolkit) if str(default_toolkit) in candidates else
                candidates[0] if candidates else "")
    if not cuda:
        return {"error": "NCCL %s needs a CUDA toolkit%s, and neither this run nor the host has one (toolkits: %s): run "
                         "the cuda role with nvidia_repo, or set nccl_cuda_version" % (
                             version, " of CUDA %s.x (the plan)" % plan["cuda_major"]
                             if (plan or {}).get("cuda_major") else "", ", ".join(toolkits) or "none")}
    names = [str(p) for p in packages or []]
    if not names:
        return {"error": "no NCCL package names (nccl_packages, else data/compat.yml cuda.repo_packages.nccl)"}
    return {"pick": {"packages": names, "version": version, "cuda": ".".join(cuda.split(".")[:2])}}


def pick_upstream(versions, version):
    """The newest apt version of upstream release `version` (any epoch, any Debian revision: X.Y.Z-*), as apt
    takes name=X.Y.Z-*. Returns {version} or {error}."""
    fits = [v for v in versions if re.match(r"^(\d+:)?%s-[0-9A-Za-z.+~]+$" % re.escape(version), v)]
    if not fits:
        has = ", ".join(sorted(set(versions))) or "none"
        return {"error": "the repository has no %s-* build (has: %s)" % (version, has)}
    return {"version": max(fits, key=_VersionKey)}


def resolve_picks(need, versions):
    """need (from needs()) with its picks made: versions {role: [apt versions of the role's first package]}
    (apt-cache madison's text is read too). Each pick becomes the role's name=version specs (in vendor and fetch)
    when the candidates hold a build for it (pick_build: exact CUDA minor, else the same major), else an unmet
    entry {role, name, why} that check() lists as missing."""
    out = dict(need)
    vendor = dict(need.get("vendor") or {})
    unmet = list(need.get("unmet") or [])
    fetch = set(need.get("fetch") or [])
    for role, request in (need.get("picks") or {}).items():
        listed = versions.get(role) or []
        if isinstance(listed, str):
            listed = parse_madison(listed)
        if PICKS[role] == "nccl_build":
            build = pick_build(list(listed), str(request["version"]), str(request["cuda"]))
            name = "%s (NCCL %s for CUDA %s)" % (request["packages"][0], request["version"], request["cuda"])
        else:
            build = pick_upstream(list(listed), str(request["version"]))
            name = "%s (%s-*)" % (request["packages"][0], request["version"])
        if "version" in build:
            specs = ["%s=%s" % (package, build["version"]) for package in request["packages"]]
            vendor[role] = list(vendor.get(role) or []) + specs
            fetch.update(specs)
        else:
            unmet.append({"role": role, "name": name, "why": build["error"]})
    out.update(vendor=vendor, unmet=unmet, fetch=sorted(fetch), picks={})
    return out


def _check_specs(specs, what):
    if not isinstance(specs, (list, tuple)) or not all(isinstance(s, str) for s in specs):
        raise OfflineError("%s must be a list of package names" % what)
    bad = [s for s in specs if not _NAME.match(s.split("=", 1)[0]) or ("=" in s and not _VERSION.match(s.split("=", 1)[1]))]
    if bad:
        raise OfflineError("%s: %s is not a Debian package name (or name=version)" % (what, ", ".join(bad)))


def split_spec(spec):
    """'name=version' -> (name, '=', version); 'name' -> (name, None, None)."""
    name, sep, version = spec.partition("=")
    return (name, "=", version) if sep else (name, None, None)


def python_env_apt(environments, interpreters=None, install_python=True, build_tools=True, compiler_packages=("g++",)):
    """python_env's own apt packages (the role installs exactly these; the offline preflight checks them).

    environments: python_env_plan's decided environments ({python, modules}); interpreters: python_env_interpreters
    (Pythons the host brings: no package for those). Each planned distro Python X.Y: pythonX.Y and pythonX.Y-venv
    (install_python); where an environment has PyTorch and build_tools: pythonX.Y-dev and compiler_packages
    (torch.compile builds C++ on the CPU and Triton C on the GPU)."""
    interpreters = interpreters or {}
    pythons = []
    for env in environments or []:
        if env.get("python") and env["python"] not in interpreters and env["python"] not in pythons:
            pythons.append(env["python"])
    compiles = bool(build_tools) and any("torch" in (env.get("modules") or []) for env in environments or [])
    out = []
    if install_python:
        out += ["python" + p for p in pythons] + ["python%s-venv" % p for p in pythons]
    if compiles:
        out += ["python%s-dev" % p for p in pythons] + list(compiler_packages or [])
    return out


def closure(wanted, index, installed=None, chosen=None):
    """Follow the dependencies of `wanted` (names, or name=version) through the index. Returns (from_index, missing).

    installed: {name: version} (parse_dpkg_status). from_index: names to install from the folder (not installed
    yet, or installed in a version a dependency does not accept), in a stable order; missing: [{name, needed_by,
    wanted}] for each package or dependency group that neither the host nor the folder meets (needed_by None: asked
    for directly, wanted the spec asked for). Alternatives: the first one the host meets, else the first the folder
    meets. chosen (a dict, filled in): name -> the stanza taken from the index (the newest that meets the relations
    asked of it)."""
    installed = dict(installed or {})
    chosen = {} if chosen is None else chosen
    provided = {}
    for name, stanzas in index.items():
        for stanza in stanzas:
            for virtual in stanza["provides"]:
                provided.setdefault(virtual, name)

    def pick(name, op=None, version=None):
        fits = [s for s in index.get(name) or [] if op is None or satisfies(s["version"], op, version)]
        return max(fits, key=lambda s: _VersionKey(s["version"])) if fits else None

    def host_meets(name, op, version):
        return name in installed and (op is None or (installed[name] != "" and satisfies(installed[name], op, version)))

    def folder_meets(name, op, version):
        if name in index:
            return pick(name, op, version) is not None
        return op is None and name in provided

    def label(name, op, version):
        return name + (" (%s %s)" % (op, version) if op else "")

    from_index, missing, done = [], [], set()
    queue = []
    for spec in wanted:
        relation = split_spec(spec)
        if host_meets(*relation):
            continue
        if folder_meets(*relation):
            queue.append((relation, None))
        else:
            missing.append({"name": label(*relation), "needed_by": None, "wanted": spec})
    while queue:
        (name, op, version), needed_by = queue.pop(0)
        real = name if name in index else provided[name]
        if real in done:
            continue
        done.add(real)
        from_index.append(real)
        chosen[real] = pick(real, op, version) if real == name else pick(real)
        for group in chosen[real]["depends"]:
            if any(host_meets(*alt) for alt in group):
                continue
            choice = next((alt for alt in group if folder_meets(*alt)), None)
            if choice is None:
                missing.append({"name": " | ".join(label(*alt) for alt in group), "needed_by": real, "wanted": None})
                continue
            queue.append((choice, real))
    return from_index, missing


class _VersionKey(object):
    def __init__(self, version):
        self.version = version

    def __lt__(self, other):
        return compare_versions(self.version, other.version) < 0


def check(need, mirror, installed_text="", host_release=""):
    """Every artifact `need` (from needs()) lacks in the mirror folder; the run goes ahead only with none.

    mirror: {dir (the controller path, for messages), index (apt/Packages text, '' when absent), files (the paths
    under the folder, relative), manifest (manifest.json as a mapping, {} when absent)}. installed_text: the host's
    dpkg-query output (parse_dpkg_status). host_release: e.g. 'debian bookworm' (the manifest must name the same).

    Returns {ok, missing: [{kind, name, why}], apt_install: [names from the folder], apt_files: [relative .deb
    paths to carry to the host], packages_text (the index of just those), text: [lines]}."""
    folder = mirror.get("dir") or "dlbox_offline_dir"
    files = set(mirror.get("files") or [])
    manifest = mirror.get("manifest") or {}
    missing = []

    def miss(kind, name, why):
        missing.append({"kind": kind, "name": name, "why": why})

    if not manifest:
        miss("folder", "manifest.json", "%s/manifest.json is missing: make the folder with playbooks/mirror.yml" % folder)
    elif host_release and manifest.get("release") and manifest.get("release") != host_release:
        miss("folder", "manifest.json", "the folder was made for %s, this host is %s: run playbooks/mirror.yml on a "
             "machine of this host's release" % (manifest.get("release"), host_release))

    index = parse_packages(mirror.get("index") or "")
    if need.get("picks"):
        need = resolve_picks(need, {role: [s["version"] for s in index.get(request["packages"][0]) or []]
                                    for role, request in need["picks"].items()})
    fetch = need.get("fetch", need["apt"])
    if fetch and not index:
        miss("folder", "apt/Packages", "%s/apt/Packages is missing or empty (dpkg-scanpackages's index)" % folder)
    why_asked = {spec: "asked for (common_packages / common_extra_packages)" for spec in need["apt"]}
    why_asked.update((spec, "asked for by python_env (its Python, venv, headers, compiler)")
                     for spec in need.get("python_apt") or [])
    for role, specs in (need.get("vendor") or {}).items():
        why_asked.update((spec, "asked for by %s: %s" % (role, VENDOR_ROLES[role])) for spec in specs)
    chosen = {}
    from_index, apt_missing = closure(fetch, index, parse_dpkg_status(installed_text), chosen)
    for item in apt_missing:
        why = (why_asked.get(item["wanted"], "asked for") if item["needed_by"] is None
               else "a dependency of %s" % item["needed_by"])
        miss("apt", item["name"], "not in %s/apt/Packages and not installed: %s" % (folder, why))
    apt_files, apt_install, stanzas = [], [], []
    for name in from_index:
        stanza = chosen[name]
        path = stanza["filename"][2:] if stanza["filename"].startswith("./") else stanza["filename"]
        if "apt/" + path not in files:
            miss("apt", name, "%s/apt/%s is listed in the index but absent" % (folder, path))
            continue
        apt_files.append("apt/" + path)
        apt_install.append(name)
        stanzas.append(stanza["text"])
    for item in need.get("unmet") or []:
        miss("apt", item["name"], "%s: %s (asked for by %s: %s)" % (
            folder, item["why"], item["role"], VENDOR_ROLES[item["role"]]))
    for key in need.get("vendor_keys") or []:
        if "keys/%s.asc" % key not in files:
            roles = need["key_roles"].get(key, [])
            miss("key", "keys/%s.asc" % key, "%s/keys/%s.asc is missing: the %s repository's key, which mirror.yml "
                 "writes only with its pinned fingerprint (%s)" % (folder, key, key, ", ".join(roles)))

    for role in need["roles"]:
        miss("role", role, "%s is not carried by the mirror folder%s; skip the role offline (%s: false)"
             % (VENDOR_ROLES[role], ": " + NOT_CARRIED[role] if role in NOT_CARRIED else "", SWITCH_OF_ROLE[role]))
    if need["kernel_headers"]:
        miss("role", "kernel headers", "the running kernel's headers are not carried by the mirror folder yet "
             "(dlbox_install_kernel_headers: false)")
    env = need.get("python_env")
    if env is not None:
        wheels = sorted(f for f in files if f.startswith("wheels/") and f.endswith(".whl"))
        if not wheels:
            miss("wheels", "wheels/", "%s/wheels/ holds no wheel: mirror.yml fetches it where the plan runs "
                 "python_env (playbooks/wheelhouse.yml)" % folder)
        if not env.get("no_index"):
            miss("wheels", "python_env_no_index", "must be true offline (pip would ask an index)")
        if env.get("host_wheels") not in (env.get("find_links") or []):
            miss("wheels", "python_env_find_links", "must include %s, where the offline run puts the wheels"
                 % env.get("host_wheels"))

    text = []
    if missing:
        text.append("Offline mode (dlbox_offline): %d artifact(s) missing from %s; nothing was changed:"
                    % (len(missing), folder))
        text.extend("  - %s %s: %s" % (m["kind"], m["name"], m["why"]) for m in missing)
    else:
        text.append("Offline mode: %d package(s) to install from %s, the rest is on the host"
                    % (len(apt_files), folder))
    return {
        "ok": not missing,
        "missing": missing,
        "apt_install": apt_install,
        "apt_files": apt_files,
        "packages_text": "\n\n".join(stanzas) + ("\n" if stanzas else ""),
        "text": text,
    }
