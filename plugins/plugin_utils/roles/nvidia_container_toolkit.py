# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The nvidia_container_toolkit role.

- ``vendor()`` -> NVIDIA's libnvidia-container repository from data/repositories.yml: {"url", "key_path" (gpgkey),
  "fingerprint"} (also the key the nvidia-docker2 era's sources trusted, which the migration deletes from
  /etc/apt/trusted.gpg).
- ``options(given)``, ``decide(plan, options, facts)``, ``needs(decision)`` (filter ``dlbox.stack.role_decide``): the
  role's decision for one host, taken once in its preflight and kept as ``__nvidia_container_toolkit_decision``.
"""

from __future__ import annotations

import re

from ansible_collections.dlbox.stack.plugins.plugin_utils import jetpack_plan, role_plan
from ansible_collections.dlbox.stack.plugins.plugin_utils.roles import _spec, _vendor

ROLE = "nvidia_container_toolkit"
# The 1.18 behaviour the role's tasks use (containerd drop-ins, --dry-run, the CDI refresh units); the plan's
# min_version (data/compat.yml) applies on top of it.
ROLE_FLOOR = "1.18"
REPO_PREREQS = ("ca-certificates", "gnupg", "python3-debian")
KEYRING = "/etc/apt/keyrings/nvidia-container-toolkit.asc"
_RELEASE = re.compile(r"^[0-9]+\.[0-9]+\.[0-9]+$")
SKIP = ("The plan for %s has no NVIDIA Container Toolkit (no NVIDIA GPU was planned) and nvidia_container_toolkit_version "
        "is empty: nothing was installed. Set nvidia_container_toolkit_version to install it anyway.")


def vendor():
    repo = _vendor.repository("container_toolkit")
    return {"url": repo["url"], "key_path": repo["key_path"], "fingerprint": repo["fingerprint"]}


def options(given=None):
    return _spec.typed(ROLE, given)


def _key(version):
    return tuple(int(p) for p in re.findall(r"[0-9]+", str(version or "0"))) or (0,)


def decide(plan, options, facts, data_path=None):  # pylint: disable=redefined-outer-name
    """Where the toolkit comes from, its version, floor and packages, and whether the role has anything to do.

    ``plan``: ``dlbox_plan`` or None (then resolved once from ``facts``: ``host`` = ``ansible_facts['dlbox_host']``,
    ``request`` = ``dlbox_plan_request``, ``hardware`` = ``dlbox_plan_hardware``). Returns ``problems`` (refusals,
    each naming the variable), ``source`` (nvidia | jetpack | None), ``jetpack``, ``active``, ``version``, ``floor``,
    ``packages``, ``cdi_min``, ``cdi_units`` (the CDI refresh units, data/compat.yml), ``has_plan``, ``skip_reason``,
    ``repository`` and the ``nvidia-ctk runtime configure`` command lines (``ctk``).
    """
    host = facts.get("host") or {}
    got = role_plan.role_plan(ROLE, plan, host=host, request=facts.get("request") or {},
                              hardware=facts.get("hardware"), data_path=data_path)
    data = role_plan.role_data(ROLE, got["data"])
    picked = got["stack"].get("container_toolkit") or {}
    chosen = jetpack_plan.container_toolkit_source(options["nvidia_container_toolkit_source"], got["plan"],
                                                   host if isinstance(host, dict) else None)
    # the tasks add "Nothing was changed." to every refusal
    problems = [re.sub(r"\s*Nothing was changed\.$", "", error) for error in chosen["errors"]]
    jetpack = chosen["source"] == "jetpack"
    has_plan = got["source"] == "dlbox_plan" or bool(got["ok"])
    version = str(options["nvidia_container_toolkit_version"] or "") or str(picked.get("version") or "")
    plan_floor = str(picked.get("min_version") or "0")
    floor = plan_floor if picked and _key(plan_floor) > _key(ROLE_FLOOR) else ROLE_FLOOR
    active = version != "" or jetpack
    if not problems and not (has_plan or version or jetpack):
        problems.append(
            "nvidia_container_toolkit_version is empty and there is no plan to take it from (dlbox_plan, or the one "
            "resolved here was refused: %s): run playbooks/plan.yml first (workstation.yml does), or set "
            "nvidia_container_toolkit_version (e.g. \"1.18.2\")." % " ".join(got["errors"]))
    if not problems and active and not jetpack and (not _RELEASE.match(version) or _key(version) < _key(floor)):
        problems.append(
            "nvidia_container_toolkit_version%s is '%s'; it must be a release such as 1.18.2, and at least %s (1.18 "
            "writes containerd drop-ins and ships the CDI refresh units this role uses)." % (
                " (from the plan)" if not options["nvidia_container_toolkit_version"] else "", version, floor))
    url = str(options["nvidia_container_toolkit_repo_url"] or "")
    key_url = str(options["nvidia_container_toolkit_repo_key_url"] or "")
    default = ["--set-as-default"] if options["nvidia_container_toolkit_set_as_default"] else []
    return {
        "problems": problems,
        "source": chosen["source"],
        "source_errors": list(chosen["errors"]),
        "jetpack": jetpack,
        "active": active,
        "has_plan": has_plan,
        "plan_errors": list(got["errors"]),
        "version": version,
        "floor": floor,
        "packages": list(picked.get("packages") or []) or list(data["packages"]),
        "cdi_min": str(picked.get("docker_cdi_min") or ""),
        "skip_reason": SKIP % (facts.get("inventory_hostname") or "this host"),
        "repository": {
            "enabled": active and not jetpack,
            "uri": url + "/stable/deb/$(ARCH)",
            "key_url": key_url or url + "/gpgkey",
            "fingerprint": str(options["nvidia_container_toolkit_repo_key_fingerprint"] or ""),
            "keyring": KEYRING,
            "prereqs": list(REPO_PREREQS),
        },
        "ctk": {engine: ["nvidia-ctk", "runtime", "configure", "--runtime=" + engine] + default
                for engine in _spec.choices(ROLE, "nvidia_container_toolkit_runtimes")},
        # the systemd units that regenerate the CDI spec (data/compat.yml container_toolkit.cdi_refresh_units)
        "cdi_units": list((got["data"].get("container_toolkit") or {}).get("cdi_refresh_units") or []),
        # the packages that install each engine (data/compat.yml container_toolkit.engine_packages)
        "engine_packages": {engine: list(data["engine_packages"].get(engine) or [])
                            for engine in _spec.choices(ROLE, "nvidia_container_toolkit_runtimes")},
    }


def needs(decision):
    """What the decision downloads: from NVIDIA's repository the pinned packages (name=X.Y.Z-*: any Debian revision
    of the release, as install.yml asks apt) and its key; on a Jetson nothing (JetPack brings the toolkit), nor where
    no version is planned or set: ``nothing`` says why (offline mode's mirror and check read it)."""
    repo = decision["repository"]
    if not repo["enabled"]:
        return {"apt": [], "repositories": [], "keys": [], "nothing": (
            "JetPack's toolkit (L4T): nothing from NVIDIA's libnvidia-container repository" if decision["jetpack"] else
            "the plan has no container toolkit and nvidia_container_toolkit_version is empty")}
    return {"apt": list(repo["prereqs"]) + ["%s=%s-*" % (p, decision["version"]) for p in decision["packages"]],
            "repositories": ["container_toolkit"],
            "keys": [{"url": repo["key_url"], "fingerprint": repo["fingerprint"], "dest": repo["keyring"]}]}
