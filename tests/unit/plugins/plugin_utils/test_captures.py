# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Plans from captured tool outputs (dlbox_plan_hardware.captures), on real captures (tests/fixtures/SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.dlbox.stack.plugins.filter.stack import resolve_stack
from ansible_collections.dlbox.stack.plugins.plugin_utils.captures import (
    CaptureError, detect_kind, hardware_from_captures, parse_capture, parse_query_gpu_csv)

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"
SMI_XML_4090 = FIXTURES / "nvidia-smi" / "rtx-4090-driver-535.xml"  # netdata/netdata
SMI_XML_A100_MIG = FIXTURES / "nvidia-smi" / "a100-sxm4-mig.xml"  # netdata/netdata
SMI_XML_P100 = FIXTURES / "nvidia-smi" / "tesla-p100-driver-510.xml"  # netdata/netdata
SMI_CSV_H100 = FIXTURES / "nvidia-smi" / "query-gpu-name-cc-8x-h100.csv"  # NVIDIA/cutlass
LSPCI_H100 = FIXTURES / "lspci" / "h100-sxm5-4x-grep-nvidia.lspci-nn.txt"  # stackhpc/ansible-slurm-appliance
TEGRA_NANO = FIXTURES / "nv_tegra_release" / "jetson-nano-r32.7.6.txt"  # ay65535/dotfiles
TEGRA_TX2 = FIXTURES / "nv_tegra_release" / "tx2-r32.5.1.txt"  # pokusew/ros-setup


@pytest.mark.parametrize(
    "path, kind",
    [(SMI_XML_4090, "nvidia-smi-xml"), (SMI_CSV_H100, "nvidia-smi-csv"), (LSPCI_H100, "lspci"),
     (FIXTURES / "lspci" / "dgx-a100.lspci-Dnn.txt", "lspci"), (TEGRA_NANO, "nv_tegra_release"),
     (FIXTURES / "SOURCES.md", None)],
)
def test_kind_is_recognized_from_the_content(path, kind):
    assert detect_kind(path.read_text()) == kind


def _plan(captures, **hardware):
    return resolve_stack({}, {}, hardware=dict(hardware, captures=[str(p) for p in captures]))


def test_plan_from_nvidia_smi_xml():
    """An RTX 4090 box on driver 535.86.05: the installed driver is kept and named end-of-life."""
    plan = _plan([SMI_XML_4090], os="ubuntu-22.04")
    assert plan["ok"], plan["errors"]
    (gpu,) = plan["host"]["gpus"]
    assert (gpu["name"], gpu["architecture"], gpu["cc"]) == ("NVIDIA GeForce RTX 4090", "Ada Lovelace", "8.9")
    assert plan["host"]["driver_installed"] == "535.86.05"
    assert any("535.86.05" in w and "end-of-life" in w for w in plan["warnings"])


@pytest.mark.parametrize(
    "path, name, cc",
    [(SMI_XML_A100_MIG, "NVIDIA A100-SXM4-40GB", "8.0"), (SMI_XML_P100, "Tesla P100-PCIE-16GB", "6.0")],
)
def test_plan_from_older_nvidia_smi_xml(path, name, cc):
    plan = _plan([path], os="ubuntu-22.04")
    assert plan["ok"], plan["errors"]
    (gpu,) = plan["host"]["gpus"]
    assert (gpu["name"], gpu["cc"]) == (name, cc)
    assert plan["host"]["driver_installed"] == "510.47.03"


def test_plan_from_nvidia_smi_query_csv():
    """`nvidia-smi --query-gpu=name,compute_cap --format=csv` of an 8x H100 HGX: named by what nvidia-smi prints."""
    plan = _plan([SMI_CSV_H100], os="ubuntu-22.04", nvswitch=True)
    assert plan["ok"], plan["errors"]
    (gpu,) = plan["host"]["gpus"]
    assert (gpu["count"], gpu["name"], gpu["cc"]) == (8, "NVIDIA H100 80GB HBM3", "9.0")
    assert plan["stack"]["fabric_manager"] is not None


def test_query_csv_with_pci_ids_and_units():
    text = ("name, pci.bus_id, pci.device_id, driver_version, compute_cap, memory.total [MiB]\n"
            "NVIDIA GeForce RTX 3080, 00000000:01:00.0, 0x220610DE, 580.82.07, 8.6, 10240 MiB\n")
    (gpu,) = parse_query_gpu_csv(text)["gpus"]
    assert (gpu["pci_device_id"], gpu["pci_bus_id"], gpu["memory_mb"]) == ("2206", "0000:01:00.0", 10240)
    assert parse_query_gpu_csv(text)["driver_version"] == "580.82.07"
    with pytest.raises(CaptureError, match="no header line"):
        parse_query_gpu_csv("NVIDIA H100 80GB HBM3, 9.0\n")


def test_plan_from_lspci():
    """`lspci -nn | grep -i nvidia` of a 4x H100 SXM5 node: PCI ids decide, the bus ids count the GPUs."""
    plan = _plan([LSPCI_H100], os="ubuntu-22.04")
    assert plan["ok"], plan["errors"]
    (gpu,) = plan["host"]["gpus"]
    assert (gpu["count"], gpu["name"], gpu["pci_device_id"]) == (4, "NVIDIA H100 80GB HBM3", "2330")
    assert plan["host"]["driver_installed"] is None


def test_plan_from_nv_tegra_release_with_the_module_named():
    """A Jetson Nano on L4T 32.7.6: JetPack 4.6.6 from the data; no PyTorch build is confirmed for it."""
    plan = _plan([TEGRA_NANO], gpus=["Jetson Nano"])
    assert plan["ok"], plan["errors"]
    assert (plan["stack"]["jetpack"]["version"], plan["stack"]["jetpack"]["l4t"]) == ("4.6.6", "32.7.6")
    assert plan["stack"]["pytorch"] is None


def test_nv_tegra_release_without_a_module_name_is_refused_naming_what_works():
    plan = _plan([TEGRA_NANO])
    assert not plan["ok"]
    assert "plan with hardware: {gpus: ['Jetson AGX Orin']}" in plan["errors"][0]


def test_l4t_without_a_jetpack_in_the_data_is_warned():
    plan = _plan([TEGRA_TX2], gpus=["Jetson TX2"])
    assert any("L4T 32.5.1 is not in data/compat.yml's JetPack table" in w for w in plan["warnings"])


def test_several_captures_of_one_machine_merge_by_bus_id(tmp_path):
    """nvidia-smi CSV with bus ids plus lspci of the same 4 GPUs: still 4 GPUs, the lspci chip kept."""
    csv_text = "name, pci.bus_id, pci.device_id, compute_cap, driver_version\n" + "".join(
        "NVIDIA H100 80GB HBM3, 00000000:%s:00.0, 0x233010DE, 9.0, 580.82.07\n" % bus for bus in ("06", "0C", "46", "4C"))
    csv_path = tmp_path / "smi.csv"
    csv_path.write_text(csv_text)
    hardware = hardware_from_captures({"captures": [str(csv_path), str(LSPCI_H100)], "os": "ubuntu-22.04"})
    assert len(hardware["gpus"]) == 4 and hardware["gpus"][0]["pci_name"] == "GH100 [H100 SXM5 80GB]"
    assert hardware["driver_version"] == "580.82.07"
    assert [c["kind"] for c in hardware["captured"]] == ["nvidia-smi-csv", "lspci"]


def test_given_values_win_over_captured_ones():
    hardware = hardware_from_captures({"captures": [str(SMI_XML_4090)], "driver_version": "580.82.07"})
    assert hardware["driver_version"] == "580.82.07"


@pytest.mark.parametrize(
    "captures, message",
    [([str(FIXTURES / "SOURCES.md")], "is the output of none of"), (["/nonexistent/smi.xml"], "cannot be read")],
)
def test_bad_capture_is_refused_naming_the_variable_and_file(captures, message):
    plan = resolve_stack({}, {}, hardware={"captures": captures, "os": "ubuntu-22.04"})
    assert not plan["ok"]
    assert plan["errors"][0].startswith("dlbox_plan_hardware.captures: %s: " % captures[0])
    assert message in plan["errors"][0]


def test_captures_must_be_a_list_of_paths():
    plan = resolve_stack({}, {}, hardware={"captures": "smi.xml", "os": "ubuntu-22.04"})
    assert not plan["ok"] and "dlbox_plan_hardware.captures must be a list of file paths" in plan["errors"][0]


def test_parse_capture_of_an_lspci_line_keeps_the_chip():
    kind, parsed = parse_capture(LSPCI_H100.read_text())
    assert kind == "lspci" and parsed["gpus"][0]["pci_name"] == "GH100 [H100 SXM5 80GB]"


@pytest.mark.parametrize("name", ["h200-driver-580-device.xml", "h200-query-gpu-device.csv"])
def test_plan_from_the_h200_captured_on_the_lent_device(name):
    """Both captures of the real H200 host (driver 580.159.04) plan the same: Hopper CC 9.0, R580 kept."""
    plan = _plan([FIXTURES / "nvidia-smi" / name], os="ubuntu-24.04")
    assert plan["ok"], plan["errors"]
    (gpu,) = plan["host"]["gpus"]
    assert (gpu["name"], gpu["pci_device_id"], gpu["architecture"], gpu["cc"]) == ("NVIDIA H200", "2335", "Hopper", "9.0")
    assert plan["host"]["driver_installed"] == "580.159.04"
    assert (plan["stack"]["driver"]["branch"], plan["stack"]["driver"]["change"]) == (580, False)
