"""NVLink5 systems in the plan (issue 49, the plan layer): HGX B200/B300 boards and GB200/GB300 NVL compute trays,
recognised from the GPU model because their NVSwitches are no PCI devices.

On the shipped data/compat.yml, from recorded real outputs (tests/fixtures/fabric, sources in its SOURCES.md): an 8x
B200 host's ``nvidia-smi -L`` and PCI classes (openfabric-systems/simllm: no class 0680 device) and a GB200 tray's
``collect_env`` (vllm-project/vllm#33543: Ubuntu 24.04 aarch64, 4x NVIDIA GB200). The frozen-data tests of
test_driver_profile_and_source.py keep the refusal for data that says ``nvlink5.supported: false``.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest

from ansible_collections.dlbox.stack.plugins.plugin_utils import stack_resolver
from ansible_collections.dlbox.stack.plugins.plugin_utils.compat_data import load_compat, load_gpu_index

FABRIC = Path(__file__).resolve().parents[3] / "fixtures" / "fabric"


def _names(text):
    """GPU names of ``nvidia-smi -L`` lines and of collect_env's "GPU n: <name>" lines."""
    return re.findall(r"^GPU \d+: (.+?)(?: \(UUID: [^)]*\))?\s*$", text, re.MULTILINE)


def b200_hardware(os_key="ubuntu-24.04"):
    text = (FABRIC / "b200-hgx-inventory-simllm.txt").read_text(encoding="utf-8")
    classes = re.findall(r"class=0x([0-9a-f]+)", text)
    return {"gpus": _names(text), "nvswitch": any(c.startswith("0680") for c in classes), "os": os_key}


def gb200_hardware():
    text = (FABRIC / "gb200-collect-env-vllm33543.txt").read_text(encoding="utf-8")
    os_line = re.search(r"^OS\s*:\s*Ubuntu (\d+\.\d+)\.\d+ LTS \((\w+)\)", text, re.MULTILINE)
    return {"gpus": _names(text), "os": "ubuntu-%s" % os_line.group(1), "arch": os_line.group(2)}


@pytest.fixture(scope="module")
def data():
    return load_compat()


def plan_for(data, hardware, request=None):
    index = load_gpu_index()
    return stack_resolver.resolve(data, index.host_from_hardware(hardware), request or {}, gpu_index=index)


def test_the_recorded_b200_host_shows_no_nvswitch_device():
    hardware = b200_hardware()
    assert hardware["gpus"] == ["NVIDIA B200"] * 8 and hardware["nvswitch"] is False


@pytest.mark.parametrize("os_key", ["ubuntu-24.04", "ubuntu-22.04"])
def test_hgx_b200_gets_the_server_profile_and_the_nvlink5_fabric_packages(data, os_key):
    plan = plan_for(data, b200_hardware(os_key))
    assert plan["ok"], plan["errors"]
    assert plan["host"]["nvswitch"] is True  # recognised from the GPU model, not from a PCI device
    driver = plan["stack"]["driver"]
    assert (driver["method"], driver["profile"], driver["kernel_modules"]) == ("nvidia_repo", "server", "open")
    assert "NVLink5 NVSwitches" in driver["method_reason"]
    fm = plan["stack"]["fabric_manager"]
    branch = driver["branch"]
    assert fm["package"] == ("nvidia-fabricmanager" if branch >= 580 else "nvidia-fabricmanager-%d" % branch)
    assert fm["version"] == "%d.*" % branch and fm["method"] == "nvidia_repo"
    suffix = "" if branch >= 580 else "-%d" % branch
    assert fm["nvlink5"]["same_version"] == ["libnvidia-nscq" + suffix, "libnvsdm" + suffix]  # at the driver's version
    assert fm["nvlink5"]["own_version"] == ["nvlsm"]
    assert {"mlx5_ib", "ib_umad"} <= set(fm["nvlink5"]["kernel_modules"])
    assert fm["packages"] == [fm["package"]] + fm["nvlink5"]["same_version"] + ["nvlsm"]
    assert driver["imex"] is None
    assert any("no PCI devices (no class 0680" in note for note in plan["notes"])
    # the nvidia_driver role installs them (data installed_by_roles: true): the plan says so instead of warning
    assert not any("installs the driver and Fabric Manager only" in w for w in plan["warnings"])
    assert any(n.startswith("dlbox.stack.nvidia_driver installs libnvidia-nscq") for n in plan["notes"])


def test_hgx_b300_is_planned_the_same_way(data):
    plan = plan_for(data, {"gpus": ["B300"] * 8, "os": "ubuntu-24.04"})
    assert plan["ok"], plan["errors"]
    assert plan["stack"]["driver"]["profile"] == "server" and plan["stack"]["fabric_manager"]["nvlink5"]["own_version"] == ["nvlsm"]


def test_gb200_nvl_tray_gets_the_server_profile_imex_and_no_fabric_manager(data):
    hardware = gb200_hardware()
    assert hardware == {"gpus": ["NVIDIA GB200"] * 4, "os": "ubuntu-24.04", "arch": "aarch64"}
    plan = plan_for(data, hardware)
    assert plan["ok"], plan["errors"]
    driver = plan["stack"]["driver"]
    assert (driver["method"], driver["profile"]) == ("nvidia_repo", "server")
    assert plan["stack"]["fabric_manager"] is None and plan["host"]["nvswitch"] is False
    imex = driver["imex"]
    assert imex["packages"] == (["nvidia-imex"] if driver["branch"] >= 580 else ["nvidia-imex-%d" % driver["branch"]])
    assert imex["version"] == "%d.*" % driver["branch"] and imex["service"] == "nvidia-imex.service"
    assert imex["nodes_config"] == "/etc/nvidia-imex/nodes_config.cfg"
    note = next(n for n in plan["notes"] if "this host runs IMEX" in n)
    assert "/dev/nvidia-caps-imex-channels" in note and "do not survive a reboot" in note


def test_libnvsdm_has_no_arm64_build():
    """An HGX board on an aarch64 host (not a product today; the data's x86_64_only list is what is tested)."""
    data = load_compat()
    plan = plan_for(data, {"gpus": ["B200"] * 8, "os": "ubuntu-24.04", "arch": "aarch64"})
    assert plan["ok"], plan["errors"]
    assert plan["stack"]["fabric_manager"]["nvlink5"]["left_out"] == ["libnvsdm"]
    assert "libnvsdm" not in plan["stack"]["fabric_manager"]["packages"]


@pytest.mark.parametrize(("hardware", "words"), [
    (b200_hardware(), "driver_method: distro cannot drive NVIDIA B200 (Blackwell, CC 10.0) on an HGX board"),
    (gb200_hardware(), "driver_method: distro cannot drive NVIDIA GB200 (Blackwell, CC 10.0) on an NVL compute tray"),
])
def test_distro_asked_on_an_nvlink5_system_is_refused_naming_nvidia_repo(data, hardware, words):
    plan = plan_for(data, hardware, {"driver_method": "distro"})
    assert not plan["ok"]
    text = " ".join(plan["errors"])
    assert words in text and "request driver_method: nvidia_repo" in text
    assert plan["stack"]["fabric_manager"] is None and plan["stack"]["driver"]["imex"] is None


@pytest.mark.parametrize("hardware", [b200_hardware(), gb200_hardware()])
def test_proprietary_modules_on_blackwell_are_refused_naming_the_reason(data, hardware):
    plan = plan_for(data, hardware, {"kernel_modules": "proprietary"})
    assert not plan["ok"]
    assert any("Blackwell requires the open kernel modules" in e for e in plan["errors"])


@pytest.mark.parametrize("hardware", [
    {"gpus": ["NVIDIA H100 80GB HBM3"] * 8, "nvswitch": True, "os": "ubuntu-22.04"},  # NVLink4 HGX: no NVLSM, no IMEX
    {"gpus": ["RTX 5090"], "os": "ubuntu-24.04"},                                      # Blackwell, not NVLink5
    {"gpus": ["NVIDIA GH200 480GB"], "os": "ubuntu-24.04", "arch": "aarch64"},        # Grace Hopper, not NVL
])
def test_hosts_without_nvlink5_are_not_flagged(data, hardware):
    plan = plan_for(data, hardware)
    assert plan["ok"], plan["errors"]
    assert "nvlink5" not in (plan["stack"]["fabric_manager"] or {})
    assert plan["stack"]["driver"]["imex"] is None
    assert not any("NVLink5" in n for n in plan["notes"])


def test_data_that_does_not_support_nvlink5_still_refuses(data):
    other = copy.deepcopy(data)
    other["fabric_manager"]["nvlink5"]["supported"] = False
    plan = plan_for(other, b200_hardware())
    assert not plan["ok"] and any("NVSwitches are not PCIe devices" in e for e in plan["errors"])


@pytest.mark.parametrize(("device", "arch", "system"), [
    ("10de:2901", "x86_64", "hgx"),    # B200 (the PCI id of the recorded simllm host)
    ("10de:3182", "x86_64", "hgx"),    # B300 SXM6 AC
    ("10de:2941", "aarch64", "nvl"),   # GB200
    ("10de:31c2", "aarch64", "nvl"),   # GB300
])
def test_recognised_from_the_pci_id_as_well(data, device, arch, system):
    plan = plan_for(data, {"gpus": [device] * 4, "os": "ubuntu-24.04", "arch": arch})
    assert plan["ok"], plan["errors"]
    assert plan["stack"]["driver"]["profile"] == "server"
    if system == "hgx":
        assert plan["host"]["nvswitch"] and "nvlink5" in plan["stack"]["fabric_manager"]
    else:
        assert plan["stack"]["fabric_manager"] is None and plan["stack"]["driver"]["imex"]["service"] == "nvidia-imex.service"
