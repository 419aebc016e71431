# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""PCIe link generation and width in gpu_facts' parsers (nvidia-smi -q -x, nvidia-smi -q, lspci -vv), on real outputs."""

from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.dlbox.stack.plugins.module_utils import _gpu_facts as hf

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"


@pytest.mark.parametrize("name, link", [
    ("rtx-4090-driver-535.xml", {"gen_max": 3, "gen_current": 1, "width_max": 16, "width_current": 16}),
    ("h200-driver-580-device.xml", {"gen_max": 5, "gen_current": 5, "width_max": 16, "width_current": 16}),
    ("a100-sxm4-mig.xml", {"gen_max": 4, "gen_current": 4, "width_max": 16, "width_current": 16}),
    ("tesla-p100-driver-510.xml", {"gen_max": 3, "gen_current": 3, "width_max": 16, "width_current": 16}),
])
def test_xml_gives_the_link_of_each_gpu(name, link):
    gpus = hf.parse_nvidia_smi_xml((FIXTURES / "nvidia-smi" / name).read_text())["gpus"]
    assert gpus[0]["pcie_link"] == dict(link, source="nvidia-smi")


def test_q_text_gives_generation_and_width():
    links = hf.parse_nvidia_smi_q_pcie((FIXTURES / "doctor" / "smi-q-a10-550-idle.txt").read_text())
    assert links == [{"pci_bus_id": "0000:06:00.0", "gen_max": 4, "gen_current": 1, "width_max": 16,
                      "width_current": 16, "source": "nvidia-smi"}]


def test_q_paste_cut_before_the_generation_header_gives_the_width_only():
    links = hf.parse_nvidia_smi_q_pcie((FIXTURES / "doctor" / "smi-q-width-x8-under-load.txt").read_text())
    assert links == [{"pci_bus_id": None, "gen_max": None, "gen_current": None, "width_max": 16, "width_current": 8,
                      "source": "nvidia-smi"}]


def test_q_text_without_link_info_gives_nothing():
    assert hf.parse_nvidia_smi_q_pcie((FIXTURES / "doctor" / "smi-q-remapped-rows-pending.txt").read_text()) == []


def test_lspci_grepped_cap_and_status():
    links = hf.parse_lspci_links((FIXTURES / "doctor" / "lspci-lnksta-gen1-idle-x16.txt").read_text())
    assert [(link["gen_max"], link["width_max"], link["gen_current"], link["width_current"], link["speed_downgraded"],
             link["width_downgraded"]) for link in links] == [(4, 16, 1, 16, True, False)]


def test_lspci_status_only_with_lspci_notes():
    links = hf.parse_lspci_links((FIXTURES / "doctor" / "lspci-vv-lnksta-x1-downgraded.txt").read_text())
    assert [(link["gen_current"], link["width_current"], link["speed_downgraded"], link["width_downgraded"]) for link in links] == [
        (2, 1, True, True)]


def test_lspci_block_keeps_bus_name_and_driver():
    links = hf.parse_lspci_links((FIXTURES / "doctor" / "lspci-vv-kernel-driver-nouveau.txt").read_text())
    assert [(link["pci_bus_id"], link["nvidia"], link["driver_in_use"], link["width_current"]) for link in links] == [
        ("0000:01:00.0", True, "nouveau", None)]
