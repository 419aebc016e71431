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

- ``dlbox_plan``: the host's plan (plan.yml); a plan that is not ``ok`` refused the host before any change, for the
  plan's ``errors``;
- ``dlbox_refusal``: ``{"task": ..., "message": ...}`` where a scenario's own preflight refused the host before any
  change (edge.yml's Jetson preflight);
- ``dlbox_rollout_acceptance``: the acceptance run of the host's batch (server.yml), "passed", "failed: <reason>" or
  "skipped: <reason>": the row's ``acceptance`` (None without), a column of the table when some host has one ("-" for
  the others);
- ``dlbox_rollout_lost``: true where the host's own result said it was unreachable (rollout_finish.yml: at the end of
  its batch, lost after its changes or never back from its reboot; or, Ansible having dropped it from its batch, a
  ping from a host still in the batch); its ``dlbox_rollout_step`` says where. A host Ansible dropped is never
  presumed lost from its absence: one that still answers was dropped for a failure, and is recorded failed.
- ``dlbox_rollout_skipped``: why the rollout skipped a host at its batch's start, untouched (rollout_drain.yml: an admin
  is draining it, its jobs still running): its row is "not run" with "skipped: <why>", and it counts for nothing in
  the failure budget (:func:`batch_verdict`).
- ``dlbox_rollout_left_drained``: why a host that got to the end of its batch was not resumed (rollout_finish.yml: an
  admin's drain, a driver reboot pending, a driver that does not answer; "" where it was resumed): the reason of its
  row, "left drained: <why>", whatever its status (changed or unchanged), and a figure of the counts ("left drained").
  One the rollout left drained (not ``dlbox_rollout_admin_drain``: an admin's drain it found and left as it was) is
  out of service like a failed host: it counts against the failure budget at its batch's end (:func:`batch_verdict`).

Each host of the rollout has one status: ``changed``, ``unchanged`` (its scenario got to the end of its batch),
``failed`` (the task and its message), ``unreachable`` (lost mid-run: the step it was lost at; the run was interrupted
there), ``refused`` (the reason, nothing changed), ``not run`` (the rollout stopped, or has not got there yet, before
its batch or its group). :func:`fleet_rows` gives one row per host, :func:`fleet_text`, :func:`fleet_markdown` the
table.

The failure budget is counted here too (:func:`parse_serial`, :func:`parse_budget`, :func:`batches`,
:func:`batch_verdict`): Ansible's ``max_fail_percentage`` counts failed hosts only, not unreachable ones
(ansible/ansible#56265); the rollout counts both against the budget of the batch.
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
    ("failure", "failure / reason"),
)

# The fitness reports of the same run, in the same report folder (preflight.yml): linked from the Markdown.
FITNESS_LINKS = ("The fitness verdicts come from preflight.yml's reports in the same folder: the fleet's in "
                 "[../fleet.md](../fleet.md) (and fleet.html, fleet.json), each host's in ../fitness/<host>.json.")


# NVSwitch and NVL hosts (issue 49): the fabric's state and IMEX's status (the summary report's ``fabric``,
# ``workstation_summary.fabric_line``), a column only when some host has them.
FABRIC_COLUMN = ("fabric", "NVLink fabric / IMEX")

# The acceptance run of a host's batch (server.yml: ``dlbox_rollout_acceptance``, "passed", "failed: <reason>" or
# "skipped: <reason>"), a column after the fitness verdict when some host has one; "-" for a host without.
ACCEPTANCE_COLUMN = ("acceptance", "acceptance")


def _columns(rows):
    """COLUMNS, with the fabric's after NCCL and the acceptance's after the fitness when a row has one."""
    columns = COLUMNS
    if any(r.get("fabric") for r in rows):
        at = [key for key, _label in columns].index("nccl") + 1
        columns = columns[:at] + (FABRIC_COLUMN,) + columns[at:]
    if any(r.get("acceptance") for r in rows):
        at = [key for key, _label in columns].index("fitness") + 1
        columns = columns[:at] + (ACCEPTANCE_COLUMN,) + columns[at:]
    return columns


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


def _acceptance(value, host):
    """A host's ``dlbox_rollout_acceptance`` on one line, or None without one."""
    if value in (None, ""):
        return None
    if not isinstance(value, str):
        raise FleetSummaryError("fleet_summary: dlbox_rollout_acceptance of %s must be text (\"passed\", \"failed: "
                                "<reason>\" or \"skipped: <reason>\"), not %r" % (host, value))
    return " ".join(value.split()) or None


def _left_drained(value, host):
    """A host's ``dlbox_rollout_left_drained`` on one line, or None where it was resumed."""
    if value in (None, ""):
        return None
    if not isinstance(value, str):
        raise FleetSummaryError("fleet_summary: dlbox_rollout_left_drained of %s must be text (why the host is left "
                                "drained), not %r" % (host, value))
    return " ".join(value.split()) or None


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


STATUSES = ("changed", "unchanged", "failed", "unreachable", "refused", "not run")


def _refusal(hv, host):
    """The reason a host was refused before any change (its plan, or a scenario's preflight), or None."""
    value = hv.get("dlbox_refusal")
    if value not in (None, {}, ""):
        if not isinstance(value, dict):
            raise FleetSummaryError("fleet_summary: dlbox_refusal of %s must be a mapping with task and message, not %r"
                                    % (host, value))
        return "%s: %s" % (value.get("task") or "(preflight)", " ".join(str(value.get("message") or "").split()))
    plan = hv.get("dlbox_plan")
    if isinstance(plan, dict) and plan.get("ok") is False:
        return "the plan: " + ("; ".join(str(e) for e in plan.get("errors") or []) or "refused")
    return None


# A summary written at a batch's start stands only where the run ends before the batch's end: every host of it lost
# (Ansible ends the run then), or the run stopped (Ctrl-C; an AWX cancel or job timeout kills ansible-playbook's
# process group, ansible_runner/runner.py). Which of the two is not known here: the row says both (rt50b M2).
RUNNING = ("interrupted: the run ended during its batch (lost, or the run was stopped: Ctrl-C, an AWX cancel or job "
           "timeout), so the step it was at was not recorded")
RUNNING_DRAIN = ("; it may be left drained (dlbox_drain_command is set: the rollout drains it at its batch's start, "
                 "and its marker %s/drained stays): run the rollout again with it in --limit to resume it, or "
                 "resume it by hand")


def fleet_rows(hosts, hostvars, scenario=None, lost=None, stopped=None, played=None, running=None):
    """One row per host of ``hosts`` (in that order) from ``hostvars`` (host -> its variables).

    ``scenario``: the scenario of the hosts that did not note theirs (not run), one name or a mapping host -> name
    (site.yml's plays, one per group); ``lost``: the hosts the rollout found unreachable at the end of their batch
    (their ``dlbox_rollout_step`` says where); ``stopped``: why the rollout stopped ("" or None: it did not);
    ``played``: the hosts of the plays that have run so far (None: all of ``hosts``), to tell a host whose batch did
    not run from one whose group did not; ``running``: the hosts of the batch under way, in a summary written at its
    start (it stands only if the run ends before the batch's end: those hosts were lost)."""
    if not isinstance(hosts, (list, tuple)) or not all(isinstance(h, str) for h in hosts):
        raise FleetSummaryError("fleet_summary: hosts must be a list of host names, not %r" % (hosts,))
    if not (scenario is None or isinstance(scenario, str)
            or (isinstance(scenario, dict) and all(isinstance(v, str) for v in scenario.values()))):
        raise FleetSummaryError("fleet_summary: scenario must be a name such as workstation or a mapping host -> name,"
                                " not %r" % (scenario,))
    lost = set(lost or [])
    running = set(running or [])
    played = set(hosts if played is None else played)
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
        changed = [c["component"] for c in (report or {}).get("changed") or []] if report is not None else None
        refused = _refusal(hv, host)
        step = str(hv.get("dlbox_rollout_step") or "before its changes")
        reason = None
        if refused:
            status, reason = "refused", refused + " (nothing was changed)"
        elif failure:
            status = "failed"
        elif hv.get("dlbox_rollout_lost") or host in lost:
            status, reason = "unreachable", ("lost %s: nothing was changed on it" % step
                                             if step.startswith("before any change (") else
                                             "lost at: %s (interrupted there)" % step)
        elif str(hv.get("dlbox_rollout_skipped") or "").strip():
            status, reason = "not run", "skipped: " + " ".join(str(hv["dlbox_rollout_skipped"]).split())
        elif host in running and not done:
            status, reason, step = "unreachable", RUNNING, "during its batch"
            if str(hv.get("dlbox_drain_command") or "").strip():
                reason += RUNNING_DRAIN % (hv.get("dlbox_rollout_state_dir") or "/var/lib/dlbox/rollout")
        elif done:
            # edge.yml has no summary role: what changed is not known there, and the row says changed
            status = "changed" if changed is None or changed else "unchanged"
            left = _left_drained(hv.get("dlbox_rollout_left_drained"), host)
            if left:
                reason = "left drained: " + left
        else:
            status = "not run"
            where = "its batch" if host in played else "its group's play"
            reason = ("the rollout stopped before %s: %s" % (where, stopped) if stopped
                      else "%s has not run yet" % where)
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
            "fabric": (report or {}).get("fabric"),
            "frameworks": installed.get("environments") or edge_frameworks,
            "changed": changed,
            "pending_reboot": pending if report is not None else edge_pending,
            "jetson": jetson,
            "fitness": _fitness(hv.get("dlbox_fitness"), host),
            "acceptance": _acceptance(hv.get("dlbox_rollout_acceptance"), host),
            "failure": failure,
            "step": step if status == "unreachable" else None,
            "reason": reason,
        })
    return rows


def _cell(row, key):
    value = row[key]
    if key == "failure":
        if value:
            return "%s: %s" % (value["task"], value["message"])
        return row.get("reason") or "-"
    if key == "changed":
        return "-" if value is None else (", ".join(value) or "nothing")
    if key == "pending_reboot":
        return "-" if value is None else ("yes" if value else "no")
    return "-" if value in (None, "") else str(value)


def fleet_counts(rows):
    """{"hosts", "changed", "unchanged", "failed", "unreachable", "refused", "not_run", "pending_reboot",
    "left_drained"}: left drained (changed or unchanged hosts not resumed, "left drained: <why>") is a figure of its
    own beside the statuses, as a reboot pending is."""
    counts = {"hosts": len(rows)}
    for status in STATUSES:
        counts[status.replace(" ", "_")] = sum(r["status"] == status for r in rows)
    counts["pending_reboot"] = sum(bool(r["pending_reboot"]) for r in rows)
    counts["left_drained"] = sum(r["status"] in ("changed", "unchanged") and (r.get("reason") or "").startswith(
        "left drained: ") for r in rows)
    return counts


def _counts_line(counts):
    return ("%(hosts)d host%(s)s: %(changed)d changed, %(unchanged)d unchanged, %(failed)d failed, %(unreachable)d "
            "unreachable, %(refused)d refused, %(not_run)d not run, %(pending_reboot)d with a reboot pending, "
            "%(left_drained)d left drained"
            % dict(counts, s="" if counts["hosts"] == 1 else "s", left_drained=counts.get("left_drained", 0)))


def fleet_text(rows, stopped=None):
    """The table as lines of text, columns aligned, then one line of counts (and why the rollout stopped)."""
    columns = _columns(rows)
    cells = [[label for _key, label in columns]] + [[_cell(r, key) for key, _label in columns] for r in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(columns))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip() for line in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    lines.append(_counts_line(fleet_counts(rows)))
    if stopped:
        lines.append("The rollout stopped: %s" % stopped)
    return lines


def fleet_markdown(rows, title="Fleet summary", stopped=None):
    """The table as a Markdown document."""
    def esc(text):
        return text.replace("|", "\\|").replace("\n", " ")
    columns = _columns(rows)
    lines = ["# %s" % title, "", "| %s |" % " | ".join(label for _key, label in columns),
             "|%s" % ("---|" * len(columns))]
    lines.extend("| %s |" % " | ".join(esc(_cell(r, key)) for key, _label in columns) for r in rows)
    lines += ["", _counts_line(fleet_counts(rows)) + ".", ""]
    if stopped:
        lines += ["The rollout stopped: %s" % stopped, ""]
    if any(r["fitness"] for r in rows):
        lines += [FITNESS_LINKS, ""]
    return "\n".join(lines)


def fleet_summary(hosts, hostvars, scenario=None, lost=None, stopped=None, played=None, running=None):
    """{"rows", "counts", "stopped", "text", "markdown"} for the hosts of a rollout (arguments: :func:`fleet_rows`)."""
    running = [h for h in running or [] if h in hosts]
    if running and not stopped:
        stopped = ("the run ended during a batch (%s), before its end: every host of it was lost, or the run was "
                   "stopped (Ctrl-C, an AWX cancel or job timeout)" % ", ".join(running))
    rows = fleet_rows(hosts, hostvars, scenario, lost=lost, stopped=stopped, played=played, running=running)
    return {"rows": rows, "counts": fleet_counts(rows), "stopped": stopped or None,
            "text": fleet_text(rows, stopped), "markdown": fleet_markdown(rows, stopped=stopped)}


def site_hosts(groups, site_groups):
    """Every host of site.yml's groups with its scenario, in the order of the groups (a host in two groups: the
    first); ``groups``: Ansible's ``groups``; ``site_groups``: group -> scenario."""
    if not isinstance(site_groups, dict) or not all(isinstance(v, str) for v in site_groups.values()):
        raise FleetSummaryError("fleet_summary: site_groups must be a mapping group -> scenario, not %r" % (site_groups,))
    out = {}
    for group, name in site_groups.items():
        for host in (groups or {}).get(group) or []:
            out.setdefault(host, name)
    return out


# --- Batches and the failure budget ---------------------------------------------------------------------------------

def _serial_item(item, text):
    if isinstance(item, bool):
        raise FleetSummaryError("dlbox_serial: %r is not a batch size (a number or a percentage such as 25%%)" % (text,))
    if isinstance(item, int):
        value = item
    else:
        item = str(item).strip()
        number = item[:-1].strip() if item.endswith("%") else item
        if not number.isdigit():
            raise FleetSummaryError("dlbox_serial: %r is not a batch size: give a number of hosts, a percentage such as "
                                    "25%%, a list such as [1, \"25%%\"] or the same as text, \"1,25%%\"" % (text,))
        if item.endswith("%"):
            if not 0 < int(number) <= 100:
                raise FleetSummaryError("dlbox_serial: %r: a percentage is 1%% to 100%%" % (text,))
            return "%d%%" % int(number)
        value = int(number)
    if value < 0:
        raise FleetSummaryError("dlbox_serial: %r: a batch size is 0 (all hosts) or more" % (text,))
    return value


def parse_serial(value):
    """``dlbox_serial`` as Ansible's ``serial`` list: a number, a percentage, a list of them, or the same list as text
    (a survey field: ``"1,25%"``, ``"[1, '25%']"`` is not needed). None, "" and 0: one batch of all hosts ([])."""
    if value is None or value == "" or value == 0 or value == "0":
        return []
    if isinstance(value, (list, tuple)):
        items = list(value)
    elif isinstance(value, str):
        items = [part for part in value.strip().strip("[]").replace(";", ",").split(",") if part.strip()]
        items = [part.strip().strip("'\"") for part in items]
    else:
        items = [value]
    if not items:
        return []
    out = [_serial_item(item, value) for item in items]
    return [] if out == [0] else out


def parse_budget(value):
    """``dlbox_max_fail_percentage`` as a number 0-100: a number, or text such as "34" or "34%" (a survey field).
    None or "": 100 (go on, within Ansible's own rule that a batch whose hosts all fail stops the run)."""
    if value is None or value == "":
        return 100
    if isinstance(value, bool):
        raise FleetSummaryError("dlbox_max_fail_percentage: %r is not a percentage 0-100" % (value,))
    text = str(value).strip()
    number = text[:-1].strip() if text.endswith("%") else text
    try:
        budget = float(number)
    except ValueError:
        raise FleetSummaryError("dlbox_max_fail_percentage: %r is not a percentage 0-100 (e.g. 0, 34 or \"34%%\")"
                                % (value,)) from None
    if not 0 <= budget <= 100:
        raise FleetSummaryError("dlbox_max_fail_percentage: %r is not a percentage 0-100" % (value,))
    return int(budget) if budget == int(budget) else budget


def batches(hosts, serial):
    """The batches Ansible makes of a play's hosts for ``serial`` (playbook_executor._get_serialized_batches with
    utils.helpers.pct_to_int: a percentage of all the play's hosts, rounded down, at least 1; the list's last size
    repeats)."""
    hosts = list(hosts)
    sizes = parse_serial(serial) or [0]
    total, out, i = len(hosts), [], 0
    while hosts:
        item = sizes[i]
        size = (int(int(item[:-1]) / 100.0 * total) or 1) if isinstance(item, str) else int(item)
        if size <= 0:
            out.append(hosts)
            break
        out.append(hosts[:size])
        hosts = hosts[size:]
        i = min(i + 1, len(sizes) - 1)
    return out


def _percent_text(percent, budget, over):
    """``percent`` as few decimals as show it on the right side of ``budget`` (1 of 3 against 33%: 33.3%, not 33%)."""
    for digits in range(0, 4):
        text = ("%%.%df" % digits) % percent
        if (float(text) > budget) == over:
            return text
    return "%.4f" % percent


def _batch_stats(batch, index, alive, hostvars, budget, done_ok, missed=False):
    """One batch counted: failed (recorded failures and preflight refusals), unreachable (its own result said so,
    ``dlbox_rollout_lost``: at the end of its batch, or asked after Ansible dropped it, rollout_finish.yml), refused
    (by the plan), and dropped: not alive (and, where ``done_ok``, not at the end of the batch) with no record of why;
    a host the rollout skipped untouched (``dlbox_rollout_skipped``: an admin's drain under way) counts for nothing.
    Ansible drops a host from its batch for a failure or for being unreachable alike: its absence alone says neither,
    so a dropped host is counted against the budget but named neither failed nor unreachable until its record says
    which (rollout_finish.yml asks each dropped host, then counts again). Left drained: hosts that got to the end of
    the batch and that the rollout left drained (``dlbox_rollout_left_drained``: a driver reboot pending, a driver
    that does not answer; not an admin's drain, ``dlbox_rollout_admin_drain``): out of service like a failed host, they
    count against the budget (rt50b H2), but not for Ansible's rule that a batch without a host left ends the run.
    The percentage is of the whole batch, refused hosts included, as Ansible's own keyword counts it
    (strategy/linear.py divides by the batch's size): leaving them out would stop the rollout in a batch whose refused
    hosts Ansible counts as failed before it, and Ansible does not end a run there (playbook_executor ends it when the
    hosts failed IN a batch are all of it), so the stop would not hold."""
    failed, unreachable, refused, dropped, left = [], [], [], [], []
    for host in batch:
        hv = hostvars.get(host) or {}
        plan = hv.get("dlbox_plan")
        if isinstance(plan, dict) and plan.get("ok") is False:
            refused.append(host)
        elif str(hv.get("dlbox_rollout_skipped") or "").strip():
            continue    # skipped untouched (an admin's drain under way): counted for nothing, as an admin's drain
        elif hv.get("dlbox_failure") or hv.get("dlbox_refusal"):
            failed.append(host)
        elif hv.get("dlbox_rollout_lost"):
            unreachable.append(host)
        elif host not in alive and not (done_ok and hv.get("dlbox_rollout_done")):
            dropped.append(host)
        elif str(hv.get("dlbox_rollout_left_drained") or "").strip() and not hv.get("dlbox_rollout_admin_drain"):
            left.append(host)
    bad = len(failed) + len(unreachable) + len(dropped)
    percent = 100.0 * (bad + len(left)) / len(batch)
    over = percent > budget
    # Ansible's own rule (playbook_executor.py: the hosts failed or unreachable in this batch, less those before it,
    # equal to ``len(batch)``) ends the run whatever max_fail_percentage says: only where EVERY host of the batch failed
    # or was lost in it. A host refused by its plan failed in an earlier play, so a batch with one never ends the run
    # by this rule (rt50d M1: [refused, failed] under budget 100 goes on, as Ansible does; the budget decides). A
    # batch counted late (``missed``: none of its hosts got to its end, yet Ansible went on, as where its hosts were
    # lost in an earlier play) stops the rollout only over budget.
    whole = not missed and len(batch) > 0 and bad == len(batch)
    message = None
    if over or whole:
        what = "%d of the %d hosts of batch %d (%s) failed or were unreachable" % (
            bad, len(batch), index, ", ".join(failed + unreachable + dropped))
        if left:
            what = "%d of the %d hosts of batch %d failed or were unreachable (%s) or were left drained (%s)" % (
                bad + len(left), len(batch), index, ", ".join(failed + unreachable + dropped) or "none",
                ", ".join(left))
        message = ("%s: %s%%, more than the failure budget dlbox_max_fail_percentage=%s%%"
                   % (what, _percent_text(percent, budget, over), budget)
                   if over else "%s: no host of the batch was left (Ansible ends the run when every host of a batch "
                   "fails or is lost in it, whatever the budget)" % what)
    return {"index": index, "hosts": list(batch), "failed": failed, "unreachable": unreachable, "refused": refused,
            "dropped": dropped, "left_drained": left, "percent": round(percent, 1), "budget": budget, "stop": bool(over or whole), "message": message}


def batch_verdict(play_hosts, alive, hostvars, serial, budget, counted=None):
    """The end of a batch, as the rollout counts it: which batch this is (the one ``alive``, Ansible's
    ``ansible_play_batch``, belongs to), its failed hosts (recorded failures and preflight refusals), its unreachable
    hosts (their own result said so: ``dlbox_rollout_lost``), its dropped hosts (not alive, with no record yet of why:
    rollout_finish.yml asks each whether it answers, records it lost or failed, and counts again), and whether the
    rollout stops.

    It stops when failed + unreachable hosts are more than ``budget`` percent of the batch (Ansible's rule, over
    ``len(batch)``, with the unreachable counted too), or when every host of the batch failed or is unreachable in it
    (Ansible's own rule: playbook_executor ends the run when the batch's new failures are the whole batch, whatever
    max_fail_percentage says; a host refused by its plan failed in an earlier play and is not one of them; a batch
    counted late, whose hosts Ansible had dropped before, only over budget).

    ``counted``: the indices of this play's batches counted before. An earlier batch that was not (every host it had
    left was lost, so none got to its end; Ansible goes on when some of its hosts had failed in an earlier play) is
    counted now: its hosts that did not get to the end are dropped (asked, then lost or failed), and it stops the
    rollout from here if it is over the budget (the batch that has just run could not be held back)."""
    budget = parse_budget(budget)
    alive = list(alive)
    all_batches = batches(play_hosts, serial)
    index = next((i for i, b in enumerate(all_batches) if set(b) & set(alive)), None)
    if index is None:
        raise FleetSummaryError("fleet_summary: none of the batch's hosts %r is a host of the play" % (alive,))
    counted = set(counted or [])
    missed = [_batch_stats(all_batches[i], i + 1, [], hostvars, budget, True, missed=True)
              for i in range(index) if i + 1 not in counted]
    out = _batch_stats(all_batches[index], index + 1, alive, hostvars, budget, False)
    for earlier in missed:
        out["unreachable"] = earlier["unreachable"] + out["unreachable"]
        out["dropped"] = earlier["dropped"] + out["dropped"]
    stops = [b for b in missed if b["stop"]] + ([out] if out["stop"] else [])
    if stops and not out["stop"]:
        out["message"] = stops[0]["message"] + " (counted at the end of batch %d: no host of it was left)" % (index + 1)
    out.update({"batches": len(all_batches), "stop": bool(stops), "missed": [b["index"] for b in missed],
                "later": [h for b in all_batches[index + 1:] for h in b]})
    return out
