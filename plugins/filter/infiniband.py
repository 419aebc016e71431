# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``dlbox.stack.infiniband_report``: link state and rate per InfiniBand/RDMA port from ``ibstat``."""

from __future__ import annotations

from ansible_collections.dlbox.stack.plugins.plugin_utils.lazy_import import LazyModule

ib = LazyModule("plugin_utils.infiniband")
gs = LazyModule("plugin_utils.gpu_settings")


def infiniband_report(ibstat_text, devices=None):
    """ibstat's output (None: no ibstat) and the RDMA devices of /sys/class/infiniband -> the report (docs sidecar)."""
    return ib.report(ibstat_text, gs.load_data(), devices or [])


class FilterModule(object):
    """dlbox.stack InfiniBand filter."""

    def filters(self):
        return {"infiniband_report": infiniband_report}
