# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the ``python_env`` role. Its tasks use two, the pure helpers they need: ``python_env_lock`` (a
``--require-hashes`` lock from pip's and sha256sum's output) and ``python_env_check_lines`` (dlbox-check's report as
lines). Everything the role decides (the environments, the wheelhouse's keys, the wheels' CUDA majors, the manifest)
is ``dlbox.stack.role_decide('python_env', ...)`` (plugins/plugin_utils/roles/python_env.py).

``python_env_plan`` and ``python_env_wheels`` stay public only for the names released in 0.1.0 (meta/runtime.yml
redirects ``pyenv_plan`` and ``pyenv_wheels`` to them until 1.0.0); each is the decision module's function."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.dlbox.stack.plugins.plugin_utils.lazy_import import LazyModule

_python_env = LazyModule("plugin_utils.python_env_plan")
_role_plan = LazyModule("plugin_utils.role_plan")
_decision = LazyModule("plugin_utils.roles.python_env")


def python_env_plan(environments, plan, host=None, request=None, hardware=None, requirements=None, options=None,
                    check_only=False, data_path=None):
    """The decision module's environments (``roles.python_env.environments``), ``options`` pip's index options.
    Returns ``{ok, errors, environments, driver_floors}``."""
    if plan is not None and (not isinstance(plan, dict) or "stack" not in plan):
        raise AnsibleFilterError("python_env_plan: expected the plan (dlbox_plan, the result of dlbox.stack.resolve_stack) or none")
    try:
        out = _decision.environments(environments, plan, host=host, request=request, hardware=hardware,
                                     requirements=requirements, pip=options or {}, check_only=check_only,
                                     data_path=data_path)
    except _role_plan.RolePlanError as exc:
        raise AnsibleFilterError(str(exc)) from exc
    out.pop("plan")
    return out


def python_env_wheels(dists, neutral=None, name=None, majors=None, data_path=None):
    """What a set of distributions carries (``roles.python_env.wheel_summary``); ``majors`` default: the data's."""
    if not majors:
        try:
            data = _role_plan.load_data(data_path)
        except _role_plan.RolePlanError as exc:
            raise AnsibleFilterError(str(exc)) from exc
        majors = sorted(int(e["major"]) for e in data["cuda"].get("minor_compat") or [])
    return _decision.wheel_summary(dists, neutral or (), name=name, majors=majors)


def python_env_lock(installed, sha256sum_output, header=None):
    """A ``--require-hashes`` lock (``{text, missing}``) from ``pip list --format=json`` and ``sha256sum`` output."""
    if isinstance(installed, str):
        raise AnsibleFilterError("python_env_lock: expected the parsed output of pip list --format=json (use from_json)")
    return _python_env.render_lock(installed, _python_env.parse_sha256sum(sha256sum_output), header or ())


def python_env_check_lines(report):
    """dlbox-check's ``--json`` report (parsed) as short lines, each step with its time and, when failed, cause and fix."""
    if not isinstance(report, dict):
        raise AnsibleFilterError("python_env_check_lines: expected dlbox-check's --json report, parsed (use from_json)")
    return _python_env.check_lines(report)


class FilterModule(object):
    """dlbox.stack python_env filters."""

    def filters(self):
        return {"python_env_lock": python_env_lock, "python_env_check_lines": python_env_check_lines,
                # kept public for the names released in 0.1.0 (meta/runtime.yml redirects pyenv_plan and pyenv_wheels
                # here until 1.0.0); the role's tasks ask role_decide('python_env') instead
                "python_env_plan": python_env_plan, "python_env_wheels": python_env_wheels}
