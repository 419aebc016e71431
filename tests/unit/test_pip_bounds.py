"""Every pip network call the roles and playbooks make is bounded (issue 50, item 7: "give every apt and pip network
call a bound"): pip's --timeout (seconds one connection may stall) and --retries, passed on the command line so that
a pip.conf or PIP_TIMEOUT on the host cannot lift them. pip documents both options (`pip install --help`: "--timeout
<sec> Set the socket timeout (default 15 seconds)", "--retries <retries> Maximum number of retries each connection
should attempt (default 5 times)"). A stalled mirror then fails the host with pip's reason, within the bound, and the
rollout's batch goes on within its budget.

Static: each task that runs pip (a command whose argv holds `-m pip` with install or download, or the
ansible.builtin.pip module) carries both options, directly or through python_env's __python_env_pip_bound; the
variables of the roles that take them are positive integers checked by the role's preflight before any change."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
BOUND_NAMES = ("__python_env_pip_bound", "__python_env_pip ")
RUNNERS = ("ansible.builtin.command", "ansible.builtin.shell", "command", "shell", "ansible.builtin.pip", "pip")
# a pip command line: `-m pip` then (its global options, then) install or download; python_env's own prefix list
# (__python_env_pip, build.yml) followed by install or download; `pip install` in a shell line
PIP_CALL = re.compile(r"'-m',\s*'pip',[^\]]*\]?[^']*'(install|download)'|__python_env_pip \+ \['(install|download)'"
                      r"|\bpip3? (install|download)\b")


def _tasks(node):
    """Every task of a task list, blocks flattened (a block's own text holds its tasks too: skip it)."""
    for task in node or []:
        if not isinstance(task, dict):
            continue
        inner = [task.get(key) for key in ("block", "rescue", "always") if task.get(key)]
        if inner:
            for part in inner:
                yield from _tasks(part)
        else:
            yield task


def _task_files():
    for path in sorted((ROOT / "roles").glob("*/tasks/*.yml")) + sorted((ROOT / "playbooks").rglob("*.yml")):
        data = yaml.safe_load(path.read_text())
        if not isinstance(data, list):
            continue
        plays = [p for p in data if isinstance(p, dict) and any(k in p for k in ("tasks", "pre_tasks", "post_tasks"))]
        if plays:
            for play in plays:
                for key in ("pre_tasks", "tasks", "post_tasks"):
                    for task in _tasks(play.get(key)):
                        yield path, task
        else:
            for task in _tasks(data):
                yield path, task


def pip_calls():
    """[(file, task name, task text)] of every task that downloads or installs with pip."""
    calls = []
    for path, task in _task_files():
        # the module's own arguments: a command or shell line, or the pip module (a task's name or a message that
        # quotes a pip command line runs nothing)
        args = {key: task[key] for key in RUNNERS if key in task}
        if not args:
            continue
        text = yaml.safe_dump(args, width=10 ** 6)
        if PIP_CALL.search(text) or "ansible.builtin.pip" in args or "pip" in args:
            calls.append((path.relative_to(ROOT).as_posix(), task.get("name", "?"), text))
    return calls


def _bounded(text):
    return ("--timeout" in text and "--retries" in text) or any(name in text for name in BOUND_NAMES)


def test_the_scan_finds_the_pip_calls_it_must_judge():
    """The scan itself sees the calls (a scan that finds none would pass everything)."""
    files = {path for path, _name, _text in pip_calls()}
    assert {"roles/cuda/tasks/pip_tree.yml", "roles/cudnn/tasks/archive.yml", "roles/python_env/tasks/build.yml",
            "roles/python_env/tasks/wheelhouse.yml", "roles/package_cache/tasks/server_pypi.yml"} <= files, sorted(files)


def test_every_pip_network_call_is_bounded():
    unbounded = ["%s: %s" % (path, name) for path, name, text in pip_calls() if not _bounded(text)]
    assert not unbounded, "pip calls without --timeout and --retries (issue 50, item 7): " + "; ".join(unbounded)


def test_python_envs_bound_holds_both_options():
    """python_env's calls are bounded through its prefix: the bound list holds both options, and the prefix
    (__python_env_pip, build.yml's block variables) ends with it."""
    bound = yaml.safe_load((ROOT / "roles/python_env/vars/main.yml").read_text())["__python_env_pip_bound"]
    assert bound[0] == "--timeout" and bound[2] == "--retries", bound
    build = yaml.safe_load((ROOT / "roles/python_env/tasks/build.yml").read_text())
    prefix = next(t["vars"]["__python_env_pip"] for t in build if "__python_env_pip" in (t.get("vars") or {}))
    assert prefix.strip().rstrip("}").strip().endswith("+ __python_env_pip_bound"), prefix


def test_the_roles_bounds_are_checked_before_any_change():
    """cuda and cudnn take their bounds as variables (defaults pip's own: 15 s, 5 retries), in the argument specs
    as integers and refused by the preflight when not positive, naming the variable."""
    for role in ("cuda", "cudnn"):
        defaults = yaml.safe_load((ROOT / "roles" / role / "defaults/main.yml").read_text())
        specs = yaml.safe_load((ROOT / "roles" / role / "meta/argument_specs.yml").read_text())
        options = specs["argument_specs"]["main"]["options"]
        preflight = yaml.safe_load((ROOT / "roles" / role / "tasks/preflight.yml").read_text())
        asserts = [t["ansible.builtin.assert"] for t in preflight if "ansible.builtin.assert" in t]
        for name, value in (("%s_pip_timeout" % role, 15), ("%s_pip_retries" % role, 5)):
            assert defaults[name] == value and options[name]["type"] == "int" and options[name]["default"] == value
            # in a condition (a bound the preflight compares), and named in that assert's message
            checks = [a for a in asserts if any(re.search(r"\b%s \| int >=? 0" % name, c) for c in a["that"])]
            assert checks and all(name in a["fail_msg"] for a in checks), (role, name)
