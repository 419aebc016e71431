"""Whose drain it is, a resume that fails after a drain that timed out, and a run stopped during a batch (issue 50,
second red team rt50b HIGH H1, MEDIUM M1, M2; its harness's repros s2.py e1/e2, s7.py f1, s3.py e3 made tests).

Real ansible-playbook over the local connection against the stand-in scenario (tests/integration/rollout_standin/
rollout.yml: workstation.yml's play keywords and skeleton with playbooks/tasks/rollout_*.yml). The scheduler is the
FIXTURE tests/fixtures/fake_scheduler/fake-slurm (NOT Slurm): Slurm's documented node states (sinfo(1) NODE STATE
CODES: DRAINING "executing a job, but will not be allocated additional jobs", then DRAINED) and the node's Reason
(scontrol(1) update Reason=; sinfo -o %E, "none" without one, src/sinfo/print.c). A node an admin drained is seeded
as its state file.

Before (rt50b): a node an admin was still draining (its jobs running) was taken for an undrained one: drained again
(its Reason replaced), changed and resumed into production; a node an admin drained while the rollout's marker of an
earlier failed run was still on the host was resumed; a drain that timed out and a resume that failed read "...,
and it is resumed"; a run stopped with Ctrl-C during a batch called its hosts "unreachable: lost" and did not say
that they may be left drained.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import test_fleet_lost_hosts as standin  # noqa: E402  pylint: disable=wrong-import-position,import-error

ROOT = Path(__file__).resolve().parents[2]
SLURM = ROOT / "tests" / "fixtures" / "fake_scheduler" / "fake-slurm"
HOST = "{{ inventory_hostname }}"


def scheduler(work, reason_command=True, jobs="0", resume=None):
    """The FIXTURE scheduler's commands; the rollout drains with a Reason that begins with dlbox_drain_reason."""
    sl = "FAKE_SLURM_JOB_SECONDS=%s %s %s %s/slurm" % (jobs, sys.executable, SLURM, work)
    out = {"dlbox_drain_command": "%s drain %s 'dlbox rollout (test)'" % (sl, HOST),
           "dlbox_drain_check_command": "%s drained %s" % (sl, HOST),
           "dlbox_resume_command": resume or "%s resume %s" % (sl, HOST),
           "dlbox_drain_check_interval": 1, "dlbox_drain_timeout": 20, "dlbox_scheduler_host": "localhost"}
    if reason_command:
        out["dlbox_drain_reason_command"] = "%s reason %s" % (sl, HOST)
    return out


def seed(work, node, **state):
    (work / "slurm").mkdir(parents=True, exist_ok=True)
    (work / "slurm" / ("%s.json" % node)).write_text(json.dumps(state))


def node(work, name):
    return json.loads((work / "slurm" / ("%s.json" % name)).read_text())


def state(work, name):
    """The node's state as sinfo shows it (fake-slurm's own rule: draining until its job ends, then drained)."""
    got = node(work, name)
    if got["state"] == "draining" and got.get("job_ends") is not None and time.time() >= got["job_ends"]:
        return "drained"
    return got["state"]


def calls(work, name):
    log = work / "slurm" / "calls.log"
    return [line.split()[1] for line in log.read_text().splitlines() if line.split()[2] == name] if log.is_file() else []


def marker(work, name):
    return work / "marks" / name / "drained"


def test_a_node_an_admin_is_draining_is_skipped_at_once_untouched_and_counts_for_nothing(tmp_path):
    """rt50b H1(a), s2.py e1, and rt50c M3, w6: the admin's drain, jobs still running (fake-slurm prints "draining",
    sinfo(1) NODE STATE CODES: the DRAIN flag on a node still executing a job), with and without the reason command.
    Not drained again (its Reason kept), not resumed, and (rt50c M3) not waited for nor changed: skipped at once, its
    row "not run" saying why, counted for nothing. Before: the rollout waited the whole dlbox_drain_timeout for the
    admin's jobs, then failed the host, and with budget 0 stopped the rollout (h2, h3 "not run"). Batches of 1: h1's
    batch is the skipped host alone (no host gets to its end; the summary it leaves says why)."""
    for with_reason in (True, False):
        work = tmp_path / ("reason" if with_reason else "marker")
        ends = time.time() + 600
        seed(work, "h1", state="draining", job_ends=ends, reason="RMA 4711")
        extra = dict(scheduler(work, with_reason), dlbox_serial=1, dlbox_max_fail_percentage=0, dlbox_drain_timeout=20)
        started = time.time()
        proc, summary = standin.rollout(work, {"h1": {}, "h2": {}, "h3": {}}, extra)
        out = proc.stdout + proc.stderr
        assert proc.returncode == 0 and summary, out[-3000:]
        assert time.time() - started < 90, "the run waited for the admin's jobs"
        # one look at it, no wait, no drain, no resume: as the admin left it
        assert calls(work, "h1") == ["drained"] + (["reason"] if with_reason else []), calls(work, "h1")
        assert node(work, "h1") == {"state": "draining", "job_ends": ends, "reason": "RMA 4711"}
        assert not (work / "marker-h1").exists() and not marker(work, "h1").exists()       # nothing changed on it
        for other in ("h2", "h3"):
            assert calls(work, other)[:1] == ["drained"] and "drain" in calls(work, other), calls(work, other)
            assert calls(work, other)[-1] == "resume" and (work / ("marker-%s" % other)).exists()
        rows = standin.rows(summary)
        why = ("the scheduler's reason \"RMA 4711\" (not the rollout's \"dlbox rollout\")" if with_reason
               else "without the rollout's marker %s/marks/h1/drained" % work)
        assert rows["h1"]["status"] == "not run" and rows["h1"]["failure"] is None, rows["h1"]
        assert rows["h1"]["reason"] == (
            "skipped: an admin is draining it (draining already, its jobs still running, %s): it is left as it was "
            "(not drained again, not waited for, not changed, not resumed); run the rollout again for it once its jobs "
            "are done" % why), rows["h1"]
        assert (rows["h2"]["status"], rows["h3"]["status"]) == ("changed", "changed"), rows
        # an admin's drain is not the rollout's doing: nothing against the budget (0 here), no stop
        assert summary["stopped"] is None, summary["stopped"]
        assert all(not b["stop"] and b["failed"] == [] and b["dropped"] == [] for b in summary["batches"]), summary
        assert summary["counts"]["not_run"] == 1 and summary["counts"]["failed"] == 0, summary["counts"]
        assert "Ansible dropped the host" not in out


def test_a_batch_of_skipped_hosts_alone_leaves_a_summary_that_says_why(tmp_path):
    """The last batch is an admin's draining node alone: no host gets to the batch's end to write the summary, so the
    one written at the batch's start ("interrupted") would stand. The skip writes it again with the host's reason."""
    work = tmp_path / "w"
    seed(work, "h2", state="draining", job_ends=time.time() + 600, reason="RMA 4711")
    proc, summary = standin.rollout(work, {"h1": {}, "h2": {}}, dict(scheduler(work), dlbox_serial=1))
    assert proc.returncode == 0 and summary, (proc.stdout + proc.stderr)[-3000:]
    rows = standin.rows(summary)
    assert rows["h1"]["status"] == "changed" and rows["h2"]["status"] == "not run", rows
    assert rows["h2"]["reason"].startswith("skipped: an admin is draining it (draining already"), rows["h2"]


def test_a_node_an_admin_set_down_or_failed_is_neither_drained_nor_resumed_nor_waited_for(tmp_path):
    """rt50c H1: a node an admin set DOWN (an RMA) or FAIL (Xid 79) is out of service already. Before, the lab's check
    (it accepts only drained states) took it for in service: the rollout drained it (its Reason overwritten), the wait
    passed (Slurm prints DOWN+DRAIN as drained) and the resume made it idle: back in production. Now it is the admin's:
    no drain, no wait (it never becomes drained), no resume, its state and Reason as the admin left them; with and
    without the reason command, and with a stale rollout marker on the host (a state that is no drain is never the
    rollout's)."""
    for with_reason in (True, False):
        work = tmp_path / ("reason" if with_reason else "marker")
        seed(work, "h1", state="down", job_ends=None, reason="RMA 4711: GPU 3 fell off the bus")
        seed(work, "h2", state="fail", job_ends=None, reason="Xid 79, do not use")
        marker(work, "h2").parent.mkdir(parents=True)
        marker(work, "h2").write_text("drained by the dlbox rollout (test); removed after its resume\n")
        extra = dict(scheduler(work, with_reason), dlbox_serial=0)
        proc, summary = standin.rollout(work, {"h1": {}, "h2": {}, "h3": {}}, extra)
        out = proc.stdout + proc.stderr
        assert proc.returncode == 0 and summary, out[-3000:]
        for name, st, why in (("h1", "down", "RMA 4711: GPU 3 fell off the bus"), ("h2", "fail", "Xid 79, do not use")):
            assert calls(work, name) == ["drained"] + (["reason"] if with_reason else []), calls(work, name)
            assert node(work, name) == {"state": st, "job_ends": None, "reason": why}     # as the admin left it
            row = standin.rows(summary)[name]
            assert row["status"] == "changed" and row["reason"].startswith(
                "left drained: an admin had taken it out of service before the rollout (out of service already (state %s)"
                % st), row
        assert calls(work, "h3")[-1] == "resume" and node(work, "h3") == {"state": "idle"}
        assert summary["counts"]["left_drained"] == 2 and summary["batches"][0]["left_drained"] == [], summary


def test_a_node_the_scheduler_does_not_know_fails_untouched_before_any_drain(tmp_path):
    """rt50c L1: the check before the drain exits 2 (sinfo prints nothing for a node Slurm does not know; the lab's
    check exits 2 then): before, the rollout wrote its marker, drained it and resumed it anyway. Now the host fails
    there, untouched and not drained, with the check's exit and the variable named."""
    work = tmp_path / "w"
    sched = scheduler(work)
    sched["dlbox_drain_check_command"] = "echo 'no node h1' >&2; exit 2"
    proc, summary = standin.rollout(work, {"h1": {}}, dict(sched, dlbox_serial=0))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2 and summary, out[-3000:]
    assert calls(work, "h1") == [] and not marker(work, "h1").exists() and not (work / "marker-h1").exists()
    row = standin.rows(summary)["h1"]
    assert row["status"] == "failed", row
    assert "dlbox_drain_check_command" in row["failure"]["message"] and "exited 2: no node h1" in row["failure"]["message"]
    assert "was not drained" in row["failure"]["message"], row


def test_a_pending_reboot_with_a_resume_but_no_drain_command_is_not_resumed(tmp_path):
    """rt50c M1: a lab that drains elsewhere and gives the rollout only dlbox_resume_command: a host whose driver
    reboot is pending is not put back in service by the rollout's resume (f9c3f71 had made "left drained" need the
    rollout's own drain, so such a host was resumed into Slurm)."""
    work = tmp_path / "w"
    sched = scheduler(work)
    seed(work, "h1", state="drained", job_ends=None, reason="drained by the lab's own tool")
    only_resume = {"dlbox_resume_command": sched["dlbox_resume_command"], "dlbox_scheduler_host": "localhost"}
    proc, summary = standin.rollout(work, {"h1": {}}, dict(only_resume, dlbox_serial=0),
                                    nvidia_driver_reboot_required=True, dlbox_reboot_allowed=False)
    out = proc.stdout + proc.stderr
    assert summary, out[-3000:]
    assert "resume" not in calls(work, "h1") and node(work, "h1")["state"] == "drained", calls(work, "h1")
    assert standin.rows(summary)["h1"]["reason"].startswith("left drained: the NVIDIA driver's reboot is pending")


def test_a_stale_marker_does_not_make_an_admins_drain_the_rollouts_with_the_reason_command(tmp_path):
    """rt50b H1(b), s2.py e2: the marker of an earlier failed run stayed after a manual resume; an admin drained the
    node later (RMA). The scheduler's Reason says whose drain it is; without the reason command, the marker decides
    (the documented limit, docs/fleet.md), and the node is resumed."""
    for with_reason, resumed in ((True, False), (False, True)):
        work = tmp_path / ("reason" if with_reason else "marker")
        seed(work, "h1", state="drained", job_ends=None, reason="RMA 4711: Xid 79")
        marker(work, "h1").parent.mkdir(parents=True)
        marker(work, "h1").write_text("drained by the dlbox rollout (test); removed after its resume\n")
        proc, summary = standin.rollout(work, {"h1": {}}, dict(scheduler(work, with_reason), dlbox_serial=0))
        assert proc.returncode == 0 and summary, (proc.stdout + proc.stderr)[-3000:]
        assert "drain" not in calls(work, "h1")
        assert ("resume" in calls(work, "h1")) is resumed, calls(work, "h1")
        row = standin.rows(summary)["h1"]
        if resumed:
            assert node(work, "h1")["state"] == "idle" and not (row["reason"] or ""), row
        else:
            assert node(work, "h1") == {"state": "drained", "job_ends": None, "reason": "RMA 4711: Xid 79"}
            assert row["reason"].startswith("left drained: an admin had drained it before the rollout (drained already, "
                                            "the scheduler's reason \"RMA 4711: Xid 79\""), row


def test_the_rollouts_own_drain_found_by_its_reason_is_resumed_without_a_marker(tmp_path):
    """A node the rollout drained in an earlier run (its Reason begins with dlbox_drain_reason) is the rollout's, though
    its marker is gone: not drained again, resumed at the end; one still draining is waited for."""
    work = tmp_path / "w"
    seed(work, "h1", state="drained", job_ends=None, reason="dlbox rollout (an earlier run)")
    seed(work, "h2", state="draining", job_ends=time.time() + 2, reason="dlbox rollout (an earlier run)")
    proc, summary = standin.rollout(work, {"h1": {}, "h2": {}}, dict(scheduler(work), dlbox_serial=0))
    assert proc.returncode == 0 and summary, (proc.stdout + proc.stderr)[-3000:]
    for name in ("h1", "h2"):
        assert "drain" not in calls(work, name) and calls(work, name)[-1] == "resume", calls(work, name)
        assert node(work, name)["state"] == "idle" and not standin.rows(summary)[name]["reason"]
    assert summary["counts"]["left_drained"] == 0


def test_a_resume_that_fails_after_a_drain_that_timed_out_is_on_the_row(tmp_path):
    """rt50b M1, s7.py f1: the jobs never end, the wait times out, the resume command exits 1."""
    work = tmp_path / "w"
    bad = "echo 'slurm_update error: Unable to contact slurm controller (connect failure)' >&2; exit 1"
    extra = dict(scheduler(work, jobs="never", resume=bad), dlbox_serial=0, dlbox_drain_timeout=2)
    proc, summary = standin.rollout(work, {"h1": {}}, extra)
    assert proc.returncode != 0 and summary, (proc.stdout + proc.stderr)[-3000:]
    message = standin.rows(summary)["h1"]["failure"]["message"]
    assert message.startswith("h1 was not drained within 2 s"), message
    assert "it is resumed" not in message, message
    assert message.endswith("nothing was changed on it. It was not resumed: The resume command (dlbox_resume_command) "
                            "failed on localhost (dlbox_scheduler_host) for h1: exit 1: slurm_update error: Unable to "
                            "contact slurm controller (connect failure); it stays drained."), message
    assert node(work, "h1")["state"] == "draining" and marker(work, "h1").is_file()


def test_a_run_stopped_during_a_batch_says_so_and_that_its_hosts_may_be_left_drained(tmp_path):
    """rt50b M2, s3.py e3: SIGINT (Ctrl-C) during the drain's wait; the summary written at the batch's start stands."""
    work = tmp_path / "w"
    hosts = {"h1": {}, "h2": {}, "h3": {}, "h4": {}}
    extra = dict(scheduler(work, jobs="60"), dlbox_serial=2, dlbox_drain_timeout=60)
    # the stand-in's inventory and environment (test_fleet_lost_hosts.rollout_command), run in the background
    argv, env = standin.rollout_command(work, hosts, extra)
    with open(work / "run.log", "w", encoding="utf-8") as log:
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=work)  # noqa: S603
        try:
            deadline = time.time() + 120
            while not ({"drain"} <= set(calls(work, "h1")) and {"drain"} <= set(calls(work, "h2"))):
                assert time.time() < deadline and proc.poll() is None, (work / "run.log").read_text()[-3000:]
                time.sleep(0.3)
            time.sleep(1.5)
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=120)
        finally:
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
    summary = json.loads((work / "reports" / "rollout" / "summary.json").read_text())
    rows = standin.rows(summary)
    for name in ("h1", "h2"):
        assert node(work, name)["state"] == "draining" and marker(work, name).is_file()
        reason = rows[name]["reason"]
        assert reason.startswith("interrupted: the run ended during its batch (lost, or the run was stopped: Ctrl-C, "
                                 "an AWX cancel or job timeout)"), reason
        assert ("it may be left drained (dlbox_drain_command is set: the rollout drains it at its batch's start, and "
                "its marker %s/marks/%s/drained stays): run the rollout again with it in --limit" % (work, name)) in reason
        assert "lost during its batch" not in reason
    assert summary["stopped"] == ("the run ended during a batch (h1, h2), before its end: every host of it was lost, "
                                  "or the run was stopped (Ctrl-C, an AWX cancel or job timeout)"), summary["stopped"]
    assert "it may be left drained" in (work / "reports" / "rollout" / "summary.md").read_text()
    assert [rows[h]["status"] for h in ("h3", "h4")] == ["not run", "not run"]


def test_a_hung_check_before_the_drain_is_bounded_as_in_the_scenarios(tmp_path):
    """rt50b L4, s5.py t1: the stand-in had no block timeout (install_stack.yml gives one, dlbox_task_timeout), so a
    check command that hangs before the drain hung the run. Now the host fails there, untouched and not drained; since
    rt50d M3 by timeout(1) at the check's own bound (10 s) with the rollout's words, not Ansible's "Timed out after 3
    second(s)" (dlbox_task_timeout) that named neither the check nor the scheduler host."""
    work = tmp_path / "w"
    extra = dict(scheduler(work), dlbox_drain_check_command="sleep 600", dlbox_task_timeout=3, dlbox_serial=0)
    started = time.time()
    proc, summary = standin.rollout(work, {"h1": {}}, extra)
    assert proc.returncode != 0 and summary and time.time() - started < 240, (proc.stdout + proc.stderr)[-3000:]
    failure = standin.rows(summary)["h1"]["failure"]
    assert failure["task"] == "Fail the host, untouched and not drained, when the drain check cannot say (exit 2 or more)"
    assert failure["message"].startswith("h1 could not be checked: the scheduler did not answer (dlbox_drain_check_command "
                                         "on localhost did not answer within 10 s (exit 124;"), failure
    assert "Timed out after" not in failure["message"] and "dlbox_scheduler_host localhost" in failure["message"], failure
    assert calls(work, "h1") == [] and not (work / "marker-h1").exists() and not marker(work, "h1").exists()


def test_a_check_that_hangs_in_the_wait_is_the_rollouts_not_drained_within_the_timeout(tmp_path):
    """rt50b L4 (its second part): the check answers before the drain ("idle": in service), then hangs in every try of
    the wait (a scheduler that does not answer). Before, the wait's own task timeout fired inside the first try and
    failed the host at once with Ansible's "Timed out after 65 second(s)" (not retried; failed_when does not apply).
    Now each try is bounded (timeout(1): the longer of dlbox_drain_check_interval and 10 s; exit 124 is a try that did
    not say drained), and the wait ends at dlbox_drain_timeout with the rollout's own message, the host untouched and
    resumed (the rollout drained it)."""
    work = tmp_path / "w"
    sched = scheduler(work)
    seen, tries = work / "checked-once", work / "tries"
    sched["dlbox_drain_check_command"] = ("echo try >> %s; if [ -e %s ]; then sleep 600; fi; touch %s; echo idle; exit 1"
                                          % (tries, seen, seen))
    started = time.time()
    proc, summary = standin.rollout(work, {"h1": {}}, dict(sched, dlbox_serial=0, dlbox_drain_timeout=3))
    took = time.time() - started
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2 and summary, out[-3000:]
    assert took < 55, took                                  # one bounded try (10 s), not the task's 65 s timeout
    failure = standin.rows(summary)["h1"]["failure"]
    assert failure["task"] == "Fail the host, untouched, when it was not drained in time", failure
    assert failure["message"] == (
        # rt50e L4: the last try did not answer: "could not be checked", not "was not drained"
        "h1 could not be checked: the scheduler did not answer the last try before dlbox_drain_timeout (3 s) ran out "
        "(dlbox_drain_check_command on localhost did not answer within 10 s at its last "
        "try (each try is bounded: the longer of dlbox_drain_check_interval and 10 s), until dlbox_drain_timeout ran "
        "out); nothing was changed on it, and it is resumed."), failure
    # the check before the drain, then one try of the wait: its 10 s bound is past the 3 s of dlbox_drain_timeout
    assert tries.read_text().split() == ["try", "try"], tries.read_text()
    assert "Timed out after" not in out, out[-3000:]
    assert not (work / "marker-h1").exists()                             # untouched
    assert calls(work, "h1") == ["reason", "drain", "resume"] and node(work, "h1") == {"state": "idle"}
    assert not marker(work, "h1").exists()                               # resumed: the rollout's marker removed


def test_a_try_of_the_wait_that_hangs_once_is_retried(tmp_path):
    """rt50b L4: a try that does not answer within its bound (timeout(1) exits 124) is a try that did not say drained:
    the wait polls again, and a check that answers "drained" at the next try lets the host's changes run."""
    work = tmp_path / "w"
    sched = scheduler(work)
    tries = work / "tries"
    sched["dlbox_drain_check_command"] = (
        "echo try >> {t}; n=$(wc -l < {t}); [ $n -eq 1 ] && {{ echo idle; exit 1; }}; [ $n -eq 2 ] && sleep 600; "
        "exit 0".format(t=tries))
    proc, summary = standin.rollout(work, {"h1": {}}, dict(sched, dlbox_serial=0, dlbox_drain_timeout=60))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and summary, out[-3000:]
    assert tries.read_text().split() == ["try", "try", "try"], tries.read_text()   # before, the hung try, drained
    assert standin.rows(summary)["h1"]["status"] == "changed" and (work / "marker-h1").exists()
    assert calls(work, "h1") == ["reason", "drain", "resume"] and node(work, "h1") == {"state": "idle"}
