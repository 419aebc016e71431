"""The drain's check (playbooks/tasks/rollout_drain.yml) with the lab's Slurm example (inventories/lab/group_vars/
all.yml), real ansible-playbook over the local connection (issue 50 red team LOW 12): a state with Slurm's suffix
(drained*: not responding) is drained; a node the scheduler does not know (sinfo -n prints nothing) makes the check
exit 2, and the host fails at once with that reason, untouched, instead of polling to dlbox_drain_timeout.

FIXTURE scheduler: a `sinfo` script on PATH printing the state file of the node given to -n (nothing for an unknown
node), and a `scontrol` that records its calls. NOT Slurm."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
sys.path.insert(0, str(ROOT / "tools"))
from dlboxdata import collection  # noqa: E402  pylint: disable=wrong-import-position,import-error
# the lab's example check, as inventories/lab/group_vars/all.yml gives it
CHECK = ('s=$(sinfo -h -n {{ inventory_hostname_short }} -o %T) && [ -n "$s" ] || exit 2; '
         'case "$s" in drained*) exit 0;; esac; echo "$s"; exit 1')

PLAY = """
- name: Drain and wait
  hosts: all
  gather_facts: false
  tasks:
    - name: The rollout's drain and wait
      block:
        - name: Drain, wait
          ansible.builtin.include_tasks: %s
          vars:
            __dlbox_rollout_scenario: test
        - name: The change (a marker)
          ansible.builtin.copy:
            content: "changed\\n"
            dest: "{{ test_dir }}/changed-{{ inventory_hostname }}"
            mode: "0644"
      rescue:
        - name: Record the failure
          ansible.builtin.set_fact:
            dlbox_failure: {task: "{{ ansible_failed_task.name }}", message: "{{ ansible_failed_result.msg }}"}
    - name: Write what happened
      ansible.builtin.copy:
        content: "{{ {'failure': dlbox_failure | default(none)} | to_json }}"
        dest: "{{ test_dir }}/result-{{ inventory_hostname }}.json"
        mode: "0644"
""" % (ROOT / "playbooks" / "tasks" / "rollout_begin.yml")


def test_the_labs_check_accepts_a_suffixed_state_and_fails_an_unknown_node_at_once(tmp_path):
    assert CHECK in (ROOT / "inventories" / "lab" / "group_vars" / "all.yml").read_text()
    fake = tmp_path / "bin"
    fake.mkdir()
    states = tmp_path / "states"
    states.mkdir()
    (states / "node-a").write_text("drained*\n")                        # drained, not responding
    (fake / "sinfo").write_text('#!/bin/sh\n# FIXTURE sinfo -h -n NODE -o %%T\ncat "%s/$3" 2>/dev/null\nexit 0\n' % states)
    (fake / "sinfo").chmod(0o755)
    inventory = {"all": {"vars": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable, "test_dir": str(tmp_path),
        "dlbox_scheduler_host": "localhost", "dlbox_drain_command": "true", "dlbox_drain_check_command": CHECK,
        "dlbox_drain_check_interval": 1, "dlbox_drain_timeout": 60, "dlbox_report_dir": str(tmp_path / "reports")},
        "hosts": {"node-a.lab": {}, "node-b.lab": {}}}}
    (tmp_path / "hosts.yml").write_text(json.dumps(inventory))
    (tmp_path / "play.yml").write_text(PLAY)
    collection.importable()
    base = next(p for p in sys.path if (Path(p) / "ansible_collections" / "dlbox" / "stack").resolve() == ROOT)
    env = {"PATH": "%s:%s:/usr/bin:/bin" % (fake, BIN), "ANSIBLE_CONFIG": str(tmp_path / "none.cfg"),
           "ANSIBLE_NOCOLOR": "1", "HOME": str(tmp_path), "ANSIBLE_LOCAL_TEMP": str(tmp_path / "tmp"),
           "ANSIBLE_COLLECTIONS_PATH": base}
    start = time.monotonic()
    proc = subprocess.run([str(BIN / "ansible-playbook"), "-i", str(tmp_path / "hosts.yml"), str(tmp_path / "play.yml")],
                          capture_output=True, text=True, check=False, env=env, timeout=300)
    took = time.monotonic() - start
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    a = json.loads((tmp_path / "result-node-a.lab.json").read_text())
    b = json.loads((tmp_path / "result-node-b.lab.json").read_text())
    assert a == {"failure": None} and (tmp_path / "changed-node-a.lab").is_file(), a
    assert b["failure"]["message"].startswith("node-b.lab could not be checked by the scheduler (it may not know the "
                                              "node) (dlbox_drain_check_command on localhost exited 2)"), b
    assert not (tmp_path / "changed-node-b.lab").exists()
    assert "FAILED - RETRYING" not in proc.stdout                  # no polling: not 60 s of retries
    assert took < 55, took
