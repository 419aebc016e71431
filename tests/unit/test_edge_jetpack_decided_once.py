# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""JetPack is decided once in an edge run (issue 47, rt47c M1: "edge.yml still decides jetpack twice per host").
edge.yml runs the jetpack role's preflight before any change (tasks_from) and then the whole role, whose main.yml
runs the preflight again; both includes get ``__jetpack_kept_decision``: nothing at the preflight (it decides), the
decision it kept at the role, which main.yml keeps without reading the host or checking the PyTorch source again.
Every playbook that reaches a role's preflight through tasks_from and then the role hands the decision over the same
way. The role's own main.yml and preflight.yml are run here by real Ansible, as edge.yml runs them, on one host whose
L4T release changes between the two (which, decided again, is another decision)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
ROLE = ROOT / "roles" / "jetpack"
KEPT = "{{ __jetpack_decided | default(none) }}"
DECIDE = "Decide what to install and set"
READ = "Read the L4T release, the device-tree model, the power modes, the flashed sources list and nvpmodel's status"
RELEASES = ROOT / "tests" / "fixtures" / "jetson" / "nv_tegra_release"
PLAN_ORIN = {"stack": {"jetpack": {"version": "6.2", "l4t": "36.4.3", "family": "orin"}}}


def _includes(node, found):
    if isinstance(node, list):
        for item in node:
            _includes(item, found)
    elif isinstance(node, dict):
        include = node.get("ansible.builtin.include_role") or node.get("include_role")
        if isinstance(include, dict) and str(include.get("name", "")).startswith("dlbox.stack."):
            found.append((include["name"].split(".")[-1], include.get("tasks_from"), node.get("vars") or {}))
        for key in ("tasks", "pre_tasks", "post_tasks", "block", "rescue", "always"):
            _includes(node.get(key) or [], found)
    return found


def preflight_then_role(root=ROOT):
    """(playbook, role, vars of each include) for every role a playbook reaches through tasks_from preflight.yml and
    then as a whole role."""
    out = []
    for path in sorted((root / "playbooks").rglob("*.yml")):
        found = _includes(yaml.safe_load(path.read_text(encoding="utf-8")), [])
        for role in sorted({f[0] for f in found if f[1] == "preflight.yml"}):
            if any(f[0] == role and f[1] is None for f in found):
                out.append((str(path.relative_to(root)), role,
                            [v for r, tasks_from, v in found if r == role and tasks_from in ("preflight.yml", None)]))
    return out


def test_every_preflight_then_role_hands_over_the_kept_decision():
    found = preflight_then_role()
    assert {f[:2] for f in found} >= {("playbooks/edge.yml", "jetpack"), ("playbooks/edge.yml", "docker")}
    problems = ["%s: %s's include %d has no __%s_kept_decision: '{{ __%s_decision | default(none) }}'"
                % (where, role, i, role, role) for where, role, kept in found for i, v in enumerate(kept)
                if not re.fullmatch(r"\{\{ __%s_(decision|decided) \| default\(none\) \}\}" % role,
                                    str(v.get("__%s_kept_decision" % role, "")))]
    assert problems == []


def test_both_jetpack_includes_of_edge_hand_over_the_kept_decision():
    found = [f for f in preflight_then_role() if f[:2] == ("playbooks/edge.yml", "jetpack")]
    assert len(found) == 1 and len(found[0][2]) == 2
    assert all(v["__jetpack_kept_decision"] == KEPT for v in found[0][2])


def _run(tmp_path, kept):
    """edge.yml's two steps on one host: the preflight (tasks_from), then the role's main.yml up to its own preflight
    and the keep; between them the host's L4T release moves from r36.4.3 to r36.4.4 (decided again: refused, the plan
    holds 36.4.3). ``kept``: hand the kept decision over as edge does. -> (names of the tasks run, their results)."""
    sys.path.insert(0, str(ROOT / "tests" / "unit" / "roles"))
    from play_runner import run_play  # pylint: disable=import-outside-toplevel,import-error

    release = tmp_path / "nv_tegra_release"
    release.write_text((RELEASES / "agx-orin-r36.4.3.txt").read_text(encoding="utf-8"), encoding="utf-8")
    model = tmp_path / "model"
    model.write_text("NVIDIA Jetson AGX Orin Developer Kit\x00", encoding="utf-8")
    none = str(tmp_path / "none")
    role = {}
    for part in ("defaults", "vars"):   # the role's variables, as a role run has them
        role.update(yaml.safe_load((ROLE / part / "main.yml").read_text(encoding="utf-8")) or {})
    role.update(__jetpack_release_file=str(release), jetpack_device_tree_model_path=str(model),
                __jetpack_nvpmodel_conf=none, __jetpack_nvpmodel_status=none, __jetpack_preinstalled_list=none,
                __jetpack_preinstalled_aside=none, __jetpack_nvpmodel=none, __jetpack_jetson_clocks=none,
                jetpack_pytorch_check=False, jetpack_clocks=None, jetpack_power_mode="", dlbox_plan=PLAN_ORIN)
    main = yaml.safe_load((ROLE / "tasks" / "main.yml").read_text(encoding="utf-8"))
    steps = [t for t in main if "preflight" in t["name"].lower() or "decision" in t["name"]
             or "preflight.yml" in str(t.get("ansible.builtin.include_tasks"))]
    assert [t["name"] for t in steps] == ["Check the host, the plan and the variables before changing anything",
                                          "Keep the decision this run's preflight took (handed over, not taken again)"]
    steps[0]["ansible.builtin.include_tasks"]["file"] = str(ROLE / "tasks" / "preflight.yml")
    handed = {"__jetpack_kept_decision": KEPT} if kept else {}
    tasks = [{"name": "edge: the jetpack role's preflight", "ansible.builtin.include_tasks": str(ROLE / "tasks" / "preflight.yml"),
              "vars": handed},
             {"name": "show preflight", "ansible.builtin.debug": {"var": "__jetpack_decided"}},
             {"name": "the host moves to r36.4.4", "ansible.builtin.copy": {
                 "content": (RELEASES / "agx-orin-r36.4.4.txt").read_text(encoding="utf-8"), "dest": str(release)}},
             {"name": "edge: the role", "block": steps, "vars": handed},
             {"name": "show role", "ansible.builtin.debug": {"var": "__jetpack_decided"}}]
    play = {"hosts": "all", "gather_facts": False, "vars": role, "tasks": tasks}
    proc, out = run_play(tmp_path, play, {"h": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}})
    assert out is not None, proc.stderr[-2000:]
    ran = [t for t in out["plays"][0]["tasks"] if not t["hosts"]["h"].get("skipped")]
    return [t["task"]["name"] for t in ran], {t["task"]["name"]: t["hosts"]["h"] for t in ran}


def test_the_role_keeps_the_preflights_decision_and_reads_nothing_again(tmp_path):
    names, results = _run(tmp_path, kept=True)
    assert names.count(DECIDE) == 1 and names.count(READ) == 1, names
    first, second = results["show preflight"]["__jetpack_decided"], results["show role"]["__jetpack_decided"]
    assert first["ok"] and first["errors"] == []
    assert second == first


def test_without_the_kept_decision_the_role_reads_and_decides_again(tmp_path):
    """The control: the same run without the hand-over reads the host and decides twice, the second time on r36.4.4."""
    names, results = _run(tmp_path, kept=False)
    assert names.count(DECIDE) == 2 and names.count(READ) == 2, names
    assert "show role" not in results           # decided again and refused: the play stops at the refusal
    assert results["Refuse what cannot work on this host"].get("failed")
    assert "36.4.4" in results["Refuse what cannot work on this host"]["msg"]
