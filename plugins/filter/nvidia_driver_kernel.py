# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The nvidia_driver role's decisions after the install (plugin_utils.nvidia_driver_kernel): which kernels must have the
module and the verdict on modinfo (``nvidia_driver_module_check``, deprecated: the role module's ``module_check``
entry), and what happens to nvidia-persistenced
(``nvidia_driver_persistence``)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.dlbox.stack.plugins.plugin_utils.lazy_import import LazyModule

_nk = LazyModule("plugin_utils.nvidia_driver_kernel")
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


def nvidia_driver_persistence(unit_text, manage=False, build_only=False, installed="", sys_version="", state=None,
                              persistence_mode=True, unit_path="", check_mode=False, dropins=None, dropin_path="",
                              dropin_present=False):
    """``unit_text``: the shipped nvidia-persistenced.service ("" when systemd knows none)."""
    if state is not None and not isinstance(state, dict):
        raise AnsibleFilterError("nvidia_driver_persistence: state must be the fact nvidia_driver_state (a mapping) or none")
    loaded = _nk.loaded_module_version(sys_version, state)
    return _nk.persistence_daemon(bool(manage), bool(build_only), str(installed or ""), loaded, bool(persistence_mode),
                                  str(unit_text or ""), str(unit_path or ""), bool(check_mode),
                                  dict(dropins or {}), str(dropin_path or ""), bool(dropin_present))


def nvidia_driver_failure_logs(result):
    """The DKMS make.log paths a failed task's result names (``ansible_failed_result``)."""
    return _nk.failure_logs(result if isinstance(result, dict) else {})


def nvidia_driver_install_failure(result, tails=None):
    """The words of a failed install (``ansible_failed_result``): apt's, dpkg's and DKMS's error lines, the end of each
    make.log (``tails``: the registered loop results of ``tail`` on them), and ``dpkg --configure -a`` where dpkg left
    packages unconfigured."""
    return _nk.install_failure(result if isinstance(result, dict) else {}, list(tails or []))


class FilterModule(object):
    """dlbox.stack nvidia_driver_kernel filters."""

    def filters(self):
        return {"nvidia_driver_module_check": nvidia_driver_module_check,
                "nvidia_driver_failure_logs": nvidia_driver_failure_logs,
                "nvidia_driver_install_failure": nvidia_driver_install_failure,
                "nvidia_driver_persistence": nvidia_driver_persistence}
