# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A point release of the installed branch, applied on request (``nvidia_driver_update: true``, issue 48; pure).

Every user-space package of a driver version depends on ``nvidia-kernel-common-<b>[-server]-<version>`` (recorded
stanzas, tests/fixtures/holds/), Fabric Manager and NSCQ too: they move together or not at all. So the update names
every installed package of the branch to apt in ONE transaction (the module metas included: Ubuntu's signed module of
the newest kernel is built against the newest point release), checked by ``apt-get -s`` first:

- :func:`update_names`: what to name (the installed packages of the branch, without the per-ABI module packages, which
  follow their meta);
- :func:`compute_apps`: the GPU processes ``nvidia-smi --query-compute-apps`` lists (an update under them breaks
  every new CUDA process with "Driver/library version mismatch" until the reboot);
- :func:`update_plan`: the verdict on the simulation: installed and available point release, the exact
  ``name=version`` list, and a refusal (another branch, two versions, a removal of something that does not follow the
  kernel, Fabric Manager or NSCQ left behind, GPU processes without ``nvidia_driver_update_force``).
"""

from __future__ import annotations

import re

from ansible_collections.dlbox.stack.plugins.module_utils import _nvidia_driver as nd
from ansible_collections.dlbox.stack.plugins.plugin_utils import nvidia_driver_holds as nh

_PER_ABI = re.compile(r"^linux-(?:modules|objects|signatures)-nvidia-.*-\d+\.\d+(?:\.\d+)?-\d+-[a-z][a-z0-9-]*$")
# the module flavour meta of the signed path (linux-modules-nvidia-580-open-generic-hwe-24.04): its flavour's kernel metas
# move with it
_MODULE_META = re.compile(r"^linux-modules-nvidia-\d+(?:-server)?(?:-open)?-(?P<flavour>[a-z][a-z0-9.-]*)$")
_REMV = re.compile(r"^Remv\s+(?P<name>\S+)(?:\s+\[(?P<old>[^\]]+)\])?")
# nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader: "1234, /usr/bin/python3, 1024 MiB"
_APP = re.compile(r"^\s*(?P<pid>\d+)\s*,\s*(?P<name>[^,]*?)\s*(?:,\s*(?P<memory>.*?))?\s*$")
# nvidia-smi's exit status 9: "NVIDIA Driver is not loaded" (nvidia-smi(1)): no process can use a GPU
NOT_LOADED = 9
# NVIDIA's own daemons, not user work: DCGM's host engine (nv-hostengine; its profiling module opens a context on each GPU)
# and exporter, Fabric Manager, the persistence daemon. They run on every managed GPU host all the time, so counting them
# refused every update there; they stop and start with the driver (the reboot). Compared by the program's base name
# (nvidia-smi prints the path: /usr/bin/nv-hostengine).
NVIDIA_DAEMONS = ("nv-hostengine", "nv-fabricmanager", "nvidia-persistenced", "dcgm-exporter")


def update_names(installed, family, branch):
    """The installed packages of ``branch`` to name to apt (``installed``: dpkg's packages), per-ABI modules left out, and
    the firmware packages whose name carries their version (``nvidia-firmware-580-580.178.04``: the new point release's
    ``nvidia-kernel-common`` Depends on the new name, so apt brings it; naming the old one would only mark it installed by
    hand, kept after the update);
    on the signed path (a module flavour meta installed) also the installed kernel metas of that flavour
    (``linux-<f>``, ``linux-image-<f>``, ``linux-headers-<f>``, Ubuntu's linux-meta): the new module brings the new
    kernel image, and the metas must follow it, or they stay at the old kernel with the blacklist keeping them there."""
    out, flavours = [], []
    items = nd.package_items(installed)
    for name, version, _arch in items:
        if (nd.member_branch(name, version, family) == int(branch) and not _PER_ABI.match(name) and not nh.versioned_firmware(name)
                and name not in out):
            out.append(name)
            match = _MODULE_META.match(name)
            if match and match.group("flavour") not in flavours:
                flavours.append(match.group("flavour"))
    have = set(name for name, _v, _a in items)
    for meta in nh.kernel_metas(flavours):
        if meta in have and meta not in out:
            out.append(meta)
    return out


def compute_apps(text, rc):
    """``nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader`` -> {known, processes,
    daemons, reason}. ``processes``: the user's GPU processes; ``daemons``: NVIDIA's own (:data:`NVIDIA_DAEMONS`), listed,
    never counted. Exit 9 (no driver loaded): no process, known. Another failure (a version mismatch after an install,
    exit 18): not known, so an update is refused without ``nvidia_driver_update_force``."""
    if rc == NOT_LOADED:
        return {"known": True, "processes": [], "daemons": [], "reason": "no NVIDIA driver is loaded"}
    if rc not in (0, None):
        first = next((line.strip() for line in (text or "").splitlines() if line.strip()), "")
        return {"known": False, "processes": [], "daemons": [], "reason": "nvidia-smi failed (exit %s: %s)" % (rc, first or "no output")}
    processes, daemons = [], []
    for line in (text or "").splitlines():
        match = _APP.match(line)
        if match:
            app = {"pid": int(match.group("pid")), "name": match.group("name"), "memory": match.group("memory") or ""}
            (daemons if app["name"].rsplit("/", 1)[-1] in NVIDIA_DAEMONS else processes).append(app)
    return {"known": True, "processes": processes, "daemons": daemons, "reason": ""}


def _removals(text):
    out = []
    for line in (text or "").splitlines():
        match = _REMV.match(line.strip())
        if match:
            out.append(match.group("name"))
    return out


def update_plan(installed, family, branch, simulation, apps=None, force=False, fm_package=None, check_mode=False):
    """The verdict on ``apt-get -s install <update_names>``: {ok, action, installed_version, available_version,
    install_names, removes, problems, message}.

    ``simulation``: {stdout, stderr, rc}. ``action``: ``none`` (the newest point release is installed), ``update`` or
    ``refuse``. ``install_names``: ``name=version`` of every package apt would install or upgrade (the exact versions
    the simulation found, one transaction). ``removes``: what apt would remove (only packages that follow the kernel
    may go: the module of an older kernel, built against the older point release).
    """
    branch = int(branch)
    driver = nd.installed_driver(installed, family)
    have = dict((n, v) for n, v, _a in nd.package_items(installed))
    names = update_names(installed, family, branch)
    out = {"ok": True, "action": "none", "installed_version": driver["version"], "available_version": driver["version"],
           "names": names, "install_names": [], "removes": [], "problems": [], "message": ""}
    sim = simulation or {}
    if sim.get("rc") not in (0, None):
        errors = " ".join(line.strip() for line in (sim.get("stderr") or "").splitlines() if line.startswith("E:"))
        out["problems"].append("apt cannot update the driver's packages together (%s): %s" % (
            "exit status %s" % sim.get("rc"), errors or "no error line"))
    installs = nd.parse_apt_simulate(sim.get("stdout") or "")
    versions = {}
    for item in installs:
        found = nd.member_branch(item["name"], item["version"], family)
        if found is None:
            continue
        if found != branch:
            out["problems"].append("apt would install %s %s, of branch %s." % (item["name"], item["version"], found))
            continue
        upstream = nd.upstream_version(item["version"])
        if nd.DRIVER_VERSION.match(upstream):
            versions.setdefault(upstream, []).append(item["name"])
    if len(versions) > 1:
        out["problems"].append("apt would install two driver versions at once (%s)." % "; ".join(
            "%s: %s" % (v, ", ".join(sorted(n))) for v, n in sorted(versions.items())))
    if versions:
        out["available_version"] = max(versions, key=lambda v: [int(x) for x in re.findall(r"\d+", v)])
    target = out["available_version"]
    # everything of the branch that carries the driver version must end at the target (FM, NSCQ, persistenced...)
    upgraded = set(item["name"] for item in installs)
    left = sorted(n for n in names if n not in upgraded and nd.DRIVER_VERSION.match(nd.upstream_version(have.get(n, "")))
                  and nd.upstream_version(have[n]) != target)
    if versions and left:
        out["problems"].append("apt would leave %s at %s while the driver moves to %s%s." % (
            ", ".join(left), ", ".join(sorted(set(nd.upstream_version(have[n]) for n in left))), target,
            " (Fabric Manager must have exactly the driver's version)" if fm_package in left else ""))
    out["removes"] = _removals(sim.get("stdout") or "")
    kept_out = [n for n in out["removes"] if not nh.follows_kernel(n)]
    if kept_out:
        out["problems"].append("apt would remove %s, which the update must not." % ", ".join(kept_out))
    if not installs and not out["problems"]:
        out["message"] = "Driver R%s: %s is installed, the newest point release of the branch; nothing to update." % (
            branch, driver["version"])
        return out
    out["install_names"] = ["%s=%s" % (item["name"], item["version"]) for item in installs]
    apps = apps or {"known": True, "processes": [], "reason": ""}
    if not out["problems"] and not force and (apps["processes"] or not apps["known"]):
        out["problems"].append(
            "%s; updating the driver under them makes every new CUDA process fail (Driver/library version mismatch) until "
            "the reboot. Stop them, or set nvidia_driver_update_force: true to update anyway." % (
                ("GPU processes are running (%s)" % ", ".join("%s %s" % (p["pid"], p["name"]) for p in apps["processes"]))
                if apps["processes"] else "Cannot tell whether GPU processes run: %s" % apps["reason"]))
    if out["problems"]:
        out.update(ok=False, action="refuse",
                   message="nvidia_driver_update: driver R%s (installed %s, available %s) was not updated: %s Nothing was changed." % (
                       branch, driver["version"], target, " ".join(out["problems"])))
        return out
    out["action"] = "update"
    removes = (" and remove %s (modules of older kernels, built against the older point release)" % ", ".join(out["removes"])
               if out["removes"] else "")
    daemons = sorted(set(p["name"].rsplit("/", 1)[-1] for p in apps.get("daemons") or ()))
    out["message"] = ("%sDriver R%s: installed %s, available %s: apt %s %d packages in one transaction%s (%s); pending reboot: "
                      "the new module loads at the next boot%s." % (
                          "Check mode: " if check_mode else "", branch, driver["version"], target,
                          "would update" if check_mode else "updates", len(installs), removes,
                          ", ".join(item["name"] for item in installs),
                          " (NVIDIA's daemons on the GPUs, not counted as GPU processes: %s; they start again with the new "
                          "driver)" % ", ".join(daemons) if daemons else ""))
    return out
