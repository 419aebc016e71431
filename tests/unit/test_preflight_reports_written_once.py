"""playbooks/preflight.yml writes its reports on the controller only where they are missing or their text differs (issue
47: in a no-op re-run the folder and the four reports cost no module run), and still writes each one that is missing or
stale, and the folder when it is gone. A real ansible-playbook run of the fitness report from recorded captures
(tests/fixtures/fitness/collect-dev-vm), on the controller."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CAPTURES = ROOT / "tests" / "fixtures" / "fitness" / "collect-dev-vm"
WRITES = ("Create the report folder on the controller", "Write the host's fitness report on the controller",
          "Write the fleet report on the controller (Markdown, JSON, HTML)")
FILES = ("fitness/collect-dev-vm.json", "fleet.md", "fleet.json", "fleet.html")


def _run(reports: Path) -> dict:
    """One preflight.yml run; each write task -> whether it was skipped everywhere (all its loop items)."""
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json",
               ANSIBLE_COLLECTIONS_PATH=str(ROOT / "build" / "collections"))
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,", "-c", "local",
         "-e", "ansible_python_interpreter=" + sys.executable, str(ROOT / "playbooks" / "preflight.yml"),
         "-e", "dlbox_fitness_captures=%s" % CAPTURES, "-e", "dlbox_report_dir=%s" % reports],
        capture_output=True, text=True, env=env, cwd=str(ROOT), timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    out = json.loads(proc.stdout[proc.stdout.index("{"):])
    tasks = {t["task"]["name"]: t["hosts"]["localhost"] for p in out["plays"] for t in p["tasks"]}
    return {name: tasks[name].get("skipped", False) for name in WRITES}


def _files(reports: Path) -> dict:
    return {f: ((reports / f).read_text(encoding="utf-8"), (reports / f).stat().st_mtime_ns) for f in FILES}


@pytest.fixture(scope="module")
def first(tmp_path_factory):
    reports = tmp_path_factory.mktemp("preflight") / "reports"
    return reports, _run(reports), _files(reports)


def test_the_first_run_writes_the_folder_and_every_report(first):
    reports, skipped, files = first
    assert skipped == dict.fromkeys(WRITES, False)
    assert json.loads(files["fitness/collect-dev-vm.json"][0])["host"] == "collect-dev-vm"
    assert files["fitness/collect-dev-vm.json"][0].endswith("}\n")
    assert "collect-dev-vm" in files["fleet.md"][0] and "collect-dev-vm" in files["fleet.html"][0]
    assert [h["host"] for h in json.loads(files["fleet.json"][0])["hosts"]] == ["collect-dev-vm"]


def test_a_rerun_writes_nothing_and_a_missing_or_stale_report_is_written_again(first):
    reports, files = first[0], first[2]
    assert _run(reports) == dict.fromkeys(WRITES, True)  # no module run for the folder or any report
    assert _files(reports) == files
    (reports / FILES[0]).write_text("{}\n", encoding="utf-8")  # the host's report stale
    (reports / "fleet.md").write_text("stale\n", encoding="utf-8")
    (reports / "fleet.html").unlink()
    assert _run(reports) == {WRITES[0]: True, WRITES[1]: False, WRITES[2]: False}
    again = _files(reports)
    assert {f: pair[0] for f, pair in again.items()} == {f: pair[0] for f, pair in files.items()}
    # of the fleet's three, the stale one and the missing one were written, not the third
    assert again["fleet.json"][1] == files["fleet.json"][1]
    assert again["fleet.md"][1] != files["fleet.md"][1]
    shutil.rmtree(reports)
    assert _run(reports) == dict.fromkeys(WRITES, False)
    assert {f: pair[0] for f, pair in _files(reports).items()} == {f: pair[0] for f, pair in files.items()}
