# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters ``dlbox.stack.fabric_state``, ``dlbox.stack.fabric_not_ready_hint`` and ``dlbox.stack.imex_state``: NVSwitch
hosts' fabric (and what to say when it does not come up) and IMEX on GB200/GB300 NVL trays. Error 802 after a CUDA check
is named by the cuda role's decision (plugins/plugin_utils/roles/cuda.py)."""

from __future__ import annotations

from ansible_collections.dlbox.stack.plugins.plugin_utils.lazy_import import LazyModule

fs = LazyModule("plugin_utils.fabric_state")
_driver = LazyModule("plugin_utils.roles.nvidia_driver")
imex = LazyModule("plugin_utils.imex_ctl")


def fabric_state(smi_text, service_state, smi_rc=0, service="nvidia-fabricmanager"):
    """``nvidia-smi -q`` text and ``systemctl is-active``'s word -> ``{ready, waiting, failed, gpus, states, reason}``."""
    return fs.verdict(smi_text or "", service_state or "", int(smi_rc or 0), service)


def fabric_not_ready_hint(result, timeout_s, fabric=None, installed=None, driver_version=None, missing_modules=None,
                          logs="", service="nvidia-fabricmanager", fm_package=None):
    """Deprecated (meta/runtime.yml, until 1.0.0): ``'nvidia_driver' | dlbox.stack.role_module('fabric_not_ready_hint',
    result=..., timeout_s=..., ...)``, which this calls."""
    return _driver.fabric_not_ready_hint(result=result, timeout_s=timeout_s, fabric=fabric, installed=installed,
                                         driver_version=driver_version, missing_modules=missing_modules, logs=logs,
                                         service=service, fm_package=fm_package)


def imex_state(query_text, domain_text="", service_state="active", driver_version=None, service="nvidia-imex"):
    """``nvidia-imex-ctl -q`` and ``-N`` texts and ``systemctl is-active``'s word -> ``{ready, waiting, failed, judged,
    daemon, domain, reason, warnings}``."""
    return imex.verdict(query_text or "", domain_text or "", service_state or "", driver_version or None, service)


class FilterModule(object):
    """dlbox.stack fabric filters."""

    def filters(self):
        return {"fabric_state": fabric_state, "imex_state": imex_state,
                "fabric_not_ready_hint": fabric_not_ready_hint}
