# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``nvidia_driver_module_check``, deprecated: the role module's ``module_check`` entry (plugin_utils/roles/
nvidia_driver.py), which this calls. The role's other later steps are entries of its module only (issue 47;
meta/runtime.yml tombstones their old filter names)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.dlbox.stack.plugins.plugin_utils.lazy_import import LazyModule

_role = LazyModule("plugin_utils.roles.nvidia_driver")
_roles = LazyModule("plugin_utils.roles")


def nvidia_driver_module_check(decided, running="", boot=None, build_kernels=None, dkms_kernels=None, modinfo=None, expected="",
                               headers=None):
    """Deprecated (meta/runtime.yml, until 1.0.0): the role's module entry
    ``'nvidia_driver' | dlbox.stack.role_module('module_check', decision=..., ...)`` (plugin_utils/roles/nvidia_driver.py
    ``module_check``), which this calls. ``decided``: the role's plan (its decision)."""
    try:
        return _role.module_check(decided, running=running, boot=boot, build_kernels=build_kernels, dkms_kernels=dkms_kernels,
                                  modinfo=modinfo, expected=expected, headers=headers)
    except _roles.RoleModuleError as exc:
        raise AnsibleFilterError(str(exc)) from exc


class FilterModule(object):
    """dlbox.stack nvidia_driver_kernel filters."""

    def filters(self):
        return {"nvidia_driver_module_check": nvidia_driver_module_check}
