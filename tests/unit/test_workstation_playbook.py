"""playbooks/workstation.yml follows the decision the plan prints (workstation_plan.ROLES), one include a role."""

from __future__ import annotations

from pathlib import Path

import yaml

from ansible_collections.dlbox.stack.plugins.plugin_utils.workstation_plan import ROLES

ROOT = Path(__file__).resolve().parents[2]


def _flat(tasks):
    """The tasks in order, blocks (and their rescue) opened."""
    for task in tasks or []:
        if "block" in task:
            yield from _flat(task["block"])
            yield from _flat(task.get("rescue"))
        else:
            yield task


def test_every_role_is_included_once_under_the_plans_decision():
    plays = yaml.safe_load((ROOT / "playbooks" / "workstation.yml").read_text(encoding="utf-8"))
    play = [p for p in plays if "hosts" in p and p.get("become")][0]  # after the imported preflight.yml and plan.yml
    assert "roles" not in play                       # roles: with when costs a skip per task
    # The roles sit in the one install path (tasks/install_stack.yml, server.yml's too), its blocks' rescue recording a
    # failure for the fleet summary, between the rollout steps; the summary and the rollout's end here.
    here = list(_flat(play["tasks"]))
    assert [t["ansible.builtin.include_tasks"]["file"] for t in here if "ansible.builtin.include_tasks" in t] == \
        ["tasks/install_stack.yml", "tasks/rollout_finish.yml"]
    assert here[0]["vars"] == {"__dlbox_rollout_scenario": "workstation"}          # the roles' defaults
    stack = yaml.safe_load((ROOT / "playbooks" / "tasks" / "install_stack.yml").read_text(encoding="utf-8"))
    tasks = list(_flat(stack)) + here[1:]
    includes = [(t["ansible.builtin.include_role"]["name"].split(".")[-1], t) for t in tasks
                if "ansible.builtin.include_role" in t]
    # (file: with apply: tags always, so that the rollout's tasks run whatever --tags: test_preflight_tags_scenario.py)
    rollout = [t["ansible.builtin.include_tasks"]["file"] for t in tasks if "ansible.builtin.include_tasks" in t]
    assert rollout == ["rollout_begin.yml", "rollout_failed.yml", "rollout_reboot.yml", "{{ __dlbox_install_loaded }}",
                       "rollout_failed.yml", "tasks/rollout_finish.yml"]
    assert [b["rescue"][0]["ansible.builtin.include_tasks"]["file"] for b in stack if "block" in b] == \
        ["rollout_failed.yml", "rollout_failed.yml"]
    names = [name for name, _task in includes]
    assert names[0] == "summary" and names[-1] == "summary"
    assert names[1:-1] == [role for role, _switch, _part in ROLES]
    for name, task in includes[1:-1]:
        if name == "common":
            assert "when" not in task
            assert task["vars"]["common_kernel_headers"] == "{{ dlbox_roles.kernel_headers }}"
        elif name == "python_env":
            assert task["when"] == ["__dlbox_install_python_env | default(true) | bool", "dlbox_roles.run.python_env"]
        else:
            assert task["when"] == "dlbox_roles.run.%s" % name


def test_skipped_tasks_are_not_listed():
    assert "display_skipped_hosts = False" in (ROOT / "ansible.cfg").read_text(encoding="utf-8")
