# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters ``dlbox.stack.jetpack_plan`` (deprecated: the role's module decides, plugin_utils/roles/jetpack.py) and
``dlbox.stack.jetpack_pytorch`` of the ``jetpack`` role
(``dlbox.stack.jetpack_power_result`` reads what ``nvpmodel`` did)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.dlbox.stack.plugins.plugin_utils.lazy_import import LazyModule

_jetpack_plan = LazyModule("plugin_utils.jetpack_plan")
_jetpack_pytorch = LazyModule("plugin_utils.jetpack_pytorch")
_compat_data = LazyModule("plugin_utils.compat_data")


def jetpack_plan(options, plan, release=None, model=None, nvpmodel_conf=None, nvpmodel_query=None, data_path=None, compat_path=None,
                 flashed_list=None, nvpmodel_status=None, installed_meta=None):
    """Decide the jetpack role's repositories, packages, power mode and clocks (see plugin_utils.jetpack_plan).
    Deprecated (meta/runtime.yml, until 1.0.0): the role decides through ``'jetpack' | role_module('decide', ...)``
    (plugin_utils/roles/jetpack.py), which calls the same ``jetpack_plan.decide``."""
    if not isinstance(options, dict):
        raise AnsibleFilterError("jetpack_plan: expected the role's options as a mapping")
    if plan is not None and not isinstance(plan, dict):
        raise AnsibleFilterError("jetpack_plan: expected the plan (dlbox_plan) or none")
    try:
        data = _jetpack_plan.load_jetson_data(data_path)
        compat = _compat_data.load_compat(compat_path)
    except (_jetpack_plan.JetsonDataError, _compat_data.CompatDataError) as exc:
        raise AnsibleFilterError(str(exc)) from exc
    return _jetpack_plan.decide(plan, options, release_text=release, model_text=model, nvpmodel_conf=nvpmodel_conf,
                                nvpmodel_query=nvpmodel_query, data=data, compat=compat, flashed_list=flashed_list,
                                nvpmodel_status=nvpmodel_status, installed_meta=installed_meta)


def jetpack_pytorch(options, plan, listing=None, data_path=None, reach=None):
    """Where the plan's PyTorch comes from on a Jetson (plugin_utils.jetpack_pytorch): the source, the exact torch,
    python_env's settings; with ``listing`` (the HTML of the source's page for torch), whether the wheel is there; with
    ``reach`` (what the host got for each library archive it needs), whether it can fetch them."""
    if not isinstance(options, dict):
        raise AnsibleFilterError("jetpack_pytorch: expected the options (source, mirror_url, mirror_kind) as a mapping")
    if plan is not None and not isinstance(plan, dict):
        raise AnsibleFilterError("jetpack_pytorch: expected the plan (dlbox_plan) or none")
    try:
        data = _jetpack_plan.load_jetson_data(data_path)
    except _jetpack_plan.JetsonDataError as exc:
        raise AnsibleFilterError(str(exc)) from exc
    stack = (plan or {}).get("stack") or {}
    python = (stack.get("python") or {}).get("version")
    # an index mirror is pinned by what it holds: the plan's exact NVIDIA build, or the community's numbering of it
    holds = _jetpack_pytorch.listing_versions(listing, python) if listing is not None else None
    decision = _jetpack_pytorch.choose(stack.get("pytorch"), options, data.get("pytorch_sources") or {"builds": {}},
                                       jetpack=stack.get("jetpack"), holds=holds)
    if decision["ok"] and listing is not None:
        found = _jetpack_pytorch.check_listing(listing, decision, python=python)
        decision = dict(decision, ok=found["ok"], errors=found["errors"], versions=found["versions"])
    if decision["ok"] and reach is not None:
        if not isinstance(reach, list):
            raise AnsibleFilterError("jetpack_pytorch: reach must be a list of {url, ok, answer}")
        reached = _jetpack_pytorch.check_reach(decision, reach)
        decision = dict(decision, ok=reached["ok"], errors=reached["errors"])
    return decision


def jetpack_power_result(power, rc, output=None):
    """What ``nvpmodel -m``, answered "no", did (plugin_utils.jetpack_plan.power_result): applied, pending_reboot, failed;
    ``rc`` none (nvpmodel not run): unchanged, or pending_reboot where nvpmodel's status already holds the mode."""
    if not isinstance(power, dict):
        raise AnsibleFilterError("jetpack_power_result: expected the plan's power (jetpack_plan's power) as a mapping")
    return _jetpack_plan.power_result(power, rc, output)


class FilterModule(object):
    def filters(self):
        return {"jetpack_plan": jetpack_plan, "jetpack_pytorch": jetpack_pytorch, "jetpack_power_result": jetpack_power_result}
