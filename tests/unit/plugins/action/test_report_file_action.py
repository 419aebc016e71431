"""dlbox.stack.report_file: the controller writes its own reports (the fleet summary, the stack summary) without a
Python interpreter per file (make bench, issue 47's no-op re-run). Written when different, nothing touched when the
same, nothing written in check mode, a file that cannot be written fails with the reason and no ``dest`` (the fleet
summary's warning reads exactly that: rollout_report.yml). Real ansible-playbook runs on the controller, plus the pure
function."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from ansible_collections.dlbox.stack.plugins.action.report_file import write_report

ROOT = Path(__file__).resolve().parents[4]


def test_written_when_different_untouched_when_the_same(tmp_path):
    dest = tmp_path / "a" / "b" / "summary.json"
    assert write_report(str(dest), "{}\n") == (True, "written")
    assert dest.read_text() == "{}\n" and stat.S_IMODE(dest.stat().st_mode) == 0o644
    assert stat.S_IMODE(dest.parent.stat().st_mode) & 0o755 == 0o755
    before = dest.stat().st_mtime_ns
    os.utime(dest, ns=(before - 10**9, before - 10**9))
    assert write_report(str(dest), "{}\n") == (False, "unchanged")
    assert dest.stat().st_mtime_ns == before - 10**9  # not rewritten
    assert write_report(str(dest), "{}\n", mode="0600") == (True, "mode set")
    assert stat.S_IMODE(dest.stat().st_mode) == 0o600
    assert write_report(str(dest), "[]\n", mode="0600") == (True, "written") and dest.read_text() == "[]\n"
    assert [p.name for p in dest.parent.iterdir()] == ["summary.json"]  # no temporary file left


def test_a_relative_dest_is_from_the_controllers_working_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert write_report("out/summary.json", "{}\n") == (True, "written")
    assert (tmp_path / "out" / "summary.json").read_text() == "{}\n"


def test_check_mode_writes_nothing(tmp_path):
    dest = tmp_path / "r" / "summary.md"
    assert write_report(str(dest), "x", check=True) == (True, "would be written (check mode)")
    assert not dest.parent.exists()


@pytest.mark.parametrize("dest, content, mode, words", [
    ("", "x", "0644", "must be a path"),
    ("/tmp/x", {"a": 1}, "0644", "content must be a string"),
    ("/tmp/x", "x", "rw-r--r--", "octal string"),
    ("/tmp/x", "x", "99999", "octal string"),
    ("/tmp/x", "x", "077777", "not a file mode"),
])
def test_bad_input_is_refused_naming_what(dest, content, mode, words):
    with pytest.raises(ValueError, match=words):
        write_report(dest, content, mode)


def _play(tmp_path, tasks, check=False):
    play = tmp_path / "play.yml"
    play.write_text("- hosts: localhost\n  gather_facts: false\n  tasks:\n" + tasks)
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(ROOT / "build" / "collections"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_STDOUT_CALLBACK="ansible.builtin.default", ANSIBLE_CALLBACK_RESULT_FORMAT="json")
    argv = [str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,", "-c", "local", str(play)]
    return subprocess.run(argv + (["--check"] if check else []), env=env, capture_output=True, text=True, timeout=300,
                          check=False)


def test_a_real_run_writes_then_changes_nothing_and_check_mode_writes_nothing(tmp_path):
    dest = tmp_path / "reports" / "rollout" / "summary.json"
    tasks = ("    - dlbox.stack.report_file:\n        dest: %s\n        content: \"{{ {'a': 1} | to_nice_json }}\"\n"
             "      register: w\n    - ansible.builtin.debug: {var: w}\n" % dest)
    first = _play(tmp_path, tasks)
    assert first.returncode == 0 and "changed=1" in first.stdout, first.stdout[-2000:] + first.stderr[-2000:]
    assert json.loads(dest.read_text()) == {"a": 1}
    again = _play(tmp_path, tasks)
    assert again.returncode == 0 and "changed=0" in again.stdout and '"msg": "unchanged"' in again.stdout, again.stdout
    other = tmp_path / "other" / "summary.json"
    checked = _play(tmp_path, tasks.replace(str(dest), str(other)), check=True)
    assert checked.returncode == 0 and "changed=1" in checked.stdout, checked.stdout[-2000:]
    assert not other.parent.exists()


def test_a_file_that_cannot_be_written_fails_with_the_reason_and_no_dest(tmp_path):
    blocker = tmp_path / "reports"
    blocker.write_text("a file where the folder should be\n")
    tasks = ("    - dlbox.stack.report_file:\n        dest: %s/rollout/summary.md\n        content: x\n"
             "      register: w\n      failed_when: false\n"
             "    - ansible.builtin.assert:\n        that: [w.dest is not defined, \"'was not written' in w.msg\"]\n"
             "        fail_msg: \"{{ w | to_json }}\"\n    - ansible.builtin.debug: {var: w}\n" % blocker)
    got = _play(tmp_path, tasks)
    assert got.returncode == 0, got.stdout[-3000:] + got.stderr[-2000:]
    assert "Not a directory" in got.stdout or "File exists" in got.stdout, got.stdout[-3000:]


def test_unknown_and_missing_options_are_named(tmp_path):
    got = _play(tmp_path, "    - dlbox.stack.report_file:\n        path: /tmp/x\n        content: x\n")
    assert got.returncode != 0 and "unknown: path; missing: dest" in got.stdout, got.stdout[-2000:]
