"""Hosts lost in a rollout, and failures after the rescued block (issue 50 red team HIGH 2, MEDIUM 4): the summary is
rewritten after every batch whatever happened in it, and a host is unreachable only where its result said so.

Real ansible-playbook over the local connection against the stand-in scenario (tests/integration/rollout_standin/
rollout.yml: workstation.yml's play keywords and skeleton with playbooks/tasks/rollout_*.yml). FIXTURE: a host "lost"
is given an SSH port that refuses (test_lost: in its changes; test_lost_after: after them, as a host never back from
its reboot); a resume that fails is a resume command that exits 1 for one host.

Before: with batches of 1, a host lost in its batch ended the run (Ansible: every host of the batch lost) and
summary.json stayed the one of the batch before (stopped null, the lost host "not run: its batch has not run yet"); a
resume that failed under a budget of 0 ended the play before the summary (no summary.json), and under a larger budget
labelled the host "unreachable".
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
PLAYBOOK = ROOT / "tests" / "integration" / "rollout_standin" / "rollout.yml"
sys.path.insert(0, str(ROOT / "tools"))
from dlboxdata import collection  # noqa: E402  pylint: disable=wrong-import-position,import-error


def rollout_command(work, hosts, extra_vars, playbook=PLAYBOOK, path=None, **group_vars):
    """The stand-in rollout of ``hosts`` (name -> host variables) as (argv, env), its inventory written under ``work``;
    ``path``: the PATH its commands run with (the scheduler host's: they run on localhost), else the FIXTURE bin's."""
    (work / "reports").mkdir(parents=True, exist_ok=True)
    inventory = {"all": {"vars": dict({"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                                       "test_dir": str(work), "dlbox_report_dir": str(work / "reports"),
                                       # the rollout's drain marker, one folder per host (one file system here)
                                       "dlbox_rollout_state_dir": "%s/marks/{{ inventory_hostname }}" % work},
                                      **group_vars),
                         "hosts": hosts}}
    (work / "hosts.yml").write_text(json.dumps(inventory))
    collection.importable()
    base = next(p for p in sys.path if (Path(p) / "ansible_collections" / "dlbox" / "stack").resolve() == ROOT)
    env = {"PATH": path or "%s:/usr/bin:/bin" % BIN, "ANSIBLE_CONFIG": str(work / "none.cfg"), "ANSIBLE_NOCOLOR": "1",
           "HOME": str(work), "ANSIBLE_LOCAL_TEMP": str(work / "tmp"), "ANSIBLE_COLLECTIONS_PATH": base,
           "LC_ALL": "C.UTF-8", "ANSIBLE_INTERNAL_POLL_INTERVAL": "0.005"}
    return [str(BIN / "ansible-playbook"), "-i", str(work / "hosts.yml"), str(playbook), "-e", json.dumps(extra_vars)], env


def rollout(work, hosts, extra_vars, playbook=PLAYBOOK, path=None, **group_vars):
    """The stand-in rollout of ``hosts`` (name -> host variables); (process, summary.json or None)."""
    argv, env = rollout_command(work, hosts, extra_vars, playbook=playbook, path=path, **group_vars)
    proc = subprocess.run(argv, capture_output=True, text=True, check=False, env=env, timeout=300, cwd=work)
    report = work / "reports" / "rollout" / "summary.json"
    return proc, (json.loads(report.read_text()) if report.is_file() else None)


def rows(summary):
    return {row["host"]: row for row in summary["hosts"]}


def marked(work):
    return sorted(p.name[len("marker-"):] for p in work.glob("marker-*"))


def test_batches_of_1_a_host_lost_in_its_changes_ends_the_run_and_the_summary_says_so(tmp_path):
    proc, summary = rollout(tmp_path, {"h1": {}, "h2": {"test_lost": True}, "h3": {}}, {"dlbox_serial": 1})
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "Traceback" not in out, out[-3000:]
    assert summary is not None, out[-3000:]
    got = rows(summary)
    assert {h: r["status"] for h, r in got.items()} == {"h1": "changed", "h2": "unreachable", "h3": "not run"}, got
    assert got["h2"]["reason"].startswith("interrupted: the run ended during its batch (lost, or the run was stopped"), got["h2"]
    assert summary["stopped"] and "(h2)" in summary["stopped"], summary["stopped"]
    assert got["h3"]["reason"] == "the rollout stopped before its batch: " + summary["stopped"], got["h3"]
    assert summary["counts"]["unreachable"] == 1 and summary["counts"]["not_run"] == 1
    assert marked(tmp_path) == ["h1"]
    # the summary written at a batch's start is not shown (only the end of a batch shows it)
    assert "interrupted: the run ended during its batch" not in proc.stdout


def test_batches_of_1_a_host_lost_after_its_changes_is_counted_and_the_summary_rewritten(tmp_path):
    """As a host never back from its reboot: it stays in its batch (its result said unreachable), is counted against
    the budget (1 of 1: the rollout stops), shown unreachable at its step, and fails with that reason."""
    proc, summary = rollout(tmp_path, {"h1": {}, "h2": {"test_lost_after": True}, "h3": {}}, {"dlbox_serial": 1})
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "Traceback" not in out, out[-3000:]
    got = rows(summary)
    assert {h: r["status"] for h, r in got.items()} == {"h1": "changed", "h2": "unreachable", "h3": "not run"}, got
    assert got["h2"]["step"] == "standin: baseline (common)", got["h2"]
    assert got["h2"]["reason"] == "lost at: standin: baseline (common) (interrupted there)", got["h2"]
    assert [(b["index"], b["unreachable"], b["stop"]) for b in summary["batches"]] == [(1, [], False), (2, ["h2"], True)]
    assert "batch 2 (h2)" in summary["stopped"], summary["stopped"]
    assert marked(tmp_path) == ["h1", "h2"]
    assert 'h2 was lost (unreachable) at "standin: baseline (common)"' in out, out[-3000:]
    assert "\nFleet summary:\n" in proc.stdout


def test_a_resume_that_fails_under_a_budget_of_0_is_a_failure_and_the_summary_is_written(tmp_path):
    proc, summary = rollout(tmp_path, {"h1": {}, "h2": {}, "h3": {}}, {"dlbox_max_fail_percentage": 0},
                            dlbox_resume_command="test {{ inventory_hostname }} != h2")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "Traceback" not in out, out[-3000:]
    assert summary is not None, out[-3000:]
    got = rows(summary)
    assert {h: r["status"] for h, r in got.items()} == {"h1": "changed", "h2": "failed", "h3": "changed"}, got
    assert got["h2"]["failure"]["task"] == "Fail the host when the resume command failed (it stays drained)", got["h2"]
    assert got["h2"]["failure"]["message"] == ("The resume command (dlbox_resume_command) failed on localhost "
                                               "(dlbox_scheduler_host) for h2: exit 1; it stays drained."), got["h2"]
    assert [(b["failed"], b["unreachable"], b["stop"]) for b in summary["batches"]] == [(["h2"], [], True)]
    assert "dlbox_max_fail_percentage=0%" in summary["stopped"]


def test_a_resume_that_fails_within_the_budget_is_failed_not_unreachable(tmp_path):
    proc, summary = rollout(tmp_path, {"h1": {}, "h2": {}, "h3": {}, "h4": {}},
                            {"dlbox_serial": 3, "dlbox_max_fail_percentage": 34},
                            dlbox_resume_command="test {{ inventory_hostname }} != h2")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "Traceback" not in out, out[-3000:]
    got = rows(summary)
    want = {"h1": "changed", "h2": "failed", "h3": "changed", "h4": "changed"}
    assert {h: r["status"] for h, r in got.items()} == want, got
    counted = [(b["failed"], b["unreachable"], b["stop"]) for b in summary["batches"]]
    assert counted == [(["h2"], [], False), ([], [], False)]


def test_a_group_down_from_the_start_is_unreachable_in_the_summary_and_the_run_goes_on(tmp_path):
    """HIGH 1: site.yml itself, the workstations' only host down (its SSH port refuses) from the fitness report on. It
    used to end the whole run there (rc 4, Ansible: every host of a play lost), no summary. Now it is left out of the
    later plays, unreachable before any change in the summary, and the servers' play runs (its host refused by the
    plan, so nothing changes on this machine)."""
    (tmp_path / "reports").mkdir()
    inventory = {"all": {
        "vars": {"ansible_python_interpreter": sys.executable, "dlbox_report_dir": str(tmp_path / "reports"),
                 "dlbox_plan_hardware": {"gpus": ["RTX 4090"], "os": "debian-12"}},
        "children": {
            "workstations": {"hosts": {"w1": {"ansible_connection": "ssh", "ansible_host": "127.0.0.1",
                                              "ansible_port": 1}}},
            "servers": {"hosts": {"s1": {"ansible_connection": "local", "dlbox_plan_request": {"cuda": "9.0"}}}}}}}
    (tmp_path / "hosts.yml").write_text(json.dumps(inventory))
    collection.importable()
    base = next(p for p in sys.path if (Path(p) / "ansible_collections" / "dlbox" / "stack").resolve() == ROOT)
    env = {"PATH": "%s:/usr/bin:/bin" % BIN, "ANSIBLE_CONFIG": str(tmp_path / "none.cfg"), "ANSIBLE_NOCOLOR": "1",
           "HOME": str(tmp_path), "ANSIBLE_LOCAL_TEMP": str(tmp_path / "tmp"), "ANSIBLE_COLLECTIONS_PATH": base,
           "LC_ALL": "C.UTF-8", "ANSIBLE_INTERNAL_POLL_INTERVAL": "0.005"}
    proc = subprocess.run([str(BIN / "ansible-playbook"), "-i", str(tmp_path / "hosts.yml"),
                           str(ROOT / "playbooks" / "site.yml")],
                          capture_output=True, text=True, check=False, env=env, timeout=300, cwd=tmp_path)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2, out[-4000:]                         # s1 refused (failed), not 4 (unreachable)
    assert "PLAY [Refuse the stacks that do not fit]" in out and "Could not match" not in out, out[-4000:]
    summary = json.loads((tmp_path / "reports" / "rollout" / "summary.json").read_text())
    got = rows(summary)
    assert got["w1"]["status"] == "unreachable" and got["w1"]["scenario"] == "workstation", got["w1"]
    assert got["w1"]["reason"] == ("lost before any change (it did not answer: the fitness report): nothing was changed"
                                   " on it"), got["w1"]
    assert got["s1"]["status"] == "refused", got["s1"]
    assert summary["batches"] == []
    assert "w1 " in out.split("PLAY RECAP")[-1] and "unreachable=0" in out.split("PLAY RECAP")[-1].split("w1 ")[1]


def test_a_batch_counted_late_stops_the_rollout_only_over_its_budget():
    """A batch none of whose hosts got to its end while Ansible went on (its host dropped in an earlier play) is not
    Ansible's 'every host of the batch' stop: within the budget the rollout goes on; the message of a whole batch
    lost in it no longer says Ansible ends the run whatever the budget without saying when."""
    collection.importable()
    from ansible_collections.dlbox.stack.plugins.plugin_utils import fleet_summary as fs  # pylint: disable=import-error
    hostvars = {"h1": {"dlbox_rollout_lost": True}, "h2": {"dlbox_rollout_done": True}}
    late = fs.batch_verdict(["h1", "h2"], ["h2"], hostvars, 1, 100, counted=[])
    assert late["missed"] == [1] and late["unreachable"] == ["h1"] and late["stop"] is False, late
    over = fs.batch_verdict(["h1", "h2"], ["h2"], hostvars, 1, 50, counted=[])
    assert over["stop"] is True and "more than the failure budget" in over["message"], over
    # not asked yet (rollout_finish.yml asks it first): dropped, counted the same, named neither lost nor failed
    asked = fs.batch_verdict(["h1", "h2"], ["h2"], {"h1": {}, "h2": {"dlbox_rollout_done": True}}, 1, 50, counted=[])
    assert (asked["dropped"], asked["unreachable"], asked["stop"]) == (["h1"], [], True), asked
    whole = fs.batch_verdict(["h1", "h2"], ["h1"], {"h1": {"dlbox_failure": {"task": "t", "message": "m"}}, "h2": {}},
                             1, 100, counted=[])
    assert whole["stop"] is True and "Ansible ends the run when every host of a batch fails or is lost in it" in \
        whole["message"], whole


def test_a_report_folder_that_cannot_be_written_fails_the_hosts_before_any_change(tmp_path):
    """MEDIUM 5: dlbox_report_dir under /proc (never writable): checked on the controller before any change; the hosts
    fail untouched with the reason, and the reports' own writes fail no host (a warning; was: the first report write
    failed every host of the batch)."""
    proc, _summary = rollout(tmp_path, {"h1": {}, "h2": {}}, {}, dlbox_report_dir="/proc/dlbox-h93")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "Traceback" not in out, out[-3000:]
    assert marked(tmp_path) == [], out[-3000:]                                   # nothing changed
    assert 'h1 failed at "Check the rollout variables"' in out and 'h2 failed at "Check the rollout variables"' in out
    assert "The report folder cannot be written on the controller (dlbox_report_dir)" in out, out[-3000:]
    assert "WARNING: the fleet summary could not be written to /proc/dlbox-h93/rollout" in out, out[-3000:]
    recap = out.split("PLAY RECAP")[-1]
    assert "failed=1" in recap.split("h2 ")[1].splitlines()[0], recap


def test_dlbox_serial_as_an_inventory_variable_is_refused_naming_it_before_any_change(tmp_path):
    """MEDIUM 7: dlbox_serial in the inventory does not reach the play keyword (one batch of all hosts): refused before
    any change, saying it must be an extra variable (was: one batch, miscounted)."""
    proc, summary = rollout(tmp_path, {"h1": {}, "h2": {}, "h3": {}}, {}, dlbox_serial=1)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "Traceback" not in out, out[-3000:]
    assert marked(tmp_path) == [], out[-3000:]
    assert "dlbox_serial (1) must be an extra variable (-e dlbox_serial=... or -e @rollout.yml)" in out, out[-3000:]
    assert {r["status"] for r in summary["hosts"]} == {"failed"}
    # the same value as an extra variable is fine
    proc, summary = rollout(tmp_path / "extra", {"h1": {}, "h2": {}}, {"dlbox_serial": 1})
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    assert [b["hosts"] for b in summary["batches"]] == [["h1"], ["h2"]]


def test_a_node_an_admin_drained_is_neither_drained_again_nor_resumed(tmp_path):
    """MEDIUM 6: h2 is drained before the rollout (FIXTURE state file 'drained'): the rollout changes it (its jobs are
    gone) but neither drains it again (the admin's reason kept) nor resumes it; h1 is drained and resumed."""
    state = tmp_path / "sched"
    state.mkdir()
    # the FIXTURE scheduler knows both nodes (h1 idle): a node it does not know makes the check exit 2, which fails
    # the host untouched since bcfb574 (rt50c H1)
    (state / "h1").write_text("idle\n")
    (state / "h2").write_text("drained\n")
    node = "%s/{{ inventory_hostname }}" % state
    proc, summary = rollout(tmp_path, {"h1": {}, "h2": {}}, {},
                            dlbox_drain_command="echo drained > %s; echo drain-{{ inventory_hostname }} >> %s/calls"
                            % (node, state),
                            dlbox_drain_check_command="grep -qx drained %s" % node,
                            dlbox_resume_command="echo idle > %s; echo resume-{{ inventory_hostname }} >> %s/calls"
                            % (node, state))
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    assert {r["host"]: r["status"] for r in summary["hosts"]} == {"h1": "changed", "h2": "changed"}
    assert sorted((state / "calls").read_text().split()) == ["drain-h1", "resume-h1"]
    assert (state / "h2").read_text() == "drained\n" and (state / "h1").read_text() == "idle\n"
    # the summary says why h2 is still drained (rt50 MEDIUM M3), and h1 was resumed
    reasons = {r["host"]: r["reason"] for r in summary["hosts"]}
    assert reasons["h1"] is None and reasons["h2"].startswith("left drained: an admin had drained it"), reasons
    assert marked(tmp_path) == ["h1", "h2"]


def outside_playbook(work):
    """The stand-in with one more way out of a batch: ``test_fail_outside`` fails the host after the rescued block (as
    a reboot's check or the summary can: Ansible drops it from its batch, the rollout has no record of why)."""
    text = PLAYBOOK.read_text().replace("{{ playbook_dir }}/../../..", str(ROOT))
    anchor = "    - name: Resume, fleet summary, budget\n"
    assert text.count(anchor) == 1
    text = text.replace(anchor, (
        "    - name: Fail outside the rescued block\n"
        "      ansible.builtin.fail:\n"
        "        msg: FIXTURE failure of {{ inventory_hostname }} outside the rescue\n"
        "      when: test_fail_outside | default(false)\n\n") + anchor)
    path = work / "outside.yml"
    work.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_a_host_lost_in_a_batch_with_others_is_unreachable_from_its_own_result_and_one_failed_is_not(tmp_path):
    """Item 1 (this stop): one batch of 4, h2 lost in its changes (its SSH port refuses: Ansible drops it), h3 failed
    after the rescued block (Ansible drops it too), h4 refused by its plan. Each is named from its record: h2
    unreachable at the step it left (a ping from a host still in the batch found it unreachable), h3 failed (the ping
    found it answering), h4 refused. Was: h3 missing from ansible_play_batch was called unreachable too. 2 bad of 4 is
    50 %, within dlbox_max_fail_percentage=50: batch 2 (h5) runs."""
    hosts = {"h1": {}, "h2": {"test_lost": True}, "h3": {"test_fail_outside": True},
             "h4": {"test_plan": {"ok": False, "errors": ["FIXTURE refusal"]}}, "h5": {}}
    proc, summary = rollout(tmp_path, hosts, {"dlbox_serial": 4, "dlbox_max_fail_percentage": 50},
                            playbook=outside_playbook(tmp_path))
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "Traceback" not in out, out[-3000:]
    got = rows(summary)
    assert {h: r["status"] for h, r in got.items()} == {
        "h1": "changed", "h2": "unreachable", "h3": "failed", "h4": "refused", "h5": "changed"}, got
    assert got["h2"]["step"] == "standin: baseline (common)", got["h2"]
    assert got["h2"]["reason"] == "lost at: standin: baseline (common) (interrupted there)", got["h2"]
    assert got["h3"]["step"] is None and got["h3"]["failure"]["task"] == \
        '(a task of the step "standin: baseline (common)")', got["h3"]
    assert "it still answers, so it was not lost" in got["h3"]["failure"]["message"], got["h3"]
    assert [(b["index"], b["hosts"], b["failed"], b["unreachable"], b["dropped"], b["stop"])
            for b in summary["batches"]] == [(1, ["h1", "h2", "h3", "h4"], ["h3"], ["h2"], [], False),
                                             (2, ["h5"], [], [], [], False)], summary["batches"]
    assert summary["counts"]["unreachable"] == 1 and summary["counts"]["failed"] == 1
    assert summary["stopped"] is None
    assert marked(tmp_path) == ["h1", "h3", "h5"]
    recap = out.split("PLAY RECAP")[-1]
    assert "unreachable=1" in recap.split("h2 ")[1].splitlines()[0], recap
    assert "unreachable=0" in recap.split("h3 ")[1].splitlines()[0], recap


def test_a_batch_of_three_with_one_lost_and_one_failed_outside_stops_over_34_percent(tmp_path):
    """The same two ways out in a batch of 3 under a 34 % budget: 2 of 3 (h3 failed, h2 unreachable) stop the rollout;
    h4 is not run."""
    hosts = {"h1": {}, "h2": {"test_lost": True}, "h3": {"test_fail_outside": True}, "h4": {}}
    proc, summary = rollout(tmp_path, hosts, {"dlbox_serial": 3, "dlbox_max_fail_percentage": 34},
                            playbook=outside_playbook(tmp_path))
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "Traceback" not in out, out[-3000:]
    got = rows(summary)
    assert {h: r["status"] for h, r in got.items()} == {
        "h1": "changed", "h2": "unreachable", "h3": "failed", "h4": "not run"}, got
    assert summary["stopped"] == ("2 of the 3 hosts of batch 1 (h3, h2) failed or were unreachable: 67%, more than "
                                  "the failure budget dlbox_max_fail_percentage=34%"), summary["stopped"]
    assert marked(tmp_path) == ["h1", "h3"]
