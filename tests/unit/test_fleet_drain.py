"""Drain and wait (playbooks/tasks/rollout_begin.yml), run with real ansible-playbook over the local connection: the
drain command runs on dlbox_scheduler_host, then the check command is polled there until it exits 0, or past
dlbox_drain_timeout the host fails with the reason, untouched. The commands are command lines as an operator types
them: the lab's Slurm check is a pipe (sinfo -h -n NODE -o %T | grep -qx drained, inventories/lab/group_vars/all.yml).

FIXTURE scheduler: a state file per node, 'draining' from the drain, 'drained' at the third check (its job
ended), or never. And the lab's Slurm example itself (issue 50 red team LOW 12): a `sinfo` script on PATH printing the
state file of the node given to -n (nothing for an unknown node): a state with Slurm's suffix (drained*: not responding)
is drained; a node the scheduler does not know makes the check exit 2, and the host fails at once with that reason,
untouched, instead of polling to dlbox_drain_timeout. NOT Slurm."""

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
        content: "{{ {'failure': dlbox_failure | default(none), 'step': dlbox_rollout_step} | to_json }}"
        dest: "{{ test_dir }}/result-{{ inventory_hostname }}.json"
        mode: "0644"
""" % (ROOT / "playbooks" / "tasks" / "rollout_begin.yml")


def _play(tmp_path, inventory, path):
    """The drain-and-wait play (PLAY) on ``inventory`` with real ansible-playbook, ``path`` first on PATH."""
    (tmp_path / "hosts.yml").write_text(json.dumps(inventory))
    (tmp_path / "play.yml").write_text(PLAY)
    # rollout_begin.yml includes rollout_report.yml (dlbox.stack's filters and show_text): this checkout's collection
    collection.importable()
    base = next(p for p in sys.path if (Path(p) / "ansible_collections" / "dlbox" / "stack").resolve() == ROOT)
    env = {"PATH": "%s:%s:/usr/bin:/bin" % (path, BIN), "ANSIBLE_CONFIG": str(tmp_path / "none.cfg"), "ANSIBLE_NOCOLOR": "1",
           "HOME": str(tmp_path), "ANSIBLE_LOCAL_TEMP": str(tmp_path / "tmp"), "ANSIBLE_COLLECTIONS_PATH": base}
    return subprocess.run([str(BIN / "ansible-playbook"), "-i", str(tmp_path / "hosts.yml"), str(tmp_path / "play.yml")],
                          capture_output=True, text=True, check=False, env=env, timeout=300)


def test_the_rollout_waits_for_a_piped_check_and_fails_a_host_never_drained_untouched(tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    # the drain: the node is draining until its job ends, at the third check (or never); the check gives the state
    # as sinfo's %T would, through a pipe
    node = "%s/{{ inventory_hostname }}" % state
    drain = "echo {{ test_checks_to_drain }} > " + node
    check = ("n=$(cat %s); echo $((n - 1)) > %s; if [ $n -le 1 ]; then echo drained; else echo draining; fi"
             " | grep -qx drained" % (node, node))
    inventory = {"all": {"vars": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable, "test_dir": str(tmp_path),
        "dlbox_rollout_state_dir": "%s/marks/{{ inventory_hostname }}" % tmp_path,
        "dlbox_scheduler_host": "localhost", "dlbox_drain_command": drain, "dlbox_drain_check_command": check,
        "dlbox_drain_check_interval": 1, "dlbox_drain_timeout": 2},
        # node-a's wait has room for its three checks whatever the load (the wait ends by the controller's clock since
        # ba9f9e9, rt50d L1: with 2 s, a loaded CI machine passed the deadline before its third check)
        "hosts": {"node-a": {"test_checks_to_drain": 3, "dlbox_drain_timeout": 60},
                  "node-b": {"test_checks_to_drain": 99999}}}}
    proc = _play(tmp_path, inventory, str(BIN))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    a = json.loads((tmp_path / "result-node-a.json").read_text())
    b = json.loads((tmp_path / "result-node-b.json").read_text())
    assert a == {"failure": None, "step": "test: baseline (common)"}, a
    assert (tmp_path / "changed-node-a").is_file()                              # changed once drained
    # the rollout's own drain is recorded on each host it drained (rollout_finish.yml removes it after the resume)
    assert (tmp_path / "marks" / "node-a" / "drained").is_file() and (tmp_path / "marks" / "node-b" / "drained").is_file()
    assert b["failure"]["task"] == "Fail the host, untouched, when it was not drained in time", b
    assert b["failure"]["message"].startswith("node-b was not drained within 2 s (dlbox_drain_check_command on "
                                              "localhost exited 1)"), b
    assert not (tmp_path / "changed-node-b").exists()                          # untouched
    # it polled: node-a's check twice before its job ended; node-b's until the 2 s had passed by the controller's clock
    # (how many tries fit in 2 s depends on the machine's load: on a loaded one, the first try may end past it)
    assert proc.stdout.count("FAILED - RETRYING: [node-a -> localhost]") == 2, proc.stdout[-3000:]
    assert (state / "node-a").read_text().strip() == "0"
    assert 99999 - int((state / "node-b").read_text()) >= 1, (state / "node-b").read_text()


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
        "dlbox_rollout_state_dir": "%s/marks/{{ inventory_hostname }}" % tmp_path,
        "dlbox_scheduler_host": "localhost", "dlbox_drain_command": "true", "dlbox_drain_check_command": CHECK,
        "dlbox_drain_check_interval": 1, "dlbox_drain_timeout": 60, "dlbox_report_dir": str(tmp_path / "reports")},
        "hosts": {"node-a.lab": {}, "node-b.lab": {}}}}
    start = time.monotonic()
    proc = _play(tmp_path, inventory, str(fake))
    took = time.monotonic() - start
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    a = json.loads((tmp_path / "result-node-a.lab.json").read_text())
    b = json.loads((tmp_path / "result-node-b.lab.json").read_text())
    assert a == {"failure": None, "step": "test: baseline (common)"} and (tmp_path / "changed-node-a.lab").is_file(), a
    assert b["failure"]["message"].startswith("node-b.lab could not be checked by the scheduler (it may not know the "
                                              "node) (dlbox_drain_check_command on localhost exited 2)"), b
    assert not (tmp_path / "changed-node-b.lab").exists()
    assert "FAILED - RETRYING" not in proc.stdout                  # no polling: not 60 s of retries
    assert took < 55, took
