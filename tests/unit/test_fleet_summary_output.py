"""The summary role's JSON on the controller (summary_output) with a host lost after its changes (issue 50, this stop's
item 2): the lost host has no summary_report (its probe was unreachable: the scenarios run the role with
ignore_unreachable, so the host stays in its batch for the fleet summary), and the file lists it with its status and
step; the other host's entry is its summary, as before.

Real ansible-playbook and the real role (roles/summary, its probe over the local connection on this machine). FIXTURE:
the host "lost" is given an SSH port that refuses before the summary (as one never back from its reboot), and the
rollout step a scenario leaves (dlbox_rollout_step). Before the fix: the write read every host's summary_report and
failed with the lost host's undefined ("'summary_report' is undefined"); the lost host first in the play, the write
was skipped with the block (run_once reads the first host's condition) and no file was written.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
sys.path.insert(0, str(ROOT / "tools"))
from dlboxdata import collection  # noqa: E402  pylint: disable=wrong-import-position,import-error

PLAY = """
- name: Summaries with a host lost after its changes
  hosts: all
  gather_facts: false
  tasks:
    - name: Lose the host (its connection refuses from here on), at the step a scenario notes
      ansible.builtin.set_fact:
        dlbox_rollout_step: "workstation: framework virtualenvs"
        ansible_port: 1
        ansible_connection: ssh
        ansible_host: 127.0.0.1
      when: test_lost | default(false)

    - name: Summarize (a lost host stays, as in the scenarios)
      ignore_unreachable: true
      block:
        - name: The summary role
          ansible.builtin.include_role:
            name: dlbox.stack.summary
          vars:
            summary_step: report
            summary_output: "{{ test_output }}"
"""


def _run(work, hosts):
    """The play on ``hosts`` (name -> variables, in order); (process, the JSON or None)."""
    work.mkdir(parents=True, exist_ok=True)
    output = work / "summary.json"
    inventory = {"all": {"vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                                  "test_output": str(output)},
                         "hosts": hosts}}
    (work / "hosts.yml").write_text(json.dumps(inventory))
    (work / "play.yml").write_text(PLAY)
    collection.importable()
    base = next(p for p in sys.path if (Path(p) / "ansible_collections" / "dlbox" / "stack").resolve() == ROOT)
    env = {"PATH": "%s:/usr/bin:/bin" % BIN, "ANSIBLE_CONFIG": str(work / "none.cfg"), "ANSIBLE_NOCOLOR": "1",
           "HOME": str(work), "ANSIBLE_LOCAL_TEMP": str(work / "tmp"), "ANSIBLE_COLLECTIONS_PATH": base,
           "LC_ALL": "C.UTF-8", "ANSIBLE_INTERNAL_POLL_INTERVAL": "0.005"}
    proc = subprocess.run([str(BIN / "ansible-playbook"), "-i", str(work / "hosts.yml"), str(work / "play.yml")],
                          capture_output=True, text=True, check=False, env=env, timeout=300, cwd=work)
    return proc, (json.loads(output.read_text()) if output.is_file() else None)


def test_the_json_lists_a_lost_host_with_its_status_and_step(tmp_path):
    # the lost host first: the write is run_once, and must not go with the lost host's skipped block
    proc, got = _run(tmp_path / "two", {"lost": {"test_lost": True}, "ok": {}})
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "Traceback" not in out, out[-3000:]
    assert got is not None, out[-3000:]
    assert sorted(got) == ["lost", "ok"], got
    lost = got["lost"]
    assert {k: lost[k] for k in ("host", "status", "step")} == {
        "host": "lost", "status": "unreachable", "step": "workstation: framework virtualenvs"}, lost
    assert "port 1" in lost["message"], lost                 # ssh's own words: connect to host 127.0.0.1 port 1 ...
    # the reached host's entry is its summary, as before (the summary role's report, no status record)
    assert "status" not in got["ok"] and {"installed", "changed", "text"} <= set(got["ok"]), sorted(got["ok"])


def test_a_play_of_one_lost_host_writes_its_record(tmp_path):
    proc, got = _run(tmp_path / "one", {"lost": {"test_lost": True}})
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "Traceback" not in out, out[-3000:]
    assert got is not None and got["status"] == "unreachable" and got["host"] == "lost", (got, out[-3000:])
    assert got["step"] == "workstation: framework virtualenvs", got
