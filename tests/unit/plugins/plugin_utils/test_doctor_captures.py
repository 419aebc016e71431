# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The doctor's content recognition and captures I/O, on recorded real outputs (tests/fixtures/SOURCES.md)."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from ansible_collections.dlbox.stack.plugins.plugin_utils import doctor, doctor_captures
from ansible_collections.dlbox.stack.plugins.plugin_utils.doctor_captures import KINDS, extract_facts, recognize
from ansible_collections.dlbox.stack.plugins.plugin_utils.doctor_data import load_doctor_data

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"
DOCTOR = FIXTURES / "doctor"
DATA = load_doctor_data(Path(__file__).resolve().parents[2] / "data" / "doctor-frozen.yml")


@pytest.mark.parametrize("path, kinds", [
    (DOCTOR / "nvml-mismatch-570.txt", ["nvidia-smi-error"]),
    (DOCTOR / "nvml-mismatch-proc-version-580.txt", ["nvidia-smi-error", "proc-driver-version"]),
    (DOCTOR / "smi-table-t4-570.txt", ["nvidia-smi"]),
    (DOCTOR / "smi-q-a10-550-idle.txt", ["nvidia-smi-q"]),
    (DOCTOR / "smi-q-remapped-rows-pending.txt", ["nvidia-smi-q"]),
    (FIXTURES / "nvidia-smi" / "h200-driver-580-device.xml", ["nvidia-smi-xml"]),
    (FIXTURES / "nvidia-smi" / "h200-query-gpu-device.csv", ["nvidia-smi-csv"]),
    (FIXTURES / "nvidia-smi" / "topo-2x-rtx3090-pcie.txt", ["nvidia-smi-topo"]),
    (DOCTOR / "dmesg-xid-13-109.txt", ["kernel-log"]),
    (DOCTOR / "journal-k-xid-38-109.txt", ["kernel-log"]),
    (DOCTOR / "proc-driver-version-open-565.txt", ["proc-driver-version"]),
    (DOCTOR / "uname-a-fedora41.txt", ["uname"]),
    (DOCTOR / "lsmod-grep-nvidia.txt", ["lsmod"]),
    (DOCTOR / "mokutil-sb-enabled.txt", ["mokutil"]),
    (DOCTOR / "dkms-status-three-kernels.txt", ["dkms"]),
    (FIXTURES / "driver" / "debian12-dkms-status.txt", ["dkms"]),
    (DOCTOR / "journal-modprobe-key-rejected.txt", ["modprobe", "error-message"]),
    (DOCTOR / "docker-unknown-runtime-dpkg-l.txt", ["dpkg", "docker-error"]),
    (DOCTOR / "lspci-vv-kernel-driver-nouveau.txt", ["lspci"]),
    (DOCTOR / "lspci-lnksta-gen1-idle-x16.txt", ["lspci"]),
    (FIXTURES / "lspci" / "h100-sxm5-4x-grep-nvidia.lspci-nn.txt", ["lspci"]),
    (DOCTOR / "nvcc-two-versions-path.txt", ["env", "nvcc"]),
    (DOCTOR / "traceback-no-kernel-image.txt", ["python-traceback", "framework-probe"]),
    (DOCTOR / "docker-info-runtimes-daemon-json.txt", ["docker-info", "docker-daemon-json"]),
    (DOCTOR / "compose-gpu-driver-nvidia.txt", ["docker-error"]),
    (DOCTOR / "k8s-insufficient-gpu.txt", ["kubernetes"]),
    (DOCTOR / "service-fabricmanager-failed.txt", ["systemd"]),
    (FIXTURES.parents[1] / "LICENSE", []),
])
def test_recognized_by_content(path, kinds):
    assert recognize(path.read_text(encoding="utf-8")) == kinds


def test_every_kind_is_a_known_name():
    for path in sorted(DOCTOR.rglob("*.txt")):
        assert set(recognize(path.read_text())) <= set(KINDS)
        assert recognize(path.read_text()), "%s is recognised as nothing" % path.name


def test_facts_of_a_table_and_of_q_merge_by_bus_id():
    facts = extract_facts([(DOCTOR / "smi-table-a10-550.txt").read_text(), (DOCTOR / "smi-q-a10-550-idle.txt").read_text()])
    assert facts["smi"] == {"driver_version": "550.127.05", "cuda_version": "12.4"}
    assert len(facts["gpus"]) == 1
    gpu = facts["gpus"][0]
    assert (gpu["name"], gpu["pci_bus_id"], gpu["memory_mib"], gpu["persistence"], gpu["util_pct"]) == (
        "NVIDIA A10", "0000:06:00.0", 23028, True, 0)
    assert gpu["throttle_active"] == ["Idle"]
    assert gpu["remapped_rows"] == {"correctable": 0, "uncorrectable": 0, "pending": False, "failure": False}


def test_facts_absent_when_not_captured():
    facts = extract_facts([(DOCTOR / "uname-a-fedora41.txt").read_text()])
    assert facts == {"uname_r": "6.12.15-200.fc41.x86_64", "captures_read": 1}


def _tarball(tmp_path, members):
    path = tmp_path / "dlbox-collect-h.tar.gz"
    with tarfile.open(path, "w:gz") as archive:
        for name, text in members:
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


def test_folder_tarball_and_file_read_alike(tmp_path):
    texts = [("out1.txt", (DOCTOR / "nvml-mismatch-570.txt").read_text()),
             ("out2.txt", (DOCTOR / "smi-table-t4-570.txt").read_text())]
    folder = tmp_path / "caps"
    (folder / "sub").mkdir(parents=True)
    (folder / "out1.txt").write_text(texts[0][1])
    (folder / "sub" / "out2.txt").write_text(texts[1][1])
    assert doctor.read_captures(str(folder)) == [("out1.txt", texts[0][1]), ("sub/out2.txt", texts[1][1])]
    assert doctor.read_captures(str(_tarball(tmp_path, texts))) == texts
    assert doctor.read_captures(str(folder / "out1.txt")) == [texts[0]]


@pytest.mark.parametrize("value, message", [
    ("", "must be the path of a folder"),
    (None, "must be the path of a folder"),
    ("/nonexistent/caps", "does not exist on the controller"),
])
def test_bad_captures_path_is_refused_naming_the_variable(value, message):
    with pytest.raises(doctor.DoctorInputError, match=message) as error:
        doctor.read_captures(value)
    assert "dlbox_doctor_captures" in str(error.value)


def _collect_stream():
    """What ``dlbox-collect --stdout`` prints for two captures."""
    return "===== dlbox-collect: nvidia-smi =====\n%s===== dlbox-collect: uname =====\n%s" % (
        (DOCTOR / "smi-cannot-communicate.txt").read_text(), (DOCTOR / "uname-a-fedora41.txt").read_text())


def test_collect_stream_splits_into_named_parts():
    parts = doctor.split_collect_stream(_collect_stream())
    assert [part[0] for part in parts] == ["nvidia-smi", "uname"]
    report = doctor.diagnose(parts, host="h", data=DATA)
    assert [f["id"] for f in report["findings"]] == ["driver-not-loaded"]


def test_collect_stream_over_ssh_with_a_terminal_reads_the_same():
    """``script`` over SSH runs under ``ssh -tt``: every line of the stream ends with CR LF."""
    stream = _collect_stream()
    assert doctor.split_collect_stream(stream.replace("\n", "\r\n")) == doctor.split_collect_stream(stream)
    report = doctor.diagnose(doctor.split_collect_stream(stream.replace("\n", "\r\n")), host="h", data=DATA)
    assert [f["id"] for f in report["findings"]] == ["driver-not-loaded"]


def test_a_capture_file_saved_through_a_terminal_reads_the_same(tmp_path):
    """``ssh -t gpu01 nvidia-smi > smi.txt`` saves CR LF line ends."""
    (tmp_path / "smi.txt").write_bytes((DOCTOR / "smi-cannot-communicate.txt").read_text().replace("\n", "\r\n").encode())
    parts = doctor.read_captures(str(tmp_path / "smi.txt"))
    assert parts == [("smi.txt", (DOCTOR / "smi-cannot-communicate.txt").read_text())]
    assert [f["id"] for f in doctor.diagnose(parts, host="h", data=DATA)["findings"]] == ["driver-not-loaded"]


def test_report_text_names_findings_fixes_and_what_was_not_checked():
    report = doctor.diagnose([("out1.txt", (DOCTOR / "nvml-mismatch-570.txt").read_text()), ("out2.txt", "hello\n")],
                             host="gpu01", data=DATA)
    lines = doctor.report_text(report)
    assert lines[0] == "Doctor for gpu01: 1 error(s), 0 warning(s), 0 info; 1 capture(s) read, 1 not recognised: out2.txt"
    assert lines[1] == "ERROR [driver-library-mismatch] The loaded NVIDIA kernel module and the driver libraries differ"
    assert any(line.startswith("    fix: ") for line in lines)
    assert any(line.startswith("Not checked (the captures lack what they need): ") for line in lines)
    assert any(line.startswith("Checked, nothing found: ") and "driver-not-loaded" in line for line in lines)


def test_a_bare_version_number_is_not_taken_for_a_kernel_release():
    # `modinfo -F version nvidia` prints a bare driver version; only a release with a suffix is uname -r
    version = (DOCTOR / "nvml-mismatch-570.txt").read_text().rsplit(": ", 1)[1]
    assert recognize(version) == []
    assert recognize("uname -r 5.15.0-157-generic\n") == ["uname"]  # as pasted in tinygrad/open-gpu-kernel-modules#47


# ------------------------------------------------------------------------------------------------ issue 46's captures
# what dlbox-collect now also captures, read from real outputs (tests/fixtures/SOURCES.md, "Doctor corpus")
CORPUS = DOCTOR / "corpus"


@pytest.mark.parametrize("path, kinds, key, value", [
    (DOCTOR / "dev-nvidia-ls-fedora26.txt", ["dev-nvidia"], "dev_nvidia",
     ["nvidia-modeset", "nvidia-uvm", "nvidia-uvm-tools", "nvidia0", "nvidiactl"]),
    (DOCTOR / "topo-p2p-2x5090-gns.txt", ["nvidia-smi-p2p"], "p2p_blocked", ["GPU0", "GPU1"]),
    (CORPUS / "healthy-df-dev-shm-24g.txt", ["df-shm"], "shm_mib",
     {"mib": 24576, "line": "tmpfs                 24G   38M   24G   1% /dev/shm", "capture": "healthy-df-dev-shm-24g.txt"}),
    (CORPUS / "healthy-ctk-info-gtx1080-390.txt", ["ctk-info"], "ctk_info",
     {"nvrm": "390.87", "cuda": "9.1", "models": ["GeForce GTX 1080 with Max-Q Design"]}),
])
def test_new_captures_read(path, kinds, key, value):
    text = path.read_text(encoding="utf-8")
    assert recognize(text) == kinds
    assert extract_facts([(path.name, text)])[key] == value


def test_config_toml_keeps_only_set_keys():
    config = extract_facts([(DOCTOR / "ctk-config-toml-ldconfig-real.txt").read_text()])["ctk_config"]
    assert config["ldconfig"] == "@/sbin/ldconfig.real" and config["load-kmods"] == "true"
    assert "no-cgroups" not in config  # commented out in the paste


def test_proc_cmdline_parameters():
    text = (DOCTOR / "proc-cmdline-proxmox-iommu-pt.txt").read_text()
    assert recognize(text) == ["proc-cmdline"]
    params = extract_facts([text])["cmdline"]["params"]
    assert (params["intel_iommu"], params["iommu"], params["quiet"]) == ("on", "pt", "")


def test_aer_counters_from_cat_and_from_grep_h():
    # the kernel's own sample (Documentation/ABI/testing/sysfs-bus-pci-devices-aer_stats)
    text = (DOCTOR / "aer-dev-correctable-kernel-doc.txt").read_text()
    assert recognize(text) == ["aer-counters"]
    assert [(c["key"], c["count"]) for c in extract_facts([text])["aer_counters"]] == [("TOTAL_ERR_COR", 2)]
    # dlbox-collect runs grep -H . <files>: the same line after the file's path (a constructed line, not a paste)
    line = "/sys/bus/pci/devices/0000:01:00.0/aer_dev_fatal:TOTAL_ERR_FATAL 1\n"
    counters = extract_facts([line])["aer_counters"]
    assert [(c["pci_bus_id"], c["key"], c["count"]) for c in counters] == [("0000:01:00.0", "TOTAL_ERR_FATAL", 1)]


@pytest.mark.parametrize("text, mib", [
    # df -B1 /dev/shm as dlbox-collect runs it (Docker's default 64 MB: docs.docker.com, docker run --shm-size)
    ("Filesystem     1B-blocks  Used Available Use% Mounted on\nshm             67108864     0  67108864   0% /dev/shm\n", 64),
    ("Filesystem     1K-blocks  Used Available Use% Mounted on\nshm                65536     0     65536   0% /dev/shm\n", 64),
])
def test_df_block_sizes(text, mib):
    assert extract_facts([text])["shm_mib"]["mib"] == mib


def test_smi_q_temperature_and_thermal_counters():
    gpu = extract_facts([(CORPUS / "thermal-sw-slowdown-counter-gh200.txt").read_text()])["gpus"][0]
    assert gpu["temperature"] == {"current": 81, "tlimit": 13}
    assert gpu["throttle_counters_us"]["SW Thermal Slowdown"] == 903158


def test_messages_keep_the_capture_and_join_a_wrapped_line():
    text = (CORPUS / "shm-dataloader-bus-error-kraken.txt").read_text()
    found = extract_facts([("paste.txt", text)])["messages"]
    assert found[0]["capture"] == "paste.txt"
    assert found[0]["line"].startswith("DataLoader worker (pid 270071) is killed by signal: Bus error.")


def test_a_licence_is_no_error_text_but_an_unknown_error_is():
    assert recognize((FIXTURES.parents[1] / "LICENSE").read_text()) == []
    assert recognize("modprobe: ERROR: could not insert 'evdi': Operation not permitted\n") == ["modprobe", "error-message"]
    assert recognize("Segmentation fault (core dumped)\nFATAL: out of cheese\n") == ["error-text"]


def test_the_unsigned_module_notice_is_no_error_line():
    # from the dmesg of GitHub issue Upinel/PVE-Intel-vGPU#3 (comment of 2024-08-28): the module loads, the kernel is tainted
    line = "[    3.629784] i915: module verification failed: signature and/or required key missing - tainting kernel\n"
    assert doctor.unexplained_errors([("dmesg", line)], []) == []
    # while a refusal in the same words' neighbourhood is one
    refused = "[  398.381052] Lockdown: modprobe: unsigned module loading is restricted; see man kernel_lockdown.7\n"
    assert doctor.unexplained_errors([("dmesg", refused)], [])[0]["severity"] == "error"


def test_the_machine_inventory_captures_are_recognised():
    # dlbox-collect's inventory of this project's development VM (tests/fixtures/fitness/collect-dev-vm, SOURCES.md):
    # the fitness checks read them; the doctor recognises them, so none is reported as unrecognised
    folder = FIXTURES / "fitness" / "collect-dev-vm"
    parts = [(path.name, path.read_text()) for path in sorted(folder.glob("*.txt"))]
    report = doctor.diagnose(parts, host="h", data=DATA)
    assert report["unrecognized"] == [] and report["findings"] == []
    kinds = {kind for capture in report["captures"] for kind in capture["kinds"]}
    assert {"lscpu", "meminfo", "lsblk"} <= kinds and "systemd" not in kinds and "nvidia-smi-csv" not in kinds


# --------------------------------------------------------------------------------- a live dlbox-collect in a container
# The stream dlbox-collect --stdout printed in molecule/doctor's Debian 12 container (no GPU, a CPU torch environment,
# a user whose ~/.bashrc activates it; tests/fixtures/SOURCES.md "dlbox-collect in the test containers"): what the
# Molecule and integration tests diagnose, read here without Docker.
CONTAINER = dict(doctor.split_collect_stream((DOCTOR / "collect-container" / "molecule-doctor-debian12.txt").read_text()))
# the same scenario on Ubuntu 24.04: no torch environment; the user's login environment has three variables
UBUNTU = dict(doctor.split_collect_stream((DOCTOR / "collect-container" / "molecule-doctor-ubuntu2404.txt").read_text()))


@pytest.mark.parametrize("text", [
    CONTAINER["lsmod"],
    UBUNTU["lsmod"],
    (DOCTOR / "lsmod-no-proc-modules-lxc4091.txt").read_text(),  # a CONFIG_MODULES=n kernel, lxc/lxc#4091
])
def test_lsmod_without_proc_modules_is_not_available_not_an_error(text):
    assert "could not open /proc/modules" in text
    assert recognize(text) == ["not-available"]
    assert doctor.unexplained_errors([("lsmod", text)], []) == []
    assert "lsmod" not in extract_facts([text])  # no module list read: the rules that need one say "not checked"


def test_lsmod_that_lists_modules_is_still_lsmod():
    # a module list after the libkmod line is real output: the line alone does not make a capture unavailable
    text = CONTAINER["lsmod"] + "\n" + (DOCTOR / "lsmod-grep-nvidia.txt").read_text()
    assert "not-available" not in recognize(text)


def test_the_container_captures_are_all_recognised_and_give_no_gpu_and_the_small_shm_only():
    report = doctor.diagnose(list(CONTAINER.items()), host="ctr", data=DATA)
    assert report["unrecognized"] == []
    assert [(f["id"], f["severity"]) for f in report["findings"]] == [("no-gpu", "warning"), ("shm-too-small", "warning")]
    kinds = {c["file"]: c["kinds"] for c in report["captures"]}
    assert kinds["cpu-l3-sysfs"] == ["cpu-cache"] and kinds["lsmod"] == ["not-available"]
    assert kinds["user-env-labuser"] == ["env"]


def test_a_cpu_only_torch_where_the_pci_list_shows_no_gpu_is_no_finding():
    # no-gpu's own advice there is a CPU-only stack; with a GPU the same probe is an error (test_doctor_rules' corpus)
    probe = CONTAINER["torch-probe-env-torch"]
    assert "torch 2.13.0+cpu cuda None available False" in probe
    facts = extract_facts([CONTAINER["pci-sysfs"], probe])
    assert facts["pci_seen"] and not [d for d in facts["pci_devices"] if d["kind"] == "gpu"]
    findings = {f["id"] for f in doctor.diagnose([("p", CONTAINER["pci-sysfs"]), ("t", probe)], data=DATA)["findings"]}
    assert "framework-cpu-only-build" not in findings
    alone = doctor.diagnose([("t", probe)], data=DATA)["findings"]  # no PCI list: a GPU may be there
    assert [(f["id"], f["severity"], f["evidence"]) for f in alone] == [
        ("framework-cpu-only-build", "warning", ["torch 2.13.0+cpu cuda None"])]


def test_a_python_warning_is_no_error_line_unless_it_is_about_cuda():
    probe = CONTAINER["torch-probe-env-torch"]
    assert "UserWarning: Failed to initialize NumPy" in probe  # torch without numpy: it runs, numpy interop does not
    assert doctor.unexplained_errors([("torch-probe-env-torch", probe)], []) == []
    # a CUDA initialisation warning that reports an error stays an error line (the corpus' real pastes: "Unexpected
    # error from cudaGetDeviceCount()", "CUDA unknown error")
    cuda = [line for path in sorted((DOCTOR / "corpus").glob("*.txt")) for line in path.read_text().splitlines()
            if ": UserWarning: CUDA initialization:" in line and " error" in line]
    assert len(cuda) >= 4
    assert [line for line in cuda if not doctor_captures.error_lines(line)] == []


def test_a_command_line_is_not_scanned_for_errors():
    # dlbox-collect's header of the AER counters names aer_dev_{correctable,fatal,nonfatal}: the command, no output
    header = CONTAINER["pci-aer"].splitlines()[0]
    assert header.startswith("$ grep -H . ") and "fatal" in header
    assert doctor_captures.error_lines(header + "\n") == []
    assert doctor_captures.error_lines(header + "\nSegmentation fault (core dumped)\n") == ["Segmentation fault (core dumped)"]


def test_the_l3_cache_capture_is_recognised():
    text = CONTAINER["cpu-l3-sysfs"]
    assert text.startswith("$ grep -s -H . /sys/devices/system/cpu/cpu*/cache/index3/size ")
    assert recognize(text) == ["cpu-cache"]
    assert recognize("\n".join(text.splitlines()[1:])) == ["cpu-cache"]  # the grep -H lines alone, as pasted


@pytest.mark.parametrize("text", [CONTAINER["user-env-labuser"], UBUNTU["user-env-labuser"]])
def test_a_users_login_environment_after_its_command_line_is_env(text):
    # on Ubuntu three KEY=VALUE lines after the command: env's 80% share holds only without the command line
    assert text.startswith("$ runuser -l labuser -c ") and len(text.splitlines()) <= 12
    assert recognize(text) == ["env"]
    assert extract_facts([text])["env"]["CUDA_VISIBLE_DEVICES"] == "GPU-5ad0a5b0-fixture"


def test_the_ubuntu_container_captures_are_all_recognised_and_give_no_gpu_only():
    report = doctor.diagnose(list(UBUNTU.items()), host="ctr", data=DATA)
    assert report["unrecognized"] == []
    assert [(f["id"], f["severity"]) for f in report["findings"]] == [("no-gpu", "warning")]


def test_topo_p2p_after_its_command_line_is_not_topo_m():
    text = "$ nvidia-smi topo -p2p r\n" + (DOCTOR / "topo-p2p-2x5090-gns.txt").read_text()
    assert recognize(text) == ["nvidia-smi-p2p"]
    assert extract_facts([text])["p2p_blocked"] == ["GPU0", "GPU1"]
