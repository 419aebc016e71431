# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``dlbox.stack.fleet_summary``: the fleet summary of a rollout (site.yml), one table for the run."""

from __future__ import annotations

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.dlbox.stack.plugins.plugin_utils.lazy_import import LazyModule

fs = LazyModule("plugin_utils.fleet_summary")

KEYS = ("summary_report", "dlbox_failure", "dlbox_scenario", "dlbox_rollout_done", "dlbox_fitness", "dlbox_edge")


def fleet_summary(hostvars, hosts, scenario=None):
    """{"rows", "counts", "text", "markdown"} for ``hosts`` from ``hostvars`` (only the keys the summary reads);
    ``scenario``: that of the hosts that did not note theirs, a name or a mapping host -> name."""
    if not isinstance(hostvars, Mapping):
        raise AnsibleFilterError("fleet_summary: the input must be hostvars")
    if isinstance(scenario, Mapping):
        scenario = dict(scenario)
    if not isinstance(hosts, (list, tuple)):
        raise AnsibleFilterError("fleet_summary: hosts must be a list of host names, not %r" % (hosts,))
    picked = {}
    for host in hosts:
        hv = hostvars[host] if host in hostvars else {}
        picked[host] = {key: hv[key] for key in KEYS if key in hv}
    try:
        return fs.fleet_summary(list(hosts), picked, scenario)
    except fs.FleetSummaryError as exc:
        raise AnsibleFilterError(str(exc)) from exc


class FilterModule(object):
    """dlbox.stack fleet filters."""

    def filters(self):
        return {"fleet_summary": fleet_summary}
