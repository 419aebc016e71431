"""A group whose every host is refused by its plan (issue 50, item 3): site.yml itself, real ansible-playbook over the
local connection, nothing changed on this machine (the plan refuses before any change; detection is skipped with
dlbox_plan_hardware). Ansible ends the whole run when every host of a play fails (PlaybookExecutor: a play whose batch
all failed breaks the run), so the servers' play never runs. The fleet summary, written by plan.yml's refusal play,
lists the refused hosts as refused with their plan's reasons, says the rollout stopped and why, and lists the later
group's host as not run with that reason; the run shows the table.

It used to write no summary at all (rollout_report.yml's set_stats read the batches of a rollout that had run none),
and before that said nothing of the stop ("its group's play has not run yet")."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
sys.path.insert(0, str(ROOT / "tools"))
from dlboxdata import collection  # noqa: E402  pylint: disable=wrong-import-position,import-error


def test_a_group_refused_whole_stops_the_rollout_and_the_summary_says_so(tmp_path):
    inventory = {"all": {
        "vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                 "dlbox_report_dir": str(tmp_path / "reports"),
                 "dlbox_plan_hardware": {"gpus": ["RTX 4090"], "os": "debian-12"}},
        "children": {
            # a CUDA release that data/compat.yml does not have: the plan refuses both
            "workstations": {"vars": {"dlbox_plan_request": {"cuda": "9.0"}}, "hosts": {"w1": {}, "w2": {}}},
            "servers": {"hosts": {"s1": {}}}}}}
    (tmp_path / "hosts.yml").write_text(json.dumps(inventory))
    collection.importable()
    base = next(p for p in sys.path if (Path(p) / "ansible_collections" / "dlbox" / "stack").resolve() == ROOT)
    env = {"PATH": "%s:/usr/bin:/bin" % BIN, "ANSIBLE_CONFIG": str(tmp_path / "none.cfg"), "ANSIBLE_NOCOLOR": "1",
           "HOME": str(tmp_path), "ANSIBLE_LOCAL_TEMP": str(tmp_path / "tmp"), "ANSIBLE_COLLECTIONS_PATH": base,
           "LC_ALL": "C.UTF-8"}
    proc = subprocess.run([str(BIN / "ansible-playbook"), "-i", str(tmp_path / "hosts.yml"),
                           str(ROOT / "playbooks" / "site.yml")],
                          capture_output=True, text=True, check=False, env=env, timeout=300, cwd=tmp_path)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2, out[-4000:]
    assert "PLAY [Servers" not in out and "PLAY [Deep-learning workstation]" not in out, out[-4000:]
    report = tmp_path / "reports" / "rollout" / "summary.json"
    assert report.is_file(), out[-4000:]
    summary = json.loads(report.read_text())
    rows = {row["host"]: row for row in summary["hosts"]}
    stopped = ("every host of workstations (w1, w2) was refused by its plan, before any change; Ansible ends the run "
               "when every host of a play fails: nothing was run on any host")
    assert summary["stopped"] == stopped
    assert summary["counts"] == {"hosts": 3, "changed": 0, "unchanged": 0, "failed": 0, "unreachable": 0,
                                 "refused": 2, "not_run": 1, "pending_reboot": 0, "left_drained": 0}, rows
    for name in ("w1", "w2"):
        assert rows[name]["status"] == "refused" and rows[name]["scenario"] == "workstation", rows[name]
        assert rows[name]["reason"].startswith("the plan: CUDA '9.0' is not a CUDA release"), rows[name]
        assert rows[name]["reason"].endswith("(nothing was changed)"), rows[name]
    assert rows["s1"]["status"] == "not run" and rows["s1"]["scenario"] == "server", rows["s1"]
    assert rows["s1"]["reason"] == "the rollout stopped before its group's play: " + stopped
    assert summary["batches"] == []                                              # no batch ran
    # the run shows the table and the stop (text lines, no JSON quoting without ansible.cfg)
    assert "\nFleet summary:\nhost " in out, out[-4000:]
    assert "3 hosts: 0 changed, 0 unchanged, 0 failed, 0 unreachable, 2 refused, 1 not run" in out
    assert "The rollout stopped: " + stopped in out
    md = (tmp_path / "reports" / "rollout" / "summary.md").read_text()
    assert "| s1 | server | not run |" in md and "The rollout stopped: " + stopped in md
