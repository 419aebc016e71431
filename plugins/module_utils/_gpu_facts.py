# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure parsers for host and GPU facts.

Every public function here takes text (or values already read from sysfs/procfs) and returns
plain dicts/lists. Nothing in this file reads a file or runs a command: the ``dlbox.stack.gpu_facts``
module does the I/O and hands the raw text to these functions, so they can be unit-tested against
recorded outputs. Python 3.8-compatible, standard library only (the code runs on target hosts).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from ansible_collections.dlbox.stack.plugins.module_utils import _nvlink5_facts

NVIDIA_VENDOR_ID = "10de"

# Values nvidia-smi prints when a field does not apply or cannot be read.
_NA_VALUES = frozenset(
    ["", "n/a", "[n/a]", "not supported", "[not supported]", "unknown error", "none", "unknown", "[unknown error]"]
)

_ANSI_RE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


# --------------------------------------------------------------------------------------------
# small helpers
# --------------------------------------------------------------------------------------------

def _clean(value):
    """Strip a text value; return None for nvidia-smi's "not available" spellings."""
    if value is None:
        return None
    value = value.strip()
    if value.lower() in _NA_VALUES:
        return None
    return value


def _to_int(value):
    value = _clean(value)
    if value is None:
        return None
    match = re.match(r"^-?\d+", value)
    return int(match.group(0)) if match else None


def _mib(value):
    """'24564 MiB' -> 24564; 'N/A' -> None."""
    return _to_int(value)


def _enabled(value):
    """'Enabled' -> True, 'Disabled' -> False, anything else (N/A...) -> None."""
    value = _clean(value)
    if value is None:
        return None
    lowered = value.lower()
    if lowered in ("enabled", "enable", "on", "yes", "active"):
        return True
    if lowered in ("disabled", "disable", "off", "no", "not active"):
        return False
    return None


def normalize_pci_bus_id(value):
    """Normalise a PCI address to ``dddd:bb:dd.f`` in lowercase.

    ``00000000:84:00.0`` (nvidia-smi, 8-digit domain) -> ``0000:84:00.0``;
    ``84:00.0`` (lspci without -D) -> ``0000:84:00.0``. Returns None when it is not an address.
    """
    if value is None:
        return None
    value = value.strip().lower()
    match = re.match(r"^(?:([0-9a-f]+):)?([0-9a-f]{1,2}):([0-9a-f]{1,2})\.([0-7])$", value)
    if not match:
        return None
    domain, bus, dev, fn = match.groups()
    domain = (domain or "0").lstrip("0") or "0"
    if len(domain) > 4:
        domain = domain[-4:]
    return "%s:%02x:%02x.%s" % (domain.zfill(4), int(bus, 16), int(dev, 16), fn)


def _hex4(value):
    """'0x2684' / '2684' / '0X2684' -> '2684' (lowercase, 4 digits); else None."""
    if value is None:
        return None
    value = value.strip().lower()
    if value.startswith("0x"):
        value = value[2:]
    if not re.match(r"^[0-9a-f]{1,4}$", value):
        return None
    return value.zfill(4)


def pci_ids_from_nvsmi(value):
    """Split nvidia-smi's ``pci_device_id`` (``0x268410DE`` or ``268410DE``) into (device, vendor)."""
    value = _clean(value)
    if value is None:
        return None, None
    value = value.lower()
    if value.startswith("0x"):
        value = value[2:]
    if not re.match(r"^[0-9a-f]{8}$", value):
        return None, None
    return value[:4], value[4:]


def _text(element, path):
    if element is None:
        return None
    found = element.find(path)
    if found is None or found.text is None:
        return None
    return found.text


# --------------------------------------------------------------------------------------------
# nvidia-smi -q -x
# --------------------------------------------------------------------------------------------

def _compute_capability(gpu):
    node = gpu.find("compute_capability")
    if node is None:
        node = gpu.find("cuda_compute_capability")
    if node is None:
        return None
    major = _clean(_text(node, "major"))
    minor = _clean(_text(node, "minor"))
    if major is not None and minor is not None:
        return "%s.%s" % (major, minor)
    value = _clean(node.text)
    if value and re.match(r"^\d+\.\d+$", value):
        return value
    return None


def _ecc_uncorrectable_aggregate(gpu):
    """Sum of aggregate uncorrectable ECC errors, or None when the GPU reports none.

    Newer drivers (Ampere and later) report ``sram_uncorrectable``/``dram_uncorrectable``
    (R570+ split SRAM into ``sram_uncorrectable_parity``/``..._secded``); older ones report
    ``double_bit/total``.
    """
    aggregate = gpu.find("ecc_errors/aggregate")
    if aggregate is None:
        return None
    values = []
    for child in aggregate:
        if child.tag.endswith("uncorrectable") or child.tag.startswith("sram_uncorrectable"):
            number = _to_int(child.text)
            if number is not None:
                values.append(number)
    if not values:
        number = _to_int(_text(aggregate, "double_bit/total"))
        if number is not None:
            values.append(number)
    if not values:
        return None
    return sum(values)


def _parse_nvsmi_gpu(gpu):
    device_id, vendor_id = pci_ids_from_nvsmi(_text(gpu, "pci/pci_device_id"))
    sub_device, sub_vendor = pci_ids_from_nvsmi(_text(gpu, "pci/pci_sub_system_id"))
    bus_id = _clean(_text(gpu, "pci/pci_bus_id")) or gpu.get("id")
    memory = _text(gpu, "fb_memory_usage/total")
    if memory is None:
        memory = _text(gpu, "memory_usage/total")  # drivers before ~R418
    mig_devices = gpu.findall("mig_devices/mig_device")
    return {
        "name": _clean(_text(gpu, "product_name")),
        "brand": _clean(_text(gpu, "product_brand")),
        "architecture": _clean(_text(gpu, "product_architecture")),
        "uuid": _clean(_text(gpu, "uuid")),
        "minor_number": _to_int(_text(gpu, "minor_number")),
        "pci_bus_id": normalize_pci_bus_id(bus_id),
        "vendor_id": vendor_id or NVIDIA_VENDOR_ID,
        "pci_device_id": device_id,
        "pci_subsystem_id": ("%s:%s" % (sub_vendor, sub_device)) if sub_device else None,
        "memory_mb": _mib(memory),
        "persistence_mode": _enabled(_text(gpu, "persistence_mode")),
        "mig_mode_current": _enabled(_text(gpu, "mig_mode/current_mig")),
        "mig_mode_pending": _enabled(_text(gpu, "mig_mode/pending_mig")),
        "mig_devices": len(mig_devices),
        "ecc_mode_current": _enabled(_text(gpu, "ecc_mode/current_ecc")),
        "ecc_mode_pending": _enabled(_text(gpu, "ecc_mode/pending_ecc")),
        "ecc_uncorrectable_aggregate": _ecc_uncorrectable_aggregate(gpu),
        "compute_capability": _compute_capability(gpu),
        "vbios_version": _clean(_text(gpu, "vbios_version")),
        "pcie_link": _pcie_link_xml(gpu),
        "source": "nvidia-smi",
    }


# --------------------------------------------------------------------------------------------
# PCIe link generation and width (nvidia-smi -q -x, nvidia-smi -q, lspci -vv)
# --------------------------------------------------------------------------------------------

# PCIe transfer rate per lane (GT/s, as lspci prints it) -> generation.
_PCIE_GT_TO_GEN = {"2.5": 1, "5": 2, "8": 3, "16": 4, "32": 5, "64": 6}


def _width(value):
    """'16x' / 'x16' / '16' -> 16; N/A -> None."""
    value = _clean(value)
    if value is None:
        return None
    match = re.search(r"(\d+)", value)
    return int(match.group(1)) if match else None


def _link(gen_max, gen_current, width_max, width_current, source):
    link = {"gen_max": gen_max, "gen_current": gen_current, "width_max": width_max,
            "width_current": width_current, "source": source}
    return link if any(v is not None for k, v in link.items() if k != "source") else None


def _pcie_link_xml(gpu):
    """``<pci><pci_gpu_link_info>`` of one ``<gpu>`` -> ``{gen_max, gen_current, width_max, width_current}``.

    ``max_link_gen`` is the most the GPU and the slot can both do; the current values drop while the GPU idles.
    """
    info = gpu.find("pci/pci_gpu_link_info")
    if info is None:
        return None
    return _link(_to_int(_text(info, "pcie_gen/max_link_gen")), _to_int(_text(info, "pcie_gen/current_link_gen")),
                 _width(_text(info, "link_widths/max_link_width")),
                 _width(_text(info, "link_widths/current_link_width")), "nvidia-smi")


_SMI_Q_GPU_RE = re.compile(r"^GPU\s+([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\s*$")
_SMI_Q_KV_RE = re.compile(r"^(\s*)([^:]+?)\s*:\s*(.*)$")


def parse_nvidia_smi_q_pcie(text):
    """PCIe link of each GPU in ``nvidia-smi -q`` (plain text), also from a trimmed paste.

    ``GPU 00000000:06:00.0`` starts a GPU; under ``GPU Link Info`` the ``PCIe Generation`` block's
    ``Max``/``Current`` and the ``Link Width`` block's ``Max``/``Current`` (``16x``) are read. Returns
    ``[{"pci_bus_id", "gen_max", "gen_current", "width_max", "width_current", "source": "nvidia-smi"}]``;
    a paste cut before the ``PCIe Generation`` header gives the width only (an unlabelled ``Max``/``Current``
    is not guessed to be the generation).
    """
    links = []
    current = None
    block = None
    for raw in (text or "").splitlines():
        line = _ANSI_RE.sub("", raw.rstrip())
        gpu_match = _SMI_Q_GPU_RE.match(line.strip())
        if gpu_match:
            current = {"pci_bus_id": normalize_pci_bus_id(gpu_match.group(1)), "gen_max": None, "gen_current": None,
                       "width_max": None, "width_current": None, "source": "nvidia-smi"}
            links.append(current)
            block = None
            continue
        stripped = line.strip()
        if stripped == "PCIe Generation":
            block = "gen"
            continue
        if stripped == "Link Width":
            block = "width"
            continue
        match = _SMI_Q_KV_RE.match(line)
        if not match:
            if stripped:
                block = None  # another section header
            continue
        key = match.group(2).strip()
        if block is None or key not in ("Max", "Current"):
            if key not in ("Device Current", "Device Max", "Host Max"):
                block = None
            continue
        if current is None:
            current = {"pci_bus_id": None, "gen_max": None, "gen_current": None, "width_max": None,
                       "width_current": None, "source": "nvidia-smi"}
            links.append(current)
        field = ("gen_" if block == "gen" else "width_") + ("max" if key == "Max" else "current")
        current[field] = _to_int(match.group(3)) if block == "gen" else _width(match.group(3))
    fields = ("gen_max", "gen_current", "width_max", "width_current")
    return [link for link in links if any(link[k] is not None for k in fields)]


_LSPCI_HEAD_RE = re.compile(r"^(?P<address>(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\s+(?P<rest>.*)$")
_LNK_RE = re.compile(r"^(?P<which>LnkCap|LnkSta):\s*(?P<body>.*)$")
_LNK_SPEED_RE = re.compile(r"Speed\s+(?P<gt>[0-9.]+)GT/s(?:\s*\((?P<speed_note>[^)]*)\))?")
_LNK_WIDTH_RE = re.compile(r"Width\s+x(?P<width>\d+)(?:\s*\((?P<width_note>[^)]*)\))?")


def parse_lspci_links(text):
    """PCIe link capability and status from ``lspci -vv`` (whole, or grepped to the ``LnkCap``/``LnkSta`` lines).

    Returns one item per device block that has a ``LnkSta``: ``{"pci_bus_id", "description", "nvidia",
    "gen_max", "width_max", "gen_current", "width_current", "speed_downgraded", "width_downgraded",
    "driver_in_use", "source": "lspci"}``. ``gen_*`` come from the GT/s rate (2.5 -> 1 ... 64 -> 6); the
    ``(downgraded)`` notes are lspci's own comparison of status and capability. Grepped lines without a device
    header give ``pci_bus_id`` None. ``driver_in_use`` is kept for every block, link or not (``Kernel driver in use``).
    """
    devices = []
    current = None

    def new(address=None, description=None):
        item = {"pci_bus_id": normalize_pci_bus_id(address) if address else None, "description": description,
                "nvidia": bool(description and "nvidia" in description.lower()),
                "gen_max": None, "width_max": None, "gen_current": None, "width_current": None,
                "speed_downgraded": None, "width_downgraded": None, "driver_in_use": None, "source": "lspci"}
        devices.append(item)
        return item

    for raw in (text or "").splitlines():
        head = _LSPCI_HEAD_RE.match(raw) if raw[:1] not in (" ", "\t") else None
        if head:
            current = new(head.group("address"), head.group("rest").strip())
            continue
        stripped = raw.strip()
        if stripped.startswith("Kernel driver in use:"):
            if current is None:
                current = new()
            current["driver_in_use"] = stripped.split(":", 1)[1].strip()
            continue
        match = _LNK_RE.match(stripped)
        if not match:
            continue
        if current is None or (match.group("which") == "LnkCap" and current["width_current"] is not None):
            current = new()  # grepped LnkCap/LnkSta lines: each pair is one device
        body = match.group("body")
        speed = _LNK_SPEED_RE.search(body)
        width = _LNK_WIDTH_RE.search(body)
        gen = _PCIE_GT_TO_GEN.get(speed.group("gt")) if speed else None
        lanes = int(width.group("width")) if width else None
        if match.group("which") == "LnkCap":
            current["gen_max"], current["width_max"] = gen, lanes
        else:
            current["gen_current"], current["width_current"] = gen, lanes
            if speed and speed.group("speed_note"):
                current["speed_downgraded"] = speed.group("speed_note").strip() == "downgraded"
            if width and width.group("width_note"):
                current["width_downgraded"] = width.group("width_note").strip() == "downgraded"
            if current["speed_downgraded"] is None and current["gen_max"] and gen:
                current["speed_downgraded"] = gen < current["gen_max"]
            if current["width_downgraded"] is None and current["width_max"] and lanes:
                current["width_downgraded"] = lanes < current["width_max"]
    return [d for d in devices if d["width_current"] is not None or d["gen_current"] is not None
            or d["driver_in_use"] is not None]


def parse_compute_cap_csv(text):
    """Parse ``nvidia-smi --query-gpu=pci.bus_id,compute_cap --format=csv,noheader``.

    ``-q -x`` carries no compute capability before DTD v12's element (and the H200 on R580 gives none
    at all), while ``compute_cap`` is a query field since R510. Returns ``{bus_id: "9.0"}``; lines that
    are not an address and a ``major.minor`` are skipped (older drivers print an error instead).
    """
    found = {}
    for line in (text or "").splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != 2:
            continue
        bus_id = normalize_pci_bus_id(parts[0])
        if bus_id and re.match(r"^\d+\.\d+$", parts[1]):
            found[bus_id] = parts[1]
    return found


def parse_nvidia_smi_xml(text):
    """Parse ``nvidia-smi -q -x``.

    Returns ``{"driver_version", "cuda_version", "attached_gpus", "gpus": [...]}``; raises
    ``ValueError`` when the text is not an ``nvidia_smi_log`` document.
    """
    if text is None or not text.strip():
        raise ValueError("empty nvidia-smi XML")
    # The document names an external DTD; ElementTree never fetches it. Drop anything before the
    # XML declaration (some wrappers print a banner first).
    start = text.find("<?xml")
    if start < 0:
        start = text.find("<nvidia_smi_log")
    if start > 0:
        text = text[start:]
    try:
        root = ET.fromstring(text.strip())
    except ET.ParseError as exc:
        raise ValueError("nvidia-smi XML does not parse: %s" % exc)
    if root.tag != "nvidia_smi_log":
        raise ValueError("not an nvidia_smi_log document (root is <%s>)" % root.tag)
    gpus = [_parse_nvsmi_gpu(gpu) for gpu in root.findall("gpu")]
    driver_version = _clean(_text(root, "driver_version"))
    cuda_version = _clean(_text(root, "cuda_version"))
    if driver_version is None and gpus:
        # some wrappers / very old drivers put it inside <gpu>
        driver_version = _clean(_text(root.find("gpu"), "driver_version"))
    if cuda_version is None and gpus:
        cuda_version = _clean(_text(root.find("gpu"), "cuda_version"))
    return {
        "driver_version": driver_version,
        "cuda_version": cuda_version,
        "attached_gpus": _to_int(_text(root, "attached_gpus")),
        "gpus": gpus,
        # each GPU's <fabric> (state, status, cliqueId, clusterUuid): NVLink fabric evidence (_nvlink5_facts)
        "fabric": _nvlink5_facts.fabric_from_nvsmi_xml(root),
    }


# --------------------------------------------------------------------------------------------
# nvidia-smi topo -m
# --------------------------------------------------------------------------------------------

_TOPO_LABEL_RE = re.compile(r"^(GPU\d+|NIC\d+|mlx\d+_\d+|[A-Za-z][\w.-]*\d)$")
_NVLINK_RE = re.compile(r"^NV(\d+)$")
# the titles of the columns after the matrix: the only cells of topo -m with a space in them
_TOPO_TITLES = (("GPU", "NUMA", "ID"), ("CPU", "Affinity"), ("NUMA", "Affinity"))
# two labels of the header run together in a paste: "NIC11NIC12", "NIC11CPU Affinity" (B200 matrices in vLLM's
# collect_env, vllm-project/vllm#31594 and #20862)
_TOPO_RUN_TOGETHER_RE = re.compile(r"(?<=\d)(?=[A-Z])")


def _topo_split(line):
    if "\t" in line:
        return [cell.strip() for cell in line.split("\t")]
    cells = [part for cell in re.split(r"\s{2,}", line.strip()) for part in _TOPO_RUN_TOGETHER_RE.split(cell)]
    if all(" " not in cell or tuple(cell.split()) in _TOPO_TITLES for cell in cells):
        return cells
    # one space between some columns (a paste or a document that collapsed the padding, the GB200 matrix of
    # OpenNebula's Grace guide: "GPU0 GPU1 GPU2 GPU3 CPU Affinity ..."): every cell is one word but the titles
    words, cells = [part for word in line.split() for part in _TOPO_RUN_TOGETHER_RE.split(word)], []
    while words:
        title = next((t for t in _TOPO_TITLES if tuple(words[:len(t)]) == t), None)
        cells.append(" ".join(title) if title else words[0])
        words = words[len(title) if title else 1:]
    return cells


def parse_nvidia_smi_topo(text):
    """Parse ``nvidia-smi topo -m`` (``--matrix``).

    Returns ``{"gpus": [...], "devices": [...], "matrix": {row: {col: link}}, "links": [...],
    "nvlink": bool, "cpu_affinity": {gpu: str}, "numa_affinity": {gpu: str}}``. ``links`` holds
    one entry per unordered GPU pair: ``{"a", "b", "type", "nvlink", "nvlinks"}`` where ``nvlinks``
    is the bonded link count of ``NV#`` (else 0). Tolerates tabs turned into spaces (even single
    spaces), header labels run together (``NIC11NIC12``), ANSI underline codes and legends. Raises
    ``ValueError`` when no matrix header is found.
    """
    if text is None:
        raise ValueError("empty topology output")
    lines = [_ANSI_RE.sub("", line).rstrip("\r\n") for line in text.splitlines()]
    header = None
    header_index = None
    for index, line in enumerate(lines):
        cells = [c for c in _topo_split(line) if c]
        if cells and cells[0] == "GPU0" and (line[:1] in ("\t", " ") or "CPU Affinity" in cells):
            header = cells
            header_index = index
            break
    if header is None:
        raise ValueError("no topology matrix header (GPU0 ...) found")
    devices = []
    for cell in header:
        if cell in ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID") or " " in cell:
            break
        devices.append(cell)
    gpus = [d for d in devices if re.match(r"^GPU\d+$", d)]
    matrix = {}
    cpu_affinity = {}
    numa_affinity = {}
    for line in lines[header_index + 1:]:
        if not line.strip():
            if matrix:
                break
            continue
        cells = _topo_split(line)
        label = cells[0]
        if label not in devices:
            if matrix:
                break
            continue
        values = cells[1:]
        row = {}
        for col, value in zip(devices, values[: len(devices)]):
            row[col] = "X" if value.strip() == "X" else value.strip()
        matrix[label] = row
        rest = values[len(devices):]
        if label in gpus:
            if len(rest) >= 1 and rest[0]:
                cpu_affinity[label] = rest[0]
            if len(rest) >= 2 and rest[1] not in ("", "N/A"):
                numa_affinity[label] = rest[1]
    links = []
    for i, first in enumerate(gpus):
        for second in gpus[i + 1:]:
            link = matrix.get(first, {}).get(second) or matrix.get(second, {}).get(first)
            if link is None:
                continue
            nv = _NVLINK_RE.match(link)
            links.append({
                "a": first,
                "b": second,
                "type": link,
                "nvlink": bool(nv),
                "nvlinks": int(nv.group(1)) if nv else 0,
            })
    return {
        "gpus": gpus,
        "devices": devices,
        "matrix": matrix,
        "links": links,
        "nvlink": any(link["nvlink"] for link in links),
        "cpu_affinity": cpu_affinity,
        "numa_affinity": numa_affinity,
    }


# --------------------------------------------------------------------------------------------
# lspci -nn / lspci -Dnn and sysfs PCI
# --------------------------------------------------------------------------------------------

_LSPCI_RE = re.compile(
    r"^(?P<address>(?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\s+"
    r"(?P<class_name>[^\[\]]+?)\s+\[(?P<class_id>[0-9a-fA-F]{4})\]:\s+"
    r"(?P<description>.*)\s+\[(?P<vendor>[0-9a-fA-F]{4}):(?P<device>[0-9a-fA-F]{4})\]"
    r"(?:\s+\(rev\s+(?P<rev>[0-9a-fA-F]+)\))?(?:\s+\(prog-if[^)]*\)\)?)?\s*$"
)

# PCI class codes (base class + subclass) that mean "a GPU" for us.
GPU_CLASS_IDS = {"0300": "VGA compatible controller", "0302": "3D controller", "0380": "Display controller"}
BRIDGE_OTHER_CLASS_ID = "0680"


def classify_nvidia_pci(class_id, device_id):
    """'gpu', 'nvswitch' or None for an NVIDIA function with this class and device id.

    NVSwitches enumerate as "Bridge [0680]". Old nForce chipsets also used 0680 for their
    Ethernet function, but with device ids below 0x1000; every NVSwitch id is above that.
    Audio (0403), USB (0c03) and UCSI (0c80) functions of a graphics card are not GPUs.
    """
    class_id = (class_id or "").lower()[:4]
    if class_id in GPU_CLASS_IDS:
        return "gpu"
    if class_id == BRIDGE_OTHER_CLASS_ID and device_id and int(device_id, 16) >= 0x1000:
        return "nvswitch"
    return None


def _strip_vendor(description):
    for prefix in ("NVIDIA Corporation ", "nVidia Corporation ", "NVidia Corporation "):
        if description.startswith(prefix):
            return description[len(prefix):]
    return description


def parse_lspci_nn(text):
    """Parse ``lspci -nn`` or ``lspci -Dnn``; return the NVIDIA GPUs and NVSwitches.

    Each item: ``{"pci_bus_id", "vendor_id", "pci_device_id", "class_id", "class_name", "kind",
    "name", "revision", "source": "lspci"}`` with ``kind`` in ``gpu``/``nvswitch``. Lines that
    are not in ``-nn`` form (no ``[vvvv:dddd]``) are ignored.
    """
    devices = []
    for line in (text or "").splitlines():
        match = _LSPCI_RE.match(line.strip())
        if not match:
            continue
        vendor = match.group("vendor").lower()
        if vendor != NVIDIA_VENDOR_ID:
            continue
        device = match.group("device").lower()
        class_id = match.group("class_id").lower()
        kind = classify_nvidia_pci(class_id, device)
        if kind is None:
            continue
        devices.append({
            "pci_bus_id": normalize_pci_bus_id(match.group("address")),
            "vendor_id": vendor,
            "pci_device_id": device,
            "class_id": class_id,
            "class_name": match.group("class_name").strip(),
            "kind": kind,
            "name": _strip_vendor(match.group("description").strip()),
            "revision": match.group("rev").lower() if match.group("rev") else None,
            "source": "lspci",
        })
    return devices


def classify_sysfs_pci(address, vendor, device, pci_class):
    """One ``/sys/bus/pci/devices/<address>`` entry (``vendor``/``device``/``class`` file contents).

    ``vendor="0x10de"``, ``device="0x2684"``, ``pci_class="0x030000"`` -> a GPU dict like
    :func:`parse_lspci_nn` items (``name`` None: sysfs has no names). Non-NVIDIA or non-GPU -> None.
    """
    vendor_id = _hex4(vendor)
    device_id = _hex4(device)
    if vendor_id != NVIDIA_VENDOR_ID or device_id is None:
        return None
    class_value = (pci_class or "").strip().lower()
    if class_value.startswith("0x"):
        class_value = class_value[2:]
    class_value = class_value.zfill(6)
    class_id = class_value[:4]
    kind = classify_nvidia_pci(class_id, device_id)
    if kind is None:
        return None
    return {
        "pci_bus_id": normalize_pci_bus_id(address),
        "vendor_id": vendor_id,
        "pci_device_id": device_id,
        "class_id": class_id,
        "class_name": GPU_CLASS_IDS.get(class_id, "Bridge" if kind == "nvswitch" else None),
        "kind": kind,
        "name": None,
        "revision": None,
        "source": "sysfs",
    }


# --------------------------------------------------------------------------------------------
# CPU / memory / OS
# --------------------------------------------------------------------------------------------

def _model_name_mhz(model):
    match = re.search(r"@\s*([\d.]+)\s*GHz", model or "")
    if match:
        return int(round(float(match.group(1)) * 1000))
    return None


def parse_cpuinfo(text):
    """Parse ``/proc/cpuinfo`` (x86 and ARM).

    Returns ``{"model", "sockets", "cores", "threads", "base_mhz", "current_mhz", "cache_kb"}``.
    ``base_mhz`` comes from the nominal clock in the model name (``@ 3.40GHz``) and is None when
    the name has none (AMD, ARM); ``cache_kb`` is the ``cache size`` field (the last-level cache
    on x86), None on ARM.
    """
    processors = []
    current = {}
    for line in (text or "").splitlines():
        if not line.strip():
            if current:
                processors.append(current)
                current = {}
            continue
        if ":" not in line:
            continue
        key, _sep, value = line.partition(":")
        current[key.strip().lower()] = value.strip()
    if current:
        processors.append(current)
    entries = [p for p in processors if "processor" in p]
    threads = len(entries) or None
    first = entries[0] if entries else (processors[0] if processors else {})
    model = first.get("model name") or first.get("hardware") or first.get("cpu model")
    physical_ids = set(p.get("physical id") for p in entries if p.get("physical id") is not None)
    sockets = len(physical_ids) if physical_ids else (1 if threads else None)
    core_pairs = set((p.get("physical id"), p.get("core id")) for p in entries if p.get("core id") is not None)
    if core_pairs:
        cores = len(core_pairs)
    elif first.get("cpu cores") and sockets:
        cores = int(first["cpu cores"]) * sockets
    else:
        cores = threads
    current_mhz = None
    if first.get("cpu mhz"):
        try:
            current_mhz = int(round(float(first["cpu mhz"])))
        except ValueError:
            current_mhz = None
    cache_kb = None
    if first.get("cache size"):
        cache_kb = _size_to_kb(first["cache size"])
    return {
        "vendor": first.get("vendor_id"),
        "model": model,
        "sockets": sockets,
        "cores": cores,
        "threads": threads,
        "base_mhz": _model_name_mhz(model),
        "current_mhz": current_mhz,
        "cache_kb": cache_kb,
    }


def _size_to_kb(value):
    """'32 MiB (1 instance)' / '32768K' / '32768 KB' / '1.5 MiB' -> KiB as int; None otherwise."""
    if value is None:
        return None
    match = re.match(r"^\s*([\d.]+)\s*([KMGT]?)(i?B)?", value.strip(), re.IGNORECASE)
    if not match:
        return None
    number = float(match.group(1))
    unit = match.group(2).upper()
    # no unit letter means plain bytes
    factor = {"": 1.0 / 1024, "K": 1, "M": 1024, "G": 1024 * 1024, "T": 1024 * 1024 * 1024}[unit]
    return int(round(number * factor))


def _is_intel(vendor, model):
    """GenuineIntel by the vendor id, or by the model name where the paste has no vendor line."""
    return vendor == "GenuineIntel" or (not vendor and str(model or "").startswith("Intel"))


_SYSFS_L3_RE = re.compile(r"^\S*/cpu(\d+)/cache/index3/(size|shared_cpu_list):\s*(\S+)\s*$")


def l3_kb_from_sysfs(text):
    """Total L3 (KiB) from the kernel's cache folders, one size per distinct ``shared_cpu_list``; None without them.

    ``text``: ``grep -H . /sys/devices/system/cpu/cpu*/cache/index3/size .../shared_cpu_list`` (``path:value`` lines;
    values as util-linux/util-linux#663 shows them: ``8192K``, ``0-5,12-17``). A Threadripper 3970X has eight 16 MiB
    instances, each shared by its CCX's CPUs: 128 MiB.
    """
    per_cpu = {}
    for line in (text or "").splitlines():
        match = _SYSFS_L3_RE.match(line.strip())
        if match:
            per_cpu.setdefault(match.group(1), {})[match.group(2)] = match.group(3)
    instances = {}
    for entry in per_cpu.values():
        size = _size_to_kb(entry.get("size"))
        if size and entry.get("shared_cpu_list"):
            instances[entry["shared_cpu_list"]] = size
    return sum(instances.values()) if instances else None


def parse_lscpu(text):
    """Parse plain ``lscpu`` output (``Key: value`` lines; any locale-independent build).

    Returns ``{"model", "architecture", "sockets", "cores", "threads", "max_mhz", "l3_kb"}``.
    ``l3_kb`` is the total over all L3 instances, or None where lscpu does not tell it:

    * ``120 MiB (2 instances)`` (util-linux 2.37 and later) and ``16 MiB`` (2.34-2.36): the sum of all instances, as
      printed (util-linux commit e5f7211, util-linux/util-linux#663 and #983);
    * ``16384K`` (util-linux 2.33 and older): ONE instance. Intel's L3 is one per socket, so it is multiplied by the
      sockets; AMD's is one per CCX/CCD (a Threadripper 3970X prints ``16384K`` of its 128 MB, util-linux#663 a
      Ryzen 5 1600's ``8192K`` of 16 MB), and how many there are is not in the output: None (unknown), never the
      one instance. ``l3_kb_from_sysfs`` gives the total from the kernel's cache folders.
    """
    fields = {}
    for line in (text or "").splitlines():
        if ":" not in line:
            continue
        key, _sep, value = line.partition(":")
        key = key.strip()
        if key and key not in fields:
            fields[key] = value.strip()

    def number(key):
        value = fields.get(key)
        if value is None or not re.match(r"^\d+$", value):
            return None
        return int(value)

    sockets = number("Socket(s)")
    cores_per_socket = number("Core(s) per socket") or number("Core(s) per cluster")
    threads = number("CPU(s)")
    clusters = number("Cluster(s)")
    if sockets is None and clusters is not None:
        sockets = 1
    cores = cores_per_socket * (sockets or clusters or 1) if cores_per_socket else None
    max_mhz = None
    if fields.get("CPU max MHz"):
        try:
            max_mhz = int(round(float(fields["CPU max MHz"].replace(",", "."))))
        except ValueError:
            max_mhz = None
    l3_kb = None
    l3 = fields.get("L3 cache") or fields.get("L3")
    if l3:
        l3_kb = _size_to_kb(l3)
        if l3_kb is not None and not re.search(r"\diB|instance", l3):  # util-linux <= 2.33: one instance
            l3_kb = l3_kb * (sockets or 1) if _is_intel(fields.get("Vendor ID"), fields.get("Model name")) else None
    return {
        "model": fields.get("Model name"),
        "architecture": fields.get("Architecture"),
        "sockets": sockets,
        "cores": cores,
        "threads": threads,
        "max_mhz": max_mhz,
        "l3_kb": l3_kb,
    }


def cpu_facts(cpuinfo_text, lscpu_text=None, l3_sysfs_text=None):
    """Merge :func:`parse_cpuinfo` and :func:`parse_lscpu` into the ``cpu`` fact (lscpu wins).

    L3: the kernel's cache folders (:func:`l3_kb_from_sysfs`), else lscpu's total, else an Intel CPU's
    ``/proc/cpuinfo`` ``cache size`` (its L3, one per socket); an AMD CPU's ``cache size`` is its L2 per core.
    """
    info = parse_cpuinfo(cpuinfo_text) if cpuinfo_text else {}
    lscpu = parse_lscpu(lscpu_text) if lscpu_text else {}
    model = lscpu.get("model") or info.get("model")
    l3_kb = l3_kb_from_sysfs(l3_sysfs_text)
    if l3_kb is None:
        l3_kb = lscpu.get("l3_kb")
    if l3_kb is None and info.get("cache_kb") and _is_intel(info.get("vendor"), info.get("model")):
        l3_kb = info["cache_kb"] * (info.get("sockets") or 1)
    return {
        "model": model,
        "sockets": lscpu.get("sockets") or info.get("sockets"),
        "cores": lscpu.get("cores") or info.get("cores"),
        "threads": lscpu.get("threads") or info.get("threads"),
        "base_mhz": _model_name_mhz(model) or info.get("base_mhz"),
        "max_mhz": lscpu.get("max_mhz"),
        "l3_kb": l3_kb,
    }


def parse_meminfo(text):
    """``/proc/meminfo`` -> ``{"total_mb", "available_mb", "swap_total_mb", "hugepages_total"}`` (MiB)."""
    values = {}
    for line in (text or "").splitlines():
        match = re.match(r"^(\w+(?:\(\w+\))?):\s+(\d+)(?:\s+kB)?", line)
        if match:
            values[match.group(1)] = int(match.group(2))

    def mb(key):
        return values[key] // 1024 if key in values else None

    return {
        "total_mb": mb("MemTotal"),
        "available_mb": mb("MemAvailable"),
        "swap_total_mb": mb("SwapTotal"),
        "hugepages_total": values.get("HugePages_Total"),
    }


def parse_os_release(text):
    """``/etc/os-release`` -> ``{"id", "version_id", "codename", "pretty_name", "id_like", "key"}``.

    ``key`` is ``<id>-<version_id>`` (``ubuntu-22.04``, ``debian-12``) or None without a version.
    """
    values = {}
    for line in (text or "").splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _sep, value = line.partition("=")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in ("'", '"'):
            value = value[1:-1]
        values[key.strip()] = value
    os_id = values.get("ID", "").lower() or None
    version_id = values.get("VERSION_ID") or None
    codename = values.get("VERSION_CODENAME") or values.get("UBUNTU_CODENAME") or None
    if codename is None and values.get("VERSION"):
        match = re.search(r"\(([a-z]+)\)", values["VERSION"])
        if match:
            codename = match.group(1)
    return {
        "id": os_id,
        "version_id": version_id,
        "codename": codename,
        "pretty_name": values.get("PRETTY_NAME") or None,
        "id_like": values.get("ID_LIKE", "").split() or [],
        "key": "%s-%s" % (os_id, version_id) if os_id and version_id else None,
    }


def normalize_arch(machine):
    """``uname -m`` spelling -> ``x86_64``/``aarch64`` (others passed through lowercased)."""
    machine = (machine or "").strip().lower()
    return {"amd64": "x86_64", "x64": "x86_64", "arm64": "aarch64"}.get(machine, machine or None)


# --------------------------------------------------------------------------------------------
# driver / kernel modules / secure boot
# --------------------------------------------------------------------------------------------

def parse_nvidia_proc_version(text):
    """``/proc/driver/nvidia/version`` -> ``{"version", "flavour", "gcc"}`` or None.

    ``flavour`` is ``open`` for "NVIDIA UNIX Open Kernel Module", ``proprietary`` otherwise.
    """
    if not text:
        return None
    match = re.search(r"NVRM version:.*?Kernel Module(?:\s+for\s+\S+)?\s+(\d+\.\d+(?:\.\d+)?)", text)
    if not match:
        return None
    gcc = re.search(r"GCC version:\s*(.+)", text)
    return {
        "version": match.group(1),
        "flavour": "open" if "Open Kernel Module" in text else "proprietary",
        "gcc": gcc.group(1).strip() if gcc else None,
    }


def parse_proc_modules(text):
    """``/proc/modules`` -> ``{"nouveau_loaded", "nvidia_loaded", "nvidia_modules", "infiniband_modules"}``.

    ``infiniband_modules``: the loaded ConnectX/InfiniBand modules (``mlx5_*``, ``ib_*``): NVLSM on NVLink5 HGX boards
    needs ``mlx5_core``, ``mlx5_ib`` and ``ib_umad`` (NVIDIA/gpu-operator#2781).
    """
    names = []
    for line in (text or "").splitlines():
        parts = line.split()
        if parts:
            names.append(parts[0])
    nvidia = sorted(n for n in names if n == "nvidia" or n.startswith("nvidia_"))
    return {
        "nouveau_loaded": "nouveau" in names,
        "nvidia_loaded": "nvidia" in names,
        "nvidia_modules": nvidia,
        "infiniband_modules": sorted(n for n in names if n.startswith(("mlx5_", "ib_"))),
    }


def parse_secure_boot(text):
    """``mokutil --sb-state`` output -> True / False / None (unknown).

    "SecureBoot enabled" -> True; "SecureBoot disabled" -> False; "This system doesn't support
    Secure Boot" and "EFI variables are not supported on this system" (legacy BIOS) -> False.
    """
    if not text:
        return None
    lowered = text.lower()
    if "secureboot enabled" in lowered:
        return True
    if "secureboot disabled" in lowered:
        return False
    if "doesn't support secure boot" in lowered or "efi variables are not supported" in lowered:
        return False
    return None


def secure_boot_from_efivar(data):
    """Content of ``/sys/firmware/efi/efivars/SecureBoot-8be4df61-...``: 4 attribute bytes + 1 value byte."""
    if data is None or len(data) < 5:
        return None
    return bytearray(data[4:5])[0] == 1


# --------------------------------------------------------------------------------------------
# disks / ECC memory
# --------------------------------------------------------------------------------------------

_VIRTUAL_DISK_RE = re.compile(r"^(loop|ram|zram|sr|fd|dm-|nbd|drbd)\d*")
# A hardware RAID controller's volume is an sdX whose SCSI model (sysfs device/model, lsblk MODEL) names the
# controller: Dell PERC ("PERC 6/i", canonical/lxd#7096), Broadcom/LSI MegaRAID ("MR9361-8i", "MR9380-8e" under
# vendor AVAGO in lsscsi of sos reports), HPE Smart Array ("LOGICAL VOLUME" under vendor HP, driver hpsa).
_HW_RAID_MODEL_RE = re.compile(r"^\s*(PERC\b|MR9\d{3}|LOGICAL VOLUME\s*$)")


def classify_disk(name, rotational, size_sectors, model=None):
    """One ``/sys/block/<name>`` entry -> ``{"name", "kind", "size_gb"}`` or None.

    ``rotational`` is the text of ``queue/rotational`` (``"0"``/``"1"``), ``size_sectors`` the
    text of ``size`` (512-byte sectors, whatever the logical block size), ``model`` of ``device/model``. ``kind`` is
    ``nvme`` for ``nvme*``, ``md`` for a software RAID array (``md*``), ``hwraid`` for a RAID controller's volume
    (PERC, MegaRAID, Smart Array: see ``_HW_RAID_MODEL_RE``), ``ssd`` for non-rotational, ``hdd`` for rotational.
    ``size_gb`` is decimal GB rounded. Loop, RAM, zram, optical and device-mapper devices and
    empty disks -> None.
    """
    name = (name or "").strip()
    if not name or _VIRTUAL_DISK_RE.match(name):
        return None
    try:
        sectors = int(str(size_sectors).strip())
    except ValueError:
        return None
    if sectors <= 0:
        return None
    if name.startswith("nvme"):
        kind = "nvme"
    elif re.match(r"^md\d+$", name):
        kind = "md"
    elif _HW_RAID_MODEL_RE.match(model or ""):
        kind = "hwraid"
    elif str(rotational).strip() == "0":
        kind = "ssd"
    elif str(rotational).strip() == "1":
        kind = "hdd"
    else:
        kind = None
    return {"name": name, "kind": kind, "size_gb": int(round(sectors * 512 / 1e9))}


def zfs_pools_from_mountinfo(text):
    """The ZFS pools with a mounted dataset: ``... - zfs tank/data rw,xattr`` -> ``["tank"]`` (proc(5) mountinfo)."""
    pools = set()
    for line in (text or "").splitlines():
        _head, sep, tail = line.partition(" - ")
        fields = tail.split()
        if sep and len(fields) >= 2 and fields[0] == "zfs":
            pools.add(fields[1].split("/")[0])
    return sorted(pools)


def parse_mountinfo_root(text):
    """``/proc/self/mountinfo`` -> the ``major:minor`` of the filesystem mounted at ``/`` (the last such line), or None.

    ``36 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw`` -> ``259:2`` (proc(5), /proc/[pid]/mountinfo).
    """
    found = None
    for line in (text or "").splitlines():
        fields = line.split()
        if len(fields) >= 5 and fields[4] == "/" and re.match(r"^\d+:\d+$", fields[2]):
            found = fields[2]
    return found


def root_disk(root_dev, blocks, disks):
    """The disk that holds ``/``: ``{"name", "kind", "size_gb", "members", "member_kinds"}`` or None.

    ``root_dev``: ``major:minor`` (or a device name) of the root filesystem; ``blocks``: ``{name: {"dev": "259:2",
    "parent": "nvme0n1" or None, "slaves": [names]}}`` (sysfs ``/sys/block/<disk>[/<partition>]/dev`` and
    ``slaves/``, or lsblk's tree); ``disks``: the ``disks`` fact. A partition counts as its disk; device-mapper (LVM,
    LUKS) as the disks under it; an md array as itself, with its member disks' kinds (an array of NVMe disks is NVMe).
    None when ``/`` is not on a block device (a container's overlay, tmpfs).
    """
    if not root_dev:
        return None
    by_dev = {b.get("dev"): name for name, b in (blocks or {}).items() if b.get("dev")}
    start = by_dev.get(root_dev) or (root_dev if root_dev in (blocks or {}) else None)
    by_name = {d["name"]: d for d in disks or []}

    def top(name, depth=0):
        entry = (blocks or {}).get(name) or {}
        if depth > 8:
            return []
        if entry.get("parent"):
            return top(entry["parent"], depth + 1)
        if name in by_name and (by_name[name].get("kind") == "md" or not entry.get("slaves")):
            return [name]
        if entry.get("slaves"):
            return sorted({d for s in entry["slaves"] for d in top(s, depth + 1)})
        return [name] if name in by_name else []

    found = top(start) if start else []
    if not found:
        return None
    if len(found) > 1:  # one volume over several disks (LVM, not md): no single size
        return {"name": " + ".join(found), "kind": by_name[found[0]].get("kind"), "size_gb": None, "members": found,
                "member_kinds": sorted({by_name[n].get("kind") for n in found})}
    disk = by_name[found[0]]
    members = []
    if disk.get("kind") == "md":
        members = sorted({d for s in ((blocks or {}).get(disk["name"]) or {}).get("slaves") or [] for d in top(s)})
    return {"name": disk["name"], "kind": disk.get("kind"), "size_gb": disk.get("size_gb"), "members": members,
            "member_kinds": sorted({by_name[n].get("kind") for n in members if n in by_name})}


def sysfs_link_gen(speed):
    """sysfs ``max_link_speed`` / ``current_link_speed`` text (``16.0 GT/s PCIe``, ``8 GT/s``) -> generation 1-6."""
    match = re.match(r"^\s*([0-9.]+)\s*GT/s", str(speed or ""))
    if not match:
        return None
    value = match.group(1).rstrip("0").rstrip(".") if "." in match.group(1) else match.group(1)
    return _PCIE_GT_TO_GEN.get(value)


def pcie_capability(smi_link, gpu_max_gen, pci_link):
    """The GPU's own PCIe capability against the link it got: ``{"gen", "width", "link_gen", "link_width", "source"}``.

    ``smi_link``: nvidia-smi's ``{gen_max, width_max, width_current}`` (its ``Max`` generation is the lower of the
    GPU's and the slot's, NVML's nvmlDeviceGetMaxPcieLinkGeneration); ``gpu_max_gen``: nvidia-smi's ``Device Max``
    (``max_device_link_gen``, pcie.link.gen.gpumax), the GPU's own; ``pci_link``: the GPU function's LnkCap/LnkSta
    (lspci -vv, or sysfs max_link_*/current_link_*) as ``{gen_max, width_max, gen_current, width_current}``.
    The GPU's capability is its LnkCap (or Device Max); the link it got is nvidia-smi's Max generation and the current
    width (a GPU drops its generation when idle, not its width). nvidia-smi's width ``Max`` is NVML's
    nvmlDeviceGetMaxPcieLinkWidth, "possible with this device and system": the lower of card and slot, so a card in
    an x8 slot reads x8 there. It never stands for the card's own width: without a LnkCap ``width`` is None, and the
    fitness report takes the card's width from its reference (data/acceptance.yml) or says unknown.
    None when nothing is known.
    """
    smi_link, pci_link = smi_link or {}, pci_link or {}
    gen = gpu_max_gen or pci_link.get("gen_max")
    width = pci_link.get("width_max")
    link_gen = smi_link.get("gen_max")
    link_width = pci_link.get("width_current") or smi_link.get("width_current")
    if not any((gen, width, link_gen, link_width)):
        return None
    sources = []
    if gpu_max_gen or smi_link:
        sources.append("nvidia-smi")
    if pci_link:
        sources.append(pci_link.get("source") or "lspci")
    return {"gen": gen, "width": width, "link_gen": link_gen, "link_width": link_width, "source": "+".join(sources)}


def pcie_gpu_max_gen_xml(text):
    """``{pci bus id: max_device_link_gen}`` from ``nvidia-smi -q -x`` (drivers that print it), else {}."""
    try:
        root = ET.fromstring((text or "").strip())
    except ET.ParseError:
        return {}
    out = {}
    for gpu in root.findall("gpu"):
        gen = _to_int(_text(gpu, "pci/pci_gpu_link_info/pcie_gen/max_device_link_gen"))
        bus = normalize_pci_bus_id(_clean(_text(gpu, "pci/pci_bus_id")) or gpu.get("id"))
        if gen and bus:
            out[bus] = gen
    return out


def ecc_from_edac(edac_mc_exists, mc_entries):
    """ECC memory from EDAC: ``/sys/devices/system/edac/mc`` exists? and its entries.

    Any ``mc<N>`` -> True (a memory controller with error detection is registered); anything else -> None
    (unknown). The ``mc`` folder is made by the EDAC core (edac_core, often built in) and ``mc<N>`` only when a
    platform driver (skx_edac, amd64_edac, ...) binds to the memory controller: an empty folder means no driver
    bound (not loaded, not built, a VM, a CPU it does not know yet), not that the memory has no ECC (Linux kernel
    documentation, admin-guide/RAS "EDAC"). ``dmidecode -t memory`` tells "no ECC" where it is captured.
    ``edac_mc_exists`` is kept for callers and for the report's note.
    """
    if any(re.match(r"^mc\d+$", entry) for entry in (mc_entries or [])):
        return True
    return None


# --------------------------------------------------------------------------------------------
# containers / WSL / Jetson
# --------------------------------------------------------------------------------------------

_TEGRA_HEAD_RE = re.compile(r"^#\s*R(\d+)\s*\((\w+)\),\s*REVISION:\s*(\d+(?:\.\d+)*)\.?\s*(?:,(.*))?$")


def parse_nv_tegra_release_line(text):
    """The whole header line of ``/etc/nv_tegra_release`` as a mapping; None when there is none.

    ``# R36 (release), REVISION: 4.3, GCID: 38968081, BOARD: generic, EABI: aarch64, DATE: Wed Jan  8 01:49:37 UTC 2025``
    -> ``{"l4t": "36.4.3", "release": "36", "kind": "release", "revision": "4.3", "gcid": "38968081",
    "board": "generic", "eabi": "aarch64", "date": "Wed Jan  8 01:49:37 UTC 2025", "kernel_variant": None,
    "line": <the line>}``. ``# KERNEL_VARIANT: oot`` (L4T 35.4 and newer) on a later line fills
    ``kernel_variant``. Fields a line lacks are None; an unknown ``KEY: value`` field is kept lower-cased.
    """
    head = None
    variant = None
    for line in (text or "").splitlines():
        line = line.strip()
        if head is None:
            match = _TEGRA_HEAD_RE.match(line)
            if match:
                head = (match, line)
                continue
        kv = re.match(r"^#\s*KERNEL_VARIANT:\s*(\S+)", line)
        if kv:
            variant = kv.group(1)
    if head is None:
        return None
    match, line = head
    revision = match.group(3)
    out = {"l4t": "%s.%s" % (match.group(1), revision), "release": match.group(1), "kind": match.group(2),
           "revision": revision, "gcid": None, "board": None, "eabi": None, "date": None,
           "kernel_variant": variant, "line": line}
    for part in (match.group(4) or "").split(","):
        key, sep, value = part.partition(":")
        if sep and key.strip():
            out[key.strip().lower()] = value.strip() or None
    return out


def _environ_container(environ):
    if not environ:
        return None
    if isinstance(environ, bytes):
        environ = environ.decode("utf-8", "replace")
    for item in environ.split("\0"):
        if item.startswith("container="):
            return item.split("=", 1)[1].strip() or None
    return None


def _cgroup_container(cgroup_text):
    text = cgroup_text or ""
    if re.search(r"kubepods", text):
        return "kubernetes"
    if re.search(r"/docker[/-]", text) or "docker-" in text:
        return "docker"
    if "libpod" in text:
        return "podman"
    if re.search(r"/lxc[/.]", text) or "lxc.payload" in text:
        return "lxc"
    if "containerd" in text:
        return "containerd"
    return None


_NVPMODEL_MODE_RE = re.compile(r"^<\s*POWER_MODEL\s+(.*?)\s*>\s*$")
_NVPMODEL_DEFAULT_RE = re.compile(r"^<\s*PM_CONFIG\s+DEFAULT\s*=\s*(\d+)\s*>\s*$")
_NVPMODEL_STATUS_RE = re.compile(r"^pmode:0*(\d+)")


def parse_nvpmodel_conf(text):
    """The power modes of an ``nvpmodel.conf`` and its default.

    ``< POWER_MODEL ID=0 NAME=MAXN >`` ... ``< PM_CONFIG DEFAULT=2 >`` -> ``{"modes": [{"id": 0, "name": "MAXN"},
    ...], "default": 2}``. Attributes may come in any order (``< POWER_MODEL NAME=MAXN ID=3 >``); commented lines
    (``# < POWER_MODEL ID=id_num NAME=mode_name >`` in NVIDIA's header) are skipped. None when ``text`` is empty.
    """
    if not text:
        return None
    modes, default = [], None
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("#"):
            continue
        match = _NVPMODEL_MODE_RE.match(line)
        if match:
            attrs = dict(re.findall(r"(\w+)=(\S+)", match.group(1)))
            if "ID" in attrs and attrs["ID"].isdigit() and attrs.get("NAME"):
                modes.append({"id": int(attrs["ID"]), "name": attrs["NAME"]})
            continue
        match = _NVPMODEL_DEFAULT_RE.match(line)
        if match:
            default = int(match.group(1))
    return {"modes": modes, "default": default}


def jetson_power_mode(conf_text, status_text):
    """The module's power mode from ``/etc/nvpmodel.conf`` and nvpmodel's ``/var/lib/nvpmodel/status``.

    nvpmodel keeps the mode it last set in its status file as ``pmode:0000`` (the id, four digits); before any
    ``nvpmodel -m`` the conf's ``PM_CONFIG DEFAULT`` is in force. Returns ``{"id", "name", "set"}`` (``set``: True
    when the status file names it, False for the conf's default; ``name`` None when the conf lacks that id), or
    None when neither file says anything::

        conf of the AGX Orin (MAXN=0 ... MODE_30W=2, default 2), status "pmode:0000" -> {id 0, name MAXN, set True}
        the same conf, no status                                 -> {id 2, name MODE_30W, set False}
    """
    conf = parse_nvpmodel_conf(conf_text) or {"modes": [], "default": None}
    match = _NVPMODEL_STATUS_RE.match((status_text or "").strip())
    mode_id = int(match.group(1)) if match else conf["default"]
    if mode_id is None:
        return None
    name = next((m["name"] for m in conf["modes"] if m["id"] == mode_id), None)
    return {"id": mode_id, "name": name, "set": bool(match)}


def detect_virtualization(
    dockerenv=False,
    containerenv=False,
    cgroup_text=None,
    pid1_environ=None,
    systemd_container=None,
    kernel_release=None,
    proc_version=None,
    nv_tegra_release=None,
    device_tree_model=None,
    nvpmodel_conf=None,
    nvpmodel_status=None,
):
    """Container / WSL / Jetson detection from already-read values.

    Returns ``{"container": bool, "container_type": str|None, "wsl": bool, "wsl_version": 1|2|None,
    "jetson": None|{"l4t", "model", "l4t_release", "power_mode"}}`` (``l4t_release``: the whole header line, see
    ``parse_nv_tegra_release_line``; ``power_mode``: ``jetson_power_mode`` of the nvpmodel files, or None).
    ``container_type`` is docker, podman, lxc, kubernetes, systemd-nspawn... as far as the evidence tells (``container`` in pid 1's environment and
    ``/run/systemd/container`` win over marker files, marker files over ``/proc/1/cgroup``).
    """
    container_type = _environ_container(pid1_environ)
    if container_type is None and systemd_container:
        container_type = systemd_container.strip() or None
    if container_type is None and containerenv:
        container_type = "podman"
    if container_type is None and dockerenv:
        container_type = "docker"
    if container_type is None:
        container_type = _cgroup_container(cgroup_text)
    release = (kernel_release or "") + " " + (proc_version or "")
    wsl = bool(re.search(r"microsoft|wsl", release, re.IGNORECASE))
    wsl_version = None
    if wsl:
        wsl_version = 2 if re.search(r"wsl2|microsoft-standard", release, re.IGNORECASE) else 1
    release = parse_nv_tegra_release_line(nv_tegra_release)
    l4t = release["l4t"] if release else None
    model = (device_tree_model or "").replace("\0", "").strip() or None
    jetson = None
    lowered_model = (model or "").lower()
    if l4t or "jetson" in lowered_model or ("nvidia" in lowered_model and "tegra" in lowered_model):
        jetson = {"l4t": l4t, "model": model, "l4t_release": release,
                  "power_mode": jetson_power_mode(nvpmodel_conf, nvpmodel_status)}
    return {
        "container": container_type is not None,
        "container_type": container_type,
        "wsl": wsl,
        "wsl_version": wsl_version,
        "jetson": jetson,
    }


# --------------------------------------------------------------------------------------------
# putting it together
# --------------------------------------------------------------------------------------------

def merge_gpus(smi_gpus, pci_gpus):
    """Union of GPUs seen by nvidia-smi and by lspci/sysfs, keyed by PCI bus id.

    nvidia-smi values win; ``pci_name`` keeps lspci's name. A GPU on the bus that the driver does
    not show (unsupported by this branch, fallen off the bus, bound to vfio) is kept with
    ``driver_visible: False``.
    """
    merged = []
    by_bus = {}
    for gpu in smi_gpus or []:
        item = dict(gpu)
        item["driver_visible"] = True
        item.setdefault("pci_name", None)
        merged.append(item)
        if item.get("pci_bus_id"):
            by_bus[item["pci_bus_id"]] = item
    for dev in pci_gpus or []:
        existing = by_bus.get(dev.get("pci_bus_id"))
        if existing is not None:
            existing["pci_name"] = dev.get("name")
            if existing.get("pci_device_id") is None:
                existing["pci_device_id"] = dev.get("pci_device_id")
            continue
        merged.append({
            "name": dev.get("name"),
            "pci_name": dev.get("name"),
            "uuid": None,
            "pci_bus_id": dev.get("pci_bus_id"),
            "vendor_id": dev.get("vendor_id"),
            "pci_device_id": dev.get("pci_device_id"),
            "memory_mb": None,
            "source": dev.get("source"),
            "driver_visible": False if smi_gpus is not None else None,
        })
    merged.sort(key=lambda g: g.get("pci_bus_id") or "")
    return merged


def build_host_facts(raw):
    """Build the ``dlbox_host`` fact from a dict of raw inputs (all optional).

    Keys: ``machine``, ``kernel_release``, ``proc_version``, ``os_release``, ``cpuinfo``,
    ``lscpu``, ``l3_sysfs`` (see :func:`l3_kb_from_sysfs`), ``meminfo``, ``edac_mc_exists``, ``edac_mc_entries``, ``disks`` (list of
    ``(name, rotational, size)``), ``mokutil`` (text), ``secure_boot_efivar`` (bytes),
    ``efi`` (bool: ``/sys/firmware/efi`` exists), ``proc_modules``, ``nvidia_proc_version``,
    ``nvidia_smi_xml``, ``nvidia_smi_cc_csv``, ``nvidia_smi_topo``, ``lspci``, ``sysfs_pci`` (list of
    ``(address, vendor, device, class)``), ``dockerenv``, ``containerenv``, ``cgroup``,
    ``pid1_environ``, ``systemd_container``, ``nv_tegra_release``, ``device_tree_model``,
    ``mountinfo`` or ``root_dev`` and ``blocks`` (see :func:`root_disk`), ``pci_links`` (``{bus id: LnkCap/LnkSta
    link}`` of the GPUs, see :func:`pcie_capability`), ``probes`` (dict passed through), ``ib_vpds`` (``{infiniband
    device: VPD bytes}``) with ``ib_vpd_read``, ``nvidia_smi_nvlink`` (``nvidia-smi nvlink -s``): the NVLink fabric's
    evidence (``nvlink_fabric``, :func:`_nvlink5_facts.nvlink_fabric_facts`).
    """
    probes = dict(raw.get("probes") or {})
    os_facts = parse_os_release(raw.get("os_release")) if raw.get("os_release") else {
        "id": None, "version_id": None, "codename": None, "pretty_name": None, "id_like": [], "key": None,
    }
    memory = parse_meminfo(raw.get("meminfo")) if raw.get("meminfo") else {"total_mb": None}
    disks = []
    for entry in raw.get("disks") or []:
        disk = classify_disk(*entry)
        if disk is not None:
            disks.append(disk)
    disks.sort(key=lambda d: d["name"])

    secure_boot = parse_secure_boot(raw.get("mokutil"))
    if secure_boot is None and raw.get("secure_boot_efivar") is not None:
        secure_boot = secure_boot_from_efivar(raw.get("secure_boot_efivar"))
    if secure_boot is None and raw.get("efi") is False:
        secure_boot = False

    virt = detect_virtualization(
        dockerenv=raw.get("dockerenv", False),
        containerenv=raw.get("containerenv", False),
        cgroup_text=raw.get("cgroup"),
        pid1_environ=raw.get("pid1_environ"),
        systemd_container=raw.get("systemd_container"),
        kernel_release=raw.get("kernel_release"),
        proc_version=raw.get("proc_version"),
        nv_tegra_release=raw.get("nv_tegra_release"),
        device_tree_model=raw.get("device_tree_model"),
        nvpmodel_conf=raw.get("nvpmodel_conf"),
        nvpmodel_status=raw.get("nvpmodel_status"),
    )

    modules = parse_proc_modules(raw.get("proc_modules")) if raw.get("proc_modules") is not None else {
        "nouveau_loaded": None, "nvidia_loaded": None, "nvidia_modules": [],
    }
    proc_driver = parse_nvidia_proc_version(raw.get("nvidia_proc_version"))
    modules["nvidia_version"] = proc_driver["version"] if proc_driver else None
    modules["nvidia_flavour"] = proc_driver["flavour"] if proc_driver else None

    smi = None
    if raw.get("nvidia_smi_xml"):
        try:
            smi = parse_nvidia_smi_xml(raw["nvidia_smi_xml"])
        except ValueError as exc:
            probes["nvidia_smi_error"] = str(exc)
            smi = None
    if smi and raw.get("nvidia_smi_cc_csv"):
        query_cc = parse_compute_cap_csv(raw["nvidia_smi_cc_csv"])
        for gpu in smi["gpus"]:
            if gpu.get("compute_capability") is None:
                gpu["compute_capability"] = query_cc.get(gpu.get("pci_bus_id"))

    pci_devices = []
    if raw.get("lspci") is not None:
        pci_devices = parse_lspci_nn(raw.get("lspci"))
    elif raw.get("sysfs_pci") is not None:
        for entry in raw.get("sysfs_pci"):
            dev = classify_sysfs_pci(*entry)
            if dev is not None:
                pci_devices.append(dev)
    pci_gpus = [d for d in pci_devices if d["kind"] == "gpu"]
    nvswitches = [
        {"pci_bus_id": d["pci_bus_id"], "pci_device_id": d["pci_device_id"], "name": d["name"]}
        for d in pci_devices if d["kind"] == "nvswitch"
    ]
    nvswitches.sort(key=lambda d: d["pci_bus_id"] or "")

    gpus = merge_gpus(smi["gpus"] if smi else None, pci_gpus)
    gpu_max_gen = pcie_gpu_max_gen_xml(raw.get("nvidia_smi_xml")) if smi else {}
    for gpu in gpus:
        bus = gpu.get("pci_bus_id")
        cap = pcie_capability(gpu.get("pcie_link"), gpu_max_gen.get(bus), (raw.get("pci_links") or {}).get(bus))
        if cap:
            gpu["pcie_cap"] = cap

    topology = None
    nvlink = None
    if raw.get("nvidia_smi_topo"):
        try:
            topology = parse_nvidia_smi_topo(raw["nvidia_smi_topo"])
            nvlink = topology["nvlink"]
        except ValueError as exc:
            probes["nvidia_smi_topo_error"] = str(exc)

    fabric = smi.get("fabric") if smi is not None else None
    nvlink_fabric = _nvlink5_facts.nvlink_fabric_facts(
        raw.get("ib_vpds"), bool(raw.get("ib_vpd_read")), raw.get("nvidia_smi_nvlink"), fabric)

    driver = {
        "present": smi is not None,
        "version": (smi or {}).get("driver_version") or modules["nvidia_version"],
        "cuda_version": (smi or {}).get("cuda_version"),
        "kernel_module_flavour": modules["nvidia_flavour"],
    }

    return {
        "arch": normalize_arch(raw.get("machine")),
        "os": {
            "id": os_facts["id"],
            "version_id": os_facts["version_id"],
            "codename": os_facts["codename"],
            "pretty_name": os_facts["pretty_name"],
            "key": os_facts["key"],
        },
        "kernel": raw.get("kernel_release") or None,
        "cpu": cpu_facts(raw.get("cpuinfo"), raw.get("lscpu"), raw.get("l3_sysfs")),
        "memory": {
            "total_mb": memory.get("total_mb"),
            "ecc": ecc_from_edac(raw.get("edac_mc_exists", False), raw.get("edac_mc_entries")),
        },
        "disks": disks,
        "root_disk": root_disk(raw.get("root_dev") or parse_mountinfo_root(raw.get("mountinfo")), raw.get("blocks"), disks),
        "zfs": {"pools": zfs_pools_from_mountinfo(raw.get("mountinfo")), "members": sorted(raw.get("zfs_members") or [])},
        "secure_boot": secure_boot,
        "virtualization": {
            "container": virt["container"],
            "container_type": virt["container_type"],
            "wsl": virt["wsl"],
            "wsl_version": virt["wsl_version"],
        },
        "jetson": virt["jetson"],
        "modules": {
            "nouveau_loaded": modules["nouveau_loaded"],
            "nvidia_loaded": modules["nvidia_loaded"],
            "nvidia_version": modules["nvidia_version"],
            "infiniband_modules": modules.get("infiniband_modules") or [],
        },
        "gpus": gpus,
        "nvswitches": nvswitches,
        "driver": driver,
        "nvlink": nvlink,
        "topology": topology,
        "nvlink_fabric": nvlink_fabric,
        "probes": probes,
    }
