# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A machine's fitness facts from what was captured on it (controller only, no I/O).

``host_from_captures([(name, text), ...])`` turns a ``dlbox-collect`` tarball's files, or outputs a colleague
pasted, into the ``dlbox_host`` shape of ``dlbox.stack.gpu_facts`` that ``fitness.judge_host`` judges; every text
is recognised by its content (``recognize``), never by its file name:

* ``lscpu`` (plain, any util-linux layout), ``/proc/cpuinfo``: CPU model, cores, threads, base clock, L3;
  ``grep -H . /sys/devices/system/cpu/cpu*/cache/index3/{size,shared_cpu_list}``: L3 where lscpu prints one instance;
* ``/proc/meminfo``: RAM; ``ls /sys/devices/system/edac/mc`` or ``dmidecode -t memory``: ECC;
* ``lsblk`` (``-J``/``-b`` or the plain tree): disks, md arrays and the disk that holds ``/``;
* ``nvidia-smi -q -x`` or ``nvidia-smi -q``: GPUs, their memory and PCIe link (``Device Max``: the GPU's own);
* ``lspci -vv`` (``LnkCap``/``LnkSta``: the GPU's own link and the one it got), ``lspci -nn``, ``nvidia-smi topo -m``,
  ``/etc/nv_tegra_release``.

The parsing is gpu_facts' own (``module_utils/_gpu_facts.py``) wherever it exists, so a live run and a bundle of
the same machine give the same facts; what no capture holds stays unknown (``None``), and ``captured`` says which
kinds were seen.
"""

from __future__ import annotations

import json
import re

from ansible_collections.dlbox.stack.plugins.module_utils import _gpu_facts as hf

__all__ = ["KINDS", "recognize", "host_from_captures", "parse_lsblk", "parse_nvidia_smi_q_gpus", "edac_from_capture"]

KINDS = ("lscpu", "cpuinfo", "cpu-l3-sysfs", "meminfo", "edac", "dmidecode-memory", "lsblk", "nvidia-smi-xml", "nvidia-smi-q",
         "lspci-vv", "lspci-nn", "nvidia-smi-topo", "nv_tegra_release")

_LSCPU_RE = re.compile(r"^\s*(Architecture|CPU\(s\)|Model name|Core\(s\) per socket)\s*:", re.M)
_CPUINFO_RE = re.compile(r"^processor\s*:\s*\d+", re.M)
_MEMINFO_RE = re.compile(r"^MemTotal:\s+\d+\s*kB", re.M)
_EDAC_HEAD = "/sys/devices/system/edac/mc"
_MC_RE = re.compile(r"^mc\d+$")
_EDAC_ENTRY_RE = re.compile(r"^(mc\d+|power|subsystem|uevent)$")
_DMI_ECC_RE = re.compile(r"^\s*Error Correction Type:\s*(.+?)\s*$", re.M)
_LSBLK_HEAD_RE = re.compile(r"^NAME\s+(?=.*\bSIZE\b)(?=.*\bTYPE\b).*$", re.M)
_SMI_Q_RE = re.compile(r"=+\s*NVSMI LOG\s*=+|^\s*Product Name\s*:", re.M)
_LNK_RE = re.compile(r"^\s*Lnk(Cap|Sta):", re.M)
_TOPO_RE = re.compile(r"^\s*GPU0\b.*\bCPU Affinity\b|^\s+GPU0(\s+GPU\d+)*\s", re.M)
# the matrix's own header ("GPU0 ... CPU Affinity"): enough without the legend, which a paste often leaves out
# (NVIDIA/nccl#1617, the GB200 matrices of NVIDIA/k8s-test-infra#371 and OpenNebula's Grace guide)
_TOPO_HEAD_RE = re.compile(r"^\s+GPU0\b.*\bCPU Affinity\b", re.M)
_SIZE_RE = re.compile(r"^\s*([\d.,]+)\s*([BKMGTPE]?)i?B?\s*$", re.I)


def _command_and_body(text):
    """``(command, output)``: the ``$ command`` line dlbox-collect writes above an output, and the output under it."""
    text = (text or "").replace("\r\n", "\n")
    first, _sep, rest = text.lstrip("\n").partition("\n")
    return (first[2:].strip(), rest) if re.match(r"^\$ \S", first) else ("", text)


def _body(text):
    """The output without the ``$ command`` line dlbox-collect writes above it (and a shell prompt's echo)."""
    return _command_and_body(text)[1]


def _is_edac_listing(command, body):
    """``ls /sys/devices/system/edac/mc``: by its command line, by a path in an error, or by a body that is only the
    folder's entries (``mc0``, ``mc1``, ``power``, ``subsystem``, ``uevent``: FlorianHeigl/nagios#1's ``ls -l``)."""
    if _EDAC_HEAD in command or _EDAC_HEAD in body:
        return True
    names = body.split()
    return bool(names) and any(_MC_RE.match(n) for n in names) and all(_EDAC_ENTRY_RE.match(n) for n in names)


def recognize(text):
    """The kinds of output (``KINDS``) one text holds; a capture may hold several (``lspci -nn; lspci -vv``).

    ``text`` is the capture as written, with dlbox-collect's ``$ command`` line: some outputs are told only by it
    (an ``ls`` of the EDAC folder prints bare names).
    """
    command, text = _command_and_body(text)
    found = []
    head = text.lstrip()[:4096]
    if "<nvidia_smi_log" in head or (head.startswith("<?xml") and "nvidia_smi" in head):
        return ["nvidia-smi-xml"]
    if head.startswith("{") and '"blockdevices"' in head:
        return ["lsblk"]
    if len(_LSCPU_RE.findall(text)) >= 2:
        found.append("lscpu")
    if _CPUINFO_RE.search(text) and "model name" in text:
        found.append("cpuinfo")
    if hf.l3_kb_from_sysfs(text) is not None:
        found.append("cpu-l3-sysfs")
    if _MEMINFO_RE.search(text):
        found.append("meminfo")
    if _is_edac_listing(command, text):
        found.append("edac")
    if _DMI_ECC_RE.search(text):
        found.append("dmidecode-memory")
    if _LSBLK_HEAD_RE.search(text):
        found.append("lsblk")
    if _SMI_Q_RE.search(text) and "GPU" in text:
        found.append("nvidia-smi-q")
    if _LNK_RE.search(text):
        found.append("lspci-vv")
    if hf.parse_lspci_nn(text):
        found.append("lspci-nn")
    if _TOPO_HEAD_RE.search(text) or (_TOPO_RE.search(text) and "Legend" in text):
        found.append("nvidia-smi-topo")
    if hf.parse_nv_tegra_release_line(text):
        found.append("nv_tegra_release")
    return found


# ------------------------------------------------------------------------------------------------
# lsblk
# ------------------------------------------------------------------------------------------------

def _bytes(value):
    """lsblk's SIZE: bytes (``-b``, a number) or a binary-unit text (``477G``, ``931.5G``, ``1,8T``) -> bytes."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return int(value)
    match = _SIZE_RE.match(str(value or ""))
    if not match:
        return None
    number = float(match.group(1).replace(",", "."))
    return int(number * 1024 ** "BKMGTPE".index(match.group(2).upper() or "B"))


def _rota(value):
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value).strip() if str(value).strip() in ("0", "1") else None


def _walk_json(nodes, parent, out):
    for node in nodes or []:
        mounts = node.get("mountpoints") or ([node.get("mountpoint")] if node.get("mountpoint") else [])
        out.append({"name": node.get("kname") or node.get("name"), "majmin": node.get("maj:min"),
                    "type": node.get("type"), "size": _bytes(node.get("size")), "rota": _rota(node.get("rota")),
                    "mounts": [m for m in mounts if m], "parent": parent, "model": (node.get("model") or "").strip(),
                    "fstype": node.get("fstype")})
        _walk_json(node.get("children"), out[-1]["name"], out)


def _walk_plain(text):
    """The plain tree (``├─``, ``└─``, ``|-``, ``` `- ```): rows with their parent by indentation; a line holding only
    a path continues the row above's MOUNTPOINTS (util-linux 2.37 and later)."""
    lines = (text or "").splitlines()
    header = next((i for i, line in enumerate(lines) if _LSBLK_HEAD_RE.match(line)), None)
    if header is None:
        return []
    columns = lines[header].split()
    out, stack = [], []
    for line in lines[header + 1:]:
        match = re.match(r"^([\s│├└─|`-]*)(.*)$", line)
        prefix, body = match.group(1), match.group(2)
        tokens = body.split()
        if not tokens:
            continue
        if len(tokens) == 1 and tokens[0].startswith("/") and out:
            out[-1]["mounts"].append(tokens[0])
            continue
        fields = body.split(None, len(columns) - 1)
        values = dict(zip(columns[1:], fields[1:]))
        depth = len(prefix) // 2
        while len(stack) > depth:
            stack.pop()
        mount = (values.get("MOUNTPOINTS") or values.get("MOUNTPOINT") or "").strip()
        row = {"name": fields[0], "majmin": values.get("MAJ:MIN"), "type": values.get("TYPE"),
               "size": _bytes(values.get("SIZE")), "rota": _rota(values.get("ROTA", "")),
               "mounts": [mount] if mount else [], "parent": stack[-1] if stack else None,
               "model": "", "fstype": values.get("FSTYPE")}
        out.append(row)
        stack.append(fields[0])
    return out


def parse_lsblk(text):
    """``lsblk`` (``-J`` with or without ``-b``, or the plain tree) -> ``(disks, blocks, root_dev, zfs_members)``.

    ``disks``: ``[(name, rotational, sectors, model)]`` for ``classify_disk`` (whole disks and md arrays; ``model``
    where the output has a MODEL column); ``blocks``: the ``{name: {"dev", "parent", "slaves"}}`` of ``root_disk``;
    ``root_dev``: the name of the device mounted at ``/``; ``zfs_members``: the disks that hold a ``zfs_member``
    (FSTYPE column), themselves or in a partition.
    """
    text = _body(text)
    rows = []
    if text.lstrip().startswith("{"):
        try:
            _walk_json(json.loads(text).get("blockdevices"), None, rows)
        except (ValueError, AttributeError):
            rows = []
    else:
        rows = _walk_plain(text)
    disks, blocks, root, zfs = [], {}, None, set()
    seen = set()
    for row in rows:
        kind = str(row["type"] or "")
        name = row["name"]
        if kind == "disk" or kind.startswith("raid"):
            if name not in seen and row["size"]:
                disks.append((name, row["rota"] or "", str(row["size"] // 512), row.get("model") or ""))
                seen.add(name)
        if row.get("fstype") == "zfs_member":
            zfs.add(name if kind == "disk" else (row["parent"] or name))
        entry = blocks.setdefault(name, {"dev": row["majmin"], "parent": None, "slaves": []})
        if kind == "part" and row["parent"]:
            entry["parent"] = row["parent"]
        elif row["parent"] and kind != "disk" and row["parent"] not in entry["slaves"]:
            entry["slaves"].append(row["parent"])  # md, lvm, crypt: the device under it
        if "/" in row["mounts"]:
            root = name
    return disks, blocks, root, sorted(zfs)


# ------------------------------------------------------------------------------------------------
# nvidia-smi -q (text), ECC
# ------------------------------------------------------------------------------------------------

_SMI_GPU_RE = re.compile(r"^GPU\s+([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\s*$")
_KV_RE = re.compile(r"^(\s*)([^:]+?)\s*:\s*(.*)$")


def parse_nvidia_smi_q_gpus(text):
    """GPUs of ``nvidia-smi -q`` text: ``[{"name", "architecture", "pci_bus_id", "pci_device_id", "memory_mb",
    "pcie_link", "gpu_max_gen"}]``; ``gpu_max_gen`` is the ``Device Max`` generation (the GPU's own, newer drivers)."""
    gpus, current, section = [], None, None
    for raw in (text or "").splitlines():
        stripped = raw.strip()
        head = _SMI_GPU_RE.match(stripped)
        if head:
            current = {"name": None, "architecture": None, "pci_bus_id": hf.normalize_pci_bus_id(head.group(1)),
                       "pci_device_id": None, "memory_mb": None, "gpu_max_gen": None, "source": "nvidia-smi-q"}
            gpus.append(current)
            section = None
            continue
        if current is None:
            continue
        if stripped in ("FB Memory Usage", "PCIe Generation", "Link Width", "BAR1 Memory Usage"):
            section = stripped
            continue
        match = _KV_RE.match(raw)
        if not match:
            section = None if stripped else section
            continue
        key, value = match.group(2).strip(), match.group(3).strip()
        if key == "Product Name":
            current["name"] = value
        elif key == "Product Architecture":
            current["architecture"] = value
        elif key == "Device Id" and section is None:
            current["pci_device_id"] = hf.pci_ids_from_nvsmi(value)[0]
        elif section == "FB Memory Usage" and key == "Total":
            current["memory_mb"] = hf._mib(value)  # pylint: disable=protected-access
        elif section == "PCIe Generation" and key == "Device Max":
            current["gpu_max_gen"] = hf._to_int(value)  # pylint: disable=protected-access
    links = {link["pci_bus_id"]: link for link in hf.parse_nvidia_smi_q_pcie(text)}
    for gpu in gpus:
        link = links.get(gpu["pci_bus_id"])
        keys = ("gen_max", "gen_current", "width_max", "width_current", "source")
        gpu["pcie_link"] = {k: link[k] for k in keys} if link else None
    return gpus


def edac_from_capture(text):
    """``(edac_mc_exists, entries)`` from ``ls /sys/devices/system/edac/mc`` as dlbox-collect writes it (its
    ``$ ls ...`` line, then one name a line), or a bare paste of the names; None when the text is no such listing.

    ``$ ls /sys/devices/system/edac/mc`` / ``mc0`` / ``mc1`` / ``power`` -> ``(True, ["mc0", "mc1"])``;
    ``ls: cannot access '/sys/devices/system/edac/mc': No such file or directory`` -> ``(False, [])``.
    """
    command, body = _command_and_body(text)
    if not _is_edac_listing(command, body):
        return None
    if re.search(r"No such file or directory|cannot access", body):
        return False, []
    return True, [name for name in body.split() if _MC_RE.match(name)]


def _dmidecode_ecc(text):
    kinds = [v.lower() for v in _DMI_ECC_RE.findall(text or "")]
    if not kinds:
        return None
    return any("ecc" in k and "none" not in k for k in kinds)


# ------------------------------------------------------------------------------------------------
# putting it together
# ------------------------------------------------------------------------------------------------

def host_from_captures(captures):
    """The ``dlbox_host`` facts of one machine from ``[(name, text)]`` captures (see the module docstring).

    Adds ``captured`` (kind -> capture names) so a report can say what the judgement rests on.
    """
    raw, captured = {}, {}
    smi_q, lnk_texts, ecc_dmi = [], [], None
    for name, written in captures or []:
        text = _body(written)
        for kind in recognize(written):
            captured.setdefault(kind, []).append(name)
            if kind == "lscpu":
                raw["lscpu"] = text
            elif kind == "cpuinfo":
                raw["cpuinfo"] = text
            elif kind == "cpu-l3-sysfs":
                raw["l3_sysfs"] = text
            elif kind == "meminfo":
                raw["meminfo"] = text
            elif kind == "edac":
                found = edac_from_capture(written)
                if found:
                    raw["edac_mc_exists"], raw["edac_mc_entries"] = found
            elif kind == "dmidecode-memory":
                ecc_dmi = _dmidecode_ecc(text)
            elif kind == "lsblk":
                raw["disks"], raw["blocks"], raw["root_dev"], raw["zfs_members"] = parse_lsblk(text)
            elif kind == "nvidia-smi-xml":
                raw["nvidia_smi_xml"] = text
            elif kind == "nvidia-smi-q":
                smi_q.extend(parse_nvidia_smi_q_gpus(text))
            elif kind == "lspci-vv":
                lnk_texts.append(text)
            elif kind == "lspci-nn":
                raw["lspci"] = (raw.get("lspci") or "") + text + "\n"
            elif kind == "nvidia-smi-topo":
                raw["nvidia_smi_topo"] = text
            elif kind == "nv_tegra_release":
                raw["nv_tegra_release"] = text
    links = [link for text in lnk_texts for link in hf.parse_lspci_links(text)
             if link["nvidia"] or link["pci_bus_id"] is None]
    raw["pci_links"] = {link["pci_bus_id"]: link for link in links if link["pci_bus_id"]}
    facts = hf.build_host_facts(raw)
    if smi_q and not raw.get("nvidia_smi_xml"):
        pci_gpus = hf.parse_lspci_nn(raw.get("lspci")) if raw.get("lspci") else []
        gpus = hf.merge_gpus([{k: v for k, v in g.items() if k != "gpu_max_gen"} for g in smi_q],
                             [d for d in pci_gpus if d["kind"] == "gpu"])
        by_bus = {g["pci_bus_id"]: g for g in smi_q}
        for gpu in gpus:
            own = by_bus.get(gpu.get("pci_bus_id")) or {}
            cap = hf.pcie_capability(gpu.get("pcie_link"), own.get("gpu_max_gen"), raw["pci_links"].get(gpu.get("pci_bus_id")))
            if cap:
                gpu["pcie_cap"] = cap
        facts["gpus"] = gpus
        facts["driver"]["present"] = True
    unplaced = [link for link in links if link["pci_bus_id"] is None]
    visible = [g for g in facts["gpus"] if g.get("driver_visible", True)]
    if len(unplaced) == 1 and len(visible) == 1 and not raw["pci_links"]:
        # grepped LnkCap/LnkSta lines without the device header: one GPU, one link
        gpu = visible[0]
        cap = hf.pcie_capability(gpu.get("pcie_link"), (gpu.get("pcie_cap") or {}).get("gen"), unplaced[0])
        if cap:
            gpu["pcie_cap"] = cap
    if facts["memory"]["ecc"] is None and ecc_dmi is not None:
        facts["memory"]["ecc"] = ecc_dmi
    facts["captured"] = captured
    return facts
