"""No playbook, role or plugin reads another role's files (issue 47): they ask the role's module
(dlbox.stack.role_module, dlbox.stack.role_decide) or include the role (include_role/import_role, tasks_from).

test_one_place.py finds ``../../roles/<role>/``, ``role_path/../<role>/`` and include_vars/vars_files of a role. This
test closes the ways around it that it does not see:

- a role reaching a sibling by a relative path without ``roles/`` (``import_tasks: ../../docker/tasks/x.yml``,
  ``src: ../../cuda/templates/x.j2``, ``lookup('file', '../docker/defaults/main.yml')``);
- a playbook naming ``roles/<role>/<folder>/`` without ``../`` (``lookup('file', 'roles/docker/defaults/main.yml')``,
  ``playbook_dir ~ '/roles/...'``);
- a plugin (Python) building a path into a role's folders (``ROOT / "roles" / role / "defaults"``); the one reader
  allowed is plugins/plugin_utils/roles/_spec.py, which reads ``meta/argument_specs.yml`` (the role's interface).

Comments and docstrings may name role files; code may not.
"""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = "defaults|vars|tasks|templates|files|handlers|meta"
# roles/<role>/<folder>/ named anywhere in a value (playbooks), or by a role for another role
NAMED = re.compile(r"(?<![\w.-])roles/([a-z_]+)/(?:%s)(?:/|\b)" % FOLDERS)
# ../<role>/<folder>/ from inside a role (its tasks sit two levels below the roles folder)
SIBLING = re.compile(r"\.\./([a-z_]+)/(?:%s)/" % FOLDERS)
PY_FOLDERS = {"defaults", "vars", "tasks", "templates", "files", "handlers"}
# the one plugin that reads a role's file: its argument spec, the role's interface
PY_ALLOWED = {"plugins/plugin_utils/roles/_spec.py"}


def _files(root):
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=root,
                         capture_output=True, check=True).stdout.decode()
    return sorted(p for p in out.split("\0") if p and (root / p).is_file())


def _roles(root):
    return {p.name for p in (root / "roles").iterdir() if p.is_dir()} if (root / "roles").is_dir() else set()


def _py_reads(text):
    """Lines of code (not docstrings or comments) whose string constants build a path into a role's folders."""
    tree = ast.parse(text)
    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.BinOp, ast.Call, ast.JoinedStr, ast.Tuple, ast.List)):
            words = {n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
            joined = " ".join(words)
            if ("roles" in words or re.search(r"(^|/)roles/", joined)) and (
                    words & PY_FOLDERS or re.search(r"roles/[^\s/]+/(%s)\b" % "|".join(sorted(PY_FOLDERS)), joined)):
                lines.add(node.lineno)
    return sorted(lines)


def role_file_reads(root=ROOT):
    roles = _roles(root)
    found = []
    for rel in _files(root):
        path = root / rel
        if rel.startswith(("roles/", "playbooks/")) and rel.endswith((".yml", ".yaml", ".j2")):
            own = rel.split("/")[1] if rel.startswith("roles/") else None
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if line.lstrip().startswith(("#", "{#")):
                    continue
                hits = [m.group(1) for m in NAMED.finditer(line)]
                if own:
                    hits += [m.group(1) for m in SIBLING.finditer(line) if m.group(1) in roles]
                for role in hits:
                    if role != own:
                        found.append("%s:%d reads roles/%s's files: %s" % (rel, number, role, line.strip()))
        elif rel.startswith("plugins/") and rel.endswith(".py") and rel not in PY_ALLOWED:
            for number in _py_reads(path.read_text(encoding="utf-8")):
                found.append("%s:%d builds a path into a role's folders" % (rel, number))
    return found


def test_nothing_reads_another_roles_files():
    assert role_file_reads() == []


# --- each way on a deliberately broken copy ------------------------------------------------------------------------

def _tree(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    for rel in ("roles/docker/tasks", "roles/cuda/tasks", "playbooks/tasks", "plugins/plugin_utils/roles"):
        (tmp_path / rel).mkdir(parents=True, exist_ok=True)
    return tmp_path


def test_a_role_reaching_a_sibling_by_a_relative_path_is_found(tmp_path):
    tree = _tree(tmp_path)
    (tree / "roles" / "cuda" / "tasks" / "main.yml").write_text(
        "- ansible.builtin.import_tasks: ../../docker/tasks/preflight.yml\n"
        "# a comment may name ../../docker/tasks/preflight.yml\n"
        "- ansible.builtin.import_tasks: ../tasks/own.yml\n"
        "- ansible.builtin.set_fact:\n    x: \"{{ lookup('file', '../docker/defaults/main.yml') }}\"\n")
    found = role_file_reads(tree)
    assert [f.split(" reads ")[0] for f in found] == ["roles/cuda/tasks/main.yml:1", "roles/cuda/tasks/main.yml:5"]


def test_a_playbook_naming_a_roles_folder_is_found_and_including_the_role_is_not(tmp_path):
    tree = _tree(tmp_path)
    (tree / "playbooks" / "tasks" / "plan.yml").write_text(
        "- ansible.builtin.set_fact:\n    d: \"{{ lookup('ansible.builtin.file', 'roles/docker/defaults/main.yml') }}\"\n"
        "- ansible.builtin.include_role:\n    name: dlbox.stack.docker\n    tasks_from: offline_source.yml\n")
    assert [f.split(": ")[0] for f in role_file_reads(tree)] == ["playbooks/tasks/plan.yml:2 reads roles/docker's files"]


def test_a_plugin_building_a_path_into_a_role_is_found_and_the_spec_reader_is_not(tmp_path):
    tree = _tree(tmp_path)
    (tree / "plugins" / "plugin_utils" / "x.py").write_text(
        '"""Reads roles/docker/defaults/main.yml? No: a docstring."""\nfrom pathlib import Path\nROOT = Path(".")\n\n\n'
        'def defaults(role):\n    return ROOT / "roles" / role / "defaults" / "main.yml"\n')
    (tree / "plugins" / "plugin_utils" / "roles" / "_spec.py").write_text('P = "roles/x/defaults/main.yml"\n')
    assert role_file_reads(tree) == ["plugins/plugin_utils/x.py:7 builds a path into a role's folders"]
