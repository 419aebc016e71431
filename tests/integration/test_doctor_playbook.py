# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/doctor.yml end to end through ansible-playbook: folders of recorded real outputs under neutral
names (out1.txt, ...: only content recognition can work), a tarball, refusals, and dlbox-collect run in a test
container with its tarball diagnosed."""

from __future__ import annotations

import json
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
    assert "dlbox-collect: wrote /out/dlbox-collect-ctr01.tar.gz (27 captures)" in run.stdout
    tarball = out / "dlbox-collect-ctr01.tar.gz"
    with tarfile.open(tarball) as archive:
        names = sorted(member.name for member in archive if member.isfile())
    assert len(names) == 27 and names[0] == "dlbox-collect-ctr01/01-nvidia-smi.txt"
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
