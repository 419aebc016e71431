# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of a rollout (site.yml): ``dlbox.stack.fleet_summary`` (one table for the run), ``rollout_serial`` and
``rollout_budget`` (the batches and failure budget as extra variables or survey text), ``rollout_batch`` (the end of a
batch as the rollout counts it: failed and unreachable hosts against the budget), ``rollout_drain_found`` (whose drain a
node's is before the rollout drains it) and ``rollout_drain_check_failure`` (why the drain check failed a host):
plugin_utils.fleet_drain."""

from __future__ import annotations

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.dlbox.stack.plugins.plugin_utils.lazy_import import LazyModule

fs = LazyModule("plugin_utils.fleet_summary")
fd = LazyModule("plugin_utils.fleet_drain")

KEYS = ("summary_report", "dlbox_failure", "dlbox_scenario", "dlbox_rollout_done", "dlbox_fitness", "dlbox_edge",
        "dlbox_plan", "dlbox_refusal", "dlbox_rollout_step", "dlbox_rollout_lost", "dlbox_rollout_acceptance",
        "dlbox_rollout_left_drained", "dlbox_rollout_admin_drain", "dlbox_drain_command", "dlbox_rollout_state_dir",
        "dlbox_rollout_skipped")


def _pick(hostvars, hosts):
    if not isinstance(hostvars, Mapping):
        raise AnsibleFilterError("fleet filters: the input must be hostvars")
    if not isinstance(hosts, (list, tuple)):
        raise AnsibleFilterError("fleet filters: hosts must be a list of host names, not %r" % (hosts,))
    picked = {}
    for host in hosts:
        hv = hostvars[host] if host in hostvars else {}
        picked[host] = {key: hv[key] for key in KEYS if key in hv}
        plan = picked[host].get("dlbox_plan")
        if isinstance(plan, Mapping):   # only what the summary reads of a plan
            picked[host]["dlbox_plan"] = {"ok": plan.get("ok"), "errors": list(plan.get("errors") or [])}
    return picked


def fleet_summary(hostvars, hosts, scenario=None, lost=None, stopped=None, played=None, running=None):
    """{"rows", "counts", "stopped", "text", "markdown"} for ``hosts`` from ``hostvars`` (only the keys the summary
    reads); ``scenario``: that of the hosts that did not note theirs, a name or a mapping host -> name; ``lost``: the
    hosts found unreachable; ``stopped``: why the rollout stopped; ``played``: the hosts of the plays run so far;
    ``running``: the batch under way (a summary written at its start, standing only if the run ends within it)."""
    if isinstance(scenario, Mapping):
        scenario = dict(scenario)
    picked = _pick(hostvars, hosts)
    try:
        return fs.fleet_summary(list(hosts), picked, scenario, lost=list(lost or []), stopped=stopped or None,
                                played=None if played is None else list(played), running=list(running or []))
    except fs.FleetSummaryError as exc:
        raise AnsibleFilterError(str(exc)) from exc


def rollout_serial(value):
    """``dlbox_serial`` (a number, a percentage, a list, or the list as survey text "1,25%") as Ansible's serial list."""
    try:
        return fs.parse_serial(value)
    except fs.FleetSummaryError as exc:
        raise AnsibleFilterError(str(exc)) from exc


def rollout_budget(value):
    """``dlbox_max_fail_percentage`` (a number, or text "34" / "34%") as a number 0-100; unset: 100."""
    try:
        return fs.parse_budget(value)
    except fs.FleetSummaryError as exc:
        raise AnsibleFilterError(str(exc)) from exc


def rollout_site_hosts(groups, site_groups=None):
    """Every host of site.yml's groups (``site_groups``: group -> scenario) as host -> scenario, in group order."""
    try:
        return fs.site_hosts(dict(groups or {}), dict(site_groups or {}))
    except fs.FleetSummaryError as exc:
        raise AnsibleFilterError(str(exc)) from exc


def rollout_batch(hostvars, play_hosts, alive, serial=None, budget=None, counted=None):
    """The end of a batch as the rollout counts it (fleet_summary.batch_verdict)."""
    picked = _pick(hostvars, play_hosts)
    try:
        return fs.batch_verdict(list(play_hosts), list(alive), picked, serial, budget, counted=list(counted or []))
    except fs.FleetSummaryError as exc:
        raise AnsibleFilterError(str(exc)) from exc


def _registered(result):
    """A registered result, or None where its task was skipped (or never ran)."""
    if not isinstance(result, Mapping) or result.get("skipped"):
        return None
    return result


def rollout_drain_found(check, reason=None, marker=None, tag=None, state_dir=None):
    """Whose drain the node's is (fleet_drain.found) from the registered results of the drain check, the reason
    command (skipped: no reason command) and the marker's stat (skipped: not looked for)."""
    if not isinstance(check, Mapping):
        raise AnsibleFilterError("rollout_drain_found: the input must be the drain check's registered result, not %r"
                                 % (check,))
    said = _registered(reason)
    seen = _registered(marker)
    try:
        return fd.found(dict(check), None if said is None else str(said.get("stdout") or ""),
                        bool(((seen or {}).get("stat") or {}).get("exists")), tag, state_dir)
    except fd.FleetDrainError as exc:
        raise AnsibleFilterError(str(exc)) from exc


def rollout_drain_check_failure(result, try_s, phase="before", timeout_s=None):
    """Why the drain check failed the host (fleet_drain.check_failure): before the drain, or at the wait's end."""
    try:
        return fd.check_failure(dict(result) if isinstance(result, Mapping) else {}, try_s, phase, timeout_s)
    except fd.FleetDrainError as exc:
        raise AnsibleFilterError(str(exc)) from exc


class FilterModule(object):
    """dlbox.stack fleet filters."""

    def filters(self):
        return {"fleet_summary": fleet_summary, "rollout_serial": rollout_serial, "rollout_budget": rollout_budget,
                "rollout_batch": rollout_batch, "rollout_site_hosts": rollout_site_hosts,
                "rollout_drain_found": rollout_drain_found, "rollout_drain_check_failure": rollout_drain_check_failure}
