# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One install path (issue 47, red team HIGH 3): workstation.yml and server.yml include the same task file for the
shared roles (playbooks/tasks/install_stack.yml), the reboot has one place, names say what they hold (no
dlbox_workstation in server.yml), and no block that includes a role is tagged (a block's tags reach the roles' tasks:
`--tags jetpack` would run every role of edge.yml).

Before: both playbooks repeated the role block and placed the reboot differently (server.yml inside the block before
DCGM, workstation.yml after it); server.yml read dlbox_workstation 11 times; edge.yml's blocks were tagged always."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
PLAYBOOKS = ROOT / "playbooks"
SHARED = ["common", "nvidia_driver", "cuda", "cudnn", "nccl", "docker", "nvidia_container_toolkit", "python_env"]


def _load(path):
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _walk(tasks):
    """Every task and block, nested blocks (block, rescue, always) and a play's tasks opened, in order."""
    for task in tasks or []:
        yield task
        for part in ("pre_tasks", "tasks", "post_tasks", "handlers", "block", "rescue", "always"):
            yield from _walk(task.get(part))


def _include(task, kind):
    value = task.get("ansible.builtin.include_" + kind)
    return (value.get("file") or value.get("name")) if isinstance(value, dict) else value


def _play_tasks(name):
    return [t for play in _load(PLAYBOOKS / name) for t in _walk(play.get("tasks"))]


def test_workstation_and_server_include_the_same_install_task_file_once_and_no_shared_role_themselves():
    for name in ("workstation.yml", "server.yml"):
        tasks = _play_tasks(name)
        assert [_include(t, "tasks") for t in tasks if _include(t, "tasks") == "tasks/install_stack.yml"] == \
            ["tasks/install_stack.yml"], name
        roles = {(_include(t, "role") or "").split(".")[-1] for t in tasks}
        assert not roles & set(SHARED), (name, roles & set(SHARED))
    stack = list(_walk(_load(PLAYBOOKS / "tasks" / "install_stack.yml")))
    assert [(_include(t, "role") or "").split(".")[-1] for t in stack if _include(t, "role")] == ["summary"] + SHARED


def test_the_reboot_has_one_place_after_the_drivers_roles_and_before_what_needs_the_loaded_driver():
    places = [(path.relative_to(PLAYBOOKS).as_posix(), _include(t, "tasks"))
              for path in sorted(PLAYBOOKS.rglob("*.yml")) for t in _walk(_load(path) or [])
              if isinstance(t, dict) and (_include(t, "tasks") or "").endswith("rollout_reboot.yml")]
    assert places == [("tasks/install_stack.yml", "rollout_reboot.yml")], places
    order = [_include(t, "role") or _include(t, "tasks") for t in _walk(_load(PLAYBOOKS / "tasks" / "install_stack.yml"))
             if _include(t, "role") or _include(t, "tasks")]
    reboot = order.index("rollout_reboot.yml")
    assert order.index("dlbox.stack.nvidia_driver") < order.index("dlbox.stack.nvidia_container_toolkit") < reboot
    assert reboot < order.index("{{ __dlbox_install_loaded }}") < order.index("dlbox.stack.python_env")
    # what follows the reboot runs only where nothing failed before it (a failed host is neither rebooted nor changed)
    after = [t for t in _load(PLAYBOOKS / "tasks" / "install_stack.yml") if "block" in t][1]
    assert after["when"] == "dlbox_failure is not defined" and \
        after["rescue"][0]["ansible.builtin.include_tasks"]["file"] == "rollout_failed.yml"
    # server.yml's roles that need the loaded driver come through that hook
    assert [(_include(t, "role") or "") for t in _walk(_load(PLAYBOOKS / "tasks" / "install_server.yml"))
            if _include(t, "role")] == ["dlbox.stack.dcgm", "dlbox.stack.gpu_settings", "dlbox.stack.infiniband"]


def test_server_reads_the_plans_roles_by_their_name():
    text = (PLAYBOOKS / "server.yml").read_text(encoding="utf-8")
    assert "dlbox_workstation." not in text and "dlbox_workstation }}" not in text
    for path in [PLAYBOOKS / "workstation.yml", PLAYBOOKS / "tasks" / "install_stack.yml",
                 PLAYBOOKS / "tasks" / "install_server.yml"]:
        assert "dlbox_workstation." not in path.read_text(encoding="utf-8"), path
    plan = [t for play in _load(PLAYBOOKS / "plan.yml") for t in _walk(play.get("tasks"))
            if "dlbox_roles" in t.get("ansible.builtin.set_fact", {})]
    # the old name, kept one release for users' inventories and plays, holds the same value
    assert len(plan) == 1 and plan[0]["ansible.builtin.set_fact"]["dlbox_workstation"] == \
        plan[0]["ansible.builtin.set_fact"]["dlbox_roles"]


def test_no_block_that_includes_a_role_is_tagged():
    for path in [PLAYBOOKS / n for n in ("workstation.yml", "server.yml", "edge.yml")] + \
            [PLAYBOOKS / "tasks" / "install_stack.yml", PLAYBOOKS / "tasks" / "install_server.yml"]:
        data = _load(path)
        tasks = [t for play in data for t in _walk(play.get("tasks"))] if path.parent == PLAYBOOKS else list(_walk(data))
        for block in (t for t in tasks if "block" in t):
            roles = [_include(t, "role") for t in _walk(block["block"]) if _include(t, "role")]
            if roles and roles != ["dlbox.stack.summary"]:
                assert "tags" not in block, (path.name, block["name"])


def test_no_play_or_role_reads_the_deprecated_alias():
    """rt47 M6: the grep above ("dlbox_workstation.") missed offline_plan.yml's `run=dlbox_workstation.run` and
    `if dlbox_workstation.run.python_env`. Any mention of the alias (not dlbox_workstation_<switch>) in playbooks/ and
    roles/ outside plan.yml's definition is a read of it; plan.yml defines it once and names it in that task's name."""
    alias = re.compile(r"\bdlbox_workstation\b(?!_)")
    reads = [(path.relative_to(ROOT).as_posix(), n) for top in (PLAYBOOKS, ROOT / "roles")
             for path in sorted(top.rglob("*")) if path.suffix in (".yml", ".yaml", ".j2") and path.is_file()
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if alias.search(line)
             and not (path.name == "plan.yml" and path.parent == PLAYBOOKS)]
    assert reads == [], reads
    plan = [line.strip() for line in (PLAYBOOKS / "plan.yml").read_text(encoding="utf-8").splitlines() if alias.search(line)]
    assert plan == ["- name: Hand each host its plan (dlbox_plan) and its roles (dlbox_workstation)",
                    'dlbox_workstation: "{{ __dlbox_plans.workstation[item] }}"'], plan


def test_no_role_level_reboot_inside_the_scenario_path():
    """rt47 M1: install_stack.yml did not give the driver role nvidia_driver_reboot never (server.yml did), so with
    nvidia_driver_reboot: if_needed the role rebooted in the middle of the first block, before CUDA, bypassing
    dlbox_reboot_allowed and the rollout's reboot step. Every include of the driver role in the scenario path gets
    never (its tasks_from reboot, the entry point, only in rollout_reboot.yml), and a user's value that outranks it (-e) is refused."""
    stack = list(_walk(_load(PLAYBOOKS / "tasks" / "install_stack.yml")))
    scenario = [t for name in ("workstation.yml", "server.yml") for t in _play_tasks(name)] + stack + \
        list(_walk(_load(PLAYBOOKS / "tasks" / "install_server.yml")))
    driver = [t for t in scenario if _include(t, "role") == "dlbox.stack.nvidia_driver"]
    assert driver and all(t.get("vars", {}).get("nvidia_driver_reboot") == "never" for t in driver), driver
    reboots = [(path.relative_to(PLAYBOOKS).as_posix(), t.get("name")) for path in sorted(PLAYBOOKS.rglob("*.yml"))
               for t in _walk(_load(path) or []) if isinstance(t, dict)
               and ("ansible.builtin.reboot" in t or (t.get("ansible.builtin.include_role") or {}).get("tasks_from")
                    in ("reboot", "reboot.yml"))]
    assert [p for p, _name in reboots] == ["tasks/rollout_reboot.yml"], reboots
    guard = next(t for t in stack if "ansible.builtin.assert" in t and "nvidia_driver_reboot == 'never'" in
                 t["ansible.builtin.assert"]["that"])
    assert guard["vars"] == {"nvidia_driver_reboot": "never"} and guard["tags"] == ["always"]
    order = [t.get("name") for t in stack]
    assert order.index(guard["name"]) < order.index("Check the rollout variables, note the scenario, drain the host "
                                                    "(dlbox_drain_command)")
    when = _load(PLAYBOOKS / "tasks" / "rollout_reboot.yml")[0]["when"]
    assert "dlbox_reboot_allowed | default(__dlbox_reboot_wanted | default('never') == 'if_needed') | bool" in when
