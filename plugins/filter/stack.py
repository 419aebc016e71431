# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters ``dlbox.stack.resolve_stack``, ``dlbox.stack.lookup_gpu``, ``dlbox.stack.plan_text``, ``dlbox.stack.workstation_roles``,
``dlbox.stack.plan_inputs`` and ``dlbox.stack.plan_fleet``."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible.utils.display import Display

from ansible_collections.dlbox.stack.plugins.plugin_utils.lazy_import import LazyModule

role_plan = LazyModule("plugin_utils.role_plan")
workstation_plan = LazyModule("plugin_utils.workstation_plan")
plan_fleet_utils = LazyModule("plugin_utils.plan_fleet")
_display = Display()
_compat_data = LazyModule("plugin_utils.compat_data")
_resolver = LazyModule("plugin_utils.stack_resolver")


def _gpu_index(data_path, catalog_path):
    try:
        return _compat_data.load_gpu_index(data_path, catalog_path)
    except _compat_data.CompatDataError as exc:
        raise AnsibleFilterError(str(exc)) from exc


def resolve_stack(host, request=None, hardware=None, data_path=None, catalog_path=None):
    """Plan the driver/CUDA/cuDNN/NCCL/PyTorch/TensorFlow stack for a host.

    ``host`` is ``ansible_facts['dlbox_host']`` (may be empty when ``hardware`` is given);
    ``request`` pins parts of the stack (driver_branch, kernel_modules, cuda, cudnn, pytorch,
    pytorch_variant, tensorflow, python, jetpack); ``hardware`` ({gpus, nvswitch, os, arch,
    driver_version, l4t, captures}) replaces detection, for planning without the machine (``captures``: files
    captured on it, see plugin_utils.captures); ``data_path`` points at
    another compat.yml, ``catalog_path`` at another GPU catalog (false: none). Returns the plan dict (ok, errors, warnings, notes, host, stack, data_date).
    """
    try:
        # the one resolver entry (plugin_utils.role_plan.resolve), which the roles' own filters use too
        return role_plan.resolve(host, request, hardware=hardware, data_path=data_path, catalog_path=catalog_path)
    except role_plan.RolePlanError as exc:
        raise AnsibleFilterError(str(exc)) from exc


def lookup_gpu(name_or_pci_id, data_path=None, catalog_path=None):
    """Catalog entry for a GPU name ("RTX 4090", "NVIDIA H100 80GB HBM3") or PCI device id ("2684", "10de:2684");
    None if unknown or ambiguous."""
    return _gpu_index(data_path, catalog_path).lookup(name_or_pci_id)


def _part(value, fmt):
    return fmt(value) if value else "-"


def workstation_roles(plan, switches=None):
    """The roles ``playbooks/workstation.yml`` runs on this host and why (``workstation_plan.workstation_roles``)."""
    if not isinstance(plan, dict) or "stack" not in plan:
        raise AnsibleFilterError("workstation_roles: expected the result of dlbox.stack.resolve_stack")
    if switches is not None and not isinstance(switches, dict):
        raise AnsibleFilterError("workstation_roles: switches must be a mapping such as {'cuda': false}")
    try:
        return workstation_plan.workstation_roles(plan, switches)
    except workstation_plan.WorkstationPlanError as exc:
        raise AnsibleFilterError(str(exc)) from exc


def _hardware_line(host):
    gpus = host.get("gpus") or []
    if gpus:
        hw = ", ".join("%sx %s (%s, CC %s)" % (g.get("count", 1), g.get("name"), g.get("architecture", "?"), g.get("cc", "?"))
                       for g in gpus)
    elif host.get("jetson"):
        hw = "Jetson module %s" % (host["jetson"].get("model") or "?")
    else:
        hw = "no NVIDIA GPU"
    extras = [host.get("os") or "unknown OS", host.get("arch") or "unknown arch"]
    if host.get("nvswitch"):
        extras.append("NVSwitch")
    fabric = host.get("fabric") or {}
    if fabric.get("kind") or fabric.get("conflicts"):
        # which NVLink fabric, and from what (issue 49: the host's evidence before the GPU model)
        extras.append("NVLink fabric %s (from %s)" % (fabric.get("kind") or "in conflict", {
            "detected": "what the host shows", "detected+model": "the host's links and the GPU model",
            "model": "the GPU model", "asked": "dlbox_plan_hardware.fabric"}.get(fabric.get("source"), fabric.get("source"))))
    extras.append("driver %s installed" % host["driver_installed"] if host.get("driver_installed") else "no driver installed")
    return "Hardware:   %s; %s" % (hw, ", ".join(extras))


def plan_text(plan, host_name=None, roles=None):
    """Render a plan from ``resolve_stack`` as readable lines (for ``ansible.builtin.debug``).

    ``roles``: the result of ``workstation_roles`` for the host, to add one line per role of workstation.yml
    (runs or skipped, and why). A refused plan shows its reasons once, and its hardware line only where GPUs
    were found (a refusal of the input itself leaves the host unknown).
    """
    if not isinstance(plan, dict) or "stack" not in plan:
        raise AnsibleFilterError("plan_text: expected the result of dlbox.stack.resolve_stack")
    host = plan.get("host") or {}
    stack = plan.get("stack") or {}
    ok = bool(plan.get("ok"))
    verdict = "OK" if ok else "REFUSED"
    title = "Plan for %s" % host_name if host_name else "Plan"
    lines = ["%s: %s (compatibility data of %s)" % (title, verdict, plan.get("data_date", "?"))]
    if ok or host.get("gpus") or host.get("jetson"):
        lines.append(_hardware_line(host))
    if ok:
        drv = stack.get("driver")
        lines.append("Driver:     " + _part(drv, lambda d: "R%s%s, %s kernel modules, >= %s, %s profile%s%s" % (
            d.get("branch"), " %s" % d["designation"] if d.get("designation") else "", d.get("kernel_modules"),
            d.get("min_version"), d.get("profile") or "desktop",
            " (%s)" % d["profile_reason"] if d.get("profile_reason") else "",
            " [%s]" % ", ".join(d["packages"]) if d.get("packages") else "")))
        if drv and drv.get("method_reason"):
            lines.append("Source:     %s: %s" % (drv.get("method"), drv["method_reason"]))
        lines.append("CUDA:       " + _part(stack.get("cuda"), lambda c: "%s%s%s" % (
            c.get("version"), " (%s)" % c["package"] if c.get("package") else "",
            "; cuda_versions: %s" % ", ".join(c["toolkits"]) if c.get("toolkits") else "")))
        lines.append("cuDNN:      " + _part(stack.get("cudnn"), lambda c: str(c.get("version"))))
        lines.append("NCCL:       " + _part(stack.get("nccl"), lambda c: str(c.get("version"))))
        ctk = stack.get("container_toolkit")
        lines.append("Docker:     " + _part(ctk, lambda t: "for GPU containers%s" % (
            ", >= %s for CDI devices" % t["docker_cdi_min"] if t.get("docker_cdi_min") else "")))
        lines.append("Toolkit:    " + _part(ctk, lambda t: "NVIDIA Container Toolkit %s%s" % (
            t.get("version"), " (>= %s)" % t["min_version"] if t.get("min_version") else "")))
        unbuilt = ""
        if isinstance(roles, dict) and (roles.get("run") or {}).get("python_env") is False:
            unbuilt = " (not installed by workstation.yml here: see python_env below)"
        lines.append("PyTorch:    " + _part(stack.get("pytorch"), lambda t: "%s %s from %s%s%s" % (
            t.get("version"), t.get("variant"), t.get("index_url"),
            ", torchvision %s" % t["torchvision"] if t.get("torchvision") else "", unbuilt)))
        lines.append("TensorFlow: " + _part(stack.get("tensorflow"), lambda t: "%s%s" % (t.get("version"), unbuilt)))
        lines.append("Python:     " + _part(stack.get("python"), lambda t: str(t.get("version"))))
        lines.append("Fabric Mgr: " + _part(stack.get("fabric_manager"), lambda f: "%s %s" % (f.get("package"), f.get("version"))))
        lines.append("JetPack:    " + _part(stack.get("jetpack"), lambda j: "%s (L4T %s, CUDA %s, cuDNN %s)" % (
            j.get("version"), j.get("l4t"), j.get("cuda"), j.get("cudnn"))))
        split = workstation_plan.cuda_split_line(plan)
        if split:
            lines.append("CUDA split: " + split)
        if isinstance(roles, dict) and roles.get("roles"):
            lines.append("workstation.yml on this host:")
            width = max(len(r["role"]) for r in roles["roles"])
            lines.extend("  %-*s  %-7s  %s" % (width, r["role"], "runs" if r["run"] else "skipped", r["why"]) for r in roles["roles"])
    for key, label in (("errors", "Refused because"), ("warnings", "Warnings"), ("notes", "Notes")):
        if plan.get(key):
            lines.append("%s:" % label)
            lines.extend("  - %s" % item for item in plan[key])
    return lines


def plan_inputs(hostvars, hosts, context=None):
    """Every host's planning variables, read and checked once for the play (``plugin_utils.plan_fleet.inputs``)."""
    try:
        got = plan_fleet_utils.inputs(hostvars, hosts, context or {})
        old_names = plan_fleet_utils.deprecated_names(hostvars, hosts, context or {})
    except plan_fleet_utils.PlanFleetError as exc:
        raise AnsibleFilterError(str(exc)) from exc
    for old, new in old_names:
        _display.deprecated("%s is the old name of %s (it said 'workstation' on servers and edge boxes too); set %s "
                            "instead" % (old, new, new), version="1.0.0", collection_name="dlbox.stack")
    return got


def _pinned_plan(host, entry, data_path, catalog_path):
    """One host's plan from its ONE request: dlbox_plan_request with the roles' pinning variables (``entry["pins"]``,
    plan_fleet.apply_pins), so the plan is what the roles install (rt47b H1). A pin that contradicts dlbox_plan_request,
    or a bad value, refuses the plan before anything else; each toolkit of cuda_versions besides the plan's CUDA is
    checked by the resolver with the plan's driver (``stack.cuda.toolkits`` lists them all, oldest first)."""
    pinned = plan_fleet_utils.apply_pins(entry["request"], entry.get("pins") or {})
    hardware = entry.get("hardware")
    pins = entry.get("pins") or {}
    errors = list(pinned["errors"])
    errors.extend(role_plan.check_overrides({key: (var, pins[var]) for var, key in plan_fleet_utils.PINS
                                             if var in pins and var != "cuda_versions"}))
    if errors:
        data = role_plan.load_data(data_path)
        return _resolver.refused_plan(data, errors, {"planning": hardware is not None})
    plan = resolve_stack(host, pinned["request"], hardware=hardware, data_path=data_path, catalog_path=catalog_path)
    toolkits = pinned["toolkits"]
    cuda = (plan.get("stack") or {}).get("cuda")
    if not toolkits or not plan.get("ok") or not isinstance(cuda, dict):
        return plan
    driver = (plan.get("stack") or {}).get("driver") or {}
    held = {"driver_branch": ("the plan's driver branch", str(driver["branch"]))} if driver.get("branch") else {}
    if driver.get("method"):
        held["driver_method"] = ("the plan's driver method", driver["method"])
    for version in toolkits:
        if version == cuda.get("version"):
            continue
        pos = list(pins["cuda_versions"]).index(version)
        got = role_plan.role_plan("cuda", None, host=host, request=pinned["request"], hardware=hardware, data_path=data_path,
                                  catalog_path=catalog_path,
                                  overrides=dict(held, cuda=("cuda_versions[%d]" % pos, version)))
        plan["errors"].extend("cuda_versions[%d] ('%s'): %s" % (pos, version, problem) for problem in got["errors"])
    plan["ok"] = not plan["errors"]
    plan["stack"]["cuda"] = dict(cuda, toolkits=toolkits)
    return plan


def plan_fleet(inputs, hostvars, hosts, data_path=None, catalog_path=None):
    """Plan every host of ``hosts`` in one go: what ``plan_inputs`` read, plus each host's detected facts
    (``hostvars[host].ansible_facts.dlbox_host``). Returns {plans, workstation, text, refused}."""
    if not isinstance(inputs, dict) or not isinstance(inputs.get("hosts"), dict):
        raise AnsibleFilterError("plan_fleet: expected the result of dlbox.stack.plan_inputs")
    plans, roles, texts, refused = {}, {}, [], []
    for name in hosts or []:
        entry = inputs["hosts"].get(name)
        if entry is None:
            raise AnsibleFilterError("plan_fleet: %s was not read by dlbox.stack.plan_inputs" % name)
        if entry.get("hardware"):
            host = {}  # the hardware given replaces detection (role_plan.resolve)
        else:
            facts = hostvars[name].get("ansible_facts") or {}
            host = facts.get("dlbox_host") or {}
        plan = _pinned_plan(host, entry, data_path, catalog_path)
        try:
            decided = workstation_roles(plan, entry["switches"])
        except AnsibleFilterError as exc:
            raise AnsibleFilterError("%s: %s" % (name, exc)) from exc
        plans[name], roles[name] = plan, decided
        texts.append("\n".join(plan_text(plan, name, roles=decided)))
        if not plan.get("ok"):
            refused.append(name)
    return {"plans": plans, "workstation": roles, "text": "\n\n".join(texts), "refused": refused}


class FilterModule(object):
    """dlbox.stack resolver filters."""

    def filters(self):
        return {
            "resolve_stack": resolve_stack,
            "lookup_gpu": lookup_gpu,
            "plan_text": plan_text,
            "workstation_roles": workstation_roles,
            "plan_inputs": plan_inputs,
            "plan_fleet": plan_fleet,
        }
