"""The gpu_facts action names and classifies detected GPUs from data/compat.yml."""

from __future__ import annotations

import pytest

from ansible_collections.dlbox.stack.plugins.action.gpu_facts import classify_host_gpus
from ansible_collections.dlbox.stack.plugins.plugin_utils.compat_data import load_gpu_index


@pytest.mark.parametrize(
    ("pci_id", "name", "architecture", "cc"),
    [
        ("2684", "NVIDIA GeForce RTX 4090", "Ada Lovelace", "8.9"),
        ("2330", "NVIDIA H100 80GB HBM3", "Hopper", "9.0"),
        ("1b06", "NVIDIA GeForce GTX 1080 Ti", "Pascal", "6.1"),
        ("2b85", "NVIDIA GeForce RTX 5090", "Blackwell", "12.0"),
        ("102d", "Tesla K80", "Kepler", "3.7"),
    ],
)
def test_known_pci_ids_are_named(pci_id, name, architecture, cc):
    (gpu,) = classify_host_gpus(load_gpu_index(), [{"pci_device_id": pci_id, "name": "from lspci", "pci_bus_id": "0000:01:00.0"}])
    assert gpu["catalog"]["name"] == name
    assert gpu["catalog"]["architecture"].startswith(architecture)
    assert gpu["catalog"]["cc"] == cc
    assert gpu["catalog"]["known"] is True
    assert gpu["name"] == "from lspci" and gpu["pci_bus_id"] == "0000:01:00.0"  # detected facts kept


def test_unknown_device_is_marked_unknown():
    (gpu,) = classify_host_gpus(load_gpu_index(), [{"pci_device_id": "ffff", "name": "Device ffff"}])
    assert gpu["catalog"]["known"] is False
    assert gpu["catalog"]["cc"] is None


def test_unknown_device_with_a_known_chip_gets_its_architecture_with_a_warning():
    (gpu,) = classify_host_gpus(load_gpu_index(), [{"pci_device_id": "2fff", "name": "GB203 [GeForce RTX 5099]",
                                                     "pci_name": "GB203 [GeForce RTX 5099]"}])
    assert gpu["catalog"]["known"] is False
    assert (gpu["catalog"]["arch"], gpu["catalog"]["cc"], gpu["catalog"]["chip"]) == ("blackwell", "12.0", "GB203")
    assert "its chip GB203" in gpu["catalog"]["warning"]
