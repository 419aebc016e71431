# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Plan from tool outputs captured on a machine that is not at hand (controller only).

``dlbox_plan_hardware: {captures: [PATH, ...], os: ubuntu-22.04}``: each file is what a user ran and
pasted, recognized by its content:

* ``nvidia-smi -q -x`` (XML): GPUs with PCI id, name, compute capability; the installed driver;
* ``nvidia-smi --query-gpu=... --format=csv`` (with its header line): ``name``, ``pci.device_id``,
  ``pci.bus_id``, ``compute_cap``, ``driver_version`` where asked for;
* ``lspci -nn`` / ``lspci -Dnn`` (whole or grepped): NVIDIA GPUs with chip and PCI id, NVSwitches;
* ``/etc/nv_tegra_release``: the L4T release of a Jetson (name the module in ``gpus``);
* the NVLink fabric's evidence (issue 49, ``nvlink5_detect``): ``nvidia-smi nvlink -s`` (link speeds), ``lspci -vv``
  of the ConnectX-7 functions (a VPD with ``SMDL=SW_MNG``: NVSwitch management ports), ``nvidia-smi -q`` text (each
  GPU's Fabric section); ``nvidia-smi -q -x`` gives its ``<fabric>`` too.

``hardware_from_captures`` turns them into the ``dlbox_plan_hardware`` shape (GPU items as mappings)
for ``GpuIndex.host_from_hardware``. When a GPU shows up in several captures (same PCI bus id), it
counts once.
"""

from __future__ import annotations

import csv
import io
import os

from ansible_collections.dlbox.stack.plugins.module_utils import _gpu_facts as gpu_facts
from ansible_collections.dlbox.stack.plugins.module_utils import _nvlink5_facts as nvlink5_facts
from ansible_collections.dlbox.stack.plugins.plugin_utils import fabric_state

__all__ = ["CaptureError", "KINDS", "detect_kind", "parse_capture", "parse_query_gpu_csv", "hardware_from_captures"]

KINDS = ("nvidia-smi-xml", "nvidia-smi-csv", "lspci", "nv_tegra_release", "nvidia-smi-nvlink", "lspci-vv-vpd", "nvidia-smi-q")
_MAX_BYTES = 4 * 1024 * 1024


class CaptureError(ValueError):
    """A captured file cannot be read or is none of the known outputs."""


def detect_kind(text):
    """Which tool printed this text: one of ``KINDS``, or None."""
    head = (text or "").lstrip()[:4096]
    if "<nvidia_smi_log" in head or (head.startswith("<?xml") and "nvidia_smi" in head):
        return "nvidia-smi-xml"
    if gpu_facts.parse_nv_tegra_release_line(text):
        return "nv_tegra_release"
    if any(g["links"] for g in nvlink5_facts.parse_nvlink_status(text)):
        return "nvidia-smi-nvlink"
    if "Vital Product Data" in text or "SMDL=" in text:
        return "lspci-vv-vpd"
    if "NVSMI LOG" in head or any(g["state"] is not None for g in fabric_state.parse_fabric(text)):
        return "nvidia-smi-q"
    first = head.splitlines()[0].lower() if head else ""
    if "," in first and ("name" in first or "pci.device_id" in first or "compute_cap" in first):
        return "nvidia-smi-csv"
    if gpu_facts.parse_lspci_nn(text) or _looks_like_lspci(text):
        return "lspci"
    return None


def _looks_like_lspci(text):
    lines = [line for line in (text or "").splitlines() if line.strip()]
    return bool(lines) and all(" [" in line and "]: " in line and ":" in line.split(" ", 1)[0] for line in lines)


def _device_id(value):
    """``0x233010DE`` (nvidia-smi's pci.device_id: device << 16 | vendor) -> ``2330``."""
    text = str(value or "").strip().lower()
    if text.startswith("0x"):
        text = text[2:]
    if len(text) == 8 and text.endswith("10de"):
        return text[:4]
    if len(text) == 4:
        return text
    return None


def parse_query_gpu_csv(text):
    """``nvidia-smi --query-gpu=<fields> --format=csv[,nounits]`` (the header line is needed).

    Returns ``{"driver_version", "gpus": [{"name", "pci_device_id", "pci_bus_id", "compute_capability",
    "memory_mb", "source": "nvidia-smi-csv"}]}``; fields that were not queried are None.
    """
    rows = [row for row in csv.reader(io.StringIO(text or ""), skipinitialspace=True) if row and any(c.strip() for c in row)]
    if not rows:
        raise CaptureError("the nvidia-smi CSV is empty")
    header = [cell.strip().lower().split(" [")[0] for cell in rows[0]]
    if "name" not in header and "gpu_name" not in header and "pci.device_id" not in header:
        raise CaptureError("the nvidia-smi CSV has no header line naming 'name' or 'pci.device_id'; capture it with "
                           "--format=csv (not noheader), e.g. nvidia-smi --query-gpu=name,pci.device_id,pci.bus_id,"
                           "compute_cap,driver_version --format=csv")
    gpus, driver = [], None
    for row in rows[1:]:
        values = dict(zip(header, [cell.strip() for cell in row]))

        def field(*names):
            for name in names:
                value = values.get(name)
                if value not in (None, "", "[N/A]", "N/A", "[Not Supported]"):
                    return value
            return None

        memory = field("memory.total")
        gpus.append({
            "name": field("name", "gpu_name"),
            "pci_device_id": _device_id(field("pci.device_id")),
            "pci_bus_id": gpu_facts.normalize_pci_bus_id(field("pci.bus_id", "gpu_bus_id")),
            "compute_capability": field("compute_cap"),
            "memory_mb": gpu_facts._mib(memory) if memory else None,  # pylint: disable=protected-access
            "vendor_id": "10de",
            "source": "nvidia-smi-csv",
        })
        driver = driver or field("driver_version")
    return {"driver_version": driver, "gpus": gpus}


def parse_capture(text):
    """(kind, parsed) for one captured file's text; CaptureError when it is none of ``KINDS``."""
    kind = detect_kind(text)
    if kind == "nvidia-smi-xml":
        try:
            parsed = gpu_facts.parse_nvidia_smi_xml(text)
        except ValueError as exc:
            raise CaptureError(str(exc)) from exc
        return kind, {"driver_version": parsed.get("driver_version"),
                      "gpus": [dict(g, vendor_id="10de", source="nvidia-smi-xml") for g in parsed.get("gpus") or []],
                      "nvlink_fabric": {"fabric": parsed.get("fabric") or []}}
    if kind == "nvidia-smi-nvlink":
        speeds = nvlink5_facts.link_speeds(nvlink5_facts.parse_nvlink_status(text))
        return kind, {"nvlink_fabric": {"link_speeds_gbps": speeds}}
    if kind == "lspci-vv-vpd":
        return kind, {"nvlink_fabric": {"switch_mgmt_ports": nvlink5_facts.lspci_vv_switch_mgmt_functions(text)}}
    if kind == "nvidia-smi-q":
        fabric = [{k: g.get(k) for k in ("pci_bus_id", "state", "status", "clique_id", "cluster_uuid")}
                  for g in fabric_state.parse_fabric(text)]
        return kind, {"nvlink_fabric": {"fabric": fabric}}
    if kind == "nvidia-smi-csv":
        return kind, parse_query_gpu_csv(text)
    if kind == "lspci":
        devices = gpu_facts.parse_lspci_nn(text)
        gpus = [{"pci_bus_id": d["pci_bus_id"], "vendor_id": "10de", "pci_device_id": d["pci_device_id"], "name": d["name"],
                 "pci_name": d["name"], "source": "lspci"} for d in devices if d["kind"] == "gpu"]
        return kind, {"gpus": gpus, "nvswitches": [d for d in devices if d["kind"] == "nvswitch"]}
    if kind == "nv_tegra_release":
        return kind, {"l4t_release": gpu_facts.parse_nv_tegra_release_line(text)}
    raise CaptureError("is the output of none of: nvidia-smi -q -x, nvidia-smi --query-gpu=... --format=csv, lspci -nn, "
                       "/etc/nv_tegra_release, nvidia-smi nvlink -s, lspci -vv (VPD), nvidia-smi -q")


def _read(path):
    if not isinstance(path, str) or not path.strip():
        raise CaptureError("%r is not a file path" % (path,))
    try:
        if os.path.getsize(path) > _MAX_BYTES:
            raise CaptureError("is larger than %d bytes; capture only the tool's output" % _MAX_BYTES)
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError as exc:
        raise CaptureError("cannot be read (%s)" % (exc.strerror or exc)) from exc


def hardware_from_captures(hardware):
    """``dlbox_plan_hardware`` with its ``captures`` read: GPUs (as mappings), ``nvswitch``,
    ``driver_version`` and ``l4t`` added from the files, ``captures`` replaced by what each file was.

    Values given in ``hardware`` win over captured ones; GPUs named in ``gpus`` are kept besides the
    captured ones (a Jetson module name next to its nv_tegra_release, for example).
    """
    paths = (hardware or {}).get("captures")
    if not paths:
        return hardware
    out = {k: v for k, v in hardware.items() if k != "captures"}
    gpus = list(out.get("gpus") or [])
    seen_bus = {}
    found = []
    for path in paths:
        try:
            kind, parsed = parse_capture(_read(path))
        except CaptureError as exc:
            raise CaptureError("captures: %s: %s" % (path, exc)) from exc
        found.append({"path": path, "kind": kind})
        for gpu in parsed.get("gpus") or []:
            bus = gpu.get("pci_bus_id")
            if bus and bus in seen_bus:  # the same GPU in another capture: fill what is missing
                for key, value in gpu.items():
                    if seen_bus[bus].get(key) in (None, "") and value not in (None, ""):
                        seen_bus[bus][key] = value
                continue
            gpus.append(gpu)
            if bus:
                seen_bus[bus] = gpu
        if parsed.get("nvswitches"):
            out.setdefault("nvswitch", True)
        for key, value in (parsed.get("nvlink_fabric") or {}).items():
            fabric = out.setdefault("nvlink_fabric", {})
            fabric[key] = list(fabric.get(key) or []) + list(value or [])
        if parsed.get("driver_version"):
            out.setdefault("driver_version", parsed["driver_version"])
        release = parsed.get("l4t_release")
        if release:
            out.setdefault("l4t", release["l4t"])
            out.setdefault("arch", "aarch64")
    out["gpus"] = gpus
    out["captured"] = found
    return out
