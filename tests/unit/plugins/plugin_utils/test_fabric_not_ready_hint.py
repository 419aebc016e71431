# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""fabric_state.not_ready_hint: the message a user gets when the NVLink fabric stays In Progress past the wait (issue
49), on recorded outputs (tests/fixtures/fabric, sources in its SOURCES.md): the In Progress block of driver 580.159.04
(NVIDIA/gpu-operator#2511), NVLSM's banner 'nvlsm: OpenSM 2025.06.5_eb3b4ba_df9bb3c_ae214d2' as Fabric Manager's start
logged it on an HGX B200 (siderolabs/extensions#893), NVLSM without ib_umad (siderolabs/docs#581), Fabric Manager
refusing another driver (NVIDIA/gpu-driver-container#735). The installed versions are the test's (dpkg is not recorded)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.dlbox.stack.plugins.filter import fabric as fabric_filter
from ansible_collections.dlbox.stack.plugins.plugin_utils import fabric_state as fs
from ansible_collections.dlbox.stack.plugins.plugin_utils import nvlink5_fabric as nf
from ansible_collections.dlbox.stack.plugins.plugin_utils.compat_data import load_compat

FABRIC = Path(__file__).resolve().parents[3] / "fixtures" / "fabric"
DRIVER = "580.95.05"
NVLSM_BANNER = "nvlsm: OpenSM 2025.06.5_eb3b4ba_df9bb3c_ae214d2\n"  # siderolabs/extensions#893, as logged


def _read(name):
    return (FABRIC / name).read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def hgx():
    """The HGX B200 set the plan gives for R580 (data/compat.yml fabric_manager.nvlink5.hgx)."""
    nvl5 = load_compat()["fabric_manager"]["nvlink5"]
    entry = next(p for p in nvl5["hgx"]["packages"] if p["branch_min"] == 580)
    return nf.fabric_set({"package": "nvidia-fabricmanager", "nvlink5": {
        "same_version": entry["same_version"], "own_version": entry["own_version"],
        "kernel_modules": nvl5["hgx"]["kernel_modules"]}}, {})


def _good(hgx, **changes):
    versions = dict(("%s" % name, "%s-1" % DRIVER) for name in ["nvidia-fabricmanager"] + hgx["same_version"])
    versions["nvlsm"] = "2025.06.5-1"
    versions.update(changes)
    return versions


def _stuck():
    eight = "".join("GPU 00000000:%02X:00.0\n%s" % (bus, _read("smi-q-fabric-in-progress-health-gpuop2511.txt"))
                    for bus in (0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB))
    return fs.verdict(eight, "active")


def test_stays_in_progress_with_everything_in_place_gives_the_checks(hgx):
    """The wait ran out (600 s) on eight GPUs In Progress, nothing found wrong: the message says what it means and what
    to check, with the names and modules of the data."""
    out = fs.not_ready_hint(_stuck(), 600, hgx, _good(hgx), DRIVER)
    assert out.startswith("The NVLink fabric stayed In Progress for 600 s (8 GPU(s): 00000000:18:00.0, 00000000:2A:00.0, "
                          "00000000:3A:00.0, 00000000:5D:00.0 ...): Fabric Manager did not register the GPUs")
    assert "error 802" in out and "Found:" not in out
    assert "nvidia-fabricmanager, %s at exactly the driver's version %s" % (", ".join(hgx["same_version"]), DRIVER) in out
    assert "%s loaded" % ", ".join(hgx["kernel_modules"]) in out and "ib_umad" in hgx["kernel_modules"]
    assert "nvlsm installed and the NVLSM that runs of its version" in out
    assert "systemctl status nvidia-fabricmanager and journalctl -u nvidia-fabricmanager" in out


def test_fabric_manager_of_another_version_is_named(hgx):
    out = fs.not_ready_hint(_stuck(), 600, hgx, _good(hgx, **{"nvidia-fabricmanager": "580.82.07-1"}), DRIVER)
    assert "Found: nvidia-fabricmanager is 580.82.07-1, the driver 580.95.05: it must be exactly the driver's version." in out


def test_fabric_managers_own_refusal_is_quoted():
    out = fs.not_ready_hint(_stuck(), 600, None, {}, "580.126.09", logs=_read("fm-version-mismatch-gpudrivercontainer735.txt"))
    assert "Found: Fabric Manager 590.48.01 refuses the loaded driver 580.126.09" in out


def test_an_nvlsm_of_another_version_than_its_package_is_named(hgx):
    """The NVLSM that ran (its banner) is not the installed nvlsm: another copy runs."""
    out = fs.not_ready_hint(_stuck(), 600, hgx, _good(hgx, nvlsm="2025.03.2-1"), DRIVER, logs=NVLSM_BANNER)
    assert "The NVLSM that ran is OpenSM 2025.06.5, the nvlsm package 2025.03.2-1: another NVLSM runs" in out
    assert "Found:" not in fs.not_ready_hint(_stuck(), 600, hgx, _good(hgx), DRIVER, logs=NVLSM_BANNER)


def test_nvlsm_is_never_compared_with_the_driver(hgx):
    """nvlsm's versions are date-based (2025.06.5): not the driver's, and that is no fault."""
    out = fs.not_ready_hint(_stuck(), 600, hgx, _good(hgx), DRIVER)
    assert "nvlsm is" not in out


def test_no_nvlsm_and_no_ib_umad_are_named(hgx):
    versions = _good(hgx)
    del versions["nvlsm"]
    out = fs.not_ready_hint(_stuck(), 600, hgx, versions, DRIVER, logs=_read("nvlsm-no-ib-umad-siderolabs-docs581.txt"))
    assert "nvlsm is not installed." in out
    assert "ib_umad not loaded (NVLSM: 'umad_init: can't read ABI version" in out
    out = fs.not_ready_hint(_stuck(), 600, hgx, _good(hgx), DRIVER, missing_modules=["mlx5_ib", "ib_umad"])
    assert "Found: mlx5_ib, ib_umad not loaded" in out


def test_a_pcie_nvswitch_host_gets_no_nvlsm_checks():
    """HGX H100 (NVSwitches on PCIe): Fabric Manager and NSCQ only."""
    fabric = nf.fabric_set({"package": "nvidia-fabricmanager-570", "nscq": {"package": "libnvidia-nscq-570"}}, {})
    out = fs.not_ready_hint(fs.verdict(_read("smi-q-fabric-in-progress-h100.txt"), "active"), 300, fabric,
                            {"nvidia-fabricmanager": "570.172.08-1"}, "570.172.08")
    assert "nvlsm" not in out.lower() and "ib_umad" not in out and "libnvidia-nscq-570 at exactly" in out


def test_a_completed_but_degraded_fabric_gives_the_verdicts_reason(hgx):
    result = fs.verdict(_read("EDITED-smi-q-fabric-health-degraded-bandwidth.txt"), "active")
    out = fs.not_ready_hint(result, 600, hgx, _good(hgx), DRIVER)
    # a failed fabric ended the wait at once: said as a failure, not as a timeout (issue 49, red team L3)
    assert out.startswith("The NVLink fabric failed (waiting does not bring it up; not a timeout): the NVLink fabric is "
                          "Completed but not healthy")


def test_the_filter_takes_log_lines(hgx):
    out = fabric_filter.fabric_not_ready_hint(_stuck(), 600, hgx, _good(hgx, nvlsm="2025.03.2-1"), DRIVER, [],
                                              NVLSM_BANNER.splitlines())
    assert "another NVLSM runs" in out
    assert "fabric_not_ready_hint" in fabric_filter.FilterModule().filters()
