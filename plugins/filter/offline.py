# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of offline mode (dlbox_offline): ``dlbox.stack.offline_needs``, ``dlbox.stack.offline_check`` and
``dlbox.stack.offline_resolve_picks``. What each vendor role installs is its own module's decision and needs
(``dlbox.stack.role_module``), which ``offline_needs`` reads."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.dlbox.stack.plugins.plugin_utils.lazy_import import LazyModule

_offline = LazyModule("plugin_utils.offline")


def offline_needs(workstation, packages, python_env=None, vendor=None):
    """What one plan needs from the mirror folder (see plugin_utils.offline.needs)."""
    try:
        return _offline.needs(workstation, list(packages or []), python_env, vendor)
    except ValueError as exc:
        raise AnsibleFilterError("offline_needs: %s" % exc)


def offline_check(need, mirror, installed="", release=""):
    """Every artifact the mirror folder lacks for `need` (see plugin_utils.offline.check)."""
    if not isinstance(need, dict) or not isinstance(mirror, dict):
        raise AnsibleFilterError("offline_check: expected offline_needs's result and the folder as mappings")
    return _offline.check(need, mirror, installed or "", release or "")


def offline_resolve_picks(need, versions):
    """offline_needs's result with each pick made from the repository's candidates (see
    plugin_utils.offline.resolve_picks)."""
    if not isinstance(need, dict) or not isinstance(versions, dict):
        raise AnsibleFilterError("offline_resolve_picks: expected offline_needs's result and {role: versions}")
    return _offline.resolve_picks(need, versions)


class FilterModule(object):
    def filters(self):
        return {"offline_needs": offline_needs, "offline_check": offline_check,
                "offline_resolve_picks": offline_resolve_picks}
