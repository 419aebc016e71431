# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""dlbox.stack.gpu_facts reads what the fitness report judges: the disk that holds / and each GPU's own PCIe link.

Runs the module against the fake root tree of test_gpu_facts.py (its nvidia-smi is the netdata RTX 4090 capture,
max_device_link_gen 4). The sysfs values below are in the kernel's formats (Documentation/ABI/testing/sysfs-bus-pci:
max_link_speed "16.0 GT/s PCIe"; /sys/block/<disk>/dev "major:minor"), not captures.
"""

from __future__ import annotations

from ansible_collections.dlbox.stack.tests.unit.plugins.modules.test_gpu_facts import (  # noqa: F401 (fixtures)  pylint: disable=unused-import
    MODULES_NVIDIA, PROC_DRIVER, bin_dir, fake_lspci, fake_mokutil, fake_nvidia_smi, root, run_module, write,
)


def test_root_disk_and_a_gpu_held_at_x8_are_read_from_sysfs(root, bin_dir, capsys):  # noqa: F811
    write(root / "proc/modules", MODULES_NVIDIA)
    write(root / "proc/driver/nvidia/version", PROC_DRIVER)
    write(root / "proc/self/mountinfo", "22 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw\n")
    write(root / "sys/block/nvme0n1/dev", "259:0\n")
    write(root / "sys/block/nvme0n1/nvme0n1p2/dev", "259:2\n")
    write(root / "sys/block/nvme0n1/nvme0n1p2/partition", "2\n")
    gpu = root / "sys/bus/pci/devices/0000:84:00.0"
    for name, value in (("vendor", "0x10de"), ("device", "0x2684"), ("class", "0x030000"),
                        ("max_link_speed", "16.0 GT/s PCIe"), ("max_link_width", "16"),
                        ("current_link_speed", "2.5 GT/s PCIe"), ("current_link_width", "8")):
        write(gpu / name, value + "\n")
    host = run_module(capsys, {
        "root": str(root),
        "nvidia_smi_path": fake_nvidia_smi(bin_dir, "rtx-4090-driver-535.xml", "topo-2x-rtx3090-pcie.txt"),
        "lspci_path": fake_lspci(bin_dir, "rtx4090-desktop.lspci-nn.txt", "s/^2d:00/84:00/"),
        "mokutil_path": fake_mokutil(bin_dir, "SecureBoot disabled"),
    })
    assert host["root_disk"] == {"name": "nvme0n1", "kind": "nvme", "size_gb": 1000, "members": [], "member_kinds": []}
    # the card's own Gen4 x16 (LnkCap; nvidia-smi's Device Max) against the Gen3 (nvidia-smi's Max) x8 (LnkSta) it got
    assert host["gpus"][0]["pcie_cap"] == {"gen": 4, "width": 16, "link_gen": 3, "link_width": 8,
                                           "source": "nvidia-smi+sysfs"}
