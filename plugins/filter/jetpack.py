# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Deprecated filters ``dlbox.stack.jetpack_plan`` and ``dlbox.stack.jetpack_pytorch`` of the ``jetpack`` role: the
role's tasks reach its module (plugin_utils/roles/jetpack.py) through ``dlbox.stack.role_module``, its ``decide``
entry and its own ``pytorch`` and ``power_result``; both stay until 1.0.0 (meta/runtime.yml) and call the same
functions."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.dlbox.stack.plugins.plugin_utils.lazy_import import LazyModule

_jetpack_plan = LazyModule("plugin_utils.jetpack_plan")
_compat_data = LazyModule("plugin_utils.compat_data")
_roles = LazyModule("plugin_utils.roles")
_module = LazyModule("plugin_utils.roles.jetpack")


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
    """The module's ``pytorch`` entry (where a Jetson's PyTorch comes from). Deprecated (meta/runtime.yml, until
    1.0.0): ``'jetpack' | role_module('pytorch', options=..., plan=...)``."""
    try:
        return _module.pytorch(options, plan, listing=listing, data_path=data_path, reach=reach)
    except _roles.RoleModuleError as exc:
        raise AnsibleFilterError(str(exc)) from exc


class FilterModule(object):
    def filters(self):
        return {"jetpack_plan": jetpack_plan, "jetpack_pytorch": jetpack_pytorch}
