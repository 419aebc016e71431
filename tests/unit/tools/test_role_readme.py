"""Role READMEs in one shape (issue 20): Requirements, Role variables (generated from the specs), Example playbook,
What it refuses; the variables table agrees with meta/argument_specs.yml (tools/role_readme.py); a role with a module
in plugins/plugin_utils/roles/ names it where the README says where the role is decided (issue 47, rt47b M2).

Every role of roles/ is checked (a folder with tasks/), so a new role is held to the same shape without being added
here; each failure says in words what is missing and what to add (docs/development.md, "Adding a role")."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
SECTIONS = ["## Requirements", "## Role variables", "## Example playbook", "## What it refuses"]
CHECKLIST = "docs/development.md, \"Adding a role\""


def roles(root: Path = ROOT) -> list[str]:
    """Every role of the tree: a folder of roles/ with tasks/."""
    return sorted(p.name for p in (root / "roles").iterdir() if (p / "tasks").is_dir())


def registry(root: Path = ROOT) -> dict:
    """plugins/plugin_utils/roles/__init__.py's ROLES, read from its text (the role -> entry points literal)."""
    import ast
    tree = ast.parse((root / "plugins" / "plugin_utils" / "roles" / "__init__.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "ROLES" for t in node.targets):
            return {k.value: None for k in node.value.keys}
    raise AssertionError("plugins/plugin_utils/roles/__init__.py has no ROLES")


def _tool(root: Path = ROOT):
    spec = importlib.util.spec_from_file_location("role_readme_tool", ROOT / "tools" / "role_readme.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.ROOT = root
    return module


def shape_problems(role: str, root: Path = ROOT) -> list[str]:
    """What the role's README lacks, in words."""
    readme = root / "roles" / role / "README.md"
    if not readme.is_file():
        return ["role '%s' has no README.md: write roles/%s/README.md with the sections %s (%s)"
                % (role, role, ", ".join(SECTIONS), CHECKLIST)]
    text = readme.read_text(encoding="utf-8")
    places = [text.find(section + "\n") for section in SECTIONS]
    missing = [s for s, p in zip(SECTIONS, places) if p == -1]
    if missing:
        return ["roles/%s/README.md lacks the sections %s: every role README has %s, in this order (%s)"
                % (role, ", ".join(missing), ", ".join(SECTIONS), CHECKLIST)]
    if places != sorted(places):
        return ["roles/%s/README.md has its sections out of order: %s" % (role, ", ".join(SECTIONS))]
    return []


def table_problems(role: str, root: Path = ROOT) -> list[str]:
    """Whether the README's variables table is the argument specs' (tools/role_readme.py writes it)."""
    specs = root / "roles" / role / "meta" / "argument_specs.yml"
    if not specs.is_file():
        return ["role '%s' has no meta/argument_specs.yml: describe its variables there (type, default, description), "
                "then run tools/role_readme.py %s (%s)" % (role, role, CHECKLIST)]
    if not (root / "roles" / role / "README.md").is_file():
        return ["role '%s' has no README.md for its variables table: write roles/%s/README.md (%s)"
                % (role, role, CHECKLIST)]
    tool = _tool(root)
    try:
        rendered = tool.render(role)
    except ValueError:
        return ["roles/%s/README.md has no role-variables table: put the lines\n%s\n%s\nunder \"## Role variables\" and "
                "run tools/role_readme.py %s" % (role, tool.BEGIN, tool.END, role)]
    if rendered != (root / "roles" / role / "README.md").read_text(encoding="utf-8"):
        return ["roles/%s/README.md's variables table differs from meta/argument_specs.yml: run tools/role_readme.py %s"
                % (role, role)]
    options = (yaml.safe_load(specs.read_text(encoding="utf-8"))["argument_specs"]["main"].get("options") or {})
    table = tool.table(role)
    absent = [name for name in options if "| `%s` |" % name not in table]
    return ["roles/%s/README.md's table lacks %s" % (role, ", ".join(absent))] if absent else []


def decided_problems(role: str, root: Path = ROOT) -> list[str]:
    """A role with a module in the registry names it in the README's "Where it is decided" paragraph (or one that
    says where the role's decision is: nvidia_driver's "How it is built ... The role's decision module")."""
    if role not in registry(root):
        return []
    module = "plugins/plugin_utils/roles/%s.py" % role
    readme = root / "roles" / role / "README.md"
    text = readme.read_text(encoding="utf-8") if readme.is_file() else ""
    paragraphs = re.split(r"\n\s*\n", text)
    if any(module in re.sub(r"\s+", "", p) and re.search(r"\bdecid|\bdecision", p) for p in paragraphs):
        return []
    return ["roles/%s/README.md does not say where the role is decided: add a paragraph \"Where it is decided: `%s`, "
            "the role's module (...)\" before its first section (%s)" % (role, module, CHECKLIST)]


@pytest.mark.parametrize("role", roles())
def test_readme_has_the_sections_in_order(role):
    problems = shape_problems(role)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("role", roles())
def test_variables_table_is_the_specs(role):
    problems = table_problems(role)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("role", roles())
def test_readme_names_the_roles_decision_module(role):
    problems = decided_problems(role)
    assert not problems, "\n".join(problems)


def registry_problems(root: Path = ROOT) -> list[str]:
    """Every ROLES entry is a role of roles/ with its module file."""
    found = []
    for role in registry(root):
        if role not in roles(root):
            found.append("plugins/plugin_utils/roles/__init__.py ROLES names '%s', which is no role of roles/" % role)
        if not (root / "plugins" / "plugin_utils" / "roles" / ("%s.py" % role)).is_file():
            found.append("ROLES names '%s' but plugins/plugin_utils/roles/%s.py does not exist: write it with the entry "
                         "points its ROLES line declares (%s)" % (role, role, CHECKLIST))
    return found


def test_every_registered_role_is_a_role_with_its_module():
    problems = registry_problems()
    assert not problems, "\n".join(problems)


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


# --- a new role, step by step, in a copy: each check says what is missing (rt47b M3) ---

@pytest.fixture()
def toy(tmp_path):
    """A tree with roles/toy (tasks only) and a copy of the registry."""
    (tmp_path / "roles" / "toy" / "tasks").mkdir(parents=True)
    (tmp_path / "roles" / "toy" / "tasks" / "main.yml").write_text("---\n- name: Toy\n  ansible.builtin.debug:\n")
    (tmp_path / "plugins" / "plugin_utils" / "roles").mkdir(parents=True)
    registry_file = ROOT / "plugins" / "plugin_utils" / "roles" / "__init__.py"
    (tmp_path / "plugins" / "plugin_utils" / "roles" / "__init__.py").write_text(registry_file.read_text())
    return tmp_path


def test_a_new_role_is_told_what_its_readme_lacks(toy):
    assert "toy" in roles(toy)
    assert shape_problems("toy", toy) == [
        "role 'toy' has no README.md: write roles/toy/README.md with the sections %s (%s)"
        % (", ".join(SECTIONS), CHECKLIST)]
    assert "role 'toy' has no meta/argument_specs.yml" in table_problems("toy", toy)[0]
    (toy / "roles" / "toy" / "README.md").write_text("# dlbox.stack.toy\n\n## Example playbook\n")
    assert "lacks the sections ## Requirements, ## Role variables, ## What it refuses" in shape_problems("toy", toy)[0]
    (toy / "roles" / "toy" / "meta").mkdir()
    (toy / "roles" / "toy" / "meta" / "argument_specs.yml").write_text(
        "argument_specs:\n  main:\n    options:\n      toy_x: {type: str, default: a, description: x}\n")
    assert "has no role-variables table" in table_problems("toy", toy)[0]


def test_a_registered_role_whose_readme_does_not_name_its_module_is_caught(toy):
    path = toy / "plugins" / "plugin_utils" / "roles" / "__init__.py"
    path.write_text(path.read_text().replace('ROLES = {\n', 'ROLES = {\n    "toy": ("options",),\n'))
    (toy / "roles" / "toy" / "README.md").write_text("# dlbox.stack.toy\n\nIt decides in `roles/toy.py`.\n")
    assert decided_problems("toy", toy) == [
        "roles/toy/README.md does not say where the role is decided: add a paragraph \"Where it is decided: "
        "`plugins/plugin_utils/roles/toy.py`, the role's module (...)\" before its first section (%s)" % CHECKLIST]
    (toy / "roles" / "toy" / "README.md").write_text(
        "# dlbox.stack.toy\n\nWhere it is decided: `plugins/plugin_utils/roles/toy.py`, the role's module.\n")
    assert decided_problems("toy", toy) == []
    assert "ROLES names 'toy' but plugins/plugin_utils/roles/toy.py does not exist: write it with the entry points its " \
        "ROLES line declares (%s)" % CHECKLIST in registry_problems(toy)
    (toy / "plugins" / "plugin_utils" / "roles" / "toy.py").write_text("")
    assert not [p for p in registry_problems(toy) if "'toy'" in p]


def test_the_readme_names_every_role():
    """A newcomer finds the roles from the README (rt47b M1): each role of roles/ is named there."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    absent = [role for role in roles() if not re.search(r"(?<![\w.])%s(?![\w])" % role, text)]
    assert not absent, "README.md does not name the roles %s: add them to its line of roles" % ", ".join(absent)
