# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``dlbox.stack.role_plan``: a role's part of the plan (plugin_utils.role_plan), for its tasks."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.dlbox.stack.plugins.plugin_utils.lazy_import import LazyModule

_role_plan = LazyModule("plugin_utils.role_plan")


def role_plan(plan, role, host=None, request=None, hardware=None, overrides=None, recheck=False, data_path=None):
    """``dlbox_plan`` (or None) -> the plan ``role`` works from, its slice and the data it hands on."""
    if plan is not None and (not isinstance(plan, dict) or "stack" not in plan):
        raise AnsibleFilterError("role_plan: expected the plan (dlbox_plan, the result of dlbox.stack.resolve_stack) or none")
    pairs = {}
    for key, pair in (overrides or {}).items():
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise AnsibleFilterError("role_plan: overrides.%s must be [variable name, value], not %r" % (key, pair))
        pairs[key] = (str(pair[0]), pair[1])
    try:
        got = _role_plan.role_plan(role, plan, host=host, request=request, hardware=hardware, overrides=pairs,
                                   data_path=data_path, recheck=bool(recheck))
    except (_role_plan.RolePlanError, ValueError) as exc:
        raise AnsibleFilterError(str(exc)) from exc
    out = {k: got[k] for k in ("ok", "errors", "plan", "stack", "host", "source")}
    out["data"] = _role_plan.role_data(role, got["data"])
    return out


class FilterModule(object):
    """dlbox.stack role_plan filter."""

    def filters(self):
        return {"role_plan": role_plan}
