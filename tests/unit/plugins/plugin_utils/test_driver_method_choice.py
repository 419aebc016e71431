"""Which repository the driver comes from when the request names none, and the Fabric Manager package that goes with it
(issue 44, defects 4 and 5).

Rules run on the FROZEN data (tests/unit/data/compat-frozen.yml) with ``os.default_driver_method: distro``, as the
shipped data/compat.yml has it. In that data Debian 12's archive has R535 (end of life since 2026-06) as its newest
branch for Turing and later GPUs and ships no Fabric Manager (driver_package_names.distro.debian.fabric_manager:
false); Ubuntu's archive has R580 and ships nvidia-fabricmanager-<branch>. The expectations are read from the data
where they are facts of it (end of life, which method ships Fabric Manager), not retyped.
"""

from __future__ import annotations

import copy
import itertools
from pathlib import Path

import pytest

from ansible_collections.dlbox.stack.plugins.plugin_utils import stack_resolver
from ansible_collections.dlbox.stack.plugins.plugin_utils.compat_data import load_compat, load_gpu_index
from ansible_collections.dlbox.stack.plugins.plugin_utils.compat_index import CompatIndex
from ansible_collections.dlbox.stack.plugins.plugin_utils.gpu_catalog import GpuIndex
from ansible_collections.dlbox.stack.plugins.plugin_utils.stack_context import branch_is_eol

FROZEN = Path(__file__).resolve().parents[2] / "data" / "compat-frozen.yml"
# the host of issue 44 (two H100 SXM5 GPUs of an HGX board); the frozen data's hand-kept GPU entries know the SXM5 name,
# the shipped catalog also the name nvidia-smi prints ("NVIDIA H100 80GB HBM3", the last test)
DEBIAN_HGX = {"gpus": ["H100 SXM5 80GB"] * 2, "nvswitch": True, "os": "debian-12"}


@pytest.fixture(scope="module")
def data():
    frozen = copy.deepcopy(load_compat(FROZEN))
    frozen["os"]["default_driver_method"] = "distro"
    return frozen


def plan_for(data, hardware, request=None):
    index = GpuIndex(data)
    return stack_resolver.resolve(data, index.host_from_hardware(hardware), request or {}, gpu_index=index)


def driver(plan):
    return plan["stack"]["driver"]


def eol(data, branch):
    index = CompatIndex(data)
    return branch_is_eol(type("P", (), {"index": index})(), index.branch[branch])


def ships_fabric_manager(data, os_key):
    family = os_key.split("-", 1)[0]
    return data["driver_package_names"]["distro"][family].get("fabric_manager", True)


# --- defect 4: a Debian NVSwitch host ------------------------------------------------------------------------------

def test_debian_nvswitch_host_gets_nvidia_repo_a_supported_branch_the_server_profile_and_its_fabric_manager(data):
    plan = plan_for(data, DEBIAN_HGX)
    assert plan["ok"], plan["errors"]
    assert driver(plan)["method"] == "nvidia_repo"
    assert "debian-12's own archive ships no NVIDIA Fabric Manager" in driver(plan)["method_reason"]
    assert any("The driver comes from NVIDIA's repository" in note for note in plan["notes"])
    assert not eol(data, driver(plan)["branch"])
    assert driver(plan)["profile"] == "server"
    fm = plan["stack"]["fabric_manager"]
    assert fm["method"] == "nvidia_repo" and fm["branch"] == driver(plan)["branch"]
    # NVIDIA's repository drops the branch from the name from R580 on (data fabric_manager.packages)
    assert fm["package"] == ("nvidia-fabricmanager" if fm["branch"] >= 580 else "nvidia-fabricmanager-%d" % fm["branch"])
    assert fm["version"] == "%d.*" % fm["branch"]


def test_distro_asked_on_a_debian_nvswitch_host_is_refused_naming_nvidia_repo(data):
    plan = plan_for(data, DEBIAN_HGX, {"driver_method": "distro"})
    assert not plan["ok"]
    text = " ".join(plan["errors"])
    assert "driver_method: distro cannot drive this NVSwitch host" in text
    assert "debian-12's own archive ships no NVIDIA Fabric Manager" in text and "request driver_method: nvidia_repo" in text
    assert plan["stack"]["fabric_manager"] is None  # no package named that the archive does not have


def test_an_installed_driver_on_a_debian_nvswitch_host_gets_fabric_manager_from_nvidia_repo(data):
    plan = plan_for(data, dict(DEBIAN_HGX, driver_version="535.216.01"))
    assert plan["ok"], plan["errors"]
    assert driver(plan)["branch"] == 535 and driver(plan)["method"] == "nvidia_repo"
    fm = plan["stack"]["fabric_manager"]
    assert (fm["package"], fm["version"], fm["method"]) == ("nvidia-fabricmanager-535", "535.216.01", "nvidia_repo")


def test_an_ubuntu_nvswitch_host_keeps_the_archive_whose_fabric_manager_it_ships(data):
    plan = plan_for(data, dict(DEBIAN_HGX, os="ubuntu-22.04"))
    assert plan["ok"], plan["errors"]
    assert driver(plan)["method"] == "distro" and driver(plan)["method_reason"] is None
    fm = plan["stack"]["fabric_manager"]
    assert fm["method"] == "distro" and fm["package"] == "nvidia-fabricmanager-%d" % driver(plan)["branch"]


@pytest.mark.parametrize(("os_key", "method", "installed"), list(itertools.product(
    ["debian-12", "ubuntu-22.04"], [None, "distro", "nvidia_repo"], [None, "535.216.01", "580.95.05"])))
def test_a_plan_never_names_a_fabric_manager_package_its_method_does_not_ship(data, os_key, method, installed):
    hardware = dict(DEBIAN_HGX, os=os_key)
    if installed:
        hardware["driver_version"] = installed
    plan = plan_for(data, hardware, {"driver_method": method} if method else {})
    fm = plan["stack"]["fabric_manager"]
    if fm is None:
        # only the one refusal: distro asked where the archive ships no Fabric Manager
        assert not plan["ok"] and (method, ships_fabric_manager(data, os_key)) == ("distro", False), plan["errors"]
        assert "driver_method: distro cannot drive this NVSwitch host" in " ".join(plan["errors"])
        return
    assert plan["ok"], plan["errors"]
    assert fm["method"] == driver(plan)["method"]
    if fm["method"] == "distro":
        assert ships_fabric_manager(data, os_key), (os_key, fm)
    rules = [r for r in data["fabric_manager"]["packages"] if r.get("method") in (None, fm["method"])
             and r["branch_min"] <= fm["branch"] and (r["branch_max"] is None or fm["branch"] <= r["branch_max"])]
    assert fm["package"] == str(rules[-1]["package"]).replace("{branch}", str(fm["branch"]))


# --- defect 5: a new install where the archive's branch is end of life ------------------------------------------------

def test_a_new_install_whose_archive_branch_is_end_of_life_comes_from_nvidia_repo(data):
    plan = plan_for(data, {"gpus": ["RTX 4090"], "os": "debian-12"})
    assert plan["ok"], plan["errors"]
    assert driver(plan)["method"] == "nvidia_repo" and not eol(data, driver(plan)["branch"])
    reason = driver(plan)["method_reason"]
    assert "debian-12's own archive has no supported driver branch for these GPUs: its newest for them, R535, is end-of-life" in reason
    assert "NVIDIA's repository has R%d" % driver(plan)["branch"] in reason
    note = next(n for n in plan["notes"] if n.startswith("The driver comes from NVIDIA's repository"))
    assert "request driver_method: distro to install the archive's R535 anyway" in note
    assert not any("end-of-life" in w for w in plan["warnings"])


def test_a_new_install_whose_archive_has_no_branch_at_all_comes_from_nvidia_repo(data):
    plan = plan_for(data, {"gpus": ["RTX 5090"], "os": "debian-12"})
    assert plan["ok"], plan["errors"]
    assert driver(plan)["method"] == "nvidia_repo"
    assert "debian-12's own archive has no driver branch for these GPUs" in driver(plan)["method_reason"]


def test_distro_asked_keeps_the_archive_branch_with_a_warning_naming_the_supported_one(data):
    plan = plan_for(data, {"gpus": ["RTX 4090"], "os": "debian-12"}, {"driver_method": "distro"})
    assert plan["ok"], plan["errors"]
    assert (driver(plan)["method"], driver(plan)["branch"], driver(plan)["method_reason"]) == ("distro", 535, None)
    assert any("R535 is end-of-life" in w and "driver_method: nvidia_repo installs R" in w for w in plan["warnings"])


@pytest.mark.parametrize(("hardware", "request_"), [
    ({"gpus": ["RTX 4090"], "os": "debian-12", "driver_version": "550.54.14"}, {}),  # an installed driver is kept
    ({"gpus": ["RTX 4090"], "os": "debian-12"}, {"driver_branch": "535"}),           # the archive has the branch asked
    ({"gpus": ["RTX 4090"], "os": "ubuntu-22.04"}, {}),                              # the archive has a supported branch
])
def test_the_archive_stays_where_it_serves_the_request(data, hardware, request_):
    plan = plan_for(data, hardware, request_)
    assert plan["ok"], plan["errors"]
    assert driver(plan)["method"] == "distro" and driver(plan)["method_reason"] is None


def test_no_supported_branch_anywhere_keeps_the_archive(data):
    """Kepler's last branch (R470) is end of life in every source: no better source, the archive's R470 is planned."""
    plan = plan_for(data, {"gpus": ["Tesla K80"], "os": "debian-12"})
    assert plan["ok"], plan["errors"]
    assert driver(plan)["method"] == "distro" and driver(plan)["branch"] == 470


def test_the_issue_host_on_the_shipped_data():
    """plan.yml's host of issue 44 on data/compat.yml itself, GPUs named as nvidia-smi prints them."""
    index = load_gpu_index()
    hardware = {"gpus": ["NVIDIA H100 80GB HBM3"] * 2, "nvswitch": True, "os": "debian-12"}
    plan = stack_resolver.resolve(load_compat(), index.host_from_hardware(hardware), {}, gpu_index=index)
    assert plan["ok"], plan["errors"]
    assert (driver(plan)["method"], driver(plan)["profile"]) == ("nvidia_repo", "server")
    assert not eol(load_compat(), driver(plan)["branch"])
    assert plan["stack"]["fabric_manager"]["method"] == "nvidia_repo"
