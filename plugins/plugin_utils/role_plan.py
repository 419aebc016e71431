# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one way a role gets its part of the plan, on the controller (pure apart from reading ``data/``).

A role's decision filter (``cuda_plan``, ``python_env_plan``, ``cudnn_selection``, ``nccl_plan``, ...) calls
:func:`role_plan` with what its tasks hand it: ``dlbox_plan`` when ``playbooks/plan.yml`` set one (else None),
the host's facts (``ansible_facts['dlbox_host']``), ``dlbox_plan_request`` and ``dlbox_plan_hardware``, and the
role's own variables that pin a part of the stack (``overrides``). It gets back the plan to work from:

- ``dlbox_plan`` itself when it is given and no override asks for something it did not pick;
- otherwise the resolver's plan, resolved ONCE with the request plus the overrides. Each override is checked
  like any request value (``stack_input.REQUEST_KEYS``), and a problem names the role's variable.

Usage (a filter in ``plugins/filter/<role>.py``)::

    from ansible_collections.dlbox.stack.plugins.plugin_utils.role_plan import RolePlanError, role_plan

    try:
        got = role_plan("cudnn", plan, host=host, request=request, hardware=hardware,
                        overrides={"cudnn": ("cudnn_version", "9.10")})
    except RolePlanError as exc:          # data/compat.yml or the GPU catalog does not load
        raise AnsibleFilterError(str(exc)) from exc
    got["ok"], got["errors"]              # the plan's verdict (and override problems, naming the variable)
    got["plan"]                           # the whole plan (resolve_stack's shape)
    got["stack"]                          # the role's slice: {"cuda": {...}, "cudnn": {...}} (ROLE_PARTS)
    got["host"], got["source"]            # plan["host"]; "dlbox_plan" or "resolved"
    got["data"]                           # data/compat.yml as the validating loader returns it
    role_data("nccl", got["data"])        # the parts of it the role hands on (ROLE_DATA)

In YAML the same entry point is the ``dlbox.stack.role_plan`` filter::

    __nccl_plan: "{{ dlbox_plan | default(none) | dlbox.stack.role_plan('nccl', host=..., request=..., hardware=...) }}"

:func:`resolve` is the resolver exactly as the ``resolve_stack`` filter (and so ``plan.yml``) runs it; no role
calls ``resolve_stack`` itself or opens ``data/``.
"""

from __future__ import annotations

from ansible_collections.dlbox.stack.plugins.plugin_utils import stack_input, stack_resolver
from ansible_collections.dlbox.stack.plugins.plugin_utils.compat_data import (
    CompatDataError,
    load_compat,
    load_compat_index,
    load_gpu_index,
)

# The parts of plan["stack"] each role reads (its slice). None: the whole stack.
ROLE_PARTS = {
    "common": (),
    "cuda": ("cuda",),
    "cuda_repo": ("cuda",),
    "cudnn": ("cuda", "cudnn"),
    "docker": ("container_toolkit",),
    "nccl": ("cuda", "nccl"),
    "nvidia_container_toolkit": ("container_toolkit",),
    "nvidia_driver": ("driver", "fabric_manager"),
    "python_env": None,
}

# The request keys a role re-resolves with (None: the whole request). cudnn checks the installed CUDA against the
# GPUs and the driver only: the rest of the request (PyTorch, TensorFlow, ...) would judge another CUDA.
ROLE_REQUEST_KEYS = {"cudnn": ("driver_branch", "driver_method", "kernel_modules")}


def _supported_os(data):
    return sorted(key for key, entry in ((data.get("os") or {}).get("distros") or {}).items() if entry.get("supported"))


# The parts of data/compat.yml a role's tasks hand on (to a module or a template): the role reads them here,
# through the validating loader, never as a file.
ROLE_DATA = {
    "common": lambda data: {"supported_os": _supported_os(data)},
    "nccl": lambda data: {"known": data.get("nccl") or [], "minor_compat": data["cuda"].get("minor_compat") or [],
                          "architectures": data.get("architectures") or {},
                          "p2p_issues": data.get("nccl_p2p_issues") or [],
                          "packages": list((data["cuda"].get("repo_packages") or {}).get("nccl") or [])},
    "nvidia_container_toolkit": lambda data: {"packages": list((data.get("container_toolkit") or {}).get("packages") or []),
                                              "min_version": (data.get("container_toolkit") or {}).get("min_version"),
                                              "engine_packages": dict((data.get("container_toolkit") or {})
                                                                      .get("engine_packages") or {})},
}


def role_data(role, data):
    """The parts of the loaded data ``role`` hands on (ROLE_DATA), {} for a role that needs none."""
    pick = ROLE_DATA.get(role)
    return pick(data) if pick else {}


class RolePlanError(Exception):
    """data/compat.yml or the GPU catalog could not be loaded (the filter turns it into AnsibleFilterError)."""


def load_data(data_path=None):
    """data/compat.yml through the validating loader; RolePlanError when it does not load."""
    try:
        return load_compat(data_path)
    except CompatDataError as exc:
        raise RolePlanError(str(exc)) from exc


def resolve(host, request=None, hardware=None, data_path=None, catalog_path=None, own_pythons=()):
    """The resolver as ``plan.yml`` runs it (the ``resolve_stack`` filter): strict input first, then the plan.

    ``host``: ``ansible_facts['dlbox_host']`` (may be empty when ``hardware`` is given); ``request``: the
    request (``dlbox_plan_request`` shape); ``hardware``: ``dlbox_plan_hardware`` (replaces detection);
    ``own_pythons``: Python versions the host brings itself (python_env_interpreters), never refused for the OS.
    Returns the plan dict (ok, errors, warnings, notes, host, stack, data_date); RolePlanError on bad data.
    """
    data = load_data(data_path)
    try:
        index = load_gpu_index(data_path, catalog_path)
    except CompatDataError as exc:
        raise RolePlanError(str(exc)) from exc
    problems = stack_input.check_request(request)
    if hardware is not None:
        problems += stack_input.check_hardware(data, hardware)
    if problems:
        return stack_resolver.refused_plan(data, problems, {"planning": hardware is not None})
    if hardware:
        if hardware.get("captures"):
            # captured outputs are read by _gpu_facts' parsers: imported only for a plan that brings captures
            # pylint: disable-next=import-outside-toplevel
            from ansible_collections.dlbox.stack.plugins.plugin_utils.captures import CaptureError, hardware_from_captures

            try:
                hardware = hardware_from_captures(hardware)
            except CaptureError as exc:
                return stack_resolver.refused_plan(data, ["dlbox_plan_hardware.%s" % exc], {"planning": True})
        host = index.host_from_hardware(hardware)
    return stack_resolver.resolve(load_compat_index(data_path), host or {}, request or {}, gpu_index=index,
                                  own_pythons=own_pythons)


# Request keys whose choice sits in another part of the stack, or under another field than ``version``.
_PLANNED_AT = {
    "driver_branch": ("driver", "branch"),
    "driver_method": ("driver", "method"),
    "driver_profile": ("driver", "profile"),
    "kernel_modules": ("driver", "kernel_modules"),
    "pytorch_variant": ("pytorch", "variant"),
}


def _planned(plan, key):
    """The value the plan chose for request key ``key``, as text (None when it has none).

    >>> _planned({"stack": {"driver": {"branch": 580}}}, "driver_branch")
    '580'
    """
    part_name, field = _PLANNED_AT.get(key, (key, "version"))
    part = ((plan or {}).get("stack") or {}).get(part_name)
    value = part.get(field) if isinstance(part, dict) else (part if part_name == key and field == "version" else None)
    return None if value is None else str(value)


def check_overrides(overrides):
    """Problems of the role's own variables used as request values, each naming the variable."""
    errors = []
    for key, (var, value) in (overrides or {}).items():
        check = stack_input.REQUEST_KEYS.get(key)
        if check is None:
            raise ValueError("role_plan: %r is not a request key (stack_input.REQUEST_KEYS)" % key)
        if stack_input.is_unset(value):
            continue
        problem = check(var, key, value)
        if problem:
            # the checks say "<var>.<key>: ..."; a role variable is named by itself
            errors.append(problem.replace("%s.%s: " % (var, key), "%s: " % var, 1))
    return errors


def role_plan(role, plan=None, host=None, request=None, hardware=None, overrides=None, data_path=None,
              catalog_path=None, recheck=False, own_pythons=()):
    """The plan ``role`` works from: ``dlbox_plan`` when present, else resolved once (see the module docstring).

    ``overrides``: ``{request_key: (variable_name, value)}`` from the role's variables; unset values (None, "",
    "auto") leave the plan's choice. ``recheck``: resolve even when the plan picked the same values, to check
    what is installed on the host (its facts, ``hardware``) rather than to choose (cudnn's check of the
    installed CUDA). Returns ``{ok, errors, plan, stack, host, source, data}``.
    """
    if role not in ROLE_PARTS:
        raise ValueError("role_plan: unknown role %r (known: %s)" % (role, ", ".join(sorted(ROLE_PARTS))))
    data = load_data(data_path)
    errors = check_overrides(overrides)
    if errors:
        refused = stack_resolver.refused_plan(data, errors, {"planning": hardware is not None})
        return _result(role, refused, "refused", data)
    if ROLE_PARTS[role] == ():
        # a role that reads no part of the stack (common): nothing to resolve, only the data it hands on
        return _result(role, plan if isinstance(plan, dict) else {"ok": True, "errors": []}, "no plan needed", data)
    asked = {key: str(value).strip() for key, (_var, value) in (overrides or {}).items() if not stack_input.is_unset(value)}
    given = isinstance(plan, dict) and "stack" in plan
    if given and not recheck and all(_planned(plan, key) == value for key, value in asked.items()):
        return _result(role, plan, "dlbox_plan", data)
    keys = ROLE_REQUEST_KEYS.get(role)
    sub_request = {k: v for k, v in (request or {}).items() if keys is None or k in keys}
    sub_request.update(asked)
    own = {"own_pythons": tuple(own_pythons)} if own_pythons else {}
    return _result(role, resolve(host or {}, sub_request, hardware=hardware, data_path=data_path,
                                 catalog_path=catalog_path, **own), "resolved", data)


def _result(role, plan, source, data):
    stack = plan.get("stack") or {}
    parts = ROLE_PARTS[role]
    return {"ok": bool(plan.get("ok")), "errors": list(plan.get("errors") or []), "plan": plan,
            "stack": dict(stack) if parts is None else {k: stack.get(k) for k in parts},
            "host": plan.get("host") or {}, "source": source, "data": data}
