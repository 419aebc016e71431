"""Tests for the version-compatibility resolver (plugins/module_utils/compat.py) and data/compat.yml."""

from __future__ import annotations

import pytest

from ansible_collections.dlbox.stack.plugins.module_utils import compat
from ansible_collections.dlbox.stack.plugins.plugin_utils.compat_data import load_compat


@pytest.fixture(scope="module")
def data():
    return load_compat()


def plan_for(data, hardware, request=None):
    return compat.resolve(data, compat.host_from_hardware(data, hardware), request or {})


def get(plan, path):
    value = plan
    for part in path.split("."):
        value = value[part] if value is not None else None
    return value


def errors_text(plan):
    return "\n".join(plan["errors"])


# ------------------------------------------------------------------------------------------
# version helpers
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value, expected",
    [
        ("12.4.1", (12, 4, 1)),
        ("2.5.0a0+872d972e41.nv24.08", (2, 5, 0)),
        ("R580", (580,)),
        (12.4, (12, 4)),
        (580, (580,)),
        ("", ()),
        (None, ()),
    ],
)
def test_parse_version(value, expected):
    assert compat.parse_version(value) == expected


@pytest.mark.parametrize(
    "left, right, expected",
    [
        ("12.10", "12.9", 1),
        ("12.4", "12.4.0", 0),
        ("570.26", "570.124.06", -1),
        ("9.10.2.21", "9.5.1.17", 1),
        ("3.9", "3.10", -1),
    ],
)
def test_compare_versions(left, right, expected):
    assert compat.compare_versions(left, right) == expected


@pytest.mark.parametrize(
    "spec, version, expected",
    [("12.4", "12.4.1", True), ("12.4", "12.40", False), ("2.9", "2.9.1", True), ("9.10", "9.1.0.70", False)],
)
def test_version_matches(spec, version, expected):
    assert compat.version_matches(spec, version) is expected


@pytest.mark.parametrize("version, branch", [("550.54.14", 550), ("R620", 620), (None, None), ("580", 580)])
def test_driver_branch_of(version, branch):
    assert compat.driver_branch_of(version) == branch


# ------------------------------------------------------------------------------------------
# GPU lookup and classification
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "query, name, cc",
    [
        ("2684", "GeForce RTX 4090", "8.9"),
        ("10de:2684", "GeForce RTX 4090", "8.9"),
        ("0x2684", "GeForce RTX 4090", "8.9"),
        ("RTX 4090", "GeForce RTX 4090", "8.9"),
        ("rtx4090", "GeForce RTX 4090", "8.9"),
        ("NVIDIA GeForce RTX 4090", "GeForce RTX 4090", "8.9"),
        ("AD102 [GeForce RTX 4090]", "GeForce RTX 4090", "8.9"),
        ("H100 SXM", "H100 SXM5 80GB", "9.0"),
        ("h100 pcie", "H100 PCIe", "9.0"),
        ("GTX 1080 Ti", "GeForce GTX 1080 Ti", "6.1"),
        ("1b06", "GeForce GTX 1080 Ti", "6.1"),
        ("Jetson AGX Orin", "Jetson AGX Orin", "8.7"),
        ("NVIDIA Jetson AGX Orin Developer Kit", "Jetson AGX Orin", "8.7"),
        ("RTX 5090", "GeForce RTX 5090", "12.0"),
        ("B200", "B200", "10.0"),
        ("Tesla K80", "Tesla K80", "3.7"),
        ("2b85", "GeForce RTX 5090", "12.0"),
        ("Tesla V100 PCIe 16 GB", "Tesla V100 PCIe 16GB", "7.0"),
        ("v100 sxm2 32gb", "Tesla V100 SXM2 32GB", "7.0"),
        ("rtx pro 6000 blackwell max-q", "RTX PRO 6000 Blackwell Max-Q", "12.0"),
    ],
)
def test_lookup_gpu_finds(data, query, name, cc):
    entry = compat.lookup_gpu(data, query)
    assert entry is not None, query
    assert entry["name"] == name
    assert entry["cc"] == cc


@pytest.mark.parametrize("query", ["A100", "H100", "RTX 9999", "", "ffff", "V100", "Tesla P100-SXM2-16GB", "P1000"])
def test_lookup_gpu_unknown_or_ambiguous_is_none(data, query):
    assert compat.lookup_gpu(data, query) is None


def test_gpu_candidates_lists_the_ambiguous_ones(data):
    names = sorted(e["name"] for e in compat.gpu_candidates(data, "A100"))
    assert names == ["A100 PCIe 40GB", "A100 PCIe 80GB", "A100 SXM4 40GB", "A100 SXM4 80GB"]


def test_ambiguous_name_in_hardware_names_the_candidates(data):
    plan = plan_for(data, {"gpus": ["H100"], "os": "ubuntu-22.04"})
    assert plan["ok"] is False
    assert "GPU 'H100' is ambiguous" in errors_text(plan)
    assert "H100 PCIe" in errors_text(plan) and "H100 SXM5 80GB" in errors_text(plan)


@pytest.mark.parametrize(
    "gpu, arch, cc, known",
    [
        ({"pci_device_id": "2684"}, "ada", "8.9", True),
        ({"pci_device_id": "2330", "name": "NVIDIA H100 80GB HBM3"}, "hopper", "9.0", True),
        ({"pci_device_id": "ffff", "name": "NVIDIA Future GPU", "compute_capability": "8.6"}, "ampere", "8.6", False),
        ({"pci_device_id": "ffff", "name": "NVIDIA Future GPU"}, None, None, False),
        ({"pci_device_id": "0000", "name": "NVIDIA GeForce RTX 3090"}, "ampere", "8.6", True),
        # a P100 SXM2 (not in the catalog) must not be taken for a V100 SXM2 16GB by a loose name match
        ({"pci_device_id": "15f9", "name": "Tesla P100-SXM2-16GB"}, None, None, False),
        ({"pci_device_id": "15f9", "name": "Tesla P100-SXM2-16GB", "compute_capability": "6.0"}, "pascal", "6.0", False),
        ({"pci_device_id": "15f8", "name": "Tesla P100-PCIE-16GB"}, "pascal", "6.0", True),
    ],
)
def test_classify_gpus(data, gpu, arch, cc, known):
    (out,) = compat.classify_gpus(data, [gpu])
    assert (out["arch"], out["cc"], out["known"]) == (arch, cc, known)
    assert out["pci_device_id"] == gpu["pci_device_id"]  # original keys are kept


def test_host_from_hardware_shape(data):
    host = compat.host_from_hardware(
        data, {"gpus": ["RTX 4090", "2684"], "nvswitch": True, "os": "debian-12", "arch": "x86_64", "driver_version": "550.54.14"}
    )
    assert [g["pci_device_id"] for g in host["gpus"]] == ["2684", "2684"]
    assert host["os"] == {"id": "debian", "version_id": "12", "key": "debian-12"}
    assert host["driver"] == {"present": True, "version": "550.54.14"}
    assert host["nvswitches"] and host["jetson"] is None
    assert "planning_errors" not in host


# ------------------------------------------------------------------------------------------
# Scenarios that must resolve: exact choices
# ------------------------------------------------------------------------------------------

H100_HGX = {"gpus": ["H100 SXM"] * 8, "nvswitch": True, "os": "ubuntu-22.04"}
RTX4090 = {"gpus": ["RTX 4090"], "os": "ubuntu-22.04"}
GTX1080TI = {"gpus": ["GTX 1080 Ti"], "os": "ubuntu-22.04"}
ORIN = {"gpus": ["Jetson AGX Orin"]}
RTX5090 = {"gpus": ["RTX 5090"], "os": "ubuntu-24.04"}
B200_HGX = {"gpus": ["B200"] * 8, "nvswitch": True, "os": "ubuntu-24.04"}
K80 = {"gpus": ["Tesla K80"], "os": "ubuntu-22.04"}

SCENARIOS = [
    (
        "8x H100 SXM + NVSwitch, ubuntu-22.04",
        H100_HGX,
        {},
        {
            "stack.driver.branch": 620,
            "stack.driver.designation": "LTSB",
            "stack.driver.kernel_modules": "open",
            "stack.driver.packages": ["nvidia-open", "nvidia-driver-pinning-620"],
            "stack.cuda.version": "13.2",
            "stack.cudnn.version": "9.26.0.51",
            "stack.nccl.version": "2.27.7",
            "stack.pytorch.version": "2.14.1",
            "stack.pytorch.variant": "cu132",
            "stack.pytorch.index_url": "https://download.pytorch.org/whl/cu132",
            "stack.python.version": "3.10",
            "stack.fabric_manager.package": "nvidia-fabricmanager",
            "stack.fabric_manager.version": "620.*",
            "stack.fabric_manager.branch": 620,
            "stack.jetpack": None,
            "host.gpu_count": 8,
            "host.nvswitch": True,
        },
        ["must have exactly the same version"],
    ),
    (
        "RTX 4090 workstation, ubuntu-22.04",
        RTX4090,
        {},
        {
            "stack.driver.branch": 620,
            "stack.driver.kernel_modules": "open",
            "stack.cuda.version": "13.2",
            "stack.pytorch.version": "2.14.1",
            "stack.pytorch.variant": "cu132",
            "stack.nccl": None,
            "stack.fabric_manager": None,
            "stack.tensorflow": None,
            "host.architectures": ["Ada Lovelace"],
        },
        [],
    ),
    (
        "GTX 1080 Ti asking PyTorch 2.9",
        GTX1080TI,
        {"pytorch": "2.9"},
        {
            "stack.driver.branch": 580,
            "stack.driver.kernel_modules": "proprietary",
            "stack.driver.packages": ["cuda-drivers-580"],
            "stack.driver.min_version": "580.65.06",
            "stack.cuda.version": "12.9",
            "stack.cudnn.version": "9.10.2.21",
            "stack.pytorch.version": "2.9.1",
            "stack.pytorch.variant": "cu126",
            "stack.pytorch.index_url": "https://download.pytorch.org/whl/cu126",
            "stack.pytorch.torchvision": "0.24.1",
        },
        [],
    ),
    (
        "GTX 1080 Ti with no request gets the newest PyTorch that still ships Pascal (cu126)",
        GTX1080TI,
        {},
        {"stack.driver.branch": 580, "stack.pytorch.version": "2.14.1", "stack.pytorch.variant": "cu126", "stack.cuda.version": "12.9"},
        [],
    ),
    (
        "Jetson AGX Orin: JetPack stack, no discrete driver",
        ORIN,
        {},
        {
            "stack.driver": None,
            "stack.fabric_manager": None,
            "stack.jetpack.version": "6.2.2",
            "stack.jetpack.l4t": "36.5.0",
            "stack.jetpack.ubuntu": "22.04",
            "stack.cuda.version": "12.6",
            "stack.cudnn.version": "9.3.0",
            "stack.python.version": "3.10",
            "stack.pytorch.variant": "jp6-cu126",
            "stack.pytorch.index_url": "https://pypi.jetson-ai-lab.dev/jp6/cu126",
        },
        ["jetson-containers maps L4T 36.5.0 to JetPack 6.2.1"],
    ),
    (
        "Jetson AGX Thor: JetPack 7 with regular aarch64 cu130 wheels",
        {"gpus": ["Jetson AGX Thor"]},
        {},
        {"stack.driver": None, "stack.jetpack.version": "7.2", "stack.pytorch.variant": "cu130", "stack.pytorch.version": "2.15.0"},
        [],
    ),
    (
        "8x B200 + NVSwitch: open modules, NVLink5 extras",
        B200_HGX,
        {},
        {
            "stack.driver.branch": 620,
            "stack.driver.kernel_modules": "open",
            "stack.fabric_manager.packages": ["nvidia-fabricmanager", "nvlsm", "libnvsdm"],
            "stack.pytorch.version": "2.15.0",
            "stack.python.version": "3.12",
        },
        [],
    ),
    (
        "RTX 5090 asking PyTorch 2.7 gets the experimental cu128 build",
        RTX5090,
        {"pytorch": "2.7"},
        {"stack.pytorch.version": "2.7.1", "stack.pytorch.variant": "cu128"},
        ["experimental build"],
    ),
    (
        "Kepler without requests: EOL R470 and CUDA 11, no PyTorch",
        K80,
        {},
        {"stack.driver.branch": 470, "stack.driver.kernel_modules": "proprietary", "stack.cuda.version": "11.8", "stack.pytorch": None},
        ["end-of-life", "No PyTorch CUDA build"],
    ),
    (
        "installed driver 550 is kept; CUDA and PyTorch fit it",
        {"gpus": ["RTX 4090"], "os": "ubuntu-22.04", "driver_version": "550.54.14"},
        {},
        {
            "stack.driver.branch": 550,
            "stack.driver.min_version": "550.54.14",
            "stack.cuda.version": "12.4",
            "stack.pytorch.variant": "cu126",
            "stack.pytorch.version": "2.14.1",
        },
        ["end-of-life"],
    ),
    (
        "installed driver 550 + request for a branch change allows cu130",
        {"gpus": ["RTX 4090"], "os": "ubuntu-22.04", "driver_version": "550.54.14"},
        {"driver_branch": 580, "pytorch_variant": "cu130"},
        {"stack.driver.branch": 580, "stack.pytorch.variant": "cu130", "stack.cuda.version": "13.0"},
        [],
    ),
    (
        "TensorFlow latest pulls CUDA 12.x",
        RTX4090,
        {"tensorflow": "latest"},
        {"stack.tensorflow.version": "2.21.0", "stack.tensorflow.extra": "and-cuda", "stack.cuda.version": "12.9"},
        [],
    ),
    (
        "mixed Ada + Pascal: the stack fits both",
        {"gpus": ["RTX 4090", "GTX 1080 Ti"], "os": "ubuntu-22.04"},
        {},
        {"stack.driver.branch": 580, "stack.driver.kernel_modules": "proprietary", "stack.pytorch.variant": "cu126", "stack.cudnn.version": "9.10.2.21"},
        [],
    ),
    (
        "ubuntu-20.04 stops at CUDA 12.9",
        {"gpus": ["RTX 4090"], "os": "ubuntu-20.04"},
        {},
        {"stack.cuda.version": "12.9", "stack.python.version": "3.8", "stack.pytorch.version": "2.4.1"},
        [],
    ),
    (
        "PyPI default variant",
        RTX4090,
        {"pytorch": "2.11", "pytorch_variant": "pypi"},
        {"stack.pytorch.variant": "pypi", "stack.pytorch.index_url": None, "stack.pytorch.cuda": "13.0"},
        [],
    ),
    (
        "requested Python outside the OS default is noted and used",
        RTX4090,
        {"python": "3.12"},
        {"stack.python.version": "3.12", "stack.pytorch.version": "2.15.0"},
        [],
    ),
]


@pytest.mark.parametrize("title, hardware, request_, expected, warnings", SCENARIOS, ids=[s[0] for s in SCENARIOS])
def test_scenarios(data, title, hardware, request_, expected, warnings):
    plan = plan_for(data, hardware, request_)
    assert plan["ok"] is True, plan["errors"]
    assert plan["errors"] == []
    for path, value in expected.items():
        assert get(plan, path) == value, (path, get(plan, path))
    for fragment in warnings:
        assert fragment in "\n".join(plan["warnings"]), (fragment, plan["warnings"])
    assert plan["data_date"] == "2026-11-29"


def test_plan_has_exactly_the_documented_shape(data):
    plan = plan_for(data, RTX4090)
    assert set(plan) == {"ok", "errors", "warnings", "notes", "host", "stack", "data_date"}
    assert set(plan["stack"]) == {"driver", "cuda", "cudnn", "nccl", "pytorch", "tensorflow", "python", "fabric_manager", "jetpack",
                                  "container_toolkit"}
    assert {"branch", "min_version", "kernel_modules", "packages"} <= set(plan["stack"]["driver"])
    assert {"version", "variant", "index_url"} <= set(plan["stack"]["pytorch"])


def test_legacy_gpu_gets_a_note(data):
    plan = plan_for(data, GTX1080TI)
    assert any("legacy GPU: R580 is its last driver branch and CUDA 12.9" in n for n in plan["notes"])


# ------------------------------------------------------------------------------------------
# Refusals: the request is checked, never silently changed
# ------------------------------------------------------------------------------------------

REFUSALS = [
    (
        "Kepler with CUDA 12",
        K80,
        {"cuda": "12.4"},
        ["CUDA 12.4 does not support Tesla K80 (Kepler, CC 3.7): the last CUDA for CC 3.7 is 11.8; use cuda: '11.8' or older"],
        {"stack.cuda.version": "12.4"},
    ),
    (
        "Blackwell RTX 5090 with proprietary modules",
        RTX5090,
        {"kernel_modules": "proprietary"},
        ["Proprietary kernel modules do not support GeForce RTX 5090 (Blackwell, CC 12.0): Blackwell requires the open "
         "kernel modules; use kernel_modules: open"],
        {"stack.driver.kernel_modules": "proprietary"},
    ),
    (
        "B200 with proprietary modules",
        B200_HGX,
        {"kernel_modules": "proprietary"},
        ["Proprietary kernel modules do not support B200 (Blackwell, CC 10.0)"],
        {},
    ),
    (
        "PyTorch cu130 on installed driver 550",
        {"gpus": ["RTX 4090"], "os": "ubuntu-22.04", "driver_version": "550.54.14"},
        {"pytorch_variant": "cu130"},
        ["cu130 needs driver >= 580.65.06 (CUDA 13.x minor-version compatibility floor), but the installed driver "
         "550.54.14 is older; use cu126, or request driver_branch: 620"],
        {"stack.driver.branch": 550, "stack.pytorch": None},
    ),
    (
        "PyTorch 2.11 cu130 on installed driver 550 names cu128 and cu126",
        {"gpus": ["RTX 4090"], "os": "ubuntu-22.04", "driver_version": "550.54.14"},
        {"pytorch": "2.11", "pytorch_variant": "cu130"},
        ["PyTorch 2.11 cu130 needs driver >= 580.65.06", "use cu128 or cu126"],
        {},
    ),
    (
        "PyTorch 2.6 on RTX 5090",
        RTX5090,
        {"pytorch": "2.6"},
        ["PyTorch 2.6 has no build for compute capability 12.0 (GeForce RTX 5090); use PyTorch >= 2.7 with cu128"],
        {"stack.pytorch": None},
    ),
    (
        "PyTorch 2.9 cu128 on GTX 1080 Ti",
        GTX1080TI,
        {"pytorch": "2.9", "pytorch_variant": "cu128"},
        ["PyTorch 2.9 cu128 has no build for compute capability 6.1 (GeForce GTX 1080 Ti); use cu126"],
        {},
    ),
    (
        "TensorFlow with CUDA 13",
        RTX4090,
        {"tensorflow": "2.21", "cuda": "13.0"},
        ["TensorFlow 2.21 is not built for CUDA 13.0: it is tested with CUDA 12.5", "use cuda: '12.9'"],
        {"stack.cuda.version": "13.0", "stack.tensorflow.version": "2.21.0"},
    ),
    (
        "Python outside PyTorch's range",
        RTX4090,
        {"pytorch": "2.15", "python": "3.10"},
        ["Python 3.10 is outside PyTorch 2.15's range (3.11 to 3.15)", "PyTorch 2.14, which supports Python 3.10"],
        {"stack.python.version": "3.10"},
    ),
    (
        "Python outside TensorFlow's range",
        RTX4090,
        {"tensorflow": "2.21", "python": "3.14"},
        ["Python 3.14 is outside TensorFlow 2.21's range (3.10 to 3.13)"],
        {},
    ),
    (
        "unknown GPU name",
        {"gpus": ["RTX 9999"], "os": "ubuntu-22.04"},
        {},
        ["Unknown GPU 'RTX 9999': it is not in the GPU catalog of data/compat.yml"],
        {"stack.driver": None},
    ),
    (
        "Pascal with a driver branch after 580",
        GTX1080TI,
        {"driver_branch": 595},
        ["Driver branch R595 does not support GeForce GTX 1080 Ti (Pascal, CC 6.1): R580 is the last driver branch for "
         "Pascal; use driver_branch: 580"],
        {"stack.driver.branch": 595},
    ),
    (
        "Pascal with open modules",
        GTX1080TI,
        {"kernel_modules": "open"},
        ["Open kernel modules do not support GeForce GTX 1080 Ti (Pascal, CC 6.1)"],
        {},
    ),
    (
        "Blackwell on installed driver 550",
        {"gpus": ["RTX 5090"], "os": "ubuntu-24.04", "driver_version": "550.54.14"},
        {},
        ["The installed driver 550.54.14 does not support GeForce RTX 5090 (Blackwell, CC 12.0): it needs driver branch "
         "R570 or newer; use driver_branch: 620 to replace it"],
        {},
    ),
    (
        "Blackwell with CUDA 12.4",
        RTX5090,
        {"cuda": "12.4"},
        ["CUDA 12.4 does not support GeForce RTX 5090 (Blackwell, CC 12.0): it needs CUDA >= 12.8"],
        {},
    ),
    (
        "CUDA 13 on Ubuntu 20.04",
        {"gpus": ["RTX 4090"], "os": "ubuntu-20.04"},
        {"cuda": "13.0"},
        ["CUDA 13.0 is not available for ubuntu-20.04: the last CUDA for it is 12.9"],
        {},
    ),
    (
        "requested CUDA 13 with an explicit R570 branch",
        RTX4090,
        {"driver_branch": 570, "cuda": "13.0"},
        ["CUDA 13.0 needs driver branch R580 or newer, but driver_branch: 570 was requested"],
        {},
    ),
    (
        "cuDNN 9.17 on Pascal",
        GTX1080TI,
        {"cudnn": "9.17"},
        ["cuDNN 9.17.1.4 does not support GeForce GTX 1080 Ti (Pascal, CC 6.1)", "use cudnn: '9.10'"],
        {},
    ),
    (
        "mixed Pascal + Blackwell cannot share a driver",
        {"gpus": ["GTX 1080 Ti", "RTX 5090"], "os": "ubuntu-24.04"},
        {},
        ["No kernel module flavour fits all GPUs: GeForce GTX 1080 Ti (Pascal, CC 6.1) needs the proprietary modules "
         "and GeForce RTX 5090 (Blackwell, CC 12.0) needs the open modules"],
        {},
    ),
    (
        "mixed Kepler + Ada: no common driver branch",
        {"gpus": ["Tesla K80", "RTX 4090"], "os": "ubuntu-22.04"},
        {},
        ["No driver branch supports all GPUs: GeForce RTX 4090 (Ada Lovelace, CC 8.9) needs R520 or newer, Tesla K80 "
         "(Kepler, CC 3.7) is supported only up to R470"],
        {},
    ),
    (
        "mixed Kepler + Blackwell: no common CUDA",
        {"gpus": ["Tesla K80", "RTX 5090"], "os": "ubuntu-22.04"},
        {},
        ["No CUDA release supports all GPUs: GeForce RTX 5090 (Blackwell, CC 12.0) needs CUDA >= 12.8, Tesla K80 "
         "(Kepler, CC 3.7) stops at CUDA 11.8"],
        {},
    ),
    (
        "CUDA 12.7 was never released",
        RTX4090,
        {"cuda": "12.7"},
        ["CUDA '12.7' is not a CUDA release in data/compat.yml (12.7 was never released)"],
        {"stack.cuda": None},
    ),
    (
        "unknown request key and variant",
        RTX4090,
        {"pytorch_variant": "cuda13", "torch": "2.9"},
        ["Unknown request key 'torch'", "pytorch_variant: 'cuda13' is not cuXXX, cpu or pypi"],
        {},
    ),
    (
        "PyTorch 2.12 has no cu128",
        RTX4090,
        {"pytorch": "2.12", "pytorch_variant": "cu128"},
        ["PyTorch 2.12 has no cu128 build (builds: cu130, cu126, cu132, cpu)"],
        {},
    ),
    (
        "Jetson with a driver branch",
        ORIN,
        {"driver_branch": 580},
        ["driver_branch: 580 was requested, but Jetson modules get their GPU driver from the L4T BSP"],
        {"stack.driver": None},
    ),
    (
        "A PyTorch release that does not exist",
        {"gpus": ["RTX 4090"], "os": "ubuntu-22.04"},
        {"pytorch": "9.9"},
        ["PyTorch '9.9' is not a release in data/compat.yml; known: ", "2.14"],
        {},
    ),
    (
        "A TensorFlow release that does not exist",
        {"gpus": ["RTX 4090"], "os": "ubuntu-22.04"},
        {"tensorflow": "1.0"},
        ["TensorFlow '1.0' is not a release in data/compat.yml; known: ", "2.21"],
        {},
    ),
    (
        "An operating system dlbox.stack does not plan for",
        {"gpus": ["RTX 3090"], "os": "windows-11"},
        {},
        ["OS 'windows-11' is not one dlbox.stack plans for", "e.g. ubuntu-22.04 or debian-12"],
        {},
    ),
    (
        "Xavier asking JetPack 6",
        {"gpus": ["Jetson AGX Xavier"]},
        {"jetpack": "6.2"},
        ["JetPack 6.2 does not support Jetson AGX Xavier (it supports orin); use jetpack: '5.1.4'"],
        {},
    ),
]


@pytest.mark.parametrize("title, hardware, request_, fragments, expected", REFUSALS, ids=[r[0] for r in REFUSALS])
def test_refusals(data, title, hardware, request_, fragments, expected):
    plan = plan_for(data, hardware, request_)
    assert plan["ok"] is False
    for fragment in fragments:
        assert fragment in errors_text(plan), (fragment, plan["errors"])
    for path, value in expected.items():  # what was asked stays what was asked
        assert get(plan, path) == value, (path, get(plan, path))


def test_all_violations_are_collected(data):
    plan = plan_for(data, RTX5090, {"kernel_modules": "proprietary", "pytorch": "2.6", "tensorflow": "2.21", "cuda": "13.0",
                                    "python": "3.9"})
    text = errors_text(plan)
    assert "Proprietary kernel modules do not support GeForce RTX 5090" in text
    assert "PyTorch 2.6 has no build for compute capability 12.0" in text
    assert "TensorFlow 2.21 is not built for CUDA 13.0" in text
    assert "Python 3.9 is outside TensorFlow 2.21's range" in text
    assert len(plan["errors"]) >= 4


def test_eol_branch_request_is_kept_with_a_warning(data):
    plan = plan_for(data, H100_HGX, {"driver_branch": "R535"})
    assert plan["ok"] is True
    assert get(plan, "stack.driver.branch") == 535
    assert get(plan, "stack.fabric_manager.package") == "nvidia-fabricmanager-535"
    assert "cuda-drivers-fabricmanager-535" in get(plan, "stack.fabric_manager.packages")
    assert get(plan, "stack.cuda.version").startswith("12.")
    assert any("R535 is end-of-life on 2026-11-29" in w for w in plan["warnings"])


def test_installed_driver_pins_fabric_manager_exactly(data):
    plan = plan_for(data, dict(H100_HGX, driver_version="580.95.05"))
    assert plan["ok"] is True
    assert get(plan, "stack.fabric_manager.version") == "580.95.05"
    assert get(plan, "stack.driver.branch") == 580
    assert get(plan, "stack.cuda.version") == "13.0"


def test_requested_branch_change_is_noted(data):
    plan = plan_for(data, {"gpus": ["RTX 4090"], "os": "ubuntu-22.04", "driver_version": "550.54.14"}, {"driver_branch": 620})
    assert plan["ok"] is True
    assert any("550.54.14 (R550) will be replaced by driver branch R620" in n for n in plan["notes"])


# ------------------------------------------------------------------------------------------
# Detected hosts (dlbox_host facts), CPU-only hosts, Jetson
# ------------------------------------------------------------------------------------------


def facts(**overrides):
    host = {
        "arch": "x86_64",
        "os": {"id": "ubuntu", "version_id": "22.04", "codename": "jammy", "key": "ubuntu-22.04"},
        "jetson": None,
        "modules": {"nouveau_loaded": False, "nvidia_loaded": False, "nvidia_version": None},
        "gpus": [],
        "nvswitches": [],
        "driver": {"present": False, "version": None, "cuda_version": None},
        "virtualization": {"container": False, "container_type": None, "wsl": False},
        "secure_boot": False,
    }
    host.update(overrides)
    return host


def test_cpu_only_host(data):
    plan = compat.resolve(data, facts(), {})
    assert plan["ok"] is True
    assert plan["stack"]["driver"] is None and plan["stack"]["cuda"] is None and plan["stack"]["cudnn"] is None
    assert get(plan, "stack.pytorch.variant") == "cpu"
    assert get(plan, "stack.pytorch.index_url") == "https://download.pytorch.org/whl/cpu"
    assert get(plan, "stack.pytorch.version") == "2.14.1"
    assert any("No NVIDIA GPU was found" in n for n in plan["notes"])


@pytest.mark.parametrize("request_, fragment", [
    ({"driver_branch": 580}, "A driver branch was requested (driver_branch: 580) but no NVIDIA GPU was found"),
    ({"cuda": "12.8"}, "CUDA was requested (cuda: 12.8) but no NVIDIA GPU was found"),
    ({"pytorch_variant": "cu128"}, "pytorch_variant: cu128 was requested but no NVIDIA GPU was found"),
])
def test_cpu_only_host_refuses_gpu_parts(data, request_, fragment):
    plan = compat.resolve(data, facts(), request_)
    assert plan["ok"] is False
    assert fragment in errors_text(plan)


def test_detected_host_with_driver(data):
    host = facts(
        gpus=[{"pci_bus_id": "0000:01:00.0", "vendor_id": "10de", "pci_device_id": "2684", "name": "NVIDIA GeForce RTX 4090"}],
        driver={"present": True, "version": "580.82.07", "cuda_version": "13.0"},
        secure_boot=True,
    )
    plan = compat.resolve(data, host, {})
    assert plan["ok"] is True
    assert get(plan, "host.gpus") == [
        {"name": "GeForce RTX 4090", "pci_device_id": "2684", "architecture": "Ada Lovelace", "cc": "8.9", "known": True, "count": 1}
    ]
    assert get(plan, "host.driver_installed") == "580.82.07"
    assert get(plan, "stack.driver.min_version") == "580.82.07"
    assert get(plan, "stack.cuda.version") == "13.0"
    assert any("Secure Boot" in n for n in plan["notes"])


def test_detected_unknown_gpu_without_cc_is_refused(data):
    host = facts(gpus=[{"pci_device_id": "ffff", "name": "NVIDIA Future GPU"}])
    plan = compat.resolve(data, host, {})
    assert plan["ok"] is False
    assert "is not in the catalog of data/compat.yml" in errors_text(plan)


def test_detected_unknown_gpu_with_cc_is_planned_with_a_warning(data):
    host = facts(gpus=[{"pci_device_id": "ffff", "name": "NVIDIA Future GPU", "compute_capability": "12.0"}])
    plan = compat.resolve(data, host, {})
    assert plan["ok"] is True
    assert get(plan, "stack.driver.kernel_modules") == "open"
    assert any("NVIDIA Future GPU is not in the catalog" in w for w in plan["warnings"])


def test_detected_jetson_follows_flashed_l4t(data):
    host = facts(arch="aarch64", jetson={"l4t": "36.4.3", "model": "NVIDIA Jetson AGX Orin Developer Kit"})
    plan = compat.resolve(data, host, {})
    assert plan["ok"] is True
    assert get(plan, "stack.jetpack.version") == "6.2"
    assert get(plan, "stack.jetpack.l4t") == "36.4.3"
    assert plan["stack"]["driver"] is None


def test_jetson_jetpack_major_change_needs_reflash(data):
    host = facts(arch="aarch64", jetson={"l4t": "35.4.1", "model": "Jetson AGX Orin"})
    plan = compat.resolve(data, host, {"jetpack": "6.2"})
    assert plan["ok"] is False
    assert "needs a reflash" in errors_text(plan)


def test_resolver_does_not_mutate_inputs(data):
    host = compat.host_from_hardware(data, RTX4090)
    request = {"pytorch": "2.9"}
    before = (repr(host), repr(request))
    compat.resolve(data, host, request)
    assert (repr(host), repr(request)) == before


# ------------------------------------------------------------------------------------------
# The data file itself is consistent
# ------------------------------------------------------------------------------------------

DATED_LISTS = ["gpus", "driver_branches", "cudnn", "nccl", "tensorflow", "jetpack"]


def _dated_entries(data):
    for section in DATED_LISTS:
        for entry in data[section]:
            yield section, entry
    for key, entry in data["architectures"].items():
        yield "architectures." + key, entry
    for entry in data["cuda"]["releases"] + data["cuda"]["minor_compat"]:
        yield "cuda", entry
    for entry in data["pytorch"]["releases"]:
        yield "pytorch", entry
    for key, entry in data["os"]["distros"].items():
        yield "os." + key, entry
    for key, entry in data["jetson_pytorch"].items():
        yield "jetson_pytorch." + key, entry
    for key in ("pinning", "versioned"):
        yield "driver_packages." + key, data["driver_packages"][key]
    for entry in data["fabric_manager"]["packages"]:
        yield "fabric_manager.packages", entry
    yield "fabric_manager.nvlink5", data["fabric_manager"]["nvlink5"]
    yield "kernel_modules", data["kernel_modules"]
    yield "nvswitch", data["nvswitch"]


def test_data_top_level(data):
    assert data["date"] == "2026-11-29"
    assert data["schema_version"] == 1


def test_every_entry_has_date_source_and_grade(data):
    import re

    for section, entry in _dated_entries(data):
        assert re.match(r"^\d{4}-\d{2}-\d{2}$", str(entry.get("date"))), (section, entry)
        assert entry.get("source"), (section, entry)
        assert entry.get("grade") in ("P", "Pc", "M", "S", "U"), (section, entry)


def test_every_pytorch_variant_refers_to_a_cuda_release(data):
    releases = {r["version"] for r in data["cuda"]["releases"]}
    for rel in data["pytorch"]["releases"]:
        assert rel["pypi_default"] in {v["name"] for v in rel["variants"]}, rel["version"]
        for variant in rel["variants"]:
            assert variant["cuda"] in releases, (rel["version"], variant)
            assert variant["name"] == "cu" + variant["cuda"].replace(".", ""), variant


def test_every_gpu_arch_exists_and_cc_is_in_range(data):
    archs = data["architectures"]
    seen_ids = set()
    for gpu in data["gpus"]:
        assert gpu["arch"] in archs, gpu["name"]
        arch = archs[gpu["arch"]]
        assert compat.compare_versions(arch["cc_min"], gpu["cc"]) <= 0 <= compat.compare_versions(arch["cc_max"], gpu["cc"])
        for pci in gpu["pci_ids"]:
            assert len(pci) == 4 and pci == pci.lower() and pci not in seen_ids, pci
            seen_ids.add(pci)


def test_versions_are_strings(data):
    for rel in data["cuda"]["releases"]:
        assert isinstance(rel["version"], str)
    for entry in data["cudnn"] + data["nccl"] + data["tensorflow"] + data["jetpack"] + data["pytorch"]["releases"]:
        assert isinstance(entry["version"], str), entry
    for gpu in data["gpus"]:
        assert isinstance(gpu["cc"], str), gpu


def test_cross_references_resolve(data):
    cuda = {r["version"] for r in data["cuda"]["releases"]}
    distros = set(data["os"]["distros"])
    families = {g.get("jetson_family") for g in data["gpus"] if g.get("jetson")}
    for rel in data["cuda"]["releases"]:
        assert set(rel["os"]) <= distros, rel["version"]
    for tf in data["tensorflow"]:
        assert tf["cuda"] in cuda, tf["version"]
    for entry in data["cudnn"]:
        for lo, hi in entry["builds"].values():
            assert lo in cuda and hi in cuda, entry["version"]
    for jp in data["jetpack"]:
        assert set(jp["devices"]) <= families, jp["version"]
        if jp.get("pytorch"):
            assert jp["pytorch"]["route"] in data["jetson_pytorch"], jp["version"]
    for branch in data["driver_branches"]:
        assert branch["packages"] in data["driver_packages"], branch["branch"]
        assert branch["status"] in ("active", "eol")
        assert branch["designation"] in ("LTSB", "PB", "NFB", None)
    for arch in data["architectures"].values():
        assert arch["open_modules"] in ("unsupported", "allowed", "required")


# ------------------------------------------------------------------------------------------
# End to end: real nvidia-smi / lspci captures -> hostfacts.build_host_facts -> resolve
# ------------------------------------------------------------------------------------------

FIXTURES = __import__("pathlib").Path(__file__).resolve().parents[3] / "fixtures"
UBUNTU_2204 = 'ID=ubuntu\nVERSION_ID="22.04"\nVERSION_CODENAME=jammy\nPRETTY_NAME="Ubuntu 22.04.4 LTS"\n'


def _fixture(*parts):
    path = FIXTURES.joinpath(*parts)
    if not path.is_file():
        pytest.skip("fixture %s not present" % path)
    return path.read_text(encoding="utf-8")


def _host(**raw):
    hostfacts = pytest.importorskip("ansible_collections.dlbox.stack.plugins.module_utils.hostfacts")
    raw.setdefault("machine", "x86_64")
    raw.setdefault("os_release", UBUNTU_2204)
    return hostfacts.build_host_facts(raw)


def test_end_to_end_rtx4090_on_driver_535(data):
    host = _host(nvidia_smi_xml=_fixture("nvidia-smi", "rtx-4090-driver-535.xml"),
                 lspci=_fixture("lspci", "rtx4090-desktop.lspci-nn.txt"))
    plan = compat.resolve(data, host, {})
    assert plan["host"]["gpus"][0]["name"] == "GeForce RTX 4090"
    assert get(plan, "stack.driver.branch") == 535  # the installed driver is kept
    assert get(plan, "stack.pytorch.variant").startswith("cu12")
    refused = compat.resolve(data, host, {"pytorch_variant": "cu130"})
    assert "cu130 needs driver >= 580.65.06" in errors_text(refused)


def test_end_to_end_dgx_a100_lspci_finds_nvswitches(data):
    host = _host(lspci=_fixture("lspci", "dgx-a100.lspci-Dnn.txt"))
    plan = compat.resolve(data, host, {})
    assert plan["ok"] is True, plan["errors"]
    assert plan["host"]["nvswitch"] is True
    assert plan["host"]["architectures"] == ["Ampere"]
    assert get(plan, "stack.fabric_manager.package") == "nvidia-fabricmanager"
    assert get(plan, "stack.driver.kernel_modules") == "open"


def test_end_to_end_gtx1080ti_lspci(data):
    host = _host(lspci=_fixture("lspci", "gtx1080ti-intel.lspci-nn.txt"))
    plan = compat.resolve(data, host, {})
    assert plan["ok"] is True, plan["errors"]
    assert get(plan, "stack.driver.branch") == 580
    assert get(plan, "stack.driver.kernel_modules") == "proprietary"


def test_end_to_end_no_nvidia(data):
    host = _host(lspci=_fixture("lspci", "no-nvidia.lspci-nn.txt"))
    plan = compat.resolve(data, host, {})
    assert plan["ok"] is True
    assert get(plan, "stack.pytorch.variant") == "cpu"


def test_end_to_end_tesla_p100_on_driver_510(data):
    host = _host(nvidia_smi_xml=_fixture("nvidia-smi", "tesla-p100-driver-510.xml"),
                 os_release='ID=ubuntu\nVERSION_ID="20.04"\n')
    plan = compat.resolve(data, host, {})
    assert plan["ok"] is True, plan["errors"]
    assert plan["host"]["gpus"][0]["name"] == "Tesla P100 PCIe 16GB"
    assert get(plan, "stack.driver.branch") == 510
    assert get(plan, "stack.cuda.version") == "11.6"  # the newest toolkit whose own driver is <= 510.47.03
    assert any("R510, end-of-life" in w for w in plan["warnings"])
