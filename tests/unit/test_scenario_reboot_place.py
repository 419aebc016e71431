# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The reboot's one place in the scenario playbooks (issue 47 red team rt47 M1): the driver role gets
nvidia_driver_reboot never from install_stack.yml, and rollout_reboot.yml is the only reboot. The user's
nvidia_driver_reboot: if_needed allows the rollout's reboot where dlbox_reboot_allowed is not set (docs/workstation.md:
it works over SSH), is refused on connection local before any change (`make workstation`), and a value given with -e
(which would outrank the never and reboot in the middle of the install) is refused. Real ansible-playbook, check mode,
local connection (nothing is changed here)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from test_preflight_tags_scenario import _run  # pylint: disable=import-error

ROOT = Path(__file__).resolve().parents[2]


def test_if_needed_in_the_inventory_is_refused_on_connection_local_before_any_change(tmp_path):
    returncode, out = _run(tmp_path, "--tags", "nvidia_driver", inventory={"nvidia_driver_reboot": "if_needed"})
    assert returncode != 0, out[-3000:]
    assert "nvidia_driver_reboot: if_needed cannot work on localhost: the play runs on that machine itself" in out
    assert "Nothing was changed." in out
    assert "TASK [dlbox.stack.nvidia_driver : Decide the driver from the plan]" not in out, out[-3000:]
    assert "TASK [Check the rollout variables, note the scenario, drain the host" not in out  # refused before the drain


def test_nvidia_driver_reboot_as_an_extra_variable_is_refused(tmp_path):
    returncode, out = _run(tmp_path, "--tags", "nvidia_driver", "-e", "nvidia_driver_reboot=if_needed")
    assert returncode != 0, out[-3000:]
    assert "it is given as an extra variable (-e), which would make the driver role reboot" in out, out[-3000:]
    assert "TASK [dlbox.stack.nvidia_driver : Decide the driver from the plan]" not in out, out[-3000:]


def test_the_rollouts_reboot_honours_dlbox_reboot_allowed_then_nvidia_driver_reboot(tmp_path):
    """rollout_reboot.yml's own condition, evaluated by Ansible for each case."""
    when = yaml.safe_load((ROOT / "playbooks" / "tasks" / "rollout_reboot.yml").read_text(encoding="utf-8"))[0]["when"]
    cases = {  # name: (vars, reboots)
        "unset-never": ({"__dlbox_reboot_wanted": "never"}, False),
        "unset-if_needed": ({"__dlbox_reboot_wanted": "if_needed"}, True),
        "false-if_needed": ({"__dlbox_reboot_wanted": "if_needed", "dlbox_reboot_allowed": False}, False),
        "true-never": ({"__dlbox_reboot_wanted": "never", "dlbox_reboot_allowed": True}, True),
        "unset-unread": ({}, False),
        "if_needed-not-required": ({"__dlbox_reboot_wanted": "if_needed", "nvidia_driver_reboot_required": False}, False),
    }
    plays = [{"hosts": "localhost", "gather_facts": False, "vars": dict({"nvidia_driver_reboot_required": True}, **v),
              "tasks": [{"ansible.builtin.debug": {"msg": "REBOOT-" + name}, "when": when}]}
             for name, (v, _reboots) in cases.items()]
    (tmp_path / "play.yml").write_text(json.dumps(plays))
    returncode, out = _run(tmp_path, playbook=tmp_path / "play.yml")
    assert returncode == 0, out[-3000:]
    assert {name for name in cases if '"msg": "REBOOT-%s"' % name in out} == \
        {name for name, (_v, reboots) in cases.items() if reboots}, out[-3000:]
