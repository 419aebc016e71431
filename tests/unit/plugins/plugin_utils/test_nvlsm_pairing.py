"""Issue 49 red team M3: NVLSM at the release NVIDIA pairs with the driver branch (data/compat.yml
fabric_manager.nvlink5.hgx.nvlsm, sources there).

The plan names the series (``stack.fabric_manager.nvlink5.own_version_series``) or warns that the data pairs none; the
role's decision (``nvlink5_fabric.versions``) pins the newest build of the series the repositories have, refuses
before any change when they have none of it, and the check after the install refuses an nvlsm of another series.
nvlsm versions as NVIDIA's redist index lists them (2025.03.1, 2025.06.5, 2025.06.6, 2025.06.10) and as AWS
ParallelCluster pins one (2025.03.9-1); the madison lines are ``apt-cache madison``'s format.
"""

from __future__ import annotations

import pytest

from ansible_collections.dlbox.stack.plugins.plugin_utils import nvlink5_fabric, stack_resolver
from ansible_collections.dlbox.stack.plugins.plugin_utils.compat_data import load_compat, load_gpu_index


def madison(*versions):
    return "\n".join("     nvlsm | %s | https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2404/x86_64  "
                     "Packages" % v for v in versions)


def b200_plan(**request):
    index = load_gpu_index()
    host = index.host_from_hardware({"gpus": ["NVIDIA B200"] * 8, "os": request.pop("os", "ubuntu-24.04")})
    return stack_resolver.resolve(load_compat(), host, request, gpu_index=index)


@pytest.mark.parametrize("branch, series", [(None, ["2025.06"]), ("570", ["2025.03"])])
def test_plan_names_the_paired_series(branch, series):
    plan = b200_plan(**({"driver_branch": branch} if branch else {}))
    assert plan["ok"], plan["errors"]
    assert plan["stack"]["fabric_manager"]["nvlink5"]["own_version_series"] == {"nvlsm": series}


def test_a_branch_without_pairing_is_planned_with_a_warning():
    plan = b200_plan(os="ubuntu-26.04")  # NVIDIA's ubuntu2604 repository starts at R595 (data branch_min)
    assert plan["ok"], plan["errors"]
    assert plan["stack"]["driver"]["branch"] >= 590
    assert "own_version_series" not in plan["stack"]["fabric_manager"]["nvlink5"]
    assert any("pairs no NVLSM release" in w and "R%s" % plan["stack"]["driver"]["branch"] in w for w in plan["warnings"])


def fabric(series):
    return nvlink5_fabric.fabric_set({"package": "nvidia-fabricmanager", "nvlink5": {
        "same_version": [], "own_version": ["nvlsm"], "own_version_series": {"nvlsm": series} if series else {},
        "kernel_modules": ["ib_umad"]}}, {})


def test_newest_build_of_the_series_is_pinned():
    got = nvlink5_fabric.versions(fabric(["2025.06"]), madison("2025.03.9-1", "2025.06.5-1", "2025.06.10-1", "2025.06.6-1"),
                                  "580.95.05")
    assert got["ok"] and got["install_names"] == ["nvlsm=2025.06.10-1"] and got["versions"] == {"nvlsm": "2025.06.10-1"}


def test_without_pairing_apt_candidate_as_before():
    got = nvlink5_fabric.versions(fabric(None), madison("2025.03.9-1", "2025.06.5-1"), "595.71.05")
    assert got["ok"] and got["install_names"] == ["nvlsm"]


def test_repositories_without_the_series_are_refused_before_any_change():
    got = nvlink5_fabric.versions(fabric(["2025.06"]), madison("2025.03.1-1", "2025.03.9-1"), "580.95.05")
    assert not got["ok"] and got["install_names"] == []
    message = nvlink5_fabric.refusal(fabric(["2025.06"]), got["problems"], "580.95.05", 580)
    assert "nvlsm of the release series 2025.06" in message and "2025.03.9-1" in message and "Nothing was changed" in message


def test_a_foreign_newer_nvlsm_is_still_refused_first():
    got = nvlink5_fabric.versions(fabric(["2025.06"]), madison("2025.06.5-1"), "580.95.05", installed={"nvlsm": "2025.09.1-1"})
    assert not got["ok"] and got["foreign"][0]["installed"] == "2025.09.1-1"


def test_after_the_install_another_series_is_a_problem():
    assert nvlink5_fabric.after(fabric(["2025.06"]), {"nvlsm": "2025.06.5-1"}, "580.95.05")["problems"] == []
    problems = nvlink5_fabric.after(fabric(["2025.06"]), {"nvlsm": "2025.03.9-1"}, "580.95.05")["problems"]
    assert problems and "not of the release series 2025.06" in problems[0]


@pytest.mark.parametrize("version, ok", [("2025.06.5-1", True), ("1:2025.06.5-1", True), ("2025.060.1-1", False),
                                         ("2025.03.9-1", False), ("2025.06-1", True)])
def test_in_series(version, ok):
    assert nvlink5_fabric.in_series(version, ["2025.06"]) is ok


def test_every_pairing_row_is_well_formed_and_covers_the_nvlink5_branches():
    rows = load_compat()["fabric_manager"]["nvlink5"]["hgx"]["nvlsm"]
    assert all(r["series"] and all(len(s.split(".")) == 2 for s in r["series"]) for r in rows)
    floor = int(load_compat()["fabric_manager"]["nvlink5"]["driver_min"].split(".")[0])
    assert min(int(r["branch_min"]) for r in rows) <= floor
