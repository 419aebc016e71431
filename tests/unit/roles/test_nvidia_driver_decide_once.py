# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The nvidia_driver role decides once per host per run (issue 47): its own decision tasks, run by real Ansible
(connection local) with vars/main.yml (the rest of the role's variables: its argument specs' defaults), in the order of a branch change: the preflight's
decision, apt's verdict (check.yml), the copies (keep.yml), the check after the install (install.yml) and the rollback
(rollback.yml). Each later task updates the kept decision through dlbox.stack.role_decide('nvidia_driver', ...); the
result is the planner's own decision with every fact at once (plugin_utils.nvidia_driver_plan.decide, as the role's
YAML called it before), and the decisions that were YAML (Fabric Manager's names, nvidia-persistenced) come with it.
apt's outputs: the fixture repository's names of test_nvidia_driver_plan.py (tests/aptrepo's cuda-debian12 specs)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml
from play_runner import run_play  # tests/unit/roles/play_runner.py, beside this file

from ansible_collections.dlbox.stack.plugins.module_utils import _nvidia_driver as nd
from ansible_collections.dlbox.stack.plugins.plugin_utils import nvidia_driver_plan as ndp
from ansible_collections.dlbox.stack.plugins.plugin_utils.compat_data import load_compat
from ansible_collections.dlbox.stack.plugins.plugin_utils.roles import nvidia_driver as mod

ROOT = Path(__file__).resolve().parents[3]
ROLE = ROOT / "roles" / "nvidia_driver"
sys.path.insert(0, str(ROOT / "tests" / "unit" / "plugins" / "plugin_utils"))
from test_nvidia_driver_plan import MADISON, R580, SIM_595, installed, repo_plan  # noqa: E402  pylint: disable=wrong-import-position

AFTER = installed(*[(n, "595.71.05-1") for n in ("nvidia-open-595", "nvidia-driver", "nvidia-driver-cuda", "nvidia-kernel-open-dkms",
                                                 "nvidia-driver-pinning-595", "nvidia-fabricmanager")])
FAILED = "nvidia-open-595\t595.71.05-1\tamd64\tiF\n" + "".join(
    "%s\t%s\tamd64\tii\n" % (i["name"], i["version"]) for i in R580 if i["name"] != "nvidia-open")
ARCHIVE = "nvidia-open_580.95.05-1_amd64.deb"
# the role's tasks that decide, in a branch change's order
STEPS = [("preflight.yml", "Decide the driver from the plan"), ("check.yml", "Judge what apt would install"),
         ("keep.yml", "Plan the copies"), ("install.yml", "Judge what got installed"), ("rollback.yml", "Work out the rollback")]


def _task(name, title):
    tasks = yaml.safe_load((ROLE / "tasks" / name).read_text(encoding="utf-8"))
    flat = [t for task in tasks for t in ([task] + task.get("block", []))]
    return next(t for t in flat if t.get("name") == title)


def _snapshot(after):
    return {"name": "Keep the decision " + after, "ansible.builtin.set_fact": {"__decided_" + after: "{{ __nvidia_driver_decided }}"}}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("decide-once")
    link = tmp_path / "collections" / "ansible_collections" / "dlbox" / "stack"
    link.parent.mkdir(parents=True)
    link.symlink_to(ROOT, target_is_directory=True)
    tasks = []
    for name, title in STEPS:
        tasks += [_task(name, title), _snapshot(Path(name).stem)]
    tasks.append({"name": "Report", "ansible.builtin.debug": {"msg": {
        "system": {"distribution": "{{ ansible_facts['distribution'] }}", "version": "{{ ansible_facts['distribution_version'] }}",
                   "kernel": "{{ ansible_facts['kernel'] }}"},
        "decided": {Path(step).stem: "{{ __decided_%s }}" % Path(step).stem for step, _title in STEPS},
        "kept": "{{ __nvidia_driver_kept }}", "rollback": "{{ __nvidia_driver_rollback }}",
        "apt": "{{ __nvidia_driver_decided.install_names + __nvidia_driver_decided.fm_names }}",
        "persistenced": "{{ __nvidia_driver_persistenced_manage }}"}}})
    play = {"hosts": "all", "gather_facts": True, "gather_subset": ["!all", "min"],
            "vars_files": [str(ROLE / "vars" / "main.yml")], "tasks": tasks}   # the other variables: the argument specs' defaults
    host = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
            "nvidia_driver_method": "nvidia_repo", "nvidia_driver_branch": "595", "nvidia_driver_change_branch": True,
            "nvidia_driver_profile": "server", "dlbox_plan": repo_plan(595),
            "__nvidia_driver_facts": {"installed": R580, "systemd": True},
            "__nvidia_driver_probe": {"simulation": {"rc": 0, "stdout": SIM_595, "stderr": ""}, "madison": MADISON},
            "__nvidia_driver_archive_debs": {"files": [{"path": "/var/cache/apt/archives/" + ARCHIVE}]},
            "__nvidia_driver_after": {"installed": AFTER}, "__nvidia_driver_failed": {"installed": nd.parse_dpkg_query(FAILED)}}
    proc, out = run_play(tmp_path, play, {"gpu1": host}, env={"ANSIBLE_COLLECTIONS_PATH": str(tmp_path / "collections")})
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    report = [t for t in out["plays"][0]["tasks"] if t["task"]["name"] == "Report"][0]["hosts"]["gpu1"]["msg"]
    return report


def _planner(report, facts):
    """The planner with every fact at once, on the same options, OS and plan (what the role's YAML called before)."""
    opts = mod.options({"nvidia_driver_method": "nvidia_repo", "nvidia_driver_branch": "595", "nvidia_driver_change_branch": True,
                        "nvidia_driver_profile": "server"})
    system = report["system"]
    o = mod.planner_options(opts, {"system": {"hostname": "gpu1", "distribution": system["distribution"],
                                              "distribution_version": system["version"], "kernel": system["kernel"]},
                                   "paths": {"pin_file": "/etc/apt/preferences.d/dlbox-00-nvidia-driver-branch.pref",
                                             "shim_mok_dir": "/var/lib/shim-signed/mok"}})
    return ndp.decide(load_compat(), o, repo_plan(595), host={}, facts=dict(facts, installed=R580, systemd=True))


def _without_own(decision):
    return {k: v for k, v in decision.items() if k not in ("plan", "options", "needs", "fm_names", "persistenced_manage")}


def test_each_step_is_the_planners_decision_with_the_facts_so_far(run):
    probe = {"simulation": {"rc": 0, "stdout": SIM_595, "stderr": ""}, "madison": MADISON, "pending": False}
    assert run["system"]["distribution"] in ("Debian", "Ubuntu")        # the machine the test runs on
    decided = run["decided"]
    assert decided["preflight"]["ok"] and decided["preflight"]["change"]["action"] == "change"
    assert _without_own(decided["preflight"]) == _planner(run, {})
    assert _without_own(decided["check"]) == _planner(run, probe)
    assert _without_own(decided["install"]) == _planner(run, dict(probe, after=AFTER))
    assert decided["install"]["after"]["problems"] == [] and decided["install"]["after"]["fm_installed"] is True


def test_the_plan_is_the_preflights_and_the_options_are_kept(run):
    decided = run["decided"]
    assert decided["preflight"]["plan"]["source"] == "dlbox_plan"
    assert all(decided[step]["plan"] == decided["preflight"]["plan"] for step in decided)
    assert decided["preflight"]["options"]["nvidia_driver_change_branch"] is True
    assert all(decided[step]["options"] == decided["preflight"]["options"] for step in decided)


def test_copies_and_rollback_come_from_the_same_entry_point(run):
    kept = run["kept"]
    assert kept == _planner(run, {"archives": [ARCHIVE]})["kept"]
    assert [k["source"] for k in kept if k["name"] == "nvidia-open"] == ["archive"]
    assert run["rollback"] == _planner(run, {"failed": nd.parse_dpkg_query(FAILED), "kept": kept})["rollback"]
    assert run["rollback"]["purge"] == ["nvidia-open-595"] and run["rollback"]["branch"] == 580


def test_apt_gets_the_driver_and_fabric_manager_at_its_version_and_persistenced_is_decided(run):
    assert run["apt"] == ["nvidia-open-595=595.71.05-1", "nvidia-driver-pinning-595=595.71.05-1", "nvidia-fabricmanager=595.71.05-1"]
    assert run["persistenced"] is True


def test_the_role_calls_the_planner_filter_nowhere_and_decides_from_scratch_in_two_places():
    """Once in the preflight; again from the start only with the running kernel's module (Ubuntu's signed path: it
    decides the kernel's fit, which comes before the rest); every other decision task passes the kept decision."""
    texts = {p.name: p.read_text(encoding="utf-8") for p in sorted((ROLE / "tasks").glob("*.yml"))}
    texts["vars/main.yml"] = (ROLE / "vars" / "main.yml").read_text(encoding="utf-8")
    assert [n for n, t in texts.items() if "nvidia_driver_plan(" in t] == []
    calls = [(n, t.count("| dlbox.stack.role_decide(")) for n, t in texts.items() if "| dlbox.stack.role_decide(" in t]
    assert calls == [("check.yml", 2), ("install.yml", 1), ("keep.yml", 1), ("preflight.yml", 1), ("rollback.yml", 1)]
    for name, title in STEPS[1:]:
        assert "'decided': __nvidia_driver_decided" in str(_task(name, title)), (name, title)
    running = str(_task("check.yml", "Decide again with the running kernel's module as apt knows it"))
    assert "'decided'" not in running and "__nvidia_driver_decided.plan" in running
