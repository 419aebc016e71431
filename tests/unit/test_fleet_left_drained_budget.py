"""Hosts the rollout leaves drained count against the failure budget; the stop message's percentage; refused hosts
out of the budget's count (issue 50, second red team rt50b HIGH H2, LOW L1, L2; its harness's s8.py g1, s4.py d1/d2).

Real ansible-playbook over the local connection against the stand-in scenario (tests/integration/rollout_standin/
rollout.yml), with the FIXTURE scheduler tests/fixtures/fake_scheduler/fake-slurm (NOT Slurm). A pending driver
reboot is the nvidia_driver role's fact nvidia_driver_reboot_required given as a host variable, as in
test_fleet_left_drained.py; the lab's servers have dlbox_reboot_allowed false (inventories/lab/group_vars/servers.yml).
The job's artifacts are read from the run's CUSTOM STATS (ANSIBLE_SHOW_CUSTOM_STATS: what set_stats handed on).

Before (rt50b): with the lab's settings ([1, "25%"], budget 0, servers that may not reboot) a driver upgrade left
every server drained, batch after batch, and the run exited 0 ("4 changed", no "left drained" figure); a batch of 3
with 1 failure against 33% printed "33%, more than ... 33%"; refused hosts were successes in the budget's count, and
the artifacts' batches had no "refused".
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import test_fleet_drain_owner as owner  # noqa: E402  pylint: disable=wrong-import-position,import-error
import test_fleet_lost_hosts as standin  # noqa: E402  pylint: disable=wrong-import-position,import-error

REFUSED = {"test_plan": {"ok": False, "errors": ["FIXTURE refused"]}}


def test_servers_left_drained_stop_the_lab_rollout_after_its_first_batch(tmp_path):
    """The lab's settings: the canary batch's server is left drained (its driver's reboot pending), so the rollout
    stops there, with the reason, instead of draining every server with rc 0. Budget 100 goes on, all counted."""
    servers = {h: {} for h in ("s1", "s2", "s3", "s4")}
    work = tmp_path / "lab"
    extra = dict(owner.scheduler(work), dlbox_serial="1,25%", dlbox_max_fail_percentage=0)
    proc, summary = standin.rollout(work, servers, extra,
                                    nvidia_driver_reboot_required=True, dlbox_reboot_allowed=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2 and summary, out[-3000:]
    rows = standin.rows(summary)
    assert rows["s1"]["reason"].startswith("left drained: the NVIDIA driver's reboot is pending"), rows["s1"]
    assert [rows[h]["status"] for h in ("s2", "s3", "s4")] == ["not run"] * 3, rows
    assert owner.state(work, "s1") == "drained" and not (work / "slurm" / "s2.json").exists()
    assert summary["stopped"] == ("1 of the 1 hosts of batch 1 failed or were unreachable (none) or were left drained "
                                  "(s1): 100%, more than the failure budget dlbox_max_fail_percentage=0%"), summary
    assert summary["counts"]["left_drained"] == 1 and summary["batches"][0]["left_drained"] == ["s1"], summary
    assert "1 left drained" in (work / "reports" / "rollout" / "summary.md").read_text()
    assert "1 with a reboot pending, 1 left drained" in out or "0 with a reboot pending, 1 left drained" in out, out[-3000:]

    work = tmp_path / "go-on"
    proc, summary = standin.rollout(work, servers, dict(owner.scheduler(work), dlbox_serial="1,25%"),
                                    nvidia_driver_reboot_required=True, dlbox_reboot_allowed=False)
    assert proc.returncode == 0 and summary and not summary["stopped"], (proc.stdout + proc.stderr)[-3000:]
    assert summary["counts"]["left_drained"] == 4
    assert [b["left_drained"] for b in summary["batches"]] == [["s1"], ["s2"], ["s3"], ["s4"]]
    assert [b["percent"] for b in summary["batches"]] == [100.0] * 4


def test_a_pending_reboot_without_a_drain_is_no_left_drained_host_and_costs_no_budget(tmp_path):
    """Workstations outside any scheduler (no dlbox_drain_command, the default): nothing drained them, so a pending
    driver reboot is the summary's "reboot pending", not "left drained", and a budget of 0 goes on through every batch
    (before: each such host was "left drained" and stopped the rollout after its first batch)."""
    hosts = {h: {} for h in ("w1", "w2", "w3")}
    work = tmp_path / "lab"
    proc, summary = standin.rollout(work, hosts, {"dlbox_serial": 1, "dlbox_max_fail_percentage": 0},
                                    nvidia_driver_reboot_required=True, dlbox_reboot_allowed=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and summary and not summary["stopped"], out[-3000:]
    rows = standin.rows(summary)
    for host in hosts:
        assert rows[host]["status"] == "changed" and not (rows[host].get("reason") or "").startswith("left drained")
    assert summary["counts"]["left_drained"] == 0 and [b["left_drained"] for b in summary["batches"]] == [[]] * 3
    assert not any("WARNING: %s is left drained" % host in out for host in hosts), out[-3000:]


def test_the_stop_message_prints_the_percentage_on_the_right_side_of_the_budget(tmp_path):
    """rt50b L1, s4.py d2: a batch of 3 with 1 failed against 33%: 33.3%, not 33%."""
    work = tmp_path / "w"
    proc, summary = standin.rollout(work, {"h1": {"test_fail": True}, "h2": {}, "h3": {}, "h4": {}},
                                    {"dlbox_serial": 3, "dlbox_max_fail_percentage": "33%", "dlbox_scheduler_host": "localhost"})
    assert proc.returncode == 2 and summary, (proc.stdout + proc.stderr)[-3000:]
    assert summary["stopped"] == ("1 of the 3 hosts of batch 1 (h1) failed or were unreachable: 33.3%, more than the "
                                  "failure budget dlbox_max_fail_percentage=33%"), summary["stopped"]


def test_refused_hosts_stay_in_the_batch_size_as_documented_and_the_artifacts_have_them(tmp_path):
    """rt50b L2, s4.py d1: a batch of 4 with 2 refused, 1 failed, 1 ok is 25 % (Ansible's rule, docs/fleet.md says so),
    within 34: the run goes on. The artifacts' batches carry refused, dropped and left_drained (their percent can be
    worked out from them)."""
    work = tmp_path / "w"
    hosts = {"h1": REFUSED, "h2": REFUSED, "h3": {"test_fail": True}, "h4": {}, "h5": {}, "h6": {}}
    (work / "reports").mkdir(parents=True)
    orig = standin.subprocess.run

    def run(*args, **kwargs):
        kwargs["env"] = dict(kwargs["env"], ANSIBLE_SHOW_CUSTOM_STATS="1")
        return orig(*args, **kwargs)  # pylint: disable=subprocess-run-check  # check=False: rollout() passes it
    standin.subprocess.run = run
    try:
        proc, summary = standin.rollout(work, hosts, {"dlbox_serial": 4, "dlbox_max_fail_percentage": 34,
                                                      "dlbox_scheduler_host": "localhost"})
    finally:
        standin.subprocess.run = orig
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2 and summary, out[-3000:]
    first = summary["batches"][0]
    assert (first["refused"], first["failed"], first["percent"], first["stop"]) == (["h1", "h2"], ["h3"], 25.0, False)
    assert summary["stopped"] is None and standin.rows(summary)["h6"]["status"] == "changed", summary
    stats = json.loads(re.search(r"CUSTOM STATS: \*+\n\s*RUN: (\{.*\})\s*$", out, re.M).group(1))
    batch = stats["dlbox_rollout"]["batches"][0]
    assert {k: batch[k] for k in ("refused", "dropped", "left_drained", "failed", "percent")} == {
        "refused": ["h1", "h2"], "dropped": [], "left_drained": [], "failed": ["h3"], "percent": 25.0}, batch
    assert stats["dlbox_rollout"]["counts"]["left_drained"] == 0
