"""The gpu_facts action names and classifies detected GPUs from data/compat.yml."""

from __future__ import annotations

import pytest

from ansible_collections.dlbox.stack.plugins.action.gpu_facts import classify_host_gpus, jetson_with_jetpack
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
    detected = {"pci_device_id": "2fff", "name": "GB203 [GeForce RTX 5099]", "pci_name": "GB203 [GeForce RTX 5099]"}
    (gpu,) = classify_host_gpus(load_gpu_index(), [detected])
    assert gpu["catalog"]["known"] is False
    assert (gpu["catalog"]["arch"], gpu["catalog"]["cc"], gpu["catalog"]["chip"]) == ("blackwell", "12.0", "GB203")
    assert "its chip GB203" in gpu["catalog"]["warning"]


@pytest.mark.parametrize(
    ("l4t", "jetpack"),
    [("32.7.1", "4.6.1"), ("32.7.6", "4.6.6"), ("35.1.0", "5.0.2"), ("35.4.1", "5.1.2"), ("35.6.2", "5.1.5"),
     ("36.3.0", "6.0"), ("36.4.3", "6.2"), ("36.4.7", "6.2.1"), ("38.2.0", "7.0"), ("38.2.1", "7.0"), ("38.4.0", "7.1"),
     ("39.2.1", "7.2.1"), ("39.2.0", "7.2"), ("32.5.1", None), (None, None)],
)
def test_jetson_gets_the_jetpack_of_its_l4t_from_the_data(l4t, jetpack):
    """Every L4T line with a JetPack: 32.7.x, 35.x, 36.x, 38.x, 39.x (L4T 32.5.1 = JetPack 4.5.1 is not in the data)."""
    jetson = jetson_with_jetpack(load_gpu_index(), {"l4t": l4t, "model": "NVIDIA Jetson AGX Orin Developer Kit"})
    assert jetson["jetpack"] == jetpack
    assert jetson["model"] == "NVIDIA Jetson AGX Orin Developer Kit"
