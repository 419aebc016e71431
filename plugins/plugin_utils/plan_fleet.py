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
import re
from collections.abc import Mapping

from ansible_collections.dlbox.stack.plugins.module_utils.versions import version_tuple
from ansible_collections.dlbox.stack.plugins.plugin_utils.workstation_plan import (
    ALIAS_PREFIX, PREFIX, SWITCHES, WorkstationPlanError, switch_value)

# The switches of workstation.yml and server.yml (dlbox.stack.workstation_roles, SWITCHES), each read from
# dlbox_install_<name> and, until 1.0.0, its deprecated alias dlbox_workstation_<name> (issue 47): a host that sets
# both to different values is refused (conflicts).
# The roles' variables that pin a part of the stack, and the dlbox_plan_request key each one sets (rt47b H1): they are
# part of the one plan per host, so the plan shows what the roles install and the resolver checks the whole stack once.
# cuda_versions (a list of toolkits) sets ``cuda`` to its highest toolkit, unless dlbox_plan_request.cuda names one of
# them; the others are checked against the plan's driver (plugins/filter/stack.py plan_fleet).
PINS = (("nvidia_driver_method", "driver_method"), ("nvidia_driver_branch", "driver_branch"),
        ("nvidia_driver_kernel_modules", "kernel_modules"), ("nvidia_driver_profile", "driver_profile"),
        ("cuda_versions", "cuda"), ("cudnn_version", "cudnn"))
# Every variable a plan is made from; the play's context is looked up for these names only.
NAMES = ("dlbox_plan_request", "dlbox_plan_hardware", "common_kernel_headers") + tuple(
    PREFIX + s for s in SWITCHES) + tuple(ALIAS_PREFIX + s for s in SWITCHES) + tuple(var for var, _key in PINS)
CONTEXT_PATTERN = (r"^(dlbox_plan_request|dlbox_plan_hardware|common_kernel_headers|dlbox_(install|workstation)_(%s)|"
                   r"nvidia_driver_(method|branch|kernel_modules|profile)|cuda_versions|cudnn_version)$" % "|".join(SWITCHES))
_MAJOR_MINOR = re.compile(r"^\d+\.\d+$")

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
        clash = conflicts(values)
        if clash:
            errors.append({"host": host, "variables": [v for pair in clash for v in pair[:2]], "conflicts": clash,
                           "request": values.get("dlbox_plan_request", {}), "hardware": values.get("dlbox_plan_hardware")})
            continue
        switches = {s: switch(values, s) for s in SWITCHES}
        if PREFIX + "kernel_headers" not in values and ALIAS_PREFIX + "kernel_headers" not in values:
            switches["kernel_headers"] = values.get("common_kernel_headers")
        entry = {"request": dict(values.get("dlbox_plan_request", {})), "switches": switches,
                 "pins": {var: values[var] for var, _key in PINS if var in values}}
        if "dlbox_plan_hardware" in values:
            entry["hardware"] = values["dlbox_plan_hardware"]
        else:
            detect.append(host)
        out[host] = entry
    return {"hosts": out, "detect": detect, "errors": errors, "message": message(errors)}


def deprecated_names(host_vars_of, hosts, context):
    """The deprecated switch names (``dlbox_workstation_*``, read until 1.0.0) that ``hosts`` or the play set, sorted,
    each with the name that replaces it: [(old, new)]. The plan reads them; the filter warns once per name."""
    hosts = list(hosts or [])
    if not hosts:
        return []
    played = play_level(context, host_vars_of[hosts[0]])
    used = set()
    for host in hosts:
        values = host_values(host_vars_of[host], context, played)
        used.update(name for name in SWITCHES if values.get(ALIAS_PREFIX + name) is not None)
    return [(ALIAS_PREFIX + name, PREFIX + name) for name in sorted(used)]


def switch(values, name):
    """The host's switch ``name``: dlbox_install_<name>, else its deprecated alias dlbox_workstation_<name> (None:
    neither set, or set to null)."""
    value = values.get(PREFIX + name)
    return values.get(ALIAS_PREFIX + name) if value is None else value


def _meaning(name, value):
    try:
        return switch_value(name, value)
    except WorkstationPlanError:
        return value


def conflicts(values):
    """[(new name, alias, new value, alias value)] for each switch the host sets under both names to different values
    (true and "yes" agree); a host with any is refused before any change."""
    out = []
    for name in SWITCHES:
        new, old = values.get(PREFIX + name), values.get(ALIAS_PREFIX + name)
        if new is not None and old is not None and _meaning(name, new) != _meaning(name, old):
            out.append((PREFIX + name, ALIAS_PREFIX + name, new, old))
    return out


def _unset(value):
    """A role variable left to the plan (its default): absent, None, empty, 'auto' or an empty list."""
    return value is None or value == [] or (isinstance(value, str) and value.strip().lower() in ("", "auto"))


def apply_pins(request, pins):
    """The one plan request of a host: ``dlbox_plan_request`` with the roles' pinning variables (``pins``: {variable:
    value}, :data:`PINS`) added. A pin that contradicts dlbox_plan_request's value for the same key is refused naming
    both. Returns ``{request, errors, toolkits}``; ``toolkits``: cuda_versions as given (sorted oldest first), empty when
    it was not set.

    >>> apply_pins({"pytorch": "2.9"}, {"nvidia_driver_branch": 570})["request"]
    {'pytorch': '2.9', 'driver_branch': '570'}
    >>> apply_pins({"driver_branch": "580"}, {"nvidia_driver_branch": "570"})["errors"]  # doctest: +ELLIPSIS
    ["nvidia_driver_branch '570' contradicts dlbox_plan_request.driver_branch '580'..."]
    >>> apply_pins({}, {"cuda_versions": ["12.6", "12.8"]})["request"]
    {'cuda': '12.8'}
    """
    out = dict(request or {})
    errors, toolkits = [], []
    for var, key in PINS:
        value = (pins or {}).get(var)
        if _unset(value):
            continue
        if var == "cuda_versions":
            if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) and _MAJOR_MINOR.match(v) for v in value):
                errors.append("cuda_versions must be a list of quoted major.minor versions such as [\"12.8\", \"13.0\"], "
                              "not %s." % _show(value))
                continue
            toolkits = sorted(set(value), key=version_tuple)
            asked = out.get(key)
            if asked is not None and str(asked).strip() and str(asked).strip() not in toolkits:
                errors.append("cuda_versions %s contradicts dlbox_plan_request.cuda '%s': the plan's CUDA must be one of the "
                              "toolkits the cuda role installs; add '%s' to cuda_versions or drop dlbox_plan_request.cuda "
                              "(the plan then takes the highest, %s)." % (_show(list(value)), asked, asked, toolkits[-1]))
                continue
            out[key] = str(asked).strip() if asked is not None and str(asked).strip() else toolkits[-1]
            continue
        text = str(value).strip()
        asked = out.get(key)
        if asked is not None and str(asked).strip() and str(asked).strip() != text:
            errors.append("%s '%s' contradicts dlbox_plan_request.%s '%s': both pin the same part of the stack; set one of "
                          "them, or both to the same value." % (var, text, key, str(asked).strip()))
            continue
        out[key] = text
    return {"request": out, "errors": errors, "toolkits": toolkits}


def message(errors):
    """The refusal of bad planning variables, naming them and what would work ("" when there are none)."""
    if not errors:
        return ""
    out = []
    clashes = [e for e in errors if e.get("conflicts")]
    if clashes:
        out.append("Each switch has one name now; its deprecated alias (removed in 1.0.0) must not say otherwise. Got: %s."
                   % "; ".join("%s sets %s" % (e["host"], ", ".join(
                       "%s=%s and %s=%s (set %s alone)" % (new, _show(a), old, _show(b), new) for new, old, a, b in e["conflicts"]))
                       for e in clashes))
    bad = [e for e in errors if not e.get("conflicts")]
    if bad:
        got = "; ".join("%s has %s (dlbox_plan_request=%s, dlbox_plan_hardware=%s)" % (
            e["host"], " and ".join(e["variables"]), _show(e["request"]), _show(e["hardware"])) for e in bad)
        out.append("%s. Got: %s." % (HELP, got))
    return " ".join(out)


def _show(value):
    try:
        return json.dumps(value, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return repr(value)
