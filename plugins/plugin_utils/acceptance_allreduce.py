# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The all-reduce of an acceptance run judged against the floor of the GPUs' topology (controller only, pure).

``dlbox-acceptance`` measures nccl-tests' bus bandwidth (``allreduce_busbw_gb_s``) and carries ``nvidia-smi topo
-m`` as printed (``topology``) and each GPU's PCIe maxima (``gpus[].pcie``: gpumax, sysfs width_gpumax) and device id. ``judge`` picks the topology (every
GPU pair on NVLink, else PCIe), the floor from ``data/acceptance.yml`` ``allreduce_floors`` and says pass or fail
with the arithmetic; ``apply`` puts that row into the report of ``fitness.judge_acceptance`` in place of its
"measured, no reference" row.

Example: 2 GPUs whose only pair reads ``NV4`` in topo -m and a busbw of 40 GB/s pass (floor 4 x 7.0 = 28 GB/s);
8 GPUs on PCIe Gen4 x16 with a busbw of 3 GB/s fail (floor 0.15 x 31.5 = 4.7 GB/s).
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from ansible_collections.dlbox.stack.plugins.module_utils._gpu_facts import parse_nvidia_smi_topo
from ansible_collections.dlbox.stack.plugins.plugin_utils import fitness

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "data" / "acceptance.yml"
LABEL = "all-reduce bus bandwidth"


class FloorsError(ValueError):
    """data/acceptance.yml's allreduce_floors are not what they should be."""


def load_data(path=None):
    """data/acceptance.yml (or another copy), its floors checked."""
    try:
        with open(path or DEFAULT_DATA, encoding="utf-8") as handle:
            data = yaml.safe_load(handle)
    except (OSError, yaml.YAMLError) as exc:
        raise FloorsError("the acceptance reference data (%s) cannot be read: %s" % (path or DEFAULT_DATA, exc)) from exc
    check_floors(data if isinstance(data, dict) else {})
    return data


def check_floors(data):
    """Raise FloorsError naming the key at fault; return the floors when well formed."""
    floors = (data or {}).get("allreduce_floors")
    if not isinstance(floors, dict):
        raise FloorsError("data/acceptance.yml: allreduce_floors is missing")
    for key, field in (("nvlink", "gb_s_per_link"), ("pcie", "share_of_link")):
        entry = floors.get(key)
        if not isinstance(entry, dict) or not str(entry.get("source") or "").strip():
            raise FloorsError("data/acceptance.yml: allreduce_floors.%s needs {%s, source}" % (key, field))
        value = entry.get(field)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise FloorsError("data/acceptance.yml: allreduce_floors.%s.%s must be a positive number, got %r"
                              % (key, field, value))
    return floors


def topology(text):
    """``nvidia-smi topo -m`` -> ``{"kind": "nvlink"|"pcie", "nvlinks": fewest NV# of a pair, "pair": (a, b, cell)}``
    for the pair that bounds a ring over every GPU (the fewest NVLinks, or the first pair off NVLink); None when
    the text holds no matrix of two GPUs or more."""
    try:
        parsed = parse_nvidia_smi_topo(text or "")
    except ValueError:
        return None
    links = parsed["links"]
    if len(parsed["gpus"]) < 2 or not links:
        return None
    off = [link for link in links if not link["nvlink"]]
    if off:
        return {"kind": "pcie", "nvlinks": None, "pair": (off[0]["a"], off[0]["b"], off[0]["type"])}
    narrow = min(links, key=lambda link: link["nvlinks"])
    return {"kind": "nvlink", "nvlinks": narrow["nvlinks"], "pair": (narrow["a"], narrow["b"], narrow["type"])}


def own_links(measured, data):
    """``[(gen, width, where from)]``: each GPU's own PCIe link. Generation: nvidia-smi's pcie.link.gen.gpumax, else the
    GPU's reference (data/acceptance.yml by PCI device id); width: sysfs max_link_width (``width_gpumax``, its
    LnkCap), else the reference's. Never pcie.link.gen.max / width.max: NVML gives the lower of GPU and slot there,
    and a floor from a card's x4 slot would let that very card pass."""
    out = []
    for gpu in measured.get("gpus") or []:
        pcie = gpu.get("pcie") or {}
        entry, _why = fitness.reference_for(gpu, data) if data.get("gpus") else (None, None)
        own = (entry or {}).get("pcie") or {}
        gen = pcie.get("gen_gpumax") or own.get("gen")
        width = pcie.get("width_gpumax") or own.get("width")
        where = "GPU %s: %s" % (gpu.get("index"), (entry or {}).get("name") or "sysfs/gpumax")
        out.append((gen, width, where))
    return out


def narrowest_link(measured, lanes, data=None):
    """(gen, width, GB/s one direction) of the narrowest GPU's OWN link (see ``own_links``); None when a GPU's own
    link is unknown."""
    best = None
    links = own_links(measured, data or {})
    if not links:
        return None
    for gen, width, _where in links:
        per_lane = lanes.get(gen) if gen is not None else None
        per_lane = per_lane if per_lane is not None else lanes.get(str(gen))
        if not per_lane or not width:
            return None
        if best is None or per_lane * width < best[2]:
            best = (gen, width, per_lane * width)
    return best


# A data row of nccl-tests' all_reduce_perf: size, count, type, redop, [root (since nccl-tests 2.10)], then out-of-place
# time algbw busbw #wrong|error and in-place time algbw busbw #wrong|error (NVIDIA/nccl-tests doc/PERFORMANCE.md)
_NCCL_TESTS_ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+\w+\s+\w+\s+(?:-?\d+\s+)?"
                             r"([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+\S+\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+\S+\s*$")


def nccl_tests_busbw(text):
    """The bus bandwidth of an ``all_reduce_perf`` run as printed (a run of nccl-tests by hand on the same host): the
    best of out-of-place and in-place busbw at its largest size (where the bandwidth has settled), with the size and
    the ranks it names (``#  Rank N ...`` lines). None when the text holds no data row.
    ``{"bytes": B, "busbw_gb_s": X, "ranks": N or None}``."""
    rows = []
    for line in (text or "").splitlines():
        found = _NCCL_TESTS_ROW.match(line)
        if found:
            rows.append((int(found.group(1)), max(float(found.group(5)), float(found.group(8)))))
    if not rows:
        return None
    size, busbw = max(rows)
    ranks = len(re.findall(r"^#\s+Rank\s+\d+", text or "", re.MULTILINE)) or None
    return {"bytes": size, "busbw_gb_s": busbw, "ranks": ranks}


def judge(measured, data):
    """The acceptance row of the all-reduce: ``{id, label, status, value, reference, unit, reason, source}``."""
    floors = check_floors(data)
    figures = measured.get("figures") or {}
    value = figures.get("allreduce_busbw_gb_s")
    row = {"id": "allreduce", "label": LABEL, "status": "skipped", "value": value, "reference": None, "unit": "GB/s",
           "reason": None, "source": None}
    if value is None:
        row["reason"] = (measured.get("errors") or {}).get("allreduce") or (measured.get("skipped") or {}).get("allreduce")
        if (measured.get("errors") or {}).get("allreduce"):
            row["status"] = "fail"
        return row
    ranks = figures.get("allreduce_ranks")
    how = "%s ranks over %s, busbw = algbw x 2(n-1)/n" % (ranks, figures.get("allreduce_backend") or "?")
    if figures.get("allreduce_backend") == "gloo":
        row.update(status="finding", reason="%s: measured on the CPU (gloo), no GPU floor applies" % how)
        return row
    topo = topology(measured.get("topology"))
    if topo is None:
        row.update(status="finding", reason="%s; the GPUs' topology is unknown (nvidia-smi topo -m: %s), so no floor"
                   % (how, measured.get("topology_error") or "no matrix"))
        return row
    if topo["kind"] == "nvlink":
        per_link = floors["nvlink"]["gb_s_per_link"]
        floor = round(per_link * topo["nvlinks"], 1)
        basis = "every GPU pair on NVLink, fewest %s (%s-%s): %d x %s GB/s per link" % (
            topo["pair"][2], topo["pair"][0], topo["pair"][1], topo["nvlinks"], per_link)
        source = floors["nvlink"]["source"]
    else:
        link = narrowest_link(measured, (data.get("pcie_gb_s_per_lane") or {}).get("value") or {}, data)
        if link is None:
            row.update(status="finding", reason="%s; %s-%s over %s (PCIe), but a GPU's own PCIe link is unknown (no "
                       "gpumax or sysfs width, no reference), so no floor" % ((how,) + topo["pair"]))
            return row
        share = floors["pcie"]["share_of_link"]
        floor = round(share * link[2], 1)
        basis = "%s-%s over %s (PCIe): %s of the cards' own Gen%s x%s one way (%.1f GB/s)" % (
            topo["pair"][0], topo["pair"][1], topo["pair"][2], share, link[0], link[1], link[2])
        source = floors["pcie"]["source"]
    row.update(status="pass" if value >= floor else "fail", reference=floor, reason="%s; floor: %s" % (how, basis),
               source=source)
    return row


def apply(report, measured, data):
    """``report`` (of fitness.judge_acceptance) with its all-reduce row judged here; failed and ok follow."""
    row = judge(measured, data)
    results = [r for r in report.get("results") or [] if r.get("id") != "allreduce"] + [row]
    failed = [r["id"] for r in results if r.get("status") == "fail"]
    return dict(report, results=results, failed=failed, ok=not failed)
