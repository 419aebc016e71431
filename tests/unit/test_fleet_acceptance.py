"""The acceptance column of the fleet summary (issue 50, this stop's item 3): server.yml's acceptance inside the batch
sets a per-host fact, dlbox_rollout_acceptance ("passed", "failed: <reason>" or "skipped: <reason>"); the fleet summary
shows it, a column after the fitness verdict when some host has one, "-" for a host without, and carries it in each
row of summary.json (and of the job's artifacts: set_stats' host keys). A fleet where no host has one keeps its table as it was.

The filter (dlbox.stack.fleet_summary) on hostvars as the rollout leaves them, and the stand-in rollout (real
ansible-playbook, tests/integration/rollout_standin/rollout.yml with playbooks/tasks/rollout_*.yml) with the fact given
as a host variable (FIXTURE: the words are ours, the shape the other helper's server.yml sets).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from dlboxdata import collection  # noqa: E402  pylint: disable=wrong-import-position,import-error

collection.importable()
from ansible.errors import AnsibleFilterError  # noqa: E402  pylint: disable=wrong-import-position
from ansible_collections.dlbox.stack.plugins.filter import fleet  # noqa: E402  pylint: disable=wrong-import-position,import-error
import test_fleet_lost_hosts as standin  # noqa: E402  pylint: disable=wrong-import-position,import-error

DONE = {"dlbox_rollout_done": True, "dlbox_scenario": "server"}
FAILED = "failed: nvidia-smi -q found 7 of the 8 GPUs the plan expects"


def summary(hostvars):
    return fleet.fleet_summary(hostvars, list(hostvars))


def test_the_acceptance_is_a_column_after_the_fitness_and_a_field_of_each_row():
    got = summary({"s1": dict(DONE, dlbox_rollout_acceptance="passed"),
                   "s2": dict(DONE, dlbox_rollout_acceptance=FAILED),
                   "s3": dict(DONE, dlbox_rollout_acceptance="skipped: dlbox_acceptance is false"),
                   "w1": dict(DONE, dlbox_scenario="workstation")})
    assert [r["acceptance"] for r in got["rows"]] == ["passed", FAILED, "skipped: dlbox_acceptance is false", None]
    header = got["text"][0].split("  ")
    labels = [h.strip() for h in header if h.strip()]
    assert labels[labels.index("fitness") + 1] == "acceptance", labels
    line = {row.split()[0]: row for row in got["text"][2:6]}
    column = got["text"][0].index("acceptance")
    assert line["s2"][column:].startswith(FAILED) and line["w1"][column:].startswith("- "), got["text"]
    md = got["markdown"].splitlines()
    assert "| fitness | acceptance | failure / reason |" in md[2], md[2]
    assert "| - | %s | - |" % FAILED in next(r for r in md if r.startswith("| s2 |")), md
    assert "| - | - | - |" in next(r for r in md if r.startswith("| w1 |")), md


def test_no_acceptance_no_column_and_a_non_text_value_is_refused():
    got = summary({"w1": dict(DONE, dlbox_scenario="workstation")})
    assert "acceptance" not in got["text"][0] and "acceptance" not in got["markdown"]
    assert got["rows"][0]["acceptance"] is None
    with pytest.raises(AnsibleFilterError, match="dlbox_rollout_acceptance of s1 must be text"):
        summary({"s1": dict(DONE, dlbox_rollout_acceptance={"ok": True})})


def test_summary_json_and_md_of_a_rollout_carry_the_acceptance(tmp_path):
    proc, got = standin.rollout(tmp_path, {"h1": {"dlbox_rollout_acceptance": "passed"},
                                           "h2": {"dlbox_rollout_acceptance": FAILED}, "h3": {}}, {})
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "Traceback" not in out, out[-3000:]
    rows = standin.rows(got)
    assert {h: r["acceptance"] for h, r in rows.items()} == {"h1": "passed", "h2": FAILED, "h3": None}, rows
    md = (tmp_path / "reports" / "rollout" / "summary.md").read_text()
    assert "| acceptance |" in md and "| %s |" % FAILED in md, md
