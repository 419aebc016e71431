# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""An assert's message is templated before the assert runs (ansible-core 2.19: "Finalization of task args for
'ansible.builtin.assert' failed: Error while resolving value for 'fail_msg': '<var>' is undefined", even where the
condition holds). A variable the condition reads with ``| default(...)`` may be undefined, so the message must read it
with a default too. Found on edge.yml's default path (dlbox_edge_docker_source unset): molecule/edge_docker failed at
its first task after the preflight."""

from __future__ import annotations

import pathlib
import re

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
NESTED = ("block", "rescue", "always", "tasks", "pre_tasks", "post_tasks", "handlers")


def _asserts(node):
    if isinstance(node, list):
        for item in node:
            yield from _asserts(item)
    elif isinstance(node, dict):
        for key in ("ansible.builtin.assert", "assert"):
            if isinstance(node.get(key), dict):
                yield node.get("name"), node[key]
        for key in NESTED:
            if key in node:
                yield from _asserts(node[key])


def undefined_in_messages(text):
    """(task name, variable) for each variable the condition defaults and the message reads bare."""
    found = []
    for name, args in _asserts(yaml.safe_load(text)):
        that = args.get("that")
        that = " ".join(map(str, that)) if isinstance(that, list) else str(that)
        message = str(args.get("fail_msg", "")) + str(args.get("msg", ""))
        for expr in re.findall(r"\{\{(.*?)\}\}", message, re.S):
            for var in set(re.findall(r"(?<![.\w'\"])([a-z_][a-z0-9_]*)\b", expr)):
                defaulted_in_that = re.search(r"(?<![.\w])%s\s*\|\s*default\(" % re.escape(var), that)
                bare_in_message = re.search(r"(?<![.\w'\"])%s\b(?!\s*\|\s*default)(?![\w.]*\s*\|\s*default)"
                                            % re.escape(var), expr)
                if defaulted_in_that and bare_in_message and not re.search(
                        r"(?<![.\w])%s\s*\|\s*default\(" % re.escape(var), expr):
                    found.append((name, var))
    return found


def test_the_check_catches_a_bare_variable_the_condition_defaults():
    text = """
- name: Check x
  ansible.builtin.assert:
    that: x | default('a') in ['a', 'b']
    fail_msg: "x is '{{ x }}'"
"""
    assert undefined_in_messages(text) == [("Check x", "x")]
    assert undefined_in_messages(text.replace("{{ x }}", "{{ x | default('a') }}")) == []


def test_no_assert_message_reads_a_variable_its_condition_defaults():
    files = sorted(ROOT.glob("playbooks/*.yml")) + sorted(ROOT.glob("playbooks/tasks/*.yml")) \
        + sorted(ROOT.glob("roles/*/tasks/*.yml"))
    bad = ["%s: %r reads %s bare" % (path.relative_to(ROOT), name, var)
           for path in files for name, var in undefined_in_messages(path.read_text(encoding="utf-8"))]
    assert not bad, bad
