# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Is the NVIDIA driver loaded, or installed and waiting for a reboot? One answer every GPU check reads; pure, no I/O.

``nvidia_driver`` reads the state right after it installed (:func:`from_probes`: the version it installed, what
``nvidia-smi`` answers and ``/proc/driver/nvidia/version``) and sets it as the fact ``nvidia_driver_state``. The
roles after it (``cuda``'s verify, ``nccl``'s probe, the container toolkit's GPU container, ``python_env``'s
``dlbox-check``) read that fact, or, when ``nvidia_driver`` did not run in this play, the host facts of
``dlbox.stack.gpu_facts`` (:func:`from_host`), which they have already. :func:`driver_state` picks.

States: ``loaded`` (a module answers; the GPU checks run), ``pending_reboot`` (a driver is installed but its module
is not the loaded one: the GPU checks are reported as pending, not run), ``absent`` (no driver: the checks do
what they do on a machine without one), ``unknown`` (nothing to go by: the checks run as they always did).
"""

from __future__ import annotations

import re

STATES = ("loaded", "pending_reboot", "absent", "unknown")
NEXT_STEP = "reboot, then run the same command again (e.g. make workstation): that run runs every GPU check"
_PROC = re.compile(r"NVRM version:.*?Kernel Module(?:\s+for\s+\S+)?\s+(\d+\.\d+(?:\.\d+)?)")
_VERSION = re.compile(r"^\d+\.\d+(\.\d+)?$")


def _state(state, installed=None, loaded=None, message=""):
    return {"state": state, "installed_version": installed or None, "loaded_version": loaded or None,
            "reboot_required": state == "pending_reboot", "message": message}


def _pending(installed, loaded, why):
    return _state("pending_reboot", installed, loaded,
                  "pending reboot: NVIDIA driver %s is installed but %s; the GPU checks wait for it. Next: %s." % (
                      installed or "(version unknown)", why, NEXT_STEP))


def from_probes(installed=None, smi=None, proc=None):
    """The state right after an install.

    ``installed``: the driver version the role installed ("" or None: none). ``smi``: the registered result of
    ``nvidia-smi --query-gpu=driver_version --format=csv,noheader`` (``rc``, ``stdout``; no ``rc``: not run or not
    found). ``proc``: the text of ``/proc/driver/nvidia/version`` ("" or None when the file does not exist).
    ``nvidia-smi`` answers only through a loaded module, so its version is the loaded one; ``/proc`` says the
    same where ``nvidia-smi`` cannot answer (a library/module mismatch after an upgrade)."""
    smi = smi if isinstance(smi, dict) else {}
    loaded = None
    if smi.get("rc") == 0:
        versions = [line.strip() for line in str(smi.get("stdout") or "").splitlines() if _VERSION.match(line.strip())]
        loaded = versions[0] if versions else None
    if loaded is None and proc:
        match = _PROC.search(str(proc))
        loaded = match.group(1) if match else None
    installed = str(installed or "").strip() or None
    if loaded is None:
        if installed:
            return _pending(installed, None, "no NVIDIA kernel module is loaded (it loads at the next boot)")
        return _state("absent", message="no NVIDIA driver is installed or loaded")
    if installed and loaded != installed:
        return _pending(installed, loaded, "the running kernel still has module %s loaded" % loaded)
    return _state("loaded", installed or loaded, loaded, "NVIDIA driver %s is loaded" % loaded)


def from_host(host):
    """The state from ``ansible_facts['dlbox_host']`` (``dlbox.stack.gpu_facts``), for a play without nvidia_driver."""
    if not isinstance(host, dict) or not host:
        return _state("unknown", message="no host facts: the GPU checks run as they are")
    driver = host.get("driver") or {}
    modules = host.get("modules") or {}
    probe = str((host.get("probes") or {}).get("nvidia_smi") or "")
    if driver.get("present") or modules.get("nvidia_version"):
        version = driver.get("version") or modules.get("nvidia_version")
        return _state("loaded", version, version, "NVIDIA driver %s is loaded" % version)
    if probe.startswith("failed"):
        # nvidia-smi is there (a driver is installed) and reaches no module: what a reboot after the install fixes
        return _pending(None, None, "nvidia-smi cannot reach its kernel module (%s)" % probe)
    if probe == "missing":
        return _state("absent", message="no NVIDIA driver is installed (no nvidia-smi)")
    return _state("unknown", message="nvidia-smi was not probed: the GPU checks run as they are")


def driver_state(recorded=None, host=None):
    """``recorded`` (nvidia_driver's fact) when it is one, else :func:`from_host`."""
    if isinstance(recorded, dict) and recorded.get("state") in STATES:
        return dict(recorded)
    return from_host(host)
