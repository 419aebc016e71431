"""Role READMEs in one shape (issue 20): Requirements, Role variables (generated from the specs), Example playbook,
What it refuses; the variables table agrees with meta/argument_specs.yml (tools/role_readme.py)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
ROLES = ["common", "cuda", "cuda_repo", "cudnn", "dcgm", "docker", "gpu_settings", "jetpack", "nccl", "nvidia_container_toolkit",
         "nvidia_driver"]
SECTIONS = ["## Requirements", "## Role variables", "## Example playbook", "## What it refuses"]


def _tool():
    spec = importlib.util.spec_from_file_location("role_readme_tool", ROOT / "tools" / "role_readme.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("role", ROLES)
def test_readme_has_the_sections_in_order(role):
    text = (ROOT / "roles" / role / "README.md").read_text()
    places = [text.find(section + "\n") for section in SECTIONS]
    assert -1 not in places, [s for s, p in zip(SECTIONS, places) if p == -1]
    assert places == sorted(places)


@pytest.mark.parametrize("role", ROLES)
def test_variables_table_is_the_specs(role):
    tool = _tool()
    assert tool.render(role) == (ROOT / "roles" / role / "README.md").read_text(), \
        "run tools/role_readme.py %s" % role
    import yaml
    options = yaml.safe_load((ROOT / "roles" / role / "meta" / "argument_specs.yml").read_text())["argument_specs"]["main"]["options"]
    table = tool.table(role)
    for name in options:
        assert "| `%s` |" % name in table


def test_a_stale_table_is_caught(tmp_path, monkeypatch):
    tool = _tool()
    role = tmp_path / "roles" / "demo"
    (role / "meta").mkdir(parents=True)
    (role / "meta" / "argument_specs.yml").write_text(
        "argument_specs:\n  main:\n    options:\n      demo_x: {type: str, default: a, description: C(x) it is}\n")
    (role / "README.md").write_text("# demo\n\n%s\nold\n%s\n" % (tool.BEGIN, tool.END))
    monkeypatch.setattr(tool, "ROOT", tmp_path)
    assert tool.main(["--check", "demo"]) == 1
    assert tool.main(["demo"]) == 0 and "| `demo_x` | str | `a` | `x` it is |" in (role / "README.md").read_text()
    assert tool.main(["--check", "demo"]) == 0
