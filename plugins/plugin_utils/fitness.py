# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fitness report and acceptance judgement (controller only, pure).

``judge_host`` measures one host's ``dlbox_host`` facts (``dlbox.stack.gpu_facts``) against a profile of
``data/fitness.yml`` and computes advice; ``judge_acceptance`` compares the figures ``dlbox-acceptance``
measured with ``data/acceptance.yml``; ``fleet`` joins both for every host, and ``render_markdown`` /
``render_html`` / ``report_text`` turn them into the report.

Status words: ``ok``; ``problem`` (a threshold is missed: the host is not fit); ``unknown`` (the facts do not
tell, e.g. ECC inside a container); ``finding`` (noted, not a failure: "no GPU" in a container). Acceptance
checks: ``pass``, ``fail``, ``skipped`` (with the reason) and ``finding``.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import yaml

from ansible_collections.dlbox.stack.plugins.plugin_utils import gpu_catalog as _gpu_catalog

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_FITNESS = ROOT / "data" / "fitness.yml"
DEFAULT_REFERENCE = ROOT / "data" / "acceptance.yml"
PROFILES = ("workstation", "server", "edge")
# MemTotal (and nvidia-smi's memory.total) stay a little under the nominal size: the kernel's and the firmware's
# reserve. A 32 GB machine shows about 31.3 GiB.
MEMORY_TOLERANCE = 0.94
MIB = 1048576


class FitnessError(ValueError):
    """Bad input: a data file, a profile name, an override or facts that are not what they should be."""


# ------------------------------------------------------------------------------------------------
# data
# ------------------------------------------------------------------------------------------------

# libyaml's parser where PyYAML has it (as compat_data reads data/compat.yml): the same safe constructor, about ten
# times faster on the acceptance reference and the 230 KB GPU catalog.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _load_yaml(path, what):
    try:
        with open(path, encoding="utf-8") as handle:
            data = yaml.load(handle, Loader=_LOADER)  # noqa: S506 - a SafeLoader
    except (OSError, yaml.YAMLError) as exc:
        raise FitnessError("%s (%s) cannot be read: %s" % (what, path, exc)) from exc
    if not isinstance(data, dict):
        raise FitnessError("%s (%s) must be a mapping" % (what, path))
    return data


def check_fitness_data(data):
    """Raise FitnessError naming the entry at fault; return ``data`` when well formed."""
    profiles = data.get("profiles")
    if not isinstance(profiles, dict) or set(profiles) != set(PROFILES):
        raise FitnessError("data/fitness.yml: profiles must be exactly %s" % ", ".join(PROFILES))
    for name, profile in profiles.items():
        for key, entry in (profile.get("thresholds") or {}).items():
            if not isinstance(entry, dict) or "value" not in entry or not str(entry.get("source") or "").strip():
                raise FitnessError("data/fitness.yml: profiles.%s.thresholds.%s needs {value, source}" % (name, key))
        for model in profile.get("models") or []:
            if model.get("mode") not in (data.get("bytes_per_param") or {}):
                raise FitnessError("data/fitness.yml: profiles.%s.models: mode %r is not in bytes_per_param"
                                   % (name, model.get("mode")))
            extra = model.get("activations_gb")
            if extra is not None and (isinstance(extra, bool) or not isinstance(extra, (int, float)) or extra < 0
                                      or not str(model.get("activations") or "").strip()):
                raise FitnessError("data/fitness.yml: profiles.%s.models %r: activations_gb must be a number of GB with "
                                   "its arithmetic in `activations`" % (name, model.get("name")))
    no_nvlink = data.get("no_nvlink")
    if no_nvlink is not None and (not isinstance(no_nvlink, dict) or not isinstance(no_nvlink.get("ids"), list)
                                  or not str(no_nvlink.get("source") or "").strip()):
        raise FitnessError("data/fitness.yml: no_nvlink needs {ids: [PCI device ids], source}")
    for entry in data.get("corrected") or []:
        if not all(str(entry.get(k) or "").strip() for k in ("guide", "right", "source")):
            raise FitnessError("data/fitness.yml: every corrected entry needs guide, right and source")
    return data


REFERENCE_DTYPES = ("bf16", "fp16", "tf32", "fp32", "fp8")


def check_reference_data(data):
    """Shape check of data/acceptance.yml: every entry names its PCI device ids, figures and source; no id twice."""
    gpus = data.get("gpus")
    if not isinstance(gpus, list) or not gpus:
        raise FitnessError("data/acceptance.yml: gpus must be a non-empty list")
    seen = {}
    for index, entry in enumerate(gpus):
        if not isinstance(entry, dict) or not all(entry.get(k) for k in ("ids", "name", "tflops", "mem_gb_s", "source")):
            raise FitnessError("data/acceptance.yml: gpus[%d] needs ids, name, tflops, mem_gb_s, source" % index)
        for dev in entry["ids"]:
            key = _gpu_catalog.pci_id(dev)
            if key is None:
                raise FitnessError("data/acceptance.yml: gpus[%d] (%s): %r is not a PCI device id (e.g. \"2330\")"
                                   % (index, entry["name"], dev))
            if key in seen:
                raise FitnessError("data/acceptance.yml: device id %s is in both %s and %s" % (key, seen[key], entry["name"]))
            seen[key] = entry["name"]
        unknown = set(entry["tflops"]) - set(REFERENCE_DTYPES)
        if unknown:
            raise FitnessError("data/acceptance.yml: gpus[%d] (%s): tflops keys must be among %s, got %s"
                               % (index, entry["name"], ", ".join(REFERENCE_DTYPES), ", ".join(sorted(unknown))))
    for key in ("pcie_gb_s_per_lane", "disk_seq_read_mb_s"):
        if not isinstance(data.get(key), dict) or not data[key].get("source"):
            raise FitnessError("data/acceptance.yml: %s needs {value, source}" % key)
    for key in ("h2d_share_of_link", "d2d_share_of_memory"):
        entry = (data.get("achievable") or {}).get(key)
        value = (entry or {}).get("value") if isinstance(entry, dict) else None
        if (not isinstance(entry, dict) or not str(entry.get("source") or "").strip() or isinstance(value, bool)
                or not isinstance(value, (int, float)) or not 0 < value <= 1):
            raise FitnessError("data/acceptance.yml: achievable.%s needs {value: a share in (0, 1], source}" % key)
    classes = ((data.get("achievable") or {}).get("matmul_share_of_peak") or {}).get("classes")
    if not isinstance(classes, dict) or not classes:
        raise FitnessError("data/acceptance.yml: achievable.matmul_share_of_peak.classes must map each GPU class to "
                           "{share: {dtype: share}, source}")
    for name, row in classes.items():
        share = row.get("share") if isinstance(row, dict) else None
        if not isinstance(share, dict) or not str(row.get("source") or "").strip():
            raise FitnessError("data/acceptance.yml: matmul class %s needs share and source" % name)
        for dtype, value in share.items():
            if dtype not in REFERENCE_DTYPES or not (value is None or (
                    not isinstance(value, bool) and isinstance(value, (int, float)) and 0 < value <= 1.5)):
                raise FitnessError("data/acceptance.yml: matmul class %s: %s: %r is not a share (a number in (0, 1.5] "
                                   "or null) of a dtype among %s" % (name, dtype, value, ", ".join(REFERENCE_DTYPES)))
    for index, entry in enumerate(gpus):
        if entry.get("class") not in classes:
            raise FitnessError("data/acceptance.yml: gpus[%d] (%s): class %r is not in achievable.matmul_share_of_peak"
                               ".classes (%s)" % (index, entry["name"], entry.get("class"), ", ".join(sorted(classes))))
        measured = entry.get("achievable_tflops")
        if measured is not None and (not isinstance(measured, dict) or set(measured) - set(REFERENCE_DTYPES)
                                     or not str(entry.get("achievable_source") or "").strip()):
            raise FitnessError("data/acceptance.yml: gpus[%d] (%s): achievable_tflops needs dtype keys among %s and an "
                               "achievable_source" % (index, entry["name"], ", ".join(REFERENCE_DTYPES)))
    return data


def matmul_target(ref, dtype, reference):
    """``(target TFLOPS, how, source)``: what a healthy GPU of entry ``ref`` reaches in a dense ``dtype`` matmul, or
    ``(None, why not, source)``. The GPU's own measured ``achievable_tflops`` where its entry has them; else the
    datasheet dense peak times its class's share (data/acceptance.yml achievable.matmul_share_of_peak)."""
    measured = (ref.get("achievable_tflops") or {}).get(dtype)
    if measured is not None:
        return float(measured), "measured on healthy %s cards" % ref["name"], ref["achievable_source"]
    classes = reference["achievable"]["matmul_share_of_peak"]["classes"]
    row = classes[ref["class"]]
    peak = ref["tflops"].get(dtype)
    if peak is None:
        return None, "no dense %s figure for %s in data/acceptance.yml (%s)" % (dtype, ref["name"], ref["source"]), None
    share = row["share"].get(dtype)
    if share is None:
        why = ("no achievable %s share measured for %s's class %s (data/acceptance.yml achievable.matmul_share_of_peak); "
               "its dense peak is %s TFLOPS" % (dtype, ref["name"], ref["class"], peak))
        return None, why, row["source"]
    return (round(peak * share, 1), "%s of the %s TFLOPS dense peak (class %s)" % (share, peak, ref["class"]),
            "%s; %s" % (ref["source"], row["source"]))


def load_fitness_data(path=None):
    return check_fitness_data(_load_yaml(path or DEFAULT_FITNESS, "the fitness data"))


def load_reference_data(path=None):
    return check_reference_data(_load_yaml(path or DEFAULT_REFERENCE, "the acceptance reference data"))


def thresholds(data, profile, overrides=None):
    """The profile's thresholds as ``{key: {"value", "source"}}`` with ``overrides`` ({key: value}) applied."""
    if profile not in PROFILES:
        raise FitnessError("dlbox_fitness_profile must be one of %s, got %r" % (", ".join(PROFILES), profile))
    result = {key: dict(entry) for key, entry in data["profiles"][profile]["thresholds"].items()}
    overrides = overrides or {}
    if not isinstance(overrides, dict):
        raise FitnessError("dlbox_fitness_overrides must be a mapping of threshold: value, got %r" % (overrides,))
    for key, value in overrides.items():
        if key not in result:
            raise FitnessError("dlbox_fitness_overrides: %r is not a threshold of the %s profile (known: %s)"
                               % (key, profile, ", ".join(sorted(result))))
        if type(value) is not type(result[key]["value"]) and not (
                isinstance(value, (int, float)) and isinstance(result[key]["value"], (int, float))
                and not isinstance(value, bool)):
            raise FitnessError("dlbox_fitness_overrides.%s must be like %r, got %r" % (key, result[key]["value"], value))
        result[key] = {"value": value, "source": "override (dlbox_fitness_overrides)"}
    return result


# ------------------------------------------------------------------------------------------------
# one host
# ------------------------------------------------------------------------------------------------

def _cc_tuple(text):
    match = re.match(r"^\s*(\d+)\.(\d+)", str(text or ""))
    return (int(match.group(1)), int(match.group(2))) if match else None


def _version_tuple(text):
    return tuple(int(p) for p in re.findall(r"\d+", str(text or "")))


def _check(checks, cid, label, value, expected, status, source, note=None):
    checks.append({"id": cid, "label": label, "value": value, "expected": expected, "status": status,
                   "source": source, "note": note})


RAID_KINDS = ("md", "hwraid")


def _advice_only(data, profile, key):
    """A threshold the guides give as a recommendation: below it is a finding (advice), not a problem."""
    return bool(((data["profiles"][profile].get("thresholds") or {}).get(key) or {}).get("advice"))


def _without_nvlink(gpus, data):
    """The GPUs (by PCI device id) that have no NVLink at all (data/fitness.yml no_nvlink)."""
    ids = {str(i).lower() for i in ((data.get("no_nvlink") or {}).get("ids") or [])}
    return [g for g in gpus if str(g.get("pci_device_id") or "").lower() in ids]


def _data_disk(disks, name=None):
    if name:
        for disk in disks:
            if disk.get("name") == name:
                return disk
        return None
    arrays = [d for d in disks if d.get("kind") in RAID_KINDS]
    pool = arrays or disks
    return max(pool, key=lambda d: (d.get("size_gb") or 0, d.get("name") or "")) if pool else None


def gpu_cc(gpu, data):
    """``(cc text, where from)`` of one GPU: nvidia-smi's figure, else the architecture's."""
    if gpu.get("compute_capability"):
        return str(gpu["compute_capability"]), "nvidia-smi"
    by_arch = data["advice"]["cc_by_architecture"]["value"]
    arch = gpu.get("architecture")
    if arch in by_arch:
        return by_arch[arch], "architecture %s" % arch
    return None, None


def model_need(model, data, gpu_count, reserve, memories=None):
    """GPU memory one model line needs per GPU, with its arithmetic in words.

    ``params_b`` billion parameters x bytes per parameter of its mode (16 for mixed-precision Adam: ZeRO, section 3.1),
    divided across ``gpu_count`` GPUs when ``sharded`` (FSDP FULL_SHARD / ZeRO-3 shard weights, gradients and optimizer
    states alike), plus the per-GPU ``activations_gb`` the line states (not sharded), plus the CUDA context.
    """
    per_param = data["bytes_per_param"][model["mode"]]["value"]
    states = model["params_b"] * per_param
    steps = ["%s B params x %s B/param (%s) = %s GB" % (model["params_b"], per_param, model["mode"], _num(states))]
    need = states
    if model.get("sharded") and gpu_count:
        need = states / gpu_count
        steps.append("/ %d GPU(s), sharded = %s GB" % (gpu_count, _num(need)))
    elif model.get("sharded"):
        steps.append("sharded over the host's GPUs (none here)")
    activations = model.get("activations_gb") or 0
    if activations:
        need += activations
        steps.append("+ %s GB activations per GPU" % _num(activations))
    need += reserve
    steps.append("+ %s GB CUDA context = %s GB per GPU" % (_num(reserve), _num(need)))
    entry = {"name": model["name"], "need_gb": round(need, 1), "gpu_gb": None, "headroom_gb": None,
             "headroom_pct": None, "fits": None, "arithmetic": ", ".join(steps)}
    if memories:
        gpu_gb = min(memories) / 1024.0
        room = gpu_gb - need
        entry.update(gpu_gb=round(gpu_gb, 1), headroom_gb=round(room, 1),
                     headroom_pct=int(round(100.0 * room / gpu_gb)), fits=room > 0)
    return entry


def _num(value):
    return ("%.1f" % value).rstrip("0").rstrip(".")


def advice(facts, data, profile):
    """DataLoader workers, pin_memory, bf16/FP8 and the batch headroom for the profile's models."""
    gpus = [g for g in facts.get("gpus") or [] if g.get("driver_visible", True)]
    cpu = facts.get("cpu") or {}
    cores = cpu.get("cores") or cpu.get("threads") or 1
    limit = data["advice"]["num_workers_max"]["value"]
    per_gpu = cores // len(gpus) if gpus else cores
    workers = max(1, min(per_gpu - 1, limit))
    out = {
        "num_workers": workers,
        "num_workers_why": "%d cores / %d GPU(s) = %d per GPU, one left for the training process, at most %d"
                           % (cores, max(len(gpus), 1), per_gpu, limit) if gpus else
                           "%d cores, no GPU: one left for the main process, at most %d" % (cores, limit),
        "pin_memory": bool(gpus),
        "pin_memory_why": "page-locked host memory makes host-to-GPU copies asynchronous" if gpus else
                          "no GPU: pinning only costs memory",
        "gpus": [],
        "models": [],
    }
    bf16_min = _cc_tuple(data["advice"]["bf16_min_cc"]["value"])
    fp8_min = _cc_tuple(data["advice"]["fp8_min_cc"]["value"])
    for gpu in gpus:
        cc, where = gpu_cc(gpu, data)
        cct = _cc_tuple(cc)
        out["gpus"].append({
            "name": gpu.get("name"), "cc": cc, "cc_from": where,
            "bf16": None if cct is None else cct >= bf16_min,
            "fp8": None if cct is None else cct >= fp8_min,
        })
    memories = [g.get("memory_mb") for g in gpus if g.get("memory_mb")]
    reserve = data["context_reserve_gb"]["value"]
    for model in data["profiles"][profile].get("models") or []:
        out["models"].append(model_need(model, data, len(memories), reserve, memories))
    return out


def jetson_family(model, families):
    """The first of ``families`` named in the device-tree model: ``NVIDIA Jetson AGX Orin Developer Kit`` -> ``orin``."""
    words = re.findall(r"[a-z0-9]+", str(model or "").lower())
    return next((family for family in families if family in words), None)


def _jetson_checks(checks, jetson, limits, src):
    """The edge profile: the module (a Jetson of a family the profile takes), its L4T and JetPack, the power mode."""
    model = (jetson or {}).get("model")
    families = (limits.get("jetson_families") or {}).get("value")
    family = jetson_family(model, families or [])
    if not jetson:
        status, note = "problem", None
    elif not families:
        status, note = "ok", None
    elif not model:
        status, note = "unknown", "no device-tree model to tell the module family by"
    else:
        status, note = ("ok" if family else "problem"), None
    _check(checks, "jetson", "Jetson module", model or ((jetson or {}).get("l4t") and "Jetson") or "none",
           "a Jetson" + (" (%s)" % " or ".join(families) if families else ""), status,
           src("jetson_families") if families and jetson else src("jetson"), note)
    if "l4t_min" in limits:
        want = limits["l4t_min"]["value"]
        l4t = (jetson or {}).get("l4t")
        _check(checks, "l4t", "L4T", l4t, ">= %s" % want,
               "unknown" if not l4t else ("ok" if _version_tuple(l4t) >= _version_tuple(want) else "problem"),
               src("l4t_min"))
    if "jetpack_min" in limits:
        want = limits["jetpack_min"]["value"]
        jetpack = (jetson or {}).get("jetpack")
        _check(checks, "jetpack", "JetPack", jetpack, ">= %s" % want,
               "unknown" if not jetpack else ("ok" if _version_tuple(jetpack) >= _version_tuple(want) else "problem"),
               src("jetpack_min"),
               "the L4T release is not in data/compat.yml's JetPack table" if jetson and jetson.get("l4t") and not jetpack
               else None)
    if "power_mode" in limits and jetson:
        want = limits["power_mode"]["value"]
        mode = jetson.get("power_mode")
        name = (mode or {}).get("name")
        if not mode:
            status, note = "unknown", "neither nvpmodel's /var/lib/nvpmodel/status nor /etc/nvpmodel.conf was readable"
        elif not name:
            status, note = "problem", "mode %s is not defined in /etc/nvpmodel.conf" % mode.get("id")
        else:
            status = "ok" if not want or name == want else "problem"
            note = None if mode.get("set") else "nvpmodel never set a mode: the default of /etc/nvpmodel.conf is in force"
        _check(checks, "power_mode", "power mode (nvpmodel)",
               None if not mode else "%s (id %s)" % (name or "?", mode.get("id")),
               want or "a mode of /etc/nvpmodel.conf", status, src("power_mode"), note)


def _system_disk_checks(checks, root, limits, src, virt):
    """The disk that holds ``/``: NVMe (an md array counts when every member is NVMe) and its size."""
    note = None
    if not root:
        note = ("/ is not on a block device here (a container's overlay)" if virt.get("container")
                else "the disk holding / is not known (no /proc/self/mountinfo or lsblk)")
    if "system_disk_nvme" in limits and limits["system_disk_nvme"]["value"]:
        kind = None if not root else root.get("kind")
        if kind == "md":
            nvme = root.get("member_kinds") == ["nvme"]
            value = "%s (md of %s)" % (root["name"], ", ".join(root.get("members") or []) or "?")
        else:
            nvme = kind == "nvme"
            value = None if not root else "%s (%s)" % (root["name"], kind)
        _check(checks, "system_disk_nvme", "system disk (holds /) is NVMe", value, "NVMe",
               "unknown" if not root else ("ok" if nvme else "problem"), src("system_disk_nvme"), note)
    if "system_disk_gb_min" in limits:
        want = limits["system_disk_gb_min"]["value"]
        size = (root or {}).get("size_gb")
        _check(checks, "system_disk_size", "system disk size (GB)", None if not root else "%s %s GB" % (root["name"], size),
               ">= %d" % want, "unknown" if size is None else ("ok" if size >= want else "problem"),
               src("system_disk_gb_min"), note)


def own_link(gpu, reference, catalog=None):
    """``(gen, width, where from)``: the card's own PCIe link where its facts lack it, from its reference entry
    (data/acceptance.yml, by PCI device id); ``(None, None, why not)`` when there is none. Never nvidia-smi's width
    ``Max``: that is the lower of card and slot (NVML nvmlDeviceGetMaxPcieLinkWidth)."""
    if not reference:
        return None, None, "no reference data"
    entry, why = reference_for(gpu, reference, catalog)
    pcie = (entry or {}).get("pcie") or {}
    if not pcie:
        return None, None, why or "no pcie figure for %s in data/acceptance.yml" % entry["name"]
    return pcie.get("gen"), pcie.get("width"), "data/acceptance.yml (%s)" % entry["name"]


def _pcie_checks(checks, gpus, source, reference=None):
    """Each GPU's PCIe link against the GPU's own capability (its LnkCap / Device Max, else its reference entry's
    link), not NVML's maximum."""
    for gpu in gpus:
        cap = dict(gpu.get("pcie_cap") or {})
        filled = []
        if cap and (cap.get("width") is None or cap.get("gen") is None):
            gen, width, where = own_link(gpu, reference)
            for key, value in (("gen", gen), ("width", width)):
                if cap.get(key) is None and value:
                    cap[key] = value
                    filled.append(key)
            filled_note = "the card's own %s from %s" % (" and ".join(filled), where) if filled else None
        else:
            filled_note = None
        name = gpu.get("name") or gpu.get("pci_bus_id") or "GPU"
        label = "PCIe link of %s (%s)" % (name, gpu.get("pci_bus_id") or "?")
        short = [w for w, have, full in (("Gen%s" % cap.get("link_gen"), cap.get("link_gen"), cap.get("gen")),
                                         ("x%s" % cap.get("link_width"), cap.get("link_width"), cap.get("width")))
                 if have and full and have < full]
        value = "Gen%s x%s" % (cap.get("link_gen") or "?", cap.get("link_width") or "?")
        expected = "the card's own Gen%s x%s" % (cap.get("gen") or "?", cap.get("width") or "?")
        if short:
            status, note = "problem", ("slot-limited: %s runs at %s of its %s (the slot, a riser or the BIOS lane "
                                       "split limits it)" % (name, " ".join(short), expected.replace("the card's own ", "")))
        elif not cap or not ((cap.get("gen") and cap.get("link_gen")) or (cap.get("width") and cap.get("link_width"))):
            status, note = "unknown", "no LnkCap/LnkSta (lspci -vv as root, or sysfs) and no nvidia-smi link to compare"
        else:
            status = "ok"
            unsure = [what for what, full, have in (("generation", cap.get("gen"), cap.get("link_gen")),
                                                    ("width", cap.get("width"), cap.get("link_width")))
                      if not (full and have)]
            note = ("%s not compared (the card's own or its link unknown: no LnkCap, no reference)" % " and ".join(unsure)
                    if unsure else None)
        if filled_note:
            note = "%s; %s" % (note, filled_note) if note else filled_note
        _check(checks, "gpu_pcie", label, value, expected, status, source, note)


def judge_host(facts, host, profile, data, overrides=None, data_disk=None, reference=None):
    """The fitness report of one host. ``reference``: data/acceptance.yml (read when not given), for a GPU's own
    PCIe link where its facts lack it."""
    if not isinstance(facts, dict) or "gpus" not in facts or "cpu" not in facts:
        raise FitnessError("judge_host needs the dlbox_host fact of dlbox.stack.gpu_facts, got %s" % type(facts).__name__)
    limits = thresholds(data, profile, overrides)
    checks = []
    findings = []
    gpus = [g for g in facts.get("gpus") or [] if g.get("driver_visible", True)]
    virt = facts.get("virtualization") or {}
    if not gpus:
        findings.append("no GPU visible to the driver%s: GPU checks are left out"
                        % (" (a %s container)" % virt.get("container_type") if virt.get("container") else ""))
    cpu = facts.get("cpu") or {}
    memory = facts.get("memory") or {}
    ram_gb = (memory.get("total_mb") or 0) / 1024.0 if memory.get("total_mb") else None
    disks = facts.get("disks") or []

    def src(key):
        return limits[key]["source"]

    if "cpu_cores_min" in limits:
        want = limits["cpu_cores_min"]["value"]
        have = cpu.get("cores")
        _check(checks, "cpu_cores", "CPU cores", have, ">= %d" % want,
               "unknown" if have is None else ("ok" if have >= want else "problem"), src("cpu_cores_min"))
    if "cpu_threads_min" in limits:
        want = limits["cpu_threads_min"]["value"]
        have = cpu.get("threads")
        _check(checks, "cpu_threads", "CPU threads", have, ">= %d" % want,
               "unknown" if have is None else ("ok" if have >= want else "problem"), src("cpu_threads_min"))
    if "cpu_base_ghz_min" in limits:
        want = limits["cpu_base_ghz_min"]["value"]
        have = cpu.get("base_mhz") / 1000.0 if cpu.get("base_mhz") else None
        short = "finding" if _advice_only(data, profile, "cpu_base_ghz_min") else "problem"
        _check(checks, "cpu_base_clock", "CPU base clock (GHz)", have, ">= %s" % want,
               "unknown" if have is None else ("ok" if have >= want else short), src("cpu_base_ghz_min"),
               "the model name carries no base clock (AMD, Intel Core since 12th gen): see the vendor's page"
               if have is None else
               ("advice, not a requirement (%s)" % data["profiles"][profile]["thresholds"]["cpu_base_ghz_min"]["advice"])
               if have < want and short == "finding" else None)
    if "cpu_l3_mb_min" in limits:
        want = limits["cpu_l3_mb_min"]["value"]
        have = cpu.get("l3_kb") / 1024.0 if cpu.get("l3_kb") else None
        short = "finding" if _advice_only(data, profile, "cpu_l3_mb_min") else "problem"
        _check(checks, "cpu_l3", "L3 cache (MB, all sockets)", None if have is None else round(have, 1), ">= %s" % want,
               "unknown" if have is None else ("ok" if have >= want else short), src("cpu_l3_mb_min"),
               ("advice, not a requirement (%s)" % data["profiles"][profile]["thresholds"]["cpu_l3_mb_min"]["advice"])
               if have is not None and have < want and short == "finding" else
               "no total L3 known: no lscpu, or an lscpu of util-linux <= 2.33 that prints one L3 instance (an AMD CPU "
               "has one per CCX); /sys/devices/system/cpu/cpu*/cache/index3 (dlbox-collect's cpu-l3-sysfs) gives it"
               if have is None else None)
    if "ram_gb_min" in limits:
        want = limits["ram_gb_min"]["value"]
        _check(checks, "ram", "RAM (GiB)", None if ram_gb is None else round(ram_gb, 1), ">= %d" % want,
               "unknown" if ram_gb is None else ("ok" if ram_gb >= want * MEMORY_TOLERANCE else "problem"),
               src("ram_gb_min"))
    if "ram_gb_min_multi_gpu" in limits and len(gpus) >= 2:
        want = limits["ram_gb_min_multi_gpu"]["value"]
        _check(checks, "ram_multi_gpu", "RAM with %d GPUs (GiB)" % len(gpus), None if ram_gb is None else round(ram_gb, 1),
               ">= %d" % want, "unknown" if ram_gb is None else ("ok" if ram_gb >= want * MEMORY_TOLERANCE else "problem"),
               src("ram_gb_min_multi_gpu"))
    if "ram_to_gpu_memory_min" in limits:
        ratio = limits["ram_to_gpu_memory_min"]["value"]
        gpu_gib = sum((g.get("memory_mb") or 0) for g in gpus) / 1024.0
        label = "RAM to the GPUs' memory (GiB)"
        if not gpus or ram_gb is None or not all(g.get("memory_mb") for g in gpus):
            _check(checks, "ram_to_gpu_memory", label, None, ">= %s x the GPUs' memory" % ratio, "unknown",
                   src("ram_to_gpu_memory_min"), "no GPU" if not gpus else "no memory figure (RAM or a GPU's)")
        else:
            want = ratio * gpu_gib
            _check(checks, "ram_to_gpu_memory", label, round(ram_gb, 1),
                   ">= %s x %s = %s" % (ratio, round(gpu_gib, 1), round(want, 1)),
                   "ok" if ram_gb >= want * MEMORY_TOLERANCE else "problem", src("ram_to_gpu_memory_min"))
    if "ecc_memory" in limits and limits["ecc_memory"]["value"]:
        ecc = memory.get("ecc")
        _check(checks, "ecc", "ECC memory (EDAC)", ecc, "true",
               "unknown" if ecc is None else ("ok" if ecc else "problem"), src("ecc_memory"),
               "EDAC not loaded or not visible (VM, container)" if ecc is None else None)
    if "system_disk_nvme" in limits or "system_disk_gb_min" in limits:
        _system_disk_checks(checks, facts.get("root_disk"), limits, src, virt)
    if "gpu_memory_gb_min" in limits:
        want = limits["gpu_memory_gb_min"]["value"]
        if not gpus:
            _check(checks, "gpu_memory", "GPU memory (GB)", None, ">= %d" % want, "finding", src("gpu_memory_gb_min"),
                   "no GPU")
        elif not all(g.get("memory_mb") for g in gpus):
            _check(checks, "gpu_memory", "GPU memory (GB)", None, ">= %d" % want, "unknown", src("gpu_memory_gb_min"),
                   "the driver does not answer (GPUs seen on the PCI bus only)")
        else:
            # GPU memory is sold in decimal GB: a "24 GB" A10 shows 23028 MiB and an L4 23034 MiB in nvidia-smi
            # (modal-labs/modal-client#2797), 24.1 GB, which 0.94 x 24 GiB (22.6 GiB = 23101 MiB) would fail
            have = min(g["memory_mb"] for g in gpus) * MIB / 1e9
            _check(checks, "gpu_memory", "GPU memory (GB, smallest GPU)", round(have, 1), ">= %d" % want,
                   "ok" if have >= want else "problem", src("gpu_memory_gb_min"),
                   "nvidia-smi's %d MiB = %.1f GB (decimal, as the card is sold)" % (min(g["memory_mb"] for g in gpus), have))
    if "gpu_pcie_full_link" in limits and limits["gpu_pcie_full_link"]["value"] and gpus:
        _pcie_checks(checks, gpus, src("gpu_pcie_full_link"), reference if reference is not None else _default_reference())
    if "nvlink_multi_gpu" in limits and limits["nvlink_multi_gpu"]["value"]:
        if len(gpus) < 2:
            _check(checks, "nvlink", "NVLink/NVSwitch between GPUs", None, "on multi-GPU hosts",
                   "finding" if not gpus else "ok", src("nvlink_multi_gpu"),
                   "fewer than two GPUs: nothing to link")
        elif _without_nvlink(gpus, data):
            _check(checks, "nvlink", "NVLink/NVSwitch between GPUs", "PCIe only", "NVLink where the GPUs have it", "finding",
                   data["no_nvlink"]["source"], "%s have no NVLink: the GPUs talk over PCIe"
                   % ", ".join(sorted({g.get("name") or g.get("pci_device_id") or "?" for g in _without_nvlink(gpus, data)})))
        else:
            linked = facts.get("nvlink")
            switches = len(facts.get("nvswitches") or [])
            value = ("NVSwitch x%d" % switches) if switches else ({True: "NVLink", False: "PCIe only"}.get(linked))
            _check(checks, "nvlink", "NVLink/NVSwitch between GPUs", value, "NVLink or NVSwitch",
                   "unknown" if linked is None and not switches else ("ok" if linked or switches else "problem"),
                   src("nvlink_multi_gpu"), None if linked is not None or switches else "no nvidia-smi topo -m")
    if "jetson" in limits and limits["jetson"]["value"]:
        _jetson_checks(checks, facts.get("jetson"), limits, src)
    disk = _data_disk(disks, data_disk)
    if "data_disk_gb_min" in limits:
        want = limits["data_disk_gb_min"]["value"]
        _check(checks, "data_disk", "data disk size (GB)",
               None if disk is None else "%s %s GB" % (disk["name"], disk["size_gb"]), ">= %d" % want,
               "unknown" if disk is None else ("ok" if disk["size_gb"] >= want else "problem"), src("data_disk_gb_min"),
               "dlbox_fitness_data_disk %s not found" % data_disk if data_disk and disk is None else None)
    if "data_disk_kinds" in limits:
        kinds = limits["data_disk_kinds"]["value"]
        kind = disk.get("kind") if disk else None
        _check(checks, "data_disk_kind", "data disk kind", kind, " or ".join(kinds),
               "unknown" if kind is None else ("ok" if kind in kinds else "problem"), src("data_disk_kinds"))
    if "data_disk_raid" in limits and limits["data_disk_raid"]["value"]:
        arrays = ["%s (%s %s GB)" % (d["name"], d["kind"], d["size_gb"]) for d in disks if d.get("kind") in RAID_KINDS]
        zfs = facts.get("zfs") or {}
        note = None
        if arrays:
            status = "ok"
        elif zfs.get("pools") or zfs.get("members"):
            arrays = ["ZFS %s" % ", ".join(zfs.get("pools") or ["pool on " + " ".join(zfs.get("members"))])]
            status, note = "unknown", "a ZFS pool: its redundancy (mirror, raidz) is in `zpool status`, not in these facts"
        else:
            status = "unknown" if not disks else "problem"
        _check(checks, "raid", "data disks in RAID (md, a RAID controller's volume, ZFS)", ", ".join(arrays) or "none",
               "an md array, a hardware RAID volume or a ZFS pool", status, src("data_disk_raid"), note)

    tips = advice(facts, data, profile)
    for model in tips["models"]:
        if model["fits"] is False:
            _check(checks, "model_fit", "fits: %s" % model["name"], "%s GB free of %s" % (model["headroom_gb"], model["gpu_gb"]),
                   "needs %s GB" % model["need_gb"], "problem", "profile models (data/fitness.yml)", model["arithmetic"])
    problems = [c["id"] for c in checks if c["status"] == "problem"]
    return {
        "host": str(host),
        "profile": profile,
        "profile_description": data["profiles"][profile]["description"],
        "gpus": [{"name": g.get("name"), "memory_mb": g.get("memory_mb"), "pci_device_id": g.get("pci_device_id"),
                  "pcie_link": g.get("pcie_link"), "pcie_cap": g.get("pcie_cap")} for g in gpus],
        "cpu": {"model": cpu.get("model"), "cores": cpu.get("cores"), "threads": cpu.get("threads"),
                "base_mhz": cpu.get("base_mhz"), "l3_kb": cpu.get("l3_kb")},
        "root_disk": facts.get("root_disk"),
        "ram_gib": None if ram_gb is None else round(ram_gb, 1),
        "disks": disks,
        "container": bool(virt.get("container")),
        "checks": checks,
        "findings": findings,
        "advice": tips,
        "problems": problems,
        "ok": not problems,
    }


def report_text(report):
    """One host's fitness report as lines for the run's output."""
    lines = ["Fitness of %s as a %s: %s" % (report["host"], report["profile"],
                                            "fit" if report["ok"] else "NOT fit (%s)" % ", ".join(report["problems"]))]
    for finding in report["findings"]:
        lines.append("  finding: %s" % finding)
    for check in report["checks"]:
        word = check["status"].upper() if check["status"] == "problem" else check["status"]
        note = "; %s" % check["note"] if check["note"] else ""
        lines.append("  [%s] %s: %s (want %s)%s" % (word, check["label"], check["value"], check["expected"], note))
    tips = report["advice"]
    lines.append("  advice: DataLoader(num_workers=%d, pin_memory=%s)  # %s"
                 % (tips["num_workers"], tips["pin_memory"], tips["num_workers_why"]))
    for gpu in tips["gpus"]:
        lines.append("  advice: %s CC %s (%s): bf16 autocast %s, FP8 %s" % (
            gpu["name"], gpu["cc"], gpu["cc_from"], _yes(gpu["bf16"]), _yes(gpu["fp8"])))
    for model in tips["models"]:
        why = " [%s]" % model["arithmetic"] if model.get("arithmetic") else ""
        if model["fits"] is None:
            lines.append("  model %s: needs %s GB of GPU memory (no GPU here)%s" % (model["name"], model["need_gb"], why))
        else:
            lines.append("  model %s: needs %s GB of %s GB, headroom %s GB (%s%%) for batches%s" % (
                model["name"], model["need_gb"], model["gpu_gb"], model["headroom_gb"], model["headroom_pct"], why))
    return lines


def _yes(value):
    return {True: "yes", False: "no", None: "unknown"}[value]


# ------------------------------------------------------------------------------------------------
# acceptance
# ------------------------------------------------------------------------------------------------

def _catalog_ids_for_name(name, catalog):
    """The catalog's device ids whose name (or a sub-system variant's) is exactly ``name`` (nvidia-smi's text)."""
    want = _gpu_catalog.normalize_name(name).lower()
    found = []
    for dev, item in sorted(((catalog or {}).get("devices") or {}).items()):
        names = [item.get("name")] + [v.get("name") for v in item.get("variants") or []]
        if any(n and n.lower() == want for n in names):
            found.append(str(dev).lower())
    return found


def reference_for(gpu, reference, catalog=None):
    """``(entry, why)``: the reference entry of one GPU of dlbox-acceptance's ``gpus`` list, or None and the reason.

    By PCI device id (``pci_device_id``: ``0x233010DE``, ``2330`` or ``10de:2330``) when the GPU carries one; else by
    the exact name nvidia-smi printed, when the catalog (data/gpu_catalog.yml) gives that name to devices that all
    share one entry. Never by a substring: ``NVIDIA H100 NVL`` is not ``NVIDIA H100 80GB HBM3``.
    """
    gpu = gpu if isinstance(gpu, dict) else {"name": gpu}
    by_id = {}
    for entry in reference["gpus"]:
        for dev in entry["ids"]:
            by_id[_gpu_catalog.pci_id(dev)] = entry
    raw = str(gpu.get("pci_device_id") or "").strip().lower()
    dev = _gpu_catalog.pci_id(raw[2:6] if raw.startswith("0x") and len(raw) == 10 else raw)
    name = gpu.get("name") or "?"
    if dev:
        entry = by_id.get(dev)
        return entry, None if entry else "no reference for %s (10de:%s) in data/acceptance.yml" % (name, dev)
    ids = _catalog_ids_for_name(name, catalog if catalog is not None else _load_catalog())
    entries = {id(by_id.get(d)): by_id.get(d) for d in ids}
    if len(entries) == 1 and None not in entries.values():
        return next(iter(entries.values())), None
    if not ids:
        return None, "no reference for %s: no PCI device id, and the name is not in data/gpu_catalog.yml" % name
    if len(entries) == 1:
        return None, "no reference for %s (10de:%s) in data/acceptance.yml" % (name, ", 10de:".join(ids))
    return None, ("no reference for %s: the name is shared by devices 10de:%s, which differ; dlbox-acceptance needs "
                  "nvidia-smi's pci.device_id to tell them apart" % (name, ", 10de:".join(ids)))


def _default_reference():
    try:
        return load_reference_data()
    except FitnessError:
        return None


_CATALOG = []


def _load_catalog():
    """data/gpu_catalog.yml, read once per process (a run looks a name up for every GPU of every host)."""
    if not _CATALOG:
        path = ROOT / "data" / "gpu_catalog.yml"
        try:
            with open(path, encoding="utf-8") as handle:
                _CATALOG.append(yaml.load(handle, Loader=_LOADER) or {})  # noqa: S506 - a SafeLoader
        except (OSError, yaml.YAMLError):
            return {}
    return _CATALOG[0]


def unreferenced(reference, catalog, compat):
    """Catalog GPUs that the reference table does not cover, as ``[{"id", "name", "arch"}]``.

    Those the issue asks for: every datacenter GPU since Volta and every workstation or GeForce card since Turing
    (``compat``: data/compat.yml, for the chip -> architecture table); laptop, mobile and embedded parts left out.
    """
    covered = {_gpu_catalog.pci_id(d) for entry in reference["gpus"] for d in entry["ids"]}
    index = _gpu_catalog.GpuIndex(compat, catalog)
    wanted = ("volta", "turing", "ampere", "ada", "hopper", "blackwell")
    out = []
    for dev, record in sorted(index.records.items()):
        if not record.get("pci_id") or dev in covered or record.get("arch") not in wanted:
            continue
        if re.search(r"laptop|mobile|max-q|embedded|\bmx\d|drive|jetson|\bpg\d", str(record.get("name")), re.I):
            continue
        notebook_chip = re.match(r"^[A-Z]{2}\d{3}[A-Z]*M$", str(record.get("chip")))
        if notebook_chip or re.search(r"mobile|max-q", str(record.get("pci_name")), re.I):
            continue  # a notebook part under a desktop name (TU104M "GeForce RTX 2080")
        if record.get("arch") == "volta" and "tesla" not in str(record.get("name")).lower():
            continue
        out.append({"id": dev, "name": record.get("name"), "arch": record.get("arch")})
    return out


def _acceptance_own_link(gpu, link, ref):
    """``(gen, width, where from)``: the card's own PCIe link for acceptance. Generation: nvidia-smi's
    pcie.link.gen.gpumax, else the reference's; width: sysfs max_link_width (the card's LnkCap, ``width_gpumax``),
    else the reference's. Never pcie.link.gen.max / width.max alone: NVML gives the lower of GPU and slot there."""
    pcie = dict((gpu or {}).get("pcie") or {})
    own_ref = (ref or {}).get("pcie") or {}
    gen = link.get("gen_gpumax") or pcie.get("gen_gpumax")
    width = link.get("width_gpumax") or pcie.get("width_gpumax")
    where = []
    where.append("gpumax" if gen else None)
    if not gen and own_ref.get("gen"):
        gen = own_ref["gen"]
        where.append("generation of data/acceptance.yml's %s" % ref["name"])
    where.append("sysfs max_link_width" if width else None)
    if not width and own_ref.get("width"):
        width = own_ref["width"]
        where.append("width of data/acceptance.yml's %s" % ref["name"])
    text = ", ".join(w for w in where if w) or "no gpumax, no sysfs width, no reference for this GPU"
    return gen, width, text


def _ratio_status(value, ref, share):
    if value is None:
        return "skipped"
    return "pass" if value >= ref * share else "fail"


def _peer_values(figures):
    """(figure id, label, unit, value) of the figures a GPU is compared with its peers on."""
    figures = figures or {}
    out = [("matmul_%s" % d, "dense matmul %s" % d, "TFLOPS", (figures.get("matmul_tflops") or {}).get(d))
           for d in REFERENCE_DTYPES]
    out += [("h2d", "host-to-device copy", "GB/s", figures.get("h2d_gb_s")),
            ("d2h", "device-to-host copy", "GB/s", figures.get("d2h_gb_s")),
            ("d2d", "device-to-device copy", "GB/s", figures.get("d2d_gb_s"))]
    return [item for item in out if item[3] is not None]


def _median(values):
    values = sorted(values)
    middle = len(values) // 2
    return values[middle] if len(values) % 2 else (values[middle - 1] + values[middle]) / 2.0


def slow_against_peers(per_gpu, share):
    """Each GPU's figures against the median of the other GPUs of the same model (same PCI device id, else the same
    name) on this host: ``{index: {"peers": [indexes], "slow": [(label, value, median, unit)]}}``; a GPU without
    another of its model has ``peers`` empty. A figure is slow below ``share`` of the others' median."""
    def model(entry):
        dev = _gpu_catalog.pci_id(str(entry.get("pci_device_id") or "").lower()[2:6]) if entry.get("pci_device_id") else None
        return dev or entry.get("name")

    out = {}
    for entry in per_gpu:
        index = entry.get("index")
        peers = [p for p in per_gpu if p is not entry and model(p) == model(entry)]
        slow = []
        for cid, label, unit, value in _peer_values(entry.get("figures")):
            if cid in HOST_COPIES and not copies_from_own_node(entry):
                continue
            others = [v for p in peers for c, _l, _u, v in _peer_values(p.get("figures"))
                      if c == cid and (cid not in HOST_COPIES or copies_from_own_node(p))]
            if others and value < share * _median(others):
                slow.append((label, value, float("%.4g" % _median(others)), unit))
        unplaced = [p.get("index") for p in [entry] + peers if not copies_from_own_node(p)]
        out[index] = {"peers": [p.get("index") for p in peers], "slow": slow, "unplaced": unplaced}
    return out


HOST_COPIES = ("h2d", "d2h")


def copies_from_own_node(entry):
    """Whether a GPU's host-to-device and device-to-host copies were measured from its own NUMA node (dlbox-acceptance's
    ``numa``: ``bound``, or a single node, ``node`` None). A copy from the far socket of a 2-socket server reads about
    half, so such figures are not compared with peers measured from theirs. A report without ``numa`` (an older
    dlbox-acceptance) is taken as placed, as it always was."""
    numa = entry.get("numa")
    if not isinstance(numa, dict):
        return True
    return numa.get("node") is None or bool(numa.get("bound"))


def judge_acceptance(measured, reference, limits=None, catalog=None):
    """Compare the output of ``dlbox-acceptance`` with the reference figures.

    ``limits``: ``{"matmul": 0.8, "bandwidth": 0.8, "disk": 0.8, "dataloader_min": 1000, "peers": 0.85}`` (shares of
    what a healthy system reaches: for matmul, ``matmul_target``, the datasheet peak times its GPU class's achievable
    share; the DataLoader floor in samples/s; the share of its same-model peers' median a GPU must reach).
    ``catalog``: data/gpu_catalog.yml, read when a GPU comes without its PCI device id (see ``reference_for``).
    GPU 0's figures are judged under their plain ids (``matmul_bf16``, ``h2d``, ...); on a host with several GPUs each
    other GPU N's under ``gpuN_<id>``, against its own reference, and every GPU against its peers (``gpuN_peers``).
    """
    if not isinstance(measured, dict) or "checks" not in measured:
        raise FitnessError("judge_acceptance expects the JSON of dlbox-acceptance (with 'checks')")
    share = {"matmul": 0.8, "bandwidth": 0.8, "disk": 0.8, "dataloader_min": 1000, "peers": 0.85}
    for key, value in (limits or {}).items():
        if key not in share or isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise FitnessError("dlbox_acceptance_thresholds.%s must be a positive number (known: %s), got %r"
                               % (key, ", ".join(sorted(share)), value))
        share[key] = value
    results = []

    def add(cid, label, status, value=None, ref=None, unit=None, reason=None, source=None):
        results.append({"id": cid, "label": label, "status": status, "value": value, "reference": ref, "unit": unit,
                        "reason": reason, "source": source})

    for cid, check in sorted(measured["checks"].items()):
        add(cid, check.get("label") or cid, check.get("status", "skipped"), check.get("value"),
            reason=check.get("reason"))
    gpus = measured.get("gpus") or []
    figures = measured.get("figures") or {}
    skipped = measured.get("skipped") or {}
    lane = reference["pcie_gb_s_per_lane"]["value"]
    achievable = reference["achievable"]

    def judge_gpu(gpu, figures, skipped, prefix="", of=""):
        """One GPU's matmul, copies and link against its own reference; its items' ids start with ``prefix``."""
        ref, no_ref = reference_for(gpu, reference, catalog) if gpu else (None, "no GPU")
        first = len(results)
        for dtype in REFERENCE_DTYPES:
            value = (figures.get("matmul_tflops") or {}).get(dtype)
            cid = "matmul_%s" % dtype
            label = "dense matmul %s%s" % (dtype, of)
            if value is None and dtype in ("tf32", "fp8") and not skipped.get(cid):
                continue  # measured only where dlbox-acceptance was asked to
            if value is None:
                add(prefix + cid, label, "skipped", unit="TFLOPS", reason=skipped.get("matmul") or skipped.get(cid))
            elif ref is None:
                add(prefix + cid, label, "finding", value, unit="TFLOPS", reason=no_ref)
            else:
                target, how, source = matmul_target(ref, dtype, reference)
                if target is None:
                    add(prefix + cid, label, "finding", value, unit="TFLOPS", reason=how, source=source)
                else:
                    add(prefix + cid, label, _ratio_status(value, target, share["matmul"]), value, target, "TFLOPS",
                        "needs %d%% of %s TFLOPS, what a healthy %s reaches (%s)"
                        % (share["matmul"] * 100, target, ref["name"], how), source)
        link = figures.get("pcie_under_load") or {}
        own_gen, own_width, own_from = _acceptance_own_link(gpu or {}, link, ref)
        if figures.get("h2d_gb_s") is None:
            add(prefix + "h2d", "host-to-device copy" + of, "skipped", unit="GB/s",
                reason=skipped.get("h2d") or skipped.get("matmul"))
        else:
            per_lane = lane.get(own_gen) or lane.get(str(own_gen))
            if not per_lane or not own_width:
                add(prefix + "h2d", "host-to-device copy" + of, "finding", figures["h2d_gb_s"], unit="GB/s",
                    reason="the card's own PCIe link is unknown (%s)" % own_from)
            else:
                share_link = achievable["h2d_share_of_link"]["value"]
                target = round(per_lane * own_width * share_link, 1)
                add(prefix + "h2d", "host-to-device copy" + of, _ratio_status(figures["h2d_gb_s"], target, share["bandwidth"]),
                    figures["h2d_gb_s"], target, "GB/s",
                    "needs %d%% of %s GB/s, what a healthy PCIe Gen%s x%s reaches (%s of %.1f GB/s: packet overhead); "
                    "the card's own link (%s), so a slot that holds it back fails here"
                    % (share["bandwidth"] * 100, target, own_gen, own_width, share_link, per_lane * own_width, own_from),
                    "%s; %s" % (reference["pcie_gb_s_per_lane"]["source"], achievable["h2d_share_of_link"]["source"]))
        numa = (gpu or {}).get("numa")
        if isinstance(numa, dict) and numa.get("why"):
            # where the host copies ran from (dlbox-acceptance numa_placement): the far socket reads about half
            for item in results[first:]:
                if item["id"][len(prefix):] == "h2d" and item["status"] != "skipped":
                    item["reason"] = "%s; %s" % (item["reason"], numa["why"])
                    if not copies_from_own_node({"numa": numa}) and item["status"] == "fail":
                        item.update(status="finding", reason=item["reason"] + ": not measured from the GPU's own "
                                    "NUMA node, so not judged")
        if figures.get("d2d_gb_s") is None:
            add(prefix + "d2d", "device-to-device copy" + of, "skipped", unit="GB/s",
                reason=skipped.get("d2d") or skipped.get("matmul"))
        elif ref is None:
            add(prefix + "d2d", "device-to-device copy" + of, "finding", figures["d2d_gb_s"], unit="GB/s", reason=no_ref)
        else:
            share_mem = achievable["d2d_share_of_memory"]["value"]
            target = round(ref["mem_gb_s"] * share_mem, 1)
            add(prefix + "d2d", "device-to-device copy" + of, _ratio_status(figures["d2d_gb_s"], target, share["bandwidth"]),
                figures["d2d_gb_s"], target, "GB/s", "needs %d%% of %s GB/s (%s of the %s GB/s peak a copy reaches)"
                % (share["bandwidth"] * 100, target, share_mem, ref["mem_gb_s"]),
                "%s; %s" % (ref["source"], achievable["d2d_share_of_memory"]["source"]))
        if not link:
            add(prefix + "pcie_link", "PCIe link under load" + of, "skipped",
                reason=skipped.get("pcie_under_load") or skipped.get("matmul"))
        else:
            # the card's own link (gpumax / sysfs LnkCap / its reference), not NVML's max, the lower of GPU and slot
            value = "Gen%s x%s" % (link.get("gen_current"), link.get("width_current"))
            expected = "Gen%s x%s" % (own_gen or "?", own_width or "?")
            short = [w for w, have, full in (("Gen%s" % link.get("gen_current"), link.get("gen_current"), own_gen),
                                             ("x%s" % link.get("width_current"), link.get("width_current"), own_width))
                     if have and full and have < full]
            if short:
                slot = [what for what, smi, own in (("Gen%s" % link.get("gen_max"), link.get("gen_max"), own_gen),
                                                    ("x%s" % link.get("width_max"), link.get("width_max"), own_width))
                        if smi and own and smi < own]
                why = ("runs at %s of the card's own %s (%s)%s" % (" ".join(short), expected, own_from,
                       "; slot-limited: nvidia-smi's maximum (the lower of GPU and slot) is %s" % " ".join(slot) if slot else ""))
                add(prefix + "pcie_link", "PCIe link under load" + of, "fail", value, expected, reason=why)
            elif not own_gen or not own_width:
                add(prefix + "pcie_link", "PCIe link under load" + of, "finding", value, expected,
                    reason="the card's own %s unknown (%s): not judged against nvidia-smi's maximum, the lower of GPU and "
                           "slot" % ("generation" if not own_gen else "width", own_from))
            else:
                add(prefix + "pcie_link", "PCIe link under load" + of, "pass", value, expected,
                    reason="the card's own link (%s)" % own_from)
        under_load = figures.get("throttle_under_load") or []
        if under_load:
            # seen by the matmul part while it ran (dlbox-acceptance-torch.py ClockWatch); a card that slows down only
            # when busy (cooling, power delivery) shows nothing at idle. Its figures stay judged as measured: a
            # machine whose GPU throttles under load is what acceptance exists to catch; the cause is named beside them
            why = ", ".join(under_load)
            for item in results[first:]:
                if item["status"] == "fail" and item["id"][len(prefix):].startswith("matmul_"):
                    item["reason"] = "%s; clocks held down during the measurement: %s" % (item["reason"], why)
            add(prefix + "throttle_under_load", "clock slowdown under load" + of, "finding", why,
                reason="NVML clock event reasons seen while the matmul ran (nvidia-smi clocks_event_reasons.active): "
                       "cooling or power delivery holds the clocks down under load")
        busy = gpu_busy(gpu) if gpu else None
        if busy:
            # a GPU in MIG mode, shared with other processes or held down by its clocks measures low without a fault
            for item in results[first:]:
                if item["status"] == "fail" and item["id"][len(prefix):].startswith(("matmul_", "h2d", "d2d")):
                    item.update(status="finding", reason="%s; not judged: %s" % (item["reason"], busy))
        return ref, busy

    ref, busy = judge_gpu(gpus[0] if gpus else {}, figures, skipped)
    per_gpu = [e for e in measured.get("per_gpu") or [] if isinstance(e, dict)]
    by_index = {g.get("index"): g for g in gpus}
    where = {}
    if len(per_gpu) > 1:
        for entry in per_gpu:
            index = entry.get("index")
            where[index] = "GPU %s (%s)" % (index, entry.get("bus_id") or "bus id unknown")
        for entry in per_gpu[1:]:
            index = entry.get("index")
            gpu = dict(by_index.get(index) or {}, **{k: v for k, v in entry.items() if k not in ("figures", "skipped", "errors")})
            judge_gpu(gpu, entry.get("figures") or {}, entry.get("skipped") or {}, "gpu%s_" % index, " of %s" % where[index])
        peers = slow_against_peers(per_gpu, share["peers"])
        for entry in per_gpu:
            index = entry.get("index")
            found = peers[index]
            cid, label = "gpu%s_peers" % index, "%s against the other GPUs of its model" % where[index]
            if not found["peers"]:
                add(cid, label, "skipped", reason="no other GPU of its model (%s) on this host" % entry.get("name"))
                continue
            others = "GPU %s" % ", ".join(str(i) for i in found["peers"])
            unplaced = ("; host copies of GPU %s not compared: not measured from their own NUMA node"
                        % ", ".join(str(i) for i in found["unplaced"])) if found.get("unplaced") else ""
            if not found["slow"]:
                add(cid, label, "pass", reason="every figure within %d%% of the median of %s%s"
                    % (share["peers"] * 100, others, unplaced), source="dlbox_acceptance_thresholds.peers")
                continue
            slow = "; ".join("%s %s %s against %s" % (label_, value, unit, median) for label_, value, median, unit in found["slow"])
            state = gpu_busy(by_index.get(index))
            add(cid, label, "finding" if state else "fail", slow, unit=None,
                reason="below %d%% of the median of %s (%s)%s%s" % (
                    share["peers"] * 100, others, entry.get("name"), "; not judged: %s" % state if state else "",
                    unplaced),
                source="dlbox_acceptance_thresholds.peers")
    if figures.get("allreduce_busbw_gb_s") is None:
        add("allreduce", "all-reduce bus bandwidth", "skipped", unit="GB/s", reason=skipped.get("allreduce"))
    else:
        # a figure no floor was applied to is a finding, never a pass: the floor of the GPUs' topology
        # (data/acceptance.yml allreduce_floors) is applied by plugin_utils/acceptance_allreduce.apply, which
        # playbooks/acceptance.yml runs after this (filter dlbox.stack.acceptance_allreduce)
        add("allreduce", "all-reduce bus bandwidth", "finding", figures["allreduce_busbw_gb_s"], unit="GB/s",
            reason="measured; not judged here: the topology's floor is applied by dlbox.stack.acceptance_allreduce")
    disk_ref = reference["disk_seq_read_mb_s"]["value"]
    if figures.get("fio_seq_read_mb_s") is None:
        add("fio", "data disk sequential read", "skipped", unit="MB/s", reason=skipped.get("fio"))
    else:
        kind = measured.get("data_disk_kind")
        value = figures["fio_seq_read_mb_s"]
        if kind in disk_ref:
            add("fio", "data disk sequential read", _ratio_status(value, disk_ref[kind], share["disk"]), value,
                disk_ref[kind], "MB/s", "a %s disk" % kind, reference["disk_seq_read_mb_s"]["source"])
        else:
            add("fio", "data disk sequential read", "pass", value, None, "MB/s",
                "measured; the disk under %s is not known (%s), so no reference" % (measured.get("data_dir"), kind or "overlay or unknown"))
        if figures.get("fio_note"):
            results[-1]["reason"] += "; " + figures["fio_note"]
    if figures.get("dataloader_samples_s") is None:
        add("dataloader", "DataLoader samples/s", "skipped", unit="samples/s", reason=skipped.get("dataloader"))
    else:
        add("dataloader", "DataLoader samples/s", _ratio_status(figures["dataloader_samples_s"], share["dataloader_min"], 1),
            figures["dataloader_samples_s"], share["dataloader_min"], "samples/s",
            "synthetic dataset, %s workers" % figures.get("dataloader_workers"), "dlbox_acceptance_thresholds.dataloader_min")
    if busy:
        add("gpu_state", "GPU 0's state during the run", "finding", busy,
            reason="figures measured in this state are findings, not hardware failures")
    failed = [r["id"] for r in results if r["status"] == "fail"]
    return {"host": measured.get("host"), "gpus": gpus, "results": results, "failed": failed, "ok": not failed,
            "reference_gpu": ref["name"] if ref else None}


def gpu_busy(gpu):
    """Why a GPU's figures cannot be judged (dlbox-acceptance's ``state``: MIG mode, other compute processes, clock
    throttling), as text; None when nothing stands in the way."""
    state = (gpu or {}).get("state") or {}
    why = []
    if state.get("mig"):
        why.append("MIG mode is on (the run gets a MIG instance, not the whole GPU)")
    if state.get("processes"):
        why.append("other compute processes on it: %s" % ", ".join(state["processes"]))
    if state.get("throttle"):
        why.append("clocks held down: %s" % ", ".join(state["throttle"]))
    return "; ".join(why) or None


def acceptance_text(report):
    lines = ["Acceptance of %s: %s" % (report["host"], "passed" if report["ok"] else "FAILED (%s)" % ", ".join(report["failed"]))]
    for item in report["results"]:
        value = "" if item["value"] is None else ": %s%s" % (item["value"], " " + item["unit"] if item["unit"] else "")
        ref = "" if item["reference"] is None else " (reference %s)" % item["reference"]
        lines.append("  [%s] %s%s%s%s" % (item["status"].upper() if item["status"] == "fail" else item["status"],
                                          item["label"], value, ref, " - %s" % item["reason"] if item["reason"] else ""))
    return lines


# ------------------------------------------------------------------------------------------------
# the fleet report
# ------------------------------------------------------------------------------------------------

def fleet(reports, acceptances=None, data=None):
    """Join the hosts' fitness reports (and acceptance reports, by host) into the fleet report."""
    by_host = {}
    for report in reports or []:
        by_host.setdefault(report["host"], {})["fitness"] = report
    for report in acceptances or []:
        by_host.setdefault(report.get("host") or "?", {})["acceptance"] = report
    hosts = []
    for name in sorted(by_host):
        entry = by_host[name]
        fit, acc = entry.get("fitness"), entry.get("acceptance")
        hosts.append({
            "host": name,
            "fitness": fit,
            "acceptance": acc,
            "status": "problem" if (fit and not fit["ok"]) or (acc and not acc["ok"]) else "ok",
        })
    return {
        "hosts": hosts,
        "summary": {"hosts": len(hosts), "ok": sum(1 for h in hosts if h["status"] == "ok"),
                    "problem": sum(1 for h in hosts if h["status"] != "ok")},
        "corrected": (data or {}).get("corrected") or [],
        "sources": (data or {}).get("sources") or {},
    }


def load_folder(folder):
    """The reports under ``<folder>/fitness/*.json`` and ``<folder>/acceptance/*.json``."""
    root = Path(folder)
    out = []
    for sub in ("fitness", "acceptance"):
        items = []
        for path in sorted((root / sub).glob("*.json")) if (root / sub).is_dir() else []:
            try:
                items.append(json.loads(path.read_text(encoding="utf-8")))
            except (OSError, ValueError) as exc:
                raise FitnessError("report %s cannot be read: %s" % (path, exc)) from exc
        out.append(items)
    return out[0], out[1]


def _host_line(host):
    fit = host["fitness"] or {}
    gpus = ", ".join(g["name"] or "?" for g in fit.get("gpus") or []) or ("no GPU" if fit else "?")
    acc = host["acceptance"]
    return {
        "host": host["host"], "profile": fit.get("profile", "?"), "gpus": gpus,
        "fitness": "-" if not fit else ("fit" if fit["ok"] else "NOT fit: " + ", ".join(fit["problems"])),
        "acceptance": "not run" if not acc else ("passed" if acc["ok"] else "FAILED: " + ", ".join(acc["failed"])),
    }


def render_markdown(report):
    out = ["# dlbox fleet report", "",
           "%d host(s): %d fit and accepted, %d with problems." % (
               report["summary"]["hosts"], report["summary"]["ok"], report["summary"]["problem"]), "",
           "| host | profile | GPUs | fitness | acceptance |", "| --- | --- | --- | --- | --- |"]
    for host in report["hosts"]:
        line = _host_line(host)
        out.append("| %(host)s | %(profile)s | %(gpus)s | %(fitness)s | %(acceptance)s |" % line)
    for host in report["hosts"]:
        out += ["", "## %s" % host["host"], ""]
        fit = host["fitness"]
        if fit:
            out.append("Profile %s (%s)." % (fit["profile"], fit["profile_description"]))
            for finding in fit["findings"]:
                out.append("Finding: %s." % finding)
            out += ["", "| check | value | wanted | status | source |", "| --- | --- | --- | --- | --- |"]
            for check in fit["checks"]:
                status = "**PROBLEM**" if check["status"] == "problem" else check["status"]
                out.append("| %s | %s | %s | %s | %s |" % (check["label"], check["value"], check["expected"], status,
                                                           check["source"]))
            out += [""] + ["- " + line.strip() for line in report_text(fit)[1:] if line.strip().startswith(("advice", "model"))]
        acc = host["acceptance"]
        if acc:
            out += ["", "| acceptance | value | reference | status | note |", "| --- | --- | --- | --- | --- |"]
            for item in acc["results"]:
                status = "**FAIL**" if item["status"] == "fail" else item["status"]
                out.append("| %s | %s | %s | %s | %s |" % (item["label"], _fmt(item["value"], item["unit"]),
                                                           _fmt(item["reference"], item["unit"]), status, item["reason"] or ""))
    if report.get("sources"):
        out += ["", "## Sources", ""] + ["- %s: %s" % (key, text) for key, text in sorted(report["sources"].items())]
    if report["corrected"]:
        out += ["", "## Figures of the guides, corrected", ""]
        for entry in report["corrected"]:
            out.append("- %s: %s (%s)" % (entry["guide"], entry["right"], entry["source"]))
    return "\n".join(out) + "\n"


def _fmt(value, unit):
    if value is None:
        return ""
    return "%s %s" % (value, unit) if unit else str(value)


_CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:2em;color:#1d2733;background:#f6f7f9}
h1{margin-bottom:.2em}h2{margin-top:1.6em;border-bottom:2px solid #d5dbe3;padding-bottom:.2em}
table{border-collapse:collapse;margin:.6em 0 1em;background:#fff;min-width:60%}
th,td{border:1px solid #d5dbe3;padding:.35em .6em;text-align:left;vertical-align:top;font-size:.92em}
th{background:#e9edf2}
tr.problem td,tr.fail td{background:#fde2e1;color:#8a1c13;font-weight:600}
tr.unknown td,tr.skipped td{color:#6b7785}tr.finding td{background:#fff6d6}
.badge{display:inline-block;padding:.1em .55em;border-radius:.8em;font-size:.85em;font-weight:700}
.badge.ok{background:#d8f3dc;color:#1b5e20}.badge.problem{background:#c62828;color:#fff}
.cards{display:flex;gap:1em;margin:1em 0}.card{background:#fff;border:1px solid #d5dbe3;border-radius:.5em;padding:.8em 1.2em}
.card b{font-size:1.8em;display:block}.card.bad b{color:#c62828}.card.good b{color:#2e7d32}
ul.advice{background:#fff;border:1px solid #d5dbe3;padding:.6em 2em;margin:.4em 0}
.note{color:#6b7785;font-size:.85em}
"""


def _e(value):
    return html.escape("" if value is None else str(value))


def render_html(report):
    """One self-contained page: fleet overview, then a table per host (problems highlighted)."""
    summary = report["summary"]
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             "<title>dlbox fleet report</title><style>%s</style></head><body>" % _CSS,
             "<h1>dlbox fleet report</h1>",
             '<div class="cards" id="overview-cards">'
             '<div class="card"><b>%d</b>hosts</div>' % summary["hosts"],
             '<div class="card good"><b>%d</b>fit and accepted</div>' % summary["ok"],
             '<div class="card bad"><b>%d</b>with problems</div></div>' % summary["problem"],
             '<table id="fleet"><thead><tr><th>host</th><th>profile</th><th>GPUs</th><th>fitness</th><th>acceptance</th>'
             "</tr></thead><tbody>"]
    for host in report["hosts"]:
        line = _host_line(host)
        parts.append('<tr class="%s"><td><a href="#host-%s">%s</a></td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>' % (
            host["status"], _e(host["host"]), _e(host["host"]), _e(line["profile"]), _e(line["gpus"]),
            _e(line["fitness"]), _e(line["acceptance"])))
    parts.append("</tbody></table>")
    for host in report["hosts"]:
        fit, acc = host["fitness"], host["acceptance"]
        parts.append('<section class="host-section" id="section-%s"><h2>%s <span class="badge %s">%s</span></h2>' % (
            _e(host["host"]), _e(host["host"]), host["status"], "OK" if host["status"] == "ok" else "PROBLEM"))
        if fit:
            parts.append("<p>Profile <b>%s</b>: %s. CPU %s (%s cores), RAM %s GiB.</p>" % (
                _e(fit["profile"]), _e(fit["profile_description"]), _e(fit["cpu"].get("model")), _e(fit["cpu"].get("cores")),
                _e(fit["ram_gib"])))
            for finding in fit["findings"]:
                parts.append('<p class="finding">Finding: %s</p>' % _e(finding))
        parts.append('<table class="host" id="host-%s" data-host="%s"><thead><tr><th>check</th><th>value</th>'
                     "<th>wanted / reference</th><th>status</th><th>source / note</th></tr></thead><tbody>"
                     % (_e(host["host"]), _e(host["host"])))
        for check in (fit or {}).get("checks", []):
            parts.append('<tr class="%s" data-check="%s"><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s%s</td></tr>' % (
                check["status"], _e(check["id"]), _e(check["label"]), _e(check["value"]), _e(check["expected"]),
                _e(check["status"].upper() if check["status"] == "problem" else check["status"]), _e(check["source"]),
                ('<br><span class="note">%s</span>' % _e(check["note"])) if check["note"] else ""))
        for item in (acc or {}).get("results", []):
            parts.append('<tr class="%s" data-check="acceptance-%s"><td>acceptance: %s</td><td>%s</td><td>%s</td>'
                         "<td>%s</td><td>%s</td></tr>" % (
                             item["status"], _e(item["id"]), _e(item["label"]), _e(_fmt(item["value"], item["unit"])),
                             _e(_fmt(item["reference"], item["unit"])),
                             _e(item["status"].upper() if item["status"] == "fail" else item["status"]),
                             _e(item["reason"] or item["source"] or "")))
        parts.append("</tbody></table>")
        if fit:
            parts.append('<ul class="advice">%s</ul>' % "".join(
                "<li>%s</li>" % _e(line.strip()) for line in report_text(fit)[1:]
                if line.strip().startswith(("advice", "model"))))
        parts.append("</section>")
    if report.get("sources"):
        parts.append('<h2>Sources</h2><ul class="sources">%s</ul>' % "".join(
            "<li><b>%s</b>: %s</li>" % (_e(key), _e(text)) for key, text in sorted(report["sources"].items())))
    if report["corrected"]:
        parts.append("<h2>Figures of the guides, corrected</h2><ul>")
        for entry in report["corrected"]:
            parts.append("<li><s>%s</s> &rarr; %s <span class=\"note\">(%s)</span></li>" % (
                _e(entry["guide"]), _e(entry["right"]), _e(entry["source"])))
        parts.append("</ul>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
