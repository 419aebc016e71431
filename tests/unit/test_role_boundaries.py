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

And the role's other inside (rt47 M5), from playbooks/ and from other roles:

- ``include_role``/``import_role`` with ``tasks_from`` names a declared entry point of the role: a key of its
  ``meta/argument_specs.yml`` given exactly (``tasks_from: reboot``, so that Ansible validates the entry point's
  arguments; ``reboot.yml`` is not validated), never a bare task file;
- no playbook and no other role reads a role's private variables (``__<role>_...``); a file that defines such a name
  itself (``__common_needs:`` in its own ``vars``) is not reading the role's.

The known exceptions (KNOWN_TASKS_FROM, KNOWN_PRIVATE) are named with their reason, and a test fails when one is
gone, so that the list only shrinks.
"""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

import yaml
from test_one_place import tracked  # pylint: disable=import-error  # tests/unit, beside this file

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
    return tracked(root)


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


# --- entry points and private variables (rt47 M5) -----------------------------------------------------------------

# (including file, role, tasks_from): why it is not a declared entry point yet (other roles' owners, issue 47 left)
KNOWN_TASKS_FROM = {
    ("playbooks/edge.yml", "jetpack", "preflight.yml"):
        "edge refuses a host that is not a Jetson, an L4T change or a PyTorch source without the wheel before any change "
        "(the baseline, Docker); the role after it keeps that decision (__jetpack_kept_decision)",
    ("playbooks/edge.yml", "docker", "preflight.yml"): "edge checks the engine's options before the container toolkit",
    ("playbooks/tasks/offline_plan.yml", "docker", "offline_source.yml"):
        "offline asks the role for its repository (rt47 M4: to go through docker's needs())",
    ("playbooks/tasks/offline_plan.yml", "nvidia_container_toolkit", "offline_source.yml"): "the same, container toolkit",
    ("roles/package_cache/tasks/client.yml", "common", "proxy.yml"): "package_cache's client writes common's apt proxy",
}
# (reading file, variable): why it reads another role's private variable (to become a public fact)
KNOWN_PRIVATE = {
    ("playbooks/edge.yml", "__jetpack_decided"): "edge's summary line (jetpack's decision), and edge hands the decision "
                                                 "jetpack's preflight kept to the role (roles/jetpack/tasks/main.yml)",
    ("playbooks/edge.yml", "__jetpack_power_step"): "edge's summary line (the power mode's pending reboot)",
    ("playbooks/edge.yml", "__jetpack_pytorch"): "edge's summary line (PyTorch's version)",
    ("playbooks/edge.yml", "__jetpack_pytorch_plan"): "edge hands jetpack's PyTorch plan to python_env",
    ("playbooks/edge.yml", "__jetpack_pytorch_find_links"): "the same",
    ("playbooks/edge.yml", "__jetpack_pytorch_environments"): "the same",
    ("playbooks/edge.yml", "__docker_decision"): "edge hands the decision docker's preflight kept to the role's install "
                                                 "(decided once)",
    ("playbooks/tasks/offline_plan.yml", "__docker_offline"): "set by docker's offline_source.yml (rt47 M4)",
    ("playbooks/tasks/offline_plan.yml", "__nvidia_container_toolkit_offline"): "the same, container toolkit",
    ("playbooks/tasks/rollout_finish.yml", "__summary_probe"): "the summary role's reachability probe",
}
INCLUDES = {"include_role", "import_role", "ansible.builtin.include_role", "ansible.builtin.import_role"}
TASK_LISTS = ("tasks", "pre_tasks", "post_tasks", "handlers", "block", "rescue", "always")


def _entry_points(root, role):
    spec = root / "roles" / role / "meta" / "argument_specs.yml"
    if not spec.is_file():
        return set()
    return set((yaml.safe_load(spec.read_text(encoding="utf-8")) or {}).get("argument_specs") or {})


def _tasks(node):
    """Every task of a playbook or task file, blocks and plays opened."""
    if isinstance(node, list):
        for item in node:
            yield from _tasks(item)
    elif isinstance(node, dict):
        if not any(k in node for k in ("hosts", "import_playbook", "ansible.builtin.import_playbook")):
            yield node
        for key in TASK_LISTS:
            yield from _tasks(node.get(key) or [])


def _scanned(root):
    """(path, the role it belongs to or None) of the playbooks' and roles' YAML (molecule/ and tests/ play a role's
    inside on purpose)."""
    for rel in _files(root):
        if rel.startswith(("roles/", "playbooks/")) and rel.endswith((".yml", ".yaml", ".j2")):
            yield rel, rel.split("/")[1] if rel.startswith("roles/") else None


def tasks_from_not_declared(root=ROOT):
    """include_role/import_role tasks_from of another role that is not one of its declared entry points."""
    found = []
    for rel, own in _scanned(root):
        if not rel.endswith((".yml", ".yaml")):
            continue
        try:
            data = yaml.safe_load((root / rel).read_text(encoding="utf-8"))
        except yaml.YAMLError:
            continue
        for task in _tasks(data):
            for key in INCLUDES & set(task):
                args = task[key] if isinstance(task[key], dict) else {}
                role, entry = str(args.get("name", "")).rsplit(".", maxsplit=1)[-1], args.get("tasks_from")
                if entry is None or role == own:
                    continue
                if entry not in _entry_points(root, role):
                    found.append((rel, role, str(entry)))
    return sorted(set(found))


def private_reads(root=ROOT):
    """(file, variable) where a playbook or another role reads a role's __<role>_ variable that it does not define."""
    roles = sorted(_roles(root), key=len, reverse=True)          # cuda_repo before cuda
    if not roles:
        return []
    private = re.compile(r"\b__(%s)_\w+" % "|".join(map(re.escape, roles)))
    found = set()
    for rel, own in _scanned(root):
        lines = [line for line in (root / rel).read_text(encoding="utf-8").splitlines()
                 if not line.lstrip().startswith(("#", "{#"))]
        text = "\n".join(lines)
        for match in private.finditer(text):
            name, role = match.group(0), match.group(1)
            if role == own:
                continue
            defined = re.search(r"^\s*(?:-\s+)?%s\s*:|\bregister:\s*%s\b" % (re.escape(name), re.escape(name)), text, re.M)
            if not defined:
                found.add((rel, name))
    return sorted(found)


def test_tasks_from_only_declared_entry_points():
    found = tasks_from_not_declared()
    assert [f for f in found if f not in KNOWN_TASKS_FROM] == [], "not a declared entry point (meta/argument_specs.yml)"
    assert [k for k in KNOWN_TASKS_FROM if k not in found] == [], "gone: take it off KNOWN_TASKS_FROM"


def test_no_playbook_or_other_role_reads_a_roles_private_variables():
    found = private_reads()
    assert [f for f in found if f not in KNOWN_PRIVATE] == [], "reads another role's __<role>_ variables"
    assert [k for k in KNOWN_PRIVATE if k not in found] == [], "gone: take it off KNOWN_PRIVATE"


def test_the_rollout_and_the_mirror_use_entry_points_and_public_facts():
    """rt47 M5's two cases, by name: rollout_reboot.yml includes nvidia_driver's entry points reboot and fabric_wait
    (declared), and neither it nor mirror.yml reads a private variable or a task file of a role."""
    assert {"reboot", "fabric_wait"} <= _entry_points(ROOT, "nvidia_driver")
    rollout = yaml.safe_load((ROOT / "playbooks" / "tasks" / "rollout_reboot.yml").read_text(encoding="utf-8"))
    includes = [t["ansible.builtin.include_role"] for t in _tasks(rollout) if "ansible.builtin.include_role" in t]
    assert [(i["name"], i["tasks_from"]) for i in includes] == [
        ("dlbox.stack.nvidia_driver", "reboot"), ("dlbox.stack.nvidia_driver", "fabric_wait")]
    for rel in ("playbooks/tasks/rollout_reboot.yml", "playbooks/mirror.yml"):
        assert not [f for f in private_reads() + tasks_from_not_declared() if f[0] == rel], rel


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


def test_a_task_file_of_another_role_is_found_and_a_declared_entry_point_is_not(tmp_path):
    tree = _tree(tmp_path)
    (tree / "roles" / "docker" / "meta").mkdir()
    (tree / "roles" / "docker" / "meta" / "argument_specs.yml").write_text(
        "argument_specs:\n  main: {options: {}}\n  proxy: {options: {}}\n")
    (tree / "playbooks" / "site.yml").write_text(
        "- hosts: all\n  tasks:\n    - block:\n        - ansible.builtin.include_role:\n"
        "            name: dlbox.stack.docker\n            tasks_from: preflight.yml\n"
        "      rescue:\n        - ansible.builtin.import_role: {name: dlbox.stack.docker, tasks_from: proxy.yml}\n"
        "    - ansible.builtin.include_role: {name: dlbox.stack.docker, tasks_from: proxy}\n"
        "    - ansible.builtin.include_role: {name: dlbox.stack.docker}\n")
    (tree / "roles" / "docker" / "tasks" / "main.yml").write_text(
        "- ansible.builtin.include_role: {name: dlbox.stack.docker, tasks_from: own.yml}\n")
    (tree / "roles" / "cuda" / "tasks" / "main.yml").write_text(
        "- ansible.builtin.include_role: {name: dlbox.stack.docker, tasks_from: keys.yml}\n")
    assert tasks_from_not_declared(tree) == [("playbooks/site.yml", "docker", "preflight.yml"),
                                             ("playbooks/site.yml", "docker", "proxy.yml"),
                                             ("roles/cuda/tasks/main.yml", "docker", "keys.yml")]


def test_another_roles_private_variable_is_found_and_a_files_own_is_not(tmp_path):
    tree = _tree(tmp_path)
    (tree / "roles" / "cuda_repo" / "tasks").mkdir(parents=True)
    (tree / "roles" / "common" / "tasks").mkdir(parents=True)
    (tree / "roles" / "cuda_repo" / "tasks" / "main.yml").write_text("- debug: {msg: \"{{ __cuda_repo_url }}\"}\n")
    (tree / "playbooks" / "mirror.yml").write_text(
        "# a comment may name __cuda_repo_url\n"
        "- debug: {msg: \"{{ __cuda_repo_url }} {{ hostvars[h]['__docker_decided'] }}\"}\n"
        "- debug: {msg: \"{{ __common_needs }}\"}\n  vars:\n    __common_needs: 1\n"
        "- command: x\n  register: __cuda_state\n- debug: {msg: \"{{ __cuda_state }}\"}\n")
    (tree / "roles" / "cuda" / "tasks" / "main.yml").write_text("- debug: {msg: \"{{ __cuda_repo_fingerprint }}\"}\n")
    assert private_reads(tree) == [("playbooks/mirror.yml", "__cuda_repo_url"), ("playbooks/mirror.yml", "__docker_decided"),
                                   ("roles/cuda/tasks/main.yml", "__cuda_repo_fingerprint")]
