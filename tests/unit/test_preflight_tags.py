"""A role's preflight carries the tag of every step, so running one step by its tag still checks the input first.

Checked for the roles listed in CHECKED (python_env does not follow it yet; the roles whose decision the preflight
takes once, role_decide, need it: every step reads that decision)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

ROLES = Path(__file__).resolve().parents[2] / "roles"


def _flat(tasks):
    for task in tasks or []:
        if isinstance(task, dict) and "block" in task:
            yield from _flat(task["block"])      # the steps inside a block (nvidia_container_toolkit's)
        elif isinstance(task, dict):
            yield task


def _steps(role):
    tasks = yaml.safe_load((ROLES / role / "tasks" / "main.yml").read_text(encoding="utf-8")) or []
    return [t for t in _flat(tasks) if "ansible.builtin.import_tasks" in t or "import_tasks" in t]


CHECKED = ("common", "docker", "nvidia_container_toolkit", "dcgm", "gpu_settings")
ROLES_WITH_PREFLIGHT = sorted(
    p.parent.parent.name for p in ROLES.glob("*/tasks/main.yml")
    if any(str(s.get("ansible.builtin.import_tasks") or s.get("import_tasks")).startswith("preflight") for s in _steps(p.parent.parent.name))
)


@pytest.mark.parametrize("role", [r for r in ROLES_WITH_PREFLIGHT if r in CHECKED])
def test_preflight_has_every_step_tag(role):
    steps = _steps(role)
    preflight = next(s for s in steps if str(s.get("ansible.builtin.import_tasks") or s.get("import_tasks")).startswith("preflight"))
    step_tags = set()
    for step in steps:
        step_tags |= set(step.get("tags") or [])
    missing = step_tags - set(preflight.get("tags") or [])
    assert not missing, "%s: the preflight lacks the tags %s, so `--tags %s` would skip the checks" % (role, sorted(missing), sorted(missing)[0])


def test_common_has_a_preflight():
    assert "common" in ROLES_WITH_PREFLIGHT
