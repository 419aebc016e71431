# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action for ``dlbox.stack.gpu_facts``: run the module on the host, then name and classify each GPU
from the controller's ``data/compat.yml`` (the data file stays on the controller)."""

from __future__ import annotations

from ansible.plugins.action import ActionBase

from ansible_collections.dlbox.stack.plugins.module_utils import compat
from ansible_collections.dlbox.stack.plugins.plugin_utils.compat_data import CompatDataError, load_compat


class ActionModule(ActionBase):
    """Run gpu_facts, then add catalog facts (name, architecture, compute capability, memory)."""

    TRANSFERS_FILES = False
    _supports_check_mode = True

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        result.update(self._execute_module(module_name="dlbox.stack.gpu_facts", module_args=self._task.args,
                                           task_vars=task_vars))
        host = (result.get("ansible_facts") or {}).get("dlbox_host")
        if result.get("failed") or not isinstance(host, dict):
            return result
        try:
            data = load_compat()
        except CompatDataError as exc:
            result["failed"] = True
            result["msg"] = "gpu_facts: cannot read the compatibility data: %s" % exc
            return result
        host["gpus"] = classify_host_gpus(data, host.get("gpus") or [])
        host["compat_data_date"] = data.get("date")
        return result


def classify_host_gpus(data, gpus):
    """The host's GPUs with ``catalog`` added: {name, architecture, cc, memory_gb, form, known}."""
    out = []
    for gpu, info in zip(gpus, compat.classify_gpus(data, gpus)):
        gpu = dict(gpu)
        gpu["catalog"] = {
            "name": info.get("catalog_name"),
            "architecture": info.get("arch_name") or info.get("arch"),
            "cc": info.get("cc"),
            "memory_gb": info.get("memory_gb"),
            "form": info.get("form"),
            "known": bool(info.get("known")),
        }
        out.append(gpu)
    return out
