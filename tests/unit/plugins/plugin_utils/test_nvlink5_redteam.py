# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 49, the red team's H3, L1 and L3 on the plan and on fabric_state.not_ready_hint:

- H3: HGX B200/B300 need infiniband-diags (ibstat) beside NVLSM: NVIDIA's driver container installs "nvlsm
  infiniband-diags" together (NVIDIA/gpu-driver-container ubuntu24.04/install.sh, nvlink5_pkgs_install), and Fabric
  Manager's start script runs ibstat. The plan names it (data/compat.yml fabric_manager.nvlink5.hgx.distro_packages),
  unversioned and apart from the packages pinned to the driver; the hint names ibstat when the start script could not
  run it, and always in its checks.
- L1: the hint names the plan's Fabric Manager package (nvidia-fabricmanager-580 from Ubuntu's archive), not always
  nvidia-fabricmanager.
- L3: a fabric that failed (Bandwidth Degraded, a Status other than Success: fabric_state's ``failed``) is said to have
  failed, never to have "not come up within N s"."""

from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.dlbox.stack.plugins.filter import fabric as fabric_filter
from ansible_collections.dlbox.stack.plugins.plugin_utils import fabric_state as fs
from ansible_collections.dlbox.stack.plugins.plugin_utils import nvlink5_fabric as nf
from ansible_collections.dlbox.stack.plugins.plugin_utils.compat_data import load_compat
from test_nvlink5_plan import b200_hardware, gb200_hardware, plan_for  # beside this file

FABRIC = Path(__file__).resolve().parents[3] / "fixtures" / "fabric"
DRIVER = "580.95.05"


@pytest.fixture(scope="module")
def data():
    return load_compat()


@pytest.fixture(scope="module")
def b200_plan(data):
    return plan_for(data, b200_hardware())


def _hgx(plan):
    return nf.fabric_set(plan["stack"]["fabric_manager"], plan["stack"]["driver"])


def test_the_b200_plan_names_infiniband_diags_apart_from_the_pinned_packages(b200_plan):
    assert b200_plan["ok"], b200_plan["errors"]
    nvlink5 = b200_plan["stack"]["fabric_manager"]["nvlink5"]
    assert nvlink5["distro_packages"] == ["infiniband-diags"]
    assert "infiniband-diags" not in nvlink5["same_version"] + nvlink5["own_version"]  # not pinned, not held
    fabric = _hgx(b200_plan)
    assert fabric["distro_packages"] == ["infiniband-diags"]
    assert "infiniband-diags" not in nf.names(fabric)  # not in the driver's pinned apt transaction


def test_the_hint_names_ibstat_when_the_start_script_had_none_and_in_its_checks(b200_plan):
    stuck = fs.verdict((FABRIC / "smi-q-fabric-in-progress-h100.txt").read_text(encoding="utf-8"), "active")
    logs = ["nvidia-fabricmanager-start.sh: ibstat: not found"]
    out = fabric_filter.fabric_not_ready_hint(stuck, 300, _hgx(b200_plan), {}, DRIVER, [], logs)
    assert "Found:" in out and "ibstat is not installed (its start script: 'ibstat: not found'): install infiniband-diags" in out
    assert "ibstat (infiniband-diags) installed" in fabric_filter.fabric_not_ready_hint(stuck, 300, _hgx(b200_plan), {}, DRIVER)


def test_the_hint_names_the_plans_fabric_manager_package():
    fabric = nf.fabric_set({"package": "nvidia-fabricmanager-580", "nscq": {"package": "libnvidia-nscq-580"}}, {})
    stuck = fs.verdict((FABRIC / "smi-q-fabric-in-progress-h100.txt").read_text(encoding="utf-8"), "active")
    out = fabric_filter.fabric_not_ready_hint(stuck, 300, fabric, {"nvidia-fabricmanager-580": "580.82.07-0ubuntu1"},
                                              DRIVER, fm_package="nvidia-fabricmanager-580")
    assert "nvidia-fabricmanager-580, libnvidia-nscq-580 at exactly the driver's version" in out
    assert "nvidia-fabricmanager-580 is 580.82.07-0ubuntu1, the driver %s" % DRIVER in out


@pytest.mark.parametrize("kind", ["hgx", "nvl"])
def test_a_failed_fabric_is_not_reported_as_a_timeout(b200_plan, kind):
    degraded = fs.verdict((FABRIC / "EDITED-smi-q-fabric-health-degraded-bandwidth.txt").read_text(encoding="utf-8"), "active")
    assert degraded["failed"] and not degraded["waiting"]
    fabric = _hgx(b200_plan) if kind == "hgx" else {"kind": "nvl", "same_version": ["nvidia-imex"]}
    out = fs.not_ready_hint(degraded, 300, fabric, {}, DRIVER, service="nvidia-imex" if kind == "nvl" else "nvidia-fabricmanager")
    assert out.startswith("The NVLink fabric failed (waiting does not bring it up; not a timeout)")
    assert "300 s" not in out


@pytest.mark.parametrize("hardware", ["b200", "gb200"])
def test_an_installed_driver_older_than_nvidias_floor_is_refused(data, hardware):
    """M1: HGX B200 and GB200 need driver 570.133.20 or later (NVIDIA/cloud-native-docs#184; data/compat.yml
    fabric_manager.nvlink5.driver_min), not 570.26, the first R570."""
    assert data["fabric_manager"]["nvlink5"]["driver_min"] == "570.133.20"
    base = b200_hardware() if hardware == "b200" else gb200_hardware()
    old = plan_for(data, dict(base, driver_version="570.124.06"))
    assert not old["ok"]
    assert any("needs NVIDIA driver 570.133.20 or later (NVIDIA/cloud-native-docs#184); the installed 570.124.06 is older" in e
               for e in old["errors"])
    new = plan_for(data, dict(base, driver_version="570.172.08"))
    assert not any("570.133.20" in e for e in new["errors"])
    assert any("needs NVIDIA driver 570.133.20 or later" in n and "R570 is installed at its newest" in n for n in new["notes"])


def test_the_doctors_nvlink5_fix_names_infiniband_diags_and_ibstat():
    """H3 in the doctor: on the recorded B200 table with Fabric Manager's NV_WARN_NOTHING_TO_DO (the captures of
    test_blackwell_real_captures, sources there) the fix names infiniband-diags beside nvlsm."""
    from test_blackwell_real_captures import B200_SMI, NOTHING_TO_DO, diagnose  # beside this file
    found = next(f for f in diagnose(B200_SMI, NOTHING_TO_DO)["findings"] if f["id"] == "fabricmanager-down")
    assert "infiniband-diags (ibstat" in found["fix"] and "nvlsm" in found["fix"]
