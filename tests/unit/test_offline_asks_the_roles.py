# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Offline mode asks each role (issue 47, rt47 M4): playbooks/tasks/offline_plan.yml names no option of a role (their
values and defaults are the roles' own: role_module's options and decide entries), and the docker and
nvidia_container_toolkit roles' tasks/offline_source.yml hand offline_needs their own decision (role_module('decide'))
instead of calling a filter that restates their install rule."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
PLAN = ROOT / "playbooks" / "tasks" / "offline_plan.yml"
ROLES = ("cuda", "cudnn", "nccl", "python_env", "docker", "nvidia_container_toolkit", "common")


def _options():
    names = set()
    for role in ROLES:
        specs = yaml.safe_load((ROOT / "roles" / role / "meta" / "argument_specs.yml").read_text(encoding="utf-8"))
        for entry in specs["argument_specs"].values():
            names.update(entry.get("options") or {})
    return names


def test_offline_plan_names_no_option_of_a_role():
    text = "\n".join(line.split("#", 1)[0] for line in PLAN.read_text(encoding="utf-8").splitlines())
    named = sorted(set(re.findall(r"\b[a-z][a-z0-9_]+\b", text)) & _options())
    assert named == [], "%s names %s: take them from the role (role_module options/decide)" % (PLAN.name, named)


def test_the_roles_offline_source_hands_on_their_own_decision():
    for role in ("docker", "nvidia_container_toolkit"):
        text = (ROOT / "roles" / role / "tasks" / "offline_source.yml").read_text(encoding="utf-8")
        assert "dlbox.stack.role_module('decide'" in text, role
        assert not re.search(r"dlbox\.stack\.offline_\w+_request", text), role
    plan = PLAN.read_text(encoding="utf-8")
    assert "'decided': {'nvidia_container_toolkit': __nvidia_container_toolkit_offline.decision" in plan
