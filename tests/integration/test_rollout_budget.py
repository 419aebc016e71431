"""The rollout's failure budget, summary, artifacts and drain-and-wait, with ansible-playbook and ansible-runner, and
no Docker: the rollout's own task files (playbooks/tasks/rollout_*.yml) under a stand-in scenario
(rollout_standin/rollout.yml: workstation.yml's play keywords and skeleton, one marker-writing task in place of the
roles) over the local connection.

Real parts: ansible-playbook and its batching (serial, max_fail_percentage, a batch whose hosts all fail ending the
run), an unreachable host (its SSH port refuses: Ansible's own UNREACHABLE), ansible-runner 2.4.1 (the runner of AWX
and of the execution environment, execution-environment.yml) and its artifacts folder.
FIXTURE parts: the failures (a fail task where the inventory says), the scheduler (tests/fixtures/fake_scheduler/
fake-slurm: Slurm's drain states as its documentation gives them, NOT Slurm). The SSH fleet test
(test_fleet_rollout.py) runs site.yml itself on containers.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from conftest import BIN, ROOT, ansible_env

PLAYBOOK = ROOT / "tests" / "integration" / "rollout_standin" / "rollout.yml"
SLURM = ROOT / "tests" / "fixtures" / "fake_scheduler" / "fake-slurm"


def inventory(work, hosts, **extra):
    """Hosts h1..hN over the local connection; ``hosts``: name -> host variables."""
    (work / "reports").mkdir(parents=True, exist_ok=True)
    data = {"all": {"vars": dict({"ansible_connection": "local", "ansible_python_interpreter": str(BIN / "python"),
                                  "test_dir": str(work), "dlbox_report_dir": str(work / "reports"),
                                  # the rollout's own drain marker, per host (local hosts share this file system)
                                  "dlbox_rollout_state_dir": str(work / "state") + "/{{ inventory_hostname }}"},
                                 **extra),
                    "hosts": hosts}}
    (work / "hosts.yml").write_text(json.dumps(data, indent=2))
    return work / "hosts.yml"


def run(work, extra_vars):
    env = ansible_env()
    env["ANSIBLE_CONFIG"] = str(work / "none.cfg")
    start = time.monotonic()
    proc = subprocess.run(["ansible-playbook", "-i", str(work / "hosts.yml"), str(PLAYBOOK), "-e", json.dumps(extra_vars)],
                          cwd=work, env=env, capture_output=True, text=True, check=False, timeout=600)
    (work / "run.log").write_text(proc.stdout + proc.stderr)
    print("\nrollout %s: %.1f s, rc %d" % (work.name, time.monotonic() - start, proc.returncode))
    return proc, json.loads((work / "reports" / "rollout" / "summary.json").read_text())


def marked(work):
    return sorted(p.name[len("marker-"):] for p in work.glob("marker-*"))


def status(summary):
    return {row["host"]: row["status"] for row in summary["hosts"]}


NINE = {"h1": {}, "h2": {"test_fail": True}, "h3": {}, "h4": {}, "h5": {"test_fail": True}, "h6": {"test_lost": True},
        "h7": {}, "h8": {}, "h9": {}}


def runner(private, work, ident, extra_vars):
    """ansible-runner run, as AWX runs a job: extra variables in env/extravars, artifacts in artifacts/<ident>."""
    (private / "env").mkdir(parents=True, exist_ok=True)
    (private / "env" / "extravars").write_text(json.dumps(extra_vars))
    env = ansible_env()
    env["ANSIBLE_CONFIG"] = str(work / "none.cfg")
    start = time.monotonic()
    proc = subprocess.run([str(BIN / "ansible-runner"), "run", str(private), "-p", str(PLAYBOOK),
                           "--inventory", str(work / "hosts.yml"), "--ident", ident],
                          cwd=work, env=env, capture_output=True, text=True, check=False, timeout=600)
    print("\nansible-runner %s: %.1f s, rc %d" % (ident, time.monotonic() - start, proc.returncode))
    artifacts = private / "artifacts" / ident
    stats = [json.loads(p.read_text()) for p in (artifacts / "job_events").glob("*.json")]
    stats = [e for e in stats if e.get("event") == "playbook_on_stats"]
    assert len(stats) == 1, proc.stdout[-3000:]
    return artifacts, stats[0]["event_data"]["artifact_data"]


def test_artifacts_only_in_an_execution_environment(tmp_path, collection_installed):
    """dlbox_rollout_report_files false: no summary files, the summary as the job's artifacts (set_stats)."""
    work = tmp_path / "eeonly"
    work.mkdir()
    inventory(work, {"h1": {}, "h2": {}}, dlbox_rollout_report_files=False)
    artifacts, data = runner(tmp_path / "runner-ee", work, "eeonly", {})
    assert (artifacts / "status").read_text().strip() == "successful"
    assert {h["host"]: h["status"] for h in data["dlbox_rollout"]["hosts"]} == {"h1": "changed", "h2": "changed"}
    assert data["dlbox_rollout"]["report_dir"] is None and data["dlbox_rollout"]["stopped"] is None
    assert not (work / "reports" / "rollout").exists()


def test_batches_of_three_a_failure_within_34_percent_goes_on_a_failure_and_a_lost_host_stop_it(tmp_path,
                                                                                                collection_installed):
    """Through ansible-runner, as AWX runs a job: batch 1 (one failure of 3: 33 % <= 34 %) goes on; batch 2 (one
    failure and one host lost: 67 %) stops the rollout, which Ansible alone would not do (it counts 1 failure of 3);
    batch 3 is untouched and listed as not run; the summary is the job's artifact (set_stats)."""
    work = tmp_path / "budget34"
    work.mkdir()
    inventory(work, NINE)
    private = tmp_path / "runner"
    (private / "env").mkdir(parents=True)
    (private / "env" / "extravars").write_text(json.dumps({"dlbox_serial": 3, "dlbox_max_fail_percentage": 34}))
    env = ansible_env()
    env["ANSIBLE_CONFIG"] = str(work / "none.cfg")
    start = time.monotonic()
    proc = subprocess.run([str(BIN / "ansible-runner"), "run", str(private), "-p", str(PLAYBOOK),
                           "--inventory", str(work / "hosts.yml"), "--ident", "budget34"],
                          cwd=work, env=env, capture_output=True, text=True, check=False, timeout=600)
    print("\nansible-runner budget34: %.1f s, rc %d" % (time.monotonic() - start, proc.returncode))
    artifacts = private / "artifacts" / "budget34"
    assert (artifacts / "rc").read_text().strip() != "0", proc.stdout[-3000:]
    assert (artifacts / "status").read_text().strip() == "failed"
    out = (artifacts / "stdout").read_text()
    assert "Traceback" not in out
    summary = json.loads((work / "reports" / "rollout" / "summary.json").read_text())
    assert status(summary) == {"h1": "changed", "h2": "failed", "h3": "changed", "h4": "changed", "h5": "failed",
                               "h6": "unreachable", "h7": "not run", "h8": "not run", "h9": "not run"}, summary
    rows = {row["host"]: row for row in summary["hosts"]}
    assert rows["h6"]["step"] == "standin: baseline (common)" and "interrupted" in rows["h6"]["reason"]
    assert rows["h2"]["failure"] == {"task": "Fail where the test says", "message": "FIXTURE failure of h2"}
    assert "the rollout stopped before its batch" in rows["h7"]["reason"]
    assert [(b["index"], b["hosts"], b["failed"], b["unreachable"], b["stop"]) for b in summary["batches"]] == [
        (1, ["h1", "h2", "h3"], ["h2"], [], False), (2, ["h4", "h5", "h6"], ["h5"], ["h6"], True)]
    assert "dlbox_max_fail_percentage=34%" in summary["stopped"]
    assert marked(work) == ["h1", "h2", "h3", "h4", "h5"]              # batch 3 untouched; h6 lost before its work
    assert summary["counts"] == {"hosts": 9, "changed": 3, "unchanged": 0, "failed": 2, "unreachable": 1,
                                 "refused": 0, "not_run": 3, "pending_reboot": 0, "left_drained": 0}
    # the job's artifacts: set_stats' data in the playbook_on_stats event ansible-runner wrote (AWX keeps it as the
    # job's artifacts), the last batch's
    stats = [json.loads(p.read_text()) for p in (artifacts / "job_events").glob("*.json")]
    stats = [e for e in stats if e.get("event") == "playbook_on_stats"]
    assert len(stats) == 1
    rollout = stats[0]["event_data"]["artifact_data"]["dlbox_rollout"]
    assert rollout["counts"] == summary["counts"]
    assert {h["host"]: h["status"] for h in rollout["hosts"]} == status(summary)
    assert rollout["stopped"] == summary["stopped"] and rollout["report_dir"] == str(work / "reports")
    assert [b["stop"] for b in rollout["batches"]] == [False, True]
    # the recap: Ansible marks the whole stopped batch failed, as its own max_fail_percentage does
    recap = out.split("PLAY RECAP")[-1]
    assert "h4 " in recap and "failed=1" in recap.split("h4 ")[1].splitlines()[0]
    assert "unreachable=1" in recap.split("h6 ")[1].splitlines()[0]


def test_the_same_batches_within_a_67_percent_budget_go_on_to_the_end(tmp_path, collection_installed):
    work = tmp_path / "budget67"
    work.mkdir()
    inventory(work, NINE)
    proc, summary = run(work, {"dlbox_serial": 3, "dlbox_max_fail_percentage": "67%"})    # text, as a survey gives it
    assert proc.returncode != 0                                                     # the failed hosts fail the run
    assert status(summary)["h9"] == "changed" and summary["stopped"] is None
    assert [b["stop"] for b in summary["batches"]] == [False, False, False]
    assert marked(work) == ["h1", "h2", "h3", "h4", "h5", "h7", "h8", "h9"]
    assert "PLAY RECAP" in proc.stdout


def test_survey_text_batches_a_refused_plan_and_drain_and_wait(tmp_path, collection_installed):
    """"1,50%" (a survey's text field) makes Ansible's batches [h1], [h2, h3], [h4, h5]; a host refused by its plan
    shows refused with the reason and uses none of the budget; the FIXTURE scheduler's drain ends after 2 s on h2 (the
    rollout waits for it, then changes the host) and never on h3 (after dlbox_drain_timeout the host fails with the
    reason, untouched, and is resumed); every other host is drained, then resumed after its changes."""
    work = tmp_path / "survey"
    work.mkdir()
    state = work / "scheduler"
    cmd = "%s %s %s {verb} {{{{ inventory_hostname }}}}" % (sys.executable, SLURM, state)
    inventory(work, {
        # h2's wait has room for its 2 s job whatever the load (the wait ends by the controller's clock)
        "h1": {}, "h2": {"test_job_seconds": "2", "dlbox_drain_timeout": 30}, "h3": {"test_job_seconds": "never"},
        "h4": {"test_plan": {"ok": False, "errors": ["FIXTURE: no driver branch supports this GPU"]}}, "h5": {}},
        dlbox_scheduler_host="localhost",
        dlbox_drain_command="env FAKE_SLURM_JOB_SECONDS={{ test_job_seconds | default(0) }} " + cmd.format(verb="drain"),
        dlbox_drain_check_command=cmd.format(verb="drained"), dlbox_drain_check_interval=1, dlbox_drain_timeout=4,
        dlbox_resume_command=cmd.format(verb="resume"))
    proc, summary = run(work, {"dlbox_serial": "1,50%", "dlbox_max_fail_percentage": 50})
    assert "Traceback" not in proc.stdout + proc.stderr
    assert [b["hosts"] for b in summary["batches"]] == [["h1"], ["h2", "h3"], ["h4", "h5"]]
    assert status(summary) == {"h1": "changed", "h2": "changed", "h3": "failed", "h4": "refused", "h5": "changed"}
    rows = {row["host"]: row for row in summary["hosts"]}
    assert "was not drained within 4 s" in rows["h3"]["failure"]["message"]
    assert "draining" in rows["h3"]["failure"]["message"] and "nothing was changed" in rows["h3"]["failure"]["message"]
    assert rows["h4"]["reason"] == "the plan: FIXTURE: no driver branch supports this GPU (nothing was changed)"
    assert summary["batches"][2]["refused"] == ["h4"] and not summary["batches"][2]["stop"]
    assert marked(work) == ["h1", "h2", "h5"]                                     # h3 untouched, h4 refused
    calls = [line.split() for line in (state / "calls.log").read_text().splitlines()]
    verbs = {}
    for ts, verb, node in calls:
        verbs.setdefault(node, []).append((float(ts), verb))
    assert "h4" not in verbs
    # each node is checked first (one an admin drained already is neither drained again nor resumed), then drained
    for node in ("h1", "h5"):
        assert [v for _t, v in verbs[node]] == ["drained", "drain", "drained", "resume"], verbs[node]
    h2 = [v for _t, v in verbs["h2"]]
    assert h2[:2] == ["drained", "drain"] and h2[-1] == "resume" and h2.count("drained") >= 3, h2   # it waited
    assert verbs["h2"][-2][0] - verbs["h2"][0][0] >= 2.0
    h3 = [v for _t, v in verbs["h3"]]
    # polled until dlbox_drain_timeout had passed by the controller's clock (ba9f9e9, rt50d L1: how many tries fit in
    # 4 s depends on the load; the clean-clone CI had 3): the wait's deadline is taken after the drain, in whole
    # seconds (now(fmt='%s')), so the resume comes at least 3 s after the drain
    assert h3[:2] == ["drained", "drain"] and h3[-1] == "resume" and h3.count("drained") >= 2, h3
    assert verbs["h3"][-1][0] - verbs["h3"][1][0] >= 3.0, verbs["h3"]
    assert json.loads((state / "h3.json").read_text())["state"] == "idle"                     # resumed as it was


@pytest.mark.parametrize("serial", ["1,x", "0%", [1, -2]])
def test_a_bad_batch_list_is_refused_naming_the_variable_before_any_change(tmp_path, collection_installed, serial):
    work = tmp_path / "bad"
    work.mkdir()
    inventory(work, {"h1": {}})
    env = ansible_env()
    env["ANSIBLE_CONFIG"] = str(work / "none.cfg")
    proc = subprocess.run(["ansible-playbook", "-i", str(work / "hosts.yml"), str(PLAYBOOK),
                           "-e", json.dumps({"dlbox_serial": serial})],
                          cwd=work, env=env, capture_output=True, text=True, check=False, timeout=300)
    assert proc.returncode != 0
    assert "dlbox_serial" in proc.stdout + proc.stderr
    assert marked(work) == []
    assert os.listdir(work / "reports") == []


def test_a_batch_left_without_a_host_is_counted_at_the_next_batchs_end(tmp_path, collection_installed):
    """Batches [h1, h2], [h3], [h4] within 34 %: h1 refused by its plan, h2 lost: no host of batch 1 gets to its end,
    and Ansible goes on to batch 2 (to it, 1 unreachable of 2 is not the whole batch). At the end of batch 2 the
    rollout counts batch 1: h2 unreachable, over the budget, so it stops there and h4 is not run (h3, already under
    way, could not be held back: the summary says so)."""
    work = tmp_path / "nosurvivor"
    work.mkdir()
    inventory(work, {"h1": {"test_plan": {"ok": False, "errors": ["FIXTURE refusal"]}}, "h2": {"test_lost": True},
                     "h3": {}, "h4": {}})
    proc, summary = run(work, {"dlbox_serial": [2, 1], "dlbox_max_fail_percentage": 34})
    assert proc.returncode != 0 and "Traceback" not in proc.stdout + proc.stderr
    assert status(summary) == {"h1": "refused", "h2": "unreachable", "h3": "changed", "h4": "not run"}
    assert summary["stopped"].endswith("(counted at the end of batch 2: no host of it was left)")
    assert [(b["index"], b["missed"], b["stop"]) for b in summary["batches"]] == [(2, [1], True)]
    assert marked(work) == ["h3"]
