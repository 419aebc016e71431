# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The nvidia_driver role's one decision filter, ``nvidia_driver_plan`` (see plugin_utils.nvidia_driver_plan)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.dlbox.stack.plugins.plugin_utils.lazy_import import LazyModule

_plan = LazyModule("plugin_utils.nvidia_driver_plan")
_role_plan = LazyModule("plugin_utils.role_plan")


def nvidia_driver_plan(options, plan=None, host=None, request=None, hardware=None, facts=None, data_path=None):
    """Decide what the nvidia_driver role does from its options, the plan and nvidia_driver_facts' results.

    ``plan``: ``dlbox_plan`` (or the ``plan`` of an earlier result), used when it already says the role's method,
    branch and module flavour; otherwise the plan is resolved once here (plugin_utils.role_plan) with the role's
    variables as request overrides."""
    if not isinstance(options, dict):
        raise AnsibleFilterError("nvidia_driver_plan: expected the role's options as a mapping")
    if plan is not None and (not isinstance(plan, dict) or "stack" not in plan):
        raise AnsibleFilterError("nvidia_driver_plan: expected the plan (dlbox_plan, the result of dlbox.stack.resolve_stack) or none")
    fits = _plan.plan_fits(plan, options.get("method") or "", str(options.get("branch") or ""), options.get("kernel_modules") or "",
                           options.get("profile") or "")
    try:
        got = _role_plan.role_plan("nvidia_driver", plan if fits else None, host=host, request=request, hardware=hardware,
                                   overrides=None if fits else _plan.overrides(options), data_path=data_path)
    except _role_plan.RolePlanError as exc:
        raise AnsibleFilterError(str(exc)) from exc
    used = got["plan"]
    out = _plan.decide(got["data"], options, used, host=host, facts=facts)
    out["plan"] = {"ok": used.get("ok"), "errors": list(used.get("errors") or []), "host": used.get("host") or {},
                   "stack": got["stack"], "source": got["source"]}
    return out


class FilterModule(object):
    """dlbox.stack nvidia_driver filter."""

    def filters(self):
        return {"nvidia_driver_plan": nvidia_driver_plan}
