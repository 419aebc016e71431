# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``dlbox.stack.role_decide``: a role's decision for one host (plugin_utils/roles/<role>.py decide and needs)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.dlbox.stack.plugins.plugin_utils.lazy_import import LazyModule

_roles = LazyModule("plugin_utils.roles")
_spec = LazyModule("plugin_utils.roles._spec")
_vendor = LazyModule("plugin_utils.roles._vendor")
_role_plan = LazyModule("plugin_utils.role_plan")
_compat_data = LazyModule("plugin_utils.compat_data")
_gpu_settings = LazyModule("plugin_utils.gpu_settings")


def role_decide(role, plan=None, options=None, facts=None):
    """``'docker' | dlbox.stack.role_decide(dlbox_plan | default(none), options, facts)`` -> the decision."""
    if not isinstance(role, str):
        raise AnsibleFilterError("role_decide: expected a role name, not %r" % (role,))
    if plan is not None and not isinstance(plan, dict):
        raise AnsibleFilterError("role_decide(%s): plan must be dlbox_plan or none" % role)
    for name, value in (("options", options), ("facts", facts)):
        if value is not None and not isinstance(value, dict):
            raise AnsibleFilterError("role_decide(%s): %s must be a mapping, not %r" % (role, name, type(value).__name__))
    errors = (_roles.RoleModuleError, _spec.SpecError, _vendor.VendorDataError, _role_plan.RolePlanError,
              _compat_data.CompatDataError, _gpu_settings.GpuSettingsError)
    try:
        return _roles.decide(role, plan, options, facts)
    except errors as exc:
        raise AnsibleFilterError(str(exc)) from exc


class FilterModule(object):
    """dlbox.stack role_decide filter."""

    def filters(self):
        return {"role_decide": role_decide}
