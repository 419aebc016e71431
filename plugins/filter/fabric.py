# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters ``dlbox.stack.fabric_state`` and ``dlbox.stack.cuda_failure_hint``: NVSwitch hosts' fabric and error 802."""

from __future__ import annotations

from ansible_collections.dlbox.stack.plugins.plugin_utils.lazy_import import LazyModule

fs = LazyModule("plugin_utils.fabric_state")


def fabric_state(smi_text, service_state, smi_rc=0, service="nvidia-fabricmanager"):
    """``nvidia-smi -q`` text and ``systemctl is-active``'s word -> ``{ready, waiting, failed, gpus, states, reason}``."""
    return fs.verdict(smi_text or "", service_state or "", int(smi_rc or 0), service)


def cuda_failure_hint(text, nvswitch=True, service="nvidia-fabricmanager"):
    """A CUDA check's output -> a sentence naming Fabric Manager when it has error 802, else ``''``."""
    if isinstance(text, (list, tuple)):
        text = "\n".join(str(t) for t in text)
    return fs.cuda_failure_hint(text or "", bool(nvswitch), service)


class FilterModule(object):
    """dlbox.stack fabric filters."""

    def filters(self):
        return {"fabric_state": fabric_state, "cuda_failure_hint": cuda_failure_hint}
