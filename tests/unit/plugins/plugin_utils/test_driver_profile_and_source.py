"""The plan's driver profile and package set, Fabric Manager simulated with the driver, NVLink5 hosts, and a branch
request served by the method that has it (issues 24 and 25).

Rules run on the FROZEN data (tests/unit/data/compat-frozen.yml) with ``os.default_driver_method: distro`` (as the
shipped data/compat.yml has it; the frozen copy's default is nvidia_repo). apt's outputs are real captures of
tests/fixtures/driver (see its README: Ubuntu 22.04/24.04 test images against archive.ubuntu.com, 2026-12-02).
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from ansible_collections.dlbox.stack.plugins.plugin_utils import nvidia_driver_plan as ndp
from ansible_collections.dlbox.stack.plugins.plugin_utils import role_plan, stack_resolver
from ansible_collections.dlbox.stack.plugins.plugin_utils.compat_data import load_compat
from ansible_collections.dlbox.stack.plugins.plugin_utils.gpu_catalog import GpuIndex

ROOT = Path(__file__).resolve().parents[4]
FROZEN = ROOT / "tests" / "unit" / "data" / "compat-frozen.yml"
FIX = ROOT / "tests" / "fixtures" / "driver"
HGX_H100 = {"gpus": ["H100 SXM5 80GB"] * 8, "nvswitch": True, "os": "ubuntu-22.04"}


@pytest.fixture(scope="module")
def data():
    frozen = copy.deepcopy(load_compat(FROZEN))
    frozen["os"]["default_driver_method"] = "distro"
    return frozen


def plan_for(data, hardware, request=None, **host_extra):
    index = GpuIndex(data)
    host = index.host_from_hardware(hardware)
    host.update(host_extra)
    return stack_resolver.resolve(data, host, request or {}, gpu_index=index)


def driver(plan):
    return plan["stack"]["driver"]


def fixture(name):
    return (FIX / name).read_text(encoding="utf-8")


# --- the profile ---------------------------------------------------------------------------------------

def test_nvswitch_ubuntu_host_gets_the_server_set_with_fabric_manager(data):
    plan = plan_for(data, HGX_H100)
    assert plan["ok"], plan["errors"]
    assert driver(plan)["profile"] == "server"
    assert "Fabric Manager depends on the server driver series" in driver(plan)["profile_reason"]
    assert driver(plan)["packages"] == ["nvidia-headless-580-server-open", "nvidia-utils-580-server"]
    assert driver(plan)["archive_package"] == "nvidia-driver-580-server-open"
    assert plan["stack"]["fabric_manager"]["package"] == "nvidia-fabricmanager-580"
    assert plan["stack"]["fabric_manager"]["driver_profile"] == "server"


def test_desktop_asked_on_an_nvswitch_ubuntu_host_is_refused(data):
    plan = plan_for(data, HGX_H100, {"driver_profile": "desktop"})
    assert not plan["ok"]
    text = " ".join(plan["errors"])
    assert "driver_profile: desktop cannot go with Fabric Manager" in text
    assert "nvidia-kernel-common-580-server-<version>" in text and "nvidia_driver_profile: server" in text


@pytest.mark.parametrize(("gpus", "profile"), [
    (["H100 PCIe"], "server"),                    # display: false in the data
    (["A100 PCIe 80GB", "A100 PCIe 80GB"], "server"),
    (["RTX 4090"], "desktop"),
    (["H100 PCIe", "RTX 4090"], "desktop"),       # one GPU with a display output: the desktop set
])
def test_profile_follows_the_catalog_display_flag(data, gpus, profile):
    plan = plan_for(data, {"gpus": gpus, "os": "ubuntu-22.04"})
    assert plan["ok"], plan["errors"]
    assert driver(plan)["profile"] == profile
    suffix = "-server" if profile == "server" else ""
    assert all(suffix in name for name in driver(plan)["packages"]) if suffix else driver(plan)["packages"] == ["nvidia-driver-580-open"]


def test_without_the_display_flag_the_profile_is_desktop(data):
    """The decision is the data's: drop the flag and the same GPU gets the desktop set (not a hard-coded list)."""
    other = copy.deepcopy(data)
    for gpu in other["gpus"]:
        gpu.pop("display", None)
    assert driver(plan_for(other, {"gpus": ["H100 PCIe"], "os": "ubuntu-22.04"}))["profile"] == "desktop"


def test_requested_profile_wins_where_nothing_needs_another(data):
    plan = plan_for(data, {"gpus": ["RTX 4090"], "os": "ubuntu-22.04"}, {"driver_profile": "server"})
    assert plan["ok"] and driver(plan)["profile"] == "server"
    assert driver(plan)["packages"] == ["nvidia-headless-580-server-open", "nvidia-utils-580-server"]


def test_debian_server_set_and_secure_boot_signed_set(data):
    # driver_method named: without it Debian 12's only branch for an A100 (R535, end of life) sends the plan to NVIDIA's
    # repository (issue 44, test_stack_resolver's method tests)
    plan = plan_for(data, {"gpus": ["A100 PCIe 80GB"], "os": "debian-12"}, {"driver_method": "distro"})
    assert driver(plan)["profile"] == "server"
    assert "nvidia-smi" in driver(plan)["packages"] and "nvidia-driver" not in driver(plan)["packages"]
    signed = plan_for(data, {"gpus": ["RTX 4090"], "os": "ubuntu-22.04"}, secure_boot=True)
    assert "linux-modules-nvidia-580-open-generic" in driver(signed)["packages"]


def test_bad_profile_variable_is_refused_naming_it():
    errors = role_plan.check_overrides({"driver_profile": ("nvidia_driver_profile", "laptop")})
    assert errors == ["nvidia_driver_profile: 'laptop' is not one of: desktop, server (or auto)."]
    assert role_plan.check_overrides({"driver_profile": ("nvidia_driver_profile", "")}) == []


def test_the_role_sends_method_and_profile_only_when_set():
    asked = ndp.overrides({"method": "", "branch": "", "kernel_modules": "", "profile": ""})
    assert asked["driver_method"] == ("nvidia_driver_method", "") and asked["driver_profile"] == ("nvidia_driver_profile", "")
    plan = {"stack": {"driver": {"method": "nvidia_repo", "branch": 535, "kernel_modules": "open", "profile": "server"}}}
    assert ndp.plan_fits(plan, "", "", "", "")
    assert not ndp.plan_fits(plan, "distro", "", "", "")
    assert not ndp.plan_fits(plan, "", "", "", "desktop")
    # a plan without a profile (made by hand, or before plans had one) fits the role's profile
    del plan["stack"]["driver"]["profile"]
    assert ndp.plan_fits(plan, "nvidia_repo", "535", "open", "server")


# --- issue 25: a branch the archive has only as a transitional package ---------------------------------------

@pytest.mark.parametrize("branch", ["535", "550"])
def test_transitional_branch_without_a_method_comes_from_nvidia_repo(data, branch):
    plan = plan_for(data, {"gpus": ["RTX 4090"], "os": "ubuntu-22.04"}, {"driver_branch": branch})
    assert plan["ok"], plan["errors"]
    assert driver(plan)["branch"] == int(branch) and driver(plan)["method"] == "nvidia_repo"
    assert "nvidia-driver-%s is a transitional package that installs nvidia-driver-580 (R580)" % branch in driver(plan)["method_reason"]
    assert any("Driver branch R%s is planned from NVIDIA's repository" % branch in note for note in plan["notes"])


@pytest.mark.parametrize("branch", ["535", "550"])
def test_transitional_branch_with_distro_is_refused_naming_nvidia_repo(data, branch):
    plan = plan_for(data, {"gpus": ["RTX 4090"], "os": "ubuntu-22.04"}, {"driver_branch": branch, "driver_method": "distro"})
    assert not plan["ok"]
    text = " ".join(plan["errors"])
    assert "Driver branch R%s is not installable from ubuntu-22.04's own archive" % branch in text
    assert "nvidia-driver-%s is a transitional package" % branch in text
    assert "request driver_method: nvidia_repo" in text


def test_a_branch_the_archive_has_stays_distro(data):
    plan = plan_for(data, {"gpus": ["RTX 4090"], "os": "ubuntu-22.04"}, {"driver_branch": "580"})
    assert driver(plan)["method"] == "distro" and driver(plan)["method_reason"] is None


# --- NVLink5 (HGX B200/B300) -------------------------------------------------------------------------------

def test_b200_sxm_is_refused_before_any_change_even_without_detected_nvswitches(data):
    plan = plan_for(data, {"gpus": ["B200"] * 8, "os": "ubuntu-22.04"})
    assert not plan["ok"]
    assert any("NVSwitches are not PCIe devices" in e and "nvlsm and libnvsdm" in e for e in plan["errors"])


def test_b200_is_planned_when_the_data_says_nvlink5_is_supported(data):
    other = copy.deepcopy(data)
    other["fabric_manager"]["nvlink5"]["supported"] = True
    plan = plan_for(other, {"gpus": ["B200"] * 8, "nvswitch": True, "os": "ubuntu-22.04"})
    assert plan["ok"], plan["errors"]
    assert plan["stack"]["fabric_manager"]["packages"][-2:] == ["nvlsm", "libnvsdm"]


# --- Fabric Manager in the driver's simulation (real captures) ---------------------------------------------

@pytest.mark.parametrize("release", ["ubuntu2204", "ubuntu2404"])
def test_fm_with_the_server_set_resolves_to_one_series(release):
    text = fixture("%s-apt-get-s-install-580-server-open-fabricmanager.txt" % release)
    got = ndp.check_fabric_manager_simulation(text, "nvidia-fabricmanager-580", "580.178.04", 580, rc=0)
    assert got["ok"] and got["simulated"] and got["series"] == ["-server"]
    assert got["package_version"].startswith("580.178.04-0ubuntu0.%s.04" % release[-4:-2])


@pytest.mark.parametrize("release", ["ubuntu2204", "ubuntu2404"])
def test_fm_with_the_desktop_set_is_refused(release):
    text = fixture("%s-apt-get-s-install-nvidia-driver-580-open-fabricmanager.txt" % release)
    got = ndp.check_fabric_manager_simulation(text, "nvidia-fabricmanager-580", None, 580, rc=100)
    assert not got["ok"]
    assert "nvidia-fabricmanager-580 Depends: nvidia-kernel-common-580-server-580.178.04" in got["problems"][0]
    assert "held broken packages" in got["problems"][0]


def test_fm_at_another_version_or_two_series_is_refused():
    text = fixture("ubuntu2204-apt-get-s-install-580-server-open-fabricmanager.txt")
    got = ndp.check_fabric_manager_simulation(text, "nvidia-fabricmanager-580", "580.95.05", 580)
    assert not got["ok"] and "exactly the driver's version" in got["problems"][0]
    # the capture with one desktop-series package added (a line of the desktop capture of the same archive)
    desktop = [line for line in fixture("ubuntu2204-apt-get-s-install-nvidia-driver-580-open.txt").splitlines()
               if line.startswith("Inst nvidia-kernel-common-580 ")]
    assert desktop
    got = ndp.check_fabric_manager_simulation(text + "\n" + desktop[0] + "\n", "nvidia-fabricmanager-580", "580.178.04", 580)
    assert not got["ok"] and "two driver series" in got["problems"][0] and got["series"] == ["", "-server"]


def _hgx_options(**over):
    base = dict(method="", branch="", kernel_modules="", profile="", other_branch="refuse", change_branch=False,
                keep_dir="/var/backups/dlbox-nvidia-driver", in_container="skip", build_kernels=[], kernel_flavour="",
                secure_boot="auto", secure_boot_signing="auto", mok_key="", mok_certificate="",
                shim_mok_dir="/var/lib/shim-signed/mok", pin_name="dlbox-00-nvidia-driver-branch.pref", hostname="hgx1",
                distribution="Ubuntu", distribution_version="22.04", kernel="5.15.0-204-generic", check_mode=False,
                request_text="{}")
    base.update(over)
    return base


def test_decide_simulates_fm_with_the_driver_and_installs_it_at_the_exact_version(data):
    plan = plan_for(data, HGX_H100)
    facts = {"installed": [], "simulation": {"rc": 0, "stderr": "",
                                             "stdout": fixture("ubuntu2204-apt-get-s-install-580-server-open-fabricmanager.txt")}}
    out = ndp.decide(data, _hgx_options(), plan, host={}, facts=facts)
    assert out["ok"], out["errors"]
    assert out["method"] == "distro" and out["profile"] == "server"
    assert out["simulate"]["packages"] == ["nvidia-headless-580-server-open", "nvidia-utils-580-server", "nvidia-fabricmanager-580"]
    assert out["simulate"]["fabric_manager"] == ["nvidia-fabricmanager-580"] and out["simulate"]["recommends"] is False
    assert out["fm_check"]["ok"] and out["fm"]["version"] == "580.178.04-0ubuntu0.22.04.1"
    assert out["fm_install_names"] == ["nvidia-fabricmanager-580=580.178.04-0ubuntu0.22.04.1"]


def test_decide_refuses_fm_that_needs_another_series_before_any_change(data):
    plan = plan_for(data, HGX_H100)
    facts = {"installed": [], "simulation": {"rc": 100, "stderr": "",
                                             "stdout": fixture("ubuntu2204-apt-get-s-install-nvidia-driver-580-open-fabricmanager.txt")}}
    out = ndp.decide(data, _hgx_options(), plan, host={}, facts=facts)
    assert not out["ok"]
    assert "Fabric Manager (nvidia-fabricmanager-580) does not resolve to the driver's series" in out["errors"][0]
    assert "nvidia_driver_profile" in out["errors"][0] and "Nothing was changed." in out["errors"][0]


def test_repo_fm_at_another_branch_in_the_simulation_is_named_with_the_repositorys_versions():
    """NVIDIA's repository without a Fabric Manager build of the driver's version: apt's candidate is another branch's.
    The Fabric Manager Inst line is CONSTRUCTED in apt's format (the test module's simulations are too)."""
    from test_nvidia_driver_plan import DATA, MADISON, R580, SIM_595, options, repo_plan
    sim = SIM_595.replace("595.71.05", "590.48.01").replace("595", "590")
    sim += "\nInst nvidia-fabricmanager (595.71.05-1 cuda-fixture [amd64])\n"
    facts = {"installed": R580, "simulation": {"rc": 0, "stdout": sim}, "madison": MADISON}
    out = ndp.decide(DATA, options(method="nvidia_repo", branch="590", change_branch=True), repo_plan(590), facts=facts)
    assert not out["ok"]
    assert "Fabric Manager (nvidia-fabricmanager)" in out["errors"][0]
    assert "apt would install nvidia-fabricmanager 595.71.05, the driver 590.48.01" in out["errors"][0]
    assert "The repositories have 595.71.05, 580.95.05 of it." in out["errors"][0]


def test_repo_fm_pinned_away_by_the_branch_pin_is_named_as_fabric_manager_not_as_the_branch():
    """molecule nvidia_driver_repo (fabric_manager_missing, REAL apt 2.6 on Debian 12 against the FIXTURE repository):
    nvidia-driver-pinning-590 pins nvidia-fabricmanager to 590.*, the repository has only 580.95.05 of it, and apt's
    simulation of the driver set with Fabric Manager exits 100 with the stderr below (copied from that run's log). Was:
    "apt cannot install nvidia-open nvidia-driver-pinning-590 ... Is branch 590 in the repository?" (the branch is
    there; Fabric Manager is what is missing)."""
    from test_nvidia_driver_plan import DATA, MADISON, R580, options, repo_plan
    stderr = ("E: Package 'nvidia-fabricmanager' has no installation candidate\n")
    facts = {"installed": R580, "simulation": {"rc": 100, "stdout": "", "stderr": stderr}, "madison": MADISON}
    plan = repo_plan(590)
    version = plan["stack"]["driver"]["version_available"]  # the FIXTURE data's R590 release (the scenario's: 590.48.01)
    assert version.startswith("590.")
    out = ndp.decide(DATA, options(method="nvidia_repo", branch="590", change_branch=True), plan, facts=facts)
    assert not out["ok"]
    error = out["errors"][0]
    assert error.startswith("Fabric Manager (nvidia-fabricmanager) does not resolve"), error
    assert "nvidia-fabricmanager has no installation candidate" in error, error
    assert "exactly the driver's version, %s." % version in error and "580.95.05" in error, error
    assert "Nothing was changed." in error and "Is branch 590 in the repository" not in error, error


@pytest.mark.parametrize("line, words", [
    ("E: Package 'nvidia-fabricmanager' has no installation candidate", "nvidia-fabricmanager has no installation candidate"),
    ("E: Unable to locate package nvidia-fabricmanager", "nvidia-fabricmanager is in none of the apt sources"),
    ("E: Version '590.48.01-1' for 'nvidia-fabricmanager' was not found",
     "nvidia-fabricmanager has no version 590.48.01-1"),
])
def test_apts_errors_for_a_package_it_cannot_take_name_fabric_manager(line, words):
    """apt-get's three errors for a package it cannot take at all (apt-pkg cacheset.cc / algorithms: "has no
    installation candidate", "Unable to locate package", "Version '...' for '...' was not found"); another
    package's error is not Fabric Manager's."""
    got = ndp.check_fabric_manager_simulation("", "nvidia-fabricmanager", "590.48.01", 590, rc=100, stderr=line + "\n")
    assert not got["ok"] and words in got["problems"][0], got["problems"]
    other = ndp.check_fabric_manager_simulation("", "nvidia-fabricmanager", "590.48.01", 590, rc=100,
                                                stderr=line.replace("nvidia-fabricmanager", "nvidia-open") + "\n")
    assert not any("nvidia-fabricmanager " in p for p in other["problems"]), other["problems"]


def test_an_installed_desktop_set_is_kept_unless_the_profile_is_asked_for(data):
    """A datacenter PCIe GPU whose machine already runs Ubuntu's desktop R580 set keeps it (no series switch under it)."""
    from test_nvidia_driver_plan import installed
    plan = plan_for(data, {"gpus": ["H100 PCIe"], "os": "ubuntu-22.04", "driver_version": "580.178.04"})
    assert driver(plan)["profile"] == "server"
    have = installed(("nvidia-driver-580-open", "580.178.04-0ubuntu0.22.04.1"), ("nvidia-utils-580", "580.178.04-0ubuntu0.22.04.1"),
                     ("libnvidia-compute-580", "580.178.04-0ubuntu0.22.04.1"))
    out = ndp.decide(data, _hgx_options(hostname="pcie1"), plan, host={}, facts={"installed": have})
    assert out["ok"], out["errors"]
    assert out["profile"] == "desktop" and out["profile_reason"].startswith("kept: the installed R580 packages are the desktop set")
    assert out["set"]["packages"] == ["nvidia-driver-580-open"]
    asked = ndp.decide(data, _hgx_options(hostname="pcie1", profile="server"), plan, host={}, facts={"installed": have})
    assert asked["profile"] == "server" and asked["set"]["packages"][0] == "nvidia-headless-580-server-open"
