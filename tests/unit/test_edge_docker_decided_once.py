# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Docker is decided once in an edge run (issue 47; closing8: "edge.yml runs docker's preflight and then the role:
docker decides twice"). edge.yml runs the docker role's preflight before any change and the role after JetPack; both
includes get the same variables, among them ``__docker_kept_decision``: nothing at the preflight (it decides), the
decision the preflight kept at the install (the role's decide.yml keeps it instead of taking it again). The role's
decide.yml is run here by real Ansible, twice on one host as edge.yml runs it, with facts that would decide otherwise
the second time."""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
EDGE = yaml.safe_load((ROOT / "playbooks" / "edge.yml").read_text(encoding="utf-8"))
KEPT = "{{ __docker_decision | default(none) }}"


def _includes(node):
    if isinstance(node, list):
        for item in node:
            yield from _includes(item)
    elif isinstance(node, dict):
        if node.get("ansible.builtin.include_role", {}).get("name") == "dlbox.stack.docker":
            yield node
        for key in ("tasks", "block", "rescue", "always"):
            yield from _includes(node.get(key) or [])


def test_both_docker_includes_of_edge_hand_over_the_kept_decision():
    found = list(_includes(EDGE))
    assert [i["ansible.builtin.include_role"].get("tasks_from") for i in found] == ["preflight.yml", None]
    assert all(i["vars"]["__docker_kept_decision"] == KEPT for i in found)


def _run(tmp_path, kept):
    """decide.yml twice on one host: before any change (no engine), then with the distribution's docker.io installed
    (which, decided again with the role's default docker_source docker-ce, is a refusal); ``kept``: hand over the kept
    decision as edge does."""
    sys.path.insert(0, str(ROOT / "tests" / "unit" / "roles"))
    from play_runner import run_play  # pylint: disable=import-outside-toplevel,import-error

    decide = str(ROOT / "roles" / "docker" / "tasks" / "decide.yml")
    facts = {"packages": {}, "users": [], "iptables_probe": "", "systemd_booted": False, "execstart": "",
             "distribution_release": "jammy", "host": "h"}
    later = dict(facts, packages={"docker.io": [{"version": "28.2.2-0ubuntu1~22.04.1"}]})
    handed = {"__docker_kept_decision": KEPT} if kept else {}
    tasks = []
    for label, given in (("preflight", facts), ("install", later)):
        tasks.append({"name": label, "ansible.builtin.include_tasks": decide,
                      "vars": dict(handed, __docker_decide_facts=given)})
        tasks.append({"name": "show " + label, "ansible.builtin.debug": {"var": "__docker_decision"}})
    role = {}
    for part in ("defaults", "vars"):   # the role's variables, as a role run has them
        role.update(yaml.safe_load((ROOT / "roles" / "docker" / part / "main.yml").read_text(encoding="utf-8")) or {})
    play = {"hosts": "all", "gather_facts": True, "gather_subset": ["min"], "vars": role, "tasks": tasks}
    proc, out = run_play(tmp_path, play, {"h": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}})
    assert out is not None, proc.stderr[-2000:]
    shown = [t["hosts"]["h"]["__docker_decision"] for t in out["plays"][0]["tasks"] if t["task"]["name"].startswith("show")]
    return shown


def test_the_install_keeps_the_preflights_decision(tmp_path):
    first, second = _run(tmp_path, kept=True)
    assert first["problems"] == [] and first["source"] == "docker-ce" and not first["installed"]
    assert second == first


def test_without_the_kept_decision_the_install_decides_again(tmp_path):
    """The control: the same two runs without the hand-over decide twice, the second on the later facts."""
    first, second = _run(tmp_path, kept=False)
    assert first["problems"] == []
    assert second != first and "already has docker.io installed" in " ".join(second["problems"])
