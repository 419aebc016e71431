# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters ``dlbox.stack.infiniband_report`` (link state and rate per InfiniBand/RDMA port from ``ibstat``) and
``dlbox.stack.infiniband_doca`` (DOCA-OFED's optional install from NVIDIA's DOCA-Host repository, checked; deprecated:
the role's module decides, plugin_utils/roles/infiniband.py, through ``dlbox.stack.role_module``)."""

from __future__ import annotations

from ansible_collections.dlbox.stack.plugins.plugin_utils.lazy_import import LazyModule

ib = LazyModule("plugin_utils.infiniband")
gs = LazyModule("plugin_utils.gpu_settings")


def infiniband_report(ibstat_text, devices=None):
    """ibstat's output (None: no ibstat) and the RDMA devices of /sys/class/infiniband -> the report (docs sidecar)."""
    return ib.report(ibstat_text, gs.load_data(), devices or [])


def infiniband_doca(install, repo_url="", key_url="", fingerprint="", packages=None, arch="x86_64"):
    """The infiniband_doca_* variables and the host's architecture -> DOCA-OFED's install, checked (docs sidecar)."""
    return ib.doca_install(gs.load_data(), install, repo_url, key_url, fingerprint, packages, arch)


class FilterModule(object):
    """dlbox.stack InfiniBand filter."""

    def filters(self):
        return {"infiniband_report": infiniband_report, "infiniband_doca": infiniband_doca}
