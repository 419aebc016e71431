# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every doctor rule against recorded real outputs (tests/fixtures/doctor, sources in tests/fixtures/SOURCES.md).

The rules run on the frozen copy of data/doctor.yml (tests/unit/data/doctor-frozen.yml), so a data refresh does
not rewrite these tests.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.dlbox.stack.plugins.plugin_utils import doctor, doctor_rules
from ansible_collections.dlbox.stack.plugins.plugin_utils.doctor_captures import extract_facts
from ansible_collections.dlbox.stack.plugins.plugin_utils.doctor_data import load_doctor_data

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"
DOCTOR = FIXTURES / "doctor"
SMI = FIXTURES / "nvidia-smi"
DATA = load_doctor_data(Path(__file__).resolve().parents[2] / "data" / "doctor-frozen.yml")


def _report(*paths):
    captures = [(p.name, p.read_text(encoding="utf-8")) for p in paths]
    return doctor.diagnose(captures, host="h", data=DATA)


def _ids(report, severity=None):
    return sorted({f["id"] for f in report["findings"] if severity is None or f["severity"] == severity})


def _finding(report, rule_id):
    found = [f for f in report["findings"] if f["id"] == rule_id]
    assert found, (rule_id, report["findings"])
    return found[0]


# ------------------------------------------------------------------------------------------------ one row per rule
POSITIVE = [
    # (rule id, severity, fixture files, a text the evidence must contain)
    ("driver-library-mismatch", "error", ["nvml-mismatch-570.txt"], "Driver/library version mismatch"),
    ("driver-library-mismatch", "error", ["nvml-mismatch-proc-version-580.txt"],
     "NVML library 580.178, loaded kernel module 580.173.02"),
    ("driver-not-loaded", "error", ["smi-cannot-communicate.txt"], "couldn't communicate"),
    ("driver-not-loaded", "error", ["dmesg-probe-not-called-nouveau.txt"], "probe routine was not called"),
    ("nouveau-loaded", "error", ["dmesg-probe-not-called-nouveau.txt"], "obtained ownership"),
    ("nouveau-loaded", "error", ["lspci-vv-kernel-driver-nouveau.txt"], "Kernel driver in use: nouveau"),
    ("secure-boot-module-rejected", "error", ["journal-modprobe-key-rejected.txt"],
     "could not insert 'nvidia': Key was rejected by service"),
    # two real captures of different machines read together: the refusal, and a mokutil that says Secure Boot is on
    ("secure-boot-module-rejected", "error", ["journal-modprobe-key-rejected.txt", "mokutil-sb-enabled.txt"],
     "mokutil --sb-state: SecureBoot enabled"),
    ("dkms-not-built-for-kernel", "error", ["dkms-build-failed-for-kernel.txt"],
     "Bad return status for module build on kernel: 5.13.18-21.09.16.amdgpu.ubuntu"),
    # two real captures of different machines, read together: DKMS built for 4.17.x, the kernel runs 6.12.15
    ("dkms-not-built-for-kernel", "error", ["dkms-status-three-kernels.txt", "uname-a-fedora41.txt"],
     "running kernel 6.12.15-200.fc41.x86_64; dkms status has nvidia for: 4.17.11-200.fc28.x86_64 (installed)"),
    ("open-modules-unsupported-gpu", "error", ["journal-open-unsupported-gt1030.txt"], "not supported by open"),
    ("gsp-firmware-missing", "error", ["dmesg-gsp-firmware-load-failed.txt"],
     "Direct firmware load for nvidia/515.43.04/gsp.bin failed with error -2"),
    ("cuda-path-conflict", "warning", ["nvcc-two-versions-path.txt"], "CUDA 12.0 and 12.8"),
    ("framework-cuda-too-new-for-driver", "error", ["torch-driver-too-old-11040.txt"],
     "found version 11040 = the driver supports CUDA 11.4"),
    ("no-kernel-image-for-device", "error", ["traceback-no-kernel-image.txt"], "no kernel image is available"),
    ("no-kernel-image-for-device", "error", ["torch-sm86-not-compatible.txt"], "CUDA capability sm_86 is not compatible"),
    # NVIDIA's catalog: Xid 38 IGNORE (info), Xid 109 RESET_GPU (error), Xid 13 RESTART_APP (warning)
    ("xid-error", "info", ["journal-k-xid-38-109.txt"], "Xid 38 (Driver firmware error)"),
    ("xid-error", "error", ["journal-k-xid-38-109.txt"], "Xid 109 (Context switch timeout error)"),
    ("xid-error", "error", ["dmesg-fallen-off-bus-no-xid.txt"], "Xid 79 (GPU has fallen off the bus)"),
    ("xid-error", "warning", ["dmesg-xid-13-109.txt"], "Xid 13 (Graphics Engine Exception"),
    ("ecc-retired-or-remapped", "error", ["smi-q-remapped-rows-pending.txt"], "Pending: Yes (uncorrectable rows: 4)"),
    ("gpu-throttled", "warning", ["smi-q-a10-hw-slowdown-mock.txt"], "HW Slowdown, HW Power Brake Slowdown"),
    ("persistence-off", "info", ["smi-table-rtx3090-455.txt"], "GeForce RTX 3090 (0000:01:00.0): persistence mode off"),
    ("fabricmanager-down", "error", ["torch-error-802-fabricmanager.txt"], "Error 802: system not yet initialized"),
    # a failed Fabric Manager with nothing that shows an NVSwitch is not an error (it exits NV_WARN_NOTHING_TO_DO there)
    ("fabricmanager-not-needed", "info", ["service-fabricmanager-failed.txt"], "Job for nvidia-fabricmanager.service failed"),
    ("fabricmanager-not-needed", "info", ["corpus/fm-nothing-to-do-2x4090.txt"], "NV_WARN_NOTHING_TO_DO"),
    # issue 49 (sources: tests/fixtures/fabric/SOURCES.md, tests/fixtures/imex/SOURCES.md)
    ("fabricmanager-version-mismatch", "error", ["../fabric/fm-version-mismatch-gpudrivercontainer735.txt"],
     "interface version 590.48.01 don't match with driver version 580.126.09"),
    ("nvlsm-ib-umad-missing", "error", ["../fabric/nvlsm-no-ib-umad-siderolabs-docs581.txt"], "is ib_umad module loaded?"),
    ("imex-not-ready", "error", ["../imex/healthagent-imex-degraded-lsr-hpc85.txt"], "IMEX domain status is DEGRADED"),
    ("pcie-link-degraded", "warning", ["smi-q-width-x8-under-load.txt"], "link width x8 of x16"),
    ("pcie-link-degraded", "warning", ["lspci-vv-lnksta-x1-downgraded.txt"], "link width x1 of x?"),
    ("docker-gpu-runtime-missing", "error", ["docker-run-gpus-no-runtime.txt"],
     'could not select device driver "" with capabilities: [[gpu]]'),
    ("docker-gpu-runtime-missing", "error", ["compose-gpu-driver-nvidia.txt"], 'device driver "nvidia"'),
    ("docker-gpu-runtime-missing", "error", ["docker-unknown-runtime-dpkg-l.txt"], "Unknown runtime specified nvidia"),
    ("docker-gpu-runtime-missing", "error", ["docker-info-runtimes-daemon-json.txt"],
     "Runtimes: io.containerd.runc.v2 runc (no nvidia), although daemon.json declares it"),
    ("nvml-unknown-error-in-container", "error", ["nvml-unknown-error-container.txt"],
     "Failed to initialize NVML: Unknown Error"),
    ("nvidia-docker2-legacy", "warning", ["docker-unknown-runtime-dpkg-l.txt"], "ii nvidia-docker2 2.0.0+docker17.09.0-1"),
    ("held-packages-missing", "warning", ["docker-unknown-runtime-dpkg-l.txt"], "ii nvidia-384 (not held)"),
    ("gpu-memory-too-small", "warning", ["smi-table-gt1030-2gb.txt"], "GeForce GT 1030: 1998 MiB"),
    ("k8s-gpu-unschedulable", "error", ["k8s-insufficient-gpu.txt"], "Insufficient nvidia.com/gpu"),
    # issue 46: the classes users paste (tests/fixtures/doctor/corpus, sources in cases.yml and SOURCES.md)
    ("container-cgroup-device-rules", "error", ["corpus/ctk-bpf-device-filters-lxc.txt"],
     "bpf_prog_query(BPF_CGROUP_DEVICE) failed"),
    ("container-driver-libraries-not-found", "error", ["corpus/ctk-load-library-nvml-rocky9.txt"],
     "load library failed: libnvidia-ml.so.1"),
    ("driver-library-mismatch", "error", ["corpus/ctk-nvml-mismatch-plex.txt"], "nvml error: driver/library version mismatch"),
    ("cuda-forward-compat-unsupported", "error", ["corpus/cuda-804-compat-smi-470-cuda121.txt"],
     "nvidia-smi: driver 470.57.02 reports CUDA 12.1"),
    ("cuda-driver-combination-unsupported", "error", ["corpus/cuda-803-caffe-check-failed.txt"], "(803 vs. 0)"),
    ("cuda-unknown-error", "error", ["corpus/cuda-999-after-suspend-torch.txt"], "CUDA unknown error"),
    ("gpu-lost", "error", ["corpus/gpu-lost-device-handle-0b.txt"], "Unable to determine the device handle"),
    ("gpu-lost", "error", ["dmesg-fallen-off-bus-no-xid.txt"], "fallen off the bus"),
    ("gpu-init-failed", "error", ["corpus/rm-init-adapter-failed-openshift.txt"], "RmInitAdapter failed! (0x11:0x45:2525)"),
    ("gsp-init-failed", "error", ["corpus/gsp-init-failed-3090-gfw-boot.txt"], "Cannot initialize GSP firmware RM"),
    ("gsp-rpc-timeout", "error", ["corpus/gsp-xid-119-rpc-timeout-gpud.txt"], "waiting for RPC response from GPU4 GSP"),
    ("pcie-aer-errors", "error", ["corpus/aer-uncorrected-fatal-nvidia-returnn.txt"], "severity=Uncorrected (Fatal)"),
    # a port with no NVIDIA device in the paste: a warning naming it, not the GPU's (issue 46 red-team)
    ("pcie-aer-other-device", "warning", ["corpus/aer-root-port-correctable-pop.txt"], "severity=Correctable"),
    ("pcie-aer-other-device", "warning", ["corpus/rt-aer-ahci-uncorrected-rpi.txt"], "ahci 0000:01:00.0"),
    ("container-driver-file-exists", "error", ["corpus/rt-ctk-legacy-libnvidia-ml-file-exists.txt"],
     "libnvidia-ml.so.1: file exists"),
    ("cuda-out-of-memory", "error", ["corpus/rt-torch-oom.txt"], "torch.cuda.OutOfMemoryError: CUDA out of memory"),
    ("dkms-not-built-for-kernel", "error", ["corpus/rt-modprobe-module-not-found-aws.txt"],
     "no nvidia module for kernel 6.8.0-1015-aws"),
    ("ecc-uncorrectable", "error", ["corpus/ecc-uncorrectable-tensorflow-4090.txt"], "CUDA_ERROR_ECC_UNCORRECTABLE"),
    ("secure-boot-module-rejected", "error", ["corpus/lockdown-nvidia-eperm-bottlerocket.txt"],
     "could not insert 'nvidia': Operation not permitted"),
    ("shm-too-small", "error", ["corpus/shm-dataloader-bus-error-kraken.txt"], "killed by signal: Bus error"),
    ("libcuda-missing", "error", ["corpus/libcuda-missing-import-torch-docker.txt"], "libcuda.so.1: cannot open"),
    ("cuda-libraries-missing", "error", ["corpus/cudnn-nvrtc-missing-a1111.txt"], "Error: libnvrtc.so: cannot open"),
    ("libcuda-stub-shadowed", "error", ["corpus/libcuda-stub-numba-libs-test.txt"], "/stubs/libcuda.so"),
    ("cuda-visible-devices-no-gpu", "error", ["corpus/cvd-no-cuda-gpus-corgs.txt"], "No CUDA GPUs are available"),
    ("cuda-toolkit-mismatch", "error", ["corpus/toolkit-mismatch-droidcalib.txt"], "(nvcc: CUDA 12.1, PyTorch: CUDA 11.3)"),
    ("pcie-acs-enabled", "warning", ["corpus/nccl-acs-srcvalid-amd-switch.txt"], "4 of 9 bridges have ACS on"),
    ("gpu-throttled", "warning", ["corpus/thermal-max-operating-temp-mx330.txt"],
     "GPU Current Temp 56 C, GPU Max Operating Temp 57 C: at its thermal limit"),
    ("gpu-throttled", "warning", ["corpus/thermal-sw-slowdown-counter-gh200.txt"], "SW Thermal Slowdown 0.9 s"),
    ("docker-gpu-runtime-missing", "error", ["corpus/docker-gpus-no-toolkit-old-format.txt"],
     "could not select device driver with capabilities: [[gpu]]"),
    ("unexplained-error", "error", ["corpus/lockdown-other-module-evdi.txt"], "could not insert 'evdi'"),
    # python -m torch.utils.collect_env as users paste it
    ("framework-cpu-only-build", "error", ["corpus/torch-collect-env-cpu-build-2080ti.txt"],
     "PyTorch version: 1.3.1, CUDA used to build PyTorch: Could not collect"),
    ("framework-cpu-only-build", "warning", ["corpus/torch-collect-env-cpu-build-windows.txt"], "1.7.1+cpu"),
    ("framework-cuda-too-new-for-driver", "error", ["corpus/torch-collect-env-cu102-driver-418.txt"],
     "but the driver supports CUDA 10.1 (nvidia-smi)"),
    ("driver-not-loaded", "error", ["corpus/torch-no-nvidia-driver-found.txt"], "Found no NVIDIA driver on your system"),
]


@pytest.mark.parametrize("rule_id, severity, files, evidence", POSITIVE,
                         ids=["%s-%s" % (row[0], row[2][0].split(".")[0]) for row in POSITIVE])
def test_rule_fires_on_a_recorded_output(rule_id, severity, files, evidence):
    report = _report(*[DOCTOR / name for name in files])
    finding = [f for f in report["findings"] if f["id"] == rule_id and f["severity"] == severity]
    assert finding, report["findings"]
    assert any(evidence in item for f in finding for item in f["evidence"]), finding
    assert all(f["fix"] and f["title"] for f in finding)


def test_every_rule_has_a_recorded_positive_case():
    assert {row[0] for row in POSITIVE} | {"no-gpu"} == set(doctor_rules.RULE_IDS) | set(doctor_rules.EXTRA_IDS) | {
        "unexplained-error"}


# ------------------------------------------------------------------------------------------------ negatives
@pytest.mark.parametrize("files, rule_id", [
    # Secure Boot rejected other modules, not nvidia: not this rule
    (["systemctl-dkms-key-rejected-other-modules.txt"], "secure-boot-module-rejected"),
    # an idle GPU at Gen1 with full width is power saving (nvidia-smi -q, lspci LnkSta "downgraded" speed)
    (["smi-q-a10-550-idle.txt"], "pcie-link-degraded"),
    (["lspci-lnksta-gen1-idle-x16.txt"], "pcie-link-degraded"),
    # "Idle : Active" is not throttling
    (["smi-q-throttle-idle-kubeflow.txt"], "gpu-throttled"),
    (["smi-q-a10-550-idle.txt"], "ecc-retired-or-remapped"),
    # one nvcc only
    (["nvcc-11.7.txt"], "cuda-path-conflict"),
    # the nvidia modules are loaded, nouveau is not
    (["lsmod-grep-nvidia.txt"], "nouveau-loaded"),
    (["lsmod-grep-nvidia.txt"], "driver-not-loaded"),
])
def test_rule_stays_quiet_on_a_healthy_output(files, rule_id):
    report = _report(*[DOCTOR / name for name in files])
    assert rule_id not in _ids(report)
    assert rule_id not in [item["id"] for item in report["not_checked"]]


def test_dkms_without_the_running_kernel_is_not_checked():
    report = _report(DOCTOR / "dkms-status-three-kernels.txt")
    assert "dkms-not-built-for-kernel" in [item["id"] for item in report["not_checked"]]


def test_lspci_grep_of_link_lines_is_no_proof_of_no_gpu():
    report = _report(DOCTOR / "lspci-lnksta-gen1-idle-x16.txt")
    assert "no-gpu" not in _ids(report)


# ------------------------------------------------------------------------------------------------ healthy machines
HEALTHY = [
    ("RTX 4090, driver 535 (idle at Gen1 x16)", [SMI / "rtx-4090-driver-535.xml"]),
    ("A100 SXM4 MIG, driver 510", [SMI / "a100-sxm4-mig.xml"]),
    ("Tesla P100, driver 510", [SMI / "tesla-p100-driver-510.xml"]),
    ("H200, driver 580 (lent host)", [SMI / "h200-driver-580-device.xml", SMI / "h200-query-gpu-device.csv",
                                      SMI / "topo-1x-h200-device.txt"]),
    ("A10, driver 550 (table and -q, idle at Gen1)", [DOCTOR / "smi-table-a10-550.txt", DOCTOR / "smi-q-a10-550-idle.txt"]),
    ("Tesla T4, driver 570", [DOCTOR / "smi-table-t4-570.txt"]),
]


@pytest.mark.parametrize("label, files", HEALTHY, ids=[row[0] for row in HEALTHY])
def test_a_healthy_machine_has_no_error(label, files):
    report = _report(*files)
    assert report["ok"] is True
    assert _ids(report, "error") == []
    assert "pcie-link-degraded" not in _ids(report)
    assert report["unrecognized"] == []


def test_xid_codes_missing_from_the_data_are_errors_named_not_guessed():
    data = dict(DATA, xid=dict(DATA["xid"], codes=[c for c in DATA["xid"]["codes"] if c["code"] != 38]))
    facts = extract_facts([(DOCTOR / "journal-k-xid-38-109.txt").read_text()])
    findings = doctor_rules.xid_error(facts, data)
    xid38 = [f for f in findings if "Xid 38 " in f["title"]]
    assert xid38[0]["severity"] == "error"
    assert "not in NVIDIA's Xid catalog as data/doctor.yml holds it" in xid38[0]["title"]


def test_xid_severity_and_action_come_from_the_catalog_in_the_data():
    facts = extract_facts(["[ 1.0] NVRM: Xid (PCI:0000:01:00): 46, pid=1, GPU stopped processing"])
    finding = doctor_rules.xid_error(facts, DATA)[0]
    entry = [c for c in DATA["xid"]["codes"] if c["code"] == 46][0]
    assert finding["severity"] == entry["severity"]
    assert entry["action"] in finding["fix"] and DATA["xid"]["actions"][entry["action"]] in finding["fix"]


def test_memory_threshold_comes_from_the_data():
    facts = extract_facts([(DOCTOR / "smi-table-t4-570.txt").read_text()])
    assert doctor_rules.gpu_memory_too_small(facts, DATA) == []
    bigger = dict(DATA, min_gpu_memory_mib={"value": 16384, "source": "test"})
    assert doctor_rules.gpu_memory_too_small(facts, bigger)[0]["evidence"] == ["Tesla T4: 15360 MiB"]


def test_gen_below_max_counts_only_under_load():
    facts = extract_facts([(DOCTOR / "smi-q-a10-550-idle.txt").read_text()])
    assert facts["gpus"][0]["pcie_link"] == {"gen_max": 4, "gen_current": 1, "width_max": 16, "width_current": 16}
    facts["gpus"][0]["util_pct"] = 97  # the same link while a job runs
    finding = doctor_rules.pcie_link_degraded(facts, DATA)
    assert finding[0]["evidence"] == ["PCIe Gen1 of Gen4 at 97% GPU utilisation"]


def test_nothing_captured_means_nothing_checked():
    report = doctor.diagnose([], host="h", data=DATA)
    assert report["findings"] == []
    assert [item["id"] for item in report["not_checked"]] == list(doctor_rules.RULE_IDS)


# ------------------------------------------------------------------------------------------------ never silent
def test_an_error_no_rule_knows_is_quoted_with_its_capture():
    # a module refused under lockdown that is not NVIDIA's: no rule is about it, the doctor quotes it
    report = _report(DOCTOR / "corpus" / "lockdown-other-module-evdi.txt")
    found = _finding(report, "unexplained-error")
    assert found["severity"] == "error" and report["ok"] is False
    assert "lockdown-other-module-evdi.txt: gen 12 16:49:32 Tacos sh[28117]: modprobe: ERROR: could not insert 'evdi': " \
        "Operation not permitted" in found["evidence"]
    assert "secure-boot-module-rejected" not in _ids(report)


def test_error_lines_beside_an_explained_error_are_a_warning():
    # the GSP timeout is explained; the memory-subsystem lines around it are quoted, as a warning
    report = _report(DOCTOR / "corpus" / "gsp-timeout-heartbeat-gh100.txt")
    assert _ids(report, "error") == ["gsp-rpc-timeout"]
    assert any("kgmmuCheckMemSubsysError_IMPL" in e for e in _finding(report, "unexplained-error")["evidence"])


def test_a_rule_a_capture_contradicts_is_not_called_clean():
    # Secure Boot's rule found nothing (the refused module is not NVIDIA's), but a capture shows a lockdown line
    report = _report(DOCTOR / "corpus" / "lockdown-other-module-evdi.txt")
    assert "secure-boot-module-rejected" not in report["checked"]
    contradicted = [c for c in report["contradicted"] if c["id"] == "secure-boot-module-rejected"]
    assert contradicted and "Lockdown:" in contradicted[0]["line"]
    assert any(line.startswith("Not called clean: secure-boot-module-rejected") for line in doctor.report_text(report))


def test_healthy_outputs_give_no_unexplained_error():
    for path in [DOCTOR / "smi-q-a10-550-idle.txt", DOCTOR / "lspci-vv-kernel-driver-nouveau.txt",
                 DOCTOR / "corpus" / "healthy-ctk-info-debug-start-418.txt", DOCTOR / "ctk-config-toml-ldconfig-real.txt"]:
        assert "unexplained-error" not in _ids(_report(path)), path.name


def test_docker_info_without_the_nvidia_runtime_alone_is_no_error():
    # --gpus needs only nvidia-container-runtime-hook on PATH: a docker info that lists no nvidia runtime, with no
    # daemon.json that asks for one and no docker error, is not a finding (the healthy GT 1030 ran --gpus-less here)
    text = "Server Version: 20.10.2\n Runtimes: io.containerd.runc.v2 io.containerd.runtime.v1.linux runc\n" \
           " Default Runtime: runc\n"
    facts = extract_facts([text])
    assert doctor_rules.docker_gpu_runtime_missing(facts, DATA) == []
    facts["missing_commands"] = {"nvidia-container-runtime-hook"}
    assert "not on PATH" in doctor_rules.docker_gpu_runtime_missing(facts, DATA)[0]["evidence"][-1]


def test_fabric_manager_down_needs_nvswitch_evidence():
    failed = (DOCTOR / "service-fabricmanager-failed.txt").read_text()
    assert _ids(_report(DOCTOR / "service-fabricmanager-failed.txt"), "error") == []
    # a constructed line in the SXid format of NVIDIA's Fabric Manager user guide (no public paste at hand)
    nvswitch = "[  10.1] nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 32 egress non-posted PRIV error\n"
    report = doctor.diagnose([("fm", failed), ("dmesg", nvswitch)], host="h", data=DATA)
    assert "fabricmanager-down" in _ids(report, "error")


def test_a_small_dev_shm_is_a_warning_only_where_deep_learning_runs():
    # Docker's default 64 MB /dev/shm, as df -B1 prints it (a constructed capture in dlbox-collect's form)
    shm = "$ df -B1 /dev/shm\nFilesystem     1B-blocks  Used Available Use% Mounted on\nshm             67108864     0  67108864   0% /dev/shm\n"
    assert "shm-too-small" not in _ids(doctor.diagnose([("dev-shm", shm)], host="h", data=DATA))
    report = doctor.diagnose([("dev-shm", shm), ("smi", (DOCTOR / "smi-table-t4-570.txt").read_text())], host="h", data=DATA)
    found = _finding(report, "shm-too-small")
    assert found["severity"] == "warning" and "/dev/shm is 64 MiB" in found["evidence"][0]


def test_secure_boot_fix_names_the_key_of_the_distribution():
    """DKMS signs with /var/lib/shim-signed/mok/MOK.der on Ubuntu (roles/nvidia_driver/README.md, data/compat.yml)
    and /var/lib/dkms/mok.pub on Debian 12 (DKMS 3; Debian wiki, SecureBoot): the fix names the one of the captured
    distribution, both when no os-release was captured (issue 46 red-team)."""
    refused = DOCTOR / "corpus" / "lockdown-nvidia-eperm-bottlerocket.txt"
    fixes = {}
    for name in ("os-release-debian12.txt", "os-release-ubuntu2204.txt", None):
        paths = [refused] + ([DOCTOR / name] if name else [])
        fixes[name] = [f["fix"] for f in _report(*paths)["findings"] if f["id"] == "secure-boot-module-rejected"][0]
    assert "/var/lib/dkms/mok.pub" in fixes["os-release-debian12.txt"]
    assert "shim-signed" not in fixes["os-release-debian12.txt"]
    assert "/var/lib/shim-signed/mok/MOK.der" in fixes["os-release-ubuntu2204.txt"]
    assert "/var/lib/dkms/mok.pub" not in fixes["os-release-ubuntu2204.txt"]
    assert "/var/lib/shim-signed/mok/MOK.der" in fixes[None] and "/var/lib/dkms/mok.pub" in fixes[None]
