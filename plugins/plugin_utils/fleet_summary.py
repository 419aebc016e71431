# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet summary of a rollout (``site.yml``): one table for the run; pure, no I/O.

Its input is what the run left in each host's variables:

- ``summary_report``: the summary role's per-host report (``workstation_summary.summarize`` plus ``text``), set when
  the host's scenario got to its end;
- ``dlbox_failure``: ``{"task": ..., "message": ...}`` where the host failed (the rollout records it);
- ``dlbox_scenario``: the scenario the host is in (workstation, server, edge);
- ``dlbox_fitness``: the host's fitness report (preflight.yml, the first play of each scenario; ``fitness.judge_host``),
  whose verdict the row carries (fit, or NOT fit with the problems);
- ``dlbox_rollout_done``: true once the host got to the end of its batch (a scenario without the summary role, such as
  edge.yml, has no report: its row says ok with nothing known installed);
- ``dlbox_edge``: what edge.yml left on a Jetson, ``{"jetpack", "l4t", "power_mode", "power_pending", "pytorch"}``: its
  row shows the JetPack and L4T, the power mode (and a pending reboot) and PyTorch.

A host with neither report, end of batch nor failure was not reached: the rollout stopped before its batch (failure budget), and
it is untouched. :func:`fleet_rows` gives one row per host, :func:`fleet_text`, :func:`fleet_markdown` the table.
"""

from __future__ import annotations

COLUMNS = (
    ("host", "host"),
    ("scenario", "scenario"),
    ("status", "status"),
    ("driver", "driver"),
    ("cuda", "CUDA"),
    ("cudnn", "cuDNN"),
    ("nccl", "NCCL"),
    ("frameworks", "frameworks"),
    ("changed", "changed"),
    ("pending_reboot", "pending reboot"),
    ("jetson", "JetPack / L4T / power"),
    ("fitness", "fitness"),
    ("failure", "failure"),
)

# The fitness reports of the same run, in the same report folder (preflight.yml): linked from the Markdown.
FITNESS_LINKS = ("The fitness verdicts come from preflight.yml's reports in the same folder: the fleet's in "
                 "[../fleet.md](../fleet.md) (and fleet.html, fleet.json), each host's in ../fitness/<host>.json.")


class FleetSummaryError(ValueError):
    """Input that is not what the rollout leaves in the hosts' variables."""


def _failure(value, host):
    if value in (None, {}, ""):
        return None
    if not isinstance(value, dict):
        raise FleetSummaryError("fleet_summary: dlbox_failure of %s must be a mapping with task and message, not %r"
                                % (host, value))
    task = str(value.get("task") or "(task unknown)")
    message = " ".join(str(value.get("message") or "(no message)").split())
    return {"task": task, "message": message}


def _fitness(value, host):
    """The fitness verdict of a host's report: "fit", "NOT fit: <problems>", or None without a report."""
    if value in (None, {}, ""):
        return None
    if not isinstance(value, dict) or "ok" not in value:
        raise FleetSummaryError("fleet_summary: dlbox_fitness of %s must be preflight.yml's fitness report" % host)
    if value["ok"]:
        return "fit"
    return "NOT fit: " + ", ".join(str(p) for p in value.get("problems") or []) if value.get("problems") else "NOT fit"


def _edge(value, host):
    """A Jetson's ``dlbox_edge`` -> (``JetPack 6.2 / L4T 36.4.3 / MAXN``, frameworks, pending reboots); Nones without."""
    if value in (None, {}, ""):
        return None, None, None
    if not isinstance(value, dict):
        raise FleetSummaryError("fleet_summary: dlbox_edge of %s must be edge.yml's mapping (jetpack, l4t, power_mode, "
                                "power_pending, pytorch)" % host)
    power = value.get("power_mode") or "as it was"
    if value.get("power_pending"):
        power += " (pending reboot)"
    cell = "JetPack %s / L4T %s / %s" % (value.get("jetpack") or "?", value.get("l4t") or "?", power)
    frameworks = "PyTorch %s" % value["pytorch"] if value.get("pytorch") else None
    pending = ["power mode %s" % value.get("power_mode")] if value.get("power_pending") else []
    return cell, frameworks, pending


def fleet_rows(hosts, hostvars, scenario=None):
    """One row per host of ``hosts`` (in that order) from ``hostvars`` (host -> its variables); ``scenario``: the
    scenario of the hosts that did not note theirs (not reached), one name or a mapping host -> name (site.yml's
    plays, one per group)."""
    if not isinstance(hosts, (list, tuple)) or not all(isinstance(h, str) for h in hosts):
        raise FleetSummaryError("fleet_summary: hosts must be a list of host names, not %r" % (hosts,))
    if not (scenario is None or isinstance(scenario, str)
            or (isinstance(scenario, dict) and all(isinstance(v, str) for v in scenario.values()))):
        raise FleetSummaryError("fleet_summary: scenario must be a name such as workstation or a mapping host -> name,"
                                " not %r" % (scenario,))
    rows = []
    for host in hosts:
        hv = hostvars.get(host) or {}
        report = hv.get("summary_report")
        failure = _failure(hv.get("dlbox_failure"), host)
        if report is not None and not isinstance(report, dict):
            raise FleetSummaryError("fleet_summary: summary_report of %s must be the summary role's report" % host)
        installed = (report or {}).get("installed") or {}
        pending = [p for p in (report or {}).get("pending") or [] if "reboot" in p]
        done = report is not None or bool(hv.get("dlbox_rollout_done"))
        status = "failed" if failure else ("ok" if done else "not reached")
        play_scenario = scenario.get(host) if isinstance(scenario, dict) else scenario
        jetson, edge_frameworks, edge_pending = _edge(hv.get("dlbox_edge"), host)
        rows.append({
            "host": host,
            "scenario": str(hv.get("dlbox_scenario") or play_scenario or "-"),
            "status": status,
            "driver": installed.get("driver"),
            "cuda": installed.get("cuda"),
            "cudnn": installed.get("cudnn"),
            "nccl": installed.get("nccl"),
            "frameworks": installed.get("environments") or edge_frameworks,
            "changed": [c["component"] for c in (report or {}).get("changed") or []] if report is not None else None,
            "pending_reboot": pending if report is not None else edge_pending,
            "jetson": jetson,
            "fitness": _fitness(hv.get("dlbox_fitness"), host),
            "failure": failure,
        })
    return rows


def _cell(row, key):
    value = row[key]
    if key == "failure":
        return "%s: %s" % (value["task"], value["message"]) if value else "-"
    if key == "changed":
        return "-" if value is None else (", ".join(value) or "nothing")
    if key == "pending_reboot":
        return "-" if value is None else ("yes" if value else "no")
    return "-" if value in (None, "") else str(value)


def fleet_counts(rows):
    """{"hosts", "ok", "failed", "not_reached", "pending_reboot"}."""
    return {
        "hosts": len(rows),
        "ok": sum(r["status"] == "ok" for r in rows),
        "failed": sum(r["status"] == "failed" for r in rows),
        "not_reached": sum(r["status"] == "not reached" for r in rows),
        "pending_reboot": sum(bool(r["pending_reboot"]) for r in rows),
    }


def fleet_text(rows):
    """The table as lines of text, columns aligned, then one line of counts."""
    cells = [[label for _key, label in COLUMNS]] + [[_cell(r, key) for key, _label in COLUMNS] for r in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(COLUMNS))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip() for line in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    counts = fleet_counts(rows)
    lines.append("%(hosts)d hosts: %(ok)d ok, %(failed)d failed, %(not_reached)d not reached (untouched), "
                 "%(pending_reboot)d with a reboot pending" % counts)
    return lines


def fleet_markdown(rows, title="Fleet summary"):
    """The table as a Markdown document."""
    def esc(text):
        return text.replace("|", "\\|").replace("\n", " ")
    lines = ["# %s" % title, "", "| %s |" % " | ".join(label for _key, label in COLUMNS),
             "|%s" % ("---|" * len(COLUMNS))]
    lines.extend("| %s |" % " | ".join(esc(_cell(r, key)) for key, _label in COLUMNS) for r in rows)
    counts = fleet_counts(rows)
    lines += ["", "%(hosts)d hosts: %(ok)d ok, %(failed)d failed, %(not_reached)d not reached (untouched), "
              "%(pending_reboot)d with a reboot pending." % counts, ""]
    if any(r["fitness"] for r in rows):
        lines += [FITNESS_LINKS, ""]
    return "\n".join(lines)


def fleet_summary(hosts, hostvars, scenario=None):
    """{"rows", "counts", "text", "markdown"} for the hosts of a rollout."""
    rows = fleet_rows(hosts, hostvars, scenario)
    return {"rows": rows, "counts": fleet_counts(rows), "text": fleet_text(rows), "markdown": fleet_markdown(rows)}
