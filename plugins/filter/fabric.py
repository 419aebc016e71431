# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters ``dlbox.stack.fabric_state``, ``dlbox.stack.fabric_not_ready_hint`` and ``dlbox.stack.imex_state``: NVSwitch
hosts' fabric (and what to say when it does not come up) and IMEX on GB200/GB300 NVL trays. Error 802 after a CUDA check
is named by the cuda role's decision (plugins/plugin_utils/roles/cuda.py)."""

from __future__ import annotations

from ansible_collections.dlbox.stack.plugins.plugin_utils.lazy_import import LazyModule

fs = LazyModule("plugin_utils.fabric_state")
imex = LazyModule("plugin_utils.imex_ctl")


def fabric_state(smi_text, service_state, smi_rc=0, service="nvidia-fabricmanager"):
    """``nvidia-smi -q`` text and ``systemctl is-active``'s word -> ``{ready, waiting, failed, gpus, states, reason}``."""
    return fs.verdict(smi_text or "", service_state or "", int(smi_rc or 0), service)


def fabric_not_ready_hint(result, timeout_s, fabric=None, installed=None, driver_version=None, missing_modules=None,
                          logs="", service="nvidia-fabricmanager", fm_package=None):
    """``fabric_state``'s answer at the end of the wait -> the message naming the causes found and what to check.
    ``fm_package``: the plan's Fabric Manager package (``nvidia-fabricmanager-580`` from Ubuntu's archive), else
    ``nvidia-fabricmanager``."""
    if isinstance(logs, (list, tuple)):
        logs = "\n".join(str(line) for line in logs)
    return fs.not_ready_hint(result or {}, timeout_s, fabric or None, dict(installed or {}), driver_version or None,
                             list(missing_modules or []), logs or "", service, fm_package or "nvidia-fabricmanager")


def imex_state(query_text, domain_text="", service_state="active", driver_version=None, service="nvidia-imex"):
    """``nvidia-imex-ctl -q`` and ``-N`` texts and ``systemctl is-active``'s word -> ``{ready, waiting, failed, judged,
    daemon, domain, reason, warnings}``."""
    return imex.verdict(query_text or "", domain_text or "", service_state or "", driver_version or None, service)


class FilterModule(object):
    """dlbox.stack fabric filters."""

    def filters(self):
        return {"fabric_state": fabric_state, "imex_state": imex_state,
                "fabric_not_ready_hint": fabric_not_ready_hint}
