# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``dlbox.stack.cuda_plan`` of the ``cuda`` role."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.dlbox.stack.plugins.filter.stack import resolve_stack
from ansible_collections.dlbox.stack.plugins.plugin_utils import cuda_plan as _cuda_plan
from ansible_collections.dlbox.stack.plugins.plugin_utils.compat_data import CompatDataError, load_compat


def cuda_plan(options, plan, host=None, request=None, hardware=None, installed=None, compilers=None, data_path=None):
    """Decide the cuda role's toolkits, default, removals and verification from the plan (see plugin_utils.cuda_plan)."""
    if not isinstance(options, dict):
        raise AnsibleFilterError("cuda_plan: expected the role's options as a mapping")
    if not isinstance(plan, dict) or "stack" not in plan:
        raise AnsibleFilterError("cuda_plan: expected the plan (dlbox_plan, the result of dlbox.stack.resolve_stack)")
    try:
        data = load_compat(data_path)
    except CompatDataError as exc:
        raise AnsibleFilterError(str(exc)) from exc

    def resolve(version):
        sub_request = dict(request or {}, cuda=version)
        return resolve_stack(host or {}, sub_request, hardware=hardware, data_path=data_path)

    return _cuda_plan.decide(data, plan, options, resolve=resolve, installed=installed, compilers=compilers)


class FilterModule(object):
    def filters(self):
        return {"cuda_plan": cuda_plan}
