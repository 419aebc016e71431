# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure parsers for what a host shows of its NVLink fabric (issue 49, "Detection"): no I/O here.

``dlbox.stack.gpu_facts`` reads the files and runs the commands, hands the text to these functions and returns
``dlbox_host.nvlink_fabric``; the decision (which fabric this is, and whether it agrees with the GPU model) is
``plugins/plugin_utils/nvlink5_detect.py``. Python 3.8, standard library only (this runs on target hosts).

What each output shows (recorded real outputs in tests/fixtures/nvlink5, sources in its SOURCES.md):

- NVSwitch management ports of an NVLink5 HGX board (B200/B300): ConnectX-7 "limited physical functions" (LPF) on the
  GPU baseboard whose Vital Product Data carries the vendor-specific field ``SMDL=SW_MNG``; other ConnectX-7 functions
  (the same PCI id 15b3:1021) do not. NVIDIA's Fabric Manager user guide, as quoted in siderolabs/extensions'
  nvidia-fabricmanager-wrapper (nvswitch.go): "the LPF VPD information includes a vendor-specific field called SMDL,
  with a non-zero value defined as SW_MNG", and Fabric Manager's start script finds the ports that way; the wrapper
  and bottlerocket-os's ghostdog read ``/sys/class/infiniband/<dev>/device/vpd`` and look for those bytes. A DGX B200's
  LPF as ``lspci -vv`` decodes its VPD: ``[VA] Vendor specific: MLX:MN=MLNX:CSKU=V2:UUID=V3:PCI=V0:SMDL=SW_MNG:...``.
- ``nvidia-smi nvlink -s``: each GPU's links and their speed. NVLink5 links report 53.125 GB/s (a GB200 tray,
  NVIDIA/k8s-test-infra#371), NVLink4 26.562 GB/s (8x H100, bottlerocket-os/bottlerocket#4418), NVLink2 25.781 GB/s
  with ``<inactive>`` links (V100, Azure/azhpc-diagnostics#73).
- ``nvidia-smi -q -x`` ``<fabric>``: ``state``, ``status``, ``cliqueId``, ``clusterUuid`` (NVML
  ``nvmlGpuFabricInfo``); ``N/A`` where the GPU has no fabric (a real H200 capture of this project,
  tests/fixtures/nvidia-smi/h200-driver-580-device.xml).
"""

from __future__ import annotations

import re

# The VPD field NVIDIA's Fabric Manager start script looks for (see the module docstring).
SW_MNG_MARKER = b"SMDL=SW_MNG"

_NA = ("", "n/a", "[n/a]", "not supported", "[not supported]", "none")
_SMI_GPU_RE = re.compile(r"^GPU\s+(\d+):\s*(.*?)\s*(?:\(UUID:\s*([^)]+)\))?\s*$")
_SMI_LINK_RE = re.compile(r"^\s+Link\s+(\d+):\s*(.*?)\s*$")
_SPEED_RE = re.compile(r"^([0-9]+(?:\.[0-9]+)?)\s*GB/s$", re.IGNORECASE)
_ZERO_UUID_RE = re.compile(r"^[0-]+$")


def _clean(value):
    if value is None:
        return None
    value = str(value).strip()
    return None if value.lower() in _NA else value


def is_switch_mgmt_vpd(data):
    """Does this VPD (the sysfs file's bytes, or ``lspci -vv``'s decoded text) mark an NVSwitch management port?

    >>> is_switch_mgmt_vpd(b"...MLX:MN=MLNX:CSKU=V2:UUID=V3:PCI=V0:SMDL=SW_MNG:MODL=C7010Z...")
    True
    >>> is_switch_mgmt_vpd(b"MLX:MN=MLNX:CSKU=V2:UUID=V3:PCI=V0:MODL=CX713106A")
    False
    """
    if data is None:
        return False
    if isinstance(data, str):
        data = data.encode("utf-8", "replace")
    return SW_MNG_MARKER in data


def switch_mgmt_ports(vpds):
    """``{infiniband device name: VPD bytes or None}`` -> the sorted names whose VPD marks a management port."""
    return sorted(name for name, data in (vpds or {}).items() if is_switch_mgmt_vpd(data))


def lspci_vv_switch_mgmt_functions(text):
    """The PCI functions of an ``lspci -vv`` paste whose decoded VPD carries ``SMDL=SW_MNG`` (a capture's answer).

    A function's block starts with its address at the left margin (``05:00.0 Infiniband controller: ...``).
    """
    found, current = [], None
    for line in (text or "").splitlines():
        if line and not line[0].isspace():
            current = line.split(" ", 1)[0]
            continue
        if current and "SMDL=SW_MNG" in line and current not in found:
            found.append(current)
    return found


def parse_nvlink_status(text):
    """``nvidia-smi nvlink -s`` -> ``[{index, name, uuid, links: [GB/s or None for <inactive>]}]``.

    Lines other than ``GPU n: ...`` and ``Link n: ...`` (``...`` where a paste was cut) are skipped.
    """
    gpus = []
    for line in (text or "").splitlines():
        match = _SMI_GPU_RE.match(line)
        if match:
            gpus.append({"index": int(match.group(1)), "name": match.group(2) or None,
                         "uuid": (match.group(3) or "").strip() or None, "links": []})
            continue
        match = _SMI_LINK_RE.match(line)
        if match and gpus:
            speed = _SPEED_RE.match(match.group(2))
            gpus[-1]["links"].append(float(speed.group(1)) if speed else None)
    return gpus


def link_speeds(nvlink_gpus):
    """Each GPU's fastest active link in GB/s (None: no active link), in the order nvidia-smi printed them."""
    out = []
    for gpu in nvlink_gpus or []:
        active = [s for s in gpu.get("links") or [] if s is not None]
        out.append(max(active) if active else None)
    return out


def _xml_text(element, tag):
    found = element.find(tag) if element is not None else None
    return _clean(found.text) if found is not None and found.text is not None else None


def fabric_from_nvsmi_xml(root):
    """``nvidia-smi -q -x``'s parsed root (``xml.etree``) -> one ``{pci_bus_id, state, status, clique_id,
    cluster_uuid}`` per GPU; ``N/A`` fields are None, a GPU without ``<fabric>`` (drivers before R530) all None."""
    out = []
    for gpu in root.findall("gpu") if root is not None else []:
        fabric = gpu.find("fabric")
        out.append({
            "pci_bus_id": _clean(gpu.get("id")),
            "state": _xml_text(fabric, "state"),
            "status": _xml_text(fabric, "status"),
            "clique_id": _xml_text(fabric, "cliqueId"),
            "cluster_uuid": _xml_text(fabric, "clusterUuid"),
        })
    return out


def in_multinode_domain(fabric):
    """A GPU registered in a multi-node NVLink domain: ``Completed`` with a cluster UUID that is not all zeros.

    GB200 NVL trays report their rack's cluster UUID and clique (leptonai/gpud#1106: clique 4026, cluster
    9c6f5af3-...; kubernetes-sigs/dra-driver-nvidia-gpu#626); an H100 that is not multi-node NVLink may report a
    completed state with an all-zero cluster UUID (meta-pytorch/torchcomms#1385), which does not count.
    """
    if not fabric or (fabric.get("state") or "").lower() != "completed":
        return False
    uuid = _clean(fabric.get("cluster_uuid"))
    return bool(uuid) and not _ZERO_UUID_RE.match(uuid)


def nvlink_fabric_facts(vpds=None, vpd_read=False, nvlink_text=None, fabric=None):
    """``dlbox_host.nvlink_fabric``: ``{switch_mgmt_ports, link_speeds_gbps, fabric}``; None where not read.

    ``vpds``: ``{infiniband device: VPD bytes}`` (``vpd_read`` False: /sys/class/infiniband was not there to read);
    ``nvlink_text``: ``nvidia-smi nvlink -s``; ``fabric``: :func:`fabric_from_nvsmi_xml`'s list.
    """
    return {
        "switch_mgmt_ports": switch_mgmt_ports(vpds) if vpd_read else None,
        "link_speeds_gbps": link_speeds(parse_nvlink_status(nvlink_text)) if nvlink_text else None,
        "fabric": list(fabric) if fabric is not None else None,
    }
