# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``dlbox.stack.role_module``: the one filter that reaches every role's module (plugin_utils/roles/, the
registry ``ROLES``): its options, vendor facts, decision, needs and part of the plan. ``role_decide`` (plugins/filter/
role_decide.py) is its ``decide`` entry under the name the roles' tasks already use."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.dlbox.stack.plugins.plugin_utils.lazy_import import LazyModule

_roles = LazyModule("plugin_utils.roles")
_spec = LazyModule("plugin_utils.roles._spec")
_vendor = LazyModule("plugin_utils.roles._vendor")
_role_plan = LazyModule("plugin_utils.role_plan")
_offline = LazyModule("plugin_utils.offline")
_compat_data = LazyModule("plugin_utils.compat_data")
_gpu_settings = LazyModule("plugin_utils.gpu_settings")


def _errors():
    return (_roles.RoleModuleError, _spec.SpecError, _vendor.VendorDataError, _role_plan.RolePlanError,
            _offline.OfflineError, _compat_data.CompatDataError, _gpu_settings.GpuSettingsError)


def _check_decide(role, plan, given, facts):
    if plan is not None and not isinstance(plan, dict):
        raise AnsibleFilterError("role_decide(%s): plan must be dlbox_plan or none" % role)
    for name, value in (("options", given), ("facts", facts)):
        if value is not None and not isinstance(value, dict):
            raise AnsibleFilterError("role_decide(%s): %s must be a mapping, not %r" % (role, name, type(value).__name__))


def _check_plan(kwargs):
    plan = kwargs.get("plan")
    if plan is not None and (not isinstance(plan, dict) or "stack" not in plan):
        raise AnsibleFilterError("role_module: expected the plan (dlbox_plan, the result of dlbox.stack.resolve_stack) "
                                 "or none")
    pairs = {}
    for key, pair in (kwargs.get("overrides") or {}).items():
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise AnsibleFilterError("role_module: overrides.%s must be [variable name, value], not %r" % (key, pair))
        pairs[key] = (str(pair[0]), pair[1])
    return dict(kwargs, overrides=pairs, recheck=bool(kwargs.get("recheck")))


def role_module(role, entry, **kwargs):
    """``'docker' | dlbox.stack.role_module('vendor')``; ``'common' | dlbox.stack.role_module('needs', given=...)``;
    ``'nccl' | dlbox.stack.role_module('decide', plan=..., given=..., facts=...)``;
    ``'common' | dlbox.stack.role_module('plan', plan=dlbox_plan | default(none), host=..., ...)``."""
    if not isinstance(role, str):
        raise AnsibleFilterError("role_module: expected a role name, not %r" % (role,))
    entry = str(entry)
    if entry == "decide":
        _check_decide(role, kwargs.get("plan"), kwargs.get("given"), kwargs.get("facts"))
    elif entry == "plan":
        kwargs = _check_plan(kwargs)
    try:
        return _roles.call(role, entry, **kwargs)
    except _errors() as exc:
        raise AnsibleFilterError(str(exc)) from exc
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError("role_module(%s, %s): %s" % (role, entry, exc)) from exc


class FilterModule(object):
    """dlbox.stack role_module filter."""

    def filters(self):
        return {"role_module": role_module}
