# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The docker role.

- ``options(given)``, ``decide(plan, options, facts)``, ``needs(decision)`` (filter ``dlbox.stack.role_decide``): the
  role's decision for one host, taken once in its preflight and kept as ``__docker_decision`` (below, at
  :func:`decide`).
- ``vendor()`` -> Docker's apt repository from data/repositories.yml: {"url" (the root; the role adds
  /linux/<distribution>), "key_path" (gpg, beside the repository), "fingerprint"}.
- ``iptables_raw_plan(probe, ...)`` (the decision's ``iptables_raw``): what the role does on a Jetson whose
  kernel has no iptables ``raw`` table while Docker 28 or later is installed or would be (issue 52): nothing, the
  systemd drop-in with ``DOCKER_INSECURE_NO_IPTABLES_RAW=1``, or a refusal. Pure; the facts (the engine versions
  that need the table and read the opt-out, the L4T releases named in the messages) come from data/docker.yml.

The probe (the role's ``__docker_iptables_raw_probe``, run on the host) prints ``key=value`` lines, nothing at all on
a host without ``/etc/nv_tegra_release``::

    l4t=# R36 (release), REVISION: 4.3, GCID: 38968081, BOARD: generic, EABI: aarch64, DATE: ...
    config=/proc/config.gz
    config_line=# CONFIG_IP_NF_RAW is not set
    module_rc=1
    module=
    tables=filter nat
    candidate=28.2.2-0ubuntu1~22.04.1
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

import yaml

from ansible_collections.dlbox.stack.plugins.module_utils._gpu_facts import parse_nv_tegra_release_line
from ansible_collections.dlbox.stack.plugins.plugin_utils.roles import _spec, _vendor

DATA_PATH = Path(__file__).resolve().parents[3] / "data" / "docker.yml"

_CONFIG_SET = re.compile(r"^CONFIG_IP_NF_RAW=([ym])\s*$")
_CONFIG_UNSET = re.compile(r"^#\s*CONFIG_IP_NF_RAW is not set\s*$")
# upstream version of a Debian version: epoch and revision left out (5:28.0.4-1~ubuntu.22.04~jammy -> 28.0.4,
# 28.2.2-0ubuntu1~22.04.1 -> 28.2.2, 20.10.24+dfsg1-1+b3 -> 20.10.24)
_UPSTREAM = re.compile(r"^(?:\d+:)?(\d+)\.(\d+)(?:\.(\d+))?")
_VERSION = re.compile(r"^\d+\.\d+\.\d+$")


def vendor():
    """Docker's repository (data/repositories.yml), the engine package of each docker_source (the decision's
    ``engine_package`` names the same: the preflight's probe asks apt's candidate of it before the decision) and the
    packages each installs (data/docker.yml ``packages``: the defaults of docker_ce_packages and
    docker_distribution_packages)."""
    repo = _vendor.repository("docker")
    sources = packages_data()
    return {"url": repo["url"], "key_path": repo["key_path"], "fingerprint": repo["fingerprint"],
            "engine_packages": {source: entry["engine"] for source, entry in sources.items()},
            "packages": {source: list(entry["install"]) for source, entry in sources.items()}}


# --- data/docker.yml -----------------------------------------------------------------------------------------------

def _need(condition, where, what):
    if not condition:
        raise _vendor.VendorDataError("data/docker.yml: %s: %s" % (where, what))


def check_iptables_raw_data(data):
    """``data`` (the loaded file) when its ``iptables_raw`` section is well formed; VendorDataError naming the key."""
    _need(isinstance(data, dict) and data.get("schema") == 1, "top level", "must be a mapping with schema: 1")
    raw = data.get("iptables_raw")
    _need(isinstance(raw, dict), "iptables_raw", "must be a mapping")
    for key, source in (("engine_min", "engine_min_source"), ("opt_out_min", "opt_out_source")):
        _need(isinstance(raw.get(key), str) and _VERSION.match(raw[key]), "iptables_raw.%s" % key,
              "must be a quoted version like \"28.0.2\"")
        _need(isinstance(raw.get(source), str) and raw[source].strip(), "iptables_raw.%s" % source,
              "must name its source")
    _need(version_key(raw["engine_min"]) <= version_key(raw["opt_out_min"]), "iptables_raw.opt_out_min",
          "cannot come before engine_min")
    _need(isinstance(raw.get("opt_out_env"), str) and re.match(r"^[A-Z][A-Z0-9_]*$", raw["opt_out_env"]),
          "iptables_raw.opt_out_env", "must be an environment variable's name")
    l4t = raw.get("l4t")
    _need(isinstance(l4t, dict), "iptables_raw.l4t", "must be a mapping")
    _need(isinstance(l4t.get("fixed"), str) and _VERSION.match(l4t["fixed"]), "iptables_raw.l4t.fixed",
          "must be a quoted L4T version like \"36.4.4\"")
    _need(isinstance(l4t.get("fixed_jetpack"), str) and l4t["fixed_jetpack"].strip(), "iptables_raw.l4t.fixed_jetpack",
          "must be text")
    _need(isinstance(l4t.get("without"), list) and all(isinstance(v, str) for v in l4t["without"]),
          "iptables_raw.l4t.without", "must be a list of quoted L4T versions")
    _need(isinstance(l4t.get("source"), str) and l4t["source"].strip(), "iptables_raw.l4t.source", "must name its source")
    return data


@lru_cache(maxsize=None)
def _load(path):
    try:
        return yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise _vendor.VendorDataError("%s: %s" % (path, exc)) from exc


def iptables_raw_data(path=None):
    """The checked ``iptables_raw`` section of data/docker.yml (or of ``path``)."""
    return check_iptables_raw_data(_load(str(path or DATA_PATH)))["iptables_raw"]


def packages_data(path=None):
    """The checked ``packages`` section of data/docker.yml (or of ``path``): {docker_source: {engine, install, pinned,
    conflicts, source}} for each of the argument spec's docker_source choices."""
    sources = (_load(str(path or DATA_PATH)) or {}).get("packages")
    _need(isinstance(sources, dict) and set(sources) == set(_spec.choices(ROLE, "docker_source")), "packages",
          "must name the packages of each docker_source (%s)" % ", ".join(_spec.choices(ROLE, "docker_source")))
    for source, entry in sources.items():
        _need(isinstance(entry, dict) and isinstance(entry.get("engine"), str) and entry["engine"], "packages.%s" % source,
              "must name its engine package")
        for key in ("install", "pinned", "conflicts"):
            _need(isinstance(entry.get(key), list) and all(isinstance(v, str) for v in entry[key]),
                  "packages.%s.%s" % (source, key), "must be a list of package names")
        _need(isinstance(entry.get("source"), str) and entry["source"].strip(), "packages.%s.source" % source,
              "must name its source")
    return sources


def _listed(value, default):
    """A package list option: the spec's default is a template (data/docker.yml's list, which a role run renders);
    here it counts as unset and the data's list is taken."""
    return list(default) if isinstance(value, str) and "{{" in value else list(value or [])


# --- parsers -------------------------------------------------------------------------------------------------------

def version_key(version):
    """``(major, minor, patch)`` of a Debian package version's upstream part; None when it has none.

    ``5:27.5.1-1~ubuntu.22.04~jammy`` -> ``(27, 5, 1)``; ``28.2.2-0ubuntu1~22.04.1`` -> ``(28, 2, 2)``;
    ``(none)`` (apt-cache policy without a candidate) and ``""`` -> None.
    """
    match = _UPSTREAM.match(str(version or "").strip())
    if not match:
        return None
    return tuple(int(part or 0) for part in match.groups())


def parse_raw_probe(text):
    """The probe's ``key=value`` lines as a mapping (``{}`` for a host that is not a Jetson).

    ``module_rc`` becomes an int (None when missing or not a number), ``tables`` a list; a key printed twice keeps
    its first value.
    """
    out = {}
    for line in (text or "").splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() and key.strip() not in out:
            out[key.strip()] = value.strip()
    if "module_rc" in out:
        out["module_rc"] = int(out["module_rc"]) if out["module_rc"].isdigit() else None
    if "tables" in out:
        out["tables"] = out["tables"].split()
    return out


def kernel_raw_table(probe):
    """``(state, evidence)``: does the running kernel give iptables a ``raw`` table?

    state is ``present``, ``missing`` or ``unknown``; evidence says what told. In this order:
    ``raw`` in /proc/net/ip_tables_names (the table is loaded now); the kernel config (``CONFIG_IP_NF_RAW=y`` or
    ``=m``: present; ``# CONFIG_IP_NF_RAW is not set``, or a readable config without the option: missing), as
    Docker's contrib/check-config.sh reads it; ``modinfo iptable_raw`` naming the module (present). Anything else is
    unknown: a module that modinfo does not find is not proof without the config (an old kmod does not know built-in
    modules), and a table not loaded yet says nothing.
    """
    if "raw" in (probe.get("tables") or []):
        return "present", "/proc/net/ip_tables_names lists raw"
    config = probe.get("config") or ""
    if config:
        line = probe.get("config_line") or ""
        if _CONFIG_SET.match(line):
            return "present", "%s: %s" % (config, line)
        if _CONFIG_UNSET.match(line) or not line:
            return "missing", "%s: %s" % (config, line or "no CONFIG_IP_NF_RAW")
    if probe.get("module_rc") == 0 and probe.get("module"):
        return "present", "modinfo iptable_raw: %s" % probe["module"]
    return "unknown", "no kernel config (/proc/config.gz, /boot/config-<release>) and modinfo did not find iptable_raw"


def _text(version):
    return ".".join(str(part) for part in version)


def planned_engine(installed="", candidate="", pinned=""):
    """The engine version the decision stands on: ``pinned`` (docker_ce_version) when given, else the newer of the
    installed one and apt's candidate (what `apt upgrade` brings next); None when none is known."""
    if version_key(pinned):
        return version_key(pinned)
    known = [v for v in (version_key(installed), version_key(candidate)) if v]
    return max(known) if known else None


# --- the decision ---------------------------------------------------------------------------------------------------

def iptables_raw_plan(probe_text, installed="", pinned="", workaround=True, data=None):
    """What the role does about the iptables raw table. Pure.

    ``probe_text``: the probe's output (nothing on a host without /etc/nv_tegra_release); ``installed``: the
    engine package's installed version (package_facts; "" when not installed); ``pinned``: docker_ce_version with
    Docker CE ("" otherwise); ``workaround``: docker_iptables_raw_workaround. Returns::

        {"action": "none" | "dropin" | "refuse", "jetson": bool, "l4t": "36.4.3" or None,
         "kernel": "present" | "missing" | "unknown" | None, "evidence": str, "engine": "28.2.2" or None,
         "env": {"DOCKER_INSECURE_NO_IPTABLES_RAW": "1"} (dropin only, else {}), "msg": str}

    ``none`` on any host that is not a Jetson, whose kernel has the table or cannot be read, or whose engine
    (planned_engine) is older than engine_min; ``refuse`` where the engine needs the table and has no opt-out
    (engine_min <= engine < opt_out_min) or the workaround is off; else ``dropin``. An unknown engine version (Docker
    CE's repository not added yet) counts as the newest, which needs the table.
    """
    data = data or iptables_raw_data()
    probe = parse_raw_probe(probe_text)
    head = parse_nv_tegra_release_line(probe.get("l4t") or "")
    out = {"action": "none", "jetson": head is not None, "l4t": head["l4t"] if head else None, "kernel": None,
           "evidence": "", "engine": None, "env": {}, "msg": ""}
    if head is None:
        out["msg"] = "not a Jetson (no /etc/nv_tegra_release): the iptables raw table is not checked"
        return out
    kernel, evidence = kernel_raw_table(probe)
    engine = planned_engine(installed, probe.get("candidate", ""), pinned)
    out.update(kernel=kernel, evidence=evidence, engine=_text(engine) if engine else None)
    l4t, fixed = data["l4t"], data["l4t"]["fixed"]
    where = "L4T %s" % out["l4t"]
    named = "Docker %s" % out["engine"] if engine else "the newest Docker"
    if kernel == "present":
        out["msg"] = "%s: the kernel has the iptables raw table (%s); nothing to do" % (where, evidence)
        return out
    if kernel == "unknown":
        out["msg"] = ("%s: could not tell whether the kernel has the iptables raw table (%s); Docker is left as it is. "
                      "Docker %s and later need it; L4T %s (JetPack %s) and later kernels have it"
                      % (where, evidence, data["engine_min"], fixed, l4t["fixed_jetpack"]))
        return out
    if engine and engine < version_key(data["engine_min"]):
        out["msg"] = ("%s: the kernel has no iptables raw table (%s), which %s does not use (from %s on it does)"
                      % (where, evidence, named, data["engine_min"]))
        return out
    need = ("%s's kernel has no iptables raw table (%s), which %s needs for published ports and builds "
            "(\"can't initialize iptables table `raw'\", moby/moby#49557)" % (where, evidence, named))
    fix = ("flash JetPack %s (L4T %s) or newer, whose kernel has it (data/docker.yml iptables_raw.l4t)"
           % (l4t["fixed_jetpack"], fixed))
    if engine and engine < version_key(data["opt_out_min"]):
        values = (need, data["opt_out_env"], data["opt_out_min"], data["opt_out_min"], data["engine_min"], fix)
        out.update(action="refuse", msg=(
            "%s, and it has no opt-out (%s=1 needs Docker %s). Nothing was changed. Install Docker %s or newer "
            "(docker_ce_version), or one older than %s, or %s." % values))
        return out
    if not workaround:
        out.update(action="refuse", msg=(
            "%s. docker_iptables_raw_workaround is false, so nothing was changed: %s, or set "
            "docker_iptables_raw_workaround: true (dockerd then runs with %s=1 and other hosts on the local network "
            "can reach published ports directly, even those published to 127.0.0.1)" % (need, fix, data["opt_out_env"])))
        return out
    out.update(action="dropin", env={data["opt_out_env"]: "1"}, msg=(
        "%s: dockerd runs with %s=1 (systemd drop-in; docker_iptables_raw_workaround). Hosts on the local network can "
        "reach published ports directly, even those published to 127.0.0.1; %s removes the need"
        % (need, data["opt_out_env"], fix)))
    return out


# --- the role's decision (role_decide) -----------------------------------------------------------------------------

ROLE = "docker"
KEYRING_DIR = "/etc/apt/keyrings"
KEYRING = KEYRING_DIR + "/docker.asc"
# What the repository task installs first (from the OS archive) and the repository's component (the packages of each
# docker_source, the engine, those docker_ce_version pins and the other source's: data/docker.yml packages)
REPO_PREREQS = ("ca-certificates", "gnupg", "python3-debian")
REPO_COMPONENTS = ("stable",)
_URL = re.compile(r"^(https?|file)://")
_FPR = re.compile(r"^[0-9A-F]{40}$")
_PROXY = re.compile(r"^https?://[^\s/]+/?$")
_RUNTIME = re.compile(r"^[A-Za-z0-9._-]*$")
_NO_PROXY = re.compile(r'^[^\s"]*$')


def options(given=None):
    return _spec.typed(ROLE, given)


def installed_version(packages, name):
    """package_facts' ``packages`` -> the installed version of ``name`` ("" when it is not installed)."""
    entries = (packages or {}).get(name) or [{}]
    return str((entries[0] or {}).get("version") or "")


def missing_users(results):
    """The getent task's ``results`` -> the users getent did not find (in the order asked)."""
    missing = []
    for result in results or []:
        found = ((result.get("ansible_facts") or {}).get("getent_passwd")) if isinstance(result, dict) else None
        if found is None:
            missing.append(result.get("item") if isinstance(result, dict) else result)
            continue
        missing.extend(name for name, entry in found.items() if entry is None)
    return missing


def _json(value):
    return json.dumps(value, separators=(", ", ": "))


def _variable_problems(opts):
    problems = []
    if opts["docker_source"] == "docker-ce":
        fpr = str(opts["docker_ce_repo_key_fingerprint"] or "").replace(" ", "").upper()
        key_url = str(opts["docker_ce_repo_key_url"] or "")
        if not _URL.match(str(opts["docker_ce_repo_url"] or "")) or (key_url and not _URL.match(key_url)) \
                or not _FPR.match(fpr):
            problems.append("docker_ce_repo_url and docker_ce_repo_key_url must be http(s):// or file:// URLs and "
                            "docker_ce_repo_key_fingerprint a 40-hex-digit fingerprint; got '%s', '%s', '%s'." % (
                                opts["docker_ce_repo_url"], key_url, opts["docker_ce_repo_key_fingerprint"]))
    pools = opts["docker_default_address_pools"] or []
    data_root, runtime = str(opts["docker_data_root"] or ""), str(opts["docker_default_runtime"] or "")
    if (data_root and not data_root.startswith("/")) or not all(isinstance(p, dict) and "base" in p for p in pools) \
            or not _RUNTIME.match(runtime):
        problems.append("docker_data_root must be an absolute path or empty (got '%s'); docker_default_address_pools a "
                        "list of {base: \"172.80.0.0/16\", size: 24}; docker_default_runtime a runtime name or empty "
                        "(got '%s')." % (data_root, runtime))
    http, https = str(opts["docker_http_proxy"] or ""), str(opts["docker_https_proxy"] or "")
    no_proxy, users = str(opts["docker_no_proxy"] or ""), opts["docker_client_proxy_users"] or []
    if (http and not _PROXY.match(http)) or (https and not _PROXY.match(https)) or not _NO_PROXY.match(no_proxy) \
            or not all(isinstance(u, str) for u in users):
        problems.append("docker_http_proxy and docker_https_proxy must be empty or proxy URLs such as "
                        "http://proxy.lab.example:3128, docker_no_proxy comma-separated hosts without spaces or quotes, "
                        "docker_client_proxy_users a list of user names; got '%s', '%s', '%s', %s." % (
                            http, https, no_proxy, _json(users)))
    return problems


def _proxy(opts, names):
    http, https, no_proxy = (str(opts[n] or "") for n in ("docker_http_proxy", "docker_https_proxy", "docker_no_proxy"))
    out = {}
    if http:
        out[names[0]] = http
    if https:
        out[names[1]] = https
    if (http or https) and no_proxy:
        out[names[2]] = no_proxy
    return out


def decide(plan, options, facts, data=None):  # pylint: disable=unused-argument,redefined-outer-name
    """Everything the role's tasks need, from its options and what the host said. Pure.

    ``facts``: ``distribution_release``, ``packages`` (package_facts), ``users`` (the getent task's results),
    ``iptables_probe`` (the probe's output), ``systemd_booted``, ``execstart`` (docker.service's ExecStart),
    ``host`` (inventory_hostname, for messages). The plan is not read (Docker is not part of the stack's versions).
    Returns ``problems`` (each a refusal naming the variable; the preflight refuses on any) and what the tasks wire:
    ``repository``, ``packages``, ``settings`` (daemon.json), ``service_execstart``, ``proxy_env``, ``proxy_client``,
    ``iptables_raw`` (:func:`iptables_raw_plan`), ``installed``, ``systemd_booted``.
    """
    opts, packages = options, facts.get("packages") or {}
    source = opts["docker_source"]
    problems = _variable_problems(opts)
    users = list(opts["docker_users"] or [])
    asked = users + [u for u in (opts["docker_client_proxy_users"] or []) if u not in users]
    missing = [u for u in missing_users(facts.get("users")) if u in asked] if facts.get("users") is not None else []
    if missing:
        problems.append("%s names %s, which %s not exist on %s. Create the account first (or drop it from the list)." % (
            "docker_users" if set(missing) & set(users) else "docker_client_proxy_users", ", ".join(missing),
            "does" if len(missing) == 1 else "do", facts.get("host") or "this host"))
    sources = packages_data()
    other = [name for name in sources[source]["conflicts"] if name in packages]
    if other:
        problems.append("docker_source is '%s', but this host already has %s installed; installing the other engine would "
                        "remove it. Set docker_source: %s to keep it, or remove it yourself first." % (
                            source, ", ".join(other), "distribution" if source == "docker-ce" else "docker-ce"))
    engine = sources[source]["engine"]
    version = str(opts["docker_ce_version"] or "")
    iptables_raw = iptables_raw_plan(str(facts.get("iptables_probe") or ""), installed=installed_version(packages, engine),
                                     pinned=version if source == "docker-ce" else "",
                                     workaround=bool(opts["docker_iptables_raw_workaround"]), data=data)
    settings = dict(opts["docker_daemon_settings"] or {})
    if opts["docker_live_restore"] is not None:
        settings["live-restore"] = opts["docker_live_restore"]
    if opts["docker_data_root"]:
        settings["data-root"] = opts["docker_data_root"]
    if opts["docker_default_address_pools"]:
        settings["default-address-pools"] = opts["docker_default_address_pools"]
    if opts["docker_default_runtime"]:
        settings["default-runtime"] = opts["docker_default_runtime"]
    execstart = str(facts.get("execstart") or "").strip()
    repo_url = str(opts["docker_ce_repo_url"] or "")
    key_url = str(opts["docker_ce_repo_key_url"] or "")
    pinned = sources[source]["pinned"]
    if source == "docker-ce":
        wanted = [("%s=%s" % (p, version)) if version and p in pinned else p
                  for p in _listed(opts["docker_ce_packages"], sources["docker-ce"]["install"])]
    else:
        wanted = _listed(opts["docker_distribution_packages"], sources["distribution"]["install"])
    return {
        "problems": problems,
        "source": source,
        "engine_package": engine,
        "installed": any(entry["engine"] in packages for entry in sources.values()),
        "other_installed": other,
        "repository": {
            "enabled": source == "docker-ce",
            "name": "docker",
            "uris": repo_url,
            "suite": str(opts["docker_ce_repo_suite"] or "") or str(facts.get("distribution_release") or ""),
            "components": list(REPO_COMPONENTS),
            "key_url": key_url or repo_url + "/gpg",
            "key_url_variable": "docker_ce_repo_key_url" if key_url else "docker_ce_repo_url",
            "fingerprint": str(opts["docker_ce_repo_key_fingerprint"] or ""),
            "keyring_dir": KEYRING_DIR,
            "keyring": KEYRING,
            "prereqs": list(REPO_PREREQS),
        },
        "pinned_packages": list(sources["docker-ce"]["pinned"]),
        "packages": wanted,
        "settings": settings,
        "service_execstart": execstart if execstart not in ("", "{}") else None,
        "proxy_env": _proxy(opts, ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY")),
        "proxy_client": _proxy(opts, ("httpProxy", "httpsProxy", "noProxy")),
        "iptables_raw": iptables_raw,
        "systemd_booted": bool(facts.get("systemd_booted")),
    }


def needs(decision):
    """What the decision downloads: the engine's packages and, from Docker's repository, its key."""
    repo = decision["repository"]
    if not repo["enabled"]:
        return {"apt": list(decision["packages"]), "repositories": [], "keys": []}
    return {"apt": list(repo["prereqs"]) + list(decision["packages"]), "repositories": ["docker"],
            "keys": [{"url": repo["key_url"], "fingerprint": repo["fingerprint"], "dest": repo["keyring"]}]}
