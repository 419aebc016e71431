# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``dlbox.stack.role_module``: one entry point of a role's module (plugin_utils/roles/), for tasks and playbooks."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.dlbox.stack.plugins.plugin_utils.lazy_import import LazyModule

_roles = LazyModule("plugin_utils.roles")
_spec = LazyModule("plugin_utils.roles._spec")
_vendor = LazyModule("plugin_utils.roles._vendor")
_role_plan = LazyModule("plugin_utils.role_plan")
_offline = LazyModule("plugin_utils.offline")
_compat_data = LazyModule("plugin_utils.compat_data")


def role_module(role, entry, **kwargs):
    """``'docker' | dlbox.stack.role_module('vendor')``; ``'common' | dlbox.stack.role_module('needs', given=...)``."""
    if not isinstance(role, str):
        raise AnsibleFilterError("role_module: expected a role name, not %r" % (role,))
    errors = (_roles.RoleModuleError, _spec.SpecError, _vendor.VendorDataError, _role_plan.RolePlanError,
              _offline.OfflineError, _compat_data.CompatDataError)
    try:
        return _roles.call(role, str(entry), **kwargs)
    except errors as exc:
        raise AnsibleFilterError(str(exc)) from exc
    except TypeError as exc:
        raise AnsibleFilterError("role_module(%s, %s): %s" % (role, entry, exc)) from exc


class FilterModule(object):
    """dlbox.stack role_module filter."""

    def filters(self):
        return {"role_module": role_module}
