"""NVLink5 hosts in the nvidia_driver role's decision (issue 49): what apt gets besides the driver and Fabric Manager.

Plans come from the shipped data for the recorded hosts of tests/fixtures/fabric (an 8x B200 inventory of
openfabric-systems/simllm, a GB200 tray's collect_env of vllm-project/vllm#33543). apt's answers (simulation,
madison, dpkg) are written in apt's formats with NVIDIA's package names and the `=<driver version>-1` versions NVIDIA's
repository gives them (NVIDIA/gpu-driver-container ubuntu22.04/install.sh); nvlsm's date-based version is the one in
siderolabs/extensions#893's log (OpenSM 2025.06.5).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ansible_collections.dlbox.stack.plugins.plugin_utils import nvidia_driver_plan as p
from ansible_collections.dlbox.stack.plugins.plugin_utils import nvlink5_fabric as nf
from ansible_collections.dlbox.stack.plugins.plugin_utils import stack_resolver
from ansible_collections.dlbox.stack.plugins.plugin_utils.compat_data import load_compat, load_gpu_index

FABRIC = Path(__file__).resolve().parents[3] / "fixtures" / "fabric"


def _names(text):
    return re.findall(r"^GPU \d+: (.+?)(?: \(UUID: [^)]*\))?\s*$", text, re.MULTILINE)


def b200_hardware():
    text = (FABRIC / "b200-hgx-inventory-simllm.txt").read_text(encoding="utf-8")
    return {"gpus": _names(text), "nvswitch": False, "os": "ubuntu-24.04"}


def gb200_hardware():
    text = (FABRIC / "gb200-collect-env-vllm33543.txt").read_text(encoding="utf-8")
    return {"gpus": _names(text), "os": "ubuntu-24.04", "arch": "aarch64"}


SIM = """Inst libnvidia-compute-580 (580.95.05-1ubuntu1 cuda-ubuntu2404:/ [amd64])
Inst nvidia-dkms-580-open (580.95.05-1ubuntu1 cuda-ubuntu2404:/ [amd64])
Inst nvidia-open-580 (580.95.05-1ubuntu1 cuda-ubuntu2404:/ [amd64])
"""
REPO = "http://127.0.0.1:8089/cuda-ubuntu2404 ./ Packages"
MADISON = "\n".join("%s | %s | %s" % (n, v, REPO) for n, v in [
    ("nvidia-fabricmanager", "580.95.05-1"), ("nvidia-fabricmanager", "580.82.07-1"),
    ("libnvidia-nscq", "580.95.05-1"), ("libnvidia-nscq", "580.82.07-1"),
    ("libnvsdm", "580.95.05-1"), ("libnvsdm", "580.82.07-1"),
    ("nvlsm", "2025.06.5-1"), ("nvidia-imex", "580.95.05-1"), ("nvidia-imex", "580.82.07-1")])


@pytest.fixture(scope="module")
def data():
    return load_compat()


def plan_for(data, hardware):
    index = load_gpu_index()
    return stack_resolver.resolve(data, index.host_from_hardware(hardware), {}, gpu_index=index)


def options(**over):
    base = dict(method="", branch="", kernel_modules="", profile="", other_branch="refuse", change_branch=False,
                keep_dir="/var/backups/dlbox-nvidia-driver", in_container="skip", build_kernels=[], kernel_flavour="",
                secure_boot="auto", secure_boot_signing="auto", mok_key="", mok_certificate="",
                shim_mok_dir="/var/lib/shim-signed/mok", pin_name="dlbox-00-nvidia-driver-branch.pref", hostname="gpu1",
                distribution="Ubuntu", distribution_version="24.04", kernel="6.8.0-88-generic", check_mode=False,
                request_text="{}")
    base.update(over)
    return base


def decide(data, plan, **facts):
    return p.decide(data, options(), plan, host={"secure_boot": False}, facts=dict({"installed": []}, **facts))


def test_b200_first_decision_asks_madison_for_every_fabric_package_and_allows_them_from_the_repository(data):
    out = decide(data, plan_for(data, b200_hardware()))
    assert out["ok"], out["errors"]
    assert out["fabric"]["kind"] == "hgx"
    assert out["madison"] == ["nvidia-fabricmanager", "libnvidia-nscq", "libnvsdm", "nvlsm"]
    # cuda_repo keeps every package of NVIDIA's repository at -1 but those named: nvlsm and libnvsdm match no driver glob
    assert {"libnvsdm", "nvlsm"} <= set(out["repo_packages"]) and set(out["family"]) <= set(out["repo_packages"])
    # the role's branch pin keeps the same-version companions on the branch (ansible's apt module gives a name=version
    # only when the pins make it the candidate); nvlsm has its own versions and is not pinned
    pinned = [line for line in out["pin"].splitlines() if line.startswith("Package:") and "*nvidia*" in line][0].split()
    assert "libnvsdm" in pinned
    assert "nvlsm" not in pinned


def test_b200_install_names_pin_nscq_and_nvsdm_to_the_driver_version_and_nvlsm_to_the_paired_release(data):
    out = decide(data, plan_for(data, b200_hardware()), simulation={"rc": 0, "stdout": SIM}, madison=MADISON)
    assert out["ok"], out["errors"]
    assert out["fm_install_names"] == ["nvidia-fabricmanager=580.95.05-1"]
    # NVLSM: the newest build of the release series NVIDIA pairs with R580 (data fabric_manager.nvlink5.hgx.nvlsm: 2025.06)
    assert out["fabric_install_names"] == ["libnvidia-nscq=580.95.05-1", "libnvsdm=580.95.05-1", "nvlsm=2025.06.5-1"]


@pytest.mark.parametrize(("missing", "named"), [("libnvsdm", "libnvsdm at exactly the driver's version 580.95.05"),
                                                ("libnvidia-nscq", "libnvidia-nscq at exactly"),
                                                ("nvlsm", "nvlsm (the repositories have no version of it)")])
def test_b200_a_companion_missing_at_the_driver_version_is_refused_before_any_change(data, missing, named):
    madison = "\n".join(line for line in MADISON.splitlines()
                        if not (line.startswith(missing + " ") and ("580.95.05" in line or missing == "nvlsm")))
    out = decide(data, plan_for(data, b200_hardware()), simulation={"rc": 0, "stdout": SIM}, madison=madison)
    assert not out["ok"]
    assert named in out["errors"][0] and "nvidia_driver_branch" in out["errors"][0] and "Nothing was changed" in out["errors"][0]


# An NVLSM of another version than the repository's (issue 49): apt keeps an installed version newer than its candidate
# and Fabric Manager's start script runs the installed /opt/nvidia/nvlsm/sbin/nvlsm, so one the repositories do not have
# (another repository's, a local .deb; 2025.09.1-1 is the test's, 2025.03.2-1 an older one apt upgrades) is refused
# before any change, naming nvlsm and both versions; over the repository's, or an older one, the repository's build of
# the release NVIDIA pairs with the branch is installed (pinned).
@pytest.mark.parametrize(("nvlsm", "refused"), [
    ("2025.09.1-1", True), ("1:2025.06.5-1", True), ("2025.06.5-1", False), ("2025.03.2-1", False), (None, False)])
def test_b200_an_nvlsm_the_repositories_do_not_have_is_refused_before_any_change(data, nvlsm, refused):
    installed = [{"name": "nvlsm", "version": nvlsm, "arch": "amd64"}] if nvlsm else []
    out = decide(data, plan_for(data, b200_hardware()), simulation={"rc": 0, "stdout": SIM}, madison=MADISON, installed=installed)
    assert out["ok"] is not refused, out["errors"]
    if refused:
        assert out["errors"] == [nf.foreign_refusal(out["fabric_versions"]["foreign"], "580.95.05")]
        assert ("has nvlsm %s installed, and the repositories have nvlsm 2025.06.5-1" % nvlsm) in out["errors"][0]
        assert "apt-get install --allow-downgrades nvlsm=2025.06.5-1" in out["errors"][0] and "Nothing was changed" in out["errors"][0]
    else:
        assert out["fabric_install_names"][-1] == "nvlsm=2025.06.5-1"


def test_b200_after_the_install_a_companion_of_another_version_is_a_problem_and_all_are_held(data):
    dpkg = [{"name": n, "version": v, "arch": "amd64"} for n, v in [
        ("nvidia-open-580", "580.95.05-1ubuntu1"), ("libnvidia-compute-580", "580.95.05-1ubuntu1"),
        ("nvidia-dkms-580-open", "580.95.05-1ubuntu1"), ("nvidia-fabricmanager", "580.95.05-1"),
        ("libnvidia-nscq", "580.95.05-1"), ("libnvsdm", "580.95.05-1"), ("nvlsm", "2025.06.5-1")]]
    plan = plan_for(data, b200_hardware())
    out = decide(data, plan, simulation={"rc": 0, "stdout": SIM}, madison=MADISON, after=dpkg)
    assert out["ok"] and out["after"]["problems"] == [], out["after"]
    assert out["after"]["fabric_installed"] is True
    assert {"libnvidia-nscq", "libnvsdm", "nvlsm"} <= set(out["holds"])
    assert "libnvsdm 580.95.05-1" in out["after"]["fabric_summary"] and "ib_umad" in out["after"]["fabric_summary"]
    dpkg[5] = {"name": "libnvsdm", "version": "580.82.07-1", "arch": "amd64"}
    out = decide(data, plan, simulation={"rc": 0, "stdout": SIM}, madison=MADISON, after=dpkg)
    assert out["after"]["problems"] == ["libnvsdm is 580.82.07-1, the driver 580.95.05: it must have exactly the driver's version."]


def test_gb200_tray_installs_imex_at_the_driver_version_and_no_fabric_manager(data):
    plan = plan_for(data, gb200_hardware())
    sim = SIM.replace("amd64", "arm64").replace("cuda-ubuntu2404", "cuda-ubuntu2404-sbsa")
    out = decide(data, plan, simulation={"rc": 0, "stdout": sim}, madison=MADISON)
    assert out["ok"], out["errors"]
    assert out["fabric_manager"] is None and out["fm_install_names"] == []
    assert out["fabric"]["kind"] == "nvl" and out["fabric"]["imex"]["service"] == "nvidia-imex.service"
    assert out["madison"] == ["nvidia-imex"]
    assert out["fabric_install_names"] == ["nvidia-imex=580.95.05-1"]
    madison = "\n".join(line for line in MADISON.splitlines() if not line.startswith("nvidia-imex | 580.95"))
    out = decide(data, plan, simulation={"rc": 0, "stdout": sim}, madison=madison)
    assert not out["ok"] and "nvidia-imex at exactly the driver's version 580.95.05 (the repositories have 580.82.07)" in out["errors"][0]


def test_check_mode_before_the_repository_is_set_up_names_the_packages_without_versions(data):
    out = decide(data, plan_for(data, b200_hardware()), pending=True)
    assert out["ok"], out["errors"]
    assert out["fabric_install_names"] == ["libnvidia-nscq", "libnvsdm", "nvlsm"]


def test_a_host_without_nvlink5_gets_no_nvlink5_packages(data):
    """An HGX H100 (NVSwitches on PCI) gets NSCQ alone beside Fabric Manager (test_nscq_nvswitch.py), no NVLink5 set."""
    h100 = plan_for(data, {"gpus": ["H100 SXM"] * 8, "os": "ubuntu-24.04", "nvswitch": True})
    out = decide(data, h100)
    nscq = h100["stack"]["fabric_manager"]["nscq"]["package"]
    assert out["fabric"]["kind"] == "nvswitch" and nf.names(out["fabric"]) == [nscq]
    assert out["fabric_install_names"] == [] and out["madison"] == [h100["stack"]["fabric_manager"]["package"], nscq]
    assert nf.after(None, {}, "580.95.05")["problems"] == []
