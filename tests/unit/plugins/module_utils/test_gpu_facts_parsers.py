# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for the pure host/GPU fact parsers (plugins/module_utils/_gpu_facts.py).

nvidia-smi inputs are the real outputs under tests/fixtures (see tests/fixtures/SOURCES.md).
Cases the fixtures do not cover (no <cuda_version>, <compute_capability>) are made by editing a
copy of a real fixture in the test, never by writing an XML document from scratch.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.dlbox.stack.plugins.module_utils import _gpu_facts as hf

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"


def fixture(*parts):
    return (FIXTURES.joinpath(*parts)).read_text(encoding="utf-8")


def smi(name):
    return fixture("nvidia-smi", name)


RTX4090 = "rtx-4090-driver-535.xml"
A100 = "a100-sxm4-mig.xml"
P100 = "tesla-p100-driver-510.xml"


# ------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "value, expected",
    [
        ("00000000:84:00.0", "0000:84:00.0"),
        ("0000:2D:00.0", "0000:2d:00.0"),
        ("2d:00.1", "0000:2d:00.1"),
        ("00000001:01:00.0", "0001:01:00.0"),
        ("48e0:00:00.0", "48e0:00:00.0"),
        ("not-an-address", None),
        (None, None),
    ],
)
def test_normalize_pci_bus_id(value, expected):
    assert hf.normalize_pci_bus_id(value) == expected


@pytest.mark.parametrize(
    "value, expected",
    [
        ("268410DE", ("2684", "10de")),
        ("0x20B010DE", ("20b0", "10de")),
        ("N/A", (None, None)),
        ("2684", (None, None)),
    ],
)
def test_pci_ids_from_nvsmi(value, expected):
    assert hf.pci_ids_from_nvsmi(value) == expected


# ------------------------------------------------------------------------------------------
# nvidia-smi -q -x
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "name, driver, cuda",
    [
        (RTX4090, "535.86.05", "12.2"),
        (A100, "510.47.03", "11.6"),
        (P100, "510.47.03", "11.6"),
    ],
)
def test_xml_driver_and_cuda_versions(name, driver, cuda):
    result = hf.parse_nvidia_smi_xml(smi(name))
    assert (result["driver_version"], result["cuda_version"]) == (driver, cuda)


@pytest.mark.parametrize(
    "name, key, expected",
    [
        (RTX4090, "name", "NVIDIA GeForce RTX 4090"),
        (RTX4090, "uuid", "GPU-71d1acc2-662d-2166-bf9f-65272d2fc437"),
        (RTX4090, "pci_bus_id", "0000:84:00.0"),
        (RTX4090, "pci_device_id", "2684"),
        (RTX4090, "vendor_id", "10de"),
        (RTX4090, "pci_subsystem_id", "1458:40bf"),
        (RTX4090, "memory_mb", 24564),
        (RTX4090, "persistence_mode", True),
        (RTX4090, "mig_mode_current", None),
        (RTX4090, "ecc_mode_current", False),
        (RTX4090, "ecc_uncorrectable_aggregate", None),
        (RTX4090, "vbios_version", "95.02.18.80.5F"),
        (RTX4090, "architecture", "Ada Lovelace"),
        (RTX4090, "compute_capability", None),
        (A100, "name", "NVIDIA A100-SXM4-40GB"),
        (A100, "pci_device_id", "20b0"),
        (A100, "pci_bus_id", "0000:00:04.0"),
        (A100, "memory_mb", 40960),
        (A100, "persistence_mode", False),
        (A100, "mig_mode_current", True),
        (A100, "mig_mode_pending", True),
        (A100, "mig_devices", 2),
        (A100, "ecc_mode_current", True),
        (A100, "ecc_mode_pending", True),
        (A100, "ecc_uncorrectable_aggregate", 0),
        (A100, "vbios_version", "92.00.45.00.03"),
        (P100, "name", "Tesla P100-PCIE-16GB"),
        (P100, "pci_device_id", "15f8"),
        (P100, "memory_mb", 16384),
        (P100, "mig_mode_current", None),
        (P100, "mig_mode_pending", None),
        (P100, "mig_devices", 0),
        (P100, "ecc_mode_current", True),
        (P100, "ecc_uncorrectable_aggregate", 0),
        (P100, "architecture", "Pascal"),
    ],
)
def test_xml_gpu_field(name, key, expected):
    gpus = hf.parse_nvidia_smi_xml(smi(name))["gpus"]
    assert len(gpus) == 1
    assert gpus[0][key] == expected


def test_xml_without_cuda_version_gives_none():
    text = smi(P100).replace("\t<cuda_version>11.6</cuda_version>\n", "")
    assert "<cuda_version>" not in text
    assert hf.parse_nvidia_smi_xml(text)["cuda_version"] is None


def test_xml_without_fb_memory_usage_reads_old_memory_usage():
    # drivers before the fb_/bar1_ split named the block <memory_usage>
    text = smi(P100).replace("<fb_memory_usage>", "<memory_usage>").replace("</fb_memory_usage>", "</memory_usage>")
    assert hf.parse_nvidia_smi_xml(text)["gpus"][0]["memory_mb"] == 16384


@pytest.mark.parametrize(
    "element, expected",
    [
        ("<compute_capability><major>8</major><minor>9</minor></compute_capability>", "8.9"),
        ("<compute_capability>8.9</compute_capability>", "8.9"),
        ("<compute_capability>N/A</compute_capability>", None),
    ],
)
def test_xml_compute_capability_when_present(element, expected):
    text = smi(RTX4090).replace(
        "<uuid>GPU-71d1acc2-662d-2166-bf9f-65272d2fc437</uuid>",
        "<uuid>GPU-71d1acc2-662d-2166-bf9f-65272d2fc437</uuid>" + element,
    )
    assert hf.parse_nvidia_smi_xml(text)["gpus"][0]["compute_capability"] == expected


def test_xml_uncorrectable_errors_are_summed():
    text = smi(A100).replace(
        "<sram_uncorrectable>0</sram_uncorrectable>\n                <dram_correctable>0</dram_correctable>\n"
        "                <dram_uncorrectable>0</dram_uncorrectable>",
        "<sram_uncorrectable>2</sram_uncorrectable>\n                <dram_correctable>0</dram_correctable>\n"
        "                <dram_uncorrectable>3</dram_uncorrectable>",
    )
    assert hf.parse_nvidia_smi_xml(text)["gpus"][0]["ecc_uncorrectable_aggregate"] == 5


def test_xml_two_gpu_documents_list_both():
    text = smi(RTX4090)
    start = text.index("    <gpu id=")
    end = text.index("    </gpu>") + len("    </gpu>\n")
    second = text[start:end].replace("00000000:84:00.0", "00000000:85:00.0")
    doubled = text[:end] + second + text[end:]
    gpus = hf.parse_nvidia_smi_xml(doubled)["gpus"]
    assert [g["pci_bus_id"] for g in gpus] == ["0000:84:00.0", "0000:85:00.0"]


@pytest.mark.parametrize(
    "text",
    [
        "",
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.",
        "<other/>",
        "<nvidia_smi_log><gpu>",
    ],
)
def test_xml_rejects_non_nvsmi_text(text):
    with pytest.raises(ValueError):
        hf.parse_nvidia_smi_xml(text)


def test_xml_skips_banner_before_declaration():
    text = "Warning: persistence mode is disabled\n" + smi(P100)
    assert hf.parse_nvidia_smi_xml(text)["gpus"][0]["pci_device_id"] == "15f8"


# ------------------------------------------------------------------------------------------
# nvidia-smi topo -m
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "name, gpus, nvlink",
    [
        ("topo-8x-h100-nv18.txt", 8, True),
        ("topo-2x-rtx3090-pcie.txt", 2, False),
        ("topo-5x-geforce-spaces.txt", 5, False),
    ],
)
def test_topo_gpu_count_and_nvlink(name, gpus, nvlink):
    topo = hf.parse_nvidia_smi_topo(smi(name))
    assert (len(topo["gpus"]), topo["nvlink"]) == (gpus, nvlink)


@pytest.mark.parametrize(
    "name, a, b, link",
    [
        ("topo-8x-h100-nv18.txt", "GPU0", "GPU7", "NV18"),
        ("topo-8x-h100-nv18.txt", "GPU3", "GPU4", "NV18"),
        ("topo-2x-rtx3090-pcie.txt", "GPU0", "GPU1", "PHB"),
        ("topo-5x-geforce-spaces.txt", "GPU0", "GPU1", "SYS"),
        ("topo-5x-geforce-spaces.txt", "GPU1", "GPU2", "PHB"),
        ("topo-5x-geforce-spaces.txt", "GPU1", "GPU3", "NODE"),
        ("topo-5x-geforce-spaces.txt", "GPU3", "GPU4", "PHB"),
    ],
)
def test_topo_pair_link_type(name, a, b, link):
    topo = hf.parse_nvidia_smi_topo(smi(name))
    pairs = {(item["a"], item["b"]): item["type"] for item in topo["links"]}
    assert pairs[(a, b)] == link


def test_topo_links_cover_every_pair_once():
    topo = hf.parse_nvidia_smi_topo(smi("topo-8x-h100-nv18.txt"))
    assert len(topo["links"]) == 28


def test_topo_nvlink_count_is_read():
    topo = hf.parse_nvidia_smi_topo(smi("topo-8x-h100-nv18.txt"))
    assert {item["nvlinks"] for item in topo["links"]} == {18}


def test_topo_self_cell_is_x():
    topo = hf.parse_nvidia_smi_topo(smi("topo-2x-rtx3090-pcie.txt"))
    assert topo["matrix"]["GPU1"]["GPU1"] == "X"


@pytest.mark.parametrize(
    "name, gpu, cpus, numa",
    [
        ("topo-8x-h100-nv18.txt", "GPU4", "192-383", "1"),
        ("topo-2x-rtx3090-pcie.txt", "GPU1", "0-31", "0"),
        ("topo-5x-geforce-spaces.txt", "GPU0", "8-15,24-31", "1"),
    ],
)
def test_topo_affinity(name, gpu, cpus, numa):
    topo = hf.parse_nvidia_smi_topo(smi(name))
    assert (topo["cpu_affinity"][gpu], topo["numa_affinity"][gpu]) == (cpus, numa)


def test_topo_ignores_nic_columns_for_nvlink():
    # A real topo from a 2-GPU box extended with one NIC column (the shape nvidia-smi prints for mlx5)
    text = smi("topo-2x-rtx3090-pcie.txt").replace(
        "\tGPU0\tGPU1\tCPU Affinity", "\tGPU0\tGPU1\tNIC0\tCPU Affinity"
    ).replace("GPU0\t X \tPHB\t", "GPU0\t X \tPHB\tNV4\t").replace("GPU1\tPHB\t X \t", "GPU1\tPHB\t X \tSYS\t")
    topo = hf.parse_nvidia_smi_topo(text)
    assert (topo["devices"], topo["nvlink"]) == (["GPU0", "GPU1", "NIC0"], False)


def test_topo_strips_ansi_underline():
    text = "\x1b[4m" + smi("topo-2x-rtx3090-pcie.txt").replace("GPU NUMA ID\n", "GPU NUMA ID\x1b[0m\n", 1)
    assert hf.parse_nvidia_smi_topo(text)["gpus"] == ["GPU0", "GPU1"]


def test_topo_without_header_raises():
    with pytest.raises(ValueError):
        hf.parse_nvidia_smi_topo("No devices were found\n")


# ------------------------------------------------------------------------------------------
# lspci / sysfs
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "name, kinds",
    [
        ("rtx4090-desktop.lspci-nn.txt", ["gpu"]),
        ("gtx1080ti-intel.lspci-nn.txt", ["gpu"]),
        ("no-nvidia.lspci-nn.txt", []),
        ("dgx-a100.lspci-Dnn.txt", ["gpu"] * 4 + ["nvswitch"] * 6 + ["gpu"] * 4),
    ],
)
def test_lspci_kinds(name, kinds):
    assert [d["kind"] for d in hf.parse_lspci_nn(fixture("lspci", name))] == kinds


@pytest.mark.parametrize(
    "name, index, key, expected",
    [
        ("rtx4090-desktop.lspci-nn.txt", 0, "pci_bus_id", "0000:2d:00.0"),
        ("rtx4090-desktop.lspci-nn.txt", 0, "pci_device_id", "2684"),
        ("rtx4090-desktop.lspci-nn.txt", 0, "name", "AD102 [GeForce RTX 4090]"),
        ("rtx4090-desktop.lspci-nn.txt", 0, "class_id", "0300"),
        ("rtx4090-desktop.lspci-nn.txt", 0, "revision", "a1"),
        ("gtx1080ti-intel.lspci-nn.txt", 0, "pci_device_id", "1b06"),
        ("dgx-a100.lspci-Dnn.txt", 0, "class_name", "3D controller"),
        ("dgx-a100.lspci-Dnn.txt", 0, "name", "GA100 [A100 SXM4 80GB]"),
        ("dgx-a100.lspci-Dnn.txt", 4, "pci_bus_id", "0000:54:00.0"),
        ("dgx-a100.lspci-Dnn.txt", 4, "pci_device_id", "1af1"),
        ("dgx-a100.lspci-Dnn.txt", 4, "name", "GA100 [A100 NVSwitch]"),
        ("dgx-a100.lspci-Dnn.txt", 13, "pci_bus_id", "0000:ca:00.0"),
    ],
)
def test_lspci_fields(name, index, key, expected):
    assert hf.parse_lspci_nn(fixture("lspci", name))[index][key] == expected


@pytest.mark.parametrize(
    "line, expected_kind",
    [
        ("01:00.1 Audio device [0403]: NVIDIA Corporation GA102 High Definition Audio Controller [10de:1aef] (rev a1)", None),
        ("00:14.0 Bridge [0680]: nVidia Corporation MCP51 Ethernet Controller [10de:0269] (rev a3)", None),
        ("01:00.0 VGA compatible controller: NVIDIA Corporation GA102 [GeForce RTX 3090] (rev a1)", None),
        ("0000:03:00.0 Display controller [0380]: NVIDIA Corporation Device 2b85 [10de:2b85] (rev a1)", "gpu"),
        ("05:00.0 VGA compatible controller [0300]: NVIDIA Corporation GP106 [GeForce GTX 1060 6GB] [10de:1c03] "
         "(rev a1) (prog-if 00 [VGA controller])", "gpu"),
        ("48e0:00:00.0 VGA compatible controller [0300]: NVIDIA Corporation GP102 [GeForce GTX 1080 Ti] [10de:1b06] (rev a1)",
         "gpu"),
    ],
)
def test_lspci_single_line(line, expected_kind):
    devices = hf.parse_lspci_nn(line + "\n")
    assert (devices[0]["kind"] if devices else None) == expected_kind


@pytest.mark.parametrize(
    "entry, expected",
    [
        (("0000:01:00.0", "0x10de", "0x2684", "0x030000"), ("gpu", "2684", "0000:01:00.0")),
        (("0000:41:00.0", "0x10de", "0x20b2", "0x030200"), ("gpu", "20b2", "0000:41:00.0")),
        (("0000:54:00.0", "0x10de", "0x1af1", "0x068000"), ("nvswitch", "1af1", "0000:54:00.0")),
        (("0000:01:00.1", "0x10de", "0x22ba", "0x040300"), None),
        (("0000:00:02.0", "0x8086", "0xa780", "0x030000"), None),
    ],
)
def test_classify_sysfs_pci(entry, expected):
    result = hf.classify_sysfs_pci(*entry)
    assert (None if result is None else (result["kind"], result["pci_device_id"], result["pci_bus_id"])) == expected


# ------------------------------------------------------------------------------------------
# CPU / memory / OS
# ------------------------------------------------------------------------------------------

CPUINFO_INTEL = """processor\t: 0
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 94
model name\t: Intel(R) Core(TM) i7-6700 CPU @ 3.40GHz
cpu MHz\t\t: 800.024
cache size\t: 8192 KB
physical id\t: 0
siblings\t: 8
core id\t\t: 0
cpu cores\t: 4

processor\t: 1
model name\t: Intel(R) Core(TM) i7-6700 CPU @ 3.40GHz
physical id\t: 0
core id\t\t: 1
cpu cores\t: 4

processor\t: 2
model name\t: Intel(R) Core(TM) i7-6700 CPU @ 3.40GHz
physical id\t: 0
core id\t\t: 0
cpu cores\t: 4

processor\t: 3
model name\t: Intel(R) Core(TM) i7-6700 CPU @ 3.40GHz
physical id\t: 0
core id\t\t: 1
cpu cores\t: 4
"""

CPUINFO_ARM = """processor\t: 0
BogoMIPS\t: 62.50
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics
CPU implementer\t: 0x41
CPU part\t: 0xd42

processor\t: 1
BogoMIPS\t: 62.50
CPU implementer\t: 0x41
CPU part\t: 0xd42
"""

LSCPU_NEW = """Architecture:            x86_64
  CPU op-mode(s):        32-bit, 64-bit
CPU(s):                  32
  On-line CPU(s) list:   0-31
Vendor ID:               AuthenticAMD
  Model name:            AMD Ryzen 9 5950X 16-Core Processor
    Thread(s) per core:  2
    Core(s) per socket:  16
    Socket(s):           1
    CPU max MHz:         5083.3979
    CPU min MHz:         2200.0000
Caches (sum of all):
  L1d:                   512 KiB (16 instances)
  L2:                    8 MiB (16 instances)
  L3:                    64 MiB (2 instances)
"""

LSCPU_OLD = """Architecture:          x86_64
CPU(s):                16
Thread(s) per core:    2
Core(s) per socket:    4
Socket(s):             2
Model name:            Intel(R) Xeon(R) CPU E5-2623 v3 @ 3.00GHz
CPU max MHz:           3500,0000
L3 cache:              10240K
"""


@pytest.mark.parametrize(
    "key, expected",
    [
        ("model", "Intel(R) Core(TM) i7-6700 CPU @ 3.40GHz"),
        ("sockets", 1),
        ("cores", 2),
        ("threads", 4),
        ("base_mhz", 3400),
        ("current_mhz", 800),
        ("cache_kb", 8192),
    ],
)
def test_parse_cpuinfo_intel(key, expected):
    assert hf.parse_cpuinfo(CPUINFO_INTEL)[key] == expected


@pytest.mark.parametrize(
    "key, expected",
    [("model", None), ("threads", 2), ("sockets", 1), ("cores", 2), ("base_mhz", None), ("cache_kb", None)],
)
def test_parse_cpuinfo_arm(key, expected):
    assert hf.parse_cpuinfo(CPUINFO_ARM)[key] == expected


@pytest.mark.parametrize(
    "text, key, expected",
    [
        (LSCPU_NEW, "model", "AMD Ryzen 9 5950X 16-Core Processor"),
        (LSCPU_NEW, "sockets", 1),
        (LSCPU_NEW, "cores", 16),
        (LSCPU_NEW, "threads", 32),
        (LSCPU_NEW, "max_mhz", 5083),
        (LSCPU_NEW, "l3_kb", 65536),
        (LSCPU_OLD, "cores", 8),
        (LSCPU_OLD, "max_mhz", 3500),
        (LSCPU_OLD, "l3_kb", 20480),
    ],
)
def test_parse_lscpu(text, key, expected):
    assert hf.parse_lscpu(text)[key] == expected


# util-linux/util-linux#663 (lscpu 2.32 on a Ryzen 5 1600, 16 MiB of L3 in two CCX): the two lines as posted
LSCPU_RYZEN_1600_OLD = """Model name:          AMD Ryzen 5 1600 Six-Core Processor
L3 cache:            8192K
"""


def test_an_old_lscpu_of_an_amd_cpu_gives_no_l3_rather_than_one_ccx():
    assert hf.parse_lscpu(LSCPU_RYZEN_1600_OLD)["l3_kb"] is None
    # nor does /proc/cpuinfo's "cache size" stand in: on AMD it is the L2 of one core
    amd = CPUINFO_INTEL.replace("GenuineIntel", "AuthenticAMD")
    amd = amd.replace("Intel(R) Core(TM) i7-6700 CPU @ 3.40GHz", "AMD Ryzen 5 1600 Six-Core Processor")
    assert hf.cpu_facts(amd, LSCPU_RYZEN_1600_OLD)["l3_kb"] is None
    assert hf.cpu_facts(CPUINFO_INTEL)["l3_kb"] == 8192      # Intel's cache size is its L3


def test_l3_from_sysfs_counts_each_shared_instance_once():
    text = "\n".join("/sys/devices/system/cpu/cpu%d/cache/index3/%s" % (cpu, leaf) for cpu in range(4)
                     for leaf in ("size:8192K", "shared_cpu_list:%s" % ("0-1" if cpu < 2 else "2-3")))
    assert hf.l3_kb_from_sysfs(text) == 16384
    assert hf.l3_kb_from_sysfs("L3 cache: 8192K") is None


def test_cpu_facts_prefers_lscpu_and_keeps_nominal_clock():
    facts = hf.cpu_facts(CPUINFO_INTEL, LSCPU_OLD)
    assert facts == {
        "model": "Intel(R) Xeon(R) CPU E5-2623 v3 @ 3.00GHz",
        "sockets": 2,
        "cores": 8,
        "threads": 16,
        "base_mhz": 3000,
        "max_mhz": 3500,
        "l3_kb": 20480,
    }


def test_parse_meminfo():
    text = "MemTotal:       65536000 kB\nMemFree:         1000 kB\nMemAvailable:   32768000 kB\nSwapTotal:       2097148 kB\nHugePages_Total:       0\n"
    assert hf.parse_meminfo(text) == {"total_mb": 64000, "available_mb": 32000, "swap_total_mb": 2047, "hugepages_total": 0}


OS_UBUNTU = '''PRETTY_NAME="Ubuntu 22.04.4 LTS"
NAME="Ubuntu"
VERSION_ID="22.04"
VERSION="22.04.4 LTS (Jammy Jellyfish)"
VERSION_CODENAME=jammy
ID=ubuntu
ID_LIKE=debian
UBUNTU_CODENAME=jammy
'''

OS_DEBIAN = '''PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"
NAME="Debian GNU/Linux"
VERSION_ID="12"
VERSION="12 (bookworm)"
VERSION_CODENAME=bookworm
ID=debian
'''

OS_DEBIAN_SID = '''PRETTY_NAME="Debian GNU/Linux trixie/sid"
NAME="Debian GNU/Linux"
VERSION_CODENAME=trixie
ID=debian
'''


@pytest.mark.parametrize(
    "text, expected",
    [
        (OS_UBUNTU, ("ubuntu", "22.04", "jammy", "Ubuntu 22.04.4 LTS", "ubuntu-22.04")),
        (OS_DEBIAN, ("debian", "12", "bookworm", "Debian GNU/Linux 12 (bookworm)", "debian-12")),
        (OS_DEBIAN_SID, ("debian", None, "trixie", "Debian GNU/Linux trixie/sid", None)),
    ],
)
def test_parse_os_release(text, expected):
    result = hf.parse_os_release(text)
    assert (result["id"], result["version_id"], result["codename"], result["pretty_name"], result["key"]) == expected


@pytest.mark.parametrize("value, expected", [("x86_64", "x86_64"), ("aarch64", "aarch64"), ("arm64", "aarch64"), ("AMD64", "x86_64")])
def test_normalize_arch(value, expected):
    assert hf.normalize_arch(value) == expected


# ------------------------------------------------------------------------------------------
# driver / modules / secure boot
# ------------------------------------------------------------------------------------------

PROC_VERSION_PROPRIETARY = (
    "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.183.01  Sun May 12 19:39:15 UTC 2024\n"
    "GCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04)\n"
)
PROC_VERSION_OPEN = (
    "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.14  Release Build  "
    "(dvs-builder@U16-I3-B03-4-3)  Thu Feb 22 01:25:25 UTC 2024\n"
    "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n"
)
PROC_VERSION_ARM = "NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  570.124.06  Release Build  (dvs-builder@U16-I1-N08-12-3)\n"


@pytest.mark.parametrize(
    "text, expected",
    [
        (PROC_VERSION_PROPRIETARY, ("535.183.01", "proprietary")),
        (PROC_VERSION_OPEN, ("550.54.14", "open")),
        (PROC_VERSION_ARM, ("570.124.06", "open")),
    ],
)
def test_parse_nvidia_proc_version(text, expected):
    result = hf.parse_nvidia_proc_version(text)
    assert (result["version"], result["flavour"]) == expected


@pytest.mark.parametrize("text", [None, "", "garbage\n"])
def test_parse_nvidia_proc_version_absent(text):
    assert hf.parse_nvidia_proc_version(text) is None


MODULES_NVIDIA = """nvidia_uvm 1531904 0 - Live 0x0000000000000000 (POE)
nvidia_drm 77824 2 - Live 0x0000000000000000 (POE)
nvidia_modeset 1314816 3 nvidia_drm, Live 0x0000000000000000 (POE)
nvidia 56778752 45 nvidia_uvm,nvidia_modeset, Live 0x0000000000000000 (POE)
drm_kms_helper 200704 1 nvidia_drm, Live 0x0000000000000000
"""
MODULES_NOUVEAU = """nouveau 2433024 0 - Live 0x0000000000000000
mxm_wmi 16384 1 nouveau, Live 0x0000000000000000
drm_ttm_helper 16384 1 nouveau, Live 0x0000000000000000
"""


@pytest.mark.parametrize(
    "text, expected",
    [
        (MODULES_NVIDIA, (False, True, ["nvidia", "nvidia_drm", "nvidia_modeset", "nvidia_uvm"])),
        (MODULES_NOUVEAU, (True, False, [])),
        ("", (False, False, [])),
    ],
)
def test_parse_proc_modules(text, expected):
    result = hf.parse_proc_modules(text)
    assert (result["nouveau_loaded"], result["nvidia_loaded"], result["nvidia_modules"]) == expected


@pytest.mark.parametrize(
    "text, expected",
    [
        ("SecureBoot enabled\n", True),
        ("SecureBoot disabled\n", False),
        ("SecureBoot disabled\nPlatform is in Setup Mode\n", False),
        ("This system doesn't support Secure Boot\n", False),
        ("EFI variables are not supported on this system\n", False),
        ("", None),
        (None, None),
        ("Failed to read SecureBoot\n", None),
    ],
)
def test_parse_secure_boot(text, expected):
    assert hf.parse_secure_boot(text) is expected


@pytest.mark.parametrize(
    "data, expected",
    [(b"\x06\x00\x00\x00\x01", True), (b"\x06\x00\x00\x00\x00", False), (b"\x06", None), (None, None)],
)
def test_secure_boot_from_efivar(data, expected):
    assert hf.secure_boot_from_efivar(data) is expected


# ------------------------------------------------------------------------------------------
# disks / ECC
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "entry, expected",
    [
        (("nvme0n1", "0", "1953525168"), {"name": "nvme0n1", "kind": "nvme", "size_gb": 1000}),
        (("sda", "0", "976773168"), {"name": "sda", "kind": "ssd", "size_gb": 500}),
        (("sdb", "1", "7814037168"), {"name": "sdb", "kind": "hdd", "size_gb": 4001}),
        (("vda", "1", "209715200"), {"name": "vda", "kind": "hdd", "size_gb": 107}),
        (("loop0", "0", "131072"), None),
        (("zram0", "0", "8388608"), None),
        (("dm-0", "0", "8388608"), None),
        (("sr0", "1", "2097151"), None),
        (("md0", "0", "8388608"), {"name": "md0", "kind": "md", "size_gb": 4}),
        (("md127", "1", "15002931200"), {"name": "md127", "kind": "md", "size_gb": 7682}),
        (("sdc", "1", "0"), None),
    ],
)
def test_classify_disk(entry, expected):
    assert hf.classify_disk(*entry) == expected


@pytest.mark.parametrize(
    "exists, entries, expected",
    [
        (True, ["mc0", "mc1", "power", "uevent"], True),
        # the EDAC core's folder with no controller bound: unknown, not "no ECC" (the driver may not be loaded)
        (True, ["power", "uevent"], None),
        (False, [], None),
    ],
)
def test_ecc_from_edac(exists, entries, expected):
    assert hf.ecc_from_edac(exists, entries) is expected


# ------------------------------------------------------------------------------------------
# containers / WSL / Jetson
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "kwargs, expected",
    [
        ({}, (False, None)),
        ({"dockerenv": True}, (True, "docker")),
        ({"containerenv": True}, (True, "podman")),
        ({"pid1_environ": b"PATH=/usr/bin\0container=lxc\0HOME=/"}, (True, "lxc")),
        ({"pid1_environ": b"container=podman\0", "dockerenv": True}, (True, "podman")),
        ({"systemd_container": "systemd-nspawn\n"}, (True, "systemd-nspawn")),
        ({"cgroup_text": "12:memory:/docker/3f2a9c\n"}, (True, "docker")),
        ({"cgroup_text": "0::/kubepods.slice/kubepods-besteffort.slice/cri-containerd-1.scope\n"}, (True, "kubernetes")),
        ({"cgroup_text": "0::/init.scope\n"}, (False, None)),
    ],
)
def test_detect_container(kwargs, expected):
    result = hf.detect_virtualization(**kwargs)
    assert (result["container"], result["container_type"]) == expected


@pytest.mark.parametrize(
    "release, expected",
    [
        ("5.15.153.1-microsoft-standard-WSL2", (True, 2)),
        ("4.4.0-19041-Microsoft", (True, 1)),
        ("6.1.0-18-amd64", (False, None)),
        ("5.15.148-tegra", (False, None)),
    ],
)
def test_detect_wsl(release, expected):
    result = hf.detect_virtualization(kernel_release=release)
    assert (result["wsl"], result["wsl_version"]) == expected


@pytest.mark.parametrize(
    "text, expected",
    [
        ("# R36 (release), REVISION: 4.3, GCID: 38968081, BOARD: generic, EABI: aarch64, DATE: Wed Jan  8 01:49:37 UTC 2025\n",
         "36.4.3"),
        ("# R35 (release), REVISION: 2.1, GCID: 32413640, BOARD: t186ref, EABI: aarch64, DATE: Tue Jan 24 23:38:33 UTC 2023\n",
         "35.2.1"),
        ("# R32 (release), REVISION: 7.1, GCID: 29818004, BOARD: t210ref, EABI: aarch64\n", "32.7.1"),
        ("", None),
        ("something else", None),
    ],
)
def test_parse_nv_tegra_release(text, expected):
    assert (hf.parse_nv_tegra_release_line(text) or {}).get("l4t") == expected


def test_detect_jetson_from_tegra_release_and_model():
    result = hf.detect_virtualization(
        nv_tegra_release="# R36 (release), REVISION: 4.3, GCID: 38968081, BOARD: generic, EABI: aarch64\n",
        device_tree_model="NVIDIA Jetson AGX Orin Developer Kit\x00",
    )
    assert (result["jetson"]["l4t"], result["jetson"]["model"]) == ("36.4.3", "NVIDIA Jetson AGX Orin Developer Kit")
    assert result["jetson"]["l4t_release"]["board"] == "generic"


def test_parse_the_whole_nv_tegra_release_line():
    text = ("# R36 (release), REVISION: 4.3, GCID: 38968081, BOARD: generic, EABI: aarch64, DATE: Wed Jan  8 01:49:37 UTC 2025\n"
            "# KERNEL_VARIANT: oot\nTARGET_USERSPACE_LIB_DIR=nvidia\nTARGET_USERSPACE_LIB_DIR_PATH=usr/lib/aarch64-linux-gnu/nvidia\n")
    assert hf.parse_nv_tegra_release_line(text) == {
        "l4t": "36.4.3", "release": "36", "kind": "release", "revision": "4.3", "gcid": "38968081", "board": "generic",
        "eabi": "aarch64", "date": "Wed Jan  8 01:49:37 UTC 2025", "kernel_variant": "oot",
        "line": "# R36 (release), REVISION: 4.3, GCID: 38968081, BOARD: generic, EABI: aarch64, DATE: Wed Jan  8 01:49:37 UTC 2025"}
    short = hf.parse_nv_tegra_release_line("# R35 (release), REVISION: 4.1\n")
    assert (short["l4t"], short["board"], short["kernel_variant"]) == ("35.4.1", None, None)
    assert hf.parse_nv_tegra_release_line("TARGET_USERSPACE_LIB_DIR=nvidia\n") is None


# nvpmodel keeps the mode it set in /var/lib/nvpmodel/status as "pmode:%04d" (the stub in molecule/edge/files/nvpmodel
# follows the same format); before any nvpmodel -m the conf's PM_CONFIG DEFAULT is in force. The confs are the
# excerpts of NVIDIA's files in tests/fixtures/jetson/nvpmodel (SOURCES.md there).
@pytest.mark.parametrize("conf, status, expected", [
    ("nvpmodel_p3701_0000.conf", "pmode:0000\n", {"id": 0, "name": "MAXN", "set": True}),
    ("nvpmodel_p3701_0000.conf", None, {"id": 2, "name": "MODE_30W", "set": False}),
    ("nvpmodel_p3701_0000.conf", "pmode:0003 fmode:quiet\n", {"id": 3, "name": "MODE_50W", "set": True}),
    ("nvpmodel_p3767_0003.conf", "pmode:0001\n", {"id": 1, "name": "7W", "set": True}),
    ("nvpmodel_p3767_0003.conf", "pmode:0009\n", {"id": 9, "name": None, "set": True}),   # not in this conf
    (None, "pmode:0002\n", {"id": 2, "name": None, "set": True}),
    (None, None, None),
])
def test_jetson_power_mode(conf, status, expected):
    text = fixture("jetson", "nvpmodel", conf) if conf else None
    assert hf.jetson_power_mode(text, status) == expected


def test_a_jetson_carries_its_power_mode_and_a_pc_none():
    orin = hf.detect_virtualization(nv_tegra_release="# R36 (release), REVISION: 4.3\n",
                                    nvpmodel_conf=fixture("jetson", "nvpmodel", "nvpmodel_p3701_0000.conf"),
                                    nvpmodel_status="pmode:0000\n")
    assert orin["jetson"]["power_mode"] == {"id": 0, "name": "MAXN", "set": True}
    assert hf.detect_virtualization(nvpmodel_status="pmode:0000\n")["jetson"] is None


def test_detect_jetson_absent_on_pc():
    assert hf.detect_virtualization(device_tree_model=None, nv_tegra_release=None)["jetson"] is None


# ------------------------------------------------------------------------------------------
# build_host_facts / merge_gpus
# ------------------------------------------------------------------------------------------

def test_merge_keeps_gpu_the_driver_does_not_list():
    smi_gpus = hf.parse_nvidia_smi_xml(smi(RTX4090))["gpus"]
    pci = [
        {"pci_bus_id": "0000:84:00.0", "vendor_id": "10de", "pci_device_id": "2684", "name": "AD102 [GeForce RTX 4090]",
         "source": "lspci"},
        {"pci_bus_id": "0000:85:00.0", "vendor_id": "10de", "pci_device_id": "1b06", "name": "GP102 [GeForce GTX 1080 Ti]",
         "source": "lspci"},
    ]
    merged = hf.merge_gpus(smi_gpus, pci)
    assert [(g["pci_bus_id"], g["driver_visible"], g["pci_name"]) for g in merged] == [
        ("0000:84:00.0", True, "AD102 [GeForce RTX 4090]"),
        ("0000:85:00.0", False, "GP102 [GeForce GTX 1080 Ti]"),
    ]


def test_merge_without_driver_marks_visibility_unknown():
    merged = hf.merge_gpus(None, hf.parse_lspci_nn(fixture("lspci", "gtx1080ti-intel.lspci-nn.txt")))
    assert [(g["pci_device_id"], g["driver_visible"], g["source"]) for g in merged] == [("1b06", None, "lspci")]


def test_build_host_facts_empty_input_has_every_key():
    facts = hf.build_host_facts({})
    assert sorted(facts) == sorted([
        "arch", "os", "kernel", "cpu", "memory", "disks", "root_disk", "secure_boot", "virtualization", "jetson", "modules",
        "gpus", "nvswitches", "driver", "nvlink", "topology", "probes", "zfs", "nvlink_fabric",
    ])


def test_build_host_facts_empty_input_values():
    facts = hf.build_host_facts({})
    assert (facts["gpus"], facts["driver"]["present"], facts["nvlink"], facts["memory"]["ecc"], facts["secure_boot"]) == (
        [], False, None, None, None,
    )


def test_build_host_facts_bad_xml_is_recorded_not_raised():
    facts = hf.build_host_facts({"nvidia_smi_xml": "Unable to determine the device handle", "probes": {"nvidia_smi": "ok"}})
    assert (facts["driver"]["present"], "nvidia_smi_error" in facts["probes"]) == (False, True)


def test_build_host_facts_driver_version_falls_back_to_proc():
    facts = hf.build_host_facts({"nvidia_proc_version": PROC_VERSION_OPEN, "proc_modules": MODULES_NVIDIA})
    assert facts["driver"] == {"present": False, "version": "550.54.14", "cuda_version": None, "kernel_module_flavour": "open"}


def test_build_host_facts_legacy_bios_means_no_secure_boot():
    assert hf.build_host_facts({"efi": False})["secure_boot"] is False


# --- the H200 captured on the lent device (tests/fixtures/SOURCES.md): -q -x has no compute capability ---

def _h200_cc_csv():
    """pci.bus_id and compute_cap columns of the real --query-gpu capture, as the module queries them."""
    rows = fixture("nvidia-smi", "h200-query-gpu-device.csv").splitlines()
    header = [h.strip() for h in rows[0].split(",")]
    bus, cap = header.index("pci.bus_id"), header.index("compute_cap")
    return "\n".join("%s, %s" % (r.split(",")[bus].strip(), r.split(",")[cap].strip()) for r in rows[1:]) + "\n"


def test_h200_xml_has_no_compute_capability_of_its_own():
    smi = hf.parse_nvidia_smi_xml(fixture("nvidia-smi", "h200-driver-580-device.xml"))
    assert smi["driver_version"] == "580.159.04"
    assert [(g["name"], g["pci_device_id"], g["compute_capability"]) for g in smi["gpus"]] == [
        ("NVIDIA H200", "2335", None)]


def test_compute_cap_query_fills_what_the_xml_lacks():
    assert hf.parse_compute_cap_csv(_h200_cc_csv()) == {"0000:00:06.0": "9.0"}
    facts = hf.build_host_facts({
        "nvidia_smi_xml": fixture("nvidia-smi", "h200-driver-580-device.xml"),
        "nvidia_smi_cc_csv": _h200_cc_csv(),
    })
    assert [g["compute_capability"] for g in facts["gpus"]] == ["9.0"]


@pytest.mark.parametrize("text", [
    "",
    'Field "compute_cap" is not a valid field to query.\n',
    "00000000:00:06.0, [N/A]\n",
])
def test_compute_cap_query_ignores_what_is_not_an_answer(text):
    assert hf.parse_compute_cap_csv(text) == {}
