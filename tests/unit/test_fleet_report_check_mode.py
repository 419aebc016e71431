"""The fleet summary's files in a check run and where a file cannot be written (issue 50 red team rt50 L4).

A check run (ansible-playbook --check, AWX job type Check) changes nothing, the report folder included: summary.md and
summary.json stay those of the last real rollout, and the run says so where it shows the table. Before, copy did nothing
in check mode and the run printed "WARNING: the fleet summary could not be written to .../rollout: " with an empty
reason. A file that cannot be written is a warning with copy's own reason (FIXTURE: summary.json made a folder; copy
answers "can not use content with a dir as dest", ansible-core 2.19's copy action).

Real ansible-playbook over the local connection against the stand-in scenario (tests/integration/rollout_standin/
rollout.yml: workstation.yml's play keywords and skeleton with playbooks/tasks/rollout_*.yml)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
PLAYBOOK = ROOT / "tests" / "integration" / "rollout_standin" / "rollout.yml"
sys.path.insert(0, str(ROOT / "tools"))
from dlboxdata import collection  # noqa: E402  pylint: disable=wrong-import-position,import-error

NOT_WRITTEN = "WARNING: the fleet summary could not be written to "


def rollout(work, *args):
    """The stand-in rollout of h1 and h2 (batches of 1) with ``args``: the process."""
    (work / "reports").mkdir(parents=True, exist_ok=True)
    inventory = {"all": {"vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                                  "test_dir": str(work), "dlbox_report_dir": str(work / "reports")},
                         "hosts": {"h1": {}, "h2": {}}}}
    (work / "hosts.yml").write_text(json.dumps(inventory))
    collection.importable()
    base = next(p for p in sys.path if (Path(p) / "ansible_collections" / "dlbox" / "stack").resolve() == ROOT)
    env = {"PATH": "%s:/usr/bin:/bin" % BIN, "ANSIBLE_CONFIG": str(work / "none.cfg"), "ANSIBLE_NOCOLOR": "1",
           "HOME": str(work), "ANSIBLE_LOCAL_TEMP": str(work / "tmp"), "ANSIBLE_COLLECTIONS_PATH": base,
           "LC_ALL": "C.UTF-8", "ANSIBLE_INTERNAL_POLL_INTERVAL": "0.005", "ANSIBLE_SHOW_CUSTOM_STATS": "1"}
    return subprocess.run([str(BIN / "ansible-playbook"), "-i", str(work / "hosts.yml"), str(PLAYBOOK),
                           "-e", json.dumps({"dlbox_serial": 1}), *args],
                          capture_output=True, text=True, check=False, env=env, timeout=300, cwd=work)


def test_a_check_run_keeps_the_last_real_summary_and_says_why(tmp_path):
    real = rollout(tmp_path)
    assert real.returncode == 0, (real.stdout + real.stderr)[-3000:]
    folder = tmp_path / "reports" / "rollout"
    before = {name: (folder / name).read_bytes() for name in ("summary.md", "summary.json")}
    assert {row["host"]: row["status"] for row in json.loads(before["summary.json"])["hosts"]} == {
        "h1": "changed", "h2": "changed"}

    check = rollout(tmp_path, "--check")
    out = check.stdout + check.stderr
    assert check.returncode == 0, out[-3000:]
    assert NOT_WRITTEN not in out, out[-3000:]
    # said once, after the last batch, where the table is shown
    note = ("Check mode: the fleet summary was not written to %s/rollout (a check run changes nothing, the report "
            "folder included: summary.md and summary.json there stay those of the last real rollout); this run's "
            "summary is the table above and the job's artifacts (set_stats dlbox_rollout)." % (tmp_path / "reports"))
    assert out.count(note) == 1, out[-3000:]
    assert out.index("\nFleet summary:\n") < out.index(note)
    assert {name: (folder / name).read_bytes() for name in ("summary.md", "summary.json")} == before
    # the job's artifacts have the check run's summary (set_stats runs in check mode; shown with show_custom_stats)
    stats = check.stdout[check.stdout.index("\nCUSTOM STATS: "):]
    assert '\tRUN: { "dlbox_rollout": {' in stats and '"hosts": 2,' in stats, stats[:2000]


def test_a_check_run_with_no_earlier_rollout_writes_nothing(tmp_path):
    check = rollout(tmp_path, "--check")
    out = check.stdout + check.stderr
    assert check.returncode == 0, out[-3000:]
    assert NOT_WRITTEN not in out and "Check mode: the fleet summary was not written to " in out, out[-3000:]
    assert not (tmp_path / "reports" / "rollout" / "summary.json").exists()
    assert not (tmp_path / "reports" / "rollout" / "summary.md").exists()


def test_a_summary_file_that_cannot_be_written_is_a_warning_with_the_reason(tmp_path):
    (tmp_path / "reports" / "rollout" / "summary.json" / "x").mkdir(parents=True)
    proc = rollout(tmp_path)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]                                     # a report never fails a host
    dest = tmp_path / "reports" / "rollout" / "summary.json"
    warning = (NOT_WRITTEN + "%s/rollout (summary.json): report_file: %s was not written: Is a directory: %s"
               % (tmp_path / "reports", dest, dest))
    assert warning in out, out[-3000:]
    assert "Check mode:" not in out
    assert "| h2 | standin | changed |" in (tmp_path / "reports" / "rollout" / "summary.md").read_text()
