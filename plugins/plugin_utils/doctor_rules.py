# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The doctor's rules: each a pure function over the facts of ``doctor_captures.extract_facts``.

A rule returns a list of findings ``{id, severity, title, evidence, fix}`` (empty: checked, nothing
wrong), or None when the captures do not hold the facts it needs; ``RULES`` says what each one needs,
so the report can name what was not checked. Vendor facts (Xid meanings, thresholds, package names)
come from ``data/doctor.yml`` through ``data``. Finding ids are stable: the README table lists them.
"""

from __future__ import annotations

import re

from ansible_collections.dlbox.stack.plugins.plugin_utils.versions import at_least, parse_version

__all__ = ["RULES", "RULE_IDS", "EXTRA_IDS", "SIGNALS", "run_rules"]


def _finding(rule_id, severity, title, evidence, fix):
    return {"id": rule_id, "severity": severity, "title": title, "evidence": evidence, "fix": fix}


def _kernel(facts, pattern):
    lines = facts.get("kernel_lines")
    if lines is None:
        return None
    return [line for line in lines if re.search(pattern, line)]


def _short(lines, limit=3):
    lines = list(lines)
    shown = lines[:limit]
    if len(lines) > limit:
        shown.append("(%d more like these)" % (len(lines) - limit))
    return shown


def _messages(facts, *kinds):
    """The error messages of those kinds (doctor_captures._MESSAGES) any capture holds."""
    return [m for m in facts.get("messages", []) if m["kind"] in kinds]


def _searched(facts):
    """Some capture was read: a rule that looks for an error message has looked."""
    return bool(facts.get("captures_read"))


def _lines_of(entries, limit=3):
    return _short(sorted({e["line"] for e in entries}, key=[e["line"] for e in entries].index), limit)


def _smi_answered(facts):
    return bool(facts.get("gpus")) and bool((facts.get("smi") or {}).get("driver_version"))


# ----------------------------------------------------------------------------------------------------------------------
# driver and kernel module
# ----------------------------------------------------------------------------------------------------------------------

def driver_library_mismatch(facts, data):
    """The loaded kernel module and the user-space libraries (NVML) are of different driver versions."""
    evidence = [e["line"] for e in facts.get("smi_errors", []) if e["kind"] == "driver-library-mismatch"]
    evidence += _lines_of(_messages(facts, "ctk-nvml-mismatch"))
    evidence += _kernel(facts, r"API mismatch") or []
    lib, proc = facts.get("nvml_library_version"), (facts.get("proc_version") or {}).get("version")
    if lib and proc and not proc.startswith(lib):
        evidence.append("NVML library %s, loaded kernel module %s (/proc/driver/nvidia/version)" % (lib, proc))
    if not evidence:
        if not (facts.get("smi_errors") is not None or facts.get("kernel_lines") is not None or _smi_answered(facts)
                or facts.get("messages") is not None):
            return None
        return []
    return [_finding(
        "driver-library-mismatch", "error", "The loaded NVIDIA kernel module and the driver libraries differ",
        _short(evidence),
        "The driver packages were upgraded while the old module stayed loaded (often by unattended-upgrades). "
        "Reboot, or stop every GPU user and reload: rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia && modprobe nvidia. "
        "Then hold the driver packages (apt-mark hold) so it does not happen again.")]


def driver_not_loaded(facts, data):
    """nvidia-smi cannot reach a driver, or the kernel log says the module found/probed no GPU."""
    evidence = [e["line"] for e in facts.get("smi_errors", []) if e["kind"] == "cannot-communicate"]
    evidence += _lines_of(_messages(facts, "driver-not-loaded"))
    evidence += _kernel(facts, r"NVRM: (No NVIDIA (graphics adapter|GPU) (probed|found)|The NVIDIA probe routine "
                               r"(was not called|failed)|None of the NVIDIA devices were initialized)") or []
    lsmod = facts.get("lsmod")
    gpus_on_bus = [d for d in facts.get("pci_devices", []) if d["kind"] == "gpu"]
    if lsmod is not None and gpus_on_bus and "nvidia" not in lsmod:
        evidence.append("lsmod lists no 'nvidia' module while %d NVIDIA GPU(s) are on the PCI bus" % len(gpus_on_bus))
    if not evidence:
        if facts.get("smi_errors") is None and facts.get("kernel_lines") is None and lsmod is None \
                and not _smi_answered(facts):
            return None
        return []
    return [_finding(
        "driver-not-loaded", "error", "The NVIDIA kernel driver is not loaded (or bound to no GPU)", _short(evidence),
        "Look at the kernel log for why (this report lists the cause it found: nouveau, Secure Boot, a module not built "
        "for this kernel, a GPU the open modules do not support). 'modprobe nvidia' shows the error; after fixing it, "
        "reboot or modprobe nvidia and check nvidia-smi.")]


def nouveau_loaded(facts, data):
    """nouveau holds the GPU (lsmod, lspci 'Kernel driver in use', kernel log)."""
    evidence = []
    if facts.get("lsmod") is not None and "nouveau" in facts["lsmod"]:
        evidence.append("lsmod: nouveau is loaded")
    evidence += ["lspci: %s: Kernel driver in use: nouveau" % (d["pci_bus_id"] or "GPU")
                 for d in facts.get("pci_devices", []) if d.get("driver_in_use") == "nouveau"]
    evidence += _kernel(facts, r"^(\S+ )*nouveau [0-9a-f]{4}:|NVRM: nouveau, rivafb|was loaded and obtained ownership") or []
    if not evidence:
        if facts.get("lsmod") is None and facts.get("kernel_lines") is None and not facts.get("pci_devices"):
            return None
        return []
    return [_finding(
        "nouveau-loaded", "error", "The nouveau driver holds the NVIDIA GPU", _short(evidence),
        "Blacklist nouveau and rebuild the initramfs: printf 'blacklist nouveau\\noptions nouveau modeset=0\\n' > "
        "/etc/modprobe.d/blacklist-nouveau.conf; update-initramfs -u; reboot. The nvidia_driver role does this.")]


def secure_boot_module_rejected(facts, data):
    """Secure Boot (lockdown) refused the unsigned or wrongly signed nvidia module."""
    # "Operation not permitted" after "modprobe: FATAL: Module nvidia... not found" is the failed install command of a
    # module that is not there (Debian's nvidia-current alias, Witko/nvidia-xrun#148), not lockdown
    missing = _messages(facts, "module-not-found")
    errors = [e for e in facts.get("module_errors", []) if e["module"].startswith("nvidia")
              and re.search(r"Key was rejected by service|Required key not available|Operation not permitted", e["reason"])
              and not (missing and "Operation not permitted" in e["reason"])]
    kernel = _kernel(facts, r"Loading of unsigned module is rejected|nvidia.*(Key was rejected|Required key not available)") or []
    if errors or kernel:  # a lockdown line names no module: it only supports a refusal of an nvidia module
        kernel += _kernel(facts, r"Lockdown: .*unsigned module loading is restricted") or []
        kernel += _lines_of(_messages(facts, "lockdown"))
    evidence = _short(list(dict.fromkeys([e["line"] for e in errors] + kernel)))
    if evidence and facts.get("secure_boot") is True:
        evidence.append("mokutil --sb-state: SecureBoot enabled")
    if not evidence:
        if facts.get("module_errors") is None and facts.get("kernel_lines") is None:
            return None
        return []
    title = "Secure Boot rejected the NVIDIA kernel module"
    if all("Operation not permitted" in line for line in evidence) and facts.get("secure_boot") is not True:
        title = "The kernel refused the NVIDIA module (Operation not permitted): Secure Boot lockdown, or modprobe not run as root"
    return [_finding(
        "secure-boot-module-rejected", "error", title, evidence,
        "Under Secure Boot the kernel's lockdown refuses modules it cannot verify ('Key was rejected by service', or "
        "'Operation not permitted' with 'Lockdown: ... unsigned module loading is restricted' in the kernel log). "
        "%s Set a one-time password, reboot and confirm in MokManager; or turn Secure Boot off in the firmware. Then "
        "modprobe nvidia." % _mok_text(facts))]


def _mok_text(facts):
    """Where DKMS keeps the key it signs with, per distribution (roles/nvidia_driver/README.md, data/compat.yml;
    Debian wiki, SecureBoot: DKMS 3 makes /var/lib/dkms/mok.key and mok.pub)."""
    distro = ((facts.get("os_release") or {}).get("id") or "").lower()
    ubuntu = ("Ubuntu: enroll the key DKMS signs with, mokutil --import /var/lib/shim-signed/mok/MOK.der (made by "
              "update-secureboot-policy --new-key), or install the signed precompiled linux-modules-nvidia-<branch> "
              "packages instead of DKMS.")
    debian = "Debian 12 and other DKMS 3 systems: enroll DKMS's key, mokutil --import /var/lib/dkms/mok.pub."
    if distro == "ubuntu":
        return ubuntu
    if distro == "debian":
        return debian
    return ubuntu + " " + debian


def dkms_not_built_for_kernel(facts, data):
    """DKMS has no nvidia module built and installed for the running kernel (or its build failed)."""
    evidence = ["%s (dkms)" % f["line"] for f in facts.get("dkms_failures", [])]
    make_errors = _messages(facts, "dkms-make-error")
    evidence += _lines_of(make_errors)
    evidence += ["%s (no %s module for kernel %s)" % (m["line"], m["module"], m["kernel"])
                 for m in _messages(facts, "module-not-found")]
    dkms, kernel = facts.get("dkms"), facts.get("uname_r")
    nvidia = [e for e in dkms or [] if e["module"].startswith("nvidia")]
    if nvidia and kernel:
        built = [e for e in nvidia if e["kernel"] == kernel and e["status"] == "installed"]
        if not built:
            evidence.append("running kernel %s; dkms status has nvidia for: %s" % (
                kernel, ", ".join(sorted({"%s (%s)" % (e["kernel"], e["status"]) for e in nvidia}))))
    if not evidence:
        if not (nvidia and kernel):
            return None
        return []
    title = ("The DKMS build of the NVIDIA module failed" if make_errors or facts.get("dkms_failures") else
             "The NVIDIA module is not built (or not installed) for the running kernel")
    return [_finding(
        "dkms-not-built-for-kernel", "error", title, _short(evidence),
        "Install the headers of the running kernel (apt-get install linux-headers-$(uname -r)) and build: dkms autoinstall "
        "(or dkms install nvidia/<version> -k $(uname -r)); read /var/lib/dkms/nvidia*/<version>/build/make.log when it "
        "fails. A kernel too new for the driver branch needs a newer branch, or boot the previous kernel.")]


def open_modules_unsupported_gpu(facts, data):
    """The open kernel modules loaded on a GPU without a GSP (before Turing)."""
    evidence = _kernel(facts, r"not supported by open\s+(NVRM: )?nvidia\.ko")
    if evidence is None:
        return None
    if not evidence:
        return []
    return [_finding(
        "open-modules-unsupported-gpu", "error", "The open NVIDIA kernel modules do not support this GPU",
        _short(evidence),
        "GPUs before Turing (GeForce 10 series and older, Tesla P100/V100) need the proprietary modules: install the "
        "non-open package of the branch (e.g. nvidia-driver-<branch> instead of -open, nvidia-kernel-dkms instead of "
        "nvidia-open-kernel-dkms; nvidia_driver_kernel_modules: proprietary) and reboot. Branches from 590 on dropped "
        "Maxwell to Volta: keep those GPUs on 580.")]


def gsp_firmware_missing(facts, data):
    """The driver could not load its GSP firmware file."""
    evidence = _kernel(facts, r"Direct firmware load for nvidia/[\d.]+/gsp\w*\.bin failed|"
                              r"RmFetchGspRmImages: No firmware image found|failed to load GSP firmware")
    if evidence is None:
        return None
    if not evidence:
        return []
    return [_finding(
        "gsp-firmware-missing", "error", "The GSP firmware of the driver is missing", _short(evidence),
        "The firmware files ship in the driver's firmware package (Debian firmware-nvidia-gsp, Ubuntu "
        "nvidia-firmware-<branch>-<version>, NVIDIA's nvidia-firmware-<branch>) under /lib/firmware/nvidia/<version>/: "
        "install the one of exactly the loaded driver version, update-initramfs -u and reboot. With the proprietary "
        "modules on Turing/Ampere, NVreg_EnableGpuFirmware=0 avoids GSP; the open modules always need it.")]


# ----------------------------------------------------------------------------------------------------------------------
# CUDA and frameworks
# ----------------------------------------------------------------------------------------------------------------------

def _cuda_dirs(value):
    return sorted(set(re.findall(r"/cuda-(\d+\.\d+)", value or "")))


def cuda_path_conflict(facts, data):
    """Two CUDA toolkits are on the search paths, or different nvcc versions answer."""
    evidence = []
    releases = facts.get("nvcc_releases") or []
    if len(releases) > 1:
        evidence.append("nvcc answers as CUDA %s (more than one nvcc is installed)" % " and ".join(releases))
    env = facts.get("env") or {}
    for var in ("PATH", "LD_LIBRARY_PATH"):
        found = _cuda_dirs(env.get(var))
        if len(found) > 1:
            evidence.append("%s holds CUDA %s" % (var, ", ".join(found)))
    for line in facts.get("path_lines") or []:
        found = _cuda_dirs(line)
        if len(found) > 1:
            evidence.append("a search path holds CUDA %s: %s" % (", ".join(found), line))
    home = env.get("CUDA_HOME") or env.get("CUDA_PATH")
    home_version = (_cuda_dirs(home) or [None])[0]
    if home_version and len(releases) == 1 and releases[0] != home_version:
        evidence.append("CUDA_HOME=%s but nvcc is CUDA %s" % (home, releases[0]))
    if not evidence:
        if not releases and not env and not facts.get("path_lines"):
            return None
        return []
    return [_finding(
        "cuda-path-conflict", "warning", "More than one CUDA toolkit is on the search paths", _short(evidence),
        "Pick one toolkit: put /usr/local/cuda-X.Y/bin first in PATH and its lib64 in LD_LIBRARY_PATH (or point "
        "/usr/local/cuda at it), set CUDA_HOME to the same directory, and remove the distribution's nvidia-cuda-toolkit "
        "if it shadows it in /usr/bin. Extensions built against the other one must be rebuilt.")]


def _cuda_from_int(value):
    number = int(value)
    return "%d.%d" % (number // 1000, (number % 1000) // 10)


def framework_cuda_too_new_for_driver(facts, data):
    """The framework's CUDA runtime needs a newer driver than the one installed."""
    evidence = []
    for entry in facts.get("framework", []):
        if entry["kind"] == "driver-too-old":
            evidence.append("%s (found version %s = the driver supports CUDA %s)" % (
                entry["line"], entry["found"], _cuda_from_int(entry["found"])))
        elif entry["kind"] == "driver-insufficient":
            evidence.append(entry["line"])
    evidence += ["%s (the image needs a driver for CUDA %s or newer)" % (m["line"], m["cuda"])
                 for m in _messages(facts, "ctk-requirement")]
    driver_cuda = (facts.get("smi") or {}).get("cuda_version")
    for probe in facts.get("framework_probe", []):
        if driver_cuda and probe.get("cuda") and probe["cuda"] != "None" and \
                parse_version(re.match(r"^[\d.]+", probe["cuda"]).group(0).rstrip("."))[:2] > parse_version(driver_cuda)[:2]:
            evidence.append("%s, but the driver supports CUDA %s (nvidia-smi)" % (probe["line"], driver_cuda))
    if not evidence:
        if facts.get("framework") is None and facts.get("framework_probe") is None and facts.get("messages") is None:
            return None
        return []
    return [_finding(
        "framework-cuda-too-new-for-driver", "error", "The framework's CUDA is newer than the driver supports",
        _short(evidence),
        "Either upgrade the driver to a branch that supports that CUDA (playbooks/plan.yml shows which), or install the "
        "framework build for an older CUDA (e.g. pip install torch --index-url https://download.pytorch.org/whl/cu118). "
        "nvidia-smi's 'CUDA Version' is the newest CUDA the driver supports.")]


def framework_cpu_only_build(facts, data):
    """PyTorch is a CPU-only build (``+cpu``, no CUDA it was built with): it never uses the GPU."""
    probes = [p for p in facts.get("framework_probe", []) if p["line"].lower().startswith(("torch", "pytorch"))]
    if not probes:
        return None
    cpu = [p for p in probes if p.get("cuda") in (None, "None") or "+cpu" in p["version"]]
    if not cpu:
        return []
    gpu = facts.get("gpus") or [d for d in facts.get("pci_devices", []) if d["kind"] == "gpu"] or [
        p for p in probes if p.get("gpu") or p.get("driver")]
    if not gpu and facts.get("pci_seen"):
        return []  # the PCI list shows no NVIDIA GPU (no-gpu): a CPU-only build is what no-gpu's fix advises
    evidence = list(dict.fromkeys(p["line"] for p in cpu))  # one line per build, not per environment that has it
    evidence += ["%s" % p["gpu"] for p in probes if p.get("gpu")][:1]
    evidence += ["Nvidia driver version: %s" % p["driver"] for p in probes if p.get("driver")][:1]
    return [_finding(
        "framework-cpu-only-build", "error" if gpu else "warning",
        "PyTorch is a CPU-only build%s" % (" on a machine with an NVIDIA GPU" if gpu else ""), evidence,
        "A CPU-only wheel (+cpu, or CUDA used to build PyTorch: None) never uses the GPU, whatever the driver. Install "
        "a CUDA build in the same environment: pip install torch --index-url https://download.pytorch.org/whl/cu<XY> "
        "with a CUDA the driver supports (nvidia-smi's 'CUDA Version' is the newest), and check that pip did not keep "
        "the old wheel (pip uninstall torch first). The python_env role installs the CUDA build.")]


def no_kernel_image_for_device(facts, data):
    """The framework has no kernels for this GPU's compute capability."""
    evidence = []
    for entry in facts.get("framework", []):
        if entry["kind"] == "no-kernel-image":
            evidence.append(entry["line"])
        elif entry["kind"] == "sm-incompatible":
            evidence.append(entry["line"])
    if not evidence:
        return None if facts.get("framework") is None else []
    return [_finding(
        "no-kernel-image-for-device", "error", "The framework was not built for this GPU's architecture", _short(evidence),
        "Install a framework build that includes this compute capability: a newer GPU (sm_120 Blackwell, sm_90 Hopper) "
        "needs a build for a recent CUDA (PyTorch cu128 or later for sm_120); an older GPU (sm_61, sm_70) may need an "
        "older build whose CUDA still compiles for it. python -c 'import torch; print(torch.cuda.get_arch_list())' "
        "lists what the installed build has.")]


# ----------------------------------------------------------------------------------------------------------------------
# GPU health
# ----------------------------------------------------------------------------------------------------------------------

def xid_error(facts, data):
    """Xid events in the kernel log, each with its meaning, severity and action from NVIDIA's catalog (data/doctor.yml);
    a code the data does not list is an error."""
    lines = facts.get("kernel_lines")
    if lines is None:
        return None
    meanings = {entry["code"]: entry for entry in data["xid"]["codes"]}
    actions = data["xid"]["actions"]
    seen = {}
    for line in lines:
        match = re.search(r"NVRM: Xid \((?:PCI:)?(?P<bus>[^)]+)\): (?P<code>\d+)", line)
        if match:
            key = (int(match.group("code")), match.group("bus"))
            seen.setdefault(key, []).append(line)
        elif re.search(r"fallen off the bus", line):
            bus = re.search(r"GPU (?:at (?:PCI:)?)?(?P<bus>[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2})", line, re.I)
            seen.setdefault((79, bus.group("bus").lower() if bus else "?"), []).append(line)
    order = {"info": 0, "warning": 1, "error": 2}
    findings = []
    for (code, bus), found in sorted(seen.items()):
        known = meanings.get(code)
        if known:
            meaning, severity = known["meaning"], known["severity"]
            action = "NVIDIA's immediate action %s: %s; then %s" % (
                known["action"], actions.get(known["action"], known["action"]), known["investigate"])
        else:
            meaning, severity = "not in NVIDIA's Xid catalog as data/doctor.yml holds it", "error"
            action = "look the code up in NVIDIA's current Xid catalog; until then treat it as a GPU fault"
        # Xid 45 follows other Xids (the catalog's WORKFLOW_XID_45): it weighs what the Xid it names weighs
        causes = sorted({int(c) for line in found for c in re.findall(r"caused by previous Xid (\d+)", line)})
        for cause in causes:
            cause_severity = (meanings.get(cause) or {}).get("severity", "error")
            if order[cause_severity] > order[severity]:
                severity = cause_severity
        # NVLink Xids 144-150 print Fatal or Nonfatal: a Nonfatal one is corrected by the link (gpud#1174)
        if 144 <= code <= 150 and found and all(re.search(r"\bNonfatal\b", line) for line in found):
            severity = "warning"
            meaning += " (Nonfatal)"
        if known and known.get("note"):
            action += ". " + known["note"]
        if causes:
            action += ". This Xid names its cause: act on Xid %s" % ", ".join(str(c) for c in causes)
        tail = (" A GPU that keeps logging hardware Xids after a reset needs the vendor." if severity == "error" else
                " The GPU needs no repair for this event alone; if it repeats across applications, look at the "
                "application and the driver version.")
        findings.append(_finding(
            "xid-error", severity, "Xid %d on GPU %s: %s" % (code, bus, meaning),
            ["Xid %d (%s), %d time(s) on %s" % (code, meaning, len(found), bus)] + _short(found, 2),
            "%s%s (NVIDIA, Xid catalog: https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html).%s" % (
                action[0].upper(), action[1:], tail)))
    return findings


def ecc_retired_or_remapped(facts, data):
    """Retired pages or remapped rows pending, failed, or accumulating."""
    gpus = [g for g in facts.get("gpus", []) if g.get("retired_pages") or g.get("remapped_rows")]
    if not gpus:
        return None
    findings = []
    for gpu in gpus:
        remap, retired = gpu.get("remapped_rows") or {}, gpu.get("retired_pages") or {}
        evidence, severity = [], "warning"
        if remap.get("failure"):
            evidence.append("remapped rows: Remapping Failure Occurred: Yes")
            severity = "error"
        if remap.get("pending"):
            evidence.append("remapped rows: Pending: Yes (uncorrectable rows: %s)" % remap.get("uncorrectable"))
            severity = "error"
        elif remap.get("uncorrectable"):
            evidence.append("remapped rows: %d uncorrectable" % remap["uncorrectable"])
        if retired.get("pending"):
            evidence.append("retired pages: pending retirement")
            severity = "error"
        if retired.get("double_bit"):
            evidence.append("retired pages: %d double-bit" % retired["double_bit"])
        if evidence:
            label = gpu.get("name") or gpu.get("pci_bus_id") or "a GPU"
            findings.append(_finding(
                "ecc-retired-or-remapped", severity, "GPU memory errors on %s" % label, evidence,
                "A pending remap or retirement takes effect at the next GPU reset: drain the GPU, nvidia-smi -r -i <id> "
                "or reboot. A remapping failure, or rows/pages that keep growing, mean the board should go back to the "
                "vendor (NVIDIA, GPU memory error management: https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/)."))
    return findings


def gpu_throttled(facts, data):
    """A hardware or thermal slowdown is active, was active (the thermal counters), or the GPU sits at its thermal
    limit (idle and power-cap clocks are normal)."""
    margin = data["thermal_margin_c"]["value"]
    gpus = [g for g in facts.get("gpus", []) if g.get("throttle_active") is not None or g.get("temperature")
            or g.get("throttle_counters_us")]
    if not gpus:
        return None
    findings = []
    for gpu in gpus:
        evidence = []
        active = [r for r in gpu.get("throttle_active") or []
                  if r in ("HW Slowdown", "HW Thermal Slowdown", "HW Power Brake Slowdown", "SW Thermal Slowdown")]
        if active:
            evidence.append("Clocks event reasons active: %s" % ", ".join(gpu["throttle_active"]))
        temp = gpu.get("temperature") or {}
        current = temp.get("current")
        for key, label in (("max_operating", "GPU Max Operating Temp"), ("slowdown", "GPU Slowdown Temp")):
            if current is not None and temp.get(key) is not None and current >= temp[key] - margin:
                evidence.append("GPU Current Temp %d C, %s %d C: at its thermal limit" % (current, label, temp[key]))
                break
        if temp.get("tlimit") is not None and temp["tlimit"] <= margin:
            evidence.append("GPU T.Limit Temp %d C: %d C below the slowdown temperature" % (temp["tlimit"], temp["tlimit"]))
        counters = gpu.get("throttle_counters_us") or {}
        thermal = {k: v for k, v in counters.items() if k in ("SW Thermal Slowdown", "HW Thermal Slowdown",
                                                              "HW Power Braking") and v > 0}
        if thermal:
            evidence.append("slowed since the driver loaded: %s" % ", ".join(
                "%s %.1f s" % (k, v / 1e6) for k, v in sorted(thermal.items())))
        if evidence:
            reasons = ", ".join(active) if active else "heat"
            findings.append(_finding(
                "gpu-throttled", "warning", "%s is slowed down by %s" % (gpu.get("name") or gpu.get("pci_bus_id") or "A GPU",
                                                                         reasons),
                evidence,
                "HW/SW thermal slowdown: check cooling (fans, airflow, dust, the temperature in nvidia-smi -q -d "
                "TEMPERATURE,PERFORMANCE). HW slowdown and power brake: check the power cables and the supply (a brake "
                "is asserted by the system). Idle and SW Power Cap are normal and not reported."))
    return findings


def persistence_off(facts, data):
    """Persistence mode is off (the driver re-initialises the GPU for every client)."""
    gpus = [g for g in facts.get("gpus", []) if g.get("persistence") is not None]
    if not gpus:
        return None
    off = [g for g in gpus if g["persistence"] is False]
    if not off:
        return []
    # NVIDIA, Driver Persistence (https://docs.nvidia.com/deploy/driver-persistence/): persistence matters for headless
    # compute GPUs; with X (a display) a client keeps the driver loaded anyway. GeForce/desktop boards: info only.
    desktop = all(re.search(r"GeForce|TITAN|\bRTX \d{4}\b", g.get("name") or "") and "RTX A" not in (g.get("name") or "")
                  for g in off)
    return [_finding(
        "persistence-off", "info" if desktop else "warning", "Persistence mode is off on %d GPU(s)" % len(off),
        ["%s (%s): persistence mode off" % (g.get("name"), g.get("pci_bus_id")) for g in off],
        "Run the nvidia-persistenced service (systemctl enable --now nvidia-persistenced), so the driver keeps the GPUs "
        "initialised between jobs: each CUDA start is faster and ECC/Xid state is not lost. On a desktop with a display "
        "attached this matters less.")]


def _nvswitch_evidence(facts):
    """Lines that show NVSwitches (or an NVSwitch-only CUDA error); and lines that show none."""
    present = [e["line"] for e in facts.get("framework", []) if e["kind"] == "system-not-ready"]
    present += ["lspci: %s" % d["name"] for d in facts.get("pci_devices", []) if "NVSwitch" in (d.get("name") or "")]
    present += _kernel(facts, r"SXid|nvidia-nvswitch\d*:") or []
    present += ["%s (an SXM GPU)" % g["name"] for g in facts.get("gpus", []) if re.search(r"SXM|HGX", g.get("name") or "")]
    absent = _lines_of(_messages(facts, "fm-nothing-to-do"))
    absent += ["%s: a PCIe card without NVSwitch" % g["name"] for g in facts.get("gpus", [])
               if re.search(r"GeForce|RTX|Quadro|TITAN|\bT4\b|\bA10\b|\bL4\b|\bL40|A40|PCIe", g.get("name") or "")]
    return present, absent


def _nvlink5_hgx(facts):
    """The GPUs of these facts that sit on an NVLink5 HGX board (B200/B300 SXM modules), by the data the plan uses
    (data/compat.yml fabric_manager.nvlink5: the catalog's form and CC, GB200/GB300 NVL trays left out; see
    stack_resolver.nvlink5_system). Their NVSwitches are no PCI devices, so the model is the evidence. ``(names,
    kernel_modules)``; no names when the data cannot be read."""
    names = sorted({g["name"] for g in facts.get("gpus", []) if g.get("name")})
    if not names:
        return [], []
    try:
        # pylint: disable-next=import-outside-toplevel
        from ansible_collections.dlbox.stack.plugins.plugin_utils.compat_data import load_compat, load_gpu_index
        nvl5 = (load_compat().get("fabric_manager") or {}).get("nvlink5") or {}
        gpus = load_gpu_index().classify([{"name": name} for name in names])
    except (ImportError, OSError, ValueError, KeyError):  # CompatDataError is a ValueError
        return [], []
    hgx, trays = nvl5.get("hgx") or {}, set((nvl5.get("nvl") or {}).get("names") or [])
    found = [g["name"] for g in gpus if g.get("form") in (hgx.get("forms") or []) and g.get("catalog_name") not in trays
             and g.get("cc") and nvl5.get("cc_min") and at_least(g["cc"], nvl5["cc_min"])]
    return found, list(hgx.get("kernel_modules") or [])


def _nvlink5_modules():
    """The kernel modules NVLSM needs on NVLink5 HGX boards (data/compat.yml fabric_manager.nvlink5.hgx), [] unread."""
    try:
        # pylint: disable-next=import-outside-toplevel
        from ansible_collections.dlbox.stack.plugins.plugin_utils.compat_data import load_compat
        nvl5 = (load_compat().get("fabric_manager") or {}).get("nvlink5") or {}
    except (ImportError, OSError, ValueError, KeyError):  # CompatDataError is a ValueError
        return []
    return list((nvl5.get("hgx") or {}).get("kernel_modules") or [])


def _fabric_manager_causes(facts):
    """Findings for the causes Fabric Manager's own lines name: a Fabric Manager of another version than the loaded
    driver ("fabric manager NVIDIA GPU driver interface version X don't match with driver version Y",
    NVIDIA/gpu-driver-container#735), NVLSM without ib_umad ("umad_init: can't read ABI version ... is ib_umad module
    loaded?", siderolabs/docs#581). Either one is the fix to make first, and neither means "not needed"."""
    findings = []
    mismatch = _messages(facts, "fm-version-mismatch")
    if mismatch:
        versions = sorted({(m.get("fm"), m.get("driver")) for m in mismatch})
        fm, driver = versions[0]
        findings.append(_finding(
            "fabricmanager-version-mismatch", "error",
            "Fabric Manager %s refuses the loaded driver %s: CUDA cannot start on an NVSwitch system" % (fm, driver),
            _lines_of(mismatch),
            "Fabric Manager must be exactly the driver's version. Install nvidia-fabricmanager %s (NVIDIA's repository "
            "from R580: nvidia-fabricmanager=%s-1; before R580 and in Ubuntu's archive nvidia-fabricmanager-<branch>), "
            "with libnvidia-nscq (and libnvsdm on NVLink5 boards) of the same version, hold them with the driver "
            "(apt-mark hold) so an update cannot part them, then systemctl restart nvidia-fabricmanager. To keep Fabric "
            "Manager %s instead, install the driver of that version and reboot. dlbox.stack.nvidia_driver pins and holds "
            "them together." % (driver, driver, fm)))
    umad = _messages(facts, "nvlsm-no-umad")
    if umad:
        modules = _nvlink5_modules() or ["the ConnectX InfiniBand modules"]
        findings.append(_finding(
            "nvlsm-ib-umad-missing", "error",
            "NVLSM cannot reach the NVSwitches: ib_umad is not loaded (NVLink5 HGX board)", _lines_of(umad),
            "NVLSM, which Fabric Manager starts first on B200/B300 boards, programs the NVSwitches through the ConnectX "
            "management ports with ib_umad; without it the fabric stays In Progress and CUDA fails with error 802. "
            "Load %s now (modprobe -a %s; on Ubuntu they come with linux-modules-extra-$(uname -r)), load them at boot "
            "(/etc/modules-load.d), then systemctl restart nvidia-fabricmanager and check that nvidia-smi -q shows "
            "Fabric State Completed (NVIDIA/gpu-operator#2781). dlbox.stack.nvidia_driver loads them before Fabric "
            "Manager." % (", ".join(modules), " ".join(m for m in modules if " " not in m) or "ib_umad")))
    return findings


def fabricmanager_down(facts, data):
    """Fabric Manager is not running on an NVSwitch system (CUDA fails with error 802). Without NVSwitch evidence a
    failed Fabric Manager is reported as not needed (info): on a PCIe machine it exits with NV_WARN_NOTHING_TO_DO.
    On an NVLink5 HGX board (B200/B300) the same NV_WARN_NOTHING_TO_DO means that Fabric Manager found no NVSwitch
    management port (NVLSM missing, or the ConnectX modules not loaded): an error there, never "not needed". Where
    Fabric Manager's or NVLSM's own lines name the cause (another version than the driver's, ib_umad missing), that
    finding is given instead (:func:`_fabric_manager_causes`)."""
    causes = _fabric_manager_causes(facts)
    if causes:
        return causes
    services = facts.get("services") or {}
    fabric = services.get("nvidia-fabricmanager")
    failed = ["nvidia-fabricmanager: %s" % fabric["line"]] if fabric and fabric["state"] in ("failed", "inactive") else []
    failed += _kernel(facts, r"nv-fabricmanager\[\d+\]: .*(error|fail|don't match|not match)") or []
    nothing = _lines_of(_messages(facts, "fm-nothing-to-do"))
    not_ready = [e["line"] for e in facts.get("framework", []) if e["kind"] == "system-not-ready"]
    nvlink5, modules = _nvlink5_hgx(facts)
    if nvlink5 and (failed or nothing or not_ready):
        return [_finding(
            "fabricmanager-down", "error",
            "Fabric Manager is not running: CUDA cannot start on this NVLink5 HGX board",
            _short(["%s: an HGX board whose NVLink5 NVSwitches are no PCI devices" % ", ".join(nvlink5)]
                   + nothing + failed + not_ready),
            "On NVLink5 HGX boards (B200, B300) Fabric Manager runs with NVLSM and reaches the NVSwitches through the "
            "ConnectX management ports: load %s (on Ubuntu they come with linux-modules-extra), install nvlsm, "
            "libnvsdm and libnvidia-nscq at the driver's version beside nvidia-fabricmanager and infiniband-diags (ibstat, "
            "which its start script runs to find the management ports), then systemctl restart "
            "nvidia-fabricmanager. NV_WARN_NOTHING_TO_DO or 'Detected Pre-NVL5 system' in its journal means it found "
            "no management port; do not disable it (NVIDIA Fabric Manager User Guide, systems using fourth-generation "
            "NVSwitches; NVIDIA/gpu-operator#2781). dlbox.stack.nvidia_driver installs and loads these on such a "
            "board." % ", ".join(modules or ["the ConnectX InfiniBand modules"]))]
    present, absent = _nvswitch_evidence(facts)
    if present and not _messages(facts, "fm-nothing-to-do"):
        if not failed and not [e for e in facts.get("framework", []) if e["kind"] == "system-not-ready"]:
            return []
        return [_finding(
            "fabricmanager-down", "error", "Fabric Manager is not running: CUDA cannot start on this NVSwitch system",
            _short(present + failed),
            "Install nvidia-fabricmanager of exactly the driver's version (nvidia-fabricmanager-<branch>=<driver version>), "
            "then systemctl enable --now nvidia-fabricmanager; journalctl -u nvidia-fabricmanager says why it stopped "
            "(a version that does not match the driver is the usual cause).")]
    if failed or absent:
        return [_finding(
            "fabricmanager-not-needed", "info", "Fabric Manager is not running, and nothing shows an NVSwitch to manage",
            _short(failed + absent),
            "Fabric Manager is needed only on NVSwitch systems (HGX/DGX with SXM GPUs); on PCIe GPUs, an NVLink bridge "
            "included, it exits with NV_WARN_NOTHING_TO_DO. Disable it there: systemctl disable --now "
            "nvidia-fabricmanager (NVIDIA Fabric Manager User Guide: "
            "https://docs.nvidia.com/datacenter/tesla/fabric-manager-user-guide/).")]
    if fabric is None and facts.get("framework") is None and facts.get("messages") is None:
        return None
    return []


def imex_not_ready(facts, data):
    """IMEX is not ready on a GB200/GB300 NVL compute tray (multi-node NVLink jobs fail): a health agent's "IMEX domain
    status is DEGRADED" (linux-system-roles/hpc#85), DCGM's "IMEX daemon status is -3 (not READY)" (NVIDIA/aicr#2641),
    nvidia-imex-ctl -N's "Domain State: DEGRADED", IMEX's log ("No matching network interface found for any IP
    addresses in the node configuration file", kubernetes-sigs/dra-driver-nvidia-gpu#289; "Node configuration mapping
    mismatch")."""
    found = _messages(facts, "imex-not-ready")
    if not found:
        return [] if _searched(facts) else None
    lines = " ".join(m["line"] for m in found)
    if re.search(r"No matching network interface|Node configuration mapping mismatch", lines):
        why = ("IMEX's node list is wrong: every tray's /etc/nvidia-imex/nodes_config.cfg must list the same IP addresses "
               "in the same order, one of them this tray's own (IMEX binds to the interface that has it); IMEX reads the "
               "file only when it starts, so restart nvidia-imex on every tray after fixing it. ")
    else:
        why = ""
    return [_finding(
        "imex-not-ready", "error", "IMEX is not ready: memory sharing across the NVL domain (multi-node NVLink) fails",
        _lines_of(found),
        why + "On each compute tray: systemctl status nvidia-imex and journalctl -u nvidia-imex (IMEX aborts when the "
        "loaded driver is not its own version: nvidia-imex must be exactly the driver's version); nvidia-imex-ctl -q "
        "must print READY and nvidia-imex-ctl -N list every tray READY, connected (C) and Domain State UP; a tray not "
        "READY or not C is the one to look at (!V!: IMEX versions differ, !M!: node lists differ). Under Kubernetes "
        "with NVIDIA's DRA driver the IMEX daemons run per ComputeDomain, and a tray with none active reports this "
        "while idle (NVIDIA/aicr#2641). dlbox.stack.nvidia_driver installs IMEX at the driver's version, writes the "
        "node list from nvidia_driver_imex_nodes and waits for READY.")]


def pcie_link_degraded(facts, data):
    """A PCIe link runs narrower than it can, or slower while the GPU is busy (an idle Gen1 link is power saving)."""
    busy = data["pcie_busy_util_pct"]["value"]
    links = []
    for gpu in facts.get("gpus", []):
        if gpu.get("pcie_link"):
            links.append((gpu.get("name") or gpu.get("pci_bus_id") or "GPU", gpu["pcie_link"], gpu.get("util_pct")))
    for link in facts.get("pci_links", []):
        if link.get("nvidia") or link.get("pci_bus_id") is None:
            links.append((link.get("pci_bus_id") or "a device (lspci LnkSta)", link, None))
    if not links:
        return None
    findings = []
    for name, link, util in links:
        evidence = []
        narrower = link.get("width_downgraded") if "width_downgraded" in link else None
        if narrower is None and link.get("width_max") and link.get("width_current"):
            narrower = link["width_current"] < link["width_max"]
        if narrower:
            evidence.append("link width x%s of x%s" % (link.get("width_current"), link.get("width_max") or "?"))
        slower = link.get("gen_max") and link.get("gen_current") and link["gen_current"] < link["gen_max"]
        if slower and util is not None and util >= busy:
            evidence.append("PCIe Gen%s of Gen%s at %d%% GPU utilisation" % (link["gen_current"], link["gen_max"], util))
        if evidence:
            findings.append(_finding(
                "pcie-link-degraded", "warning", "The PCIe link of %s is degraded" % name, evidence,
                "Reseat the GPU, use a x16 slot wired for x16 (a riser or a shared slot halves it), check the BIOS slot "
                "settings (Gen and bifurcation), then read the link again under load (nvidia-smi -q -d PCIE while a job "
                "runs). A lower generation at idle is power saving, not a fault."))
    return findings


def gpu_memory_too_small(facts, data):
    """GPU memory below the threshold of data/doctor.yml."""
    gpus = [g for g in facts.get("gpus", []) if g.get("memory_mib")]
    if not gpus:
        return None
    minimum = data["min_gpu_memory_mib"]["value"]
    small = [g for g in gpus if g["memory_mib"] < minimum]
    if not small:
        return []
    return [_finding(
        "gpu-memory-too-small", "warning", "GPU memory below %d MiB" % minimum,
        ["%s: %d MiB" % (g.get("name"), g["memory_mib"]) for g in small],
        "Deep-learning training needs room for the CUDA context, the model, its gradients and activations: use a GPU "
        "with more memory, or smaller batches, mixed precision and inference-only workloads on this one.")]


def no_gpu(facts, data):
    """No NVIDIA GPU on the PCI bus, or nvidia-smi finds none."""
    evidence = []
    if facts.get("pci_seen") and not [d for d in facts.get("pci_devices", []) if d["kind"] == "gpu"]:
        evidence.append("no NVIDIA display or 3D controller in the PCI device list")
    evidence += [e["line"] for e in facts.get("smi_errors", []) if e["kind"] == "no-devices"]
    if not evidence:
        return None if not facts.get("pci_seen") and facts.get("smi_errors") is None else []
    if "nvidia-smi" in (facts.get("missing_commands") or set()):
        evidence.append("nvidia-smi is not installed")
    return [_finding(
        "no-gpu", "warning", "No NVIDIA GPU found", evidence,
        "On a GPU machine: check that the card is seated and powered and enabled in the firmware (lspci -nn | grep -i "
        "nvidia). In a container: pass the GPUs in (docker run --gpus all, with the NVIDIA Container Toolkit). On a "
        "machine without a GPU, plan a CPU-only stack.")]


# ----------------------------------------------------------------------------------------------------------------------
# containers and packages
# ----------------------------------------------------------------------------------------------------------------------

def docker_gpu_runtime_missing(facts, data):
    """Docker cannot hand out GPUs. ``docker run --gpus`` needs only nvidia-container-runtime-hook on PATH (Docker calls
    it as a prestart hook) or CDI; the 'nvidia' runtime in ``docker info`` is needed only for ``--runtime=nvidia``,
    Compose's ``driver: nvidia`` on old Docker, or a daemon.json that makes it the default."""
    evidence = [e["line"] for e in facts.get("docker_errors", [])
                if e["kind"] in ("no-gpu-device-driver", "unknown-runtime")]
    info, daemon = facts.get("docker_info"), facts.get("daemon_json")
    declared = daemon and ("nvidia" in (daemon.get("runtimes") or {}) or daemon.get("default-runtime") == "nvidia")
    if info and info.get("runtimes") is not None and "nvidia" not in info["runtimes"] and declared:
        evidence.append("docker info: Runtimes: %s (no nvidia), although daemon.json declares it: the daemon was not "
                        "restarted, or runs with another config" % " ".join(info["runtimes"]))
    missing = facts.get("missing_commands") or set()
    if "nvidia-container-runtime-hook" in missing and (info or evidence):
        evidence.append("nvidia-container-runtime-hook is not on PATH")
    if not evidence:
        if facts.get("docker_errors") is None and info is None:
            return None
        return []
    only_runtime = all(e["kind"] == "unknown-runtime" for e in facts.get("docker_errors", [])) and not declared
    if only_runtime and _messages(facts, "docker-gpus") and (facts.get("smi") or {}).get("driver_version"):
        return [_finding(
            "docker-gpu-runtime-missing", "warning", "The 'nvidia' runtime is not registered with Docker (--runtime=nvidia "
            "fails), but docker run --gpus works", _short(evidence + _lines_of(_messages(facts, "docker-gpus"), 1)),
            "Nothing is broken for --gpus: it needs only nvidia-container-runtime-hook. Use --gpus all instead of "
            "--runtime=nvidia, or register the runtime: nvidia-ctk runtime configure --runtime=docker, then restart "
            "Docker (NVIDIA Container Toolkit install guide).")]
    return [_finding(
        "docker-gpu-runtime-missing", "error", "Docker cannot give the container GPUs (the NVIDIA Container Toolkit "
        "is missing or not configured)", _short(evidence),
        "Install nvidia-container-toolkit: it puts nvidia-container-runtime-hook on PATH, which docker run --gpus needs, "
        "then restart Docker (systemctl restart docker). For --runtime=nvidia or a daemon.json default runtime, also run "
        "nvidia-ctk runtime configure --runtime=docker and restart Docker; rootless Docker: nvidia-ctk runtime configure "
        "--runtime=docker --config=$HOME/.config/docker/daemon.json. CDI instead: nvidia-ctk cdi generate "
        "--output=/etc/cdi/nvidia.yaml and docker run --device nvidia.com/gpu=all (NVIDIA Container Toolkit install "
        "guide). The nvidia_container_toolkit role does all of this.")]


def nvml_unknown_error_in_container(facts, data):
    """'Failed to initialize NVML: Unknown Error' inside a container: its device access was lost."""
    evidence = [e["line"] for e in facts.get("smi_errors", []) if e["kind"] == "nvml-unknown-error"]
    if not evidence:
        return None if facts.get("smi_errors") is None else []
    return [_finding(
        "nvml-unknown-error-in-container", "error", "The container lost access to its GPUs (NVML: Unknown Error)",
        evidence,
        "Under systemd cgroup management a systemctl daemon-reload on the host drops the container's device rules "
        "(NVIDIA's notice, NVIDIA/nvidia-container-toolkit#48). Recreate the container; to prevent it, run "
        "nvidia-ctk system create-dev-char-symlinks --create-all (and its udev rule), or use CDI "
        "(nvidia-ctk cdi generate, --device nvidia.com/gpu=all), or cgroupfs as Docker's cgroup driver.")]


def nvidia_docker2_legacy(facts, data):
    """A legacy package (nvidia-docker2) is installed."""
    packages = facts.get("dpkg")
    if packages is None:
        return None
    findings = []
    for legacy in data["legacy_packages"]:
        entry = packages.get(legacy["name"])
        if entry and entry["state"].startswith(("ii", "hi")):
            findings.append(_finding(
                "nvidia-docker2-legacy", "warning", "%s is installed (deprecated)" % legacy["name"],
                ["dpkg: %s %s %s" % (entry["state"], legacy["name"], entry["version"])],
                "Replace it with %s: apt-get install %s && apt-get purge %s, then nvidia-ctk runtime configure "
                "--runtime=docker and restart Docker (the nvidia_container_toolkit role migrates it)."
                % (legacy["replacement"], legacy["replacement"], legacy["name"])))
    return findings


def held_packages_missing(facts, data):
    """The driver packages are installed but not held: an upgrade can swap the libraries under the loaded module."""
    packages = facts.get("dpkg")
    if packages is None:
        return None
    patterns = [re.compile(p) for p in data["driver_package_patterns"]["patterns"]]
    holds = facts.get("holds")
    driver = {name: entry for name, entry in packages.items()
              if entry["state"][1:2] == "i" and any(p.search(name) for p in patterns)}
    if not driver:
        return []
    unheld = sorted(name for name, entry in driver.items()
                    if not entry["state"].startswith("h") and not (holds and name in holds))
    if not unheld:
        return []
    return [_finding(
        "held-packages-missing", "warning", "The NVIDIA driver packages are not held",
        ["dpkg: %s %s (not held)" % (driver[name]["state"], name) for name in unheld],
        "apt-mark hold %s — and unhold them only for a planned driver change (followed by a reboot). The nvidia_driver "
        "role holds them." % " ".join(unheld))]


def k8s_gpu_unschedulable(facts, data):
    """Kubernetes finds no allocatable nvidia.com/gpu for a pod."""
    lines = facts.get("kubernetes")
    if lines is None:
        return None
    if not lines:
        return []
    return [_finding(
        "k8s-gpu-unschedulable", "error", "Kubernetes has no allocatable nvidia.com/gpu for the pod", _short(lines),
        "The node advertises no GPUs: check kubectl describe node <node> (Capacity/Allocatable nvidia.com/gpu), that the "
        "NVIDIA device plugin (or the GPU Operator) runs on the node, and that the node's container runtime has the "
        "NVIDIA runtime (containerd: nvidia-ctk runtime configure --runtime=containerd). If GPUs are listed, they are "
        "all in use.")]


# ----------------------------------------------------------------------------------------------------------------------
# errors users paste (issue 46): the container toolkit, CUDA's error codes, a lost or uninitialised GPU, PCIe, memory,
# libraries, shared memory, environments. Each reads the messages of doctor_captures._MESSAGES.
# ----------------------------------------------------------------------------------------------------------------------

def _message_rule(facts, kinds, finding):
    """[finding(evidence)] when messages of those kinds exist; [] when captures were read; None when none was."""
    found = _messages(facts, *kinds)
    if found:
        return [finding(_lines_of(found))]
    return [] if _searched(facts) else None


def container_cgroup_device_rules(facts, data):
    """nvidia-container-cli could not add the GPU device rules to the container's cgroup (cgroup v2 eBPF)."""
    def finding(evidence):
        if facts.get("cgroup_version"):
            evidence.append("cgroup filesystem: v%d" % facts["cgroup_version"])
        if (facts.get("ctk_config") or {}).get("no-cgroups"):
            evidence.append("config.toml: no-cgroups = %s" % facts["ctk_config"]["no-cgroups"])
        return _finding(
            "container-cgroup-device-rules", "error", "The container toolkit could not add the GPUs to the container's "
            "cgroup (cgroup v2 device rules)", evidence,
            "Under cgroup v2 the legacy nvidia-container-cli edits the container's eBPF device program; it fails inside "
            "LXC/unprivileged or rootless setups and with some runc versions. Update the NVIDIA Container Toolkit (recent "
            "releases no longer update the eBPF programs: NVIDIA/nvidia-container-toolkit#139), or use CDI (nvidia-ctk cdi "
            "generate --output=/etc/cdi/nvidia.yaml; docker run --device nvidia.com/gpu=all). Rootless or inside LXC: set "
            "no-cgroups = true under [nvidia-container-cli] in /etc/nvidia-container-runtime/config.toml and pass the "
            "/dev/nvidia* devices yourself (NVIDIA Container Toolkit install guide, rootless setup).")
    return _message_rule(facts, ("ctk-cgroup-device-rules",), finding)


def container_driver_libraries_not_found(facts, data):
    """nvidia-container-cli found no driver library (libnvidia-ml.so.1) on the host."""
    def finding(evidence):
        return _finding(
            "container-driver-libraries-not-found", "error", "The container toolkit finds no NVIDIA driver libraries "
            "on the host", evidence,
            "nvidia-container-cli looks the driver's libraries up in the host's ldconfig cache: install the driver (its "
            "user-space part: libnvidia-compute-<branch> on Ubuntu, libnvidia-ml1/libcuda1 on Debian, nvidia-driver "
            "elsewhere), run ldconfig, and check with ldconfig -p | grep libnvidia-ml. Docker Desktop or a VM without "
            "the GPU passed through has no host driver to find. NVIDIA's k8s-device-plugin ('could not load NVML "
            "library', 'ERROR_LIBRARY_NOT_FOUND') gets the libraries only through the NVIDIA runtime: make nvidia the "
            "default runtime of containerd/CRI-O (nvidia-ctk runtime configure --runtime=containerd --set-as-default) or "
            "give the plugin's pod runtimeClassName: nvidia (k8s-device-plugin README, prerequisites).")
    return _message_rule(facts, ("ctk-load-library",), finding)


def container_driver_file_exists(facts, data):
    """The image already holds a driver library the toolkit mounts (libnvidia-ml.so.1: file exists)."""
    def finding(evidence):
        return _finding(
            "container-driver-file-exists", "error", "The container image already holds the NVIDIA driver's libraries "
            "('file exists')", evidence,
            "nvidia-container-cli mounts the host driver's libraries (libnvidia-ml.so.1, libcuda.so.1) into the "
            "container and fails when the image already has a file there: an image that installed a driver or "
            "libnvidia-* package, or that was committed from a running GPU container (lambdal/lambda-stack-dockerfiles#15). "
            "Rebuild the image without driver packages (use CUDA's nvidia/cuda base images, which carry none), or delete "
            "the files in the Dockerfile. Under WSL2 the same error comes from libraries copied from /usr/lib/wsl/lib "
            "into the image (NVIDIA/nvidia-container-toolkit#289): remove them from the image.")
    return _message_rule(facts, ("ctk-file-exists",), finding)


def cuda_out_of_memory(facts, data):
    """The GPU's memory is full: the framework or NCCL could not allocate."""
    def finding(evidence):
        return _finding(
            "cuda-out-of-memory", "error", "The GPU ran out of memory (CUDA out of memory)", evidence,
            "The job asked for more GPU memory than was free. nvidia-smi shows what else holds memory (another job, a "
            "stale process: kill it). Lower the batch size or sequence length, use mixed precision, gradient "
            "checkpointing or accumulation; with much 'reserved but unallocated' memory set "
            "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (PyTorch, CUDA memory management). An NCCL 'Cuda failure "
            "out of memory' is the same: NCCL's buffers did not fit beside the model.")
    return _message_rule(facts, ("cuda-oom",), finding)


def cuda_forward_compat_unsupported(facts, data):
    """CUDA error 804: the forward-compatibility libcuda (cuda-compat) runs on a GPU that does not support it."""
    def finding(evidence):
        smi = facts.get("smi") or {}
        if smi.get("driver_version") and smi.get("cuda_version"):
            evidence.append("nvidia-smi: driver %s reports CUDA %s (a cuda-compat libcuda is loaded when this exceeds "
                            "what the driver branch supports)" % (smi["driver_version"], smi["cuda_version"]))
        return _finding(
            "cuda-forward-compat-unsupported", "error", "CUDA forward compatibility (cuda-compat) on a GPU that does "
            "not support it (CUDA error 804)", evidence,
            "Forward compatibility (the cuda-compat package, /usr/local/cuda/compat on LD_LIBRARY_PATH, which NVIDIA's "
            "CUDA images use when the driver is older than the image's CUDA) works only on data center GPUs and a few "
            "NGC-ready RTX boards (NVIDIA, CUDA Compatibility). On GeForce and most workstation GPUs: upgrade the driver "
            "to a branch that supports the application's CUDA, or run an image or framework built for the driver's "
            "CUDA, and take the compat folder off LD_LIBRARY_PATH.")
    return _message_rule(facts, ("cuda-804",), finding)


def cuda_driver_combination_unsupported(facts, data):
    """CUDA error 803: the libcuda found does not match the loaded kernel module."""
    def finding(evidence):
        return _finding(
            "cuda-driver-combination-unsupported", "error", "The CUDA driver library does not match the loaded kernel "
            "module (CUDA error 803)", evidence,
            "CUDA loaded a libcuda of another driver version than the kernel module: a driver upgraded without a reboot, "
            "a cuda-compat or leftover libcuda earlier on LD_LIBRARY_PATH or in the ldconfig cache. Compare "
            "cat /proc/driver/nvidia/version with ldconfig -p | grep libcuda and echo $LD_LIBRARY_PATH; reboot after a "
            "driver upgrade, remove the stray libcuda (or /usr/local/cuda/compat from LD_LIBRARY_PATH).")
    return _message_rule(facts, ("cuda-803",), finding)


def cuda_unknown_error(facts, data):
    """CUDA error 999 / 'CUDA unknown error': typically nvidia_uvm after suspend and resume, or /dev/nvidia-uvm missing."""
    def finding(evidence):
        nodes = facts.get("dev_nvidia")
        if nodes is not None and "nvidia-uvm" not in nodes:
            evidence.append("/dev/nvidia-uvm is missing (ls -l /dev/nvidia*: %s)" % (", ".join(nodes) or "none"))
        return _finding(
            "cuda-unknown-error", "error", "CUDA fails with 'unknown error' (999)", evidence,
            "Most often the unified-memory module lost its state across suspend and resume: stop the GPU programs, "
            "then rmmod nvidia_uvm && modprobe nvidia_uvm (or reboot); enable nvidia-suspend.service, "
            "nvidia-resume.service and NVreg_PreserveVideoMemoryAllocations=1 so it survives the next suspend. "
            "If /dev/nvidia-uvm is missing, create it: nvidia-modprobe -u -c 0. The message's hint about "
            "CUDA_VISIBLE_DEVICES is rarely the cause.")
    return _message_rule(facts, ("cuda-999",), finding)


def gpu_lost(facts, data):
    """The GPU fell off the bus or NVML lost its handle (Xid 79, 'Unable to determine the device handle')."""
    found = _lines_of(_messages(facts, "gpu-lost"))
    found += _kernel(facts, r"NVRM: Xid \([^)]*\): 79\b") or []
    if not found:
        return [] if _searched(facts) else None
    return [_finding(
        "gpu-lost", "error", "A GPU is lost: it fell off the bus or no longer answers", _short(list(dict.fromkeys(found))),
        "The GPU stopped answering on PCIe: power (PSU, the 8-pin/12VHPWR cables), heat, seating or the slot/riser. "
        "Cold-boot the machine (power off, not a reboot) to get it back; check the power cables, reseat the card, "
        "look for PCIe AER errors before the loss and the temperature under load; on repeated losses try another slot "
        "and limit power (nvidia-smi -pl). NVIDIA's catalog: Xid 79, immediate action RESTART_BM.")]


def gpu_init_failed(facts, data):
    """The driver could not initialise the GPU (RmInitAdapter failed); when the GSP did not start, gsp-init-failed
    reports it with these lines instead."""
    if _messages(facts, "gsp-init"):
        return []

    def finding(evidence):
        return _finding(
            "gpu-init-failed", "error", "The driver could not initialise a GPU (RmInitAdapter failed)", evidence,
            "The kernel log lines around it name the step (GSP firmware, memory training, a timeout). Check that the "
            "GPU is supported by the installed branch, that its power cables are connected, the firmware settings "
            "(Above 4G decoding and Resizable BAR for large-memory GPUs, the PCIe slot generation), then reseat the card. "
            "In a VM: the GPU passthrough (IOMMU group, the host's vfio binding).")
    return _message_rule(facts, ("rm-init-adapter",), finding)


def gsp_init_failed(facts, data):
    """The GPU System Processor (GSP) firmware did not start."""
    def finding(evidence):
        return _finding(
            "gsp-init-failed", "error", "The GPU's GSP firmware did not start", evidence,
            "The driver could not boot the GPU System Processor: update to a current driver of the branch (GSP firmware "
            "ships with it, /lib/firmware/nvidia/<version>/), or with the proprietary modules on Turing/Ampere set "
            "NVreg_EnableGpuFirmware=0 to run without GSP (the open modules need it). 'failed to wait for GFW boot' "
            "points at the board itself (power, VBIOS): cold-boot, reseat, check the power cables.")
    found = _messages(facts, "gsp-init")
    if found:
        result = finding(_lines_of(found) + _lines_of(_messages(facts, "rm-init-adapter"), 1))
        wpr2 = _kernel(facts, r"WPR2 already up") or []
        if wpr2:
            result["evidence"] = _short(wpr2, 1) + result["evidence"]
            result["fix"] = ("'WPR2 already up': the GPU kept the state of an earlier boot of its GSP (after a driver "
                             "unload, a crash or a warm reboot), as the driver says ('the GPU is likely in a bad state "
                             "and may need to be reset'). Reset the GPU (nvidia-smi -r -i <index> with nothing on it, or "
                             "echo 1 > /sys/bus/pci/devices/<bus>/reset), or cold-boot the machine with power removed; "
                             "a warm reboot may not clear it. If it comes back after a clean cold boot, update the driver.")
        return [result]
    return [] if _searched(facts) else None


def gsp_rpc_timeout(facts, data):
    """The driver timed out waiting for the GSP (Xid 119, _kgspRpcRecvPoll, heartbeat timeouts)."""
    found = _lines_of(_messages(facts, "gsp-timeout"))
    if not found:
        return [] if _searched(facts) else None
    return [_finding(
        "gsp-rpc-timeout", "error", "The driver timed out waiting for the GPU's GSP firmware", found,
        "Reset the GPU (nvidia-smi -r with no process on it) or reboot: NVIDIA's catalog gives Xid 119 the immediate "
        "action RESET_GPU. When it repeats: update the driver (GSP timeouts were fixed in several branches), and with the "
        "proprietary modules on Turing/Ampere try NVreg_EnableGpuFirmware=0; check the GPU's power and temperature.")]


def pcie_aer_errors(facts, data):
    """PCIe Advanced Error Reporting on the GPU or its root port (kernel log, or the AER counters in sysfs)."""
    found = _messages(facts, "aer")
    counters = [c for c in facts.get("aer_counters", []) if c["count"] > 0]
    if not found and not counters:
        if facts.get("aer_counters") is not None or _searched(facts):
            return []
        return None
    gpu_found = _aer_on_gpu(facts, found)
    if found and not gpu_found and not counters:
        return [_aer_other_device(found)]
    found = gpu_found
    fatal = [m for m in found if re.search(r"Uncorrect|can't recover|recovery failed|Fatal", m["line"])]
    fatal_counts = [c for c in counters if c["key"] != "TOTAL_ERR_COR"]
    shown = sorted(fatal or found, key=lambda m: "PCIe Bus Error" not in m["line"])
    evidence = (_lines_of(shown) if shown else []) + [
        "%s: %s %d" % (c["pci_bus_id"] or "a device", c["key"], c["count"]) for c in counters][:3]
    fatal = fatal or fatal_counts
    return [_finding(
        "pcie-aer-errors", "error" if fatal else "warning",
        "PCIe errors on the GPU or its root port (%s)" % ("uncorrected" if fatal else "corrected"), _short(evidence, 4),
        "Uncorrected errors stop the GPU (often before Xid 79); corrected errors repeating by the hundred slow it and "
        "announce the same. Reseat the GPU, remove risers and extenders, try another slot, set the slot to a lower PCIe "
        "generation in the firmware, and check the power cables. Counters: /sys/bus/pci/devices/<bus>/aer_dev_*. "
        "pcie_aspm=off helps when the errors come from link power saving.")]


_AER_DEVICE_RE = re.compile(r"(?:^|\]\s*|kernel:\s*)(?P<driver>[\w-]+) (?P<addr>[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7])[: ]")
_AER_SOURCE_RE = re.compile(r"received: (?P<addr>[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7])")


def _gpu_addresses(facts):
    """PCI addresses of the NVIDIA GPUs the captures show (nvidia-smi, lspci, the kernel log's nvidia/NVRM lines)."""
    found = set()
    for item in list(facts.get("gpus", [])) + list(facts.get("pci_devices", [])):
        if item.get("pci_bus_id") and (item.get("kind", "gpu") == "gpu"):
            found.add(item["pci_bus_id"].lower()[-12:])
    for line in facts.get("kernel_lines") or []:
        for match in re.finditer(r"(?:\bnvidia |NVRM: GPU (?:at )?(?:PCI:)?)(?P<addr>[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7])",
                                 line, re.I):
            found.add(match.group("addr").lower())
    return found


def _aer_on_gpu(facts, found):
    """The AER messages about an NVIDIA device: vendor 10de, the nvidia driver, a GPU's address, or a port whose
    error came from a GPU (PCI Express AER, Documentation/PCI/pcieaer-howto.rst: 'received: <source id>')."""
    gpus = _gpu_addresses(facts)
    lines = facts.get("kernel_lines") or []
    for line in lines:
        match = _AER_SOURCE_RE.search(line)
        device = _AER_DEVICE_RE.search(line)
        if match and device and match.group("addr") in gpus:
            gpus.add(device.group("addr"))  # the port above a GPU
    result = []
    for message in found:
        line = message["line"]
        device = _AER_DEVICE_RE.search(line)
        nvidia = bool(device) and (device.group("driver") == "nvidia" or device.group("addr") in gpus)
        if nvidia or re.search(r"\[10de:[0-9a-f]{4}\]", line):
            result.append(message)
    if result:  # the ports of the same capture: the kernel reports a GPU's error through the port above it
        result += [m for m in found if m not in result and
                   re.search(r"\bpcieport ", m["line"])]
    return result


def _aer_other_device(found):
    devices = []
    for message in found:
        device = _AER_DEVICE_RE.search(message["line"])
        name = "%s %s" % (device.group("driver"), device.group("addr")) if device else None
        if name and name not in devices:
            devices.append(name)
    return _finding(
        "pcie-aer-other-device", "warning", "PCIe errors on a device the captures do not show as an NVIDIA GPU (%s)" % (
            ", ".join(devices) or "unnamed"), _lines_of(found, 4),
        "These AER messages name no NVIDIA device (vendor 10de, the nvidia driver, a GPU's address or the port above "
        "one): they are not the GPU's. Look at that device (an NVMe, a SATA or network controller, its root port): "
        "reseat it, update its firmware, or pcie_aspm=off when they come from link power saving. If a GPU sits behind "
        "that port, add lspci -tv to the captures so the doctor can tell.")


def ecc_uncorrectable(facts, data):
    """An uncorrectable ECC error, seen from a framework or in nvidia-smi's volatile counters."""
    found = _lines_of(_messages(facts, "ecc-uncorrectable"))
    counted = ["%s: %d uncorrectable ECC error(s) since the driver loaded" % (
        g.get("name") or g.get("pci_bus_id") or "GPU", g["ecc_uncorrectable"]["volatile"])
        for g in facts.get("gpus", []) if (g.get("ecc_uncorrectable") or {}).get("volatile")]
    if not found and not counted:
        return [] if _searched(facts) else None
    return [_finding(
        "ecc-uncorrectable", "error", "An uncorrectable GPU memory (ECC) error", found + counted,
        "Stop the job and read the GPU's memory state: nvidia-smi -q -d ECC,ROW_REMAPPER,PAGE_RETIREMENT (a pending row "
        "remap or page retirement takes effect at the next GPU reset: nvidia-smi -r -i <id>, or reboot). Run the job on "
        "another GPU meanwhile; if the uncorrectable count or the remapped rows keep growing, or 'Remapping Failure "
        "Occurred: Yes', the board goes back to the vendor (NVIDIA, GPU memory error management).")]


def shm_too_small(facts, data):
    """The DataLoader's workers ran out of shared memory (/dev/shm; Docker gives 64 MB)."""
    minimum = data["min_shm_mib"]["value"]
    found = _lines_of(_messages(facts, "shm"))
    shm = facts.get("shm_mib")
    # a small /dev/shm matters where deep learning runs: a GPU, or PyTorch, seen on the machine
    deep_learning = facts.get("gpus") or [d for d in facts.get("pci_devices", []) if d["kind"] == "gpu"] or [
        p for p in facts.get("framework_probe", []) if p["line"].lower().startswith("torch")]
    small = shm and shm["mib"] is not None and shm["mib"] < minimum and deep_learning
    if small:
        found.append("/dev/shm is %d MiB (df: %s)" % (shm["mib"], shm["line"]))
    if not found:
        return [] if (shm or _searched(facts)) else None
    return [_finding(
        "shm-too-small", "error" if _messages(facts, "shm") else "warning",
        "Shared memory (/dev/shm) too small for the DataLoader's workers", found,
        "PyTorch's DataLoader workers pass batches through /dev/shm; Docker gives a container 64 MB. Start the "
        "container with --shm-size=16g (or --ipc=host); Kubernetes: mount an emptyDir with medium: Memory at /dev/shm; "
        "otherwise lower num_workers or the batch size. On a host, /dev/shm is half the RAM by default.")]


def libcuda_missing(facts, data):
    """libcuda.so.1 (the driver's CUDA library) cannot be loaded: a container started without GPUs, or no driver."""
    def finding(evidence):
        return _finding(
            "libcuda-missing", "error", "libcuda.so.1 (the driver's CUDA library) is missing", evidence,
            "libcuda.so.1 comes with the driver, not with CUDA or the framework. In a container the NVIDIA Container "
            "Toolkit mounts it only when the container gets GPUs: docker run --gpus all (Compose: deploy.resources."
            "reservations.devices with capabilities: [gpu]; Kubernetes: a nvidia.com/gpu limit), with "
            "NVIDIA_DRIVER_CAPABILITIES including compute. On the host: install the driver's compute libraries "
            "(libnvidia-compute-<branch>, libcuda1). Do not copy the toolkit's stubs/libcuda.so in its place.")
    return _message_rule(facts, ("libcuda-missing",), finding)


def cuda_libraries_missing(facts, data):
    """cuDNN, NVRTC or another CUDA library cannot be loaded."""
    def finding(evidence):
        if any(re.search(r"libnvJitLink", line) for line in evidence):
            return _finding(
                "cuda-libraries-missing", "error", "A CUDA library cannot be loaded: libnvJitLink (CUDA 12's JIT linker)",
                evidence,
                "CUDA 12's libcusparse and libcusolver need libnvJitLink.so.12 of the same or a newer CUDA 12 minor "
                "release. Install it beside them: pip install nvidia-nvjitlink-cu12 (matching the nvidia-cusparse-cu12 "
                "wheel's CUDA) or apt install cuda-nvjitlink-12-<minor>; with a system CUDA, put its lib64 on the loader "
                "path (ldconfig -p | grep nvJitLink shows what is found). 'undefined symbol __nvJitLink...' means an "
                "older nvJitLink is found first: remove it from LD_LIBRARY_PATH.")
        return _finding(
            "cuda-libraries-missing", "error", "A CUDA library (cuDNN, NVRTC...) cannot be loaded", evidence,
            "The library is not on the loader's path. PyTorch wheels bring their own (nvidia-cudnn-cu12, "
            "nvidia-cuda-nvrtc-cu12): reinstall torch from its index, and do not point LD_LIBRARY_PATH at another CUDA. "
            "Other frameworks (ONNX Runtime, CTranslate2, TensorFlow) need the cuDNN and CUDA of their build: pip install "
            "the matching nvidia-cudnn-cuXX / nvidia-cuda-nvrtc-cuXX, or apt install the libcudnn and cuda-nvrtc packages "
            "of that CUDA; ldconfig -p | grep -E 'cudnn|nvrtc' shows what the loader finds.")
    return _message_rule(facts, ("cuda-library-missing",), finding)


def libcuda_stub_shadowed(facts, data):
    """The CUDA toolkit's stub libcuda (or a compat copy) shadows the driver's: LD_LIBRARY_PATH or the ldconfig cache."""
    evidence = _lines_of(_messages(facts, "stub-library"))
    evidence += ["ldconfig: %s => %s" % (e["lib"], e["path"]) for e in facts.get("ldconfig", [])
                 if e["lib"].startswith("libcuda.so") and re.search(r"/stubs?/", e["path"])]
    path = (facts.get("env") or {}).get("LD_LIBRARY_PATH") or ""
    evidence += ["LD_LIBRARY_PATH holds %s" % part for part in path.split(":") if re.search(r"/stubs/?$", part)]
    if not evidence:
        if facts.get("ldconfig") is None and facts.get("env") is None and not _searched(facts):
            return None
        return []
    return [_finding(
        "libcuda-stub-shadowed", "error", "The CUDA toolkit's stub libcuda is loaded instead of the driver's",
        _short(evidence, 4),
        "lib64/stubs/libcuda.so only satisfies the linker at build time; at run time it answers every call with "
        "CUDA_ERROR_STUB_LIBRARY (34). Take the stubs folder off LD_LIBRARY_PATH and out of /etc/ld.so.conf.d (then "
        "ldconfig), so the driver's libcuda.so.1 is found first.")]


def cuda_visible_devices_no_gpu(facts, data):
    """CUDA_VISIBLE_DEVICES names no GPU of the machine (or the framework sees none)."""
    env = facts.get("env") or {}
    evidence = _lines_of(_messages(facts, "no-cuda-gpus"))
    value = env.get("CUDA_VISIBLE_DEVICES")
    count = len(facts.get("gpus") or [])
    if value is not None:
        names = [v.strip() for v in value.split(",") if v.strip()]
        if not names or names[0] in ("-1", "none", "NoDevFiles", "void"):
            evidence.append("CUDA_VISIBLE_DEVICES=%s hides every GPU" % value)
        elif count and all(n.isdigit() and int(n) >= count for n in names):
            evidence.append("CUDA_VISIBLE_DEVICES=%s but the machine has %d GPU(s), numbered from 0" % (value, count))
        elif evidence:
            evidence.append("CUDA_VISIBLE_DEVICES=%s" % value)
    if not evidence:
        return [] if (env or _searched(facts)) else None
    return [_finding(
        "cuda-visible-devices-no-gpu", "error", "The program sees no GPU (CUDA_VISIBLE_DEVICES, or no GPU given)", evidence,
        "CUDA numbers the visible GPUs from 0 after CUDA_VISIBLE_DEVICES filters them: a script that sets "
        "os.environ['CUDA_VISIBLE_DEVICES'] = '3' on a one-GPU machine, or a launcher that exports an index the machine "
        "lacks, leaves no GPU. Unset it or give indices that exist (nvidia-smi -L), and set it before the first CUDA call. "
        "In a container, also check that it got GPUs (--gpus all).")]


def cuda_toolkit_mismatch(facts, data):
    """The CUDA toolkit (nvcc) differs from the CUDA the framework was built with (conda's cudatoolkit beside a system
    toolkit is the usual cause)."""
    found = _messages(facts, "toolkit-mismatch")
    evidence = ["%s (nvcc: CUDA %s, PyTorch: CUDA %s)" % (m["line"], m["nvcc"], m["torch"]) for m in found]
    releases = facts.get("nvcc_releases") or []
    for probe in facts.get("framework_probe", []):
        cuda = probe.get("cuda")
        if cuda and cuda != "None" and len(releases) == 1 and releases[0].split(".")[0] != cuda.split(".")[0]:
            evidence.append("%s, but nvcc is CUDA %s" % (probe["line"], releases[0]))
    if not evidence:
        return [] if (releases or _searched(facts)) else None
    return [_finding(
        "cuda-toolkit-mismatch", "error" if found else "warning",
        "The CUDA toolkit that builds extensions differs from the framework's CUDA", _short(evidence),
        "conda's cudatoolkit (or pip's nvidia-* wheels) gives PyTorch its CUDA runtime but no nvcc, so an extension "
        "build picks the system's /usr/local/cuda. Install the nvcc of the framework's CUDA in the environment "
        "(conda install -c nvidia cuda-nvcc=<X.Y>, or pip install nvidia-cuda-nvcc-cu<X>) and set CUDA_HOME to it, or "
        "install the framework build for the system's CUDA. The same major version is enough for PyTorch's check.")]


def pcie_acs_enabled(facts, data):
    """PCIe ACS redirects peer-to-peer traffic through the root complex: NCCL hangs or crawls (IOMMU likewise)."""
    acs = facts.get("acs")
    if acs is None:
        return None
    enabled = [a for a in acs if a["enabled"]]
    if not enabled:
        return []
    evidence = ["%d of %d bridges have ACS on" % (len(enabled), len(acs))] + _lines_of(enabled, 2)
    params = (facts.get("cmdline") or {}).get("params") or {}
    if params.get("intel_iommu") == "on" or params.get("amd_iommu") == "on":
        if params.get("iommu") != "pt":
            evidence.append("/proc/cmdline: IOMMU on without iommu=pt")
    return [_finding(
        "pcie-acs-enabled", "warning", "PCIe ACS is enabled on bridges: GPU peer-to-peer goes through the root complex",
        evidence,
        "With ACS redirecting (SrcValid+/ReqRedir+/CmpltRedir+), P2P traffic between GPUs is forced up to the root "
        "complex: NCCL hangs or runs slowly (NVIDIA, NCCL troubleshooting: PCI Access Control Services). Disable ACS in "
        "the firmware, or per bridge with setpci -s <bridge> ECAP_ACS+0x6.w=0000 (lost at reboot); check with "
        "NCCL_P2P_DISABLE=1 that P2P is the cause. With an IOMMU on, boot with iommu=pt. Keep ACS where VMs need "
        "isolated IOMMU groups.")]


def cuda_compat_rules():
    """(id, rule, needs) rows of the rules above, in report order."""
    return (
        ("container-cgroup-device-rules", container_cgroup_device_rules, "any capture (a container error)"),
        ("container-driver-libraries-not-found", container_driver_libraries_not_found, "any capture (a container error)"),
        ("container-driver-file-exists", container_driver_file_exists, "any capture (a container error)"),
        ("cuda-out-of-memory", cuda_out_of_memory, "any capture (a framework or NCCL error)"),
        ("cuda-forward-compat-unsupported", cuda_forward_compat_unsupported, "any capture (a CUDA error)"),
        ("cuda-driver-combination-unsupported", cuda_driver_combination_unsupported, "any capture (a CUDA error)"),
        ("cuda-unknown-error", cuda_unknown_error, "any capture (a CUDA error)"),
        ("gpu-lost", gpu_lost, "any capture (nvidia-smi's error or the kernel log)"),
        ("gpu-init-failed", gpu_init_failed, "the kernel log"),
        ("gsp-init-failed", gsp_init_failed, "the kernel log"),
        ("gsp-rpc-timeout", gsp_rpc_timeout, "the kernel log"),
        ("pcie-aer-errors", pcie_aer_errors, "the kernel log or the AER counters"),
        ("ecc-uncorrectable", ecc_uncorrectable, "a framework error or nvidia-smi -q -d ECC"),
        ("shm-too-small", shm_too_small, "a DataLoader error or df /dev/shm"),
        ("libcuda-missing", libcuda_missing, "any capture (an import error)"),
        ("cuda-libraries-missing", cuda_libraries_missing, "any capture (a loader error)"),
        ("libcuda-stub-shadowed", libcuda_stub_shadowed, "ldconfig -p, env or a CUDA error"),
        ("cuda-visible-devices-no-gpu", cuda_visible_devices_no_gpu, "env or a framework error"),
        ("cuda-toolkit-mismatch", cuda_toolkit_mismatch, "a build error, or nvcc with a framework probe"),
        ("pcie-acs-enabled", pcie_acs_enabled, "lspci -vvv (ACSCtl)"),
    )


RULES = (
    ("driver-library-mismatch", driver_library_mismatch, "nvidia-smi output or its error, or the kernel log"),
    ("driver-not-loaded", driver_not_loaded, "nvidia-smi output or its error, the kernel log, or lsmod with lspci"),
    ("nouveau-loaded", nouveau_loaded, "lsmod, the kernel log or lspci -vv"),
    ("secure-boot-module-rejected", secure_boot_module_rejected, "modprobe errors or the kernel log"),
    ("dkms-not-built-for-kernel", dkms_not_built_for_kernel, "dkms status with uname -r (or a dkms build log)"),
    ("open-modules-unsupported-gpu", open_modules_unsupported_gpu, "the kernel log"),
    ("gsp-firmware-missing", gsp_firmware_missing, "the kernel log"),
    ("cuda-path-conflict", cuda_path_conflict, "nvcc --version or env"),
    ("framework-cuda-too-new-for-driver", framework_cuda_too_new_for_driver, "a torch/TensorFlow probe or traceback"),
    ("no-kernel-image-for-device", no_kernel_image_for_device, "a torch/TensorFlow probe or traceback"),
    ("framework-cpu-only-build", framework_cpu_only_build, "a torch probe or python -m torch.utils.collect_env"),
    ("xid-error", xid_error, "the kernel log (dmesg / journalctl -k)"),
    ("ecc-retired-or-remapped", ecc_retired_or_remapped, "nvidia-smi -q or -q -x"),
    ("gpu-throttled", gpu_throttled, "nvidia-smi -q or -q -x"),
    ("persistence-off", persistence_off, "nvidia-smi, -q, -q -x or --query-gpu with persistence_mode"),
    ("fabricmanager-down", fabricmanager_down, "systemctl status nvidia-fabricmanager or a CUDA probe"),
    ("imex-not-ready", imex_not_ready, "any capture (IMEX's status, nvidia-imex-ctl -N or a health check)"),
    ("pcie-link-degraded", pcie_link_degraded, "nvidia-smi -q (-x) or lspci -vv"),
    ("gpu-memory-too-small", gpu_memory_too_small, "nvidia-smi, -q, -q -x or --query-gpu with memory.total"),
    ("no-gpu", no_gpu, "lspci or the PCI device list, or nvidia-smi"),
    ("docker-gpu-runtime-missing", docker_gpu_runtime_missing, "docker info or a docker run error"),
    ("nvml-unknown-error-in-container", nvml_unknown_error_in_container, "nvidia-smi output or its error"),
    ("nvidia-docker2-legacy", nvidia_docker2_legacy, "dpkg -l"),
    ("held-packages-missing", held_packages_missing, "dpkg -l"),
    ("k8s-gpu-unschedulable", k8s_gpu_unschedulable, "a Kubernetes pod event or kubectl describe"),
) + cuda_compat_rules()
RULE_IDS = tuple(row[0] for row in RULES)
# Finding ids a rule can give besides its own (the README table lists them too).
EXTRA_IDS = ("fabricmanager-not-needed", "fabricmanager-version-mismatch", "nvlsm-ib-umad-missing", "pcie-aer-other-device")


# Lines that would be a rule's evidence: a rule that found nothing while a capture holds such a line is not listed as
# checked and clean (doctor.diagnose puts it under "contradicted", with the line).
SIGNALS = {
    "driver-library-mismatch": r"version mismatch",
    "driver-not-loaded": r"couldn't communicate with the NVIDIA driver|driver is not loaded|probe routine",
    "nouveau-loaded": r"\bnouveau\b",
    "secure-boot-module-rejected": r"Key was rejected|Required key not available|Lockdown:|unsigned module",
    "dkms-not-built-for-kernel": r"Bad return status for module build|dkms",
    "gsp-firmware-missing": r"gsp\w*\.bin|GSP firmware",
    "framework-cuda-too-new-for-driver": r"driver (?:on your system )?is too old|driver version is insufficient",
    "no-kernel-image-for-device": r"no kernel image|not compatible with the current PyTorch",
    "xid-error": r"\bXid\b",
    "fabricmanager-down": r"fabricmanager|Error 802|system not yet initialized",
    "imex-not-ready": r"IMEX domain status is (?!UP\b)|IMEX daemon status is \S+ \(not READY\)|Domain State:\s*(?:DEGRADED|DOWN)",
    "docker-gpu-runtime-missing": r"could not select device driver|[Uu]nknown runtime|invalid runtime",
    "nvml-unknown-error-in-container": r"NVML: Unknown Error",
    "gpu-lost": r"fallen off the bus|device handle",
    "gpu-init-failed": r"RmInitAdapter|rm_init_adapter",
    "gsp-rpc-timeout": r"GSP.*[Tt]imeout|Timeout.*GSP",
    "pcie-aer-errors": r"\bAER\b|PCIe Bus Error",
    "ecc-uncorrectable": r"[Uu]ncorrectable ECC",
    "shm-too-small": r"shared memory|Bus error",
    "libcuda-missing": r"libcuda\.so\.1",
    "cuda-libraries-missing": r"cannot open shared object file",
    "libcuda-stub-shadowed": r"stub",
    "cuda-visible-devices-no-gpu": r"No CUDA GPUs",
    "framework-cpu-only-build": r"\+cpu\b|CUDA used to build PyTorch: (?:None|Could not collect)",
}


def run_rules(facts, data):
    """``(findings, not_checked, checked)``: every finding, errors first; ``[{id, needs}]`` for rules that lacked facts;
    the ids of the rules that looked and found nothing."""
    findings, not_checked, checked = [], [], []
    for rule_id, rule, needs in RULES:
        result = rule(facts, data)
        if result is None:
            not_checked.append({"id": rule_id, "needs": needs})
        else:
            findings.extend(result)
            if not result:
                checked.append(rule_id)
    order = {"error": 0, "warning": 1, "info": 2}
    findings.sort(key=lambda f: order[f["severity"]])
    return findings, not_checked, checked
