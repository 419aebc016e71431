# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/doctor.yml end to end through ansible-playbook: folders of recorded real outputs under neutral
names (out1.txt, ...: only content recognition can work), a tarball, refusals, and dlbox-collect run in a test
container with its tarball diagnosed; dlbox-collect bounded by its time limits with an nvidia-smi that hangs, and
its PCIe captures on a FIXTURE sysfs tree (a GPU below a root port)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tarfile
import time

import pytest

from conftest import ROOT, ansible_env, docker_ready

FIXTURES = ROOT / "tests" / "fixtures"
DOCTOR = FIXTURES / "doctor"
SMI = FIXTURES / "nvidia-smi"
COLLECT = ROOT / "playbooks" / "files" / "dlbox-collect"
# the captures added for issue 46, each after its command line
NEW_CAPTURES = {"nvidia-smi-q-ecc-temperature-performance", "nvidia-smi-topo-p2p", "proc-cmdline", "pci-aer", "pci-acs",
                "torch-probe-envs", "nvidia-container-cli-info", "nvidia-container-runtime-config", "dev-nvidia", "dev-shm",
                "cgroup-fs"}


@pytest.fixture(autouse=True)
def _collection(collection_installed):
    return collection_installed


def _neutral_folder(tmp_path, sources, name="caps"):
    folder = tmp_path / name
    folder.mkdir()
    for index, source in enumerate(sources, start=1):
        shutil.copyfile(source, folder / ("out%d.txt" % index))
    return folder


def _doctor(tmp_path, *extra):
    reports = tmp_path / "reports"
    started = time.monotonic()
    proc = subprocess.run(
        ["ansible-playbook", "playbooks/doctor.yml", "-e", "dlbox_report_dir=%s" % reports, *extra],
        cwd=ROOT, env=ansible_env(), capture_output=True, text=True, check=False, timeout=300,
    )
    proc.seconds = time.monotonic() - started
    return proc, reports / "doctor"


def _report(folder, host):
    return json.loads((folder / ("%s.json" % host)).read_text())


def test_a_broken_machine_from_neutrally_named_pastes(tmp_path):
    caps = _neutral_folder(tmp_path, [
        DOCTOR / "nvml-mismatch-proc-version-580.txt", DOCTOR / "docker-unknown-runtime-dpkg-l.txt",
        DOCTOR / "journal-k-xid-38-109.txt", DOCTOR / "smi-table-gt1030-2gb.txt"], name="gpu07")
    proc, reports = _doctor(tmp_path, "-e", "dlbox_doctor_captures=%s" % caps)
    assert proc.returncode == 0, proc.stdout[-3000:]
    report = _report(reports, "gpu07")
    ids = {f["id"] for f in report["findings"]}
    assert {"driver-library-mismatch", "xid-error", "docker-gpu-runtime-missing", "nvidia-docker2-legacy",
            "held-packages-missing", "gpu-memory-too-small"} <= ids
    assert report["ok"] is False and report["unrecognized"] == []
    assert [c["file"] for c in report["captures"]] == ["out1.txt", "out2.txt", "out3.txt", "out4.txt"]
    xid = [f for f in report["findings"] if f["id"] == "xid-error" and "Xid 38" in f["title"]][0]
    assert xid["evidence"][0].startswith("Xid 38 (Driver firmware error)")
    assert "ERROR [driver-library-mismatch]" in proc.stdout
    assert "Not checked (the captures lack what they need):" in proc.stdout


def test_a_healthy_h200_has_no_error_and_the_run_changes_nothing_twice(tmp_path):
    caps = _neutral_folder(tmp_path, [SMI / "h200-driver-580-device.xml", SMI / "h200-query-gpu-device.csv",
                                      SMI / "topo-1x-h200-device.txt"], name="h200")
    proc, reports = _doctor(tmp_path, "-e", "dlbox_doctor_captures=%s" % caps)
    assert proc.returncode == 0, proc.stdout[-3000:]
    report = _report(reports, "h200")
    assert report["ok"] is True and report["counts"]["error"] == 0
    assert [c["kinds"] for c in report["captures"]] == [["nvidia-smi-xml"], ["nvidia-smi-csv"], ["nvidia-smi-topo"]]
    again = _doctor(tmp_path, "-e", "dlbox_doctor_captures=%s" % caps)
    assert "changed=0" in again[0].stdout, again[0].stdout[-2000:]


def test_a_tarball_and_a_chosen_host_name(tmp_path):
    caps = _neutral_folder(tmp_path, [DOCTOR / "journal-modprobe-key-rejected.txt", DOCTOR / "smi-cannot-communicate.txt"])
    tarball = tmp_path / "pasted.tar.gz"
    with tarfile.open(tarball, "w:gz") as archive:
        archive.add(caps, arcname="pasted")
    proc, reports = _doctor(tmp_path, "-e", "dlbox_doctor_captures=%s" % tarball, "-e", "dlbox_doctor_host=lab-3")
    assert proc.returncode == 0, proc.stdout[-3000:]
    report = _report(reports, "lab-3")
    assert {f["id"] for f in report["findings"]} == {"driver-not-loaded", "secure-boot-module-rejected"}
    assert [c["file"] for c in report["captures"]] == ["pasted/out1.txt", "pasted/out2.txt"]


def test_fail_on_error_fails_after_writing_the_report(tmp_path):
    caps = _neutral_folder(tmp_path, [DOCTOR / "nvml-unknown-error-container.txt"], name="ctr")
    proc, reports = _doctor(tmp_path, "-e", "dlbox_doctor_captures=%s" % caps, "-e", "dlbox_doctor_fail_on_error=true")
    assert proc.returncode != 0
    assert "nvml-unknown-error-in-container" in proc.stdout
    assert _report(reports, "ctr")["ok"] is False


@pytest.mark.parametrize("extra, message", [
    (["-e", "dlbox_report_dir=relative/reports"], "dlbox_report_dir an absolute folder"),
    (["-e", "dlbox_doctor_captures=/nonexistent/caps"], "dlbox_doctor_captures: /nonexistent/caps does not exist"),
    (["-e", "dlbox_doctor_user='alice; reboot'"], 'dlbox_doctor_user="alice; reboot"'),
    (["-e", '{"dlbox_doctor_python_envs": ["venvs/train"]}'], 'dlbox_doctor_python_envs=["venvs/train"]'),
    (["-e", "dlbox_doctor_python_envs=/opt/conda/envs/x"], 'dlbox_doctor_python_envs="/opt/conda/envs/x"'),
])
def test_bad_input_is_refused_before_any_report(tmp_path, extra, message):
    proc = subprocess.run(
        ["ansible-playbook", "playbooks/doctor.yml", "-e", "dlbox_doctor_captures=%s" % DOCTOR, *extra],
        cwd=ROOT, env=ansible_env(), capture_output=True, text=True, check=False, timeout=300)
    assert proc.returncode != 0
    assert message in proc.stdout, proc.stdout[-2000:]
    assert not (tmp_path / "reports").exists()


@pytest.mark.parametrize("image", ["dlbox-test:debian12", "dlbox-test:ubuntu2204", "dlbox-test:ubuntu2404"])
def test_dlbox_collect_in_a_test_container_and_its_tarball_diagnosed(tmp_path, image):
    reason = docker_ready(image)
    if reason:
        pytest.skip(reason)
    out = tmp_path / "out"
    out.mkdir()
    started = time.monotonic()
    run = subprocess.run(
        ["docker", "run", "--rm", "--hostname", "ctr01", "-v", "%s:/usr/local/bin/dlbox-collect:ro" % COLLECT,
         "-v", "%s:/out" % out, "--entrypoint", "/bin/sh", image, "/usr/local/bin/dlbox-collect", "-o",
         "/out/dlbox-collect-ctr01.tar.gz"],
        capture_output=True, text=True, check=False, timeout=300)
    collect_seconds = time.monotonic() - started
    assert run.returncode == 0, run.stderr
    tarball = out / "dlbox-collect-ctr01.tar.gz"
    with tarfile.open(tarball) as archive:
        names = sorted(member.name for member in archive if member.isfile())
        texts = {re.sub(r"^dlbox-collect-ctr01/\d+-|\.txt$", "", name): archive.extractfile(name).read().decode()
                 for name in names}
    assert "dlbox-collect: wrote /out/dlbox-collect-ctr01.tar.gz (%d captures)" % len(names) in run.stdout
    assert names[0] == "dlbox-collect-ctr01/01-nvidia-smi.txt"
    assert NEW_CAPTURES <= set(texts) and all(texts[name].startswith("$ ") for name in NEW_CAPTURES)
    proc, reports = _doctor(tmp_path, "-e", "dlbox_doctor_captures=%s" % tarball)
    assert proc.returncode == 0, proc.stdout[-3000:]
    report = _report(reports, "dlbox-collect-ctr01")
    assert report["source"] == str(tarball)
    assert report["unrecognized"] == []
    kinds = {kind for capture in report["captures"] for kind in capture["kinds"]}
    assert {"os-release", "uname", "pci-sysfs", "dpkg", "dlbox-collect-missing"} <= kinds
    assert report["counts"]["error"] == 0, report["findings"]
    assert [f["id"] for f in report["findings"]] == ["no-gpu"]
    assert "nvidia-smi is not installed" in report["findings"][0]["evidence"]
    print("dlbox-collect in %s: %.1f s; doctor.yml on its tarball: %.1f s" % (image, collect_seconds, proc.seconds))


def _collect_stdout(args, *, env=(), volumes=(), image="dlbox-test:debian12", timeout=90):
    """dlbox-collect --stdout in a fresh test container: (seconds, {capture name: text}, completed process)."""
    command = ["docker", "run", "--rm", "-v", "%s:/usr/local/bin/dlbox-collect:ro" % COLLECT]
    for name, value in env:
        command += ["-e", "%s=%s" % (name, value)]
    for volume in volumes:
        command += ["-v", volume]
    started = time.monotonic()
    run = subprocess.run(command + ["--entrypoint", "/bin/sh", image, "/usr/local/bin/dlbox-collect", "--stdout", *args],
                         capture_output=True, text=True, check=False, timeout=timeout)
    parts = re.split(r"^===== dlbox-collect: ([\w.+-]+) =====$", run.stdout, flags=re.M)
    return time.monotonic() - started, {parts[i]: parts[i + 1].strip("\n") for i in range(1, len(parts), 2)}, run


# FIXTURE: an nvidia-smi that never answers. On a GPU that stopped answering nvidia-smi hangs in the kernel ('D' state,
# NVIDIA/gpu-monitoring-tools#46, leptonai/gpud#117; "nvidia-smi will hang", ocf/puppet#615); this one prints a
# line, then ignores SIGTERM, so that only SIGKILL ends it.
HANGING_SMI = """#!/bin/sh
echo "Fixture nvidia-smi: no answer from the GPU"
trap '' TERM
while :; do sleep 1; done
"""


def test_a_hanging_nvidia_smi_is_bounded_and_the_rest_is_collected(tmp_path):
    reason = docker_ready("dlbox-test:debian12")
    if reason:
        pytest.skip(reason)
    stub = tmp_path / "nvidia-smi"
    stub.write_text(HANGING_SMI)
    stub.chmod(0o755)
    seconds, captures, run = _collect_stdout(
        [], env=[("DLBOX_COLLECT_GPU_TIMEOUT", "2")], volumes=["%s:/usr/local/bin/nvidia-smi:ro" % stub])
    assert run.returncode == 0, run.stderr
    # the first nvidia-smi: stopped at its limit (TERM ignored: KILL 3 s later); the next ones are not started
    assert captures["nvidia-smi"].splitlines() == ["Fixture nvidia-smi: no answer from the GPU",
                                                   "dlbox-collect: timed out after 2 s: nvidia-smi"]
    skipped = [name for name, text in captures.items() if "dlbox-collect: skipped: nvidia-smi" in text]
    assert set(skipped) == {"nvidia-smi-q", "nvidia-smi-q-x", "nvidia-smi-query-gpu", "nvidia-smi-topo",
                            "nvidia-smi-q-ecc-temperature-performance", "nvidia-smi-topo-p2p"}
    assert captures["nvidia-smi-topo-p2p"].splitlines()[0] == "$ nvidia-smi topo -p2p r"
    assert captures["os-release"].startswith("PRETTY_NAME=") and "cgroup-fs" in captures
    print("dlbox-collect with a hanging nvidia-smi (limit 2 s): %.1f s" % seconds)
    assert seconds < 30


# FIXTURE sysfs: a GPU (10de:2330, H100 SXM) below an Intel root port, and an Intel NIC on the root bus whose AER
# counters are not the GPU's. The layout is sysfs' (devices/pci<domain>:<bus>/<port>/<device>, bus/pci/devices/<addr>
# a link to it); the counters' format is the kernel's (Documentation/ABI/testing/sysfs-bus-pci-devices-aer_stats:
# "<name> <count>" lines, then TOTAL_ERR_COR), the root port's values as recorded from a root port in
# opencomputeproject/ocp-diag-pcicrawler#8 (BadTLP 3).
AER_COR = "RxErr 0\nBadTLP {bad}\nBadDLLP 0\nRollover 0\nTimeout 0\nNonFatalErr 0\nCorrIntErr 0\nHeaderOF 0\nTOTAL_ERR_COR {bad}\n"


def _fixture_sysfs(root):
    devices = {
        "pci0000:00/0000:00:01.0": ("0x8086", "0x060400", AER_COR.format(bad=3)),
        "pci0000:00/0000:00:01.0/0000:01:00.0": ("0x10de", "0x030200", AER_COR.format(bad=0)),
        "pci0000:00/0000:00:1f.6": ("0x8086", "0x020000", AER_COR.format(bad=7)),
    }
    (root / "bus" / "pci" / "devices").mkdir(parents=True)
    for path, (vendor, cls, correctable) in devices.items():
        folder = root / "devices" / path
        folder.mkdir(parents=True)
        (folder / "vendor").write_text(vendor + "\n")
        (folder / "class").write_text(cls + "\n")
        (folder / "aer_dev_correctable").write_text(correctable)
        os.symlink("../../../devices/" + path, root / "bus" / "pci" / "devices" / path.rsplit("/", 1)[1])


def test_pcie_captures_take_the_gpu_and_the_bridges_above_it(tmp_path):
    reason = docker_ready("dlbox-test:debian12")
    if reason:
        pytest.skip(reason)
    _fixture_sysfs(tmp_path / "sys")
    _seconds, captures, run = _collect_stdout(
        [], env=[("DLBOX_COLLECT_SYSFS", "/fixture-sys")], volumes=["%s:/fixture-sys:ro" % (tmp_path / "sys")])
    assert run.returncode == 0, run.stderr
    aer = captures["pci-aer"].splitlines()
    assert aer[0] == ("$ grep -H . /fixture-sys/bus/pci/devices/0000:01:00.0/aer_dev_correctable "
                      "/fixture-sys/bus/pci/devices/0000:00:01.0/aer_dev_correctable")
    assert "/fixture-sys/bus/pci/devices/0000:00:01.0/aer_dev_correctable:TOTAL_ERR_COR 3" in aer
    assert "/fixture-sys/bus/pci/devices/0000:01:00.0/aer_dev_correctable:TOTAL_ERR_COR 0" in aer
    assert not [line for line in aer if "0000:00:1f.6" in line]  # the NIC is not on the GPU's path
    acs = captures["pci-acs"].splitlines()
    assert acs[0] in ("$ lspci -vvv -s 0000:00:01.0 | grep -E '^[0-9a-f]|ACSCap|ACSCtl|access denied'",
                      "$ lspci -vvv", )
