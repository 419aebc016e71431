# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rollback on request (``nvidia_driver_rollback: true``, issue 48; pure): after a branch change whose packages
installed but whose checks failed later (the module build for another kernel, ``nvidia-smi`` after the reboot, Fabric
Manager), the previous branch comes back from the copies kept before the change (tasks/keep.yml's
``dlbox-kept.json``), with its pin and its holds as they were. An apt failure during the change is rolled back at once
(tasks/rollback.yml); this is the same rollback, asked for by a later run."""

from __future__ import annotations

import json

from ansible_collections.dlbox.stack.plugins.module_utils import _nvidia_driver as nd
from ansible_collections.dlbox.stack.plugins.plugin_utils import nvidia_driver_holds as nh
from ansible_collections.dlbox.stack.plugins.plugin_utils import nvidia_driver_plan as plan


def latest_record(records):
    """The newest kept record: ``records`` are {path, mtime, content (the file's text)} of ``<keep_dir>/*/dlbox-kept.json``.
    Returns {path, folder, record} or None."""
    good = []
    for item in records or ():
        try:
            data = json.loads(item.get("content") or "")
        except ValueError:
            continue
        if isinstance(data, dict) and data.get("packages"):
            good.append((float(item.get("mtime") or 0), item["path"], data))
    if not good:
        return None
    mtime, path, data = max(good, key=lambda g: g[0])
    return {"path": path, "folder": path.rsplit("/", 1)[0], "record": data, "mtime": mtime}


def simulate_argv(install, purge):
    """The one apt transaction a rollback is, for ``apt-get -s``: the kept .debs installed and the newer branch removed
    (``name-``) together."""
    return (["apt-get", "-s", "install", "--allow-downgrades", "--allow-change-held-packages"] + list(install or ())
            + ["%s-" % n for n in purge or ()])


def simulation_problem(simulation):
    """The reason ``apt-get -s`` of :func:`simulate_argv` refuses (``simulation``: {rc, stdout, stderr}), or ""."""
    sim = simulation or {}
    if sim.get("rc") in (0, None):
        return ""
    lines = [line.strip() for line in ((sim.get("stdout") or "") + "\n" + (sim.get("stderr") or "")).splitlines()]
    unmet = [line for line in lines if " : Depends:" in line or " : Conflicts:" in line or " : Breaks:" in line or line.startswith("Depends:")]
    errors = [line for line in lines if line.startswith("E:")]
    return "exit status %s: %s" % (sim.get("rc"), " ".join(unmet + errors) or "no error line")


def kept_holds(held_now, kept):
    """The holds to record with the kept copies before a branch change (tasks/keep.yml): the lines of ``apt-mark
    showhold`` (``name`` or ``name:arch``) on a package being kept (``kept``: {name, ...}), as printed, so that a foreign
    architecture's hold (``libnvidia-compute-570:i386``) comes back as it was and not as the native one's."""
    names = set(k.get("name") for k in kept or () if isinstance(k, dict))
    out = []
    for line in held_now or ():
        line = (line or "").strip()
        if line and nh.bare(line) in names and line not in out:
            out.append(line)
    return out


def rollback_holds(holds, kept):
    """The holds to restore: those of the record (``apt-mark showhold`` before the change) on the packages the rollback
    reinstalls (``kept``: the record's packages, {name, ...}), without what follows the kernel and without a firmware
    package a newer kept one replaces (each point release's firmware is a new name: nh.superseded_firmware). A hold on a
    name the rollback does not reinstall holds nothing of the kept branch."""
    names = set(k.get("name") for k in kept or () if isinstance(k, dict))
    old = set(nh.bare(n) for n in nh.superseded_firmware(sorted(names) + list(holds or ())))
    out = []
    for name in holds or ():
        if nh.bare(name) in names and nh.bare(name) not in old and not nh.follows_kernel(nh.bare(name)) and name not in out:
            out.append(name)
    return out


def already_back(installed, kept, purge):
    """Whether the host already has exactly the kept branch: every kept (name, version) installed and no other driver
    package to purge (a rollback that ran before; the role's own rollback after a failed install)."""
    have = set((name, version) for name, version, _arch in nd.package_items(installed))
    return not purge and all((k.get("name"), str(k.get("version"))) in have for k in kept or ())


# How long after its record a branch change's install may come: keep.yml writes the record, install.yml installs right
# after it in the same run (minutes); a day leaves room for a slow archive and a run retried the next morning.
CHANGE_WINDOW_S = 86400


def rollback_hint(found, branch, changed_now=False, installed_at=None):
    """The sentence a failed check after the install adds (kernel.yml, fabric_wait.yml): how to go back to the branch
    kept before the last branch change, or "".

    Offered only for the change the failing check is about (issue 48 red-team 10: any old record was offered, a year-old
    R535 copy while R550 had come another way): ``changed_now`` (this run changed the branch), or the last record's
    change installed the driver now installed (``installed_at``: when dpkg installed the plan's primary package, epoch
    seconds, at most :data:`CHANGE_WINDOW_S` after the record, ``found['mtime']``). "" when none was kept, when the kept
    one is the ``branch`` this run installs (after a rollback, with nvidia_driver_branch set to it), or when neither is
    proven."""
    if not found:
        return ""
    record = found["record"]
    kept = record.get("branch")
    if kept in (None, "") or str(kept) == str(branch):
        return ""
    if not changed_now:
        try:
            since = float(installed_at) - float(found.get("mtime") or 0)
        except (TypeError, ValueError):
            return ""
        if not found.get("mtime") or not 0 <= since <= CHANGE_WINDOW_S:
            return ""
    return ("The branch change from R%s to R%s can be undone: run the role with nvidia_driver_rollback: true (it purges "
            "R%s, reinstalls R%s %s from the copies kept in %s and puts back its pin and its holds as they were: %s)." % (
                kept, branch, branch, kept, record.get("version") or "", found["folder"],
                ", ".join(rollback_holds(record.get("holds"), record.get("packages"))) or "none"))


def unattended_file(record):
    """The role's unattended-upgrades file as it was before the change (tasks/keep.yml records its text, or null when
    there was none): {action: write|remove|keep, content}. ``keep``: a record of an older role without it (the file is
    left as it is)."""
    if "unattended" not in (record or {}):
        return {"action": "keep", "content": None}
    content = record.get("unattended")
    if content is None:
        return {"action": "remove", "content": None}
    return {"action": "write", "content": str(content)}


def rollback_request(found, installed, family, keep_dir, present_files=None, simulation=None):
    """{ok, action, branch, version, purge, install, pin, holds, unattended, message}: what ``nvidia_driver_rollback:
    true`` does.

    ``found``: :func:`latest_record`'s result. ``installed``: dpkg's packages now. ``present_files``: the kept files that
    exist (None: not checked). ``install``: the kept .deb paths; ``pin``: the previous branch's pin text (None: the
    previous branch had none, the pin file is removed); ``holds``: the holds from before the change, without what
    follows the kernel; ``unattended``: the role's unattended-upgrades file as it was (:func:`unattended_file`).
    ``simulate``: the argv of the one transaction to simulate first; with ``simulation`` (its result) a transaction apt
    refuses is refused here before anything is purged. ``action``: ``rollback``, or ``none`` when the host already has
    exactly the kept branch (:func:`already_back`: a second run with the variable still true purges, reinstalls and
    marks nothing; the pin, the holds and the unattended-upgrades file are still put back as recorded).
    """
    out = {"ok": False, "action": "none", "branch": None, "version": None, "purge": [], "install": [], "pin": None, "holds": [], "simulate": [],
           "unattended": {"action": "keep", "content": None}, "message": ""}
    if not found:
        out["message"] = ("nvidia_driver_rollback: no kept driver branch in %s (a branch change keeps the previous branch there "
                          "before it removes it; none happened on this host). Nothing was changed." % keep_dir)
        return out
    record = found["record"]
    kept = record.get("packages") or []
    missing = [k["file"] for k in kept if present_files is not None and "%s/%s" % (found["folder"], k["file"]) not in present_files]
    if missing:
        out["message"] = ("nvidia_driver_rollback: the kept copies of R%s in %s lack %s; the previous branch cannot be reinstalled "
                          "from them. Nothing was changed." % (record.get("branch"), found["folder"], ", ".join(missing)))
        return out
    undo = plan.rollback_plan(installed, kept, family)
    out.update(ok=True, branch=record.get("branch"), version=record.get("version"), purge=undo["purge"],
               install=["%s/%s" % (found["folder"], k["file"]) for k in kept], pin=record.get("pin"),
               holds=rollback_holds(record.get("holds"), kept), unattended=unattended_file(record))
    if already_back(installed, kept, out["purge"]):
        out["install"] = []
        out["message"] = ("nvidia_driver_rollback: driver R%s (%s) kept in %s is what dpkg has (no package of another branch): "
                          "nothing to purge or reinstall; its pin and holds as before (%s). Set nvidia_driver_branch: \"%s\" "
                          "and nvidia_driver_rollback: false for the next runs." % (
                              out["branch"], out["version"], found["folder"], ", ".join(out["holds"]) or "none", out["branch"]))
        return out
    out["action"] = "rollback"
    out["simulate"] = simulate_argv(out["install"], out["purge"])
    problem = simulation_problem(simulation) if simulation is not None else ""
    if problem:
        out["ok"], out["action"] = False, "none"
        out["message"] = ("nvidia_driver_rollback: apt cannot purge the newer branch and reinstall R%s (%s) from the copies kept "
                          "in %s in one transaction (%s). Nothing was changed." % (
                              out["branch"], out["version"], found["folder"], problem))
        return out
    out["message"] = ("nvidia_driver_rollback: driver R%s (%s) comes back from the copies kept in %s: %d packages purged, %d "
                      "reinstalled, %s, holds as before (%s). The plan still names the newer branch: set "
                      "nvidia_driver_branch: \"%s\" (and nvidia_driver_rollback: false) for the next runs; pending reboot." % (
                          out["branch"], out["version"], found["folder"], len(out["purge"]), len(out["install"]),
                          "its pin back" if out["pin"] else "no pin (it had none)", ", ".join(out["holds"]) or "none",
                          out["branch"]))
    return out
