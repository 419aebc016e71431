"""Every role's defaults/main.yml (the manual) and meta/argument_specs.yml describe the same keys."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
ROLES = sorted(p for p in (ROOT / "roles").iterdir() if (p / "tasks").is_dir())


def _load(path: Path):
    return yaml.safe_load(path.read_text(encoding="utf-8")) or {}


@pytest.mark.parametrize("role", ROLES, ids=[r.name for r in ROLES])
def test_role_has_defaults_and_specs(role):
    assert (role / "defaults" / "main.yml").is_file(), f"{role.name} has no defaults/main.yml"
    assert (role / "meta" / "argument_specs.yml").is_file(), f"{role.name} has no meta/argument_specs.yml"


@pytest.mark.parametrize("role", ROLES, ids=[r.name for r in ROLES])
def test_defaults_and_specs_name_the_same_keys(role):
    defaults = _load(role / "defaults" / "main.yml")
    options = _load(role / "meta" / "argument_specs.yml")["argument_specs"]["main"]["options"]
    assert sorted(defaults) == sorted(k for k, v in options.items() if not v.get("required"))


@pytest.mark.parametrize("role", ROLES, ids=[r.name for r in ROLES])
def test_spec_defaults_equal_defaults_file(role):
    defaults = _load(role / "defaults" / "main.yml")
    options = _load(role / "meta" / "argument_specs.yml")["argument_specs"]["main"]["options"]
    for key, spec in options.items():
        if "default" in spec:
            assert spec["default"] == defaults[key], f"{role.name}: {key} default differs between spec and defaults"


@pytest.mark.parametrize("role", ROLES, ids=[r.name for r in ROLES])
def test_public_variables_carry_the_role_prefix(role):
    defaults = _load(role / "defaults" / "main.yml")
    wrong = [k for k in defaults if not k.startswith(role.name + "_")]
    assert not wrong, f"{role.name}: variables without the '{role.name}_' prefix: {wrong}"


def test_there_is_at_least_one_role():
    assert ROLES
