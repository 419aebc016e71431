# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whose drain a node's is, before a rollout drains it (``playbooks/tasks/rollout_drain.yml``); pure, no I/O.

Its input is what the scheduler said of the node before the rollout touched it:

- the drain check (``dlbox_drain_check_command``): exit 0 where the node is drained; 1 where it is not (yet), printing
  its state as Slurm words it (the lab's example: ``sinfo -h -n NODE -o %T``); 2 or more where the scheduler cannot say
  (that case fails the host before this module is asked);
- the node's drain reason (``dlbox_drain_reason_command``; Slurm: ``sinfo -h -n NODE -o %E``, "none" without one),
  ``None`` where no reason command is set;
- whether the rollout's marker (``<dlbox_rollout_state_dir>/drained``) is on the host, read only without a reason
  command.

Slurm's words (sinfo(1) NODE STATE CODES; src/common/slurm_protocol_defs.c ``node_state_string`` for sinfo's ``%T``,
``node_state_string_complete`` for the compound form of ``scontrol show node``'s State= and ``sinfo -O
StateComplete``, the base state and its flags joined by "+", e.g. MIXED+DRAIN):

- in service (drained, waited for and resumed by the rollout): idle, mixed, allocated, completing, planned, reserved
  (and perfctrs; sinfo's short mix, alloc, resv);
- an admin's drain or failure under way, its jobs still running: draining, failing (skipped at once);
- out of service already: down, drained, fail, maint, inval, future, power_* / powered_* / powering_*, reboot and
  reboot_issued / reboot_requested: an admin's unless the rollout's own drain says so (not drained again, its reason
  kept; not resumed: a resume turns DOWN into IDLE);
- Slurm's own hold, whoever's drain it is (rt50f H1, H2, M3): a node Slurm reboots or will (reboot, reboot^,
  reboot_*, the @ flag) and one whose registration it has invalid (inval, printed whether jobs run there or not) are
  skipped untouched;
- any other word (a check worded otherwise, another scheduler's, PBS's job-busy; Slurm's blocked and cloud, which do
  not say whether the node is in service) fails the host untouched: the rollout cannot tell whether jobs run there.

Each state word may carry the flags sinfo appends (``* ~ # ! % $ @ ^ -``: not responding, powered off, powering up,
...). A compound word is read as sinfo's ``%T`` word for the same state (:func:`slurm_state`: a port of
node_state_string, with two safer readings).

Before this module, the same rules were Jinja in rollout_drain.yml (rt50d H1, rt50e M1, L2-L4); the texts are theirs.
"""

from __future__ import annotations

import json
import re

# sinfo's flags after a state word (sinfo(1) NODE STATE CODES: * not responding, ~ powered off, # powering up,
# ! pending power down, % powering down, $ maintenance reservation, @ pending reboot, ^ reboot issued, - planned)
SUFFIX = "[*~#!%$@^-]*"
IN_SERVICE = re.compile(r"^(idle|mix|mixed|alloc|allocated|completing|planned|resv|reserved|perfctrs)[*~#!%$@^+-]*$")
DRAINING = re.compile(r"^(draining|failing)" + SUFFIX + "$")
OUT_OF_SERVICE = re.compile(
    r"^(down|drained|fail|maint|inval|future|power(ed|ing)?_(down|up)|reboot(_issued|_requested)?)" + SUFFIX + "$")
# Slurm words the rollout knows but does not handle: they do not say whether the node is in service
UNHANDLED = re.compile(r"^(blocked|cloud)[*~#!%$@^+-]*$")
# Slurm reboots the node, or will (sinfo's REBOOT, REBOOT^ and REBOOT_*; a word with the @ pending-reboot or ^
# reboot-issued flag), or marks its registration invalid (INVAL: node_state_string prints it before everything else,
# whether jobs run there or not; slurmctld drains such a node, its jobs still running, node_mgr.c): a change there
# would race Slurm's reboot or run under jobs (rt50f H1, H2, M3)
SLURM_HOLDS = re.compile(r"^(reboot|inval)|[@^][*~#!%$@^+-]*$")
# the compound form's bases and flags (slurm_protocol_defs.c node_states[], node_state_flags[])
BASES = frozenset(("down", "idle", "allocated", "error", "mixed", "future", "unknown"))
FLAGS = frozenset(("cloud", "completing", "drain", "dynamic_future", "dynamic_norm", "invalid_reg", "fail", "maintenance",
                   "power_down", "power_up", "perfctrs", "powered_down", "reboot_requested", "reboot_issued",
                   "reserved", "resume", "not_responding", "planned", "powering_up", "powering_down"))
# the suffix node_state_string gives a base for its first flag in this order
SUFFIXES = (("maintenance", "$"), ("reboot_issued", "^"), ("reboot_requested", "@"), ("powering_up", "#"),
            ("powering_down", "%"), ("powered_down", "~"), ("power_down", "!"), ("not_responding", "*"))
# a flag alone on an UNKNOWN base that node_state_string names by itself
ALONE = ("cloud", "power_down", "power_up", "powering_down", "powered_down", "powering_up")
# what sinfo's "none" and an unset Reason print
NO_REASON = ("", "none", "(null)")
DEFAULT_TAG = "dlbox rollout"
DEFAULT_STATE_DIR = "/var/lib/dlbox/rollout"


class FleetDrainError(ValueError):
    """Input this module cannot read."""


def _strip(word):
    return re.sub(r"[*~#!%$@^-]+$", "", word)


def slurm_state(printed):
    """The state word of what the check printed (lower case, trimmed), a compound word (BASE+FLAG+...) read as
    sinfo's %T word for it; a word that is no compound form is returned as printed (its flags kept).

    The compound form (scontrol's State=, sinfo -O StateComplete: node_state_string_complete, the bases and flags of
    node_states[] and node_state_flags[]) is read as node_state_string reads the same state (src/common/
    slurm_protocol_defs.c, SchedMD/slurm master, 2025): INVALID_REG first (inval), MAINTENANCE on a node neither
    drained nor busy nor down (maint), a reboot on a node that is not busy (reboot^, reboot), DRAIN (draining where jobs
    run, else drained), FAIL, then the base with the first of its flags' suffixes ($ maintenance, ^ reboot issued,
    @ reboot requested, # powering up, % powering down, ~ powered down, ! power down, * not responding). Two
    deliberate departures, each the safer reading: a DOWN base is down before its DRAIN flag (sinfo prints DRAINED for
    DOWN+DRAIN: a node an admin set down is not the rollout's drain, whatever its Reason), and FAIL on a MIXED node is
    failing (node_state_string says FAIL only on ALLOCATED: a mixed node has jobs too). A base or flag Slurm does not
    have leaves the word as printed (refused: a state the rollout does not know)."""
    word = str(printed or "").strip().lower()
    parts = word.split("+")
    base = _strip(parts[0])
    flags = set(flag for flag in (_strip(part) for part in parts[1:]) if flag)
    if not flags:
        return word
    if base not in BASES or not flags <= FLAGS:
        return word
    busy = base in ("allocated", "mixed") or "completing" in flags
    no_resp = "not_responding" in flags
    if "invalid_reg" in flags:
        return "inval"
    if "maintenance" in flags and not ("drain" in flags or base in ("allocated", "down", "mixed")):
        return "maint*" if no_resp else "maint"
    reboot = "reboot_requested" in flags or "reboot_issued" in flags
    if reboot and base not in ("allocated", "mixed"):
        return "reboot^" if "reboot_issued" in flags else "reboot*" if no_resp else "reboot"
    suffix = next((mark for flag, mark in SUFFIXES if flag in flags), "")
    if base == "down":
        return "down" + suffix
    if "drain" in flags:
        return ("draining" if busy else "drained") + suffix
    if "fail" in flags:
        return ("failing" if busy else "fail") + ("*" if no_resp else "")
    if base == "unknown" and len(flags) == 1 and next(iter(flags)) in ALONE:
        return next(iter(flags))
    if base == "allocated":
        return "allocated" + (suffix or ("+" if "completing" in flags else ""))
    if "completing" in flags:
        return "completing" + suffix
    if base == "idle":
        return "idle" + suffix if suffix else (
            "perfctrs" if "perfctrs" in flags else "reserved" if "reserved" in flags
            else "planned" if "planned" in flags else "idle")
    if base == "mixed":
        return "mixed" + (suffix or ("-" if "planned" in flags else ""))
    if base == "future":
        return "future" + suffix
    if "resume" in flags:
        return "resume"
    return base + ("*" if no_resp else "")


def kind(state):
    """What a state word says of the node: "in service", "draining" (draining or failing: jobs still run), "out of
    service", "none" (nothing printed) or "unknown"."""
    if not state:
        return "none"
    if IN_SERVICE.match(state):
        return "in service"
    if DRAINING.match(state):
        return "draining"
    if OUT_OF_SERVICE.match(state):
        return "out of service"
    return "unknown"


def _rc(check):
    if not isinstance(check, dict) or "rc" not in check:
        raise FleetDrainError("fleet_drain: the drain check's result has no exit status (rc): %r" % (check,))
    try:
        return int(check["rc"])
    except (TypeError, ValueError) as exc:
        raise FleetDrainError("fleet_drain: the drain check's exit status is not a number: %r" % (check["rc"],)) from exc


def found(check, reason=None, marker=False, tag=None, state_dir=None):
    """Whose drain the node's is, and what the rollout does with it.

    ``check``: the drain check's result before the drain (``rc``, ``stdout``); ``reason``: what the reason command
    printed, ``None`` where there is none (then ``marker``, whether the rollout's marker is on the host, decides);
    ``tag``: ``dlbox_drain_reason`` (the rollout's drains have reasons that begin with it); ``state_dir``:
    ``dlbox_rollout_state_dir`` (named where the marker decides).

    Returns ``word`` (as printed, lower case), ``state`` (its sinfo word), ``kind`` (:func:`kind`), ``reason`` (the
    scheduler's, "" where none), ``found_out`` (drained, draining or out of service already), ``ours`` (the rollout's
    own drain: resumed at the end), ``admin_drained`` (an admin's: not drained again, not resumed), ``admin_state``,
    ``admin_why`` (why it is an admin's, for the summary; "" where not), ``action`` ("drain": in service, drain and wait;
    "wait": the rollout's own drain found; "leave": an admin's out of service, changed without a drain and left as it
    was; "skip": an admin's with jobs running, or a future node, skipped untouched; "refuse": fails untouched),
    ``skipped`` (the row's reason where skipped), ``refusal`` (the failure's words where refused).
    """
    rc = _rc(check)
    word = str(check.get("stdout") or "").strip().lower()
    state = slurm_state(word)
    state_kind = kind(state) if rc == 1 else "drained" if rc == 0 else "failed"
    tag = str(tag or DEFAULT_TAG)
    state_dir = str(state_dir or DEFAULT_STATE_DIR)
    asked = reason is not None
    said = str(reason or "").strip()
    said = "" if said.lower() in NO_REASON else said

    # a node the check calls in service (or of which it prints nothing on exit 1) whose Reason is set and is not the
    # rollout's is an admin's (Slurm keeps a Reason only on a node an admin took out of service; rt50e M1 q1)
    reason_admin = (rc == 1 and state_kind in ("none", "in service") and asked and bool(said)
                    and not said.startswith(tag))
    was_out = rc == 0 or (rc == 1 and state_kind in ("draining", "out of service")) or reason_admin
    # the rollout's own drain only while the node is drained or draining (a node an admin set down or failed after the
    # rollout drained it is the admin's now, marker or not)
    ours = ((rc == 0 or state.startswith("drain"))
            and (said.startswith(tag) if asked else bool(marker)))
    admin_drained = was_out and not ours
    admin_state = "draining" if reason_admin else state if rc == 1 else "drained"
    unknown = state if rc == 1 and state_kind == "unknown" else ""
    future = rc == 1 and state.startswith("future")
    no_reason = admin_drained and asked and not said and not future

    admin_why = ""
    if admin_drained:
        if rc != 1:
            head = "drained already"
        elif reason_admin:
            head = ("the check " + (("printed " + json.dumps(word)) if word else "printed nothing")
                    + " but the node has a reason on the scheduler, its jobs may still be running")
        elif state.startswith("draining"):
            head = "draining already, its jobs still running" + (
                (" (the check printed " + json.dumps(word) + ")") if word != state else "")
        elif state.startswith("failing"):
            head = "failing already, its jobs still running"
        else:
            head = "out of service already (state " + state + ")"
        if asked and said:
            tail = ", the scheduler's reason " + json.dumps(said) + " (not the rollout's " + json.dumps(tag) + ")"
        elif asked:
            tail = ", with no reason on the scheduler"
        else:
            tail = ", without the rollout's marker " + state_dir + "/drained"
        admin_why = head + tail

    refusal = ""
    skipped = ""
    held = rc == 1 and state_kind in ("in service", "out of service") and bool(SLURM_HOLDS.search(state))
    if unknown:
        refusal = _unknown_word(unknown)
    elif held:
        skipped = _held(state, admin_why or ("state " + state + ((", the scheduler's reason " + json.dumps(said))
                                                                 if said else "")))
    elif no_reason:
        refusal = _no_reason(admin_why)

    if skipped or refusal:
        pass
    elif admin_drained and rc == 1 and re.match(r"^(draining|failing|future)", admin_state):
        if admin_state.startswith("future"):
            skipped = ("the scheduler has it in state FUTURE, not in service yet (" + admin_why + "): it cannot be"
                       " resumed, and is left as it was (not drained, not changed); run the rollout again for it once"
                       " it is in service")
        else:
            skipped = ("an admin is " + ("failing" if admin_state.startswith("failing") else "draining") + " it ("
                       + admin_why + "): it is left as it was (not drained again, not waited for, not changed, not"
                       " resumed); run the rollout again for it once its jobs are done")

    if refusal:
        action = "refuse"
    elif skipped:
        action = "skip"
    elif admin_drained:
        action = "leave"
    elif was_out:
        action = "wait"
    else:
        action = "drain"
    return {"word": word, "state": state, "kind": state_kind, "reason": said, "found_out": was_out, "ours": ours,
            "admin_drained": admin_drained, "admin_state": admin_state, "admin_why": admin_why, "action": action,
            "skipped": skipped, "refusal": refusal, "unknown_word": unknown, "no_reason": no_reason}


def _held(state, why):
    if state.startswith("inval"):
        return ("Slurm has its registration invalid (" + why + "; sinfo's inval: its slurmd registered with a"
                " configuration that does not match slurm.conf, e.g. fewer GPUs than configured, and Slurm drains it"
                " with its jobs still running): it is left as it was (not drained, not waited for, not changed, not"
                " resumed); fix what the scheduler's reason names, then run the rollout again for it")
    return ("Slurm reboots it or will (" + why + "; scontrol reboot: REBOOT^ issued, @ pending): it is left as it was"
            " (not drained, not waited for, not changed, not resumed), as a change would race that reboot; run the"
            " rollout again for it once it is back in service")


def _unknown_word(word):
    what = ("the drain check printed " + json.dumps(word)
            + (", a Slurm state the rollout does not handle (it cannot tell whether the node is in service)"
               if UNHANDLED.match(word) else ", which is no node state the rollout knows"))
    fix = ("The check must exit 0 when the node is drained and otherwise print its state as Slurm words it (sinfo(1)"
           " NODE STATE CODES, the lab example: sinfo -h -n NODE -o %T): in service idle, mixed, allocated, completing,"
           " planned, reserved; draining or failing; out of service down, drained, fail, maint, inval, future, power_*,"
           " reboot, reboot_*.")
    return {"what": what, "fix": fix}


def _no_reason(admin_why):
    what = ("the scheduler says it is out of service (" + admin_why + ") but gives no reason for it"
            " (dlbox_drain_reason_command printed none): an admin takes a node out of service with a reason, the"
            " rollout drains with one that begins with dlbox_drain_reason, so whose it is cannot be told")
    fix = ("A node that slurm.conf itself sets State=DRAIN or State=DOWN has no reason (rt50e L2): where no one drained"
           " it on purpose, resume it, or give it a reason on the scheduler (Slurm: scontrol update nodename=NODE"
           " reason=...) to leave it as it is, and run the rollout again for it.")
    return {"what": what, "fix": fix}


# --- a check that failed: before the drain (exit 2 or more), or at the end of the wait (not drained in time) ---------

HUNG = (124, 137, -9)          # timeout(1) stopped the try (124), or killed it where it ignored the TERM (137, -9)
NOT_RUN = (125, 126, 127)      # timeout(1) could not run the check (timeout(1) itself failed, not executable, not found)
ERRNO = {2: ": No such file or directory", 13: ": Permission denied"}
# ansible-core's words where run_command could not start the program (module_utils/basic.py: "Error executing
# command." with the errno as rc: timeout(1) not on the scheduler host's PATH) and where it started and failed
NOT_STARTED = "Error executing command."
NON_ZERO = "non-zero return code"


def truncate(text, length=200, end="...", leeway=5):
    """Jinja's truncate filter (words kept whole; leeway 5, its default policy), as the task file's texts had it."""
    text = str(text)
    if len(text) <= length + leeway:
        return text
    return text[: length - len(end)].rsplit(" ", 1)[0] + end


def _text(value):
    return "" if value is None else str(value)


def _module_msg(result, out, rc):
    """The module's own words where the check printed none (not the command module's "non-zero return code")."""
    msg = _text(result.get("msg"))
    if out or msg == NON_ZERO or not msg:
        return ""
    return truncate(msg.strip()) + ((" (errno %s%s)" % (rc, ERRNO.get(rc, ""))) if msg == NOT_STARTED else "")


def check_failure(result, try_s, phase="before", timeout_s=None):
    """Why the drain check failed the host, untouched: ``{"failed", "what", "how"}``.

    ``result``: the check's registered result; ``try_s``: the bound of each try (the longer of
    dlbox_drain_check_interval and 10 s); ``phase``: "before" (the check before any drain: it fails the host where it
    exits 2 or more, or a negative signal status) or "wait" (the last try of the wait: it fails the host unless it
    exited 0; ``timeout_s`` is dlbox_drain_timeout). Texts as the task file had them (rt50d, rt50e L3/L4, b1, c1)."""
    if phase not in ("before", "wait"):
        raise FleetDrainError("fleet_drain: phase must be before or wait, not %r" % (phase,))
    result = dict(result or {})
    defined = "rc" in result and result["rc"] is not None
    try:
        rc = int(result["rc"]) if defined else 2
    except (TypeError, ValueError) as exc:
        raise FleetDrainError("fleet_drain: the drain check's exit status is not a number: %r" % (result["rc"],)) from exc
    msg = _text(result.get("msg"))
    if phase == "before":
        failed = defined and (rc >= 2 or rc < 0)
        out = truncate((_text(result.get("stderr")) + " " + _text(result.get("stdout"))).strip())
    else:
        failed = not result.get("skipped") and (not defined or rc != 0)
        out = truncate((_text(result.get("stdout")) + " " + _text(result.get("stderr"))).strip())
    module_msg = _module_msg(result, out, rc)
    hung = rc in HUNG
    not_run = rc in NOT_RUN or bool(module_msg)
    if not failed:
        return {"failed": False, "what": "", "how": ""}

    if phase == "wait" and defined and rc == 1:
        what = "was not drained within %s s" % (timeout_s,)
    elif phase == "wait" and hung:
        what = ("could not be checked: the scheduler did not answer the last try before dlbox_drain_timeout (%s s) ran"
                " out" % (timeout_s,))
    elif hung:
        what = "could not be checked: the scheduler did not answer"
    elif not defined:
        what = "could not be checked: the scheduler host (dlbox_scheduler_host) stopped answering during the wait"
    elif msg == NOT_STARTED:
        what = "could not be checked: timeout(1), which runs the check, could not be started"
    elif not_run:
        what = "could not be checked: timeout(1) could not run the check"
    else:
        what = "could not be checked by the scheduler (it may not know the node)"

    if hung and phase == "before":
        how = ("did not answer within %s s (exit %s; each try is bounded by timeout(1): the longer of"
               " dlbox_drain_check_interval and 10 s)" % (try_s, rc))
    elif hung:
        how = ("did not answer within %s s at its last try" % (try_s,)
               + ((" (exit %s: killed, as it did not stop at the TERM)" % (rc,)) if rc != 124 else "")
               + " (each try is bounded: the longer of dlbox_drain_check_interval and 10 s), until dlbox_drain_timeout"
               " ran out")
    elif not defined:
        how = "did not run: " + (msg or "no answer").strip()
    elif module_msg:
        how = "could not be started: " + module_msg
    else:
        how = "exited %s" % (rc,) + ((": " + out) if out else "")
    return {"failed": True, "what": what, "how": how}
