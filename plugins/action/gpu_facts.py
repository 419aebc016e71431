# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action for ``dlbox.stack.gpu_facts``: run the module on the host, then name and classify each GPU
from the controller's ``data/compat.yml`` (the data file stays on the controller)."""

from __future__ import annotations

from ansible.plugins.action import ActionBase

from ansible_collections.dlbox.stack.plugins.plugin_utils.compat_data import CompatDataError, load_gpu_index


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
            index = load_gpu_index()
        except CompatDataError as exc:
            result["failed"] = True
            result["msg"] = "gpu_facts: cannot read the compatibility data: %s" % exc
            return result
        host["gpus"] = classify_host_gpus(index, host.get("gpus") or [])
        host["compat_data_date"] = index.date
        host["gpu_catalog_date"] = index.catalog_date
        if isinstance(host.get("jetson"), dict):
            host["jetson"] = jetson_with_jetpack(index, host["jetson"])
        return result


def classify_host_gpus(index, gpus):
    """The host's GPUs with ``catalog`` added: {name, architecture, arch, cc, chip, memory_gb, form,
    legacy_branch, known, warning}. ``index``: a plugin_utils.gpu_catalog.GpuIndex."""
    out = []
    for gpu, info in zip(gpus, index.classify(gpus)):
        gpu = dict(gpu)
        gpu["catalog"] = {
            "name": info.get("catalog_name"),
            "architecture": info.get("arch_name") or info.get("arch"),
            "arch": info.get("arch"),
            "cc": info.get("cc"),
            "chip": info.get("chip"),
            "memory_gb": info.get("memory_gb"),
            "form": info.get("form"),
            "legacy_branch": info.get("legacy_branch"),
            "known": bool(info.get("known")),
            "warning": info.get("warning"),
        }
        out.append(gpu)
    return out


def jetson_with_jetpack(index, jetson):
    """The Jetson facts with ``jetpack``: the JetPack release of the detected L4T, from data/compat.yml."""
    jetson = dict(jetson)
    jetson["jetpack"] = index.jetpack_for_l4t(jetson.get("l4t"))
    return jetson
