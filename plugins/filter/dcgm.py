# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``dlbox.stack.dcgm_plan``: the DCGM 4 package, its paired dcgm-exporter and where the exporter listens."""

from __future__ import annotations

from ansible_collections.dlbox.stack.plugins.plugin_utils.lazy_import import LazyModule

dp = LazyModule("plugin_utils.dcgm_plan")


def dcgm_plan(cuda_version, request, installed_dcgm=None):
    """The driver's CUDA version (or ``nvidia-smi -q`` text) and the role's variables -> the plan."""
    return dp.plan(cuda_version or "", dict(request or {}), installed_dcgm=installed_dcgm or None)


class FilterModule(object):
    """dlbox.stack DCGM filter."""

    def filters(self):
        return {"dcgm_plan": dcgm_plan}
