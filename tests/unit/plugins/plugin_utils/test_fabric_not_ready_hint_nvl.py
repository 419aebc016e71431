# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""fabric_state.not_ready_hint on a GB200/GB300 NVL compute tray (issue 49): the tray runs no Fabric Manager (the
switch trays' NMX-Controller does, with NVLSM), so a fabric that stays In Progress names the switch trays' Fabric
Manager and the tray's service, nvidia-imex (not started), never nvidia-fabricmanager; an HGX B200 board keeps its
Fabric Manager / NVLSM checks. On the recorded In Progress block (tests/fixtures/fabric/
smi-q-fabric-in-progress-health-gpuop2511.txt, NVIDIA/gpu-operator#2511) and on the FIXTURE GB200 tray's nvidia-smi
(tests/fixtures/gpu_host/gb200)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from ansible_collections.dlbox.stack.plugins.filter import fabric as fabric_filter
from ansible_collections.dlbox.stack.plugins.filter.stack import resolve_stack
from ansible_collections.dlbox.stack.plugins.plugin_utils import fabric_state as fs
from ansible_collections.dlbox.stack.plugins.plugin_utils import nvlink5_fabric as nf

ROOT = Path(__file__).resolve().parents[4]
FABRIC = ROOT / "tests" / "fixtures" / "fabric"
GPU_HOST = ROOT / "tests" / "fixtures" / "gpu_host"
DRIVER = "580.95.05"


@pytest.fixture(scope="module")
def nvl():
    """The set the plan gives a GB200 NVL tray on Ubuntu 24.04 aarch64 (the scenario's and golden plan's hardware)."""
    plan = resolve_stack({}, {}, {"gpus": ["NVIDIA GB200"] * 4, "os": "ubuntu-24.04", "arch": "aarch64"})
    fabric = nf.fabric_set(plan["stack"]["fabric_manager"], plan["stack"]["driver"])
    assert fabric["kind"] == "nvl" and plan["stack"]["fabric_manager"] is None
    return fabric


@pytest.fixture(scope="module")
def gb200_stuck(tmp_path_factory):
    """The FIXTURE GB200 tray's nvidia-smi -q with the fabric stuck (the switch trays never register the GPUs)."""
    tmp = tmp_path_factory.mktemp("gb200")
    (tmp / "bin").mkdir()
    (tmp / "bin" / "hgx-lib.sh").symlink_to(GPU_HOST / "hgx" / "lib.sh")
    (tmp / "bin" / "hgx-nvidia-smi").symlink_to(GPU_HOST / "hgx" / "nvidia-smi")
    (tmp / "fake").mkdir()
    (tmp / "fake" / "dpkg-query").write_text("#!/bin/sh\nexit 0\n")
    (tmp / "fake" / "dpkg-query").chmod(0o755)
    state = tmp / "state"
    state.mkdir()
    (state / "module-version").write_text(DRIVER + "\n")
    (state / "fm-started-at").write_text("1\n")
    (state / "fabric-stuck").write_text("")
    env = {"DLBOX_FIXTURE_HGX": str(tmp / "bin"), "DLBOX_FIXTURE_STATE": str(state), "PATH": "%s:/usr/bin:/bin" % (tmp / "fake")}
    out = subprocess.run(["sh", str(GPU_HOST / "gb200" / "nvidia-smi"), "-q"], env=env, capture_output=True, text=True,
                         check=True, timeout=60).stdout
    return fs.verdict(out, "active", service="nvidia-imex")


def test_the_fixture_trays_stuck_fabric_names_the_switch_trays_and_imex_never_fabric_manager(nvl, gb200_stuck):
    out = fs.not_ready_hint(gb200_stuck, 10, nvl, {"nvidia-imex": DRIVER + "-1"}, DRIVER, service="nvidia-imex")
    assert out.startswith("The NVLink fabric stayed In Progress for 10 s (4 GPU(s): 00000008:01:00.0, 00000009:01:00.0, "
                          "00000018:01:00.0, 00000019:01:00.0)")
    assert "the Fabric Manager of the rack's NVLink switch trays (NMX-Controller on NVOS) did not register" in out
    assert "so nvidia-imex was not started" in out
    check = out.split("Check: ", 1)[1]
    assert check.startswith("the NVLink switch trays: their Fabric Manager (NMX-Controller, with NVLSM, on NVOS) running")
    assert "nvidia-imex at exactly the driver's version 580.95.05" in check
    assert "systemctl status nvidia-imex and journalctl -u nvidia-imex" in check
    assert "nvidia-fabricmanager" not in out and "fm_sm_ipc.socket" not in out and "ib_umad" not in out
    assert "Found:" not in out


def test_the_recorded_in_progress_block_on_a_tray(nvl):
    result = fs.verdict((FABRIC / "smi-q-fabric-in-progress-health-gpuop2511.txt").read_text(encoding="utf-8"), "active")
    out = fs.not_ready_hint(result, 600, nvl, {}, DRIVER, service="nvidia-imex")
    assert "stayed In Progress for 600 s" in out and "nvidia-fabricmanager" not in out


def test_an_imex_of_another_version_is_found(nvl, gb200_stuck):
    out = fs.not_ready_hint(gb200_stuck, 10, nvl, {"nvidia-imex": "580.82.07-1"}, DRIVER, service="nvidia-imex")
    assert "Found: nvidia-imex is 580.82.07-1, the driver 580.95.05: it must be exactly the driver's version." in out


def test_the_filter_passes_the_tray_through(nvl, gb200_stuck):
    # the role's call: fabric_not_ready_hint(timeout, fabric, installed, driver, [], [], service)
    out = fabric_filter.fabric_not_ready_hint(gb200_stuck, 10, nvl, {}, DRIVER, [], [], "nvidia-imex")
    assert "NVLink switch trays" in out and "nvidia-fabricmanager" not in out


def test_an_hgx_board_still_names_fabric_manager_and_nvlsm():
    hgx = nf.fabric_set({"package": "nvidia-fabricmanager", "nvlink5": {
        "same_version": ["libnvidia-nscq", "libnvsdm"], "own_version": ["nvlsm"],
        "kernel_modules": ["mlx5_core", "mlx5_ib", "ib_umad"]}}, {})
    result = fs.verdict((FABRIC / "smi-q-fabric-in-progress-health-gpuop2511.txt").read_text(encoding="utf-8"), "active")
    out = fs.not_ready_hint(result, 10, hgx, {}, DRIVER)
    assert "Check: nvidia-fabricmanager, libnvidia-nscq, libnvsdm at exactly the driver's version 580.95.05" in out
    assert "switch trays" not in out
