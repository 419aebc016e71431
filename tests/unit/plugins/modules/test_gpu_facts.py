# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Runs dlbox.stack.gpu_facts against a fake root tree with fake nvidia-smi/lspci/mokutil scripts.

The scripts only ``cat`` the recorded outputs under tests/fixtures (see tests/fixtures/SOURCES.md).
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.dlbox.stack.plugins.modules import gpu_facts

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"

CPUINFO = """processor\t: 0
model name\t: Intel(R) Core(TM) i7-6700 CPU @ 3.40GHz
physical id\t: 0
core id\t\t: 0
cpu cores\t: 1
cache size\t: 8192 KB
"""

OS_RELEASE = '''PRETTY_NAME="Ubuntu 22.04.4 LTS"
NAME="Ubuntu"
VERSION_ID="22.04"
VERSION_CODENAME=jammy
ID=ubuntu
ID_LIKE=debian
'''

MODULES_NOUVEAU = "nouveau 2433024 0 - Live 0x0000000000000000\nmxm_wmi 16384 1 nouveau, Live 0x0000000000000000\n"
MODULES_NVIDIA = (
    "nvidia_uvm 1531904 0 - Live 0x0000000000000000 (POE)\n"
    "nvidia 56778752 45 nvidia_uvm, Live 0x0000000000000000 (POE)\n"
)
PROC_DRIVER = (
    "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.86.05  Fri Jul 14 20:46:21 UTC 2023\n"
    "GCC version:  gcc version 11.4.0 (Ubuntu 11.4.0-1ubuntu1~22.04)\n"
)


def write(path, text, mode=None):
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    if mode is not None:
        path.chmod(mode)
    return path


def script(bin_dir, name, body):
    return str(write(bin_dir / name, "#!/bin/sh\n" + body, stat.S_IRWXU))


def fake_nvidia_smi(bin_dir, xml_fixture, topo_fixture):
    xml = FIXTURES / "nvidia-smi" / xml_fixture
    topo = FIXTURES / "nvidia-smi" / topo_fixture
    return script(
        bin_dir,
        "nvidia-smi",
        'case "$1" in\n  -q) cat "%s" ;;\n  topo) cat "%s" ;;\n  *) exit 2 ;;\nesac\n' % (xml, topo),
    )


def fake_lspci(bin_dir, lspci_fixture, sed=None):
    source = FIXTURES / "lspci" / lspci_fixture
    if sed:
        return script(bin_dir, "lspci", "sed '%s' \"%s\"\n" % (sed, source))
    return script(bin_dir, "lspci", 'cat "%s"\n' % source)


def fake_mokutil(bin_dir, text):
    return script(bin_dir, "mokutil", "printf '%s\\n'\n" % text)


def missing(bin_dir, name):
    return str(bin_dir / ("absent-" + name))


@pytest.fixture
def root(tmp_path):
    """A minimal Ubuntu 22.04 x86_64 tree: one NVMe disk, EDAC mc0, no NVIDIA driver."""
    tree = tmp_path / "root"
    write(tree / "proc/cpuinfo", CPUINFO)
    write(tree / "proc/meminfo", "MemTotal:       65536000 kB\nMemAvailable:   60000000 kB\n")
    write(tree / "proc/modules", "")
    write(tree / "proc/sys/kernel/osrelease", "6.5.0-35-generic\n")
    write(tree / "proc/sys/kernel/arch", "x86_64\n")
    write(tree / "proc/version", "Linux version 6.5.0-35-generic (buildd@lcy02-amd64-079) #35~22.04.1-Ubuntu\n")
    write(tree / "proc/1/cgroup", "0::/init.scope\n")
    write(tree / "etc/os-release", OS_RELEASE)
    write(tree / "sys/block/nvme0n1/size", "1953525168\n")
    write(tree / "sys/block/nvme0n1/queue/rotational", "0\n")
    write(tree / "sys/block/loop0/size", "131072\n")
    write(tree / "sys/block/loop0/queue/rotational", "0\n")
    (tree / "sys/devices/system/edac/mc/mc0").mkdir(parents=True)
    (tree / "sys/firmware/efi").mkdir(parents=True)
    (tree / "sys/bus/pci/devices").mkdir(parents=True)
    return tree


@pytest.fixture
def bin_dir(tmp_path):
    path = tmp_path / "bin"
    path.mkdir()
    return path


def run_module(capsys, args):
    with patch_module_args(args):
        with pytest.raises(SystemExit) as exc:
            gpu_facts.main()
    assert exc.value.code == 0
    result = json.loads(capsys.readouterr().out)
    assert result["changed"] is False
    return result["ansible_facts"]["dlbox_host"]


def add_pci(root, address, vendor, device, pci_class):
    base = root / "sys/bus/pci/devices" / address
    write(base / "vendor", vendor + "\n")
    write(base / "device", device + "\n")
    write(base / "class", pci_class + "\n")


# ------------------------------------------------------------------------------------------
# fresh machine: no driver, lspci only, nouveau loaded, Secure Boot on
# ------------------------------------------------------------------------------------------

@pytest.fixture
def no_driver(root, bin_dir, capsys):
    write(root / "proc/modules", MODULES_NOUVEAU)
    return run_module(capsys, {
        "root": str(root),
        "nvidia_smi_path": missing(bin_dir, "nvidia-smi"),
        "lspci_path": fake_lspci(bin_dir, "gtx1080ti-intel.lspci-nn.txt"),
        "mokutil_path": fake_mokutil(bin_dir, "SecureBoot enabled"),
    })


def _dig(facts, path):
    for key in path:
        facts = facts[key]
    return facts


@pytest.mark.parametrize(
    "path, expected",
    [
        (("driver", "present"), False),
        (("driver", "version"), None),
        (("driver", "cuda_version"), None),
        (("modules", "nouveau_loaded"), True),
        (("modules", "nvidia_loaded"), False),
        (("modules", "nvidia_version"), None),
        (("secure_boot",), True),
        (("nvlink",), None),
        (("topology",), None),
        (("nvswitches",), []),
        (("probes", "nvidia_smi"), "missing"),
        (("probes", "nvidia_smi_topo"), "skipped"),
        (("probes", "lspci"), "ok"),
        (("probes", "sysfs_pci"), "skipped"),
        (("probes", "mokutil"), "ok"),
        (("probes", "lscpu"), "skipped"),
    ],
)
def test_no_driver_fact(no_driver, path, expected):
    assert _dig(no_driver, path) == expected


def test_no_driver_gpus_come_from_lspci(no_driver):
    assert no_driver["gpus"] == [{
        "name": "GP102 [GeForce GTX 1080 Ti]",
        "pci_name": "GP102 [GeForce GTX 1080 Ti]",
        "uuid": None,
        "pci_bus_id": "0000:01:00.0",
        "vendor_id": "10de",
        "pci_device_id": "1b06",
        "memory_mb": None,
        "source": "lspci",
        "driver_visible": None,
    }]


@pytest.mark.parametrize(
    "key, expected",
    [
        ("arch", "x86_64"),
        ("kernel", "6.5.0-35-generic"),
        ("os", {"id": "ubuntu", "version_id": "22.04", "codename": "jammy", "pretty_name": "Ubuntu 22.04.4 LTS",
                "key": "ubuntu-22.04"}),
        ("memory", {"total_mb": 64000, "ecc": True}),
        ("disks", [{"name": "nvme0n1", "kind": "nvme", "size_gb": 1000}]),
        ("virtualization", {"container": False, "container_type": None, "wsl": False, "wsl_version": None}),
        ("jetson", None),
    ],
)
def test_no_driver_host_fact(no_driver, key, expected):
    assert no_driver[key] == expected


def test_no_driver_cpu_fact(no_driver):
    assert no_driver["cpu"] == {
        "model": "Intel(R) Core(TM) i7-6700 CPU @ 3.40GHz", "sockets": 1, "cores": 1, "threads": 1,
        "base_mhz": 3400, "max_mhz": None, "l3_kb": 8192,
    }


# ------------------------------------------------------------------------------------------
# driver present: nvidia-smi XML + topo, lspci agrees on the bus address
# ------------------------------------------------------------------------------------------

@pytest.fixture
def with_driver(root, bin_dir, capsys):
    write(root / "proc/modules", MODULES_NVIDIA)
    write(root / "proc/driver/nvidia/version", PROC_DRIVER)
    return run_module(capsys, {
        "root": str(root),
        "nvidia_smi_path": fake_nvidia_smi(bin_dir, "rtx-4090-driver-535.xml", "topo-2x-rtx3090-pcie.txt"),
        # the lspci listing is moved to the bus the nvidia-smi capture reports (84:00.0)
        "lspci_path": fake_lspci(bin_dir, "rtx4090-desktop.lspci-nn.txt", "s/^2d:00/84:00/"),
        "mokutil_path": fake_mokutil(bin_dir, "SecureBoot disabled"),
    })


@pytest.mark.parametrize(
    "path, expected",
    [
        (("driver", "present"), True),
        (("driver", "version"), "535.86.05"),
        (("driver", "cuda_version"), "12.2"),
        (("driver", "kernel_module_flavour"), "proprietary"),
        (("modules", "nvidia_loaded"), True),
        (("modules", "nouveau_loaded"), False),
        (("modules", "nvidia_version"), "535.86.05"),
        (("secure_boot",), False),
        (("nvlink",), False),
        (("probes", "nvidia_smi"), "ok"),
        (("probes", "nvidia_smi_topo"), "ok"),
        (("probes", "lspci"), "ok"),
    ],
)
def test_with_driver_fact(with_driver, path, expected):
    assert _dig(with_driver, path) == expected


@pytest.mark.parametrize(
    "key, expected",
    [
        ("name", "NVIDIA GeForce RTX 4090"),
        ("pci_name", "AD102 [GeForce RTX 4090]"),
        ("pci_bus_id", "0000:84:00.0"),
        ("vendor_id", "10de"),
        ("pci_device_id", "2684"),
        ("memory_mb", 24564),
        ("uuid", "GPU-71d1acc2-662d-2166-bf9f-65272d2fc437"),
        ("driver_visible", True),
        ("source", "nvidia-smi"),
    ],
)
def test_with_driver_gpu(with_driver, key, expected):
    assert len(with_driver["gpus"]) == 1
    assert with_driver["gpus"][0][key] == expected


def test_with_driver_topology_links(with_driver):
    assert with_driver["topology"]["links"] == [
        {"a": "GPU0", "b": "GPU1", "type": "PHB", "nvlink": False, "nvlinks": 0},
    ]


def test_nvlink_box_without_lspci_uses_sysfs(root, bin_dir, capsys):
    add_pci(root, "0000:00:04.0", "0x10de", "0x20b0", "0x030200")
    add_pci(root, "0000:54:00.0", "0x10de", "0x1af1", "0x068000")
    facts = run_module(capsys, {
        "root": str(root),
        "nvidia_smi_path": fake_nvidia_smi(bin_dir, "a100-sxm4-mig.xml", "topo-8x-h100-nv18.txt"),
        "lspci_path": missing(bin_dir, "lspci"),
        "mokutil_path": missing(bin_dir, "mokutil"),
    })
    assert (
        facts["nvlink"],
        [(g["pci_device_id"], g["mig_mode_current"], g["driver_visible"]) for g in facts["gpus"]],
        facts["nvswitches"],
        facts["probes"]["sysfs_pci"],
    ) == (
        True,
        [("20b0", True, True)],
        [{"pci_bus_id": "0000:54:00.0", "pci_device_id": "1af1", "name": None}],
        "ok",
    )


# ------------------------------------------------------------------------------------------
# no NVIDIA device at all
# ------------------------------------------------------------------------------------------

def test_no_nvidia_device_with_lspci(root, bin_dir, capsys):
    facts = run_module(capsys, {
        "root": str(root),
        "nvidia_smi_path": missing(bin_dir, "nvidia-smi"),
        "lspci_path": fake_lspci(bin_dir, "no-nvidia.lspci-nn.txt"),
        "mokutil_path": missing(bin_dir, "mokutil"),
    })
    assert (facts["gpus"], facts["nvswitches"], facts["driver"]["present"]) == ([], [], False)


def test_no_nvidia_device_from_sysfs(root, bin_dir, capsys):
    add_pci(root, "0000:00:02.0", "0x8086", "0xa780", "0x030000")
    facts = run_module(capsys, {
        "root": str(root),
        "nvidia_smi_path": missing(bin_dir, "nvidia-smi"),
        "lspci_path": missing(bin_dir, "lspci"),
        "mokutil_path": missing(bin_dir, "mokutil"),
    })
    assert (facts["gpus"], facts["probes"]["lspci"], facts["probes"]["sysfs_pci"]) == ([], "missing", "ok")


def test_sysfs_fallback_finds_gpu_and_skips_audio(root, bin_dir, capsys):
    add_pci(root, "0000:01:00.0", "0x10de", "0x2684", "0x030000")
    add_pci(root, "0000:01:00.1", "0x10de", "0x22ba", "0x040300")
    facts = run_module(capsys, {
        "root": str(root),
        "nvidia_smi_path": missing(bin_dir, "nvidia-smi"),
        "lspci_path": missing(bin_dir, "lspci"),
        "mokutil_path": missing(bin_dir, "mokutil"),
    })
    assert [(g["pci_bus_id"], g["pci_device_id"], g["source"], g["name"]) for g in facts["gpus"]] == [
        ("0000:01:00.0", "2684", "sysfs", None),
    ]


# ------------------------------------------------------------------------------------------
# probes that fail, check mode, containers, Secure Boot fallbacks
# ------------------------------------------------------------------------------------------

def test_failing_nvidia_smi_is_recorded(root, bin_dir, capsys):
    smi = script(bin_dir, "nvidia-smi", "echo \"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\"\nexit 9\n")
    facts = run_module(capsys, {
        "root": str(root),
        "nvidia_smi_path": smi,
        "lspci_path": fake_lspci(bin_dir, "rtx4090-desktop.lspci-nn.txt"),
        "mokutil_path": missing(bin_dir, "mokutil"),
    })
    assert (facts["probes"]["nvidia_smi"], facts["driver"]["present"], [g["pci_device_id"] for g in facts["gpus"]]) == (
        "failed rc=9", False, ["2684"],
    )


def test_check_mode_gives_same_facts(root, bin_dir, capsys):
    args = {
        "root": str(root),
        "nvidia_smi_path": missing(bin_dir, "nvidia-smi"),
        "lspci_path": fake_lspci(bin_dir, "gtx1080ti-intel.lspci-nn.txt"),
        "mokutil_path": missing(bin_dir, "mokutil"),
    }
    normal = run_module(capsys, args)
    checked = run_module(capsys, dict(args, _ansible_check_mode=True))
    assert checked == normal


def test_container_marker(root, bin_dir, capsys):
    write(root / ".dockerenv", "")
    facts = run_module(capsys, {
        "root": str(root),
        "nvidia_smi_path": missing(bin_dir, "nvidia-smi"),
        "lspci_path": missing(bin_dir, "lspci"),
        "mokutil_path": missing(bin_dir, "mokutil"),
    })
    assert facts["virtualization"]["container_type"] == "docker"


@pytest.mark.parametrize(
    "efivar, efi_dir, expected",
    [
        (b"\x06\x00\x00\x00\x01", True, True),
        (b"\x06\x00\x00\x00\x00", True, False),
        (None, True, None),
        (None, False, False),
    ],
)
def test_secure_boot_without_mokutil(root, bin_dir, capsys, efivar, efi_dir, expected):
    if efivar is not None:
        write(root / "sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c", efivar)
    if not efi_dir:
        os.rmdir(str(root / "sys/firmware/efi"))
    facts = run_module(capsys, {
        "root": str(root),
        "nvidia_smi_path": missing(bin_dir, "nvidia-smi"),
        "lspci_path": missing(bin_dir, "lspci"),
        "mokutil_path": missing(bin_dir, "mokutil"),
    })
    assert facts["secure_boot"] is expected


def test_jetson_tree(root, bin_dir, capsys):
    write(root / "proc/sys/kernel/arch", "aarch64\n")
    write(root / "etc/nv_tegra_release", "# R36 (release), REVISION: 4.3, GCID: 38968081, BOARD: generic, EABI: aarch64\n")
    write(root / "proc/device-tree/model", b"NVIDIA Jetson AGX Orin Developer Kit\x00")
    facts = run_module(capsys, {
        "root": str(root),
        "nvidia_smi_path": missing(bin_dir, "nvidia-smi"),
        "lspci_path": missing(bin_dir, "lspci"),
        "mokutil_path": missing(bin_dir, "mokutil"),
    })
    assert (facts["arch"], facts["jetson"]["l4t"], facts["jetson"]["model"]) == (
        "aarch64", "36.4.3", "NVIDIA Jetson AGX Orin Developer Kit",
    )
    assert facts["jetson"]["l4t_release"]["gcid"] == "38968081"  # the whole nv_tegra_release line


def test_l3_from_the_kernels_cache_folders(root, bin_dir, capsys):
    # an AMD host's sysfs as the kernel lays it out (a test input: two CCX of 8 MiB, the Ryzen 5 1600 of
    # util-linux/util-linux#663, whose lscpu 2.32 printed only one of them); cpuinfo's "cache size" is left aside
    write(root / "proc/cpuinfo", CPUINFO.replace("Intel(R) Core(TM) i7-6700 CPU @ 3.40GHz", "AMD Ryzen 5 1600 Six-Core Processor")
          .replace("cache size\t: 8192 KB", "cache size\t: 512 KB"))
    for cpu in range(12):
        write(root / ("sys/devices/system/cpu/cpu%d/cache/index3/size" % cpu), "8192K\n")
        write(root / ("sys/devices/system/cpu/cpu%d/cache/index3/shared_cpu_list" % cpu),
              "0-2,6-8\n" if cpu % 6 < 3 else "3-5,9-11\n")
    write(root / "sys/devices/system/cpu/online", "0-11\n")
    facts = run_module(capsys, {"root": str(root), "nvidia_smi_path": missing(bin_dir, "nvidia-smi"),
                                "lspci_path": missing(bin_dir, "lspci"), "mokutil_path": missing(bin_dir, "mokutil")})
    assert facts["cpu"]["l3_kb"] == 16384


# ------------------------------------------------------------------------------------------
# NVLink fabric evidence (issue 49): management ports' VPD, nvidia-smi nvlink -s, <fabric>
# ------------------------------------------------------------------------------------------

def test_nvlink_fabric_evidence_read_from_sysfs_and_nvidia_smi(root, bin_dir, capsys):
    """The VPD files hold the [VA] field's text verbatim; the recorded lspci -vv of a DGX B200's management port and
    of a ConnectX-7 network card (tests/fixtures/nvlink5/SOURCES.md) stand in for them; nvlink -s of a GB200 tray."""
    write(root / "sys/class/infiniband/mlx5_0/device/vpd",
          (FIXTURES / "nvlink5/lspci-vv-dgxb200-lpf-siderolabs-excerpt.txt").read_bytes())
    write(root / "sys/class/infiniband/mlx5_4/device/vpd",
          (FIXTURES / "nvlink5/lspci-vv-cx7-nic-no-smdl-mlx5-vpd-patch-excerpt.txt").read_bytes())
    outputs = (FIXTURES / "nvidia-smi/h200-driver-580-device.xml", FIXTURES / "nvidia-smi/topo-1x-h200-device.txt",
               FIXTURES / "nvlink5/nvlink-s-gb200-k8stestinfra371.txt")
    smi = script(bin_dir, "nvidia-smi", 'case "$1" in\n  -q) cat "%s" ;;\n  topo) cat "%s" ;;\n  nvlink) cat "%s" ;;\n'
                 '  *) exit 2 ;;\nesac\n' % outputs)
    facts = run_module(capsys, {"root": str(root), "nvidia_smi_path": smi, "lspci_path": missing(bin_dir, "lspci"),
                                "mokutil_path": missing(bin_dir, "mokutil")})
    fabric = facts["nvlink_fabric"]
    assert fabric["switch_mgmt_ports"] == ["mlx5_0"] and fabric["link_speeds_gbps"] == [53.125, 53.125]
    assert [f["state"] for f in fabric["fabric"]] == [None] and facts["probes"]["nvidia_smi_nvlink"] == "ok"


def test_nvlink_fabric_not_read_without_infiniband_or_driver(root, bin_dir, capsys):
    facts = run_module(capsys, {"root": str(root), "nvidia_smi_path": missing(bin_dir, "nvidia-smi"),
                                "lspci_path": missing(bin_dir, "lspci"), "mokutil_path": missing(bin_dir, "mokutil")})
    assert facts["nvlink_fabric"] == {"switch_mgmt_ports": None, "link_speeds_gbps": None, "fabric": None}
    assert facts["probes"]["nvidia_smi_nvlink"] == "skipped"
