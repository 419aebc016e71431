"""playbooks/workstation.yml follows the decision the plan prints (workstation_plan.ROLES), one include a role."""

from __future__ import annotations

from pathlib import Path

import yaml

from ansible_collections.dlbox.stack.plugins.plugin_utils.workstation_plan import ROLES

ROOT = Path(__file__).resolve().parents[2]


def test_every_role_is_included_once_under_the_plans_decision():
    plays = yaml.safe_load((ROOT / "playbooks" / "workstation.yml").read_text(encoding="utf-8"))
    play = [p for p in plays if "hosts" in p][0]       # after the imported preflight.yml and plan.yml
    assert "roles" not in play                       # roles: with when costs a skip per task
    # The roles sit in one block (its rescue records a failure for the fleet summary), between the rollout steps.
    tasks = [s for t in play["tasks"] for s in (t["block"] if "block" in t else [t])]
    includes = [(t["ansible.builtin.include_role"]["name"].split(".")[-1], t) for t in tasks
                if "ansible.builtin.include_role" in t]
    # (file: with apply: tags always, so that the rollout's tasks run whatever --tags: test_preflight_tags_scenario.py)
    rollout = [t["ansible.builtin.include_tasks"]["file"] for t in tasks if "ansible.builtin.include_tasks" in t]
    assert rollout == ["tasks/rollout_begin.yml", "tasks/rollout_reboot.yml", "tasks/rollout_finish.yml"]
    assert play["tasks"][0]["rescue"][0]["ansible.builtin.include_tasks"]["file"] == "tasks/rollout_failed.yml"
    names = [name for name, _task in includes]
    assert names[0] == "summary" and names[-1] == "summary"
    assert names[1:-1] == [role for role, _switch, _part in ROLES]
    for name, task in includes[1:-1]:
        if name == "common":
            assert "when" not in task
            assert task["vars"]["common_kernel_headers"] == "{{ dlbox_workstation.kernel_headers }}"
        else:
            assert task["when"] == "dlbox_workstation.run.%s" % name


def test_skipped_tasks_are_not_listed():
    assert "display_skipped_hosts = False" in (ROOT / "ansible.cfg").read_text(encoding="utf-8")
