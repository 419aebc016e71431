# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Deprecated filters of the ``python_env`` role (issue 47: one module per role, reached by one filter). The role's
tasks reach its module (plugins/plugin_utils/roles/python_env.py) through ``dlbox.stack.role_module``: its decision
(``decide``) and its own entries ``lock`` and ``check_lines``.

``python_env_plan``, ``python_env_wheels`` and ``python_env_lock`` stay public until 1.0.0 for the names released
(meta/runtime.yml: deprecated, and ``pyenv_plan``, ``pyenv_wheels``, ``pyenv_lock`` redirect to them); each calls the
module's function."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.dlbox.stack.plugins.plugin_utils.lazy_import import LazyModule

_roles = LazyModule("plugin_utils.roles")
_role_plan = LazyModule("plugin_utils.role_plan")
_decision = LazyModule("plugin_utils.roles.python_env")


def python_env_plan(environments, plan, host=None, request=None, hardware=None, requirements=None, options=None,
                    check_only=False, data_path=None):
    """The decision module's environments (``roles.python_env.environments``), ``options`` pip's index options.
    Returns ``{ok, errors, environments, driver_floors}``. Deprecated: ``'python_env' | role_module('decide', ...)``."""
    if plan is not None and (not isinstance(plan, dict) or "stack" not in plan):
        raise AnsibleFilterError("python_env_plan: expected the plan (dlbox_plan, the result of dlbox.stack.resolve_stack) or none")
    try:
        out = _decision.environments(environments, plan, host=host, request=request, hardware=hardware,
                                     requirements=requirements, pip=options or {}, check_only=check_only,
                                     data_path=data_path)
    except _role_plan.RolePlanError as exc:
        raise AnsibleFilterError(str(exc)) from exc
    out.pop("plan")
    return out


def python_env_wheels(dists, neutral=None, name=None, majors=None, data_path=None):
    """The module's ``wheels`` entry. Deprecated: ``'python_env' | role_module('wheels', dists=...)``."""
    try:
        return _decision.wheels(dists, neutral, name=name, majors=majors, data_path=data_path)
    except _role_plan.RolePlanError as exc:
        raise AnsibleFilterError(str(exc)) from exc


def python_env_lock(installed, sha256sum_output, header=None):
    """The module's ``lock`` entry. Deprecated: ``'python_env' | role_module('lock', installed=..., ...)``."""
    try:
        return _decision.lock(installed, sha256sum_output, header)
    except _roles.RoleModuleError as exc:
        raise AnsibleFilterError(str(exc)) from exc


class FilterModule(object):
    """dlbox.stack python_env filters, deprecated (meta/runtime.yml, until 1.0.0)."""

    def filters(self):
        return {"python_env_plan": python_env_plan, "python_env_wheels": python_env_wheels,
                "python_env_lock": python_env_lock}
