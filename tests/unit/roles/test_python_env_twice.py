# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The python_env role included twice in one play (molecule/python_env's side effect does: the environments, then
"Ask for torch 2.14") decides again on the second run: its decision's option names are a task variable that no
registered result of the role shadows (preflight.yml registers __python_env_names, which outranks a task's vars and
failed the second run with "No variable named 'results'", found by molecule python_env at 33c21d6). Real
ansible-playbook, check mode, a FIXTURE RTX 4090 plan (dlbox_plan_hardware), on this host (nothing is changed)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_the_role_decides_again_when_included_twice(tmp_path):
    sys.path.insert(0, str(ROOT / "tests" / "unit" / "roles"))
    from play_runner import run_play  # pylint: disable=import-outside-toplevel,import-error

    play = {"hosts": "all", "gather_facts": True,
            "tasks": [{"name": "First", "ansible.builtin.include_role": {"name": "dlbox.stack.python_env"}},
                      {"name": "Second", "ansible.builtin.include_role": {"name": "dlbox.stack.python_env"}}]}
    hostvars = {"h": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                      "dlbox_plan_hardware": {"gpus": ["RTX 4090"], "os": "debian-12"},
                      "python_env_root": str(tmp_path / "envs"), "python_env_check": False}}
    proc, out = run_play(tmp_path, play, hostvars, check=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    decided = [t for play_ in out["plays"] for t in play_["tasks"]
               if t["task"]["name"].endswith(" : Decide every environment from the plan")]
    assert len(decided) == 2 and all(t["hosts"]["h"].get("ansible_facts", {}).get("__python_env_decided", {}).get("ok")
                                     for t in decided)
