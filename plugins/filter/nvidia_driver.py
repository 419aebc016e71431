# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The nvidia_driver role's one decision filter, ``nvidia_driver_plan`` (see plugin_utils.nvidia_driver_plan)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.dlbox.stack.plugins.plugin_utils.lazy_import import LazyModule

_decision = LazyModule("plugin_utils.roles.nvidia_driver")
_role_plan = LazyModule("plugin_utils.role_plan")


def nvidia_driver_plan(options, plan=None, host=None, request=None, hardware=None, facts=None, data_path=None):
    """Decide what the nvidia_driver role does from its options, the plan and nvidia_driver_facts' results (the
    planner's options as they are: the role itself decides through ``dlbox.stack.role_decide('nvidia_driver', ...)``,
    plugin_utils/roles/nvidia_driver.py, whose first decision is this one).

    ``plan``: ``dlbox_plan`` (or the ``plan`` of an earlier result), used when it already says the role's method,
    branch and module flavour; otherwise the plan is resolved once here (plugin_utils.role_plan) with the role's
    variables as request overrides."""
    if not isinstance(options, dict):
        raise AnsibleFilterError("nvidia_driver_plan: expected the role's options as a mapping")
    if plan is not None and (not isinstance(plan, dict) or "stack" not in plan):
        raise AnsibleFilterError("nvidia_driver_plan: expected the plan (dlbox_plan, the result of dlbox.stack.resolve_stack) or none")
    try:
        return _decision.first(options, plan, host=host, request=request, hardware=hardware, facts=facts, data_path=data_path)
    except _role_plan.RolePlanError as exc:
        raise AnsibleFilterError(str(exc)) from exc


class FilterModule(object):
    """dlbox.stack nvidia_driver filter."""

    def filters(self):
        return {"nvidia_driver_plan": nvidia_driver_plan}
