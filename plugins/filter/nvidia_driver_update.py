# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The nvidia_driver role's update to the newest point release of the installed branch (plugin_utils.nvidia_driver_update):
what to name to apt, and the verdict on apt's simulation (``nvidia_driver_update_plan``)."""

from __future__ import annotations

import base64

from ansible.errors import AnsibleFilterError

from ansible_collections.dlbox.stack.plugins.plugin_utils.lazy_import import LazyModule

_nu = LazyModule("plugin_utils.nvidia_driver_update")
_nr = LazyModule("plugin_utils.nvidia_driver_rollback")


def nvidia_driver_update_plan(decided, installed=None, simulation=None, apps=None, force=False, check_mode=False):
    """``decided``: the role's plan; ``installed``: nvidia_driver_facts' ``installed``. Without ``simulation``: the names
    to simulate ({names}); with it (a registered command result): the verdict."""
    if not isinstance(decided, dict) or not isinstance(decided.get("driver"), dict):
        raise AnsibleFilterError("nvidia_driver_update_plan: expected the nvidia_driver plan (nvidia_driver_plan's result)")
    family = decided.get("family") or []
    branch = decided["driver"].get("branch")
    if simulation is None:
        return {"names": _nu.update_names(installed or [], family, branch)}
    apps = apps if isinstance(apps, dict) else {}
    fm = decided.get("fabric_manager") or {}
    return _nu.update_plan(installed or [], family, branch,
                           {"stdout": simulation.get("stdout", ""), "stderr": simulation.get("stderr", ""), "rc": simulation.get("rc")},
                           _nu.compute_apps(apps.get("stdout", ""), apps.get("rc")) if apps else None,
                           bool(force), fm.get("package"), bool(check_mode))


def _plain_records(records, what):
    if not isinstance(records, list):
        raise AnsibleFilterError("%s: records must be a list of {path, mtime, content}" % what)
    plain = []
    for rec in records:
        if isinstance(rec, dict) and isinstance(rec.get("item"), dict):
            plain.append({"path": rec["item"].get("path"), "mtime": rec["item"].get("mtime"),
                          "content": base64.b64decode(rec.get("content") or "").decode("utf-8", "replace")})
        elif isinstance(rec, dict):
            plain.append(rec)
    return plain


def nvidia_driver_rollback_hint(records, branch=None, changed_now=False, installed_at=None):
    """``records``: as for :func:`nvidia_driver_rollback_request`; ``branch``: the branch this run installs;
    ``changed_now``: this run changed the branch; ``installed_at``: when dpkg installed the driver (epoch seconds, or
    None). The sentence a failed check adds: how ``nvidia_driver_rollback: true`` goes back to the kept branch ("" when
    there is none, or the kept record is not of the change that installed this driver)."""
    return _nr.rollback_hint(_nr.latest_record(_plain_records(records, "nvidia_driver_rollback_hint")), branch,
                             changed_now=changed_now, installed_at=installed_at)


def nvidia_driver_kept_holds(held, kept=None):
    """``held``: ``apt-mark showhold``'s lines; ``kept``: the packages kept before a branch change ({name, ...}). The holds
    to record with them, as printed (``name:arch`` kept)."""
    if isinstance(held, str):
        held = held.splitlines()
    if not isinstance(held, list) or not isinstance(kept or [], list):
        raise AnsibleFilterError("nvidia_driver_kept_holds: expected apt-mark showhold's lines and a list of kept packages")
    return _nr.kept_holds(held, kept or [])


def nvidia_driver_rollback_request(records, installed=None, family=None, keep_dir="", present_files=None, simulation=None):
    """``records``: the kept records (``<keep_dir>/*/dlbox-kept.json``): [{path, mtime, content}], or the results of a
    slurp looped over ansible.builtin.find's files (``item.path``, ``item.mtime``, base64 ``content``). ``simulation``:
    the registered result of the request's ``simulate`` command (apt-get -s of the one transaction)."""
    plain = _plain_records(records, "nvidia_driver_rollback_request")
    sim = None
    if isinstance(simulation, dict) and not simulation.get("skipped"):
        sim = {"rc": simulation.get("rc"), "stdout": simulation.get("stdout", ""), "stderr": simulation.get("stderr", "")}
    return _nr.rollback_request(_nr.latest_record(plain), installed or [], family or [], keep_dir,
                                None if present_files is None else list(present_files), sim)


class FilterModule(object):
    """dlbox.stack nvidia_driver_update filters."""

    def filters(self):
        return {"nvidia_driver_update_plan": nvidia_driver_update_plan,
                "nvidia_driver_rollback_request": nvidia_driver_rollback_request,
                "nvidia_driver_rollback_hint": nvidia_driver_rollback_hint,
                "nvidia_driver_kept_holds": nvidia_driver_kept_holds}
