"""What the plan says for NVIDIA's repository (stack.driver.packages / repo / family, stack.fabric_manager),
on the FROZEN data (tests/unit/data/compat-frozen.yml): names per branch and OS family, the 590 naming change."""

from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.dlbox.stack.plugins.plugin_utils import stack_resolver
from ansible_collections.dlbox.stack.plugins.plugin_utils.compat_data import load_compat
from ansible_collections.dlbox.stack.plugins.plugin_utils.gpu_catalog import GpuIndex

FROZEN = Path(__file__).resolve().parents[2] / "data" / "compat-frozen.yml"


@pytest.fixture(scope="module")
def data():
    return load_compat(FROZEN)


def plan(data, os_key, request, gpus=("H100 SXM",), nvswitch=False):
    index = GpuIndex(data)
    hardware = {"gpus": list(gpus), "os": os_key, "nvswitch": nvswitch}
    return stack_resolver.resolve(data, index.host_from_hardware(hardware), dict(request), gpu_index=index)


@pytest.mark.parametrize(("os_key", "branch", "modules", "packages", "kernel", "same"), [
    # before 590: the versioned meta, no pinning package (the role writes its own pin)
    ("debian-12", "580", "open", ["nvidia-open-580"], "nvidia-kernel-open-dkms", ["nvidia-driver-cuda"]),
    ("debian-12", "580", "proprietary", ["cuda-drivers-580"], "nvidia-kernel-dkms", ["nvidia-driver-cuda"]),
    ("ubuntu-22.04", "580", "open", ["nvidia-open-580"], "nvidia-dkms-580-open", ["libnvidia-compute-580"]),
    ("ubuntu-24.04", "580", "proprietary", ["cuda-drivers-580"], "nvidia-dkms-580", ["libnvidia-compute-580"]),
    # 590 on: nvidia-open / cuda-drivers with NVIDIA's pinning package; Ubuntu's names lose the branch
    ("debian-12", "595", "open", ["nvidia-open", "nvidia-driver-pinning-595"], "nvidia-kernel-open-dkms", ["nvidia-driver-cuda"]),
    ("ubuntu-22.04", "595", "open", ["nvidia-open", "nvidia-driver-pinning-595"], "nvidia-dkms-open", ["libnvidia-compute"]),
    ("ubuntu-24.04", "590", "proprietary", ["cuda-drivers", "nvidia-driver-pinning-590"], "nvidia-dkms", ["libnvidia-compute"]),
])
def test_repo_names_per_branch_and_os(data, os_key, branch, modules, packages, kernel, same):
    out = plan(data, os_key, {"driver_method": "nvidia_repo", "driver_branch": branch, "kernel_modules": modules})
    assert out["ok"], out["errors"]
    driver = out["stack"]["driver"]
    assert driver["method"] == "nvidia_repo" and driver["packages"] == packages
    assert driver["repo"]["kernel_package"] == kernel and driver["repo"]["same_version"] == same
    assert driver["repo"]["lock"] == (packages[1] if len(packages) > 1 else None)
    assert "*nvidia*" in driver["family"]


def test_distro_method_has_no_repo_names(data):
    out = plan(data, "ubuntu-22.04", {"driver_method": "distro"}, gpus=("RTX 4090",))
    assert out["stack"]["driver"]["repo"] is None and out["stack"]["driver"]["family"]


@pytest.mark.parametrize(("method", "branch", "package"), [
    ("nvidia_repo", "580", "nvidia-fabricmanager"),       # NVIDIA's repository, 580 on: no branch in the name
    ("nvidia_repo", "595", "nvidia-fabricmanager"),
    ("distro", "580", "nvidia-fabricmanager-580"),         # Ubuntu's archive names it by branch
])
def test_fabric_manager_name_per_method(data, method, branch, package):
    out = plan(data, "ubuntu-22.04", {"driver_method": method, "driver_branch": branch}, gpus=["H100 SXM"] * 8, nvswitch=True)
    assert out["ok"], out["errors"]
    assert out["stack"]["fabric_manager"]["package"] == package
    assert out["stack"]["fabric_manager"]["version"] == "%s.*" % branch
