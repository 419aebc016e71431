"""The drain check bounded before the drain and in the wait (issue 50, fourth red team rt50d M2, M3, L1).

Real ansible-playbook over the local connection against the stand-in scenario (tests/integration/rollout_standin/
rollout.yml) with the FIXTURE scheduler tests/fixtures/fake_scheduler/fake-slurm (NOT Slurm) for the drain, the
reason and the resume; the check commands are shell lines that behave as a scheduler that does not answer does.

Before: the check before the drain had no timeout(1) (rt50d M3, run g1: a hang ended with Ansible's "Timed out after N
second(s)" at dlbox_task_timeout, the scheduler named nowhere); in the wait only exit 124 was a try that did not
answer (M2, b1: a check that ignores the TERM, as a sinfo blocked on an NFS-mounted slurm.conf, is killed: -9, and
ended the wait at once as "it may not know the node"; c1: timeout(1) not on the scheduler host's PATH gave "exited 2"
without the module's "No such file or directory"); the wait counted tries, not time (L1, j1: a check that takes 8 s
made a 20 s timeout last 2 minutes).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import test_fleet_drain_owner as owner  # noqa: E402  pylint: disable=wrong-import-position,import-error
import test_fleet_lost_hosts as standin  # noqa: E402  pylint: disable=wrong-import-position,import-error

# a check that ignores timeout(1)'s TERM: only the KILL that follows (-k 5) ends it
DEAF = "trap '' TERM; sleep 600"


def rollout_with_path(work, hosts, extra_vars, path):
    """test_fleet_lost_hosts.rollout with its own PATH (the commands run on localhost: the scheduler host's PATH)."""
    return standin.rollout(work, hosts, extra_vars, path=path)


def path_without_timeout(work):
    """A PATH of /usr/bin and /bin less timeout(1), as on a scheduler host without coreutils' timeout (rt50d c1)."""
    farm = work / "bin-no-timeout"
    farm.mkdir(parents=True)
    for folder in ("/usr/bin", "/bin"):
        for entry in sorted(os.listdir(folder)):
            if entry != "timeout" and not (farm / entry).exists():
                (farm / entry).symlink_to(os.path.join(folder, entry))
    return farm


def test_a_check_that_hangs_before_the_drain_fails_the_host_untouched_naming_the_scheduler(tmp_path):
    """rt50d M3, g1: the check before the drain hangs, and (a second host) ignores the TERM too: each is stopped by
    timeout(1) at its bound (10 s), not by Ansible's task timeout (dlbox_task_timeout 6 here); the host fails untouched,
    not drained, and the message names the check and dlbox_scheduler_host."""
    work = tmp_path / "w"
    sched = owner.scheduler(work)
    hosts = {"h1": {"dlbox_drain_check_command": "sleep 600"}, "h2": {"dlbox_drain_check_command": DEAF}}
    sched.pop("dlbox_drain_check_command")
    started = time.time()
    proc, summary = standin.rollout(work, hosts, dict(sched, dlbox_serial=0, dlbox_task_timeout=6,
                                                      dlbox_max_fail_percentage=100))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2 and summary and time.time() - started < 120, out[-3000:]
    assert "Timed out after" not in out, out[-3000:]
    rows = standin.rows(summary)
    # h2: timeout(1) sends the KILL to its process group, itself included: the module sees -9 (rt50d b1)
    for name, rc in (("h1", "124"), ("h2", "-9")):
        failure = rows[name]["failure"]
        assert failure["task"] == "Fail the host, untouched and not drained, when the drain check cannot say (exit 2 or more)"
        assert failure["message"] == (
            "%s could not be checked: the scheduler did not answer (dlbox_drain_check_command on localhost did not answer "
            "within 10 s (exit %s; each try is bounded by timeout(1): the longer of dlbox_drain_check_interval and 10 s));"
            " nothing was changed on it, and it was not drained (dlbox_scheduler_host localhost)." % (name, rc)), failure
        assert owner.calls(work, name) == [] and not (work / ("marker-" + name)).exists()
        assert not owner.marker(work, name).exists()


def test_a_try_of_the_wait_killed_for_ignoring_the_term_is_retried(tmp_path):
    """rt50d M2, b1: the second try ignores timeout(1)'s TERM and is killed (-9: timeout(1) kills its process group,
    itself too); before, the wait ended at once and failed the host ("it may not know the node"); now it is a try that
    did not answer, and the next one says drained."""
    work = tmp_path / "w"
    sched = owner.scheduler(work)
    tries = work / "tries"
    sched["dlbox_drain_check_command"] = (
        "echo try >> {t}; n=$(wc -l < {t}); [ $n -eq 1 ] && {{ echo idle; exit 1; }}; [ $n -eq 2 ] && {{ {deaf}; }}; "
        "exit 0".format(t=tries, deaf=DEAF))
    proc, summary = standin.rollout(work, {"h1": {}}, dict(sched, dlbox_serial=0, dlbox_drain_timeout=60))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and summary, out[-3000:]
    assert tries.read_text().split() == ["try", "try", "try"], tries.read_text()
    assert standin.rows(summary)["h1"]["status"] == "changed" and (work / "marker-h1").exists()
    assert owner.calls(work, "h1") == ["reason", "drain", "resume"] and owner.node(work, "h1") == {"state": "idle"}


def test_timeout_missing_on_the_scheduler_host_is_named_with_the_modules_message(tmp_path):
    """rt50d M2, c1: timeout(1) is not on the scheduler host's PATH. Before the drain (M3 wraps it too) the host fails
    untouched with the module's own words and the errno named ("No such file or directory"), not a bare "exited 2"."""
    work = tmp_path / "w"
    farm = path_without_timeout(work)
    proc, summary = rollout_with_path(work, {"h1": {}}, dict(owner.scheduler(work), dlbox_serial=0),
                                      "%s:%s" % (standin.BIN, farm))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2 and summary, out[-3000:]
    message = standin.rows(summary)["h1"]["failure"]["message"]
    # ansible-core 2.19's words where the command cannot be started (module_utils/basic.py run_command): the errno as rc
    assert message == ("h1 could not be checked: timeout(1), which runs the check, could not be started (dlbox_drain_check_command on "
                       "localhost could not be started: Error executing command. (errno 2: No such file or directory)); "
                       "nothing was changed on it, and it was not drained (dlbox_scheduler_host localhost)."), message
    assert owner.calls(work, "h1") == [] and not (work / "marker-h1").exists() and not owner.marker(work, "h1").exists()


def test_timeout_gone_during_the_wait_quotes_the_modules_message(tmp_path):
    """rt50d M2, c1, in the wait: timeout(1) runs the check before the drain, then is gone (a wrapper that removes itself
    from the scheduler host's PATH). Before, "exited 2" with no reason; now the module's message is quoted and the
    rollout says timeout(1) could not run the check; the resume, bounded by timeout(1) too (rt50e L1), cannot run
    either: the host stays drained, and its row says so."""
    work = tmp_path / "w"
    farm = path_without_timeout(work)
    gone = work / "bin-once"
    gone.mkdir()
    # the check before the drain, the reason and the drain command run under timeout(1) (rt50e L1): gone at the third
    (gone / "timeout").write_text('#!/bin/sh\necho x >> "$0.n"; [ "$(wc -l < "$0.n")" -ge 3 ] && rm -f "$0"\n'
                                  'exec /usr/bin/timeout "$@"\n')
    (gone / "timeout").chmod(0o755)
    sched = dict(owner.scheduler(work), dlbox_drain_check_command="echo idle; exit 1")
    proc, summary = rollout_with_path(work, {"h1": {}}, dict(sched, dlbox_serial=0, dlbox_drain_timeout=30),
                                      "%s:%s:%s" % (standin.BIN, gone, farm))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2 and summary, out[-3000:]
    message = standin.rows(summary)["h1"]["failure"]["message"]
    # the resume runs under timeout(1) too (rt50e L1): with timeout(1) gone it cannot run, and the host stays drained
    assert message == ("h1 could not be checked: timeout(1), which runs the check, could not be started (dlbox_drain_check_command on "
                       "localhost could not be started: Error executing command. (errno 2: No such file or directory)); "
                       "nothing was changed on it. It was not resumed: The resume command (dlbox_resume_command) failed "
                       "on localhost (dlbox_scheduler_host) for h1: exit 2: Error executing command.; it stays drained."), message
    assert owner.calls(work, "h1") == ["reason", "drain"] and owner.marker(work, "h1").is_file()


def test_the_wait_ends_at_dlbox_drain_timeout_by_the_clock_with_a_slow_check(tmp_path):
    """rt50d L1, j1: each try takes 4 s and the node never drains; dlbox_drain_timeout 6, interval 1. Counted in tries
    (7 tries of 5 s) the wait took about 35 s and said "within 6 s"; now it ends at the first try past the deadline."""
    work = tmp_path / "w"
    sched = owner.scheduler(work)
    tries = work / "tries"
    sched["dlbox_drain_check_command"] = "echo try >> %s; sleep 4; echo idle; exit 1" % tries
    started = time.time()
    proc, summary = standin.rollout(work, {"h1": {}}, dict(sched, dlbox_serial=0, dlbox_drain_timeout=6))
    took = time.time() - started
    assert proc.returncode == 2 and summary, (proc.stdout + proc.stderr)[-3000:]
    # the check before the drain, then the tries of the wait until 6 s have passed: 2 or 3 of them
    assert len(tries.read_text().split()) <= 4, tries.read_text()
    assert took < 60, took
    message = standin.rows(summary)["h1"]["failure"]["message"]
    assert message == ("h1 was not drained within 6 s (dlbox_drain_check_command on localhost exited 1: idle); nothing "
                       "was changed on it, and it is resumed."), message


def test_the_reason_drain_and_resume_commands_are_bounded_and_named(tmp_path):
    """rt50e L1, r1: the reason, drain and resume commands are bounded by timeout(1) as the check is (10 s here), not
    by Ansible's task timeout (dlbox_task_timeout 6: before, "Timed out after 6 second(s)", naming neither the command
    nor the scheduler host). r1: the reason command hangs: failed untouched, not drained. d1: the drain command drains,
    then hangs: failed before its changes, resumed. s1: the resume hangs (and ignores the TERM): left drained, its row
    naming the command."""
    work = tmp_path / "w"
    sched = owner.scheduler(work)
    # host variables, not extra vars (which would win over them)
    own = {key: sched.pop(key) for key in ("dlbox_drain_reason_command", "dlbox_drain_command", "dlbox_resume_command")}
    hosts = {"r1": dict(own, dlbox_drain_reason_command=own["dlbox_drain_reason_command"] + "; sleep 600"),
             "d1": dict(own, dlbox_drain_command=own["dlbox_drain_command"] + "; sleep 600"),
             "s1": dict(own, dlbox_resume_command=DEAF)}
    started = time.time()
    proc, summary = standin.rollout(work, hosts, dict(sched, dlbox_serial=0, dlbox_task_timeout=6,
                                                      dlbox_max_fail_percentage=100))
    out = proc.stdout + proc.stderr
    assert summary and time.time() - started < 150, out[-3000:]
    assert "Timed out after" not in out, out[-3000:]
    rows = standin.rows(summary)
    bound = ("did not answer within 10 s (exit %s; stopped by timeout(1): each command on the scheduler host is bounded "
             "by the longer of dlbox_drain_check_interval and 10 s)")
    assert rows["r1"]["failure"], rows
    message = rows["r1"]["failure"]["message"]
    assert message.startswith("The drain reason command (dlbox_drain_reason_command) failed on localhost "
                              "(dlbox_scheduler_host) for r1: " + bound % "124"), message
    assert owner.calls(work, "r1") == ["drained", "reason"] and not owner.marker(work, "r1").exists()
    message = rows["d1"]["failure"]["message"]
    assert message.startswith("The drain command (dlbox_drain_command) failed on localhost (dlbox_scheduler_host) for "
                              "d1: " + bound % "124"), message
    assert owner.calls(work, "d1")[-1] == "resume" and owner.node(work, "d1") == {"state": "idle"}
    message = rows["s1"]["failure"]["message"]
    assert ("The resume command (dlbox_resume_command) failed on localhost (dlbox_scheduler_host) for s1: "
            + bound % "-9" + "; it stays drained.") in message, message
    assert owner.state(work, "s1") == "drained" and owner.marker(work, "s1").is_file()


def test_a_wait_whose_last_try_did_not_answer_says_it_could_not_be_checked(tmp_path):
    """rt50e L4, b1: after the drain no try answers (each stopped by timeout(1) at 10 s); dlbox_drain_timeout 5 runs out
    at the first. Before: "h1 was not drained within 5 s", as if the scheduler had said "not yet"."""
    work = tmp_path / "w"
    sched = owner.scheduler(work)
    tries = work / "tries"
    sched["dlbox_drain_check_command"] = (
        "echo try >> {t}; [ $(wc -l < {t}) -eq 1 ] && {{ echo idle; exit 1; }}; sleep 600".format(t=tries))
    proc, summary = standin.rollout(work, {"h1": {}}, dict(sched, dlbox_serial=0, dlbox_drain_timeout=5))
    assert proc.returncode == 2 and summary, (proc.stdout + proc.stderr)[-3000:]
    message = standin.rows(summary)["h1"]["failure"]["message"]
    assert message.startswith(
        "h1 could not be checked: the scheduler did not answer the last try before dlbox_drain_timeout (5 s) ran out "
        "(dlbox_drain_check_command on localhost did not answer within 10 s at its last try"), message
    assert message.endswith("nothing was changed on it, and it is resumed."), message
    assert owner.calls(work, "h1") == ["reason", "drain", "resume"] and owner.node(work, "h1") == {"state": "idle"}
