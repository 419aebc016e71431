"""The gpu_facts action names and classifies detected GPUs from data/compat.yml."""

from __future__ import annotations

import pytest

from ansible_collections.dlbox.stack.plugins.action.gpu_facts import classify_host_gpus
from ansible_collections.dlbox.stack.plugins.plugin_utils.compat_data import load_compat


@pytest.mark.parametrize(
    ("pci_id", "name", "architecture", "cc"),
    [
        ("2684", "GeForce RTX 4090", "Ada Lovelace", "8.9"),
        ("2330", "H100 SXM5 80GB", "Hopper", "9.0"),
        ("1b06", "GeForce GTX 1080 Ti", "Pascal", "6.1"),
        ("2b85", "GeForce RTX 5090", "Blackwell", "12.0"),
    ],
)
def test_known_pci_ids_are_named(pci_id, name, architecture, cc):
    (gpu,) = classify_host_gpus(load_compat(), [{"pci_device_id": pci_id, "name": "from lspci", "pci_bus_id": "0000:01:00.0"}])
    assert gpu["catalog"]["name"] == name
    assert gpu["catalog"]["architecture"].startswith(architecture)
    assert gpu["catalog"]["cc"] == cc
    assert gpu["catalog"]["known"] is True
    assert gpu["name"] == "from lspci" and gpu["pci_bus_id"] == "0000:01:00.0"  # detected facts kept


def test_unknown_device_is_marked_unknown():
    (gpu,) = classify_host_gpus(load_compat(), [{"pci_device_id": "ffff", "name": "Device ffff"}])
    assert gpu["catalog"]["known"] is False
    assert gpu["catalog"]["cc"] is None
