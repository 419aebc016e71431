"""The drain check's words before the drain (issue 50, fourth red team rt50d H1): fail closed.

Real ansible-playbook over the local connection against the stand-in scenario (tests/integration/rollout_standin/
rollout.yml) with the FIXTURE scheduler tests/fixtures/fake_scheduler/fake-slurm (NOT Slurm; Slurm's documented node
states, sinfo(1) NODE STATE CODES: FAILING "The node is currently executing a job, but is expected to fail soon and is
unavailable for use per system administrator request"; a Reason for every DOWN, DRAIN, FAIL an admin sets, scontrol(1)).

Before (rt50d H1, runs a1 and h1): any word on exit 1 that was not an in-service state counted as an admin's drain:
a node whose jobs still ran (Slurm's FAILING, a check worded "not drained yet: allocated", another scheduler's word
such as PBS's job-busy, pbsnodes(8B) node states) was changed with no drain and no wait, and its row said "left
drained". Now failing goes with draining (an admin's, skipped at once), and any other word fails the host untouched,
before any drain, naming the word and dlbox_drain_check_command. With dlbox_drain_reason_command, a node out of service
without a reason ("none": Slurm never leaves an admin's DOWN, DRAIN or FAIL without one) is not taken for an admin's.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import test_fleet_drain_owner as owner  # noqa: E402  pylint: disable=wrong-import-position,import-error
import test_fleet_lost_hosts as standin  # noqa: E402  pylint: disable=wrong-import-position,import-error


def test_unknown_words_fail_untouched_and_failing_is_skipped(tmp_path):
    """One batch (budget 100): f1 an admin's FAIL on a busy node, a1 a check worded otherwise, p1 and p2 PBS's
    job-busy (with and without the reason command), d1 DOWN without a reason, h1 an idle node (drained, changed)."""
    work = tmp_path / "w"
    sched = owner.scheduler(work)
    check, reason = sched.pop("dlbox_drain_check_command"), sched.pop("dlbox_drain_reason_command")
    owner.seed(work, "f1", state="failing", job_ends=None, reason="Xid 79 let jobs finish")
    owner.seed(work, "d1", state="down", job_ends=None)
    hosts = {name: {"dlbox_drain_check_command": check, "dlbox_drain_reason_command": reason}
             for name in ("f1", "a1", "p1", "p2", "d1", "h1")}
    hosts["a1"]["dlbox_drain_check_command"] = "echo 'not drained yet: allocated'; exit 1"
    hosts["p1"]["dlbox_drain_check_command"] = "echo job-busy; exit 1"
    hosts["p2"] = {"dlbox_drain_check_command": "echo job-busy; exit 1", "dlbox_drain_reason_command": ""}
    proc, summary = standin.rollout(work, hosts, dict(sched, dlbox_serial=0, dlbox_max_fail_percentage=100))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2 and summary, out[-3000:]
    rows = standin.rows(summary)
    # f1: the admin's, its jobs still running: skipped at once, as the admin left it, counted for nothing
    assert owner.calls(work, "f1") == ["drained", "reason"], owner.calls(work, "f1")
    assert owner.node(work, "f1") == {"state": "failing", "job_ends": None, "reason": "Xid 79 let jobs finish"}
    assert rows["f1"]["status"] == "not run" and rows["f1"]["failure"] is None, rows["f1"]
    assert rows["f1"]["reason"].startswith(
        "skipped: an admin is failing it (failing already, its jobs still running, the scheduler's reason \"Xid 79 let "
        "jobs finish\" (not the rollout's \"dlbox rollout\")): it is left as it was"), rows["f1"]
    # a1, p1, p2: a word the rollout does not know: failed untouched, not drained, the word and the variable named
    for name, word in (("a1", "not drained yet: allocated"), ("p1", "job-busy"), ("p2", "job-busy")):
        row = rows[name]
        assert row["status"] == "failed", row
        message = row["failure"]["message"]
        assert message.startswith(
            "%s was not drained, and nothing was changed on it: the drain check printed \"%s\", which is no node state "
            "the rollout knows (dlbox_drain_check_command on localhost, dlbox_scheduler_host, exited 1: \"%s\"). The "
            "check must exit 0 when the node is drained" % (name, word, word)), message
        assert "drain" not in owner.calls(work, name) and "resume" not in owner.calls(work, name), owner.calls(work, name)
    # d1: out of service with no reason: not the admin's, not the rollout's: failed untouched, as it was
    assert owner.calls(work, "d1") == ["drained", "reason"], owner.calls(work, "d1")
    assert owner.node(work, "d1") == {"state": "down", "job_ends": None}
    message = rows["d1"]["failure"]["message"]
    assert message.startswith(
        "d1 was not drained, and nothing was changed on it: the scheduler says it is out of service (out of service "
        "already (state down), with no reason on the scheduler) but gives no reason for it (dlbox_drain_reason_command "
        "printed none)"), message
    for name in ("f1", "a1", "p1", "p2", "d1"):
        assert not (work / ("marker-" + name)).exists() and not owner.marker(work, name).exists(), name
    # h1, in service: drained, changed, resumed, as before
    assert rows["h1"]["status"] == "changed" and owner.calls(work, "h1")[-1] == "resume", owner.calls(work, "h1")
    assert summary["counts"]["failed"] == 4 and summary["counts"]["left_drained"] == 0, summary["counts"]
    assert "left drained:" not in (work / "reports" / "rollout" / "summary.md").read_text()


def test_compound_states_and_a_quiet_check_do_not_hide_an_admins_drain(tmp_path):
    """rt50e M1, runs k1 and q1. Slurm's compound form (`scontrol show node` State=, `sinfo -O StateComplete`: base
    state and flags joined by "+", src/common/slurm_protocol_defs.c node_state_string_complete; the FIXTURE prints it
    with FAKE_SLURM_COMPLETE): k1/k2 MIXED+DRAIN (upper, lower) an admin's drain under way, skipped at once; d1
    IDLE+DRAIN an admin's drained node, left alone (not drained again, not resumed); h1 IDLE, in service: drained, waited
    for (MIXED+DRAIN while its job runs), resumed. q1: a quiet check (prints nothing on exit 1) on an admin's draining
    node: its Reason (not the rollout's) makes it the admin's, skipped at once; q2 the same check on an idle node (Reason
    none): drained and resumed. Before: k1, k2 and q1 were drained again over the admin's Reason and resumed."""
    work = tmp_path / "w"
    sched = owner.scheduler(work, jobs="2")
    check = sched.pop("dlbox_drain_check_command")
    ends = time.time() + 600
    for name in ("k1", "k2", "q1"):
        owner.seed(work, name, state="draining", job_ends=ends, reason="Xid 79 GPU fallen off the bus")
    owner.seed(work, "d1", state="drained", job_ends=None, reason="RMA 4711")
    hosts = {"k1": {"dlbox_drain_check_command": "FAKE_SLURM_COMPLETE=upper " + check},
             "k2": {"dlbox_drain_check_command": "FAKE_SLURM_COMPLETE=lower " + check},
             # a check that prints the state, drained or not (`scontrol show node` State=), exit 1 but on "drained"
             "d1": {"dlbox_drain_check_command": "FAKE_SLURM_COMPLETE=upper " + check.replace(" drained ", " state ")
                                                 + "; exit 1"},
             "h1": {"dlbox_drain_check_command": "FAKE_SLURM_COMPLETE=upper " + check},
             "q1": {"dlbox_drain_check_command": check + " >/dev/null"},
             "q2": {"dlbox_drain_check_command": check + " >/dev/null"}}
    proc, summary = standin.rollout(work, hosts, dict(sched, dlbox_serial=0, dlbox_max_fail_percentage=0))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and summary, out[-3000:]
    rows = standin.rows(summary)
    for name, said in (("k1", 'draining already, its jobs still running (the check printed "mixed+drain")'),
                       ("k2", 'draining already, its jobs still running (the check printed "mixed+drain")'),
                       ("q1", "the check printed nothing but the node has a reason on the scheduler, its jobs may "
                              "still be running")):
        assert owner.calls(work, name) == ["drained", "reason"], (name, owner.calls(work, name))
        assert owner.node(work, name) == {"state": "draining", "job_ends": ends,
                                          "reason": "Xid 79 GPU fallen off the bus"}, name
        assert rows[name]["status"] == "not run" and rows[name]["failure"] is None, rows[name]
        assert rows[name]["reason"].startswith(
            "skipped: an admin is draining it (%s, the scheduler's reason \"Xid 79 GPU fallen off the bus\" (not the "
            "rollout's \"dlbox rollout\")): it is left as it was" % said), rows[name]
        assert not (work / ("marker-" + name)).exists() and not owner.marker(work, name).exists(), name
    # d1: the admin's drained node: its Reason kept, no drain, no resume
    assert "drain" not in owner.calls(work, "d1") and "resume" not in owner.calls(work, "d1"), owner.calls(work, "d1")
    assert owner.node(work, "d1") == {"state": "drained", "job_ends": None, "reason": "RMA 4711"}
    assert owner.calls(work, "d1") == ["state", "reason"], owner.calls(work, "d1")
    assert "out of service already (state drained)" in json.dumps(rows["d1"]), rows["d1"]
    # h1, q2: in service: drained, waited for, changed, resumed
    for name in ("h1", "q2"):
        assert rows[name]["status"] == "changed", rows[name]
        assert "drain" in owner.calls(work, name) and owner.calls(work, name)[-1] == "resume", owner.calls(work, name)
        assert owner.node(work, name) == {"state": "idle"}, name
    assert summary["stopped"] is None and summary["counts"]["failed"] == 0, summary["counts"]


def test_reboot_and_blocked_are_slurm_words_named_right(tmp_path):
    """rt50e L3, rb: sinfo's %T prints REBOOT, REBOOT*, REBOOT^ (src/common/slurm_protocol_defs.c node_state_string),
    never "reboot_requested" alone: reboot^ is Slurm's reboot under way (rt50f H2: skipped at once, untouched, counted
    for nothing; before, the host was changed with no drain while slurmctld rebooted it). blocked (sinfo(1), Slurm
    24.05+) is a Slurm state the rollout does not handle: it fails untouched, and the message says so rather than "no
    node state the rollout knows"."""
    work = tmp_path / "w"
    sched = owner.scheduler(work)
    sched.pop("dlbox_drain_check_command"), sched.pop("dlbox_drain_reason_command")
    hosts = {"rb": {"dlbox_drain_check_command": "echo 'REBOOT^'; exit 1", "dlbox_drain_reason_command": ""},
             "bl": {"dlbox_drain_check_command": "echo blocked; exit 1", "dlbox_drain_reason_command": ""}}
    proc, summary = standin.rollout(work, hosts, dict(sched, dlbox_serial=0, dlbox_max_fail_percentage=100))
    out = proc.stdout + proc.stderr
    assert summary, out[-3000:]
    rows = standin.rows(summary)
    assert rows["rb"]["status"] == "not run" and rows["rb"]["failure"] is None, rows["rb"]
    assert rows["rb"]["reason"].startswith(
        "skipped: Slurm reboots it or will (out of service already (state reboot^), without the rollout's marker "), rows["rb"]
    assert summary["counts"]["failed"] == 1, summary["counts"]     # bl only: rb counts for nothing
    assert owner.calls(work, "rb") == [] and not owner.marker(work, "rb").exists()
    message = rows["bl"]["failure"]["message"]
    assert message.startswith("bl was not drained, and nothing was changed on it: the drain check printed \"blocked\", a "
                              "Slurm state the rollout does not handle"), message
    assert owner.calls(work, "bl") == [] and not owner.marker(work, "bl").exists()


def test_a_future_node_is_skipped_and_a_drain_without_reason_gets_the_right_advice(tmp_path):
    """rt50e L2, z1: slurm.conf State=FUTURE (sinfo(1): "The node is currently not fully configured, but expected to be
    available at some point in the future"; scontrol(1): State=RESUME does not apply) has no Reason and no admin behind
    it: skipped at once, left alone, counted for nothing. A DRAIN without Reason (slurm.conf State=DRAIN) still fails
    untouched, with advice that names that case and no "reason \"\"" contradiction."""
    work = tmp_path / "w"
    sched = owner.scheduler(work)
    sched.pop("dlbox_drain_check_command")
    owner.seed(work, "d0", state="drained", job_ends=None)
    hosts = {"fu": {"dlbox_drain_check_command": "echo future; exit 1"},
             "d0": {"dlbox_drain_check_command": sched["dlbox_drain_command"].split(" drain ")[0] + " drained d0"}}
    proc, summary = standin.rollout(work, hosts, dict(sched, dlbox_serial=0, dlbox_max_fail_percentage=100))
    assert summary, (proc.stdout + proc.stderr)[-3000:]
    rows = standin.rows(summary)
    assert rows["fu"]["status"] == "not run" and rows["fu"]["failure"] is None, rows["fu"]
    assert rows["fu"]["reason"].startswith("skipped: the scheduler has it in state FUTURE, not in service yet"), rows["fu"]
    assert owner.calls(work, "fu") == ["reason"] and not owner.marker(work, "fu").exists()
    message = rows["d0"]["failure"]["message"]
    assert "with no reason on the scheduler" in message and "reason \"\"" not in message, message
    assert "slurm.conf itself sets State=DRAIN" in message, message
    assert "drain" not in owner.calls(work, "d0") and "resume" not in owner.calls(work, "d0"), owner.calls(work, "d0")
