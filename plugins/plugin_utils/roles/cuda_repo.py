# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cuda_repo role: NVIDIA's CUDA repository, set up once for the roles that install from it.

``vendor()`` -> ``{"url", "signing_keys": {distro or "default": {file, fingerprint}}, "arch_dirs": {arch: dir}}``
from data/repositories.yml and data/compat.yml ``machines`` (x86_64 -> x86_64, aarch64 -> sbsa).
``needs()`` -> what setting it up downloads: the packages apt and deb822_repository need first (PREREQUISITES:
roles/cuda_repo/tasks/keyring.yml installs exactly these) and the key; ``needs(facts=...)`` adds the repository of one
host (:func:`repository`: its URL, key URL and pinned fingerprint, which the role's preflight keeps);
``needs(run=...)`` what its consumers (cuda, cudnn, nccl) install from it.
"""

from __future__ import annotations

import re

from ansible_collections.dlbox.stack.plugins.plugin_utils.compat_data import load_compat
from ansible_collections.dlbox.stack.plugins.plugin_utils.roles import RoleModuleError, _spec, _vendor

PREREQUISITES = ("ca-certificates", "python3-debian")
_NAME = re.compile(r"^[a-z0-9-]+/(x86_64|sbsa|arm64)$")
_URL = re.compile(r"^(https?://[^/\s]+/|file:///)\S*$")
_FINGERPRINT = re.compile(r"^([0-9A-F]{40}|[0-9A-F]{64})$")


def vendor(data_path=None):
    repo = _vendor.repository("cuda")
    machines = load_compat(data_path).get("machines") or {}
    return {"url": repo["url"],
            "signing_keys": {name: {"file": key["file"], "fingerprint": key["fingerprint"]}
                             for name, key in repo["signing_keys"].items()},
            "arch_dirs": {arch: entry["cuda_repo"] for arch, entry in machines.items() if entry.get("cuda_repo")}}


def _text(value):
    return "" if value is None else str(value)


def repository(given=None, facts=None, plan=None, site_mirror=None, data_path=None, refusals=False):
    """NVIDIA's CUDA repository for one host, the rules and refusals roles/cuda_repo/tasks/preflight.yml reads from
    here: ``{"name", "url", "key_url", "key_src", "fingerprint", "errors": []}``.

    ``given``: the cuda_repo_* variables (the argument specs' defaults under them); ``facts``: the host's
    ansible_facts (distribution, distribution_version, distribution_major_version, architecture, kernel);
    ``plan``: dlbox_plan (its stack.cuda.repository) or none; ``site_mirror``: dlbox_site_mirrors.cuda or empty.
    A refusal names the variable; it is raised, or with ``refusals`` returned as ``{"errors": [message]}`` (the
    preflight asserts that list empty, so its message is the role's own).
    """
    try:
        return _repository(_spec.options("cuda_repo", given), facts or {}, plan, site_mirror, vendor(data_path))
    except RoleModuleError as exc:
        if not refusals:
            raise
        return {"errors": [str(exc)]}


def _repository(opts, facts, plan, site_mirror, data):
    given_name = _text(opts.get("cuda_repo_repository"))
    name = given_name
    if not name and isinstance(plan, dict):
        name = _text(((plan.get("stack") or {}).get("cuda") or {}).get("repository"))
    if not name:
        if facts.get("distribution") == "Ubuntu":
            distro = ("wsl-ubuntu" if "microsoft" in _text(facts.get("kernel")).lower()
                      else "ubuntu" + _text(facts.get("distribution_version")).replace(".", ""))
        else:
            distro = _text(facts.get("distribution")).lower() + _text(facts.get("distribution_major_version"))
        arch = _text(facts.get("architecture"))
        name = distro + "/" + _text(data["arch_dirs"].get(arch, arch))
    if not _NAME.match(name):
        raise RoleModuleError("cuda_repo_repository%s is %r; NVIDIA names its repositories <distro>/<arch> with arch "
                              "x86_64, sbsa (64-bit ARM servers) or arm64 (e.g. debian12/x86_64, ubuntu2404/sbsa). Set "
                              "cuda_repo_repository" % ("" if given_name else " (worked out from the host)", name))
    base_url = _text(opts.get("cuda_repo_base_url"))
    root = re.sub("/+$", "", _text(site_mirror) or data["url"])
    url = re.sub("/+$", "", base_url or root + "/" + name) + "/"
    if not _URL.match(url):
        raise RoleModuleError("cuda_repo_base_url must be an http://, https:// or file:/// URL of the repository (a flat "
                              "repository: Packages and Release at its root), not %r" % (base_url or url))
    extra = opts.get("cuda_repo_nvidia_keys") or {}
    if not isinstance(extra, dict):
        raise RoleModuleError("cuda_repo_nvidia_keys must map a distribution (or default) to {file, fingerprint}, "
                              "not %r" % (extra,))
    keys = dict(data["signing_keys"], **extra)
    key = keys.get(name.split("/", maxsplit=1)[0], keys.get("default"))
    if not isinstance(key, dict) or "file" not in key or "fingerprint" not in key:
        raise RoleModuleError("cuda_repo_nvidia_keys entries are {file, fingerprint}, not %r" % (key,))
    key_url, key_src = _text(opts.get("cuda_repo_key_url")), _text(opts.get("cuda_repo_key_src"))
    if (key_url and key_src) or (key_url and not _URL.match(key_url)):
        raise RoleModuleError("Set one of cuda_repo_key_url (an http://, https:// or file:/// URL; now %r) and "
                              "cuda_repo_key_src (an ASCII-armored key file on the controller; now %r), or neither "
                              "(NVIDIA's key under the base URL)" % (key_url, key_src))
    given_fingerprint = _text(opts.get("cuda_repo_key_fingerprint"))
    fingerprint = re.sub(r"\s", "", given_fingerprint or _text(key["fingerprint"])).upper()
    if not _FINGERPRINT.match(fingerprint):
        raise RoleModuleError("cuda_repo_key_fingerprint%s is %r; it must be the key's full fingerprint, 40 hexadecimal "
                              "digits (spaces allowed, e.g. %s), not a short key id"
                              % ("" if given_fingerprint else " (from cuda_repo_nvidia_keys)",
                                 given_fingerprint or _text(key["fingerprint"]),
                                 _text((keys.get("default") or {}).get("fingerprint"))))
    return {"name": name, "url": url, "key_url": key_url or url + _text(key["file"]), "key_src": key_src,
            "fingerprint": fingerprint, "errors": []}


def needs(run=None, given=None, plan=None, host=None, request=None, hardware=None, arch="x86_64", host_cuda=None,
          data_path=None, facts=None, site_mirror=None, refusals=False):
    """What comes from NVIDIA's CUDA repository.

    Without ``run``: the role's own needs, ``{"apt": PREREQUISITES, "keys": ["cuda"]}`` (keyring.yml installs these),
    and with ``facts`` (the host's ansible_facts) ``"repository"``: :func:`repository` for that host (``given``,
    ``plan``, ``site_mirror``, ``refusals`` as there): what the role's preflight keeps (roles/cuda_repo/tasks/
    preflight.yml) and playbooks/mirror.yml fetches the key from and points apt at.
    With ``run`` (dlbox_workstation.run: which roles run): what its consumers cuda, cudnn and nccl install, each
    decided by its own module (their options from the argument specs with ``given``, the inventory's values, on
    top), in the shape offline.needs() takes as ``vendor``: ``{"packages": {"cuda": [...], "cudnn": [...], "nccl":
    [...]}, "picks": {"nccl": {...}}, "nothing": {"nccl": why}, "unmet": [{role, name, why}], "keys": [{"name":
    "cuda", "roles": [...]}]}``. A consumer that installs anything from the repository brings PREREQUISITES along.
    ``host_cuda``: the toolkits the host already has (cuda_facts: ``cuda_toolkits``, ``cuda_default``), which nccl
    may build for.
    """
    if run is None:
        own = {"apt": list(PREREQUISITES), "keys": ["cuda"]}
        if facts is not None:
            own["repository"] = repository(given, facts, plan, site_mirror, data_path, refusals)
        return own
    # pylint: disable-next=import-outside-toplevel
    from ansible_collections.dlbox.stack.plugins.plugin_utils.roles import cuda, cudnn, nccl

    run = dict(run or {})
    # cuda's decision before anything on the host is read (no "installed" fact): what it installs, its toolkits
    cuda_decision = cuda.decide(plan, cuda.options(given), {"host": host, "request": request, "hardware": hardware},
                                data_path=data_path)
    cuda_needs = {"apt": cuda.needs(cuda_decision)["apt"] if run.get("cuda") else [],
                  "toolkits": cuda_decision.get("toolkits") or [], "default": cuda_decision.get("default")}
    # cudnn's decision for the toolkits cuda installs, newest first as the role's cuda_facts lists them (sorted as text)
    toolkits_newest = sorted(cuda_needs["toolkits"], key=lambda t: str(t.get("version")), reverse=True)
    cudnn_decision = cudnn.decide(plan, cudnn.options(given), {"toolkits": toolkits_newest, "arch": arch},
                                  data_path=data_path)
    cudnn_needs = {"apt": cudnn.needs(cudnn_decision)["apt"] if run.get("cudnn") else []}
    installing = cuda_needs["apt"]
    host_cuda = host_cuda or {}
    toolkits = [t.get("version") for t in cuda_needs["toolkits"]] if installing else []
    toolkits += [t.get("version") for t in host_cuda.get("cuda_toolkits") or []]
    default = ((cuda_needs["default"] or {}).get("version") or "") if installing and cuda_needs["default"] \
        else ((host_cuda.get("cuda_default") or {}).get("version") or "")
    nccl_needs = nccl.needs(nccl.decide(plan, nccl.options(given), {
        "host": host, "request": request, "hardware": hardware, "run": run.get("nccl"),
        "toolkits": list(dict.fromkeys(toolkits)), "default_toolkit": default}, data_path=data_path))
    prereqs = list(PREREQUISITES)
    unmet = [{"role": "nccl", "name": "a CUDA toolkit for NCCL", "why": nccl_needs["error"]}] if "error" in nccl_needs else []
    any_from_it = bool(installing or cudnn_needs["apt"] or "pick" in nccl_needs or "error" in nccl_needs)
    return {
        "packages": {"cuda": installing + prereqs if installing else [],
                     "cudnn": cudnn_needs["apt"] + prereqs if cudnn_needs["apt"] else [],
                     "nccl": prereqs if "pick" in nccl_needs else []},
        "picks": {"nccl": nccl_needs["pick"]} if "pick" in nccl_needs else {},
        "nothing": {"nccl": nccl_needs["nothing"]} if "nothing" in nccl_needs else {},
        "unmet": unmet,
        "keys": [{"name": "cuda", "roles": ["cuda", "cudnn", "nccl"]}] if any_from_it else [],
    }
