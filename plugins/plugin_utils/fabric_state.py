# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""NVSwitch hosts: is the NVLink fabric ready for CUDA, and what a CUDA failure there means (pure, no I/O).

:func:`parse_fabric` reads the ``Fabric`` section of every GPU in ``nvidia-smi -q``::

    GPU 00000000:18:00.0
        ...
        Fabric
            State                             : Completed
            Status                            : Success
            CliqueId                          : 2
            ClusterUUID                       : dc6e40c4-d722-4357-9ba6-5291dd461278

(recorded in kubernetes-sigs/dra-driver-nvidia-gpu#626; ``Status : Insufficient Resources`` with a completed
state in Azure/azhpc-images#506; ``State : N/A`` on an A100 system whose Fabric Manager runs, in
bottlerocket-os/bottlerocket#3873: the fields are not reported there). NVML documents the states
``Not Supported``, ``Not Started``, ``In Progress``, ``Completed`` and that ``Status`` counts only once the state is
``Completed`` (``nvmlGpuFabricInfo_v2_t``). NVIDIA's Fabric Manager user guide: ``In Progress`` means the GPU is
being registered with the fabric and Fabric Manager is likely not running; CUDA fails with
``cudaErrorSystemNotReady`` (802) until it is ``Completed``.

:func:`verdict` joins that with ``systemctl is-active nvidia-fabricmanager``: ``ready``, ``waiting`` (keep
polling) or ``failed`` (stop, the fabric will not come up by waiting). :func:`cuda_failure_hint` turns a CUDA
check's output with error 802 into a sentence naming Fabric Manager.
"""

from __future__ import annotations

import re

# nvidia-smi -q prints "GPU 00000000:18:00.0" at the left margin for each GPU.
_GPU_RE = re.compile(r"^GPU\s+([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\s*$")
_FIELD_RE = re.compile(r"^(\s*)([A-Za-z][A-Za-z ]*?)\s*:\s*(.*?)\s*$")
_FIELDS = {"State": "state", "Status": "status", "CliqueId": "clique_id", "ClusterUUID": "cluster_uuid"}

WAITING_STATES = ("Not Started", "In Progress")
NOT_REPORTED = ("N/A", "Not Supported", "", None)

# What a CUDA program prints for error 802: cudaGetErrorString's text (the CUDA runtime), the enum names of the
# runtime and the driver API, and "802" as PyTorch and NVIDIA's samples print it ("cuda runtime error (802)",
# "code=802(cudaErrorSystemNotReady)").
_CUDA_802_RE = re.compile(r"system not yet initialized|cudaErrorSystemNotReady|CUDA_ERROR_SYSTEM_NOT_READY|"
                          r"error \(?802\)?|code=802|Error 802", re.IGNORECASE)


def parse_fabric(text):
    """``nvidia-smi -q`` text -> one dict per GPU: ``{pci_bus_id, state, status, clique_id, cluster_uuid}``.

    A GPU without a ``Fabric`` section (drivers before R530, or a trimmed paste) has ``state`` None. The
    ``Health`` sub-section under ``Fabric`` (R550 and later) is not read.
    """
    gpus = []
    current = None
    fabric_indent = None
    for line in (text or "").splitlines():
        match = _GPU_RE.match(line)
        if match:
            current = {"pci_bus_id": match.group(1).upper(), "state": None, "status": None,
                       "clique_id": None, "cluster_uuid": None}
            gpus.append(current)
            fabric_indent = None
            continue
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        if line.strip() == "Fabric":
            if current is None:
                # an excerpt (``nvidia-smi -q -i 0 | grep -A 2 Fabric``): one GPU whose address is not shown
                current = {"pci_bus_id": None, "state": None, "status": None, "clique_id": None, "cluster_uuid": None}
                gpus.append(current)
            elif current["state"] is not None and fabric_indent is None and current["pci_bus_id"] is None:
                current = {"pci_bus_id": None, "state": None, "status": None, "clique_id": None, "cluster_uuid": None}
                gpus.append(current)
            fabric_indent = indent
            continue
        if current is None:
            continue
        if fabric_indent is None:
            continue
        if indent <= fabric_indent:
            fabric_indent = None
            continue
        field = _FIELD_RE.match(line)
        # the first State/Status/... under Fabric; a nested heading ("Health") holds other names
        if field and field.group(2) in _FIELDS and current[_FIELDS[field.group(2)]] is None:
            current[_FIELDS[field.group(2)]] = field.group(3)
    return gpus


def verdict(smi_text, service_state, smi_rc=0, service="nvidia-fabricmanager"):
    """Is the fabric ready? ``smi_text``: ``nvidia-smi -q``; ``service_state``: ``systemctl is-active``'s word.

    Returns ``{ready, waiting, failed, gpus, states, reason}``. ``waiting`` while the service is not active
    (``activating``, ``inactive``: it may yet start) or any GPU is ``Not Started`` / ``In Progress``; ``failed``
    when the service ``failed``, or a GPU finished with a status other than ``Success`` (waiting does not help);
    ``ready`` when the service is active and every GPU is ``Completed`` with ``Success``, or no GPU reports the
    fields (A100 systems print ``N/A``: the active service is all there is to judge).
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
    out.update(ready=True, reason=("%s.service is active and the fabric is Completed on %d GPU(s)." % (service, len(completed))
                                   if completed else
                                   "%s.service is active; these GPUs do not report a fabric state (N/A)." % service))
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
