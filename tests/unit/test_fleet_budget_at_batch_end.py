# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The failure budget is the rollout's, counted at each batch's end, not Ansible's play keyword (issue 50 red team rt50
MEDIUM M1, LOW L6).

Before: the scenario plays set Ansible's max_fail_percentage to dlbox_max_fail_percentage. Ansible checks it after
every task (strategy/linear.py): with a budget of 0, one failure outside a rescued block failed every host left in the
batch at once, before rollout_finish.yml: nothing resumed (drained nodes left out of the scheduler), and the summary
was the one written at the batch's start (every host "unreachable: lost during its batch"). And a budget set in the
inventory reached the rollout's count but not the keyword, while site.yml said inventory variables cannot set it.

Real ansible-playbook over the local connection: the rollout stand-in (tests/integration/rollout_standin/rollout.yml,
workstation.yml's play keywords) with test_fleet_lost_hosts' task that fails a host outside the rescued block; the
FIXTURE scheduler of test_fleet_left_drained (a state file per node, a call log). NOT Slurm.
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import test_fleet_left_drained as sched  # noqa: E402  pylint: disable=wrong-import-position,import-error
import test_fleet_lost_hosts as standin  # noqa: E402  pylint: disable=wrong-import-position,import-error

ROOT = Path(__file__).resolve().parents[2]


def test_the_scenario_plays_leave_the_budget_to_the_rollout():
    for name in ("workstation.yml", "server.yml", "edge.yml"):
        plays = yaml.safe_load((ROOT / "playbooks" / name).read_text())
        batched = [p for p in plays if "serial" in p]
        assert len(batched) == 1 and batched[0]["max_fail_percentage"] == 100, (name, batched)


def test_budget_0_one_failure_outside_the_rescue_the_batch_still_ends_resumed_counted_and_stopped(tmp_path):
    shared = tmp_path / "lab"
    gv = sched.scheduler(shared)
    hosts = {"h1": {}, "h2": {"test_fail_outside": True}, "h3": {}, "h4": {}}
    proc, summary = standin.rollout(tmp_path, hosts, {"dlbox_serial": 3, "dlbox_max_fail_percentage": 0},
                                    playbook=standin.outside_playbook(tmp_path), **gv)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2 and "Traceback" not in out, out[-3000:]
    # the batch got to its end: h1 and h3 resumed, h2 (failed) left drained, h4 untouched
    assert sorted(sched.calls(shared)) == ["drain-h1", "drain-h2", "drain-h3", "resume-h1", "resume-h3"], \
        sched.calls(shared)
    rows = standin.rows(summary)
    assert {h: r["status"] for h, r in rows.items()} == {
        "h1": "changed", "h2": "failed", "h3": "changed", "h4": "not run"}, rows
    assert [(b["index"], b["failed"], b["stop"]) for b in summary["batches"]] == [(1, ["h2"], True)], summary["batches"]
    assert "more than the failure budget dlbox_max_fail_percentage=0%" in summary["stopped"], summary["stopped"]
    assert standin.marked(tmp_path) == ["h1", "h2", "h3"]


def test_a_budget_from_the_inventory_is_counted_and_a_bad_one_refused_before_any_change(tmp_path):
    hosts = {"h1": {}, "h2": {"test_fail": True}, "h3": {}, "h4": {}, "h5": {}, "h6": {}}
    proc, summary = standin.rollout(tmp_path / "inv", hosts, {"dlbox_serial": 3}, dlbox_max_fail_percentage=0)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2 and "Traceback" not in out, out[-3000:]
    rows = standin.rows(summary)
    assert [h for h, r in rows.items() if r["status"] == "not run"] == ["h4", "h5", "h6"], rows
    assert "dlbox_max_fail_percentage=0%" in summary["stopped"], summary["stopped"]
    # the same failure with the default budget (100) goes on
    proc, summary = standin.rollout(tmp_path / "default", hosts, {"dlbox_serial": 3})
    assert proc.returncode == 2 and summary["stopped"] is None, (proc.stdout + proc.stderr)[-3000:]
    assert standin.marked(tmp_path / "default") == ["h1", "h2", "h3", "h4", "h5", "h6"]
    # not a percentage: every host fails at the rollout's check, before any change
    proc, summary = standin.rollout(tmp_path / "bad", {"h1": {}, "h2": {}}, {}, dlbox_max_fail_percentage="lots")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2 and "Traceback" not in out, out[-3000:]
    assert standin.marked(tmp_path / "bad") == []
    assert "dlbox_max_fail_percentage: 'lots' is not a percentage 0-100" in out, out[-3000:]


def test_the_stop_holds_for_the_later_batches_when_the_stopped_batch_had_refused_hosts(tmp_path):
    """A batch over budget whose plan-refused host failed before it (the refusal play): Ansible ends a run only when
    every host of a batch failed in it (playbook_executor), so it went on, and batches 2 and 3 were changed after
    "The rollout stops after this batch" (found by the second fix helper of rt50b). The rollout's own stop now ends
    every later host untouched: not run, with the stop's reason; the run fails."""
    work = tmp_path / "w"
    refused = {"test_plan": {"ok": False, "errors": ["FIXTURE refused"]}}
    hosts = {"h1": refused, "h2": {"test_fail": True}, "h3": {}, "h4": {}, "h5": {}}
    proc, summary = standin.rollout(work, hosts, {"dlbox_serial": 2, "dlbox_max_fail_percentage": 0,
                                                  "dlbox_scheduler_host": "localhost"})
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2 and summary, out[-3000:]
    assert [(b["hosts"], b["stop"]) for b in summary["batches"]] == [(["h1", "h2"], True)], summary["batches"]
    assert summary["stopped"].startswith("1 of the 2 hosts of batch 1 (h2) failed"), summary["stopped"]
    rows = standin.rows(summary)
    assert (rows["h1"]["status"], rows["h2"]["status"]) == ("refused", "failed"), rows
    for host in ("h3", "h4", "h5"):
        assert rows[host]["status"] == "not run", rows[host]
        assert rows[host]["reason"] == "the rollout stopped before its batch: " + summary["stopped"], rows[host]
        assert not (work / ("marker-%s" % host)).exists()          # the stand-in stack never ran there
    assert "changed: [h3]" not in out and "changed: [h5]" not in out, out[-3000:]


def test_a_host_refused_in_the_play_after_the_stop_does_not_count_its_batch_again(tmp_path):
    """rt50c M2, its repro w2 (edge.yml's shape: a refusal made in the play, its Jetson preflight, skips the install
    block that holds rollout_begin.yml's end_host). Serial 2, budget 0: e1 refused by the plan and e2 failed stop the
    rollout after batch 1; in batch 2, e3 is refused by the preflight and e4 ends untouched at the stop. Before, e4 was
    asked as a host Ansible dropped and recorded failed ("Ansible dropped the host from its batch ..."), batch 2 was
    counted "2 of the 2 hosts (e3, e4) failed: 100%", and that replaced the run's stop reason and the "not run" rows'
    reason. Now the stop stays batch 1's (e2), batch 2 is not counted, and e4..e6 are "not run", untouched."""
    work = tmp_path / "w"
    hosts = {"e1": {"test_plan": {"ok": False, "errors": ["FIXTURE refused"]}}, "e2": {"test_fail": True},
             "e3": {"test_edge_refuse": True}, "e4": {}, "e5": {}, "e6": {}}
    proc, summary = standin.rollout(work, hosts, {"dlbox_serial": 2, "dlbox_max_fail_percentage": 0})
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2 and summary and "Traceback" not in out, out[-3000:]
    assert [(b["index"], b["hosts"], b["failed"], b["stop"]) for b in summary["batches"]] == [
        (1, ["e1", "e2"], ["e2"], True)], summary["batches"]
    assert summary["stopped"].startswith("1 of the 2 hosts of batch 1 (e2) failed"), summary["stopped"]
    rows = standin.rows(summary)
    assert {h: r["status"] for h, r in rows.items()} == {
        "e1": "refused", "e2": "failed", "e3": "refused", "e4": "not run", "e5": "not run", "e6": "not run"}, rows
    assert rows["e3"]["reason"].startswith("The preflight (a stand-in): FIXTURE edge refusal of e3"), rows["e3"]
    for host in ("e4", "e5", "e6"):
        assert rows[host]["failure"] is None, rows[host]
        assert rows[host]["reason"] == "the rollout stopped before its batch: " + summary["stopped"], rows[host]
    assert standin.marked(work) == ["e2"], standin.marked(work)     # the stand-in stack ran on e2 alone (then failed)
    assert "Ansible dropped the host" not in out, out[-3000:]


def test_a_refused_host_beside_a_failed_one_under_budget_100_goes_on_as_ansible_does(tmp_path):
    """rt50d M1, its run e2: serial [1, 2], budget 100, batch 2 = [p1 refused by its plan, x1 failed]. Ansible ends a
    run only where the batch's own failures are the whole batch (playbook_executor: p1 failed in the plan's play before
    it), and rt50d's plain-Ansible run of that shape went on. Before, the rollout stopped after batch 2 saying "no host
    of the batch was left (Ansible ends the run ...)", h2 and h3 "not run". Now it goes on: the budget says so."""
    work = tmp_path / "w"
    hosts = {"h1": {}, "p1": {"test_plan": {"ok": False, "errors": ["FIXTURE refused"]}}, "x1": {"test_fail": True},
             "h2": {}, "h3": {}}
    proc, summary = standin.rollout(work, hosts, {"dlbox_serial": [1, 2], "dlbox_max_fail_percentage": 100})
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2 and summary and "Traceback" not in out, out[-3000:]
    assert summary["stopped"] is None, summary["stopped"]
    assert [(b["hosts"], b["failed"], b["refused"], b["stop"]) for b in summary["batches"]] == [
        (["h1"], [], [], False), (["p1", "x1"], ["x1"], ["p1"], False), (["h2", "h3"], [], [], False)], summary["batches"]
    rows = standin.rows(summary)
    assert {h: r["status"] for h, r in rows.items()} == {
        "h1": "changed", "p1": "refused", "x1": "failed", "h2": "changed", "h3": "changed"}, rows
    assert standin.marked(work) == ["h1", "h2", "h3", "x1"], standin.marked(work)
