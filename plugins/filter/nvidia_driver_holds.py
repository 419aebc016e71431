# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The nvidia_driver role's holds (plugin_utils.nvidia_driver_holds): what to hold, what to release
(``nvidia_driver_hold_changes``)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.dlbox.stack.plugins.plugin_utils.lazy_import import LazyModule

_nh = LazyModule("plugin_utils.nvidia_driver_holds")


def _names(value, what):
    if value is None:
        return []
    if isinstance(value, str):
        return value.split()
    if not isinstance(value, (list, tuple)):
        raise AnsibleFilterError("nvidia_driver_hold_changes: %s must be a list of package names" % what)
    return [str(v) for v in value]


def nvidia_driver_hold_changes(wanted, held=None, recorded=None, installed=None):
    """``wanted``: the holds the role wants (the plan's ``holds``, or a rollback's holds from before); ``held``:
    ``apt-mark showhold``'s lines; ``recorded``: what the role held before (its record; None: no record, the holds on
    driver packages are taken as the role's); ``installed``: dpkg's package names (None: not read)."""
    return _nh.hold_changes(_names(wanted, "wanted"), _names(held, "held"), None if recorded is None else _names(recorded, "recorded"),
                            None if installed is None else _names(installed, "installed"))


def nvidia_driver_kernel_without_module(simulation, installed=None):
    """``simulation``: ``apt-get -s upgrade --with-new-pkgs``'s output (text or a registered result); ``installed``:
    dpkg's package names. The new kernel releases apt would install without their signed NVIDIA module."""
    if isinstance(simulation, dict):
        simulation = simulation.get("stdout", "")
    if not isinstance(simulation, str):
        raise AnsibleFilterError("nvidia_driver_kernel_without_module: expected apt-get -s output (text or a command result)")
    return _nh.kernel_without_module(simulation, _names(installed, "installed"))


class FilterModule(object):
    """dlbox.stack nvidia_driver_holds filters."""

    def filters(self):
        return {"nvidia_driver_hold_changes": nvidia_driver_hold_changes,
                "nvidia_driver_kernel_without_module": nvidia_driver_kernel_without_module}
