# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a machine's captured outputs say, recognised by their content (controller only, no I/O).

``recognize(text)`` names the tools whose output a text holds (one pasted file may hold several: a
command, its error, then ``dmesg``); ``extract_facts(texts)`` reads every text with every extractor and
returns one mapping of facts for ``doctor_rules``. A fact that no capture holds is absent from the mapping,
so a rule can tell "not captured" from "captured and fine". Trimmed pastes are expected: a few lines of
``dmesg``, an ``nvidia-smi`` error alone, ``LnkSta`` lines grepped out of ``lspci -vv``.
"""

from __future__ import annotations

import json
import re

from ansible_collections.dlbox.stack.plugins.module_utils import _gpu_facts as gpu_facts
from ansible_collections.dlbox.stack.plugins.plugin_utils import captures as plan_captures

__all__ = ["KINDS", "recognize", "extract_facts"]

# Every kind of output the doctor recognises (README: "Finding ids" section names them too).
KINDS = (
    "nvidia-smi", "nvidia-smi-error", "nvidia-smi-q", "nvidia-smi-xml", "nvidia-smi-csv", "nvidia-smi-topo",
    "kernel-log", "lsmod", "proc-driver-version", "uname", "os-release",
    "dkms", "mokutil", "modprobe", "dpkg", "apt-mark-showhold",
    "lspci", "pci-sysfs", "env", "ldconfig", "nvcc",
    "python-traceback", "framework-probe",
    "docker-info", "docker-daemon-json", "docker-error", "kubernetes", "systemd",
    "proc-cmdline", "aer-counters", "lspci-acs", "df-shm", "cgroup-fs", "ctk-info", "ctk-config", "dev-nvidia",
    "nvidia-smi-p2p", "meminfo", "lscpu", "lsblk", "cpu-cache", "imex-ctl", "error-message", "error-text",
    "dlbox-collect-missing", "not-available",
)

_SMI_TABLE_RE = re.compile(r"NVIDIA-SMI\s+(?P<smi>[\d.]+)\s+Driver Version:\s*(?P<driver>[\d.]+)"
                           r"(?:\s+CUDA Version:\s*(?P<cuda>[\d.]+|N/A))?")
_SMI_ROW1_RE = re.compile(r"^\|\s*(?P<index>\d+)\s+(?P<name>.+?)\s+(?P<pers>On|Off)\s*\|\s*(?P<bus>[0-9A-Fa-f]{4,8}:"
                          r"[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])")
_SMI_ROW2_RE = re.compile(r"^\|.*?\|\s*(?P<used>\d+)MiB\s*/\s*(?P<total>\d+)MiB\s*\|\s*(?P<util>\d+|N/A)%?")
_SMI_ERRORS = (
    ("driver-library-mismatch", re.compile(r"Failed to initialize NVML: Driver/library version mismatch", re.I)),
    ("cannot-communicate", re.compile(r"NVIDIA-SMI has failed because it couldn.t communicate with the NVIDIA driver")),
    ("nvml-unknown-error", re.compile(r"Failed to initialize NVML: Unknown Error")),
    ("no-devices", re.compile(r"^No devices were found", re.M)),
)
_NVML_LIB_RE = re.compile(r"NVML library version:\s*([\d.]+)")
_SMI_Q_HEAD_RE = re.compile(r"=+NVSMI LOG=+|^\s+(Clocks (Throttle|Event) Reasons|Remapped Rows|Retired Pages|"
                            r"GPU Link Info|Persistence Mode\s+:|FB Memory Usage|Link Width|GPU Current Temp\s+:)\b", re.M)
_KERNEL_LINE_RE = re.compile(r"^(\[\s*\d+\.\d+\]|\[\w{3} \w{3} +\d+ [\d:]+ \d{4}\]|\w{3} \d+ [\d:]+ \S+ kernel:|"
                             r"\w{3} +\d+ [\d:]+ \S+ kernel:|kernel:|\s*NVRM:)", re.I)
_LSMOD_RE = re.compile(r"^(?P<name>[a-z0-9_]+)\s+(?P<size>\d+)\s+(?P<used>\d+)(\s+\S+)?\s*$")
_UNAME_A_RE = re.compile(r"^Linux\s+\S+\s+(?P<release>\d+\.\d+[\w.+~-]*)\s+#", re.M)
_UNAME_R_RE = re.compile(r"^(?:uname -r\s+)?(?P<release>\d+\.\d+\.\d+-[\w.+~-]+)\s*$")
_DKMS_RE = re.compile(r"^(?P<module>[\w-]+)(?:, |/)(?P<version>[\w.~+-]+), (?P<kernel>[^,\s]+), (?P<arch>[\w]+):\s*"
                      r"(?P<status>[\w-]+)", re.M)
_DKMS_FAIL_RE = re.compile(r"Bad return status for module build on kernel:\s*(?P<kernel>\S+)")
_MODULE_ERR_RE = re.compile(r"(?:modprobe|insmod): ERROR: could not insert (?:module )?'?(?P<module>[\w.-]+?)'?"
                            r"(?:\.ko)?: (?P<reason>.+)$|Failed to insert (?:module )?'(?P<module2>[\w-]+)': (?P<reason2>.+)$",
                            re.M)
_DPKG_RE = re.compile(r"^(?P<state>[uirhp][ncUiFHWt]R?)\s+(?P<name>[a-z0-9][a-z0-9+.-]+)(?::\w+)?\s+(?P<version>\S+)",
                      re.M)
_PKG_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9+.-]+(:[a-z0-9]+)?$")
_SYSFS_PCI_RE = re.compile(r"^(?:/sys/bus/pci/devices/)?(?P<addr>[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7])\s+"
                           r"(?P<vendor>0x[0-9a-f]{4})\s+(?P<device>0x[0-9a-f]{4})\s+(?P<cls>0x[0-9a-f]{6})\s*$", re.M)
_ENV_RE = re.compile(r"^(?P<key>[A-Za-z_][A-Za-z0-9_]*)=(?P<value>.*)$")
_LDCONFIG_RE = re.compile(r"^\s+(?P<lib>lib[\w+-]+\.so[\w.]*)\s+\([^)]*\)\s+=>\s+(?P<path>\S+)", re.M)
_NVCC_RE = re.compile(r"Cuda compilation tools, release (?P<release>\d+\.\d+), V(?P<version>[\d.]+)")
_FRAMEWORK_MESSAGES = (
    ("driver-too-old", re.compile(r"The NVIDIA driver on your system is too old \(found version (?P<found>\d+)\)")),
    ("driver-insufficient", re.compile(r"CUDA driver version is insufficient for CUDA runtime version")),
    ("no-kernel-image", re.compile(r"no kernel image is available for execution on the device")),
    ("sm-incompatible", re.compile(r"(?P<gpu>[^\n]*?) with CUDA capability (?P<sm>sm_\d+) is not compatible with the "
                                   r"current PyTorch installation")),
    ("system-not-ready", re.compile(r"^.*(?:Error 802|error \(802\)|cudaErrorSystemNotReady|CUDA_ERROR_SYSTEM_NOT_READY|"
                                    r"system not yet initialized).*$", re.M)),
)
# python -m torch.utils.collect_env (PyTorch's report users paste): its version, CUDA build and availability lines
_COLLECT_ENV_RE = re.compile(r"^\s*PyTorch version:\s*(?P<version>\S+)\s*$(?P<rest>(?:\n.*){0,40})", re.M)
_PROBE_RE = re.compile(r"^(?:torch|tensorflow)[ =](?P<version>\S+)(?:.*?cuda[ =](?P<cuda>[\d.]+|None))?", re.M | re.I)
_DOCKER_ERRORS = (
    ("no-gpu-device-driver", re.compile(r"could not select device driver (?:\"[^\"]*\" )?with capabilities: \[\[gpu\]\]")),
    ("unknown-runtime", re.compile(r"(?:Unknown runtime specified nvidia|unknown or invalid runtime name: nvidia)")),
    ("nvidia-container-cli", re.compile(r"nvidia-container-cli: (?:initialization error|requirement error)[^\n]*")),
)
_DOCKER_INFO_RE = re.compile(r"^\s*Runtimes:\s*(?P<runtimes>.+)$", re.M)
_DOCKER_DEFAULT_RE = re.compile(r"^\s*Default Runtime:\s*(?P<runtime>\S+)", re.M)
_K8S_RE = re.compile(r"Insufficient nvidia\.com/gpu")
_UNIT_STATE_RE = re.compile(r"^\s*Active:\s*(?P<state>active|inactive|failed|activating|deactivating|reloading)\b"
                            r"(?:\s*\((?P<sub>[^)]+)\))?", re.M)  # systemctl status, not /proc/meminfo's "Active: 123 kB"
_UNIT_NAME_RE = re.compile(r"(?P<unit>nvidia-[\w-]+)\.service")
_JOB_FAILED_RE = re.compile(r"Job for (?P<unit>[\w-]+)\.service failed|(?P<unit2>nvidia-[\w-]+)\.service: "
                            r"(?:Control process exited|Main process exited|Failed with result)")
_MISSING_RE = re.compile(r"^(?:dlbox-collect: (?:command not found|not available): (?P<cmd>\S+)|"
                         r"(?:bash: |sh: \d+: )?(?P<cmd2>nvidia-smi|lspci|dkms|mokutil|nvcc|docker|nvidia-container-runtime-hook|"
                         r"nvidia-ctk|nvidia-container-cli): (?:command )?not found)",
                         re.M)

_UNAVAILABLE_RE = re.compile(r"read kernel buffer failed|No such file or directory|could not be found|"
                             r"System has not been booted with systemd|No journal files were found|-- No entries --|"
                             r"Operation not permitted|Permission denied|could not open|Failed to connect to bus|"
                             r"Cannot connect to the Docker daemon|not available: ")


# Error messages the rules read, by kind: (kind, pattern). The whole line (or lines) of a match is kept, with the name
# of the capture it came from. Sources of the message texts: the pastes of tests/fixtures/doctor/corpus (cases.yml).
_MESSAGES = tuple((kind, re.compile(pattern, re.I | re.M)) for kind, pattern in (
    ("ctk-cgroup-device-rules", r"failed to add device rules|bpf_prog_query\(BPF_CGROUP_DEVICE\) failed"),
    ("ctk-load-library", r"nvidia-container-cli: initialization error: load library failed: (?P<lib>lib[\w.+-]+)"
                         # NVIDIA's k8s-device-plugin without the driver's libraries (k8s-device-plugin#1371, #856)
                         r"|could not load NVML library|nvml init failed: ERROR_LIBRARY_NOT_FOUND"),
    # the driver's libraries are already in the image (built in, or WSL's): the toolkit cannot mount its own
    # (nvidia-container-toolkit#289, lambda-stack-dockerfiles#15)
    ("ctk-file-exists", r"mount error: file creation failed: \S*/(?P<lib>lib(?:nvidia|cuda)[\w.+-]*\.so[\w.]*): file exists"),
    ("ctk-nvml-mismatch", r"nvml error: driver/library version mismatch"),
    ("ctk-requirement", r"requirement error: unsatisfied condition: cuda\s*>=\s*(?P<cuda>[\d.]+)"),
    ("cuda-804", r"forward compatibility was attempted on non supported HW|CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE"),
    ("cuda-803", r"system has unsupported display driver\s*/\s*cuda driver combination|CUDA_ERROR_SYSTEM_DRIVER_MISMATCH"),
    ("cuda-999", r"CUDA unknown error|CUDA_ERROR_UNKNOWN|cudaErrorUnknown|\bError 999\b|error 999: unknown error"
                 r"|cuInit err: 999\b|nvcuda init failure: 999\b"),
    ("gpu-lost", r"Unable to determine the device handle for GPU\s?(?P<bus>[0-9A-Fa-f:.]+): Unknown Error"
                 r"|fallen off the bus|GPU is lost"),
    ("rm-init-adapter", r"RmInitAdapter failed|rm_init_adapter failed|nvidia_frontend_open: minor \d+, module->open\(\) failed"),
    ("gsp-init", r"Cannot initialize GSP firmware RM|failed to wait for GFW[_ ]boot|kgspInitRm.*fail|GSP.*(?:boot|init).*fail"),
    ("gsp-timeout", r"_kgspRpcRecvPoll|_kgspLogRpcTimeout|GSP RPC timeout|waiting for RPC response from (?:GPU\d+ )?GSP"
                    r"|_kgspIsHeartbeatTimedOut|Heartbeat timed out|GSP Timeout"),
    ("aer", r"AER: .*(?:error|Error).*|PCIe Bus Error: severity=.*|AER: can't recover.*|AER: device recovery failed"),
    ("ecc-uncorrectable", r"uncorrectable ECC error encountered|CUDA_ERROR_ECC_UNCORRECTABLE|cudaErrorECCUncorrectable"),
    ("lockdown", r"Lockdown: [\w.-]+: unsigned module loading is restricted"),
    ("module-eperm", r"could not insert '(?P<module>[\w-]+)': Operation not permitted"),
    ("shm", r"DataLoader worker \(pid \d+\) is killed by signal:\s+Bus error|out of shared memory"
            r"|insufficient shared memory \(shm\)|unable to write to file </torch_[\w]+>"),
    ("libcuda-missing", r"libcuda\.so\.1: cannot open shared object file"),
    ("cuda-library-missing", r"Could not load library (?P<lib>lib[\w.]+)\. Error: (?P<missing>lib[\w.-]+): cannot open shared object file"
                             r"|(?P<lib2>lib(?:nvrtc|cudnn|cublas|cublasLt|cudart|cufft|curand|cusparse|cusolver|nvJitLink)"
                             r"[\w.-]*): cannot open shared object file"),
    ("stub-library", r"CUDA driver is a stub library|CUDA_ERROR_STUB_LIBRARY|cudaErrorStubLibrary|CUDA error: error code 34\b"
                     r"|CudaAPIError: \[34\]|/stubs/libcuda\.so"),
    ("no-cuda-gpus", r"No CUDA GPUs are available"),
    ("cuda-oom", r"CUDA out of memory|OutOfMemoryError: |NCCL WARN Cuda failure 'out of memory'|cudaErrorMemoryAllocation"
                 r"|CUDA_ERROR_OUT_OF_MEMORY"),
    # modprobe finds no module file for the running kernel (a module not built or not installed for it)
    ("module-not-found", r"modprobe: FATAL: Module (?P<module>nvidia[\w-]*) not found in directory /lib/modules/(?P<kernel>\S+)"),
    # a DKMS build's make.log: the compiler failed on the nvidia sources
    ("dkms-make-error", r"^make(?:\[\d+\])?: \*\*\* \[[^\]\n]*?/var/lib/dkms/(?P<module>nvidia[\w-]*)/(?P<version>[^/\s]+)/build/"
                        r"[^\]]*\] Error \d+"),
    ("toolkit-mismatch", r"The detected CUDA version \((?P<nvcc>[\d.]+)\) mismatches the version that was used to compile"
                         r"\s+PyTorch \((?P<torch>[\d.]+)\)"),
    ("fm-nothing-to-do", r"NV_WARN_NOTHING_TO_DO"),
    # Fabric Manager refuses a driver of another version (NVIDIA/gpu-driver-container#735, akash-network/website#632)
    ("fm-version-mismatch", r"fabric manager NVIDIA GPU driver interface version (?P<fm>\d[\w.]*) (?:don't|doesn't|don\u2019t|do not) "
                            r"match with driver version (?P<driver>\d[\w.]*?)\.?(?=\s|$)"),
    # NVLSM (NVLink5 HGX) without ib_umad (siderolabs/docs#581)
    ("nvlsm-no-umad", r"umad_init: can't read ABI version from \S+ \([^)]*\): is ib_umad module loaded\?"),
    # IMEX not ready on a GB200/GB300 NVL tray: CycleCloud's health agent (linux-system-roles/hpc#85), DCGM's
    # DCGM_FR_IMEX_UNHEALTHY (NVIDIA/aicr#2641), nvidia-imex-ctl -N, IMEX's log (kubernetes-sigs/dra-driver-nvidia-gpu#289;
    # "Node configuration mapping mismatch": AWS's IMEX troubleshooting)
    ("imex-not-ready", r"IMEX domain status is (?P<domain>[A-Z]+)\b(?<!UP)|IMEX daemon status is (?P<daemon>-?\w+) \(not READY\)"
                       r"|^Domain State:\s*(?P<state>DEGRADED|DOWN)\s*$|No matching network interface found for any IP addresses in "
                       r"the node configuration|Node configuration mapping mismatch"),
    ("driver-not-loaded", r"NVIDIA driver is not loaded|Found no NVIDIA driver on your system"),
    ("docker-gpus", r"^\S*[#$] docker run .*--gpus[ =]\S+.*$"),
))

# Lines that are errors to a reader: what "never silent" reads (doctor.unexplained_lines).
_ERROR_LINE_RE = re.compile(r"\b(?:error|errors? (?:code|response)|failed|failure|fatal|cannot|can't|could not|couldn't|"
                            r"unable to|not permitted|denied|mismatch|panic|aborted|killed by signal|Segmentation fault)\b"
                            r"|NVRM: Xid|\bXid \(|^[\w.]*(?:Error|Exception): |CUDA error|\bERRO\[|\bLockdown: |\brejected\b|"
                            r"\brefused\b|\bout of memory\b|cuInit err|\bNCCL WARN\b|\bEDAC .*\bUE\b|Hardware Error", re.I)
# Lines that read as errors but are not: an unprivileged nvidia-container-cli's notices, PyTorch's standard advice after
# a CUDA error, systemd's pointers, nvidia-smi -q counters ("Remapping Failure Occurred : No"), the kernel's notice for
# an unsigned module where signatures are not enforced (Linux, Documentation/admin-guide/module-signing.rst: the module
# loads and taints the kernel), a display without EDID, the command line in dmesg, ACPI's table warnings.
_NOT_AN_ERROR_RE = re.compile(r"^dlbox-collect: |Capabilities: <access denied>|failed to set inheritable capabilities|"
                              r"skipping kernel modules load due to failure|"
                              r"dxcore initialization failed, continuing|CUDA kernel errors might be asynchronously reported|"
                              r"consider passing CUDA_LAUNCH_BLOCKING|TORCH_USE_CUDA_DSA|for more information\.?$|"
                              r"^See [\"'].*for details|\bCommand line: |module verification failed: signature "
                              r"and/or required key missing - tainting kernel|Unable to read EDID|ACPI Warning|^-- |"
                              r"\berrors?\s*:\s*0\b|:\s*(?:No|N/A|0|None|Not Active|Disabled)\s*$|"
                              # Python's warnings module ("FILE.py:LINE: CATEGORY: message"): a warning, the program
                              # goes on, e.g. torch's "UserWarning: Failed to initialize NumPy" in an environment without
                              # numpy; one about CUDA, the GPU or the driver stays an error line (never silent on those)
                              r"^\S+\.py:\d+: \w*Warning: (?!.*(?:cuda|gpu|nvml|nccl|cudnn|nvidia|driver|device))",
                              re.I)
# Kernel lines worth reading in a whole dmesg: the GPU's, PCIe's and module loading's (a full dmesg holds ACPI and USB
# errors no GPU rule is about).
_KERNEL_TOPIC_RE = re.compile(r"NVRM|nvidia|nouveau|Xid|GPU|pcieport|AER|PCIe Bus Error|Lockdown|module|firmware|drm|nvswitch|"
                              r"EDAC|Hardware Error",
                              re.I)

# A text no reader knows is taken for an error output when a line reads like a program's error (not prose that
# mentions errors, as a licence does).
_ERROR_TEXT_RE = re.compile(r"^\s*(?:[\w.]*(?:Error|Exception):|panic:|fatal:|error:|ERROR\b|FATAL\b|E\d{4} )|"
                            r"\b(?:ERROR|FAILED|Error!)\b|NVRM:|\bXid\b|: (?:error|failed)\b|\bfailed with\b|"
                            # errors that read like none of the above (issue 46's red-team pastes)
                            r"modprobe: FATAL|\bNCCL WARN\b|cuInit err|^make(?:\[\d+\])?: \*\*\* .*\bError \d+|"
                            r"\bEDAC .*\bUE\b|\[Hardware Error\]|\bCUDA out of memory\b|cannot open shared object file|"
                            r"ERROR_LIBRARY_NOT_FOUND|could not load NVML|: file exists|while trying to connect to the Docker "
                            r"daemon socket", re.M)
_CTK_LOG_RE = re.compile(r"^[IWE]\d{4} [\d:.]+\s+\d+ (?:nvc|nvc_info|nvc_mount|driver|rpc)\.c:\d+\]", re.M)
_CMDLINE_RE = re.compile(r"^(?:BOOT_IMAGE=\S+\s+)?(?:\S+\s+)*root=\S+.*$", re.M)
_AER_COUNT_RE = re.compile(r"^(?:(?P<path>\S*?(?P<addr>[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7])\S*?)[:\s]+)?"
                           r"(?P<key>TOTAL_ERR_(?:COR|FATAL|NONFATAL))\s+(?P<count>\d+)\s*$", re.M)
_ACS_RE = re.compile(r"^\s*ACSCtl:\s*(?P<flags>SrcValid[+-].*)$", re.M)
_DF_SHM_RE = re.compile(r"^\S+\s+(?P<size>\d+(?:\.\d+)?[KMGT]?)\s+\S+\s+\S+\s+\d+%\s+/dev/shm\s*$", re.M)
_CGROUP_RE = re.compile(r"^(?P<fs>cgroup2fs|tmpfs)\s*$|^cgroup2 on /sys/fs/cgroup type cgroup2|^\S+ on /sys/fs/cgroup/\S+ type cgroup ",
                        re.M)
_CTK_INFO_RE = re.compile(r"^NVRM version:\s+(?P<nvrm>\S+)\s*\nCUDA version:\s+(?P<cuda>\S+)", re.M)
_CTK_DEVICE_RE = re.compile(r"^Model:\s+(?P<model>.+)$", re.M)
_CTK_CONFIG_RE = re.compile(r"^\[nvidia-container-(?:cli|runtime)(?:\.[\w.-]+)?\]\s*$", re.M)
_DEV_NVIDIA_RE = re.compile(r"^c[rwx-]{9}\S*\s+\d+\s+\S+\s+\S+\s+\d+,\s+\d+\s+.*?(?P<node>/dev/nvidia[\w-]*|nvidia[\w-]*)\s*$", re.M)
_P2P_RE = re.compile(r"^\s*GPU\d+\s+(?:(?:X|OK|NS|CNS|GNS|TNS|NA|DR|U|NVLINK)\s+)*(?:X|OK|NS|CNS|GNS|TNS|NA|DR|U)\s*$",
                     re.M)  # one GPU's row is "GPU0 X" alone


# dlbox-collect starts some captures with "$ COMMAND" (and users paste the command they ran): the command names the
# kind of output that follows, whatever the output looks like on this machine.
_HEADER_KINDS = (
    (re.compile(r"^\$ cat /proc/cmdline\s*$"), "proc-cmdline"),
    (re.compile(r"^\$ stat -fc %T /sys/fs/cgroup\s*$"), "cgroup-fs"),
    (re.compile(r"^\$ df\b.* /dev/shm\s*$"), "df-shm"),
    (re.compile(r"^\$ ls -l /dev/nvidia\*?\s*$"), "dev-nvidia"),
    (re.compile(r"^\$ nvidia-container-cli\b.* info\s*$"), "ctk-info"),
    (re.compile(r"^\$ cat /etc/nvidia-container-runtime/config\.toml\s*$"), "ctk-config"),
    (re.compile(r"^\$ grep -H \. \S*aer_dev_"), "aer-counters"),
    (re.compile(r"^\$ (?:lspci -vvv -s \S+ \| grep|lspci -vvv\s*$)"), "lspci-acs"),
    (re.compile(r"^\$ nvidia-smi topo -p2p \w\s*$"), "nvidia-smi-p2p"),
    (re.compile(r"^\$ nvidia-smi -q -d "), "nvidia-smi-q"),
    (re.compile(r"^\$ cat /proc/meminfo\s*$"), "meminfo"),
    (re.compile(r"^\$ lscpu\b"), "lscpu"),
    (re.compile(r"^\$ lsblk\b"), "lsblk"),
    (re.compile(r"^\$ grep -s -H \. /sys/devices/system/cpu/cpu\*/cache/"), "cpu-cache"),
)
# sysfs' CPU cache attributes as grep -H prints them (dlbox-collect's cpu-l3-sysfs; Documentation/ABI/testing/
# sysfs-devices-system-cpu, /sys/devices/system/cpu/cpuX/cache/indexY/{size,shared_cpu_list,level,type,...})
_CPU_CACHE_RE = re.compile(r"^/sys/devices/system/cpu/cpu\d+/cache/index\d+/[a-z_]+:\S.*$", re.M)
# lsmod where the kernel gives no /proc/modules (a kernel built with CONFIG_MODULES=n, lxc/lxc#4091; WSL 1,
# microsoft/WSL#3797; a container on such a kernel, as this project's test containers): libkmod's ERR() line (with
# "ERROR <file>:<line>" in builds with debug messages), then lsmod's own "Error: could not get list of modules". The
# list cannot be read here: not available, not the user's error. Fixtures: tests/fixtures/doctor/lsmod-no-proc-modules-*.
_NO_PROC_MODULES_RE = re.compile(r"^(?:libkmod: (?:ERROR \S+ )?kmod_module_new_from_loaded: could not open /proc/modules: .+|"
                                 r"Error: could not get list of modules: .+)$")


def _collect_header(text):
    """The kind a ``$ COMMAND`` first line names, if the capture holds more than that line and a 'not available'."""
    lines = [line for line in _lines(text) if line.strip()]
    if len(lines) < 2 or re.match(r"^dlbox-collect: (?:command not found|not available|skipped|timed out)", lines[1]):
        return None
    for pattern, kind in _HEADER_KINDS:
        if pattern.match(lines[0]):
            return kind
    return None


def _message_lines(text, start, end):
    """The whole line(s) holding text[start:end], joined with single spaces."""
    first = text.rfind("\n", 0, start) + 1
    last = text.find("\n", end)
    return " ".join(part.strip() for part in text[first:last if last >= 0 else len(text)].splitlines() if part.strip())


def messages(text):
    """``[{kind, line, ...named groups}]``: the error messages of ``_MESSAGES`` in a text."""
    found = []
    for kind, pattern in _MESSAGES:
        for match in pattern.finditer(text or ""):
            entry = {"kind": kind, "line": _message_lines(text, match.start(), match.end())}
            entry.update({k: v for k, v in match.groupdict().items() if v})
            found.append(entry)
    return found


def error_lines(text, kinds=()):
    """The lines of a capture a reader takes for errors (``_ERROR_LINE_RE``), less the known harmless ones; for a
    kernel log, only lines about the GPU, PCIe or modules. Structured outputs (nvidia-smi -q, lspci, dpkg) add none."""
    kinds = set(kinds)
    structured = bool(kinds & {"nvidia-smi-xml", "nvidia-smi-csv", "dpkg", "ldconfig", "env", "lsmod", "lspci-acs",
                               "aer-counters", "proc-cmdline", "dev-nvidia", "df-shm", "cgroup-fs", "ctk-config",
                               "meminfo", "lscpu", "lsblk", "cpu-cache", "imex-ctl"})
    found = []
    for raw in _lines(text):
        line = raw.strip()
        if not line or raw.startswith("$ ") or not _ERROR_LINE_RE.search(line) or _NOT_AN_ERROR_RE.search(line):
            continue  # a "$ COMMAND" line is the command that ran (its words, e.g. aer_dev_fatal, are no output)
        if structured and not re.search(r"NVRM|Traceback|Error: ", line):
            continue
        if "nvidia-smi-q" in kinds and re.match(r"^[^:]{1,60}?\s+:\s", line):
            continue
        if _KERNEL_LINE_RE.match(raw) and not _KERNEL_TOPIC_RE.search(line):
            continue
        found.append(line)
    return found


def _lines(text):
    return (text or "").splitlines()


def _output_lines(text):
    """The non-empty lines of a capture less a first ``$ COMMAND`` line (dlbox-collect's header, or a pasted prompt):
    what the tool printed, for the recognisers that weigh a share of the lines."""
    lines = [line for line in _lines(text) if line.strip()]
    return lines[1:] if lines and lines[0].startswith("$ ") else lines


def _is_smi_table(text):
    return bool(_SMI_TABLE_RE.search(text or ""))


def _is_lsmod(text):
    lines = _output_lines(text)
    if any(line.startswith("Module") and "Used by" in line for line in lines):
        return True
    matched = [line for line in lines if _LSMOD_RE.match(line)]
    return len(matched) >= 2 and len(matched) >= 0.8 * len(lines)


def _is_env(text):
    lines = _output_lines(text)
    env = [line for line in lines if _ENV_RE.match(line)]
    return any(line.startswith("PATH=") for line in env) and len(env) >= 0.8 * len(lines)


def _is_showhold(text):
    lines = [line.strip() for line in _lines(text) if line.strip() and not line.startswith("#")]
    if any("apt-mark showhold" in line for line in _lines(text)):
        return True
    return bool(lines) and all(_PKG_NAME_RE.match(line) for line in lines) and any(
        "nvidia" in line or "cuda" in line for line in lines)


def _json_objects(text):
    """JSON objects in a text: the whole text, or a ``{...}`` block pasted between shell lines."""
    text = text or ""
    try:
        value = json.loads(text)
        return [value] if isinstance(value, dict) else []
    except ValueError:
        pass
    found = []
    start = text.find("{")
    while start >= 0:
        depth, end = 0, None
        for position in range(start, len(text)):
            if text[position] == "{":
                depth += 1
            elif text[position] == "}":
                depth -= 1
                if depth == 0:
                    end = position + 1
                    break
        if end is None:
            break
        try:
            value = json.loads(text[start:end])
            if isinstance(value, dict):
                found.append(value)
        except ValueError:
            pass
        start = text.find("{", end)
    return found


def _is_daemon_json(text):
    keys = {"runtimes", "default-runtime", "storage-driver", "exec-opts", "log-driver", "data-root", "features",
            "registry-mirrors", "insecure-registries", "cgroup-parent"}
    return any(keys & set(obj) for obj in _json_objects(text))


def recognize(text):
    """The kinds of output this text holds (a list in ``KINDS`` order; empty when none)."""
    text = text or ""
    output = _output_lines(text)
    if output and all(_NO_PROC_MODULES_RE.match(line.strip()) for line in output):
        return ["not-available"]  # lsmod without /proc/modules: the list cannot be read here
    kinds = set()
    plan_kind = plan_captures.detect_kind(text)
    if plan_kind == "nvidia-smi-xml":
        kinds.add("nvidia-smi-xml")
    elif plan_kind == "nvidia-smi-csv":
        kinds.add("nvidia-smi-csv")
    if _is_smi_table(text):
        kinds.add("nvidia-smi")
    if any(pattern.search(text) for _name, pattern in _SMI_ERRORS):
        kinds.add("nvidia-smi-error")
    if "nvidia-smi-xml" not in kinds and _SMI_Q_HEAD_RE.search(text):
        kinds.add("nvidia-smi-q")
    if re.search(r"^\s*GPU0\s", text, re.M) and ("CPU Affinity" in text or re.search(r"\bX\b", text)):
        kinds.add("nvidia-smi-topo")
    if any(_KERNEL_LINE_RE.match(line) for line in _lines(text)) or "NVRM:" in text:
        kinds.add("kernel-log")
    if _is_lsmod(text):
        kinds.add("lsmod")
    if re.search(r"^(?:\S*[#$] cat /proc/driver/nvidia/version\n)?NVRM version:\s+NVIDIA", text, re.M):
        kinds.add("proc-driver-version")
    if _UNAME_A_RE.search(text) or any(_UNAME_R_RE.match(line.strip()) for line in _lines(text)[:3]):
        kinds.add("uname")
    if re.search(r"^ID=", text, re.M) and re.search(r"^(VERSION_ID|PRETTY_NAME)=", text, re.M):
        kinds.add("os-release")
    if _DKMS_RE.search(text) or _DKMS_FAIL_RE.search(text):
        kinds.add("dkms")
    if re.search(r"^SecureBoot (enabled|disabled)", text, re.M):
        kinds.add("mokutil")
    if _MODULE_ERR_RE.search(text):
        kinds.add("modprobe")
    if "Desired=Unknown/Install" in text or len(_DPKG_RE.findall(text)) >= 1 and re.search(r"^ii\s", text, re.M):
        kinds.add("dpkg")
    if _is_showhold(text):
        kinds.add("apt-mark-showhold")
    if (plan_kind == "lspci" or "LnkSta:" in text or "Kernel driver in use:" in text
            or re.search(r"^(?:[0-9a-f]{4}:)?[0-9a-f]{2}:[0-9a-f]{2}\.[0-7] .*NVIDIA", text, re.M)):
        kinds.add("lspci")
    if _SYSFS_PCI_RE.search(text):
        kinds.add("pci-sysfs")
    if _is_env(text) or re.search(r"^(/[\w.+-]+)+(:(/[\w.+-]+)+)+:?\s*$", text, re.M):
        kinds.add("env")
    if "libs found in cache" in text or _LDCONFIG_RE.search(text):
        kinds.add("ldconfig")
    if _NVCC_RE.search(text):
        kinds.add("nvcc")
    if "Traceback (most recent call last)" in text or re.search(r"^\w*(Error|Warning): ", text, re.M):
        kinds.add("python-traceback")
    if _PROBE_RE.search(text) or _COLLECT_ENV_RE.search(text) or any(p.search(text) for _name, p in _FRAMEWORK_MESSAGES):
        kinds.add("framework-probe")
    if _DOCKER_INFO_RE.search(text) or re.search(r"^\s*Server Version:", text, re.M):
        kinds.add("docker-info")
    if _is_daemon_json(text):
        kinds.add("docker-daemon-json")
    if any(p.search(text) for _name, p in _DOCKER_ERRORS) or "Error response from daemon" in text:
        kinds.add("docker-error")
    if _K8S_RE.search(text) or "FailedScheduling" in text:
        kinds.add("kubernetes")
    units = re.search(r"nv-fabricmanager\[|nvidia-persistenced\[|nvidia-fabricmanager-start\.sh\[", text)
    if _UNIT_STATE_RE.search(text) or _JOB_FAILED_RE.search(text) or units:
        kinds.add("systemd")
    header = _collect_header(text)
    if header:
        kinds.add(header)
    if _CMDLINE_RE.search(text) and len(output) <= 3:
        kinds.add("proc-cmdline")
    if _AER_COUNT_RE.search(text):
        kinds.add("aer-counters")
    if _ACS_RE.search(text):
        kinds.add("lspci-acs")
    if _DF_SHM_RE.search(text):
        kinds.add("df-shm")
    if _CGROUP_RE.search(text):
        kinds.add("cgroup-fs")
    if _CTK_INFO_RE.search(text) or _CTK_LOG_RE.search(text):
        kinds.add("ctk-info")
    if _CTK_CONFIG_RE.search(text):
        kinds.add("ctk-config")
    if _DEV_NVIDIA_RE.search(text) or re.search(r"cannot access '?/dev/nvidia\*?'?: No such file", text):
        kinds.add("dev-nvidia")
    if (_P2P_RE.search(text) and re.search(r"^\s*GPU0\b", text, re.M)) or header == "nvidia-smi-p2p":
        kinds.add("nvidia-smi-p2p")
        kinds.discard("nvidia-smi-topo")  # its GPU0 rows and X read like topo -m's matrix
    # the machine's inventory (read by the fitness checks, not by a doctor rule): recognised, so never "unrecognised"
    if re.search(r"^MemTotal:\s+\d+ kB", text, re.M):
        kinds.add("meminfo")
    if re.search(r"^Architecture:\s+\S+", text, re.M) and re.search(r"^CPU\(s\):\s+\d+", text, re.M):
        kinds.add("lscpu")
    if re.search(r"\"blockdevices\"\s*:", text):
        kinds.add("lsblk")
        kinds.discard("nvidia-smi-csv")
    if _CPU_CACHE_RE.search(text):
        kinds.add("cpu-cache")
    # nvidia-imex-ctl -N (GB200/GB300 NVL trays): read by the imex-not-ready rule through its Domain State line
    if re.search(r"^Domain State:\s*[A-Z]+\s*$", text, re.M) and re.search(r"^Node #\d+\s+-", text, re.M):
        kinds.add("imex-ctl")
    if any(pattern.search(text) for _kind, pattern in _MESSAGES):
        kinds.add("error-message")
    if not kinds and _ERROR_TEXT_RE.search(text):
        kinds.add("error-text")  # errors no reader knows: the doctor quotes them (never silent)
    if _MISSING_RE.search(text):
        kinds.add("dlbox-collect-missing")
    if not kinds and _UNAVAILABLE_RE.search(text):  # (an error text matched _ERROR_TEXT_RE above: never this)
        kinds.add("not-available")  # the tool answered that it could not give its output here
    return [kind for kind in KINDS if kind in kinds]


# ------------------------------------------------------------------------------------------------------------------
# facts
# ------------------------------------------------------------------------------------------------------------------

def _gpu(**values):
    base = {"name": None, "pci_bus_id": None, "memory_mib": None, "persistence": None, "util_pct": None,
            "pcie_link": None, "throttle_active": None, "retired_pages": None, "remapped_rows": None, "source": None,
            "temperature": None, "throttle_counters_us": None, "ecc_uncorrectable": None}
    base.update(values)
    return base


def _smi_table(text):
    head = _SMI_TABLE_RE.search(text)
    gpus, pending = [], None
    for line in _lines(text):
        row1 = _SMI_ROW1_RE.match(line)
        if row1:
            pending = _gpu(name=row1.group("name").strip(), pci_bus_id=gpu_facts.normalize_pci_bus_id(row1.group("bus")),
                           persistence=row1.group("pers") == "On", source="nvidia-smi")
            gpus.append(pending)
            continue
        row2 = _SMI_ROW2_RE.match(line)
        if row2 and pending is not None and pending["memory_mib"] is None:
            pending["memory_mib"] = int(row2.group("total"))
            pending["util_pct"] = int(row2.group("util")) if row2.group("util").isdigit() else None
            pending = None
    cuda = head.group("cuda")
    return {"driver_version": head.group("driver"), "cuda_version": None if cuda in (None, "N/A") else cuda}, gpus


_Q_SECTION_KEYS = {
    "Clocks Throttle Reasons": "throttle", "Clocks Event Reasons": "throttle", "Remapped Rows": "remap",
    "Retired Pages": "retired", "Utilization": "util", "FB Memory Usage": "fb", "Temperature": "temp",
    "Clocks Event Reasons Counters": "counters", "Clocks Throttle Reasons Counters": "counters", "ECC Errors": "ecc",
}
_Q_TEMP_KEYS = {"GPU Current Temp": "current", "GPU Shutdown Temp": "shutdown", "GPU Slowdown Temp": "slowdown",
                "GPU Max Operating Temp": "max_operating", "GPU T.Limit Temp": "tlimit"}
_THROTTLE_REASONS = ("HW Slowdown", "HW Thermal Slowdown", "HW Power Brake Slowdown", "SW Thermal Slowdown")
_THROTTLE_KEYS = _THROTTLE_REASONS + ("Idle", "SW Power Cap", "Applications Clocks Setting", "Sync Boost",
                                      "Display Clock Setting", "Unknown")


def _smi_q(text):
    """GPUs from ``nvidia-smi -q`` text (trimmed pastes too): persistence, memory, utilisation, throttle
    reasons, retired pages, remapped rows, PCIe link."""
    gpus, current, section = [], None, None
    driver = cuda = None
    ecc_scope = ecc_bits = None

    def ensure():
        nonlocal current
        if current is None:
            current = _gpu(source="nvidia-smi-q")
            gpus.append(current)
        return current

    for raw in _lines(text):
        line = raw.rstrip()
        stripped = line.strip()
        head = re.match(r"^GPU\s+([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])$", stripped)
        if head:
            current = _gpu(pci_bus_id=gpu_facts.normalize_pci_bus_id(head.group(1)), source="nvidia-smi-q")
            gpus.append(current)
            section = None
            continue
        if stripped in _Q_SECTION_KEYS:
            section = _Q_SECTION_KEYS[stripped]
            ecc_scope = ecc_bits = None
            continue
        match = re.match(r"^(\s*)([^:]+?)\s*:\s*(.*)$", line)
        if not match:
            if section == "ecc" and stripped in ("Volatile", "Aggregate"):
                ecc_scope, ecc_bits = stripped.lower(), None
            elif section == "ecc" and stripped in ("Single Bit", "Double Bit"):
                ecc_bits = stripped
            elif stripped:
                section = None  # another section header (Bank Remap Availability Histogram...)
            continue
        indent, key, value = len(match.group(1)), match.group(2).strip(), match.group(3).strip()
        if indent == 0:
            if key == "Driver Version":
                driver = value
            elif key == "CUDA Version":
                cuda = value
            continue
        if key == "Product Name":
            ensure()["name"] = value
        elif key == "Persistence Mode":
            ensure()["persistence"] = gpu_facts._enabled(value)  # pylint: disable=protected-access
        elif section == "throttle" and key in _THROTTLE_KEYS:
            gpu = ensure()
            gpu["throttle_active"] = gpu["throttle_active"] or []
            if value == "Active":
                gpu["throttle_active"].append(key)
        elif section == "temp" and key in _Q_TEMP_KEYS:
            number = re.match(r"^(-?\d+)\s*C$", value)
            if number:
                gpu = ensure()
                gpu["temperature"] = gpu["temperature"] or {}
                gpu["temperature"][_Q_TEMP_KEYS[key]] = int(number.group(1))
        elif section == "counters" and key in ("SW Thermal Slowdown", "HW Thermal Slowdown", "HW Power Braking",
                                               "SW Power Capping", "Sync Boost"):
            number = re.match(r"^(\d+)\s*us$", value)
            if number:
                gpu = ensure()
                gpu["throttle_counters_us"] = gpu["throttle_counters_us"] or {}
                gpu["throttle_counters_us"][key] = int(number.group(1))
        elif section == "ecc" and ecc_scope and value.isdigit() and (
                "Uncorrectable" in key or (ecc_bits == "Double Bit" and key == "Total")):
            gpu = ensure()
            gpu["ecc_uncorrectable"] = gpu["ecc_uncorrectable"] or {}
            gpu["ecc_uncorrectable"][ecc_scope] = gpu["ecc_uncorrectable"].get(ecc_scope, 0) + int(value)
        elif section == "fb" and key == "Total":
            ensure()["memory_mib"] = gpu_facts._mib(value)  # pylint: disable=protected-access
        elif section == "util" and key == "Gpu":
            ensure()["util_pct"] = gpu_facts._to_int(value)  # pylint: disable=protected-access
        elif section == "remap" and key in ("Correctable Error", "Uncorrectable Error", "Pending",
                                            "Remapping Failure Occurred"):
            gpu = ensure()
            gpu["remapped_rows"] = gpu["remapped_rows"] or {}
            field = {"Correctable Error": "correctable", "Uncorrectable Error": "uncorrectable", "Pending": "pending",
                     "Remapping Failure Occurred": "failure"}[key]
            gpu["remapped_rows"][field] = (gpu_facts._to_int(value) if field in ("correctable", "uncorrectable")  # pylint: disable=protected-access
                                           else gpu_facts._enabled(value))  # pylint: disable=protected-access
        elif section == "retired" and key in ("Single Bit ECC", "Double Bit ECC", "Pending Page Blacklist",
                                              "Pending Page Retirement"):
            gpu = ensure()
            gpu["retired_pages"] = gpu["retired_pages"] or {}
            field = {"Single Bit ECC": "single_bit", "Double Bit ECC": "double_bit"}.get(key, "pending")
            gpu["retired_pages"][field] = (gpu_facts._enabled(value) if field == "pending"  # pylint: disable=protected-access
                                           else gpu_facts._to_int(value))  # pylint: disable=protected-access
    links = gpu_facts.parse_nvidia_smi_q_pcie(text)
    for link in links:
        target = next((g for g in gpus if link["pci_bus_id"] and g["pci_bus_id"] == link["pci_bus_id"]), None)
        if target is None:
            target = gpus[0] if len(gpus) == 1 and not link["pci_bus_id"] else None
        if target is None:
            target = _gpu(pci_bus_id=link["pci_bus_id"], source="nvidia-smi-q")
            gpus.append(target)
        target["pcie_link"] = {k: link[k] for k in ("gen_max", "gen_current", "width_max", "width_current")}
    return {"driver_version": driver, "cuda_version": cuda}, gpus


def _smi_xml(text):
    parsed = gpu_facts.parse_nvidia_smi_xml(text)
    import xml.etree.ElementTree as ET  # pylint: disable=import-outside-toplevel
    start = text.find("<?xml")
    root = ET.fromstring(text[start if start >= 0 else text.find("<nvidia_smi_log"):].strip())
    gpus = []
    for element, gpu in zip(root.findall("gpu"), parsed["gpus"]):
        reasons = element.find("clocks_event_reasons")
        if reasons is None:
            reasons = element.find("clocks_throttle_reasons")
        active = None
        if reasons is not None:
            active = [child.tag for child in reasons if (child.text or "").strip() == "Active"]
            names = {"hw_slowdown": "HW Slowdown", "hw_thermal_slowdown": "HW Thermal Slowdown",
                     "hw_power_brake_slowdown": "HW Power Brake Slowdown", "sw_thermal_slowdown": "SW Thermal Slowdown",
                     "gpu_idle": "Idle", "sw_power_cap": "SW Power Cap"}
            active = [names.get(re.sub(r"^clocks_(event|throttle)_reason_", "", tag), tag) for tag in active]
        remap = element.find("remapped_rows")
        remapped = None
        if remap is not None and len(remap):
            remapped = {"uncorrectable": gpu_facts._to_int(gpu_facts._text(remap, "remapped_row_unc")),  # pylint: disable=protected-access
                        "pending": gpu_facts._enabled(gpu_facts._text(remap, "remapped_row_pending")),  # pylint: disable=protected-access
                        "failure": gpu_facts._enabled(gpu_facts._text(remap, "remapped_row_failure"))}  # pylint: disable=protected-access
        retired = element.find("retired_pages")
        retired_pages = None
        if retired is not None:
            retired_pages = {
                "single_bit": gpu_facts._to_int(gpu_facts._text(retired, "multiple_single_bit_retirement/retired_count")),  # pylint: disable=protected-access
                "double_bit": gpu_facts._to_int(gpu_facts._text(retired, "double_bit_retirement/retired_count")),  # pylint: disable=protected-access
                "pending": gpu_facts._enabled(gpu_facts._text(retired, "pending_retirement")  # pylint: disable=protected-access
                                              or gpu_facts._text(retired, "pending_blacklist")),  # pylint: disable=protected-access
            }
        link = gpu.get("pcie_link")
        gpus.append(_gpu(name=gpu.get("name"), pci_bus_id=gpu.get("pci_bus_id"), memory_mib=gpu.get("memory_mb"),
                         persistence=gpu.get("persistence_mode"),
                         util_pct=gpu_facts._to_int(gpu_facts._text(element, "utilization/gpu_util")),  # pylint: disable=protected-access
                         pcie_link={k: link[k] for k in ("gen_max", "gen_current", "width_max", "width_current")}
                         if link else None,
                         throttle_active=active, retired_pages=retired_pages, remapped_rows=remapped,
                         source="nvidia-smi-xml"))
    return {"driver_version": parsed.get("driver_version"), "cuda_version": parsed.get("cuda_version")}, gpus


def _smi_csv(text):
    parsed = plan_captures.parse_query_gpu_csv(text)
    rows = [row for row in text.splitlines() if row.strip()]
    header = [cell.strip().lower().split(" [")[0] for cell in rows[0].split(",")]
    gpus = []
    for row, gpu in zip(rows[1:], parsed["gpus"]):
        values = dict(zip(header, [cell.strip() for cell in row.split(",")]))
        persistence = values.get("persistence_mode")
        gpus.append(_gpu(name=gpu.get("name"), pci_bus_id=gpu.get("pci_bus_id"), memory_mib=gpu.get("memory_mb"),
                         persistence=gpu_facts._enabled(persistence) if persistence else None,  # pylint: disable=protected-access
                         source="nvidia-smi-csv"))
    return {"driver_version": parsed.get("driver_version"), "cuda_version": None}, gpus


def _merge_gpu(gpus, new):
    for gpu in gpus:
        if new["pci_bus_id"] and gpu["pci_bus_id"] == new["pci_bus_id"]:
            for key, value in new.items():
                if gpu.get(key) in (None, [], {}) and value not in (None, [], {}):
                    gpu[key] = value
            return
    gpus.append(new)


def _kernel_lines(text):
    """Kernel messages of a dmesg/journalctl paste, with NVRM continuation lines joined to their first line."""
    lines = []
    for line in _lines(text):
        stripped = line.strip()
        if not stripped:
            continue
        continuation = re.match(r"^(?:NVRM: )(?!Xid|GPU at|loading|The NVIDIA|No NVIDIA|API mismatch|RmInit|GPU \d)",
                                stripped)
        if continuation and lines and line[:1] in (" ", "\t", "N"):
            lines[-1] = lines[-1] + " " + stripped[len("NVRM: "):]
        else:
            lines.append(stripped)
    return lines


def _size_mib(value, block):
    """``df`` sizes -> MiB: ``64M``, ``24G``, ``1.0G`` (-h), or a count of ``block``-byte blocks (``df`` 1024,
    ``df -B1`` 1)."""
    match = re.match(r"^(\d+(?:\.\d+)?)([KMGT]?)$", value)
    if not match:
        return None
    number, unit = float(match.group(1)), match.group(2)
    if not unit:
        return int(number * block / (1024 * 1024))
    return int(number * {"K": 1.0 / 1024, "M": 1, "G": 1024, "T": 1024 * 1024}[unit])


def _more_facts(facts, name, text, kinds):
    """Facts of the captures added for issue 46: messages, /proc/cmdline, AER, ACS, /dev/shm, cgroups, the container
    toolkit, /dev/nvidia*, P2P; every fact keeps the name of the capture it came from where a rule quotes it."""
    for entry in messages(text):
        entry["capture"] = name
        facts.setdefault("messages", []).append(entry)
    if "proc-cmdline" in kinds:
        match = _CMDLINE_RE.search(text)
        line = match.group(0).strip() if match else [l for l in _lines(text) if l.strip() and not l.startswith("$ ")][0].strip()
        facts["cmdline"] = {"line": line, "params": dict((p.split("=", 1) + [""])[:2] for p in line.split())}
    if "aer-counters" in kinds:
        for match in _AER_COUNT_RE.finditer(text):
            facts.setdefault("aer_counters", []).append({
                "pci_bus_id": match.group("addr"), "key": match.group("key"), "count": int(match.group("count")),
                "line": match.group(0).strip(), "capture": name})
    if "lspci-acs" in kinds:
        for match in _ACS_RE.finditer(text):
            flags = match.group("flags")
            facts.setdefault("acs", []).append({
                "enabled": bool(re.search(r"(?:SrcValid|ReqRedir|CmpltRedir)\+", flags)), "line": "ACSCtl: " + flags.strip(),
                "capture": name})
    if "df-shm" in kinds:
        block = 1 if re.search(r"\b1B-blocks\b", text) else 1024  # df -B1 (dlbox-collect), else df's 1K blocks
        sizes = [_size_mib(m.group("size"), block) for m in _DF_SHM_RE.finditer(text)]
        facts["shm_mib"] = {"mib": min(v for v in sizes if v is not None) if any(v is not None for v in sizes) else None,
                            "line": _DF_SHM_RE.search(text).group(0).strip(), "capture": name}
    if "cgroup-fs" in kinds:
        facts["cgroup_version"] = 2 if re.search(r"cgroup2", text) else 1
    match = _CTK_INFO_RE.search(text) if "ctk-info" in kinds else None
    if match:
        facts["ctk_info"] = {"nvrm": match.group("nvrm"), "cuda": match.group("cuda"),
                             "models": [m.group("model").strip() for m in _CTK_DEVICE_RE.finditer(text)]}
    if "ctk-config" in kinds:
        config = {}
        for line in _lines(text):
            match = re.match(r"^\s*#?\s*(?P<key>[\w.-]+)\s*=\s*(?P<value>.+?)\s*$", line)
            if match and not line.lstrip().startswith("#"):
                config[match.group("key")] = match.group("value").strip('"')
        facts["ctk_config"] = config
    if "dev-nvidia" in kinds:
        facts["dev_nvidia"] = sorted({m.group("node").rsplit("/", 1)[-1] for m in _DEV_NVIDIA_RE.finditer(text)})
    if "nvidia-smi-p2p" in kinds:
        facts["p2p_blocked"] = sorted({m.group(0).split()[0] for m in _P2P_RE.finditer(text)
                                       if re.search(r"\b(?:NS|CNS|GNS|TNS)\b", m.group(0))})


def extract_facts(texts):
    """Facts from captured texts (a list of strings or of ``(name, text)`` pairs), as one mapping.

    Keys appear only when some capture holds them: ``smi`` ({driver_version, cuda_version}), ``gpus``,
    ``smi_errors``, ``nvml_library_version``, ``kernel_lines``, ``lsmod`` (module names), ``proc_version``,
    ``uname_r``, ``os_release``, ``dkms`` / ``dkms_failures``, ``secure_boot``, ``module_errors``, ``dpkg``,
    ``holds``, ``pci_devices`` (NVIDIA functions from lspci/sysfs) with ``pci_seen`` (some PCI listing was
    captured), ``pci_links``, ``env``, ``path_lines``, ``ldconfig``, ``nvcc_releases``, ``framework``,
    ``docker_errors``, ``docker_info``, ``daemon_json``, ``kubernetes``, ``services``, ``missing_commands``.
    """
    facts = {}
    for number, item in enumerate(texts or []):
        name = item[0] if isinstance(item, (tuple, list)) else "capture %d" % (number + 1)
        text = item[1] if isinstance(item, (tuple, list)) else item
        text = gpu_facts._ANSI_RE.sub("", text or "")  # pylint: disable=protected-access
        kinds = set(recognize(text))
        if not kinds:
            continue
        facts["captures_read"] = facts.get("captures_read", 0) + 1
        _more_facts(facts, name, text, kinds)
        for kind, reader in (("nvidia-smi-xml", _smi_xml), ("nvidia-smi-q", _smi_q), ("nvidia-smi", _smi_table),
                             ("nvidia-smi-csv", _smi_csv)):
            if kind not in kinds:
                continue
            try:
                smi, gpus = reader(text)
            except (ValueError, plan_captures.CaptureError, IndexError):
                continue
            merged = facts.setdefault("smi", {"driver_version": None, "cuda_version": None})
            for key, value in smi.items():
                merged[key] = merged.get(key) or value
            for gpu in gpus:
                _merge_gpu(facts.setdefault("gpus", []), gpu)
        if "nvidia-smi-error" in kinds:
            for name, pattern in _SMI_ERRORS:
                for match in pattern.finditer(text):
                    facts.setdefault("smi_errors", []).append({"kind": name, "line": match.group(0).strip()})
        lib = _NVML_LIB_RE.search(text)
        if lib:
            facts["nvml_library_version"] = lib.group(1)
        if "kernel-log" in kinds:
            facts.setdefault("kernel_lines", []).extend(_kernel_lines(text))
        if "lsmod" in kinds:
            names = facts.setdefault("lsmod", set())
            for line in _lines(text):
                match = _LSMOD_RE.match(line)
                if match:
                    names.add(match.group("name"))
        if "proc-driver-version" in kinds:
            line = next(line for line in _lines(text) if "NVRM version:" in line)
            facts["proc_version"] = gpu_facts.parse_nvidia_proc_version(line[line.index("NVRM version:"):])
        if "uname" in kinds:
            match = _UNAME_A_RE.search(text)
            if match:
                facts["uname_r"] = match.group("release")
            else:
                for line in _lines(text)[:3]:
                    match = _UNAME_R_RE.match(line.strip())
                    if match:
                        facts["uname_r"] = match.group("release")
                        break
        if "os-release" in kinds:
            facts["os_release"] = gpu_facts.parse_os_release(text)
        if "dkms" in kinds:
            entries = facts.setdefault("dkms", [])
            for match in _DKMS_RE.finditer(text):
                entries.append({k: match.group(k) for k in ("module", "version", "kernel", "arch", "status")})
            for match in _DKMS_FAIL_RE.finditer(text):
                facts.setdefault("dkms_failures", []).append({"kernel": match.group("kernel"), "line": match.group(0)})
        if "mokutil" in kinds:
            facts["secure_boot"] = bool(re.search(r"^SecureBoot enabled", text, re.M))
        if "modprobe" in kinds:
            for match in _MODULE_ERR_RE.finditer(text):
                facts.setdefault("module_errors", []).append({
                    "module": match.group("module") or match.group("module2"),
                    "reason": (match.group("reason") or match.group("reason2")).strip(),
                    "line": match.group(0).strip()})
        if "dpkg" in kinds:
            packages = facts.setdefault("dpkg", {})
            for match in _DPKG_RE.finditer(text):
                packages[match.group("name")] = {"state": match.group("state"), "version": match.group("version")}
        if "apt-mark-showhold" in kinds:
            holds = facts.setdefault("holds", set())
            for line in _lines(text):
                line = line.strip()
                if _PKG_NAME_RE.match(line):
                    holds.add(line.split(":")[0])
        if "lspci" in kinds:
            if re.search(r"^(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7] ", text, re.M):
                facts["pci_seen"] = True  # a device list, not grepped LnkSta lines
            devices = facts.setdefault("pci_devices", [])
            for device in gpu_facts.parse_lspci_nn(text):
                devices.append({"pci_bus_id": device["pci_bus_id"], "name": device["name"], "kind": device["kind"],
                                "driver_in_use": None})
            for link in gpu_facts.parse_lspci_links(text):
                facts.setdefault("pci_links", []).append(link)
                if link["nvidia"]:
                    known = next((d for d in devices if d["pci_bus_id"] == link["pci_bus_id"]), None)
                    if known is None:
                        known = {"pci_bus_id": link["pci_bus_id"], "name": link["description"], "kind": "gpu",
                                 "driver_in_use": None}
                        devices.append(known)
                    known["driver_in_use"] = link["driver_in_use"]
        if "pci-sysfs" in kinds:
            facts["pci_seen"] = True
            devices = facts.setdefault("pci_devices", [])
            for match in _SYSFS_PCI_RE.finditer(text):
                gpu = gpu_facts.classify_sysfs_pci(match.group("addr"), match.group("vendor"), match.group("device"),
                                                   match.group("cls"))
                if gpu and not any(d["pci_bus_id"] == gpu["pci_bus_id"] for d in devices):
                    devices.append({"pci_bus_id": gpu["pci_bus_id"], "name": None, "kind": gpu.get("kind", "gpu"),
                                    "driver_in_use": None})
        if "env" in kinds:
            env = facts.setdefault("env", {})
            for line in _lines(text):
                match = _ENV_RE.match(line)
                if match:
                    env[match.group("key")] = match.group("value")
                elif re.match(r"^(/[\w.+-]+)+(:(/[\w.+-]+)+)+:?\s*$", line.strip()):
                    facts.setdefault("path_lines", []).append(line.strip())
        if "ldconfig" in kinds:
            facts.setdefault("ldconfig", []).extend(
                {"lib": m.group("lib"), "path": m.group("path")} for m in _LDCONFIG_RE.finditer(text))
        if "nvcc" in kinds:
            releases = facts.setdefault("nvcc_releases", [])
            for match in _NVCC_RE.finditer(text):
                if match.group("release") not in releases:
                    releases.append(match.group("release"))
        if "framework-probe" in kinds or "python-traceback" in kinds:
            for name, pattern in _FRAMEWORK_MESSAGES:
                for match in pattern.finditer(text):
                    entry = {"kind": name, "line": match.group(0).strip()}
                    entry.update({k: v for k, v in match.groupdict().items() if v})
                    facts.setdefault("framework", []).append(entry)
            for match in _PROBE_RE.finditer(text):
                available = re.search(r"\bavailable (True|False)", match.group(0))
                facts.setdefault("framework_probe", []).append(
                    {"version": match.group("version"), "cuda": match.group("cuda"), "line": match.group(0).strip(),
                     "available": available.group(1) == "True" if available else None})
            for match in _COLLECT_ENV_RE.finditer(text):
                rest = match.group("rest")
                cuda = re.search(r"^\s*CUDA used to build PyTorch:\s*(.+?)\s*$", rest, re.M)
                available = re.search(r"^\s*Is CUDA available:\s*(\w+)", rest, re.M)
                driver = re.search(r"^\s*Nvidia driver version:\s*([\d.]+)", rest, re.M)
                gpu = re.search(r"^\s*GPU models and configuration:\s*(?:\n\s*)?(GPU 0: .+)$", rest, re.M)
                built = cuda.group(1) if cuda else None
                facts.setdefault("framework_probe", []).append({
                    "version": match.group("version"),
                    "cuda": built if built and re.match(r"^\d+\.\d+", built) else "None",
                    "available": (available.group(1) in ("True", "Yes")) if available else None,
                    "driver": driver.group(1) if driver else None, "gpu": gpu.group(1).strip() if gpu else None,
                    "line": "PyTorch version: %s, CUDA used to build PyTorch: %s" % (match.group("version"), built)})
        if "docker-error" in kinds:
            for name, pattern in _DOCKER_ERRORS:
                for match in pattern.finditer(text):
                    facts.setdefault("docker_errors", []).append({"kind": name, "line": match.group(0).strip()})
        if "docker-info" in kinds:
            runtimes = _DOCKER_INFO_RE.search(text)
            default = _DOCKER_DEFAULT_RE.search(text)
            facts["docker_info"] = {"runtimes": runtimes.group("runtimes").split() if runtimes else None,
                                    "default_runtime": default.group("runtime") if default else None}
        if "docker-daemon-json" in kinds:
            for obj in _json_objects(text):
                facts["daemon_json"] = obj
        if "kubernetes" in kinds:
            facts.setdefault("kubernetes", []).extend(m.group(0) for m in _K8S_RE.finditer(text))
        if "systemd" in kinds:
            services = facts.setdefault("services", {})
            unit = _UNIT_NAME_RE.search(text)
            state = _UNIT_STATE_RE.search(text)
            if unit and state:
                services[unit.group("unit")] = {"state": state.group("state"), "sub": state.group("sub"),
                                                "line": state.group(0).strip()}
            for match in _JOB_FAILED_RE.finditer(text):
                services[match.group("unit") or match.group("unit2")] = {"state": "failed", "sub": None,
                                                                         "line": match.group(0)}
        if "dlbox-collect-missing" in kinds:
            for match in _MISSING_RE.finditer(text):
                facts.setdefault("missing_commands", set()).add(match.group("cmd") or match.group("cmd2"))
    return facts
