# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the ``python_env`` role: ``python_env_plan``, ``python_env_wheels``, ``python_env_lock`` and
``python_env_check_lines``."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.dlbox.stack.plugins.plugin_utils.lazy_import import LazyModule

_python_env = LazyModule("plugin_utils.python_env_plan")
_role_plan = LazyModule("plugin_utils.role_plan")

VAR = "python_env_environments"


def _data(data_path):
    try:
        return _role_plan.load_data(data_path)
    except _role_plan.RolePlanError as exc:
        raise AnsibleFilterError(str(exc)) from exc


def _known_majors(data):
    return sorted(int(e["major"]) for e in data["cuda"].get("minor_compat") or [])


def _default_environments(plan):
    stack = plan.get("stack") or {}
    return [{"name": name, "frameworks": [name]} for name in _python_env.FRAMEWORKS if stack.get(name)]


def python_env_plan(environments, plan, host=None, request=None, hardware=None, requirements=None, options=None,
                    check_only=False, data_path=None):
    """Decide every environment of ``python_env_environments`` from the plan.

    ``plan`` is ``dlbox_plan`` (``resolve_stack``'s result), or None to resolve it once here
    (plugin_utils.role_plan) from ``host``, ``request`` and ``hardware``; an empty list of environments means one
    per framework of the plan. An environment that sets pytorch, tensorflow, variant or python (or
    needs a TensorFlow the plan lacks) is re-resolved with ``host`` facts, the host's ``request`` and
    ``hardware``, so the resolver checks it. ``requirements``: environment name -> text of its
    requirements file; ``options`` pip's index options (``_python_env.pip_index_args``), which each
    environment gets as ``pip_args`` (and ``pip_conf``: its own pip.conf, or "", ``venv_pip_conf``).
    ``check_only``: only check the list's shape (no resolving per environment).
    Returns ``{ok, errors, environments, driver_floors}``.
    """
    if plan is not None and (not isinstance(plan, dict) or "stack" not in plan):
        raise AnsibleFilterError("python_env_plan: expected the plan (dlbox_plan, the result of dlbox.stack.resolve_stack) or none")
    try:
        got = _role_plan.role_plan("python_env", plan, host=host, request=request, hardware=hardware, data_path=data_path)
    except _role_plan.RolePlanError as exc:
        raise AnsibleFilterError(str(exc)) from exc
    plan, data = got["plan"], got["data"]
    envs = environments if environments not in (None, "") else []
    errors = _python_env.check_environments(envs, VAR)
    if not errors and not envs:
        envs = _default_environments(plan)
        if not envs:
            errors.append("%s is empty and the plan has no framework; name the environments to build." % VAR)
    if errors or check_only:
        return {"ok": not errors, "errors": errors, "environments": [], "driver_floors": {}}
    if not plan.get("ok"):
        errors.extend("the plan was refused: %s" % e for e in plan.get("errors") or [])
    resolved = []
    for index, env in enumerate(envs):
        var = "%s[%d]" % (VAR, index)
        stack = plan.get("stack") or {}
        plan_host = plan.get("host") or {}
        sub_request = _python_env.stack_request(env, request)
        if sub_request is None and _python_env.needs_tensorflow_plan(env, stack):
            sub_request = _python_env.stack_request(dict(env, tensorflow=env.get("tensorflow") or "latest"), request)
        if sub_request is not None:
            # the public resolver, exactly as plan.yml calls it, with this environment's request
            try:
                # the Pythons python_env_interpreters brings are planned even where the OS archive lacks them
                own = {"own_pythons": list((options or {}).get("interpreters") or {})} if (options or {}).get("interpreters") else {}
                sub = _role_plan.role_plan("python_env", None, host=host, request=sub_request, hardware=hardware,
                                           data_path=data_path, **own)["plan"]
            except _role_plan.RolePlanError as exc:
                raise AnsibleFilterError(str(exc)) from exc
            if not sub["ok"]:
                asked = ", ".join("%s.%s=%r" % (var, k, env[k]) for k in _python_env.STACK_KEYS if env.get(k) not in (None, "", "auto"))
                errors.extend("%s ('%s'%s): %s" % (var, env["name"], ", " + asked if asked else "", e) for e in sub["errors"])
                continue
            stack, plan_host = sub["stack"], sub["host"]
        out = _python_env.environment_request(env, stack, plan_host, var, (requirements or {}).get(env["name"], ""))
        errors.extend(out.pop("errors"))
        out["pip_args"] = _python_env.pip_index_args(options or {}, out["frameworks"]["pytorch"])
        out["pip_conf"] = _python_env.venv_pip_conf(out["pip_args"], out["frameworks"]["pytorch"])
        out["index"] = index
        out["var"] = var
        out["owner"] = env.get("owner")
        out["group"] = env.get("group")
        out["jupyter_kernel"] = bool(env.get("jupyter_kernel", False))
        out["has_requirements_file"] = bool(env.get("requirements"))
        out["stack"] = {"python": stack.get("python"), "pytorch": out["frameworks"]["pytorch"],
                        "tensorflow": out["frameworks"]["tensorflow"]}
        resolved.append(out)
    return {"ok": not errors, "errors": errors, "environments": resolved,
            "driver_floors": _python_env.driver_floors(data["cuda"].get("minor_compat"))}


def python_env_wheels(dists, neutral=None, name=None, majors=None, data_path=None):
    """What a set of distributions carries: downloaded file names or ``pip list`` entries.

    ``majors``: the CUDA majors to know (the keys of ``python_env_plan``'s ``driver_floors``); default: the data's.
    Returns ``{majors, cuda, cudnn, nccl, nvidia, error}``; ``error`` is the refusal when two CUDA majors
    are mixed (``name`` is the environment's), else an empty string.
    """
    pairs = []
    for dist in dists or []:
        if isinstance(dist, dict):
            pairs.append({"name": dist["name"], "version": str(dist["version"])})
        else:
            parsed = _python_env.parse_dist_filename(dist)
            if parsed:
                pairs.append({"name": parsed[0], "version": parsed[1]})
    known = [int(m) for m in majors] if majors else _known_majors(_data(data_path))
    summary = _python_env.wheel_cuda_summary(pairs, known, neutral or ())
    majors = _python_env.cuda_majors_of_wheels([(p["name"], p["version"]) for p in pairs], known, neutral or ())
    summary["error"] = _python_env.wheel_mix_error(majors, VAR, name) or ""
    return summary


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
        return {"python_env_plan": python_env_plan, "python_env_wheels": python_env_wheels, "python_env_lock": python_env_lock,
                "python_env_check_lines": python_env_check_lines}
