"""Whose drain a node's is, before the rollout drains it (plugins/plugin_utils/fleet_drain.py, issue 50): pure rules on
the words Slurm really prints, each with its source. The same rules run end to end through real ansible-playbook with
the FIXTURE scheduler in test_fleet_drain_words.py, test_fleet_drain_owner.py and test_fleet_drain.py.

Sources of the words:
- sinfo(1), Slurm 24.05 (manpages.ubuntu.com, oracular, slurm-client 24.05.2), NODE STATE CODES: the %T words
  (allocated, completing, down, drained, draining, fail, failing, future, idle, inval, maint, mixed, perfctrs, planned,
  power_down, powered_down, powering_down, powering_up, reboot_issued, reboot_requested, reserved, blocked, cloud,
  unknown) and the flags appended to them (* not responding, ~ powered off, # powering up, ! pending power down,
  % powering down, $ maintenance reservation, @ pending reboot, ^ reboot issued, - planned); its short %t codes
  (drain, drng, alloc, mix, comp, ...), which the rollout does not read (its lab example uses %T).
- rackslab/Slurm-web#154: "Node state "IDLE+DRAIN" is not properly recognized ... should appear as drained"
  (scontrol show node's compound State=, node_state_string_complete).
- ubccr/slurm-exporter#11: slurmrestd gives a drained node as state "idle" with state_flags ["DRAIN"].
- awslabs/awsome-distributed-ai#185: a node "stuck in drain" whose sinfo -R reason is "Kill task failed" (Slurm's own
  drain, set by slurmctld: an admin's for the rollout, not its own).
- devpeace.com "What does the state drain mean" (sinfo's default output: STATE "drain", the %t code).
"""

from __future__ import annotations

import pytest

from ansible_collections.dlbox.stack.plugins.filter import fleet
from ansible_collections.dlbox.stack.plugins.plugin_utils import fleet_drain as fd

TAG = "dlbox rollout"


def check(word, rc=1):
    return {"rc": rc, "stdout": word + "\n"}


@pytest.mark.parametrize("printed, state", [
    # sinfo's %T words stay as printed
    ("idle", "idle"), ("mixed", "mixed"), ("allocated", "allocated"), ("drained*", "drained*"), ("allocated+", "allocated+"),
    # the compound form read as node_state_string reads the same state (slurm_protocol_defs.c)
    ("IDLE+DRAIN", "drained"),                      # Slurm-web#154, slurm-exporter#11 (idle + DRAIN flag)
    ("MIXED+DRAIN", "draining"), ("ALLOCATED+DRAIN", "draining"), ("IDLE+COMPLETING+DRAIN", "draining"),
    ("IDLE+DRAIN+NOT_RESPONDING", "drained*"), ("MIXED+DRAIN+POWERING_DOWN", "draining%"),
    ("ALLOCATED+FAIL", "failing"), ("IDLE+FAIL", "fail"), ("IDLE+FAIL+NOT_RESPONDING", "fail*"),
    ("IDLE+CLOUD", "idle"), ("MIXED+NOT_RESPONDING", "mixed*"), ("IDLE+RESERVED+PLANNED", "reserved"),
    ("IDLE+PLANNED", "planned"), ("MIXED+PLANNED", "mixed-"), ("ALLOCATED+COMPLETING", "allocated+"),
    ("IDLE+COMPLETING", "completing"), ("IDLE+PERFCTRS", "perfctrs"),
    ("IDLE+MAINTENANCE", "maint"), ("IDLE+MAINTENANCE+NOT_RESPONDING", "maint*"), ("MIXED+MAINTENANCE", "mixed$"),
    ("IDLE+MAINTENANCE+POWERED_DOWN", "maint"),
    ("IDLE+REBOOT_REQUESTED", "reboot"), ("IDLE+REBOOT_ISSUED", "reboot^"), ("MIXED+REBOOT_REQUESTED", "mixed@"),
    ("IDLE+REBOOT_REQUESTED+NOT_RESPONDING", "reboot*"),
    ("IDLE+POWERED_DOWN", "idle~"), ("IDLE+CLOUD+POWERED_DOWN", "idle~"), ("IDLE+POWERING_UP", "idle#"),
    ("IDLE+POWER_DOWN", "idle!"), ("UNKNOWN+CLOUD", "cloud"), ("UNKNOWN+POWERING_UP", "powering_up"),
    ("IDLE+INVALID_REG", "inval"), ("MIXED+DRAIN+INVALID_REG", "inval"),   # rt50f H1: INVAL before all else
    ("FUTURE", "future"), ("FUTURE+DYNAMIC_FUTURE", "future"), ("UNKNOWN+NOT_RESPONDING", "unknown*"),
    ("IDLE+RESUME", "idle"), ("UNKNOWN+RESUME", "resume"),
    # the two safer readings: DOWN before DRAIN (sinfo says drained), FAIL on a MIXED node failing (sinfo says fail)
    ("DOWN+DRAIN+NOT_RESPONDING", "down*"), ("DOWN*+DRAIN", "down"), ("DOWN+NOT_RESPONDING", "down*"),
    ("MIXED+FAIL", "failing"),
    # no compound form Slurm has: as printed (refused)
    ("IDLE+BOGUS", "idle+bogus"), ("WEIRD+DRAIN", "weird+drain"), ("MIXED+MAINT", "mixed+maint"),
])
def test_slurm_state_reads_the_compound_form_as_sinfo_words_it(printed, state):
    assert fd.slurm_state(printed) == state


@pytest.mark.parametrize("word, kind", [
    ("idle", "in service"), ("idle~", "in service"), ("mix", "in service"), ("alloc", "in service"),
    ("completing", "in service"), ("planned", "in service"), ("reserved", "in service"), ("allocated+", "in service"),
    ("draining", "draining"), ("failing", "draining"), ("draining@", "draining"),
    ("down*", "out of service"), ("drained", "out of service"), ("drained~", "out of service"), ("fail", "out of service"),
    ("maint", "out of service"), ("inval", "out of service"), ("future", "out of service"),
    ("powered_down", "out of service"), ("powering_up", "out of service"), ("power_down", "out of service"),
    ("reboot^", "out of service"), ("reboot_issued", "out of service"), ("reboot_requested@", "out of service"),
    ("drain", "unknown"), ("drng", "unknown"),     # sinfo's %t codes: not read (the lab example prints %T)
    ("blocked", "unknown"), ("cloud", "unknown"), ("unknown", "unknown"), ("job-busy", "unknown"),
    ("idled", "unknown"), ("drainedx", "unknown"), ("", "none"),
])
def test_kind_of_each_word(word, kind):
    assert fd.kind(word) == kind


def test_an_idle_node_is_drained_and_waited_for():
    got = fd.found(check("idle"), reason="none", tag=TAG)
    assert (got["action"], got["found_out"], got["admin_drained"], got["admin_why"]) == ("drain", False, False, "")
    # without the reason command, the same
    assert fd.found(check("mixed"))["action"] == "drain"


def test_slurms_own_drain_is_an_admins_and_left_as_it_was():
    """awsome-distributed-ai#185: slurmctld drained the node itself, Reason "Kill task failed"."""
    got = fd.found(check("drained"), reason="Kill task failed", tag=TAG)
    assert got["action"] == "leave" and got["admin_drained"] and not got["ours"], got
    assert got["admin_why"] == ("out of service already (state drained), the scheduler's reason \"Kill task failed\" "
                                "(not the rollout's \"dlbox rollout\")")
    # the check's exit 0 (drained) says the same
    got = fd.found({"rc": 0, "stdout": ""}, reason="Kill task failed", tag=TAG)
    assert got["action"] == "leave" and got["admin_why"].startswith("drained already, the scheduler's reason")


def test_the_compound_idle_drain_with_the_rollouts_reason_is_its_own():
    """Slurm-web#154's IDLE+DRAIN, drained by an earlier run of the rollout (its reason kept): waited for, resumed."""
    got = fd.found(check("IDLE+DRAIN"), reason="dlbox rollout (server)", tag=TAG)
    assert (got["state"], got["action"], got["ours"], got["admin_drained"]) == ("drained", "wait", True, False)
    # the same with someone else's reason: the admin's
    got = fd.found(check("IDLE+DRAIN"), reason="RMA gpu 3", tag=TAG)
    assert got["action"] == "leave" and got["admin_state"] == "drained", got


def test_a_busy_node_with_the_drain_flag_is_skipped_as_an_admins_drain_under_way():
    got = fd.found(check("MIXED+DRAIN"), reason="memory errors", tag=TAG)
    assert got["action"] == "skip" and got["admin_state"] == "draining", got
    assert got["skipped"] == (
        "an admin is draining it (draining already, its jobs still running (the check printed \"mixed+drain\"), the "
        "scheduler's reason \"memory errors\" (not the rollout's \"dlbox rollout\")): it is left as it was (not drained "
        "again, not waited for, not changed, not resumed); run the rollout again for it once its jobs are done")
    got = fd.found(check("failing"), reason="Xid 79 let jobs finish", tag=TAG)
    assert got["action"] == "skip" and got["skipped"].startswith("an admin is failing it (failing already"), got


def test_a_quiet_check_does_not_hide_an_admins_reason():
    """rt50e M1 q1: `sinfo ... | grep -q '^drained'` prints nothing on exit 1; the Reason says an admin is draining it."""
    got = fd.found({"rc": 1, "stdout": ""}, reason="disk replacement", tag=TAG)
    assert got["action"] == "skip" and got["admin_why"].startswith("the check printed nothing but the node has a reason")
    # without a reason: in service, drained by the rollout
    assert fd.found({"rc": 1, "stdout": ""}, reason="none", tag=TAG)["action"] == "drain"
    # with the rollout's own reason (its drain of an earlier run, jobs still running): not an admin's, drained (again:
    # scontrol's drain of a draining node changes nothing) and waited for
    got = fd.found({"rc": 1, "stdout": ""}, reason="dlbox rollout (server)", tag=TAG)
    assert (got["action"], got["admin_drained"]) == ("drain", False), got
    assert fd.found(check("idle"), reason="dlbox rollout (server)", tag=TAG)["action"] == "drain"


def test_without_the_reason_command_the_marker_decides():
    got = fd.found(check("drained"), marker=True, state_dir="/srv/dlbox")
    assert got["action"] == "wait" and got["ours"], got
    got = fd.found(check("drained"), marker=False, state_dir="/srv/dlbox")
    assert got["action"] == "leave"
    assert got["admin_why"] == "out of service already (state drained), without the rollout's marker /srv/dlbox/drained"
    # a node an admin set down after the rollout drained it is the admin's, marker or not
    assert fd.found(check("down"), marker=True)["action"] == "leave"


@pytest.mark.parametrize("word, handled", [("job-busy", False), ("not drained yet: allocated", False),
                                           ("drain", False), ("blocked", True), ("cloud*", True), ("cloud+", True),
                                           ("blocked+", True)])
def test_a_word_the_rollout_does_not_know_is_refused(word, handled):
    got = fd.found(check(word), reason="none", tag=TAG)
    assert got["action"] == "refuse" and got["unknown_word"] == word, got
    what = got["refusal"]["what"]
    assert what.startswith('the drain check printed "%s"' % word), what
    assert ("a Slurm state the rollout does not handle" in what) is handled, what
    assert "sinfo -h -n NODE -o %T" in got["refusal"]["fix"]


@pytest.mark.parametrize("word, reason, why", [
    # rt50f H1: INVALID_REG (node_mgr.c: slurmd registered with fewer GPUs than configured) is printed "inval" before
    # anything else, jobs or not; Slurm drains the node, its jobs still running
    ("inval", "gres/gpu count reported lower than configured (7 < 8)", "Slurm has its registration invalid (out of"
     " service already (state inval), the scheduler's reason \"gres/gpu count reported lower than configured (7 < 8)\""),
    # rt50f H2/M3: Slurm's reboots (scontrol reboot; ASAP drains with Reason "Reboot ASAP"), under way or pending
    ("reboot^", "Reboot ASAP", "Slurm reboots it or will (out of service already (state reboot^), the scheduler's"
     " reason \"Reboot ASAP\""),
    ("reboot_requested", "none", "Slurm reboots it or will (out of service already (state reboot_requested), with no"
     " reason on the scheduler"),
    ("mixed@", "none", "Slurm reboots it or will (state mixed@;"),
    ("IDLE+REBOOT_REQUESTED", None, "Slurm reboots it or will (out of service already (state reboot), without the"
     " rollout's marker"),
    ("MIXED+DRAIN+INVALID_REG", "Kill task failed", "Slurm has its registration invalid (out of service already (state"
     " inval), the scheduler's reason \"Kill task failed\""),
])
def test_a_node_slurm_reboots_or_holds_is_skipped_untouched(word, reason, why):
    got = fd.found(check(word), reason=reason, tag=TAG)
    assert got["action"] == "skip" and got["refusal"] == "", got
    assert got["skipped"].startswith(why), got["skipped"]
    assert "not drained, not waited for, not changed, not resumed" in got["skipped"]


def test_out_of_service_without_a_reason_is_refused_but_future_is_skipped():
    """rt50e L2: slurm.conf State=DRAIN / State=DOWN give no Reason; State=FUTURE is not in service yet."""
    got = fd.found(check("down"), reason="none", tag=TAG)
    assert got["action"] == "refuse" and got["no_reason"], got
    assert got["refusal"]["what"].startswith(
        "the scheduler says it is out of service (out of service already (state down), with no reason on the scheduler)"
        " but gives no reason for it")
    assert "State=DRAIN or State=DOWN" in got["refusal"]["fix"]
    got = fd.found(check("future"), reason="(null)", tag=TAG)
    assert got["action"] == "skip" and got["skipped"].startswith("the scheduler has it in state FUTURE"), got


def test_a_reason_tag_is_a_prefix_and_the_filter_input_is_checked():
    """rt50f: the tag is a prefix, case and all: an admin's reason that only mentions the rollout is the admin's."""
    assert fd.found(check("drained"), reason="dlbox rollout", tag="dlbox rollout")["action"] == "wait"
    assert fd.found(check("drained"), reason="dlbox", tag="dlbox rollout")["action"] == "leave"
    assert fd.found(check("drained"), reason="GPU3 Xid 79, found after dlbox rollout", tag=TAG)["action"] == "leave"
    assert fd.found(check("drained"), reason="DLBOX ROLLOUT", tag=TAG)["action"] == "leave"
    got = fd.found(check("idle"), reason="hw fault (dlbox rollout)", tag=TAG)
    assert got["action"] == "skip" and got["admin_state"] == "draining", got
    # sinfo's %E prints "none" without a reason; scontrol "(null)"; either case: no reason (a DOWN without one refused)
    for none in ("none", "NONE", "(null)", "  "):
        got = fd.found(check("down"), reason=none, tag=TAG)
        assert got["action"] == "refuse" and got["reason"] == "", (none, got)
    assert fd.found(check("Down*"), reason="Not responding")["word"] == "down*"
    with pytest.raises(fd.FleetDrainError, match="no exit status"):
        fd.found({"stdout": "idle"})
    with pytest.raises(fd.FleetDrainError, match="not a number"):
        fd.found({"rc": "x"})


def test_the_filter_reads_registered_results():
    """dlbox.stack.rollout_drain_found takes the registered results as the task file has them (skipped ones too)."""
    skipped = {"changed": False, "skipped": True, "skip_reason": "Conditional result was False"}
    got = fleet.rollout_drain_found({"rc": 1, "stdout": "drained"}, skipped, {"stat": {"exists": True}})
    assert got["action"] == "wait", got
    got = fleet.rollout_drain_found({"rc": 1, "stdout": "drained"}, {"rc": 0, "stdout": "none"}, skipped)
    assert got["action"] == "refuse", got
    assert "rollout_drain_found" in fleet.FilterModule().filters()


# --- check_failure: the registered results as ansible-core's command module gives them (module_utils/basic.py
# run_command: an OSError starting the program is rc=errno, msg "Error executing command.", stdout and stderr "";
# a program that ran and exited non-zero is msg "non-zero return code" with its rc, stdout and stderr), and
# timeout(1)'s exit statuses (coreutils timeout(1): 124 timed out, 125 timeout itself failed, 126 the command found but
# not executable, 127 not found, 128+9 where KILL was sent)

def result(rc, stdout="", stderr="", msg="non-zero return code"):
    return {"changed": False, "rc": rc, "stdout": stdout, "stderr": stderr, "msg": msg, "cmd": ["timeout", "-k", "5"]}


@pytest.mark.parametrize("rc", [0, 1])
def test_before_the_drain_exit_0_and_1_fail_nothing(rc):
    assert fd.check_failure(result(rc, "idle"), 30)["failed"] is False


def test_before_the_drain_the_scheduler_cannot_say():
    """`sinfo -n` with a name it does not have prints nothing; the lab's check exits 2 then."""
    got = fd.check_failure(result(2, stderr="sinfo: error: Invalid node name specified"), 30)
    assert got == {"failed": True, "what": "could not be checked by the scheduler (it may not know the node)",
                   "how": "exited 2: sinfo: error: Invalid node name specified"}
    assert fd.check_failure(result(3), 30)["how"] == "exited 3"


@pytest.mark.parametrize("rc, how", [
    (124, "did not answer within 30 s (exit 124; each try is bounded by timeout(1): the longer of "
          "dlbox_drain_check_interval and 10 s)"),
    (137, "did not answer within 30 s (exit 137; each try is bounded by timeout(1): the longer of "
          "dlbox_drain_check_interval and 10 s)"),
    (-9, "did not answer within 30 s (exit -9; each try is bounded by timeout(1): the longer of "
         "dlbox_drain_check_interval and 10 s)"),
])
def test_before_the_drain_a_hung_check(rc, how):
    got = fd.check_failure(result(rc), 30)
    assert got == {"failed": True, "what": "could not be checked: the scheduler did not answer", "how": how}


def test_before_the_drain_timeout_missing_or_not_running_the_check():
    got = fd.check_failure(result(2, msg="Error executing command."), 30)
    assert got["what"] == "could not be checked: timeout(1), which runs the check, could not be started"
    assert got["how"] == "could not be started: Error executing command. (errno 2: No such file or directory)"
    got = fd.check_failure(result(13, msg="Error executing command."), 30)
    assert got["how"].endswith("(errno 13: Permission denied)")
    got = fd.check_failure(result(127, stderr="timeout: failed to run command '/bin/sh': No such file or directory"), 30)
    assert got["what"] == "could not be checked: timeout(1) could not run the check"
    assert got["how"] == "exited 127: timeout: failed to run command '/bin/sh': No such file or directory"


def test_the_waits_last_try():
    got = fd.check_failure(result(1, "draining"), 30, "wait", 600)
    assert got == {"failed": True, "what": "was not drained within 600 s", "how": "exited 1: draining"}
    got = fd.check_failure(result(137), 10, "wait", 60)
    assert got["what"] == ("could not be checked: the scheduler did not answer the last try before dlbox_drain_timeout "
                           "(60 s) ran out")
    assert got["how"] == ("did not answer within 10 s at its last try (exit 137: killed, as it did not stop at the "
                          "TERM) (each try is bounded: the longer of dlbox_drain_check_interval and 10 s), until "
                          "dlbox_drain_timeout ran out")
    assert "(exit 124" not in fd.check_failure(result(124), 10, "wait", 60)["how"]
    # the scheduler host lost during the wait: an unreachable result has no rc
    lost = {"unreachable": True, "changed": False, "msg": "Failed to connect to the host via ssh: Connection refused"}
    got = fd.check_failure(lost, 10, "wait", 60)
    assert got["what"] == "could not be checked: the scheduler host (dlbox_scheduler_host) stopped answering during the wait"
    assert got["how"] == "did not run: Failed to connect to the host via ssh: Connection refused"
    assert fd.check_failure({"skipped": True}, 10, "wait", 60)["failed"] is False
    assert fd.check_failure(result(0), 10, "wait", 60)["failed"] is False


def test_long_words_are_cut_as_jinjas_truncate_cut_them():
    words = " ".join(["slurm_load_node: Unable to contact slurm controller (connect failure)"] * 5)
    got = fd.check_failure(result(2, stderr=words), 30)["how"]
    assert got.startswith("exited 2: slurm_load_node") and got.endswith("...") and len(got) <= len("exited 2: ") + 200
    assert fd.truncate("x" * 205) == "x" * 205 and fd.truncate("a " * 150).endswith("a...")
    with pytest.raises(fd.FleetDrainError, match="phase"):
        fd.check_failure(result(2), 30, "after")


@pytest.mark.parametrize("size", [0, 199, 200, 205, 206, 300])
def test_truncate_is_jinjas(size):
    from jinja2 import Environment  # pylint: disable=import-outside-toplevel
    text = ("word " * 80)[:size]
    assert fd.truncate(text) == Environment().from_string("{{ s | truncate(200) }}").render(s=text)


def test_a_power_saved_node_reads_the_same_in_both_forms():
    """rt50f M2: IDLE+POWERED_DOWN is sinfo's idle~ (node_state_string), in service either way: drained, waited for."""
    for printed in ("idle~", "IDLE+POWERED_DOWN"):
        got = fd.found(check(printed), reason="none", tag=TAG)
        assert (got["state"], got["action"]) == ("idle~", "drain"), got
