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
- the later steps, each a declared entry (keyword arguments only; before issue 47 a filter each, whose input is now the
  first keyword): ``hold_changes(wanted, held, recorded, installed)``, ``kept_holds(held, kept)``,
  ``kernel_without_module(simulation, installed)``, ``unattended(simulation, policy, config, ...)``,
  ``boot_without_module(kernel_packages, boot, signing, new_version, simulation, running)``, ``update_plan(decision,
  installed, simulation, apps, force, check_mode)``, ``rollback_request(records, ...)``, ``rollback_hint(records, ...)``,
  ``persistence(unit_text, ...)``, ``failure_logs(result)``, ``install_failure(result, tails)``,
  ``fabric_not_ready_hint(result, timeout_s, fabric, installed, driver_version, missing_modules, logs, service,
  fm_package)`` (the deprecated filter ``dlbox.stack.fabric_not_ready_hint`` calls it).
- ``needs(decision)``: {"apt": the names the driver's apt transaction installs (before apt's verdict: the package set,
  Fabric Manager and the NVLink companions by name), "repositories": ["cuda"] with NVIDIA's repository}; nothing for a
  refused decision or a host that gets no driver.
"""

from __future__ import annotations

import base64
import json
import posixpath

from ansible_collections.dlbox.stack.plugins.module_utils import kernel as ku
from ansible_collections.dlbox.stack.plugins.plugin_utils import fabric_state as fs
from ansible_collections.dlbox.stack.plugins.plugin_utils import nvidia_driver_holds as nh
from ansible_collections.dlbox.stack.plugins.plugin_utils import nvidia_driver_kernel as nk
from ansible_collections.dlbox.stack.plugins.plugin_utils import nvidia_driver_plan as ndp
from ansible_collections.dlbox.stack.plugins.plugin_utils import nvidia_driver_rollback as nr
from ansible_collections.dlbox.stack.plugins.plugin_utils import nvidia_driver_unattended as nu
from ansible_collections.dlbox.stack.plugins.plugin_utils import nvidia_driver_update as nup
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


_DECISION = "expected the nvidia_driver decision (__nvidia_driver_decided, the role's kept decision)"


def module_check(decision, running="", boot=None, build_kernels=None, dkms_kernels=None, modinfo=None, expected="",
                 headers=None):
    """``decision``: the role's decision (``__nvidia_driver_decided``). ``boot``: nvidia_driver_facts' ``kernel`` read
    after the install (``running``, ``next_boot``, ``boot``). Without ``modinfo``: the kernels to ask; with it: the
    verdict too. ``headers``: {kernel: apt-cache show's exit status for linux-headers-<kernel>} (0: the archive has
    it; 100: not)."""
    if not isinstance(decision, dict) or not isinstance(decision.get("signing"), dict):
        raise RoleModuleError("role_module(nvidia_driver, module_check): %s" % _DECISION)
    if modinfo is not None and not isinstance(modinfo, dict):
        raise RoleModuleError("role_module(nvidia_driver, module_check): modinfo must be nvidia_driver_facts' modinfo mapping")
    boot = boot if isinstance(boot, dict) else {}
    return nk.module_check(decision["signing"].get("path"), bool(decision.get("build_only")), build_kernels or [],
                           dkms_kernels or [], boot.get("running") or running, boot.get("next_boot") or "",
                           decision.get("pending_reboot_reason") or "", modinfo, str(expected or ""),
                           {str(k): int(rc) == 0 for k, rc in (headers or {}).items() if rc is not None and str(rc) in ("0", "100")},
                           boot.get("boot") if "boot" in boot else None)


# --- the role's later steps (issue 47: its own entries, declared in ROLES, reached by role_module; before, eleven
# public filters of plugins/filter/nvidia_driver_{holds,update,kernel}.py, now tombstoned in meta/runtime.yml). Each
# takes keyword arguments only (role_module passes them as given) and refuses what it cannot read with the words the
# filter had.

def _names(value, what, entry="hold_changes"):
    if value is None:
        return []
    if isinstance(value, str):
        return value.split()
    if not isinstance(value, (list, tuple)):
        raise RoleModuleError("role_module(nvidia_driver, %s): %s must be a list of package names" % (entry, what))
    return [str(v) for v in value]


def _output(value, what, name):
    """A command's output: text, or the stdout of a registered result ("" for none)."""
    if value is None:
        return ""
    if isinstance(value, dict):
        value = value.get("stdout", "")
    if not isinstance(value, str):
        raise RoleModuleError("%s: %s must be a command's output (text or a registered result)" % (name, what))
    return value


def hold_changes(wanted, held=None, recorded=None, installed=None):
    """``wanted``: the holds the role wants (the plan's ``holds``, or a rollback's holds from before); ``held``:
    ``apt-mark showhold``'s lines; ``recorded``: what the role held before (its record; None: no record, the holds on
    driver packages are taken as the role's); ``installed``: dpkg's package names (None: not read). ->
    :func:`nvidia_driver_holds.hold_changes` ({hold, release, wanted, keep_user})."""
    return nh.hold_changes(_names(wanted, "wanted"), _names(held, "held"),
                           None if recorded is None else _names(recorded, "recorded"),
                           None if installed is None else _names(installed, "installed"))


def kernel_without_module(simulation, installed=None):
    """``simulation``: ``apt-get -s upgrade --with-new-pkgs``'s output (text or a registered result); ``installed``:
    dpkg's package names. The new kernel releases apt would install without their signed NVIDIA module."""
    if isinstance(simulation, dict):
        simulation = simulation.get("stdout", "")
    if not isinstance(simulation, str):
        raise RoleModuleError("role_module(nvidia_driver, kernel_without_module): expected apt-get -s output (text or a command result)")
    return nh.kernel_without_module(simulation, _names(installed, "installed", "kernel_without_module"))


def unattended(simulation, policy=None, config=None, distro_id="", codename="", installed=None, held=None,
               blacklist=None, program=True):
    """What unattended-upgrades takes, from the host's own configuration (:func:`nvidia_driver_unattended.decide`):
    ``simulation``: ``apt-get -s upgrade --with-new-pkgs``; ``policy``: ``apt-cache policy``; ``config``: ``apt-config
    dump`` (text or registered results)."""
    name = "role_module(nvidia_driver, unattended)"
    return nu.decide(_output(simulation, "simulation", name), _output(policy, "policy", name),
                     _output(config, "config", name), str(distro_id or ""), str(codename or ""),
                     _names(installed, "installed", "unattended"), _names(held, "held", "unattended"),
                     _names(blacklist, "blacklist", "unattended"), bool(program))


def boot_without_module(kernel_packages, boot=None, signing="precompiled", new_version=None, simulation=None, running=""):
    """The kernels in /boot left without the NVIDIA module: {kernels: [{kernel, why}], message}. ``kernel_packages``:
    ``dpkg-query -W -f '${Package}\\t${Version}\\t${db:Status-Abbrev}\\t${Depends}\\n'`` text (or nvidia_driver_facts'
    ``kernel.packages``); ``boot``: the releases of /boot/vmlinuz-* (the installed linux-image-<release> are added).
    ``new_version``: the point release being installed (with its ``simulation``); omitted: the forecast for the next
    one."""
    name = "role_module(nvidia_driver, boot_without_module)"
    if isinstance(kernel_packages, (str, dict)):
        kernel_packages = ku.parse_kernel_packages(_output(kernel_packages, "kernel_packages", name))
    if not isinstance(kernel_packages, (list, tuple)):
        raise RoleModuleError("%s: kernel_packages must be dpkg-query's text or a list of packages" % name)
    releases = list(_names(boot, "boot", "boot_without_module"))
    releases += [k for k in ku.installed_kernels(kernel_packages) if k not in releases]
    modules = nu.modules_by_kernel(kernel_packages)
    dkms_kernels = nu.headers_kernels(kernel_packages)
    if new_version:
        kernels = nu.boot_without_module(releases, signing, str(new_version), modules,
                                         simulation=_output(simulation, "simulation", name), dkms_kernels=dkms_kernels)
        when = "After the update to %s" % new_version
    else:
        kernels = nu.next_release_forecast(releases, signing, modules, dkms_kernels, str(running or ""))
        when = "At the driver's next point release"
    return {"kernels": kernels, "message": nu.boot_message(kernels, when)}


def update_plan(decision, installed=None, simulation=None, apps=None, force=False, check_mode=False):
    """``decision``: the role's decision (``__nvidia_driver_decided``); ``installed``: nvidia_driver_facts'
    ``installed``. Without ``simulation``: the names to simulate ({names}); with it (a registered command result): the
    verdict (:func:`nvidia_driver_update.update_plan`)."""
    if not isinstance(decision, dict) or not isinstance(decision.get("driver"), dict):
        raise RoleModuleError("role_module(nvidia_driver, update_plan): %s" % _DECISION)
    family = decision.get("family") or []
    branch = decision["driver"].get("branch")
    if simulation is None:
        return {"names": nup.update_names(installed or [], family, branch)}
    apps = apps if isinstance(apps, dict) else {}
    fm = decision.get("fabric_manager") or {}
    return nup.update_plan(installed or [], family, branch,
                           {"stdout": simulation.get("stdout", ""), "stderr": simulation.get("stderr", ""),
                            "rc": simulation.get("rc")},
                           nup.compute_apps(apps.get("stdout", ""), apps.get("rc")) if apps else None,
                           bool(force), fm.get("package"), bool(check_mode))


def _plain_records(records, what):
    if not isinstance(records, list):
        raise RoleModuleError("%s: records must be a list of {path, mtime, content}" % what)
    plain = []
    for rec in records:
        if isinstance(rec, dict) and isinstance(rec.get("item"), dict):
            plain.append({"path": rec["item"].get("path"), "mtime": rec["item"].get("mtime"),
                          "content": base64.b64decode(rec.get("content") or "").decode("utf-8", "replace")})
        elif isinstance(rec, dict):
            plain.append(rec)
    return plain


def rollback_hint(records, branch=None, changed_now=False, installed_at=None):
    """``records``: as for :func:`rollback_request`; ``branch``: the branch this run installs; ``changed_now``: this run
    changed the branch; ``installed_at``: when dpkg installed the driver (epoch seconds, or None). The sentence a failed
    check adds: how ``nvidia_driver_rollback: true`` goes back to the kept branch ("" when there is none, or the kept
    record is not of the change that installed this driver)."""
    return nr.rollback_hint(nr.latest_record(_plain_records(records, "role_module(nvidia_driver, rollback_hint)")), branch,
                            changed_now=changed_now, installed_at=installed_at)


def kept_holds(held, kept=None):
    """``held``: ``apt-mark showhold``'s lines; ``kept``: the packages kept before a branch change ({name, ...}). The
    holds to record with them, as printed (``name:arch`` kept)."""
    if isinstance(held, str):
        held = held.splitlines()
    if not isinstance(held, list) or not isinstance(kept or [], list):
        raise RoleModuleError("role_module(nvidia_driver, kept_holds): expected apt-mark showhold's lines and a list of kept packages")
    return nr.kept_holds(held, kept or [])


def rollback_request(records, installed=None, family=None, keep_dir="", present_files=None, simulation=None):
    """``records``: the kept records (``<keep_dir>/*/dlbox-kept.json``): [{path, mtime, content}], or the results of a
    slurp looped over ansible.builtin.find's files (``item.path``, ``item.mtime``, base64 ``content``). ``simulation``:
    the registered result of the request's ``simulate`` command (apt-get -s of the one transaction)."""
    plain = _plain_records(records, "role_module(nvidia_driver, rollback_request)")
    sim = None
    if isinstance(simulation, dict) and not simulation.get("skipped"):
        sim = {"rc": simulation.get("rc"), "stdout": simulation.get("stdout", ""), "stderr": simulation.get("stderr", "")}
    return nr.rollback_request(nr.latest_record(plain), installed or [], family or [], keep_dir,
                               None if present_files is None else list(present_files), sim)


def persistence(unit_text, manage=False, build_only=False, installed="", sys_version="", state=None,
                persistence_mode=True, unit_path="", check_mode=False, dropins=None, dropin_path="",
                dropin_present=False):
    """What happens to nvidia-persistenced (:func:`nvidia_driver_kernel.persistence_daemon`). ``unit_text``: the
    shipped nvidia-persistenced.service ("" when systemd knows none)."""
    if state is not None and not isinstance(state, dict):
        raise RoleModuleError("role_module(nvidia_driver, persistence): state must be the fact nvidia_driver_state (a mapping) or none")
    loaded = nk.loaded_module_version(sys_version, state)
    return nk.persistence_daemon(bool(manage), bool(build_only), str(installed or ""), loaded, bool(persistence_mode),
                                 str(unit_text or ""), str(unit_path or ""), bool(check_mode),
                                 dict(dropins or {}), str(dropin_path or ""), bool(dropin_present))


def failure_logs(result):
    """The DKMS make.log paths a failed task's result names (``ansible_failed_result``)."""
    return nk.failure_logs(result if isinstance(result, dict) else {})


def install_failure(result, tails=None):
    """The words of a failed install (``ansible_failed_result``): apt's, dpkg's and DKMS's error lines, the end of each
    make.log (``tails``: the registered loop results of ``tail`` on them), and ``dpkg --configure -a`` where dpkg left
    packages unconfigured."""
    return nk.install_failure(result if isinstance(result, dict) else {}, list(tails or []))


def fabric_not_ready_hint(result, timeout_s, fabric=None, installed=None, driver_version=None, missing_modules=None,
                          logs="", service="nvidia-fabricmanager", fm_package=None):
    """``fabric_state``'s answer at the end of the wait (``result``) -> the message naming the causes found and what
    to check (:func:`fabric_state.not_ready_hint`). ``fabric``: the decision's ``fabric``; ``installed``: the
    decision's ``after.fabric_versions``; ``logs``: the journal's (and NVLSM's) lines; ``fm_package``: the plan's
    Fabric Manager package (``nvidia-fabricmanager-580`` from Ubuntu's archive), else ``nvidia-fabricmanager``."""
    if isinstance(logs, (list, tuple)):
        logs = "\n".join(str(line) for line in logs)
    return fs.not_ready_hint(result or {}, timeout_s, fabric or None, dict(installed or {}), driver_version or None,
                             list(missing_modules or []), logs or "", service, fm_package or "nvidia-fabricmanager")
