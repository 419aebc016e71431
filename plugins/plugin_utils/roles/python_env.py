# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The python_env role's decision (filter ``dlbox.stack.role_decide('python_env', ...)``), with the pure rules of
``plugin_utils/python_env_plan.py``.

- ``options(given)``: the role's variables, defaults from its argument specs (typed).
- ``decide(plan, options, facts)``: ``facts`` = {"host": ``ansible_facts['dlbox_host']``, "request":
  ``dlbox_plan_request``, "hardware": ``dlbox_plan_hardware`` (the plan is resolved once from these when ``plan`` is
  None), "requirements": {environment name: the text of its requirements file}, "check_only": only the list's shape;
  later facts, each with "decided" (the kept decision: its environments are not decided again): "platforms"
  (vars/main.yml's manylinux tags by architecture: the wheelhouse's requests), "built":
  {"name", "downloaded": the downloaded files' names} (the wheels' CUDA majors) and with "report" (dlbox-check's
  --json), "installed" (pip list --format=json), "dir", "link" the environment's manifest}. -> {ok, errors,
  environments (each with pip_args, pip_conf, ...), driver_floors, plan (the plan it worked from), wheelhouse
  ({platforms, python, requests: [{name, python, key, marker}]}) with "platforms", built ({name, wheel_error,
  manifest}) with "built"}. The role decides once (tasks/plan.yml, ``__python_env_decided``); the wheelhouse's
  requests and each build's checks go through the same entry point with the kept facts and plan.
- ``needs(decision)``: {"apt": the role's own apt packages for the decided environments (its Pythons, their venv
  module, headers and a compiler: :func:`offline.python_env_apt`, the role's rule), "pypi": the requirements of each
  environment}; nothing for a refused decision.
- the role's own entries, pure helpers on what its tasks read after the decision: ``lock(installed, sha256sum_output,
  header)`` (a ``--require-hashes`` lock, ``{text, missing}``, from ``pip list --format=json`` and ``sha256sum``:
  tasks/build.yml), ``check_lines(report)`` (dlbox-check's ``--json`` report as short lines: tasks/verify.yml) and
  ``wheels(dists, neutral, name, majors)`` (what a set of distributions carries, :func:`wheel_summary`; ``majors``
  default: the data's CUDA majors).
"""

from __future__ import annotations

import hashlib
import json

from ansible_collections.dlbox.stack.plugins.plugin_utils import offline, role_plan
from ansible_collections.dlbox.stack.plugins.plugin_utils import python_env_plan as _rules
from ansible_collections.dlbox.stack.plugins.plugin_utils.roles import RoleModuleError, _spec

ROLE = "python_env"
VAR = "python_env_environments"


def options(given=None):
    return _spec.typed(ROLE, given)


def _url(value):
    """A URL option; a spec default that is still a template (``{{ dlbox_site_mirrors.pypi ... }}``: only a role run
    renders it) counts as unset."""
    return "" if not value or "{{" in str(value) else str(value)


def pip_options(opts):
    """pip's index options as :func:`_rules.pip_index_args` reads them, from the role's variables."""
    return {"index_url": _url(opts["python_env_index_url"]), "extra_index_urls": opts["python_env_extra_index_urls"] or [],
            "find_links": opts["python_env_find_links"] or [], "no_index": bool(opts["python_env_no_index"]),
            "pytorch_index": bool(opts["python_env_pytorch_index"]),
            "pytorch_index_url": _url(opts["python_env_pytorch_index_url"]),
            "pytorch_index_base_url": _url(opts["python_env_pytorch_index_base_url"]),
            "proxy": _url(opts["python_env_proxy"]), "interpreters": opts["python_env_interpreters"] or {}}


def _default_environments(plan):
    stack = plan.get("stack") or {}
    return [{"name": name, "frameworks": [name]} for name in _rules.FRAMEWORKS if stack.get(name)]


def environments(envs, plan, host=None, request=None, hardware=None, requirements=None, pip=None, check_only=False,
                 data_path=None):  # pylint: disable=too-many-locals
    """Every environment of ``python_env_environments`` decided from the plan (see the module docstring).

    ``plan`` is ``dlbox_plan`` or None (resolved once, plugin_utils.role_plan); an empty list means one per framework of
    the plan. An environment that sets pytorch, tensorflow, variant or python (or needs a TensorFlow the plan lacks) is
    re-resolved with the host, the request and the hardware, so the resolver checks it. ``pip``: :func:`pip_options`.
    Returns ``{ok, errors, environments, driver_floors, plan}``; RolePlanError when the data does not load."""
    got = role_plan.role_plan(ROLE, plan, host=host, request=request, hardware=hardware, data_path=data_path)
    plan, data = got["plan"], got["data"]
    pip = pip or {}
    envs = envs if envs not in (None, "") else []
    errors = _rules.check_environments(envs, VAR)
    if not errors and not envs:
        envs = _default_environments(plan)
        if not envs:
            errors.append("%s is empty and the plan has no framework; name the environments to build." % VAR)
    if errors or check_only:
        return {"ok": not errors, "errors": errors, "environments": [], "driver_floors": {}, "plan": plan}
    if not plan.get("ok"):
        errors.extend("the plan was refused: %s" % e for e in plan.get("errors") or [])
    resolved = []
    for index, env in enumerate(envs):
        var = "%s[%d]" % (VAR, index)
        stack = plan.get("stack") or {}
        plan_host = plan.get("host") or {}
        sub_request = _rules.stack_request(env, request)
        if sub_request is None and _rules.needs_tensorflow_plan(env, stack):
            sub_request = _rules.stack_request(dict(env, tensorflow=env.get("tensorflow") or "latest"), request)
        if sub_request is not None:
            # the public resolver, exactly as plan.yml calls it, with this environment's request; the Pythons
            # python_env_interpreters brings are planned even where the OS archive lacks them
            own = {"own_pythons": list(pip["interpreters"])} if pip.get("interpreters") else {}
            sub = role_plan.role_plan(ROLE, None, host=host, request=sub_request, hardware=hardware,
                                      data_path=data_path, **own)["plan"]
            if not sub["ok"]:
                asked = ", ".join("%s.%s=%r" % (var, k, env[k]) for k in _rules.STACK_KEYS
                                  if env.get(k) not in (None, "", "auto"))
                errors.extend("%s ('%s'%s): %s" % (var, env["name"], ", " + asked if asked else "", e) for e in sub["errors"])
                continue
            stack, plan_host = sub["stack"], sub["host"]
        out = _rules.environment_request(env, stack, plan_host, var, (requirements or {}).get(env["name"], ""))
        errors.extend(out.pop("errors"))
        out["pip_args"] = _rules.pip_index_args(pip, out["frameworks"]["pytorch"])
        out["pip_conf"] = _rules.venv_pip_conf(out["pip_args"], out["frameworks"]["pytorch"])
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
            "driver_floors": _rules.driver_floors(data["cuda"].get("minor_compat")), "plan": plan}


def wheel_summary(dists, neutral=(), name=None, majors=()):
    """What a set of distributions carries (downloaded file names or ``pip list`` entries): {majors, cuda, cudnn,
    nccl, nvidia, error}; ``error`` refuses two CUDA majors mixed (``name``: the environment's)."""
    pairs = []
    for dist in dists or []:
        if isinstance(dist, dict):
            pairs.append({"name": dist["name"], "version": str(dist["version"])})
        else:
            parsed = _rules.parse_dist_filename(dist)
            if parsed:
                pairs.append({"name": parsed[0], "version": parsed[1]})
    known = [int(m) for m in majors]
    summary = _rules.wheel_cuda_summary(pairs, known, neutral or ())
    summary["error"] = _rules.wheel_mix_error(
        _rules.cuda_majors_of_wheels([(p["name"], p["version"]) for p in pairs], known, neutral or ()), VAR, name) or ""
    return summary


def wheelhouse_key(request_id, python, platforms):
    """The marker key of one wheelhouse request: the first 12 hex digits of the sha256 of the JSON of [request id,
    Python, platforms] (as Ansible's ``to_json | hash('sha256')`` wrote it, so the markers already there still match)."""
    return hashlib.sha256(json.dumps([request_id, python, list(platforms)]).encode("utf-8")).hexdigest()[:12]


def _wheelhouse(opts, decided, table):
    arch = ((decided["plan"] or {}).get("host") or {}).get("arch") or "x86_64"
    platforms = list(opts["python_env_wheelhouse_platforms"] or []) or list((table or {}).get(arch) or [])
    requests = []
    for env in decided["environments"]:
        python = str(opts["python_env_wheelhouse_python"] or env["python"])
        key = wheelhouse_key(env["request_id"], python, platforms)
        requests.append({"name": env["name"], "python": python, "key": key, "marker": "%s-%s.json" % (env["name"], key),
                         "requirements": env["requirements"], "has_requirements_file": env["has_requirements_file"],
                         "pip_args": env["pip_args"]})
    return {"platforms": platforms, "requests": requests}


def _manifest(opts, decided, env, built):
    report = built["report"]
    frameworks = report.get("frameworks") or []
    floors = decided["driver_floors"]
    carried = wheel_summary(built.get("installed") or [], opts["python_env_cuda_neutral_packages"] or [],
                            majors=list(floors))
    cuda = list(dict.fromkeys(f["cuda"] for f in frameworks if f.get("cuda")))
    required = [floors.get(str(c).split(".", 1)[0]) for c in cuda]
    return {"name": env["name"], "path": built.get("link"), "build": built.get("dir"), "request_id": env["request_id"],
            "python": report.get("python"), "requirements": env["requirements"], "stack": env["stack"],
            "plan_data_date": (decided["plan"] or {}).get("data_date"),
            "frameworks": {f["framework"]: f.get("version") for f in frameworks}, "frameworks_modules": env["modules"],
            "cuda": cuda, "cudnn": list(dict.fromkeys(str(f["cudnn"]) for f in frameworks if f.get("cudnn"))),
            "wheels": {k: v for k, v in carried.items() if k != "error"},
            "driver_required": list(dict.fromkeys(r for r in required if r)), "driver_floors": floors,
            "gpu_expected": env["gpu_expected"], "pip_index_args": env["pip_args"]}


def decide(plan, options, facts, data_path=None):  # pylint: disable=redefined-outer-name
    facts = dict(facts or {})
    prior = facts.pop("decided", None)
    if prior:
        # a later fact: the environments were decided once (the kept decision), only the later parts are added
        decided = {k: prior[k] for k in ("ok", "errors", "environments", "driver_floors", "plan", "apt_rule")}
        decided["facts"] = dict(prior.get("facts") or {}, **facts)
    else:
        decided = environments(options["python_env_environments"], plan, host=facts.get("host") or {},
                               request=facts.get("request") or {}, hardware=facts.get("hardware"),
                               requirements=facts.get("requirements") or {}, pip=pip_options(options),
                               check_only=bool(facts.get("check_only")), data_path=data_path)
        decided["facts"] = facts
        compilers = options["python_env_compiler_packages"]
        decided["apt_rule"] = {"interpreters": options["python_env_interpreters"] or {},
                               "install_python": bool(options["python_env_install_python"]),
                               "build_tools": bool(options["python_env_install_build_tools"]),
                               "compilers": ["g++"] if compilers is None else list(compilers)}
    if facts.get("platforms") is not None:
        decided["wheelhouse"] = _wheelhouse(options, decided, facts["platforms"])
    built = facts.get("built")
    if built:
        env = next((e for e in decided["environments"] if e["name"] == built.get("name")), None)
        if env is None:
            raise role_plan.RolePlanError("python_env: no decided environment named %r" % built.get("name"))
        out = {"name": env["name"], "wheel_error": wheel_summary(
            built.get("downloaded") or [], options["python_env_cuda_neutral_packages"] or [], name=env["name"],
            majors=list(decided["driver_floors"]))["error"]}
        if built.get("report") is not None:
            out["manifest"] = _manifest(options, decided, env, built)
        decided["built"] = out
    return decided


def needs(decision):
    """The role's own apt packages for its decided environments, and each environment's requirements (from PyPI or
    the index it names); nothing for a refused decision."""
    if not decision.get("ok") or not decision.get("environments"):
        return {"apt": [], "pypi": {}}
    rule = decision["apt_rule"]
    apt = offline.python_env_apt(decision["environments"], rule["interpreters"], rule["install_python"],
                                 rule["build_tools"], rule["compilers"])
    return {"apt": apt, "pypi": {env["name"]: list(env["requirements"]) for env in decision["environments"]}}


def lock(installed, sha256sum_output, header=None):
    """A ``--require-hashes`` lock (``{text, missing}``) from ``pip list --format=json`` and ``sha256sum`` output."""
    if isinstance(installed, str):
        raise RoleModuleError("role_module(python_env, lock): expected the parsed output of pip list --format=json (use from_json)")
    return _rules.render_lock(installed, _rules.parse_sha256sum(sha256sum_output), header or ())


def check_lines(report):
    """dlbox-check's ``--json`` report (parsed) as short lines, each step with its time and, when failed, cause and fix."""
    if not isinstance(report, dict):
        raise RoleModuleError("role_module(python_env, check_lines): expected dlbox-check's --json report, parsed (use from_json)")
    return _rules.check_lines(report)


def wheels(dists, neutral=None, name=None, majors=None, data_path=None):
    """What a set of distributions carries (:func:`wheel_summary`); ``majors`` default: the data's CUDA majors."""
    if not majors:
        majors = sorted(int(e["major"]) for e in role_plan.load_data(data_path)["cuda"].get("minor_compat") or [])
    return wheel_summary(dists, neutral or (), name=name, majors=majors)
