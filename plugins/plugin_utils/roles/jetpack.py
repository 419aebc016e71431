# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The jetpack role's module (filter ``dlbox.stack.role_module``; issue 47).

- ``options(given)``: the role's variables, defaults from its argument specs (typed).
- ``vendor()``: data/jetson.yml ``repository``: ``{"url", "key_file", "fingerprint", "preinstalled_list"}``
  (``preinstalled_list``: the sources list a flashed JetPack has, written by nvidia-l4t-apt-source, which the role's
  preflight reads before it decides).
- ``decide(plan, options, facts)``: ``facts`` = what the preflight read on the host: {"release":
  /etc/nv_tegra_release, "model": the device-tree model, "nvpmodel_conf": /etc/nvpmodel.conf, "nvpmodel_query":
  ``nvpmodel -q``, "flashed_list": the flashed sources list, "nvpmodel_status": /var/lib/nvpmodel/status,
  "installed_meta": ``dpkg-query -W`` of ``nvidia-*``, "reboot_allowed": dlbox_reboot_allowed (None when unset)}
  -> :func:`jetpack_plan.decide`'s result (repositories, key, packages, power mode, clocks; or why not).
- ``needs(decision)``: {"apt": the packages, "repositories": the apt sources' URIs, "keys": [{url, fingerprint}]}.
- the role's own entries: ``pytorch(options, plan, listing, reach)`` (where the plan's PyTorch comes from on a Jetson,
  :mod:`jetpack_pytorch`: the source, the exact torch, python_env's settings; with ``listing``, the HTML of the
  source's page for torch, whether the wheel is there; with ``reach``, what the host got for each library archive,
  whether it can fetch them: tasks/pytorch.yml) and ``power_result(power, rc, output)`` (what ``nvpmodel -m``,
  answered "no", did: :func:`jetpack_plan.power_result`, tasks/power.yml).

The deprecated filter ``dlbox.stack.jetpack_plan`` reaches the same :func:`jetpack_plan.decide`.
"""

from __future__ import annotations

from ansible_collections.dlbox.stack.plugins.plugin_utils import compat_data, jetpack_plan, jetpack_pytorch
from ansible_collections.dlbox.stack.plugins.plugin_utils.roles import RoleModuleError, _spec

ROLE = "jetpack"
# jetpack_plan's option keys (OPTION_KEYS) from the role's variables; reboot_allowed is the group's, a fact
OPTIONS = {"base_url": "jetpack_base_url", "key_url": "jetpack_key_url", "key_fingerprint": "jetpack_key_fingerprint",
           "components": "jetpack_components", "power_mode": "jetpack_power_mode",
           "power_mode_reboot": "jetpack_power_mode_reboot", "clocks": "jetpack_clocks",
           "container_runtime": "jetpack_container_runtime"}
FACTS = ("release", "model", "nvpmodel_conf", "nvpmodel_query", "flashed_list", "nvpmodel_status", "installed_meta")


def options(given=None):
    return _spec.typed(ROLE, given)


def _jetson_data(data_path=None):
    try:
        return jetpack_plan.load_jetson_data(data_path)
    except jetpack_plan.JetsonDataError as exc:
        raise RoleModuleError(str(exc)) from exc


def vendor(data_path=None):
    repo = _jetson_data(data_path)["repository"]
    return {"url": repo["base_url"], "key_file": repo["key_file"], "fingerprint": repo["key_fingerprint"],
            "preinstalled_list": repo["preinstalled_list"]}


def decide(plan, options, facts, data=None, compat=None):  # pylint: disable=redefined-outer-name
    """jetpack_plan.decide on the role's variables and the host's reads (``facts``)."""
    request = {key: options[name] for key, name in OPTIONS.items()}
    request["reboot_allowed"] = facts.get("reboot_allowed")
    data = data if data is not None else _jetson_data()
    compat = compat if compat is not None else compat_data.load_compat()
    return jetpack_plan.decide(plan, request, data=data, compat=compat,
                               **{key + "_text" if key in ("release", "model") else key: facts.get(key)
                                  for key in FACTS})


def needs(decision):
    """Nothing for a refused decision."""
    if not decision["ok"]:
        return {"apt": [], "repositories": [], "keys": []}
    return {"apt": list(decision["packages"]), "repositories": [repo["uri"] for repo in decision["repositories"]],
            "keys": [dict(decision["key"])] if decision["key"] else []}


def pytorch(options, plan, listing=None, data_path=None, reach=None):  # pylint: disable=redefined-outer-name
    """Where the plan's PyTorch comes from on a Jetson: ``options`` {source, mirror_url, mirror_kind, libraries_url,
    components} (the role's jetpack_pytorch_* variables and jetpack_components), ``plan`` dlbox_plan or None."""
    if not isinstance(options, dict):
        raise RoleModuleError("role_module(jetpack, pytorch): expected the options (source, mirror_url, mirror_kind) as a mapping")
    if plan is not None and not isinstance(plan, dict):
        raise RoleModuleError("role_module(jetpack, pytorch): expected the plan (dlbox_plan) or none")
    data = _jetson_data(data_path)
    stack = (plan or {}).get("stack") or {}
    python = (stack.get("python") or {}).get("version")
    # an index mirror is pinned by what it holds: the plan's exact NVIDIA build, or the community's numbering of it
    holds = jetpack_pytorch.listing_versions(listing, python) if listing is not None else None
    decision = jetpack_pytorch.choose(stack.get("pytorch"), options, data.get("pytorch_sources") or {"builds": {}},
                                      jetpack=stack.get("jetpack"), holds=holds)
    if decision["ok"] and listing is not None:
        found = jetpack_pytorch.check_listing(listing, decision, python=python)
        decision = dict(decision, ok=found["ok"], errors=found["errors"], versions=found["versions"])
    if decision["ok"] and reach is not None:
        if not isinstance(reach, list):
            raise RoleModuleError("role_module(jetpack, pytorch): reach must be a list of {url, ok, answer}")
        reached = jetpack_pytorch.check_reach(decision, reach)
        decision = dict(decision, ok=reached["ok"], errors=reached["errors"])
    return decision


def power_result(power, rc, output=None):
    """What ``nvpmodel -m``, answered "no", did: applied, pending_reboot, failed; ``rc`` none (nvpmodel not run):
    unchanged, or pending_reboot where nvpmodel's status already holds the mode."""
    if not isinstance(power, dict):
        raise RoleModuleError("role_module(jetpack, power_result): expected the decision's power (__jetpack_decided.power) as a mapping")
    return jetpack_plan.power_result(power, rc, output)
