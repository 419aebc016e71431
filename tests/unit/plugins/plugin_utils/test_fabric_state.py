# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""fabric_state on recorded outputs (tests/fixtures/fabric, sources in its SOURCES.md; doctor/smi-q-a10-550-idle.txt,
tests/fixtures/SOURCES.md) and on the FIXTURE HGX host's stub (tests/fixtures/gpu_host/hgx), whose output must read
the same way. Two files of tests/fixtures/fabric are EDITED real captures (named EDITED-*: a healthy and a
degraded-bandwidth Health block, no verbatim public capture of either was found); the tests say so where they use them."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from ansible_collections.dlbox.stack.plugins.plugin_utils import fabric_state as fs

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"
FABRIC = FIXTURES / "fabric"
HGX = FIXTURES / "gpu_host" / "hgx"


def _read(name):
    return (FABRIC / name).read_text(encoding="utf-8")


def test_completed_but_unhealthy_is_not_ready():
    """Real: the fabric of kubernetes-sigs/dra-driver-nvidia-gpu#626 completed with Success, its health Unhealthy."""
    gpus = fs.parse_fabric(_read("smi-q-fabric-completed-dra626.txt"))
    assert gpus == [{"pci_bus_id": None, "state": "Completed", "status": "Success", "clique_id": "2",
                     "cluster_uuid": "dc6e40c4-d722-4357-9ba6-5291dd461278", "bandwidth": "Full",
                     "health_summary": "Unhealthy", "health": {"summary": "Unhealthy", "bandwidth": "Full"}}]
    out = fs.verdict(_read("smi-q-fabric-completed-dra626.txt"), "active")
    assert out["failed"] and not out["ready"] and not out["waiting"]
    assert "Completed but not healthy" in out["reason"] and "Summary Unhealthy" in out["reason"]


def test_degraded_bandwidth_is_not_ready():
    """EDITED fixture (the capture above with Bandwidth Degraded and the summary nvidia-smi gives it): a completed,
    successful fabric whose bandwidth is degraded fails at once, naming the bandwidth."""
    out = fs.verdict(_read("EDITED-smi-q-fabric-health-degraded-bandwidth.txt"), "active")
    assert out["gpus"][0]["state"] == "Completed" and out["gpus"][0]["status"] == "Success"
    assert out["gpus"][0]["bandwidth"] == "Degraded"
    assert out["failed"] and not out["ready"] and not out["waiting"]
    assert "Bandwidth Degraded (Summary Limited Capacity)" in out["reason"]


def test_full_bandwidth_and_healthy_is_ready():
    """EDITED fixture (the capture above with Summary Healthy): ready, and the reason says the bandwidth is Full."""
    out = fs.verdict(_read("EDITED-smi-q-fabric-health-healthy-full.txt"), "active")
    assert out["ready"] and not out["waiting"] and not out["failed"]
    assert "bandwidth Full" in out["reason"]


def test_in_progress_with_every_health_row_not_reported():
    """Real: driver 580.159.04 while Fabric Manager trains (NVIDIA/gpu-operator#2511): seven Health rows, all N/A."""
    gpus = fs.parse_fabric(_read("smi-q-fabric-in-progress-health-gpuop2511.txt"))
    assert [(g["state"], g["status"], g["bandwidth"], g["health_summary"]) for g in gpus] == [("In Progress", "N/A", "N/A", "N/A")]
    assert set(gpus[0]["health"]) == {"summary", "bandwidth", "route_recovery_in_progress", "route_unhealthy",
                                      "access_timeout_recovery", "incorrect_configuration", "partition_assigned"}
    out = fs.verdict(_read("smi-q-fabric-in-progress-health-gpuop2511.txt"), "active")
    assert out["waiting"] and not out["ready"] and not out["failed"]


def _health(rows):
    """The healthy EDITED capture with some Health rows replaced, added or (value None) removed (labels as nvidia-smi
    prints them)."""
    lines = [line for line in _read("EDITED-smi-q-fabric-health-healthy-full.txt").splitlines()
             if line.split(":")[0].strip() not in rows]
    return "\n".join(lines + ["            %-30s: %s" % (label, value) for label, value in rows.items()
                              if value is not None]) + "\n"


@pytest.mark.parametrize(("rows", "key", "words"), [
    # drivers whose nvidia-smi prints no Summary row (NVIDIA/k8s-test-infra docs/configuration.md: rows vary by build)
    ({"Summary": None, "Bandwidth": "Degraded"}, "failed", "GPU None Bandwidth Degraded; degraded bandwidth"),
    ({"Summary": "Unhealthy", "Route Recovery in progress": "True"}, "waiting", "Route Recovery in progress"),
    ({"Summary": "Unhealthy", "Route Unhealthy": "True"}, "failed", "Route Unhealthy"),
    ({"Summary": "Unhealthy", "Access Timeout Recovery": "True"}, "failed", "Access Timeout Recovery"),
    ({"Incorrect Configuration": "Insufficient NVLinks"}, "failed", "Incorrect Configuration: Insufficient NVLinks"),
    ({"Route Unhealthy": "False", "Incorrect Configuration": "None", "Partition Assigned": "N/A"}, "ready", "bandwidth Full"),
    ({"Summary": "Not Supported", "Bandwidth": "Not Supported"}, "ready", "no fabric health"),
])
def test_each_health_row(rows, key, words):
    out = fs.verdict(_health(rows), "active")
    assert out[key], out
    assert words in out["reason"]


def test_a_driver_without_health_rows_is_judged_on_state_and_status():
    """R535 prints no Health: Completed/Success is ready, and the reason says no bandwidth was reported."""
    out = fs.verdict(_read("smi-q-fabric-completed-h100.txt"), "active")
    assert out["ready"] and "reports no fabric health" in out["reason"]
    assert out["gpus"][0]["bandwidth"] is None and out["gpus"][0]["health"] == {}


def test_one_degraded_gpu_among_full_ones_fails_naming_it():
    good = "GPU 00000000:18:00.0\n" + _read("EDITED-smi-q-fabric-health-healthy-full.txt")
    bad = "GPU 00000000:2A:00.0\n" + _read("EDITED-smi-q-fabric-health-degraded-bandwidth.txt")
    out = fs.verdict(good + bad + good.replace("18:00.0", "3A:00.0"), "active")
    assert out["failed"] and "GPU 00000000:2A:00.0 Bandwidth Degraded" in out["reason"]
    assert "18:00.0" not in out["reason"] and len(out["gpus"]) == 3


def test_in_progress_keeps_waiting_even_with_the_service_active():
    out = fs.verdict(_read("smi-q-fabric-in-progress-h100.txt"), "active")
    assert out["waiting"] and not out["ready"] and not out["failed"]
    assert "In Progress" in out["reason"]


def test_the_same_host_after_fabric_manager_started():
    assert fs.verdict(_read("smi-q-fabric-completed-h100.txt"), "active")["ready"]


def test_completed_with_an_error_status_fails_at_once():
    out = fs.verdict(_read("smi-q-fabric-insufficient-azhpc506.txt"), "active")
    assert out["failed"] and not out["waiting"]
    assert "Insufficient Resources" in out["reason"]


def test_a_gpu_that_does_not_report_the_fabric_is_judged_by_the_service():
    text = (FIXTURES / "doctor" / "smi-q-a10-550-idle.txt").read_text(encoding="utf-8")
    gpus = fs.parse_fabric(text)
    assert [(g["pci_bus_id"], g["state"], g["status"]) for g in gpus] == [("00000000:06:00.0", "N/A", "N/A")]
    assert fs.verdict(text, "active")["ready"]
    assert fs.verdict(text, "inactive")["waiting"]


@pytest.mark.parametrize("word, key", [("inactive", "waiting"), ("activating", "waiting"), ("failed", "failed"),
                                       ("", "waiting")])
def test_the_service_comes_first(word, key):
    out = fs.verdict(_read("smi-q-fabric-completed-h100.txt"), word)
    assert out[key] and not out["ready"]
    assert "nvidia-fabricmanager.service" in out["reason"]


def test_nvidia_smi_failing_is_waiting_not_ready():
    out = fs.verdict("", "active", smi_rc=9)
    assert out["waiting"] and not out["ready"]


def test_one_gpu_in_progress_among_completed_ones_keeps_waiting():
    done = "GPU 00000000:06:00.0\n" + _read("smi-q-fabric-completed-h100.txt")
    busy = "GPU 00000000:0C:00.0\n" + _read("smi-q-fabric-in-progress-h100.txt")
    out = fs.verdict("==============NVSMI LOG==============\n" + done + busy, "active")
    assert out["waiting"] and "GPU 00000000:0C:00.0 In Progress" in out["reason"]
    assert [g["state"] for g in out["gpus"]] == ["Completed", "In Progress"]


@pytest.mark.parametrize("name", ["cuda-802-bandwidthtest-pytorch35710.txt", "cuda-802-devicequery-h100.txt"])
def test_error_802_names_fabric_manager(name):
    hint = fs.cuda_failure_hint(_read(name))
    assert "802" in hint and "Fabric Manager" in hint and "nvidia-fabricmanager" in hint


def test_cuda_verify_output_with_802_names_fabric_manager():
    # the line roles/cuda/files/cuda-verify.cu prints: printf("error=%s at=%s\n", cudaGetErrorString(err_), #call)
    assert "Fabric Manager" in fs.cuda_failure_hint("error=system not yet initialized at=cudaGetDeviceCount(&count)")


def test_other_cuda_errors_get_no_hint():
    assert fs.cuda_failure_hint("error=no CUDA-capable device is detected at=cudaGetDeviceCount(&count)") == ""
    assert fs.cuda_failure_hint("") == ""
    assert "no NVSwitch" in fs.cuda_failure_hint("code=802", nvswitch=False)


def _stub(tmp_path, state):
    """Run the FIXTURE HGX host's nvidia-smi stub against a state folder (its lib.sh, installed on the fixture host as
    /opt/dlbox-fixture-gpu/bin/hgx-lib.sh, from a copy under that name)."""
    lib = tmp_path / "bin"
    lib.mkdir(exist_ok=True)
    (lib / "hgx-lib.sh").write_text((HGX / "lib.sh").read_text(encoding="utf-8"), encoding="utf-8")
    env = dict(os.environ, DLBOX_FIXTURE_STATE=str(tmp_path), DLBOX_FIXTURE_HGX=str(lib))
    (tmp_path / "fabric-state").write_text(state + "\n")
    (tmp_path / "module-version").write_text("580.95.05\n")
    return subprocess.run(["sh", str(HGX / "nvidia-smi")] + ["-q"], env=env, capture_output=True, text=True, check=False)


@pytest.mark.skipif(not (HGX / "nvidia-smi").exists(), reason="the FIXTURE HGX host's stubs are not there")
def test_the_fixture_stub_reads_like_the_recorded_outputs(tmp_path):
    busy = _stub(tmp_path, "In Progress")
    assert busy.returncode == 0
    out = fs.verdict(busy.stdout, "active")
    assert out["waiting"] and len(out["gpus"]) == 8 and {g["state"] for g in out["gpus"]} == {"In Progress"}
    done = _stub(tmp_path, "Completed")
    out = fs.verdict(done.stdout, "active")
    assert out["ready"] and {g["status"] for g in out["gpus"]} == {"Success"}
    if any(g["bandwidth"] for g in out["gpus"]):  # the stub prints the Health rows (since the host model of issue 44)
        assert {g["bandwidth"] for g in out["gpus"]} == {"Full"}
        (tmp_path / "fabric-bandwidth").write_text("Degraded\n")
        degraded = fs.verdict(_stub(tmp_path, "Completed").stdout, "active")
        assert degraded["failed"] and not degraded["ready"] and "Bandwidth Degraded" in degraded["reason"]
