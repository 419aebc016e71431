# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The IMEX readiness tasks of roles/nvidia_driver/tasks/fabric_blackwell_start.yml run by Ansible (connection local)
against a stand-in ``nvidia-imex-ctl`` that prints the recorded outputs of tests/fixtures/imex (``-q``: the daemon's word,
``-N``: the domain). The FIXTURE GB200 tray (tests/fixtures/gpu_host/gb200, molecule/gpu_host_blackwell, heavy) runs them whole; this is
where the wait is run: READY goes on and keeps the domain, a daemon that stays INITIALIZING fails after the wait, one
SHUTTING_DOWN fails at once, no nvidia-imex-ctl is said and not failed."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml
from play_runner import run_play  # tests/unit/roles/play_runner.py, beside this file

ROOT = Path(__file__).resolve().parents[3]
TASKS = ROOT / "roles" / "nvidia_driver" / "tasks" / "fabric_blackwell_start.yml"
IMEX = ROOT / "tests" / "fixtures" / "imex"
MINE = ("Wait until IMEX reports READY (nvidia-imex-ctl -q)", "Read IMEX's domain (nvidia-imex-ctl -N)",
        "Keep IMEX's state", "Say what IMEX's domain lacks (the other trays) or that IMEX gave no state")


def _tasks():
    block = [t for t in yaml.safe_load(TASKS.read_text(encoding="utf-8")) if "block" in t and
             any(b.get("name") == MINE[0] for b in t["block"])][0]
    tasks = [t for t in block["block"] if t.get("name") in MINE]
    assert [t["name"] for t in tasks] == list(MINE)
    return tasks


# one play, one host per case (one ansible-playbook run: its start is most of the time)
CASES = {"ready": ("READY", "EDITED-imex-ctl-q-N-s-2-nodes-one-unavailable.txt"),
         "up": ("READY", "imex-ctl-q-N-s-2-nodes-gh200-dra-repro.txt"),
         "initializing": ("INITIALIZING", "EDITED-imex-ctl-q-N-s-2-nodes-one-unavailable.txt"),
         "shutting-down": ("SHUTTING_DOWN", "EDITED-imex-ctl-q-N-s-2-nodes-one-unavailable.txt"),
         "absent": (None, None)}


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("imex")
    hosts = {}
    for name, (word, domain_file) in CASES.items():
        stubs = tmp_path / name
        stubs.mkdir()
        if word is not None:
            stub = stubs / "nvidia-imex-ctl"
            stub.write_text("#!/bin/sh\ncase \"$1\" in -q) echo %s;; -N) sed -n '/^Connectivity/,/^Domain State/p' '%s';; esac\n"
                            % (word, IMEX / domain_file), encoding="utf-8")
            stub.chmod(0o755)
        hosts[name] = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                       "stub_path": "%s:/usr/bin:/bin" % stubs}
    collections = tmp_path / "collections" / "ansible_collections" / "dlbox"
    collections.mkdir(parents=True)
    (collections / "stack").symlink_to(ROOT, target_is_directory=True)
    play = {"hosts": "all", "gather_facts": False, "environment": {"PATH": "{{ stub_path }}"},
            "vars": {"__nvidia_driver_fabric_timeout": 2, "__nvidia_driver_fabric_delay": 1,
                     "__nvidia_driver_version": "570.172.08"},
            "tasks": _tasks()}
    # forks: Ansible's default 5 runs the hosts side by side
    _proc, out = run_play(tmp_path, play, hosts, env={"ANSIBLE_COLLECTIONS_PATH": str(tmp_path / "collections")})
    return dict((name, dict((t["task"]["name"], t["hosts"][name]) for t in out["plays"][0]["tasks"] if name in t["hosts"]))
                for name in CASES), out["stats"]


def test_ready_goes_on_and_keeps_the_domain_with_its_warning(ran):
    tasks, stats = ran
    assert stats["ready"]["failures"] == 0
    kept = tasks["ready"]["Keep IMEX's state"]["ansible_facts"]["nvidia_driver_imex"]
    assert kept["ready"] and kept["domain"]["state"] == "DEGRADED"
    assert tasks["ready"][MINE[3]]["msg"][0].startswith("IMEX domain DEGRADED: node(s) not READY: #1 10.136.206.48 UNAVAILABLE")


def test_an_up_domain_says_nothing(ran):
    tasks, stats = ran
    assert stats["up"]["failures"] == 0 and tasks["up"][MINE[3]].get("skipped")


@pytest.mark.parametrize(("host", "word", "attempts"), [("initializing", "INITIALIZING", 2), ("shutting-down", "SHUTTING_DOWN", 1)])
def test_a_daemon_not_ready_fails_the_wait(ran, host, word, attempts):
    tasks, stats = ran
    assert stats[host]["failures"] == 1
    wait = tasks[host][MINE[0]]
    assert wait["failed"] and wait["stdout"] == word and wait["attempts"] == attempts
    assert MINE[2] not in tasks[host]


def test_without_nvidia_imex_ctl_it_is_said_not_failed(ran):
    tasks, stats = ran
    assert stats["absent"]["failures"] == 0
    assert not tasks["absent"]["Keep IMEX's state"]["ansible_facts"]["nvidia_driver_imex"]["judged"]
    assert "gave no IMEX state" in tasks["absent"][MINE[3]]["msg"][-1]
