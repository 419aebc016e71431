# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""NVSwitch hosts: is the NVLink fabric ready for CUDA, and what a CUDA failure there means (pure, no I/O).

:func:`parse_fabric` reads the ``Fabric`` section of every GPU in ``nvidia-smi -q``, with its ``Health`` sub-section
(drivers from R550 print it; R535 prints none)::

    GPU 00000000:18:00.0
        ...
        Fabric
            State                             : Completed
            Status                            : Success
            CliqueId                          : 2
            ClusterUUID                       : dc6e40c4-d722-4357-9ba6-5291dd461278
            Health
                Summary                       : Unhealthy
                Bandwidth                     : Full

(recorded in kubernetes-sigs/dra-driver-nvidia-gpu#626 on a fabric its reporter calls unhealthy; ``Status :
Insufficient Resources`` with a completed state in Azure/azhpc-images#506; ``In Progress`` with every ``Health``
field ``N/A`` on driver 580.159.04 in NVIDIA/gpu-operator#2511; ``State : N/A`` on an A100 system whose Fabric Manager
runs, in bottlerocket-os/bottlerocket#3873: the fields are not reported there). NVML documents the states
``Not Supported``, ``Not Started``, ``In Progress``, ``Completed`` and that ``Status`` counts only once the state is
``Completed`` (``nvmlGpuFabricInfo_v2_t``), and the health as a mask (degraded bandwidth, route recovery in
progress, route unhealthy, access timeout recovery, incorrect configuration) with a summary (``Healthy``,
``Unhealthy``, ``Limited Capacity``; ``nvmlGpuFabricInfo_v3_t``). ``nvidia-smi`` prints the degraded-bandwidth bit as
``Bandwidth : Full`` / ``Degraded``, and the summary ``Limited Capacity`` for degraded bandwidth alone, ``Unhealthy``
for any other fault (NVIDIA/k8s-test-infra docs/configuration.md, "Fabric Health", diffed against a real GB300 tray
on 580.173.02). NVIDIA's Fabric Manager user guide: ``In Progress`` means the GPU is being registered with the
fabric and Fabric Manager is likely not running; CUDA fails with ``cudaErrorSystemNotReady`` (802) until it is
``Completed``.

:func:`verdict` joins that with ``systemctl is-active nvidia-fabricmanager``: ``ready``, ``waiting`` (keep
polling) or ``failed`` (stop, the fabric will not come up by waiting). Ready means every GPU is ``Completed`` with
``Success`` and, where the driver reports the health, ``Bandwidth : Full`` and a ``Healthy`` summary: a completed
fabric with degraded bandwidth or an unhealthy summary is not ready. :func:`cuda_failure_hint` turns a CUDA check's
output with error 802 into a sentence naming Fabric Manager.
"""

from __future__ import annotations

import re

# nvidia-smi -q prints "GPU 00000000:18:00.0" at the left margin for each GPU.
_GPU_RE = re.compile(r"^GPU\s+([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\s*$")
_FIELD_RE = re.compile(r"^(\s*)([A-Za-z][A-Za-z ]*?)\s*:\s*(.*?)\s*$")
_FIELDS = {"State": "state", "Status": "status", "CliqueId": "clique_id", "ClusterUUID": "cluster_uuid"}
# the rows of Fabric -> Health, as nvidia-smi labels them (580.159.04 in NVIDIA/gpu-operator#2511)
_HEALTH = {"Summary": "summary", "Bandwidth": "bandwidth", "Route Recovery in progress": "route_recovery_in_progress",
           "Route Unhealthy": "route_unhealthy", "Access Timeout Recovery": "access_timeout_recovery",
           "Incorrect Configuration": "incorrect_configuration", "Partition Assigned": "partition_assigned"}

WAITING_STATES = ("Not Started", "In Progress")
NOT_REPORTED = ("N/A", "Not Supported", "[Not Supported]", "", None)
# Health rows whose "True" is a fault (the mask bits of nvmlGpuFabricInfo_v3_t besides bandwidth and configuration)
_FAULT_ROWS = ("route_recovery_in_progress", "route_unhealthy", "access_timeout_recovery")

# What a CUDA program prints for error 802: cudaGetErrorString's text (the CUDA runtime), the enum names of the
# runtime and the driver API, and "802" as PyTorch and NVIDIA's samples print it ("cuda runtime error (802)",
# "code=802(cudaErrorSystemNotReady)").
_CUDA_802_RE = re.compile(r"system not yet initialized|cudaErrorSystemNotReady|CUDA_ERROR_SYSTEM_NOT_READY|"
                          r"error \(?802\)?|code=802|Error 802", re.IGNORECASE)


def _gpu(bus_id):
    return {"pci_bus_id": bus_id, "state": None, "status": None, "clique_id": None, "cluster_uuid": None,
            "bandwidth": None, "health_summary": None, "health": {}}


def parse_fabric(text):
    """``nvidia-smi -q`` text -> one dict per GPU: ``{pci_bus_id, state, status, clique_id, cluster_uuid, bandwidth,
    health_summary, health}``.

    ``health``: the rows of the ``Health`` sub-section by snake-case name (``route_unhealthy``: ``"False"``, ...);
    ``bandwidth`` and ``health_summary`` are two of them. A GPU without a ``Fabric`` section (drivers before R530,
    or a trimmed paste) has ``state`` None; one without ``Health`` (R535) has ``bandwidth`` None.
    """
    gpus = []
    current = None
    fabric_indent = None
    health_indent = None
    for line in (text or "").splitlines():
        match = _GPU_RE.match(line)
        if match:
            current = _gpu(match.group(1).upper())
            gpus.append(current)
            fabric_indent = health_indent = None
            continue
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        if line.strip() == "Fabric":
            if current is None:
                # an excerpt (``nvidia-smi -q -i 0 | grep -A 2 Fabric``): one GPU whose address is not shown
                current = _gpu(None)
                gpus.append(current)
            elif current["state"] is not None and fabric_indent is None and current["pci_bus_id"] is None:
                current = _gpu(None)
                gpus.append(current)
            fabric_indent = indent
            health_indent = None
            continue
        if current is None or fabric_indent is None:
            continue
        if indent <= fabric_indent:
            fabric_indent = health_indent = None
            continue
        if health_indent is not None and indent <= health_indent:
            health_indent = None
        if line.strip() == "Health" and health_indent is None:
            health_indent = indent
            continue
        field = _FIELD_RE.match(line)
        if not field:
            continue
        if health_indent is not None:
            key = _HEALTH.get(field.group(2))
            if key and key not in current["health"]:
                current["health"][key] = field.group(3)
            continue
        # the first State/Status/... under Fabric
        if field.group(2) in _FIELDS and current[_FIELDS[field.group(2)]] is None:
            current[_FIELDS[field.group(2)]] = field.group(3)
    for gpu in gpus:
        gpu["bandwidth"] = gpu["health"].get("bandwidth")
        gpu["health_summary"] = gpu["health"].get("summary")
    return gpus


def health_problem(gpu):
    """Why a ``Completed``/``Success`` GPU's fabric is not fit for work, from its ``Health`` rows: ``(kind, text)``,
    or None when the health is good or not reported (R535 prints no ``Health``; GB200 trays have printed ``Not
    Supported``, leptonai/gpud#1106).

    ``Bandwidth`` other than ``Full`` (``Degraded``: an NVLink or NVSwitch is down, the summary ``Limited Capacity``)
    and a summary other than ``Healthy`` are ``"failed"``: waiting does not bring links back. While ``Route Recovery in
    progress`` is ``True`` Fabric Manager is rerouting: ``"waiting"``.
    """
    health = gpu.get("health") or {}
    bandwidth, summary = health.get("bandwidth"), health.get("summary")
    faults = [label for label, key in _HEALTH.items() if key in _FAULT_ROWS and str(health.get(key)).lower() == "true"]
    config = health.get("incorrect_configuration")
    if config not in NOT_REPORTED and str(config).lower() != "none":
        faults.append("Incorrect Configuration: %s" % config)
    if bandwidth not in NOT_REPORTED and bandwidth != "Full":
        return "failed", "Bandwidth %s%s" % (bandwidth, " (Summary %s)" % summary if summary not in NOT_REPORTED else "")
    if (summary in NOT_REPORTED or summary == "Healthy") and not faults:
        return None
    detail = ("Summary %s" % summary if summary not in NOT_REPORTED else "Health") + (": %s" % ", ".join(faults) if faults else "")
    if str(health.get("route_recovery_in_progress")).lower() == "true":
        return "waiting", detail
    return "failed", detail


def verdict(smi_text, service_state, smi_rc=0, service="nvidia-fabricmanager"):
    """Is the fabric ready? ``smi_text``: ``nvidia-smi -q``; ``service_state``: ``systemctl is-active``'s word.

    Returns ``{ready, waiting, failed, gpus, states, reason}``. ``waiting`` while the service is not active
    (``activating``, ``inactive``: it may yet start), any GPU is ``Not Started`` / ``In Progress``, or a completed
    fabric is in a route recovery; ``failed`` when the service ``failed``, a GPU finished with a status other than
    ``Success``, or a completed GPU reports ``Bandwidth`` other than ``Full`` or a ``Health`` summary other than
    ``Healthy`` (:func:`health_problem`; waiting does not help); ``ready`` when the service is active and every GPU is
    ``Completed`` with ``Success`` and, where its driver reports them, ``Bandwidth : Full`` and ``Summary : Healthy``,
    or no GPU reports the fields (A100 systems print ``N/A``: the active service is all there is to judge).
    """
    state = (service_state or "").strip() or "unknown"
    gpus = parse_fabric(smi_text) if smi_rc == 0 else []
    states = sorted(set("%s/%s" % (g["state"], g["status"]) for g in gpus))
    out = {"ready": False, "waiting": False, "failed": False, "gpus": gpus, "states": states,
           "service_state": state, "reason": ""}
    if state == "failed":
        out.update(failed=True, reason="%s.service failed (systemctl is-active: failed)." % service)
        return out
    if state != "active":
        out.update(waiting=True, reason="%s.service is %s, not active." % (service, state))
        return out
    if smi_rc != 0 or not gpus:
        out.update(waiting=True, reason="nvidia-smi -q listed no GPU (rc %s)." % smi_rc)
        return out
    pending = [g for g in gpus if g["state"] in WAITING_STATES]
    if pending:
        out.update(waiting=True, reason="the NVLink fabric is not trained yet: %s." % ", ".join(
            "GPU %s %s" % (g["pci_bus_id"], g["state"]) for g in pending))
        return out
    broken = [g for g in gpus if g["state"] == "Completed" and g["status"] not in ("Success",)]
    if broken:
        out.update(failed=True, reason="the NVLink fabric finished with errors: %s." % ", ".join(
            "GPU %s status %s" % (g["pci_bus_id"], g["status"]) for g in broken))
        return out
    unknown = [g for g in gpus if g["state"] != "Completed" and g["state"] not in NOT_REPORTED]
    if unknown:
        out.update(waiting=True, reason="unknown fabric state: %s." % ", ".join(
            "GPU %s %s" % (g["pci_bus_id"], g["state"]) for g in unknown))
        return out
    completed = [g for g in gpus if g["state"] == "Completed"]
    unwell = [(g, health_problem(g)) for g in completed]
    unwell = [(g, problem) for g, problem in unwell if problem is not None]
    if unwell:
        kind = "failed" if any(problem[0] == "failed" for _g, problem in unwell) else "waiting"
        out.update({kind: True, "reason": "the NVLink fabric is Completed but not healthy: %s%s." % (", ".join(
            "GPU %s %s" % (g["pci_bus_id"], problem[1]) for g, problem in unwell),
            "; a route recovery is in progress" if kind == "waiting" else
            "; degraded bandwidth or an unhealthy fabric does not recover by waiting (check the NVLinks and NVSwitches: "
            "nvidia-smi nvlink -s, journalctl -u %s)" % service)})
        return out
    full = [g for g in completed if g["bandwidth"] == "Full"]
    if completed:
        reason = "%s.service is active and the fabric is Completed on %d GPU(s)" % (service, len(completed))
        reason += (", bandwidth Full." if len(full) == len(completed) else
                   " (bandwidth Full on %d; the driver reports no fabric health for the others)." % len(full) if full else
                   "; the driver reports no fabric health (bandwidth).")
    else:
        reason = "%s.service is active; these GPUs do not report a fabric state (N/A)." % service
    out.update(ready=True, reason=reason)
    return out


def cuda_failure_hint(text, nvswitch=True, service="nvidia-fabricmanager"):
    """A sentence naming Fabric Manager when ``text`` (a CUDA check's output) has error 802, else ``''``."""
    if not _CUDA_802_RE.search(text or ""):
        return ""
    if not nvswitch:
        return ("CUDA error 802 (cudaErrorSystemNotReady, 'system not yet initialized'): on NVSwitch systems this means "
                "NVIDIA Fabric Manager has not finished; this host has no NVSwitch in its facts.")
    return ("CUDA error 802 (cudaErrorSystemNotReady, 'system not yet initialized'): on this NVSwitch host CUDA waits for "
            "NVIDIA Fabric Manager (%s.service) to finish training the NVLink fabric. Check 'systemctl status %s', "
            "'journalctl -u %s' and the Fabric State in 'nvidia-smi -q' (it must be Completed); Fabric Manager must be "
            "at exactly the driver's version and start after the nvidia module is loaded." % (service, service, service))


# What Fabric Manager's and NVLSM's logs say when the fabric does not come up: Fabric Manager refusing a driver of
# another version (NVIDIA/gpu-driver-container#735), NVLSM's banner naming its version ("nvlsm: OpenSM
# 2025.06.5_eb3b4ba_df9bb3c_ae214d2", siderolabs/extensions#893), NVLSM without ib_umad (siderolabs/docs#581), Fabric
# Manager finding no NVSwitch (NV_WARN_NOTHING_TO_DO; "Detected Pre-NVL5 system" from its start script on a board whose
# management ports it did not find, data-infra/cube-studio#29).
_FM_MISMATCH_RE = re.compile(r"fabric manager NVIDIA GPU driver interface version (?P<fm>\d[\w.]*) (?:don't|doesn't|don\u2019t|do not) "
                             r"match with driver version (?P<driver>\d[\w.]*?)\.?(?=\s|$)", re.M)
_NVLSM_BANNER_RE = re.compile(r"\bOpenSM (?P<version>\d{4}\.\d{2}\.\d+)")
_UMAD_RE = re.compile(r"umad_init: can't read ABI version .*is ib_umad module loaded\?")
_NO_SWITCH_RE = re.compile(r"NV_WARN_NOTHING_TO_DO|Detected Pre-NVL5 system")
# Fabric Manager's start script lists the NVSwitch management ports with ibstat (infiniband-diags: NVIDIA's driver
# container installs it with nvlsm, NVIDIA/gpu-driver-container ubuntu24.04/install.sh); the shell's answer without it
_NO_IBSTAT_RE = re.compile(r"ibstat: (?:command )?not found")


def _upstream(version):
    """``580.95.05-1`` -> ``580.95.05``; ``1:2025.06.5-1`` -> ``2025.06.5`` (Debian's epoch and revision dropped)."""
    version = (version or "").split(":", 1)[-1]
    return version.rsplit("-", 1)[0] if "-" in version else version


def not_ready_hint(result, timeout_s, fabric=None, installed=None, driver_version=None, missing_modules=None, logs="",
                   service="nvidia-fabricmanager", fm_package="nvidia-fabricmanager"):
    """The message when the fabric wait gave up: what :func:`verdict` found, the causes the versions and logs show, and
    what to check. ``result``: :func:`verdict`'s answer at the end of the wait; ``fabric``: the plan's NVLink5 set
    (``nvlink5_fabric.fabric_set``: ``kind``, ``same_version``, ``own_version``, ``kernel_modules``) or None;
    ``installed``: ``{package: version}`` from dpkg; ``missing_modules``: the fabric's kernel modules not loaded;
    ``logs``: Fabric Manager's journal and NVLSM's log.

    A fabric that stays ``In Progress`` past the wait means Fabric Manager never registered the GPUs: on an NVLink5 HGX
    board that is NVLSM not running or not reaching the NVSwitches (Fabric Manager's start script starts NVLSM, then
    waits for its socket), or a Fabric Manager or companion of another version than the driver. Each cause found is
    named first; the checks follow. NVLSM has its own date-based versions (``2025.06.5``), so it is not compared with
    the driver: the NVLSM that runs (its log's ``OpenSM <version>``) must be the installed ``nvlsm`` package.

    A GB200/GB300 NVL compute tray (``fabric["kind"] == "nvl"``) runs no Fabric Manager: the Fabric Manager that
    registers its GPUs runs with NVLSM in NMX-Controller on the rack's NVLink switch trays (NVOS: NVIDIA NVOS User
    Manual, "Cluster Management"; NVIDIA Mission Control, "High-Speed Fabric Management"; NVML's
    ``NVML_GPU_FABRIC_HEALTH_MASK_GFM_STATE_*``, the Global Fabric Manager's connection), and the tray's service is
    IMEX, which the role starts only once the fabric is Completed. There the head and the checks name the switch trays'
    Fabric Manager and ``service`` (``nvidia-imex``: not started), never a Fabric Manager package on the tray.

    >>> stuck = {"gpus": [{"pci_bus_id": "00000008:01:00.0", "state": "In Progress"}]}
    >>> out = not_ready_hint(stuck, 10, {"kind": "nvl", "same_version": ["nvidia-imex"]}, {}, "580.95.05",
    ...                      service="nvidia-imex")
    >>> "NVLink switch trays" in out and "nvidia-fabricmanager" not in out
    True
    """
    fabric = fabric or {}
    if fabric.get("kind") == "nvl":
        return _nvl_not_ready_hint(result, timeout_s, fabric, installed or {}, driver_version, service)
    installed = installed or {}
    logs = logs or ""
    nvlink5 = fabric.get("kind") == "hgx"
    want = _upstream(driver_version)
    stuck = [g for g in result.get("gpus") or [] if g.get("state") in WAITING_STATES]
    if stuck:
        known = [g["pci_bus_id"] for g in stuck if g.get("pci_bus_id")]
        head = ("The NVLink fabric stayed %s for %s s (%d GPU(s)%s): Fabric Manager did not register the GPUs with the "
                "fabric, and CUDA fails with error 802 (cudaErrorSystemNotReady) until it does." % (
                    "/".join(sorted({g["state"] for g in stuck})), timeout_s, len(stuck),
                    (": " + ", ".join(known[:4]) + (" ..." if len(known) > 4 else "")) if known else ""))
    elif result.get("failed"):
        head = ("The NVLink fabric failed (waiting does not bring it up; not a timeout): %s"
                % (result.get("reason") or "no answer."))
    else:
        head = "The NVLink fabric is not ready after %s s: %s" % (timeout_s, result.get("reason") or "no answer.")
    causes = []
    for match in _FM_MISMATCH_RE.finditer(logs):
        causes.append("Fabric Manager %s refuses the loaded driver %s (its journal: '%s')." % (
            match.group("fm"), match.group("driver"), match.group(0).strip()))
        break
    for name in [fm_package] + list(fabric.get("same_version") or []):
        version = installed.get(name)
        if version and want and _upstream(version) != want:
            causes.append("%s is %s, the driver %s: it must be exactly the driver's version." % (name, version, want))
    for name in fabric.get("own_version") or []:
        version = installed.get(name)
        if version is None:
            causes.append("%s is not installed." % name)
            continue
        running = sorted({m.group("version") for m in _NVLSM_BANNER_RE.finditer(logs)})
        if name == "nvlsm" and running and _upstream(version) not in running:
            causes.append("The NVLSM that ran is OpenSM %s, the nvlsm package %s: another NVLSM runs (an older copy, "
                          "or another package's); the one Fabric Manager starts is /opt/nvidia/nvlsm/sbin/nvlsm of the "
                          "package." % (", ".join(running), version))
    umad = _UMAD_RE.search(logs)
    if missing_modules or umad:
        causes.append("%s not loaded%s: NVLSM reaches the NVSwitches through the ConnectX management ports with them." % (
            ", ".join(missing_modules or ["ib_umad"]), " (NVLSM: '%s')" % umad.group(0) if umad else ""))
    if nvlink5 and _NO_IBSTAT_RE.search(logs):
        causes.append("ibstat is not installed (its start script: '%s'): install %s; Fabric Manager's start script finds the "
                      "NVSwitch management ports with it." % (_NO_IBSTAT_RE.search(logs).group(0),
                                                              ", ".join(fabric.get("distro_packages") or ["infiniband-diags"])))
    nothing = _NO_SWITCH_RE.search(logs)
    if nothing and nvlink5:
        causes.append("Fabric Manager found no NVSwitch management port ('%s'): NVLSM did not start on one." % nothing.group(0))
    checks = ["%s%s at exactly the driver's version %s" % (
        fm_package, (", " + ", ".join(fabric.get("same_version") or [])) if fabric.get("same_version") else "", want or "?")]
    if nvlink5:
        checks.append("%s installed and the NVLSM that runs of its version ('OpenSM <version>' in NVLSM's log)" % (
            ", ".join(fabric.get("own_version") or ["nvlsm"])))
        checks.append("ibstat (%s) installed: the start script lists the NVSwitch management ports with it" % ", ".join(
            fabric.get("distro_packages") or ["infiniband-diags"]))
        checks.append("%s loaded (lsmod; on Ubuntu they come with linux-modules-extra-$(uname -r))" % ", ".join(
            fabric.get("kernel_modules") or ["mlx5_core", "mlx5_ib", "ib_umad"]))
    checks.append("systemctl status %s and journalctl -u %s%s" % (
        service, service, " (its start script starts NVLSM, then waits for fm_sm_ipc.socket)" if nvlink5 else ""))
    return " ".join([head] + (["Found: " + " ".join(causes)] if causes else []) + ["Check: " + "; ".join(checks) + "."])


def _nvl_not_ready_hint(result, timeout_s, fabric, installed, driver_version, service):
    """:func:`not_ready_hint` on a GB200/GB300 NVL compute tray: the switch trays' Fabric Manager did not register this
    tray's GPUs, so IMEX (``service``) was not started."""
    want = _upstream(driver_version)
    stuck = [g for g in result.get("gpus") or [] if g.get("state") in WAITING_STATES]
    if stuck:
        known = [g["pci_bus_id"] for g in stuck if g.get("pci_bus_id")]
        head = ("The NVLink fabric stayed %s for %s s (%d GPU(s)%s): the Fabric Manager of the rack's NVLink switch trays "
                "(NMX-Controller on NVOS) did not register this compute tray's GPUs, so %s was not started (it starts once "
                "the fabric is Completed), and CUDA's multi-node NVLink calls fail until both are up." % (
                    "/".join(sorted({g["state"] for g in stuck})), timeout_s, len(stuck),
                    (": " + ", ".join(known[:4]) + (" ..." if len(known) > 4 else "")) if known else "", service))
    elif result.get("failed"):
        head = "The NVLink fabric failed (waiting does not bring it up; not a timeout): %s %s was not started." % (
            result.get("reason") or "no answer.", service)
    else:
        head = "The NVLink fabric is not ready after %s s: %s %s was not started." % (
            timeout_s, result.get("reason") or "no answer.", service)
    causes = []
    for name in fabric.get("same_version") or []:
        version = installed.get(name)
        if version and want and _upstream(version) != want:
            causes.append("%s is %s, the driver %s: it must be exactly the driver's version." % (name, version, want))
    checks = ["the NVLink switch trays: their Fabric Manager (NMX-Controller, with NVLSM, on NVOS) running and this tray "
              "in its NVLink partition (NVIDIA brings the switch trays up before the compute trays; a tray booted before "
              "them needs a reboot)",
              "%s at exactly the driver's version %s" % (", ".join(fabric.get("same_version") or [service]), want or "?"),
              "nvidia-smi -q's Fabric block (State, Status, CliqueId, ClusterUUID) on every tray of the domain",
              "systemctl status %s and journalctl -u %s once the fabric is Completed" % (service, service)]
    return " ".join([head] + (["Found: " + " ".join(causes)] if causes else []) + ["Check: " + "; ".join(checks) + "."])
