# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``dlbox.stack.driver_state``: loaded, pending reboot, absent (plugin_utils.driver_state)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.dlbox.stack.plugins.plugin_utils.lazy_import import LazyModule

_ds = LazyModule("plugin_utils.driver_state")


def driver_state(recorded=None, host=None, installed=None, smi=None, proc=None):
    """``recorded`` (the fact nvidia_driver_state) when set, else the state from ``host`` (gpu_facts); with
    ``installed``/``smi``/``proc`` given, the state read right after an install (nvidia_driver's own use)."""
    if recorded is not None and not isinstance(recorded, dict):
        raise AnsibleFilterError("driver_state: expected the fact nvidia_driver_state (a mapping) or none, not %r" % (recorded,))
    if host is not None and not isinstance(host, dict):
        raise AnsibleFilterError("driver_state: host must be ansible_facts['dlbox_host'] (dlbox.stack.gpu_facts) or none")
    if installed is not None or smi is not None or proc is not None:
        return _ds.from_probes(installed=installed, smi=smi, proc=proc)
    return _ds.driver_state(recorded, host)


class FilterModule(object):
    """dlbox.stack driver_state filter."""

    def filters(self):
        return {"driver_state": driver_state}
