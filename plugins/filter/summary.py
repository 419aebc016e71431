# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``dlbox.stack.workstation_summary``: the end-of-run summary of a scenario playbook."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.dlbox.stack.plugins.plugin_utils.lazy_import import LazyModule

ws = LazyModule("plugin_utils.workstation_summary")


def workstation_summary(after, before, roles=None, host_name=None, driver_state=None, fabric=None, imex=None):
    """Summary of one host from the summary role's two probes (after the roles, before them) and the roles
    decision; the dict of ``workstation_summary.summarize`` plus ``text`` (its lines)."""
    if roles is not None and not isinstance(roles, dict):
        raise AnsibleFilterError("workstation_summary: roles must be the result of dlbox.stack.workstation_roles")
    if driver_state is not None and not isinstance(driver_state, dict):
        raise AnsibleFilterError("workstation_summary: driver_state must be the fact nvidia_driver_state or none")
    for name, value in (("fabric", fabric), ("imex", imex)):
        if value is not None and not isinstance(value, dict):
            raise AnsibleFilterError("workstation_summary: %s must be the fact nvidia_driver_%s or none" % (name, name))
    try:
        summary = ws.summarize(before, after, roles, driver_state=driver_state, fabric=fabric, imex=imex)
    except ws.SummaryError as exc:
        raise AnsibleFilterError(str(exc)) from exc
    summary["text"] = ws.summary_text(summary, host_name)
    return summary


class FilterModule(object):
    """dlbox.stack summary filters."""

    def filters(self):
        return {"workstation_summary": workstation_summary}
