# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The scheduler's commands as an operator sees them (issue 50 red team rt50 LOW L2, L3).

L3, before: a drain command that failed read "Run the drain command: non-zero return code: /bin/sh: 1: scontrol: not
found", naming neither dlbox_drain_command nor where it ran (dlbox_scheduler_host, localhost: the execution
environment). L2, before: dlbox_drain_command without dlbox_drain_check_command drained and went on at once, the jobs
still running, without a word.

Real ansible-playbook over the local connection, the rollout stand-in (tests/integration/rollout_standin/rollout.yml).
FIXTURE: a PATH without scontrol (as an execution environment without Slurm's client: /bin/sh's own "not found").
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import test_fleet_lost_hosts as standin  # noqa: E402  pylint: disable=wrong-import-position,import-error

WARN = "WARNING: dlbox_drain_command is set without dlbox_drain_check_command"


def test_a_drain_command_that_fails_names_itself_and_where_it_ran_and_the_host_is_untouched(tmp_path):
    proc, summary = standin.rollout(tmp_path, {"h1": {}}, {},
                                    dlbox_drain_command="scontrol update nodename={{ inventory_hostname }} state=drain",
                                    dlbox_drain_check_command="exit 1")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2 and "Traceback" not in out, out[-3000:]
    row = standin.rows(summary)["h1"]
    assert row["status"] == "failed", row
    assert row["failure"]["task"] == "Fail the host when the drain command failed (nothing was changed on it)", row
    assert row["failure"]["message"] == (
        "The drain command (dlbox_drain_command) failed on localhost (dlbox_scheduler_host) for h1: exit 127: "
        "/bin/sh: 1: scontrol: not found; nothing was changed on h1."), row
    assert standin.marked(tmp_path) == []
    assert WARN not in out                                    # a check command is set: no warning


def test_a_resume_command_that_fails_names_itself_and_where_it_ran(tmp_path):
    proc, summary = standin.rollout(tmp_path, {"h1": {}}, {},
                                    dlbox_resume_command="echo 'slurm_update error: Invalid node name' >&2; exit 1")
    assert proc.returncode == 2, (proc.stdout + proc.stderr)[-3000:]
    row = standin.rows(summary)["h1"]
    assert row["failure"]["task"] == "Fail the host when the resume command failed (it stays drained)", row
    assert row["failure"]["message"] == (
        "The resume command (dlbox_resume_command) failed on localhost (dlbox_scheduler_host) for h1: exit 1: "
        "slurm_update error: Invalid node name; it stays drained."), row


def test_a_drain_command_without_a_check_warns_once_that_the_rollout_will_not_wait(tmp_path):
    proc, summary = standin.rollout(tmp_path, {"h1": {}, "h2": {}, "h3": {}}, {"dlbox_serial": 1},
                                    dlbox_drain_command="true")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "Traceback" not in out, out[-3000:]
    assert out.count(WARN) == 1, out[-3000:]
    assert {r["status"] for r in summary["hosts"]} == {"changed"}
