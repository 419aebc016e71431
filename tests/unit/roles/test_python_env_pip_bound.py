# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every pip command of the python_env role carries the bound on pip's network calls (issue 50 LOW 11):
``--timeout python_env_pip_timeout`` and ``--retries python_env_pip_retries`` right after ``-m pip``.

The command lines are the role's own: each ``ansible.builtin.command`` task of ``roles/python_env/tasks/`` whose argv
runs pip is templated by Ansible's Templar with the role's defaults and vars (loaded as Ansible loads them), the
enclosing block's vars and the task's vars, and a made-up environment (its folder, its pip index options)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

ROLE = Path(__file__).resolve().parents[3] / "roles" / "python_env"
ENV = {"name": "torch", "python": "3.12", "request_id": "abc", "requirements": ["torch==2.9.1"],
       "has_requirements_file": False, "pip_args": ["--index-url", "https://pypi.example/simple"]}


def _commands(tasks, inherited=None):
    """(name, argv template, vars) of each command task that runs pip, with its block's vars."""
    for task in tasks or []:
        scope = dict(inherited or {}, **(task.get("vars") or {}))
        if "block" in task:
            yield from _commands(task["block"], scope)
            continue
        argv = (task.get("ansible.builtin.command") or {}).get("argv")
        if argv is not None and re.search(r"__python_env_pip\b|'-m',\s*'pip'", str(argv)):
            yield task["name"], argv, scope


def _trusted(value):
    """The role's files as Ansible trusts them (a role's own text is a template)."""
    if isinstance(value, str):
        return trust_as_template(value)
    if isinstance(value, dict):
        return {key: _trusted(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_trusted(item) for item in value]
    return value


def pip_commands(given):
    loader = DataLoader()
    variables = dict(loader.load_from_file(str(ROLE / "defaults" / "main.yml")))
    variables.update(loader.load_from_file(str(ROLE / "vars" / "main.yml")))
    variables.update(given)
    variables.update({"__python_env_dir": "/opt/dlbox/envs/.versions/torch-1", "__python_env_env": ENV,
                      "__python_env_decided": {"wheelhouse": {"platforms": ["manylinux_2_28_x86_64"]}},
                      "item": {"item": ENV}})
    out = {}
    for name in ("build.yml", "wheelhouse.yml"):
        for task, argv, scope in _commands(loader.load_from_file(str(ROLE / "tasks" / name))):
            templar = Templar(loader=loader, variables=_trusted(dict(variables, **scope)))
            out["%s: %s" % (name, task)] = [str(arg) for arg in templar.template(_trusted(argv))]
    return out


def test_the_role_runs_pip_in_four_places():
    assert sorted(pip_commands({})) == [
        "build.yml: Download every wheel of the request",
        "build.yml: Install the downloaded wheels, nothing else",
        "build.yml: List what is installed",
        "wheelhouse.yml: Download the wheels of each request",
    ]


@pytest.mark.parametrize("given, timeout, retries", [
    ({}, "15", "5"),
    ({"python_env_pip_timeout": 7, "python_env_pip_retries": 2}, "7", "2"),
    ({"python_env_pip_timeout": "30", "python_env_pip_retries": "0"}, "30", "0"),
])
def test_every_pip_command_is_bounded(given, timeout, retries):
    for task, argv in pip_commands(given).items():
        at = argv.index("pip")
        assert argv[at - 1] == "-m", task
        options = argv[at + 1:]
        action = next(word for word in options if not word.startswith("-") and not word.isdigit())
        before = options[:options.index(action)]
        assert before[before.index("--timeout") + 1] == timeout, (task, argv)
        assert before[before.index("--retries") + 1] == retries, (task, argv)
        assert action in ("download", "install", "list"), (task, argv)


def test_the_build_download_keeps_its_index_options():
    argv = pip_commands({})["build.yml: Download every wheel of the request"]
    assert argv[:11] == ["/opt/dlbox/envs/.versions/torch-1/bin/python", "-m", "pip", "--disable-pip-version-check",
                         "--no-input", "--timeout", "15", "--retries", "5", "download", "--log"]
    assert argv[argv.index("--index-url") + 1] == "https://pypi.example/simple"
