# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPU settings and MIG layouts checked against the GPU's own limits (pure, no I/O but reading data/server.yml).

:func:`parse_smi` reads ``nvidia-smi -q -x`` (XML) or ``nvidia-smi -q`` (text) into one dict per GPU::

    {"index": 0, "pci_bus_id": "00000000:03:00.0", "name": "NVIDIA H200", "persistence_mode": True,
     "power": {"current": 700.0, "default": 700.0, "min": 200.0, "max": 700.0},
     "max_clocks": {"graphics": 1980, "sm": 1980, "memory": 3201},
     "applications_clocks": {"graphics": 1980, "memory": 3201},
     "supported_clocks": {3201: [1980, 1965, ...]},          # XML only, where nvidia-smi prints it
     "ecc": {"current": True, "pending": True}, "compute_mode": "Default",
     "mig": {"current": False, "pending": False}, "processes": 0}

(the element names of NVIDIA's ``nvsmi_device_v12.dtd``: ``gpu_power_readings`` from R535 on, ``power_readings``
before; the text labels of the same fields). A value ``N/A`` is ``None``.

:func:`plan` takes the role's request (``gpu_settings_*`` variables) and those GPUs and returns the problems
(each naming the variable, before any change), the ``nvidia-smi`` commands that would change the host now, the
commands a boot unit runs again (nvidia-smi's settings do not survive a reboot, ECC mode excepted), and whether
an ECC change waits for a reboot. :func:`mig_problems` checks a layout in NVIDIA's ``mig-parted`` format against
the profiles of data/server.yml.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET  # nosec - nvidia-smi's own output; ElementTree resolves no external entities
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_DATA = ROOT / "data" / "server.yml"
SETTINGS = ("persistence_mode", "power_limit_w", "locked_clocks", "applications_clocks", "ecc", "compute_mode")
PREFIX = "gpu_settings_"


class GpuSettingsError(ValueError):
    """Bad data file or unreadable nvidia-smi output."""


def load_data(path=None):
    """data/server.yml as a dict, shape-checked."""
    path = path or DEFAULT_DATA
    try:
        with open(path, encoding="utf-8") as handle:
            data = yaml.safe_load(handle)
    except (OSError, yaml.YAMLError) as exc:
        raise GpuSettingsError("%s cannot be read: %s" % (path, exc)) from exc
    if not isinstance(data, dict):
        raise GpuSettingsError("%s must be a mapping" % path)
    sources = data.get("sources") or {}
    for section in ("gpu_settings", "mig", "mig_parted", "infiniband", "dcgm"):
        entry = data.get(section)
        if not isinstance(entry, dict) or entry.get("source") not in sources:
            raise GpuSettingsError("%s: %s needs a source named in sources" % (path, section))
    for index, gpu in enumerate(data["mig"].get("gpus") or []):
        if not gpu.get("match") or not gpu.get("profiles"):
            raise GpuSettingsError("%s: mig.gpus[%d] needs match and profiles" % (path, index))
    return data


# ------------------------------------------------------------------------------------------------
# parsing
# ------------------------------------------------------------------------------------------------

def _number(text):
    """'700.00 W' -> 700.0, '1980 MHz' -> 1980.0, 'N/A' -> None."""
    match = re.match(r"\s*([0-9]+(?:\.[0-9]+)?)", str(text or ""))
    return float(match.group(1)) if match else None


def _int(text):
    value = _number(text)
    return int(value) if value is not None else None


def _flag(text):
    """'Enabled' -> True, 'Disabled' -> False, anything else (N/A) -> None."""
    word = str(text or "").strip().lower()
    return True if word == "enabled" else False if word == "disabled" else None


def _na(text):
    text = None if text is None else str(text).strip()
    return None if text in (None, "", "N/A", "[N/A]", "Not Supported") else text


def _gpu(index, bus, name, fields):
    """One GPU dict from flat ``section/label`` fields (shared by the XML and the text reader)."""
    def get(*keys):
        for key in keys:
            if _na(fields.get(key)) is not None:
                return fields[key]
        return None

    return {
        "index": index,
        "pci_bus_id": (bus or "").upper(),
        "name": (name or "").strip(),
        "persistence_mode": _flag(get("persistence_mode")),
        "power": {
            "current": _number(get("power/current_power_limit", "power/power_limit", "power/enforced_power_limit")),
            "default": _number(get("power/default_power_limit")),
            "min": _number(get("power/min_power_limit")),
            "max": _number(get("power/max_power_limit")),
        },
        "max_clocks": {k: _int(get("max_clocks/%s" % k)) for k in ("graphics", "sm", "memory")},
        "applications_clocks": {k: _int(get("applications_clocks/%s" % k)) for k in ("graphics", "memory")},
        "supported_clocks": fields.get("supported_clocks") or {},
        "ecc": {"current": _flag(get("ecc/current")), "pending": _flag(get("ecc/pending"))},
        "compute_mode": _na(get("compute_mode")),
        "mig": {"current": _flag(get("mig/current")), "pending": _flag(get("mig/pending"))},
        "processes": int(fields.get("processes") or 0),
        "process_ids": [str(pid) for pid in fields.get("process_ids") or []],
    }


_XML_FIELDS = {
    "persistence_mode": "persistence_mode",
    "compute_mode": "compute_mode",
    "mig/current": "mig_mode/current_mig",
    "mig/pending": "mig_mode/pending_mig",
    "ecc/current": "ecc_mode/current_ecc",
    "ecc/pending": "ecc_mode/pending_ecc",
    "max_clocks/graphics": "max_clocks/graphics_clock",
    "max_clocks/sm": "max_clocks/sm_clock",
    "max_clocks/memory": "max_clocks/mem_clock",
    "applications_clocks/graphics": "applications_clocks/graphics_clock",
    "applications_clocks/memory": "applications_clocks/mem_clock",
}
_POWER = ("current_power_limit", "power_limit", "enforced_power_limit", "default_power_limit",
          "min_power_limit", "max_power_limit")


def parse_xml(text):
    """``nvidia-smi -q -x`` -> list of GPU dicts (see the module's docstring)."""
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise GpuSettingsError("nvidia-smi -q -x output is not XML: %s" % exc) from exc
    gpus = []
    for index, node in enumerate(root.findall("gpu")):
        fields = {key: node.findtext(path) for key, path in _XML_FIELDS.items()}
        power = node.find("gpu_power_readings")
        if power is None:
            power = node.find("power_readings")
        if power is not None:
            for key in _POWER:
                fields["power/" + key] = power.findtext(key)
        supported = {}
        for mem in node.findall("supported_clocks/supported_mem_clock"):
            mem_clock = _int(mem.findtext("value"))
            if mem_clock is not None:
                supported[mem_clock] = [c for c in (_int(g.text) for g in mem.findall("supported_graphics_clock"))
                                        if c is not None]
        fields["supported_clocks"] = supported
        fields["processes"] = len(node.findall("processes/process_info"))
        fields["process_ids"] = [(p.findtext("pid") or "").strip() for p in node.findall("processes/process_info")]
        gpus.append(_gpu(index, node.get("id"), node.findtext("product_name"), fields))
    return gpus


_TEXT_GPU = re.compile(r"^GPU\s+([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\s*$")
_TEXT_LINE = re.compile(r"^(\s*)([^:]+?)\s*(?::\s*(.*?))?\s*$")
_TEXT_SECTIONS = {"MIG Mode": "mig", "ECC Mode": "ecc", "Ecc Mode": "ecc", "Power Readings": "power",
                  "GPU Power Readings": "power", "Max Clocks": "max_clocks",
                  "Applications Clocks": "applications_clocks"}
_TEXT_LABELS = {"Current": "current", "Pending": "pending", "Graphics": "graphics", "SM": "sm", "Memory": "memory",
                "Power Limit": "power_limit", "Current Power Limit": "current_power_limit",
                "Enforced Power Limit": "enforced_power_limit", "Default Power Limit": "default_power_limit",
                "Min Power Limit": "min_power_limit", "Max Power Limit": "max_power_limit"}


def parse_text(text):
    """``nvidia-smi -q`` text -> list of GPU dicts (no ``supported_clocks``: plain -q does not print them)."""
    gpus = []
    bus = name = None
    fields = {}
    section = None
    section_indent = 0
    in_processes = False

    def close():
        if bus is not None:
            gpus.append(_gpu(len(gpus), bus, name, fields))

    for line in (text or "").splitlines():
        match = _TEXT_GPU.match(line)
        if match:
            close()
            bus, name, fields, section, in_processes = match.group(1), None, {"processes": 0, "process_ids": []}, \
                None, False
            continue
        if bus is None or not line.strip():
            continue
        parts = _TEXT_LINE.match(line)
        indent, label, value = len(parts.group(1)), parts.group(2), parts.group(3)
        if section is not None and indent <= section_indent:
            section = None
        if indent <= 4:
            in_processes = False
        if value is None:
            if label in _TEXT_SECTIONS and indent == 4:
                section, section_indent = _TEXT_SECTIONS[label], indent
            elif label == "Processes" and indent == 4:
                in_processes = True
            continue
        if in_processes and label.strip() == "Process ID":
            fields["processes"] += 1
            fields["process_ids"].append(value)
        elif indent == 4:
            if label == "Product Name":
                name = value
            elif label == "Persistence Mode":
                fields["persistence_mode"] = value
            elif label == "Compute Mode":
                fields["compute_mode"] = value
        elif section is not None and indent == section_indent + 4 and label in _TEXT_LABELS:
            fields.setdefault("%s/%s" % (section, _TEXT_LABELS[label]), value)
    close()
    return gpus


def parse_smi(text):
    """XML or text, told apart by the first character."""
    text = text or ""
    if not text.strip():
        raise GpuSettingsError("nvidia-smi -q printed nothing")
    return parse_xml(text) if text.lstrip().startswith("<") else parse_text(text)


# ------------------------------------------------------------------------------------------------
# GPU settings
# ------------------------------------------------------------------------------------------------

def _requests(request):
    """The role's variables -> {gpu index or 'all': {setting: value}}, with the variable name of each value."""
    wanted = {"all": {}}
    names = {"all": {}}
    for setting in SETTINGS:
        value = request.get(PREFIX + setting)
        if value is not None:
            wanted["all"][setting] = value
            names["all"][setting] = PREFIX + setting
    for key, overrides in (request.get(PREFIX + "per_gpu") or {}).items():
        wanted[key] = {}
        names[key] = {}
        for setting, value in (overrides or {}).items():
            wanted[key][setting] = value
            names[key][setting] = "%sper_gpu[%s].%s" % (PREFIX, key, setting)
    return wanted, names


def _pair(value, keys):
    if isinstance(value, dict) and all(isinstance(value.get(k), int) and not isinstance(value.get(k), bool)
                                       for k in keys):
        return [value[k] for k in keys]
    return None


def _check(gpu, setting, value, var, data):
    """One setting for one GPU -> (problem or None, nvidia-smi arguments or None, changes now?)."""
    label = "GPU %d (%s)" % (gpu["index"], gpu["name"])
    if setting in ("persistence_mode", "ecc"):
        if not isinstance(value, bool):
            return "%s must be true or false, not %r" % (var, value), None, False
        flag = "-pm" if setting == "persistence_mode" else "-e"
        current = gpu["persistence_mode"] if setting == "persistence_mode" else gpu["ecc"]["pending"]
        if setting == "ecc" and current is None:
            return "%s: %s reports no ECC mode (N/A), so it cannot be set; leave %s unset" % (var, label, var), \
                None, False
        return None, [flag, "1" if value else "0"], current != value
    if setting == "compute_mode":
        modes = data["gpu_settings"]["compute_modes"]
        if value not in modes:
            return "%s must be one of %s, not %r" % (var, ", ".join(modes), value), None, False
        current = (gpu["compute_mode"] or "").replace(" ", "_").upper()
        return None, ["-c", value], current != value
    if setting == "power_limit_w":
        low, high = gpu["power"]["min"], gpu["power"]["max"]
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            return "%s must be a number of watts, not %r" % (var, value), None, False
        if low is None or high is None:
            return "%s: %s does not report power limits (nvidia-smi -q -d POWER says N/A), so none can be set" \
                % (var, label), None, False
        if not low <= value <= high:
            return "%s is %s W, outside %s's range %g-%g W (Min/Max Power Limit of nvidia-smi -q -d POWER)" \
                % (var, value, label, low, high), None, False
        return None, ["-pl", "%g" % value], gpu["power"]["current"] != float(value)
    if setting == "locked_clocks":
        pair = _pair(value, ("min", "max"))
        if pair is None:
            return "%s must be {min: MHz, max: MHz}, not %r" % (var, value), None, False
        top = gpu["max_clocks"]["graphics"]
        floor = min((c for cs in gpu["supported_clocks"].values() for c in cs), default=1)
        if pair[0] > pair[1]:
            return "%s: min %d MHz is above max %d MHz" % (var, pair[0], pair[1]), None, False
        if top is None:
            return "%s: %s reports no Max Clocks, so clocks cannot be locked" % (var, label), None, False
        if pair[0] < floor or pair[1] > top:
            return "%s is %d-%d MHz, outside %s's graphics clock range %d-%d MHz (nvidia-smi -q -d CLOCK," \
                " SUPPORTED_CLOCKS)" % (var, pair[0], pair[1], label, floor, top), None, False
        # nvidia-smi -q does not show locked clocks: they are set whenever the boot unit's settings change.
        return None, ["-lgc", "%d,%d" % tuple(pair)], None
    if setting == "applications_clocks":
        pair = _pair(value, ("memory", "graphics"))
        if pair is None:
            return "%s must be {memory: MHz, graphics: MHz}, not %r" % (var, value), None, False
        supported = gpu["supported_clocks"]
        if supported:
            if pair[0] not in supported:
                return "%s: memory %d MHz is not a supported memory clock of %s (%s)" % (
                    var, pair[0], label, ", ".join(str(c) for c in sorted(supported))), None, False
            if pair[1] not in supported[pair[0]]:
                return "%s: graphics %d MHz is not supported with memory %d MHz on %s (%d-%d MHz)" % (
                    var, pair[1], pair[0], label, min(supported[pair[0]]), max(supported[pair[0]])), None, False
        else:
            tops = gpu["max_clocks"]
            if tops["memory"] is None or tops["graphics"] is None:
                return "%s: %s reports no Max Clocks" % (var, label), None, False
            if pair[0] > tops["memory"] or pair[1] > tops["graphics"]:
                return "%s is memory %d / graphics %d MHz, above %s's Max Clocks %d / %d MHz" % (
                    var, pair[0], pair[1], label, tops["memory"], tops["graphics"]), None, False
        current = gpu["applications_clocks"]
        return None, ["-ac", "%d,%d" % tuple(pair)], [current["memory"], current["graphics"]] != pair
    return "%s: unknown setting %r (known: %s)" % (var, setting, ", ".join(SETTINGS)), None, False


def plan(smi_text, request, data=None):
    """The GPU settings to apply -> {ok, problems, gpus, commands_now, boot_commands, ecc_reboot, ecc_message}.

    ``request``: the role's variables (``gpu_settings_persistence_mode``, ``_power_limit_w``, ``_locked_clocks``,
    ``_applications_clocks``, ``_ecc``, ``_compute_mode`` for every GPU; ``gpu_settings_per_gpu`` {index: {setting:
    value}} for one GPU, which wins). ``commands_now``: argv lists that change what differs from the host's state
    (locked clocks are not readable: ``locked_clocks_now`` lists them for the caller to run when its boot file
    changed). ``boot_commands``: every requested setting but ECC (which survives a reboot), for the boot unit.
    """
    data = data or load_data()
    try:
        gpus = parse_smi(smi_text)
    except GpuSettingsError as exc:
        return {"ok": False, "problems": [str(exc)], "gpus": [], "commands_now": [], "locked_clocks_now": [],
                "boot_commands": [], "ecc_reboot": False, "ecc_message": ""}
    wanted, names = _requests(request or {})
    problems = []
    if not gpus:
        problems.append("nvidia-smi -q reports no GPU, so no GPU setting can be applied")
    known = {str(g["index"]) for g in gpus}
    for key in wanted:
        if key != "all" and str(key) not in known:
            problems.append("%sper_gpu has GPU index %s, but the host has GPUs %s" % (
                PREFIX, key, ", ".join(sorted(known)) or "none"))
    commands_now, locked_now, boot, summary, ecc_waiting = [], [], [], [], []
    persistent = set(data["gpu_settings"].get("persistent_across_reboot") or [])
    for gpu in gpus:
        settings = dict(wanted["all"])
        settings.update(wanted.get(gpu["index"], wanted.get(str(gpu["index"]), {})))
        variables = dict(names["all"])
        variables.update(names.get(gpu["index"], names.get(str(gpu["index"]), {})))
        changes = []
        for setting in SETTINGS:
            if setting not in settings:
                continue
            problem, args, differs = _check(gpu, setting, settings[setting], variables[setting], data)
            if problem:
                problems.append(problem)
                continue
            argv = ["nvidia-smi", "-i", str(gpu["index"])] + args
            if differs:
                commands_now.append(argv)
                changes.append(setting)
            if setting == "locked_clocks":
                locked_now.append(argv)
            if setting not in persistent:
                boot.append(argv)
            if setting == "ecc" and gpu["ecc"]["current"] != settings["ecc"]:
                ecc_waiting.append(gpu["index"])
        summary.append({"index": gpu["index"], "name": gpu["name"], "pci_bus_id": gpu["pci_bus_id"],
                        "changes": changes, "power": gpu["power"], "max_clocks": gpu["max_clocks"]})
    ok = not problems
    message = ""
    if ok and ecc_waiting:
        message = ("ECC mode of GPU %s takes effect at the next reboot (nvidia-smi -e: 'changes take effect after "
                   "the next reboot'); the role did not reboot." % ", ".join(str(i) for i in ecc_waiting))
    return {"ok": ok, "problems": problems, "gpus": summary, "commands_now": commands_now if ok else [],
            "locked_clocks_now": locked_now if ok else [], "boot_commands": boot if ok else [],
            "ecc_reboot": bool(ok and ecc_waiting), "ecc_message": message}


# ------------------------------------------------------------------------------------------------
# MIG
# ------------------------------------------------------------------------------------------------

def mig_profiles(product_name, data=None):
    """A product name -> {name, profiles} of data/server.yml, or None when the GPU does not take MIG."""
    data = data or load_data()
    for entry in data["mig"]["gpus"]:
        if re.search(entry["match"], product_name or ""):
            return {"name": entry["name"], "profiles": entry["profiles"]}
    return None


DRAIN = ("drain it first: stop its jobs (nvidia-smi --query-compute-apps=pid,process_name,gpu_bus_id --format=csv"
         " lists them) and the services that hold the GPU (nvidia-dcgm, nvidia-dcgm-exporter, your schedulers'"
         " agents), then run again")


def _mode_changes(entry, gpu):
    """Does this mig-parted entry switch the GPU's MIG mode (the step that needs an idle GPU and a reset)?"""
    wanted = bool(entry.get("mig-enabled"))
    current = gpu["mig"]["current"]
    if current is None:             # N/A: the GPU has no MIG mode; only asking for MIG changes anything
        return wanted
    return current != wanted or (gpu["mig"]["pending"] is not None and gpu["mig"]["pending"] != wanted)


def mig_problems(config, selected, smi_text, data=None, variable="gpu_settings_mig_config"):
    """A mig-parted config document and the name of its layout to apply -> problems (empty: the GPUs take it).

    Checked per GPU the layout names: the GPU takes MIG; each profile exists for it; no profile more often than
    the GPU allows; compute slices <= 7 and memory slices <= 8 in all (necessary, not sufficient: NVIDIA's
    placement rules are checked again by nvidia-mig-parted itself); MIG mode is not switched (on or off) on a GPU
    that runs processes (the MIG user guide: the GPU must be idle), with how to drain it.
    """
    data = data or load_data()
    gpus = parse_smi(smi_text)
    configs = (config or {}).get("mig-configs") if isinstance(config, dict) else None
    if not isinstance(configs, dict) or selected not in configs:
        return ["%s has no layout %r under mig-configs (has: %s)" % (
            variable, selected, ", ".join(sorted(configs)) if isinstance(configs, dict) else "none")]
    if not isinstance(configs[selected], list):
        return ["%s.mig-configs.%s must be a list of {devices, mig-enabled, mig-devices}" % (variable, selected)]
    problems = []
    limits = data["mig"]
    for number, entry in enumerate(configs[selected]):
        where = "%s.mig-configs.%s[%d]" % (variable, selected, number)
        if not isinstance(entry, dict):
            problems.append("%s must be a mapping with devices, mig-enabled and mig-devices" % where)
            continue
        devices = entry.get("devices", "all")
        chosen = gpus if devices == "all" else [g for g in gpus if g["index"] in (devices or [])]
        missing = [] if devices == "all" else sorted(set(devices or []) - {g["index"] for g in gpus})
        if missing:
            problems.append("%s: devices %s do not exist (the host has GPUs 0-%d)" % (where, missing, len(gpus) - 1))
        for gpu in chosen:
            label = "GPU %d (%s)" % (gpu["index"], gpu["name"])
            if gpu["processes"] and _mode_changes(entry, gpu):
                problems.append("%s: %s runs %d process(es) (PID %s); switching MIG mode %s needs an idle GPU (it is"
                                " reset): %s" % (where, label, gpu["processes"], ", ".join(gpu["process_ids"]) or "?",
                                                 "on" if entry.get("mig-enabled") else "off", DRAIN))
            if not entry.get("mig-enabled"):
                continue
            known = mig_profiles(gpu["name"], data)
            if known is None:
                problems.append("%s: %s does not support MIG (data/server.yml mig.gpus)" % (where, label))
                continue
            compute = memory = 0
            for profile, count in (entry.get("mig-devices") or {}).items():
                spec = known["profiles"].get(profile)
                if spec is None:
                    problems.append("%s: %s has no MIG profile %s (it has: %s)" % (
                        where, label, profile, ", ".join(known["profiles"])))
                    continue
                if not isinstance(count, int) or count < 0 or count > spec["max"]:
                    problems.append("%s: %s takes at most %d x %s, not %r" % (where, label, spec["max"], profile, count))
                    continue
                compute += spec["compute"] * count
                memory += spec["memory"] * count
            if compute > limits["compute_slices"] or memory > limits["memory_slices"]:
                problems.append("%s: the layout needs %d compute and %d memory slices; %s has %d and %d" % (
                    where, compute, memory, label, limits["compute_slices"], limits["memory_slices"]))
    return problems


_SHA256 = re.compile(r"^[0-9a-f]{64}$")


def mig_parted_install(data=None, arch="x86_64", url="", sha256="", version=""):
    """Where NVIDIA's nvidia-mig-manager package (nvidia-mig-parted and its boot service) comes from, checked.

    ``url`` empty: the GitHub release of ``version`` (empty: data's) for the architecture; otherwise the URL of
    the .deb itself (a mirror). The sha256 is always required: no default exists for a file this collection has
    not seen. Returns ``{"problems": [...], "url", "deb", "sha256", "package", "version", "binary", "service",
    "hooks_file", "generated_config", "package_dropin", "dropin"}``.
    """
    data = data or load_data()
    facts = data["mig_parted"]
    version = str(version or facts["version"])
    problems = []
    deb_arch = facts["arches"].get(arch)
    if deb_arch is None:
        problems.append("nvidia-mig-parted packages exist for %s, not %s (data/server.yml mig_parted.arches)" % (
            ", ".join(facts["arches"]), arch))
        deb_arch = arch
    deb = facts["deb"].format(version=version, arch=deb_arch)
    url = str(url or "").strip()
    if url and not re.match(r"^(https?|file)://", url):
        problems.append("gpu_settings_mig_parted_url must be an http(s):// or file:// URL of the .deb, not %r" % url)
    if not url:
        url = facts["release_url"].format(version=version) + deb
    sha256 = str(sha256 or "").strip().lower()
    if not _SHA256.match(sha256):
        problems.append("gpu_settings_mig_parted_sha256 must be the sha256 of %s (64 hex digits; got %r): "
                        "sha256sum the file you downloaded from %s" % (deb, sha256, url))
    result = {key: facts[key] for key in ("package", "binary", "service", "hooks_file", "generated_config",
                                          "package_dropin", "dropin")}
    result.update({"problems": problems, "url": url, "deb": url.rstrip("/").rsplit("/", 1)[-1] or deb,
                   "sha256": sha256, "version": version})
    return result
