# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A host the rollout drained is left drained, with the reason, where its driver waits for its reboot, and the next run
resumes it (issue 50 red team rt50 HIGH H1, MEDIUM M3).

Before: rollout_finish.yml resumed every host without a failure: a server whose driver did not answer (nvidia-smi -L:
"Failed to initialize NVML: Driver/library version mismatch", the state after a driver upgrade without its reboot,
dlbox_reboot_allowed false: the lab's servers) was put back into the scheduler and the run exited 0; workstation.yml
resumed a host with nvidia_driver_reboot_required true. And a node the rollout itself had left drained was taken, on the
next run, for one an admin had drained (the check exits 0 before any drain): never resumed, the summary silent.

Real ansible-playbook over the local connection. server.yml through test_server_acceptance_in_batch's harness
(``--tags acceptance``), with a FIXTURE nvidia-smi that prints NVML's version-mismatch line and exits 18 (the message
of NVML's NVML_ERROR_LIB_RM_VERSION_MISMATCH, as nvidia-smi prints it: "Failed to initialize NVML: Driver/library
version mismatch"; rt50's reproduction). The rollout stand-in (tests/integration/rollout_standin/rollout.yml) for a
pending reboot (nvidia_driver_reboot_required, the nvidia_driver role's fact, given as a host variable) and a failure.
FIXTURE scheduler: a state file per node (the drain writes "drained", the resume "idle"; the check exits 0 on
"drained", 1 otherwise); each command notes its call in a call log. NOT Slurm. The rollout's marker goes to a folder
per host under the test's folder (dlbox_rollout_state_dir: the local connection shares one file system).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import test_fleet_lost_hosts as standin  # noqa: E402  pylint: disable=wrong-import-position,import-error
import test_server_acceptance_in_batch as srv  # noqa: E402  pylint: disable=wrong-import-position,import-error

MISMATCH = "Failed to initialize NVML: Driver/library version mismatch"
AGAIN = "; reboot it, then run again: it is resumed then"


def scheduler(shared):
    """The FIXTURE scheduler's commands (host variables) with their state and call log under ``shared``."""
    (shared / "state").mkdir(parents=True, exist_ok=True)
    node = "%s/state/{{ inventory_hostname }}" % shared
    log = "%s/calls" % shared
    return {"dlbox_drain_command": "echo drain-{{ inventory_hostname }} >> %s; echo drained > %s" % (log, node),
            "dlbox_drain_check_command": '[ "$(cat %s 2>/dev/null)" = drained ]' % node,
            "dlbox_resume_command": "echo resume-{{ inventory_hostname }} >> %s; echo idle > %s" % (log, node),
            "dlbox_rollout_state_dir": "%s/marks/{{ inventory_hostname }}" % shared}


def calls(shared):
    return (shared / "calls").read_text().split() if (shared / "calls").is_file() else []


def server_run(work, shared, smi_answers):
    """server.yml on the host srv1 with the FIXTURE scheduler; nvidia-smi -L answers or prints NVML's mismatch."""
    orig = srv._fixtures                                 # pylint: disable=protected-access

    def fixtures(where):
        fake = orig(where)
        if not smi_answers:
            (fake / "nvidia-smi").write_text("#!/bin/sh\necho '%s'\nexit 18\n" % MISMATCH)
        return fake
    srv._fixtures = fixtures                             # pylint: disable=protected-access
    try:
        work.mkdir()
        return srv.server(work, {"srv1": scheduler(shared)})
    finally:
        srv._fixtures = orig                             # pylint: disable=protected-access


def test_a_server_whose_driver_does_not_answer_is_left_drained_and_resumed_on_the_run_after_its_reboot(tmp_path):
    shared = tmp_path / "lab"
    marker = shared / "marks" / "srv1" / "drained"
    proc, summary, _calls = server_run(tmp_path / "run1", shared, smi_answers=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "Traceback" not in out, out[-4000:]      # not failed: the batches go on
    assert calls(shared) == ["drain-srv1"], calls(shared)                   # drained, NOT resumed
    assert (shared / "state" / "srv1").read_text().strip() == "drained"
    assert marker.is_file(), "the rollout's marker must stay while the host is left drained"
    why = "the NVIDIA driver does not answer (nvidia-smi -L: %s)%s" % (MISMATCH, AGAIN)
    assert srv.fact(proc, "srv1", "dlbox_rollout_left_drained") == why
    row = {r["host"]: r for r in summary["hosts"]}["srv1"]
    assert row["status"] in ("changed", "unchanged") and row["reason"] == "left drained: " + why, row
    assert row["failure"] is None, row
    assert "WARNING: srv1 is left drained (dlbox_resume_command not run): " + why in proc.stdout
    stats = json.loads(proc.stdout[proc.stdout.index("{"):])["stats"]
    assert stats["srv1"]["failures"] == 0, stats

    # rebooted: the driver answers. The node is drained with the rollout's marker: not drained again (no drain call),
    # resumed at the end, the marker removed
    proc, summary, _calls = server_run(tmp_path / "run2", shared, smi_answers=True)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "Traceback" not in out, out[-4000:]
    assert calls(shared) == ["drain-srv1", "resume-srv1"], calls(shared)
    assert (shared / "state" / "srv1").read_text().strip() == "idle"
    assert not marker.exists()
    row = {r["host"]: r for r in summary["hosts"]}["srv1"]
    assert row["reason"] is None and row["acceptance"] == "passed", row


def test_a_pending_driver_reboot_leaves_the_host_drained_and_an_admins_drain_is_left_and_said(tmp_path):
    shared = tmp_path / "lab"
    gv = scheduler(shared)
    (shared / "state" / "h3").write_text("drained\n")          # an admin drained h3 before the rollout (no marker)
    proc, summary = standin.rollout(tmp_path, {"h1": {}, "h2": {"nvidia_driver_reboot_required": True}, "h3": {}},
                                    {}, **gv)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "Traceback" not in out, out[-4000:]
    assert sorted(calls(shared)) == ["drain-h1", "drain-h2", "resume-h1"], calls(shared)
    rows = standin.rows(summary)
    assert {h: r["status"] for h, r in rows.items()} == {"h1": "changed", "h2": "changed", "h3": "changed"}, rows
    assert rows["h1"]["reason"] is None, rows["h1"]
    assert rows["h2"]["reason"] == ("left drained: the NVIDIA driver's reboot is pending (dlbox_reboot_allowed is "
                                    "false)" + AGAIN), rows["h2"]
    assert rows["h3"]["reason"] == ("left drained: an admin had drained it before the rollout (drained already, "
                                    "without the rollout's marker %s/marks/h3/drained): it is left as it was"
                                    % shared), rows["h3"]
    assert (shared / "marks" / "h2" / "drained").is_file() and not (shared / "marks" / "h1" / "drained").exists()
    assert not (shared / "marks" / "h3").exists()               # the admin's drain: no marker written
    md = (tmp_path / "reports" / "rollout" / "summary.md").read_text()
    assert "left drained: an admin had drained it" in md and "left drained: the NVIDIA driver's reboot" in md, md


def test_a_host_the_rollout_left_drained_after_a_failure_is_resumed_by_the_next_good_run(tmp_path):
    shared = tmp_path / "lab"
    gv = scheduler(shared)
    run1 = tmp_path / "run1"
    proc, summary = standin.rollout(run1, {"h1": {"test_fail": True}}, {}, **gv)
    assert proc.returncode == 2, (proc.stdout + proc.stderr)[-3000:]
    assert standin.rows(summary)["h1"]["status"] == "failed"
    assert calls(shared) == ["drain-h1"] and (shared / "marks" / "h1" / "drained").is_file()
    run2 = tmp_path / "run2"
    proc, summary = standin.rollout(run2, {"h1": {}}, {}, **gv)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "Traceback" not in out, out[-3000:]
    assert calls(shared) == ["drain-h1", "resume-h1"], calls(shared)       # the rollout's own drain: resumed
    assert not (shared / "marks" / "h1" / "drained").exists()
    row = standin.rows(summary)["h1"]
    assert row["status"] == "changed" and row["reason"] is None, row
