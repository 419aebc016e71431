# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``dlbox.stack.gpu_settings_plan``: GPU settings checked against the GPU's own limits."""

from __future__ import annotations

from ansible_collections.dlbox.stack.plugins.plugin_utils.lazy_import import LazyModule

gs = LazyModule("plugin_utils.gpu_settings")


def gpu_settings_plan(smi_text, request, mig_config=None, mig_selected=""):
    """``nvidia-smi -q -x`` (or ``-q``) and the role's variables -> the plan (see the docs sidecar)."""
    result = gs.plan(smi_text or "", dict(request or {}))
    if mig_config and result["ok"]:
        result["problems"] = gs.mig_problems(mig_config, mig_selected, smi_text or "")
        result["ok"] = not result["problems"]
    return result


class FilterModule(object):
    """dlbox.stack GPU settings filter."""

    def filters(self):
        return {"gpu_settings_plan": gpu_settings_plan}
