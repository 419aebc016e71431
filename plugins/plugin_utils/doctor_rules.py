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

from ansible_collections.dlbox.stack.plugins.plugin_utils.versions import parse_version

__all__ = ["RULES", "RULE_IDS", "run_rules"]


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


def _smi_answered(facts):
    return bool(facts.get("gpus")) and bool((facts.get("smi") or {}).get("driver_version"))


# ----------------------------------------------------------------------------------------------------------------------
# driver and kernel module
# ----------------------------------------------------------------------------------------------------------------------

def driver_library_mismatch(facts, data):
    """The loaded kernel module and the user-space libraries (NVML) are of different driver versions."""
    evidence = [e["line"] for e in facts.get("smi_errors", []) if e["kind"] == "driver-library-mismatch"]
    evidence += _kernel(facts, r"API mismatch") or []
    lib, proc = facts.get("nvml_library_version"), (facts.get("proc_version") or {}).get("version")
    if lib and proc and not proc.startswith(lib):
        evidence.append("NVML library %s, loaded kernel module %s (/proc/driver/nvidia/version)" % (lib, proc))
    if not evidence:
        if not (facts.get("smi_errors") is not None or facts.get("kernel_lines") is not None or _smi_answered(facts)):
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
    errors = [e for e in facts.get("module_errors", []) if e["module"].startswith("nvidia")
              and re.search(r"Key was rejected by service|Required key not available", e["reason"])]
    kernel = _kernel(facts, r"Loading of unsigned module is rejected|nvidia.*(Key was rejected|Required key not available)"
                            r"|Lockdown: .*unsigned module loading is restricted") or []
    evidence = _short([e["line"] for e in errors] + kernel)
    if evidence and facts.get("secure_boot") is True:
        evidence.append("mokutil --sb-state: SecureBoot enabled")
    if not evidence:
        if facts.get("module_errors") is None and facts.get("kernel_lines") is None:
            return None
        return []
    return [_finding(
        "secure-boot-module-rejected", "error", "Secure Boot rejected the NVIDIA kernel module", evidence,
        "Enroll the key DKMS signs with (Debian/Ubuntu: mokutil --import /var/lib/dkms/mok.pub, set a one-time "
        "password, reboot and confirm in MokManager), or use Ubuntu's signed linux-modules-nvidia-<branch> packages, "
        "or turn Secure Boot off in the firmware. Then modprobe nvidia.")]


def dkms_not_built_for_kernel(facts, data):
    """DKMS has no nvidia module built and installed for the running kernel (or its build failed)."""
    evidence = ["%s (dkms)" % f["line"] for f in facts.get("dkms_failures", [])]
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
    return [_finding(
        "dkms-not-built-for-kernel", "error", "The NVIDIA module is not built for the running kernel", _short(evidence),
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
    driver_cuda = (facts.get("smi") or {}).get("cuda_version")
    for probe in facts.get("framework_probe", []):
        if driver_cuda and probe.get("cuda") and probe["cuda"] != "None" and \
                parse_version(probe["cuda"])[:2] > parse_version(driver_cuda)[:2]:
            evidence.append("%s, but the driver supports CUDA %s (nvidia-smi)" % (probe["line"], driver_cuda))
    if not evidence:
        if facts.get("framework") is None and facts.get("framework_probe") is None:
            return None
        return []
    return [_finding(
        "framework-cuda-too-new-for-driver", "error", "The framework's CUDA is newer than the driver supports",
        _short(evidence),
        "Either upgrade the driver to a branch that supports that CUDA (playbooks/plan.yml shows which), or install the "
        "framework build for an older CUDA (e.g. pip install torch --index-url https://download.pytorch.org/whl/cu118). "
        "nvidia-smi's 'CUDA Version' is the newest CUDA the driver supports.")]


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
    """Xid events in the kernel log, each named with its meaning from data/doctor.yml."""
    lines = facts.get("kernel_lines")
    if lines is None:
        return None
    meanings = {entry["code"]: entry for entry in data["xid"]["codes"]}
    seen = {}
    for line in lines:
        match = re.search(r"NVRM: Xid \((?:PCI:)?(?P<bus>[^)]+)\): (?P<code>\d+)", line)
        if match:
            key = (int(match.group("code")), match.group("bus"))
            seen.setdefault(key, []).append(line)
        elif re.search(r"fallen off the bus", line):
            bus = re.search(r"GPU (?P<bus>[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2})", line)
            seen.setdefault((79, bus.group("bus") if bus else "?"), []).append(line)
    findings = []
    for (code, bus), found in sorted(seen.items()):
        known = meanings.get(code)
        meaning = known["meaning"] if known else "not in data/doctor.yml: look it up in NVIDIA's Xid catalog"
        findings.append(_finding(
            "xid-error", known["severity"] if known else "warning",
            "Xid %d on GPU %s: %s" % (code, bus, meaning),
            ["Xid %d (%s), %d time(s) on %s" % (code, meaning, len(found), bus)] + _short(found, 2),
            "See NVIDIA's Xid documentation for code %d (https://docs.nvidia.com/deploy/xid-errors/index.html). "
            "Application faults (13, 31, 43) point at the program; 48, 63/64, 92, 94/95 at memory (check ECC and "
            "remapped rows); 79 at power, cooling, seating or the slot; 119/120 at GSP firmware (update the driver). "
            "A GPU that keeps logging hardware Xids needs a reset, then the vendor." % code))
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
    """A hardware or thermal slowdown is active (idle and power-cap clocks are normal)."""
    gpus = [g for g in facts.get("gpus", []) if g.get("throttle_active") is not None]
    if not gpus:
        return None
    findings = []
    for gpu in gpus:
        active = [r for r in gpu["throttle_active"]
                  if r in ("HW Slowdown", "HW Thermal Slowdown", "HW Power Brake Slowdown", "SW Thermal Slowdown")]
        if active:
            findings.append(_finding(
                "gpu-throttled", "warning", "%s is slowed down by %s" % (gpu.get("name") or "A GPU", ", ".join(active)),
                ["Clocks event reasons active: %s" % ", ".join(gpu["throttle_active"])],
                "HW/SW thermal slowdown: check cooling (fans, airflow, dust, the temperature in nvidia-smi -q). HW slowdown "
                "and power brake: check the power cables and the supply (a brake is asserted by the system). "
                "Idle and SW Power Cap are normal and not reported."))
    return findings


def persistence_off(facts, data):
    """Persistence mode is off (the driver re-initialises the GPU for every client)."""
    gpus = [g for g in facts.get("gpus", []) if g.get("persistence") is not None]
    if not gpus:
        return None
    off = [g for g in gpus if g["persistence"] is False]
    if not off:
        return []
    return [_finding(
        "persistence-off", "warning", "Persistence mode is off on %d GPU(s)" % len(off),
        ["%s (%s): persistence mode off" % (g.get("name"), g.get("pci_bus_id")) for g in off],
        "Run the nvidia-persistenced service (systemctl enable --now nvidia-persistenced), so the driver keeps the GPUs "
        "initialised between jobs: each CUDA start is faster and ECC/Xid state is not lost. On a desktop with a display "
        "attached this matters less.")]


def fabricmanager_down(facts, data):
    """Fabric Manager is not running (NVSwitch systems): CUDA fails with error 802."""
    evidence = [e["line"] for e in facts.get("framework", []) if e["kind"] == "system-not-ready"]
    services = facts.get("services") or {}
    fabric = services.get("nvidia-fabricmanager")
    if fabric and fabric["state"] in ("failed", "inactive"):
        evidence.append("nvidia-fabricmanager: %s" % fabric["line"])
    evidence += _kernel(facts, r"nv-fabricmanager\[\d+\]: .*(error|fail|don't match|not match)") or []
    if not evidence:
        if fabric is None and facts.get("framework") is None:
            return None
        return []
    return [_finding(
        "fabricmanager-down", "error", "Fabric Manager is not running: CUDA cannot start on this NVSwitch system",
        _short(evidence),
        "Install nvidia-fabricmanager of exactly the driver's version (nvidia-fabricmanager-<branch>=<driver version>), "
        "then systemctl enable --now nvidia-fabricmanager; journalctl -u nvidia-fabricmanager says why it stopped "
        "(a version that does not match the driver is the usual cause).")]


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
    """Docker cannot hand out GPUs: the NVIDIA Container Toolkit is missing or not configured."""
    evidence = [e["line"] for e in facts.get("docker_errors", [])
                if e["kind"] in ("no-gpu-device-driver", "unknown-runtime")]
    info, daemon = facts.get("docker_info"), facts.get("daemon_json")
    wants_gpus = bool(facts.get("gpus") or [d for d in facts.get("pci_devices", []) if d["kind"] == "gpu"]
                      or (daemon and "nvidia" in (daemon.get("runtimes") or {})))
    if info and info.get("runtimes") is not None and "nvidia" not in info["runtimes"] and wants_gpus:
        line = "docker info: Runtimes: %s (no nvidia)" % " ".join(info["runtimes"])
        if daemon and "nvidia" in (daemon.get("runtimes") or {}):
            line += ", although daemon.json declares it: the daemon was not restarted, or runs with another config"
        evidence.append(line)
    if not evidence:
        if facts.get("docker_errors") is None and info is None:
            return None
        return []
    return [_finding(
        "docker-gpu-runtime-missing", "error", "Docker has no NVIDIA runtime for --gpus", _short(evidence),
        "Install nvidia-container-toolkit, run nvidia-ctk runtime configure --runtime=docker and restart Docker "
        "(systemctl restart docker); docker info must then list 'nvidia' under Runtimes. Docker from snap cannot use it. "
        "The nvidia_container_toolkit role does all of this.")]


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
    ("xid-error", xid_error, "the kernel log (dmesg / journalctl -k)"),
    ("ecc-retired-or-remapped", ecc_retired_or_remapped, "nvidia-smi -q or -q -x"),
    ("gpu-throttled", gpu_throttled, "nvidia-smi -q or -q -x"),
    ("persistence-off", persistence_off, "nvidia-smi, -q, -q -x or --query-gpu with persistence_mode"),
    ("fabricmanager-down", fabricmanager_down, "systemctl status nvidia-fabricmanager or a CUDA probe"),
    ("pcie-link-degraded", pcie_link_degraded, "nvidia-smi -q (-x) or lspci -vv"),
    ("gpu-memory-too-small", gpu_memory_too_small, "nvidia-smi, -q, -q -x or --query-gpu with memory.total"),
    ("no-gpu", no_gpu, "lspci or the PCI device list, or nvidia-smi"),
    ("docker-gpu-runtime-missing", docker_gpu_runtime_missing, "docker info or a docker run error"),
    ("nvml-unknown-error-in-container", nvml_unknown_error_in_container, "nvidia-smi output or its error"),
    ("nvidia-docker2-legacy", nvidia_docker2_legacy, "dpkg -l"),
    ("held-packages-missing", held_packages_missing, "dpkg -l"),
    ("k8s-gpu-unschedulable", k8s_gpu_unschedulable, "a Kubernetes pod event or kubectl describe"),
)
RULE_IDS = tuple(row[0] for row in RULES)


def run_rules(facts, data):
    """``(findings, not_checked)``: every finding, errors first; and ``[{id, needs}]`` for rules that lacked facts."""
    findings, not_checked = [], []
    for rule_id, rule, needs in RULES:
        result = rule(facts, data)
        if result is None:
            not_checked.append({"id": rule_id, "needs": needs})
        else:
            findings.extend(result)
    order = {"error": 0, "warning": 1, "info": 2}
    findings.sort(key=lambda f: order[f["severity"]])
    return findings, not_checked
