# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A scheduler host that does not answer (issue 50 red team rt50 MEDIUM M2).

Before: dlbox_drain_command, dlbox_drain_check_command and dlbox_resume_command run on dlbox_scheduler_host
(delegate_to), and a delegated host that cannot be reached marks the host the task runs for unreachable
(ansible/ansible#35030). With the scheduler down, every node of the batch was "unreachable: lost during its batch",
nothing named dlbox_scheduler_host, and nothing had been changed. Now the rollout asks the scheduler host first
(rollout_drain.yml): no answer fails each host before its drain, untouched, naming dlbox_scheduler_host and its
address, and the summary says so on each row; a scheduler that drops during the batch fails the resume on the host
with the variable named, the host not reported lost.

Real ansible-playbook over the local connection, the rollout stand-in (tests/integration/rollout_standin/rollout.yml),
the nodes' plays leaving the scheduler host out (test_play_hosts). FIXTURE: the scheduler host is an inventory host
reached over SSH at 127.0.0.1 port 1, where the connection is refused (ssh's own "Connection refused"), from the start
or from after the nodes' changes (test_lose_scheduler); the scheduler's commands are files under the test's folder.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import test_fleet_lost_hosts as standin  # noqa: E402  pylint: disable=wrong-import-position,import-error

PROBE_TASK = "Fail the host, untouched and not drained, when the scheduler host does not answer (dlbox_scheduler_host)"
REFUSED = "ssh: connect to host 127.0.0.1 port 1: Connection refused"
DOWN = {"ansible_connection": "ssh", "ansible_host": "127.0.0.1", "ansible_port": 1}


def commands(work):
    """The scheduler's commands: files under ``work`` (drained-<node>, resumed-<node>)."""
    return {"dlbox_scheduler_host": "slurmctld",
            "dlbox_drain_command": "touch %s/drained-{{ inventory_hostname }}" % work,
            "dlbox_drain_check_command": "test -e %s/drained-{{ inventory_hostname }}" % work,
            "dlbox_resume_command": "touch %s/resumed-{{ inventory_hostname }}" % work}


def recap(out):
    """PLAY RECAP's counts per host: {host: {"ok": n, "unreachable": n, ...}}."""
    return {m.group(1): dict((k, int(v)) for k, v in re.findall(r"(\w+)=(\d+)", m.group(2)))
            for m in re.finditer(r"^(\S+)\s+: (ok=.*)$", out, re.M)}


def the_untouched_row(row, node):
    assert row["status"] == "failed", row
    assert row["failure"]["task"] == PROBE_TASK, row
    message = row["failure"]["message"]
    assert message.startswith("The scheduler host (dlbox_scheduler_host) slurmctld (127.0.0.1, port 1) does not "
                              "answer: "), message
    assert REFUSED in message, message
    assert message.endswith("run there: %s was not drained, and nothing was changed on it." % node), message


def test_a_scheduler_host_down_before_the_rollout_fails_each_host_untouched_naming_it(tmp_path):
    nodes = {"n1": {}, "n2": {}, "n3": {}, "slurmctld": dict(DOWN)}
    proc, summary = standin.rollout(tmp_path, nodes, {"dlbox_serial": 0, "test_play_hosts": "all:!slurmctld"},
                                    **commands(tmp_path))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2 and "Traceback" not in out, out[-3000:]
    got = standin.rows(summary)
    assert sorted(got) == ["n1", "n2", "n3"], got                 # the scheduler host is not a node of the rollout
    for node in ("n1", "n2", "n3"):
        the_untouched_row(got[node], node)
    assert "the run ended during its batch" not in out and summary["counts"]["unreachable"] == 0, summary["counts"]
    assert summary["counts"]["failed"] == 3, summary["counts"]
    assert summary["stopped"].startswith("3 of the 3 hosts of batch 1 (n1, n2, n3) failed"), summary["stopped"]
    # nothing drained (the rollout's own drain marker), nothing changed (the stand-in's marker), nothing resumed
    assert standin.marked(tmp_path) == []
    assert sorted(p.name for p in tmp_path.glob("marks/*/drained")) == []
    assert sorted(p.name for p in tmp_path.glob("drained-*")) + sorted(p.name for p in tmp_path.glob("resumed-*")) == []
    # the nodes are failed, not unreachable, in Ansible's own recap too
    counts = recap(out)
    assert {h: (c["failed"], c["unreachable"]) for h, c in counts.items()} == {
        "n1": (1, 0), "n2": (1, 0), "n3": (1, 0)}, counts


def test_batches_of_1_a_scheduler_down_stops_at_the_first_host_and_a_resume_command_alone_is_checked(tmp_path):
    """dlbox_resume_command alone runs on the scheduler host too: it is asked before any change as well."""
    nodes = {"n1": {}, "n2": {}, "n3": {}, "slurmctld": dict(DOWN)}
    proc, summary = standin.rollout(tmp_path, nodes, {"dlbox_serial": 1, "test_play_hosts": "all:!slurmctld"},
                                    dlbox_scheduler_host="slurmctld",
                                    dlbox_resume_command="touch %s/resumed-{{ inventory_hostname }}" % tmp_path)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2 and "Traceback" not in out, out[-3000:]
    got = standin.rows(summary)
    assert {h: r["status"] for h, r in got.items()} == {"n1": "failed", "n2": "not run", "n3": "not run"}, got
    the_untouched_row(got["n1"], "n1")
    assert summary["stopped"].startswith("1 of the 1 hosts of batch 1 (n1) failed"), summary["stopped"]
    assert got["n2"]["reason"] == "the rollout stopped before its batch: " + summary["stopped"], got["n2"]
    assert standin.marked(tmp_path) == [] and list(tmp_path.glob("resumed-*")) == []


def test_a_scheduler_that_drops_during_the_batch_fails_the_resume_on_each_host_naming_it(tmp_path):
    nodes = {"n1": {}, "n2": {}, "slurmctld": {}}
    proc, summary = standin.rollout(tmp_path, nodes, {"dlbox_serial": 0, "test_play_hosts": "all:!slurmctld",
                                                      "test_lose_scheduler": True}, **commands(tmp_path))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2 and "Traceback" not in out, out[-3000:]
    got = standin.rows(summary)
    for node in ("n1", "n2"):
        row = got[node]
        assert row["status"] == "failed", row
        assert row["failure"]["task"] == "Fail the host when the resume command failed (it stays drained)", row
        message = row["failure"]["message"]
        assert message.startswith("The resume command (dlbox_resume_command) failed on slurmctld "
                                  "(dlbox_scheduler_host) for %s: the scheduler host did not answer: " % node), message
        assert REFUSED in message and message.endswith("; it stays drained."), message
    assert "the run ended during its batch" not in out and summary["counts"]["unreachable"] == 0, summary["counts"]
    # drained and changed, not resumed: the rollout's drain marker stays on each host
    assert standin.marked(tmp_path) == ["n1", "n2"]
    assert sorted(p.name for p in tmp_path.glob("drained-*")) == ["drained-n1", "drained-n2"]
    assert list(tmp_path.glob("resumed-*")) == []
    assert sorted(p.parent.name for p in tmp_path.glob("marks/*/drained")) == ["n1", "n2"]
    counts = recap(out)
    assert {h: counts[h]["unreachable"] for h in ("n1", "n2")} == {"n1": 0, "n2": 0}, counts
