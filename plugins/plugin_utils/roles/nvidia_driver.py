# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The nvidia_driver role's decision (filter ``dlbox.stack.role_decide('nvidia_driver', ...)``).

- ``options(given)``: the role's variables, defaults from its argument specs.
- ``decide(plan, options, facts)``: ``facts`` = {"host": ``ansible_facts['dlbox_host']``, "request":
  ``dlbox_plan_request``, "hardware": ``dlbox_plan_hardware`` (the plan is resolved once from these when ``plan`` does
  not already say the role's method, branch, modules and profile), "system": {hostname, distribution,
  distribution_version, kernel, check_mode}, "paths": {pin_file, shim_mok_dir} (the role's own files), and
  ``nvidia_driver_facts``' readings beside them (installed, kernel, mok, sources, systemd, running_module; later
  simulation, madison, pending, after, archives, failed, kept)}. -> :func:`nvidia_driver_plan.decide`'s result (skip
  reason, package set, signing, branch change and pin, apt's verdict, the checks after the install, the copies and the
  rollback of a branch change) with ``plan`` (the plan it worked from), ``fm_names`` (Fabric Manager and the NVLink
  companions for the driver's apt transaction) and ``persistenced_manage`` (whether the role runs nvidia-persistenced).
  The role decides in its preflight and keeps the result (``__nvidia_driver_decided``); each later fact goes through
  the same entry point with that decision as ``facts["decided"]``: the facts of
  :data:`nvidia_driver_plan.LATER_FACTS` then run only the planner's steps that read them
  (:func:`nvidia_driver_plan.update`), the plan is not worked out again.
- ``module_check(decision, running, boot, build_kernels, dkms_kernels, modinfo, expected, headers)``: after the
  install, which kernels must have the module (without ``modinfo``), and with ``modinfo`` (nvidia_driver_facts') the
  verdict on each kernel's module version (:func:`nvidia_driver_kernel.module_check`); the deprecated filter
  ``dlbox.stack.nvidia_driver_module_check`` calls this entry.
- ``needs(decision)``: {"apt": the names the driver's apt transaction installs (before apt's verdict: the package set,
  Fabric Manager and the NVLink companions by name), "repositories": ["cuda"] with NVIDIA's repository}; nothing for a
  refused decision or a host that gets no driver.
"""

from __future__ import annotations

import json
import posixpath

from ansible_collections.dlbox.stack.plugins.plugin_utils import nvidia_driver_kernel as nk
from ansible_collections.dlbox.stack.plugins.plugin_utils import nvidia_driver_plan as ndp
from ansible_collections.dlbox.stack.plugins.plugin_utils import role_plan
from ansible_collections.dlbox.stack.plugins.plugin_utils.roles import RoleModuleError, _spec

ROLE = "nvidia_driver"
# facts that are not nvidia_driver_facts' readings (the rest of ``facts`` goes to the planner as it is)
CONTEXT = ("host", "request", "hardware", "system", "paths", "decided")


def options(given=None):
    return _spec.typed(ROLE, given)


def _text(value):
    return "" if value is None else str(value)


def planner_options(opts, facts):
    """The role's variables and the host's OS as :func:`nvidia_driver_plan.decide` reads them."""
    system, paths = facts.get("system") or {}, facts.get("paths") or {}
    return {"method": _text(opts["nvidia_driver_method"]), "branch": _text(opts["nvidia_driver_branch"]),
            "kernel_modules": _text(opts["nvidia_driver_kernel_modules"]), "profile": _text(opts["nvidia_driver_profile"]),
            "other_branch": opts["nvidia_driver_other_branch"], "change_branch": opts["nvidia_driver_change_branch"],
            "keep_dir": opts["nvidia_driver_keep_dir"], "in_container": opts["nvidia_driver_in_container"],
            "build_kernels": list(opts["nvidia_driver_build_kernels"] or []),
            "kernel_flavour": _text(opts["nvidia_driver_kernel_flavour"]), "secure_boot": opts["nvidia_driver_secure_boot"],
            "secure_boot_signing": opts["nvidia_driver_secure_boot_signing"], "mok_key": _text(opts["nvidia_driver_mok_key"]),
            "mok_certificate": _text(opts["nvidia_driver_mok_certificate"]), "shim_mok_dir": _text(paths.get("shim_mok_dir")),
            "pin_name": posixpath.basename(_text(paths.get("pin_file"))), "hostname": _text(system.get("hostname")),
            "distribution": _text(system.get("distribution")), "distribution_version": _text(system.get("distribution_version")),
            "kernel": _text(system.get("kernel")), "check_mode": bool(system.get("check_mode")),
            "unattended_signed": opts["nvidia_driver_unattended_signed"],
            "request_text": json.dumps(facts.get("request") or {})}


def fm_names(decision):
    """Fabric Manager at exactly the driver's version for the driver's apt transaction, as the planner names it
    (``fm_install_names``, its one place), then the NVLink companions (``fabric_install_names``: NSCQ, libnvsdm at the
    driver's version, NVLSM; IMEX on NVL trays)."""
    return list(decision.get("fm_install_names") or []) + list(decision.get("fabric_install_names") or [])


def persistenced_manage(decision, opts, facts):
    """Whether the role runs nvidia-persistenced: the server profile (the decided one), nvidia_driver_persistenced, and a
    host systemd runs (nvidia_driver_facts' ``systemd``)."""
    profile = decision.get("profile") or opts["nvidia_driver_profile"]
    return profile == "server" and bool(opts["nvidia_driver_persistenced"]) and bool(facts.get("systemd"))


def first(o, plan=None, host=None, request=None, hardware=None, facts=None, data_path=None):
    """The whole decision from the planner's options ``o`` (:func:`planner_options`): the plan ``plan`` when it already
    says the role's method, branch, modules and profile, else resolved once (plugin_utils.role_plan) with the role's
    variables as request overrides; ``plan`` in the result is the plan it worked from (filter ``nvidia_driver_plan``
    too)."""
    host = host or {}
    fits = ndp.plan_fits(plan, o.get("method") or "", str(o.get("branch") or ""), o.get("kernel_modules") or "",
                         o.get("profile") or "")
    got = role_plan.role_plan(ROLE, plan if fits else None, host=host, request=request, hardware=hardware,
                              overrides=None if fits else ndp.overrides(o), data_path=data_path)
    used = got["plan"]
    out = ndp.decide(got["data"], o, used, host=host, facts=facts)
    out["plan"] = {"ok": used.get("ok"), "errors": list(used.get("errors") or []), "host": used.get("host") or {},
                   "stack": got["stack"], "source": got["source"]}
    return out


def decide(plan, options, facts, data_path=None):  # pylint: disable=redefined-outer-name
    o = planner_options(options, facts)
    read = {key: value for key, value in facts.items() if key not in CONTEXT}
    decided = facts.get("decided")
    if decided is not None:
        out = ndp.update(role_plan.load_data(data_path), o, decided, read)
    else:
        out = first(o, plan, host=facts.get("host"), request=facts.get("request"), hardware=facts.get("hardware"), facts=read,
                    data_path=data_path)
    out.pop("options", None)
    out.pop("needs", None)
    out["fm_names"] = fm_names(out)
    out["persistenced_manage"] = persistenced_manage(out, options, facts)
    return out


def needs(decision):
    """What the driver's apt transaction downloads (nothing for a refused decision or a host without a driver)."""
    if not decision.get("ok") or decision.get("skip_reason") or not decision.get("set"):
        return {"apt": [], "repositories": []}
    if "install_names" in decision:
        apt = list(decision["install_names"]) + list(decision.get("fm_names") or [])
    else:
        apt = list(decision["set"]["packages"]) + [n for n in decision.get("madison") or [] if n not in decision["set"]["packages"]]
    return {"apt": apt, "repositories": ["cuda"] if decision.get("method") == "nvidia_repo" else []}


def module_check(decision, running="", boot=None, build_kernels=None, dkms_kernels=None, modinfo=None, expected="",
                 headers=None):
    """``decision``: the role's decision (``__nvidia_driver_decided``). ``boot``: nvidia_driver_facts' ``kernel`` read
    after the install (``running``, ``next_boot``, ``boot``). Without ``modinfo``: the kernels to ask; with it: the
    verdict too. ``headers``: {kernel: apt-cache show's exit status for linux-headers-<kernel>} (0: the archive has
    it; 100: not)."""
    if not isinstance(decision, dict) or not isinstance(decision.get("signing"), dict):
        raise RoleModuleError("nvidia_driver_module_check: expected the nvidia_driver plan (nvidia_driver_plan's result)")
    if modinfo is not None and not isinstance(modinfo, dict):
        raise RoleModuleError("nvidia_driver_module_check: modinfo must be nvidia_driver_facts' modinfo mapping")
    boot = boot if isinstance(boot, dict) else {}
    return nk.module_check(decision["signing"].get("path"), bool(decision.get("build_only")), build_kernels or [],
                           dkms_kernels or [], boot.get("running") or running, boot.get("next_boot") or "",
                           decision.get("pending_reboot_reason") or "", modinfo, str(expected or ""),
                           {str(k): int(rc) == 0 for k, rc in (headers or {}).items() if rc is not None and str(rc) in ("0", "100")},
                           boot.get("boot") if "boot" in boot else None)
