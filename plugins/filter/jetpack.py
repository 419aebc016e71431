# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters ``dlbox.stack.jetpack_plan`` of the ``jetpack`` role and ``dlbox.stack.container_toolkit_source`` (where the
``nvidia_container_toolkit`` role takes the toolkit from: NVIDIA's repository, or JetPack's on L4T)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.dlbox.stack.plugins.plugin_utils.lazy_import import LazyModule

_jetpack_plan = LazyModule("plugin_utils.jetpack_plan")
_compat_data = LazyModule("plugin_utils.compat_data")


def jetpack_plan(options, plan, release=None, model=None, nvpmodel_conf=None, nvpmodel_query=None, data_path=None, compat_path=None):
    """Decide the jetpack role's repositories, packages, power mode and clocks (see plugin_utils.jetpack_plan)."""
    if not isinstance(options, dict):
        raise AnsibleFilterError("jetpack_plan: expected the role's options as a mapping")
    if plan is not None and not isinstance(plan, dict):
        raise AnsibleFilterError("jetpack_plan: expected the plan (dlbox_plan) or none")
    try:
        data = _jetpack_plan.load_jetson_data(data_path)
        compat = _compat_data.load_compat(compat_path)
    except (_jetpack_plan.JetsonDataError, _compat_data.CompatDataError) as exc:
        raise AnsibleFilterError(str(exc)) from exc
    return _jetpack_plan.decide(plan, options, release_text=release, model_text=model, nvpmodel_conf=nvpmodel_conf,
                                nvpmodel_query=nvpmodel_query, data=data, compat=compat)


def container_toolkit_source(choice, plan, host=None):
    """``nvidia_container_toolkit_source`` (auto, nvidia, jetpack) decided for the plan and the host's facts."""
    if plan is not None and not isinstance(plan, dict):
        raise AnsibleFilterError("container_toolkit_source: expected the plan (dlbox_plan) or none")
    return _jetpack_plan.container_toolkit_source(choice, plan, host if isinstance(host, dict) else None)


class FilterModule(object):
    def filters(self):
        return {"jetpack_plan": jetpack_plan, "container_toolkit_source": container_toolkit_source}
