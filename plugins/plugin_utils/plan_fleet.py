# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Planning every host of a play in one task (``playbooks/plan.yml``), on the controller.

Ansible runs each task of each host in a worker process of its own, whatever the task does: planning per host
cost a lab of 116 hosts several seconds per task. So ``plan.yml`` reads every host's planning variables ONCE
(:func:`read_inputs`, from ``hostvars``), detects only the hosts that need it, then resolves every host in one
process (the ``dlbox.stack.plan_fleet`` filter) and hands each host its plan.

A host's value of a planning variable is its own (``hostvars[host]``: inventory, facts, extra vars), except where
the play itself sets the variable (play ``vars``, ``import_playbook`` vars, ``vars_files``): those are the same for
every host and come from the task's own context (``context``), as they would in a task of each host. A variable
the play sets is recognised by its value in the context differing from the first host's own (or the first host
having none).
"""

from __future__ import annotations

import json
from collections.abc import Mapping

# The switches of workstation.yml (dlbox.stack.workstation_roles), each read from dlbox_workstation_<name>.
SWITCHES = ("driver", "cuda", "cudnn", "nccl", "docker", "python_env", "kernel_headers")
# Every variable a plan is made from; the play's context is looked up for these names only.
NAMES = ("dlbox_plan_request", "dlbox_plan_hardware", "common_kernel_headers") + tuple(
    "dlbox_workstation_%s" % s for s in SWITCHES)
CONTEXT_PATTERN = r"^(dlbox_plan_request|dlbox_plan_hardware|common_kernel_headers|dlbox_workstation_(%s))$" % "|".join(SWITCHES)

_MISSING = object()
HELP = ('dlbox_plan_request must be a mapping such as {"pytorch": "2.9", "kernel_modules": "open"}; '
        'dlbox_plan_hardware a mapping such as {"gpus": ["RTX 4090"], "os": "ubuntu-22.04", "arch": "x86_64"} '
        'or {"captures": ["/path/nvidia-smi-q-x.xml"], "os": "ubuntu-22.04"}; dlbox_plan_output a file path')


class PlanFleetError(ValueError):
    """The inputs do not have the shape this module expects (a bug in the playbook, not bad user input)."""


def _get(mapping, name):
    try:
        if name in mapping:
            return mapping[name]
    except KeyError:
        pass
    return _MISSING


def _is_sequence(value):
    """Jinja's ``sequence`` test (a length and items: lists, strings, mappings), which plan.yml applied to
    dlbox_plan_hardware.gpus."""
    return hasattr(value, "__len__") and hasattr(value, "__getitem__")


def play_level(context, first):
    """The names whose value the play sets: in ``context`` (the task's variables) and not the first host's own."""
    if not isinstance(context, Mapping):
        raise PlanFleetError("plan_inputs: the context must be a mapping of variable names to values")
    out = set()
    for name, value in context.items():
        own = _get(first, name) if first is not None else _MISSING
        if own is _MISSING or own != value:
            out.add(name)
    return out


def host_values(host_vars, context, played):
    """The planning variables of one host: {name: value} for the names defined for it."""
    out = {}
    for name in NAMES:
        value = context[name] if name in played else _get(host_vars, name)
        if value is not _MISSING:
            out[name] = value
    return out


def check(values):
    """The problems of one host's planning variables, as plan.yml's check said them (empty: fine)."""
    request = values.get("dlbox_plan_request", {})
    hardware = values.get("dlbox_plan_hardware", _MISSING)
    bad = []
    if not isinstance(request, Mapping):
        bad.append("dlbox_plan_request")
    if hardware is not _MISSING and not isinstance(hardware, Mapping):
        bad.append("dlbox_plan_hardware")
    elif hardware is not _MISSING and not _is_sequence(hardware.get("gpus", [])):
        bad.append("dlbox_plan_hardware.gpus")
    return bad


def inputs(host_vars_of, hosts, context):
    """Read and check the planning variables of ``hosts``.

    ``host_vars_of``: host name -> that host's variables (``hostvars``); ``context``: the planning variables defined
    in the task's own context ({name: value}). Returns {hosts: {host: {request, hardware (absent: detect),
    switches}}, detect: [hosts without dlbox_plan_hardware], errors: [{host, variables, request, hardware}]}.
    """
    hosts = list(hosts or [])
    if not hosts:
        return {"hosts": {}, "detect": [], "errors": [], "message": ""}
    played = play_level(context, host_vars_of[hosts[0]])
    out, detect, errors = {}, [], []
    for host in hosts:
        values = host_values(host_vars_of[host], context, played)
        bad = check(values)
        if bad:
            errors.append({"host": host, "variables": bad, "request": values.get("dlbox_plan_request", {}),
                           "hardware": values.get("dlbox_plan_hardware")})
            continue
        switches = {s: values.get("dlbox_workstation_%s" % s) for s in SWITCHES}
        if "dlbox_workstation_kernel_headers" not in values:
            switches["kernel_headers"] = values.get("common_kernel_headers")
        entry = {"request": dict(values.get("dlbox_plan_request", {})), "switches": switches}
        if "dlbox_plan_hardware" in values:
            entry["hardware"] = values["dlbox_plan_hardware"]
        else:
            detect.append(host)
        out[host] = entry
    return {"hosts": out, "detect": detect, "errors": errors, "message": message(errors)}


def message(errors):
    """The refusal of bad planning variables, naming them and what would work ("" when there are none)."""
    if not errors:
        return ""
    got = "; ".join("%s has %s (dlbox_plan_request=%s, dlbox_plan_hardware=%s)" % (
        e["host"], " and ".join(e["variables"]), _show(e["request"]), _show(e["hardware"])) for e in errors)
    return "%s. Got: %s." % (HELP, got)


def _show(value):
    try:
        return json.dumps(value, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return repr(value)
