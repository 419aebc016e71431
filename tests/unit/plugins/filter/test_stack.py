"""Tests for the dlbox.stack.resolve_stack / lookup_gpu filters (plugins/filter/stack.py)."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.dlbox.stack.plugins.filter.stack import FilterModule, lookup_gpu, resolve_stack


def test_filters_are_registered():
    assert set(FilterModule().filters()) == {"resolve_stack", "lookup_gpu", "plan_text", "workstation_roles", "plan_inputs", "plan_fleet"}


@pytest.mark.parametrize(
    "hardware, request_, path, expected",
    [
        ({"gpus": ["RTX 4090"], "os": "ubuntu-22.04"}, None, ("driver", "method"), "distro"),
        ({"gpus": ["GTX 1080 Ti"], "os": "ubuntu-22.04"}, {"pytorch": "2.9"}, ("pytorch", "variant"), "cu126"),
        # Ubuntu's archive names Fabric Manager by branch, NVIDIA's repository from 580 on does not
        ({"gpus": ["H100 SXM"] * 8, "nvswitch": True, "os": "ubuntu-22.04"}, {"driver_branch": "580"}, ("fabric_manager", "package"),
         "nvidia-fabricmanager-580"),
        ({"gpus": ["H100 SXM"] * 8, "nvswitch": True, "os": "ubuntu-22.04"}, {"driver_method": "nvidia_repo"},
         ("fabric_manager", "package"), "nvidia-fabricmanager"),
        ({"gpus": [], "os": "debian-12"}, {}, ("pytorch", "variant"), "cpu"),
    ],
)
def test_resolve_stack_with_hardware_override(hardware, request_, path, expected):
    plan = resolve_stack({"gpus": [{"pci_device_id": "2b85"}]}, request_, hardware=hardware)  # hardware wins
    assert plan["ok"] is True, plan["errors"]
    assert plan["stack"][path[0]][path[1]] == expected


def test_resolve_stack_with_detected_facts():
    host = {"arch": "x86_64", "os": {"key": "ubuntu-24.04"}, "gpus": [{"pci_device_id": "2b85"}], "driver": {"present": False}}
    plan = resolve_stack(host)
    assert plan["ok"] is True
    assert plan["stack"]["driver"]["kernel_modules"] == "open"
    assert plan["host"]["gpus"][0]["name"] == "NVIDIA GeForce RTX 5090"


def test_resolve_stack_reports_refusals():
    plan = resolve_stack({}, {"kernel_modules": "proprietary"}, hardware={"gpus": ["B200"], "os": "ubuntu-24.04"})
    assert plan["ok"] is False
    assert "Proprietary kernel modules do not support NVIDIA B200" in plan["errors"][0]


def test_resolve_stack_refuses_non_mapping_request():
    plan = resolve_stack({}, ["cuda"], hardware={"gpus": ["RTX 4090"]})
    assert plan["ok"] is False
    assert plan["errors"] == ["dlbox_plan_request must be a mapping such as {\"pytorch\": \"2.9\", \"kernel_modules\": \"open\"}, "
                              "not list ['cuda']."]


def test_bad_data_path_is_a_filter_error(tmp_path):
    with pytest.raises(AnsibleFilterError, match="cannot read compatibility data"):
        resolve_stack({}, {}, data_path=str(tmp_path / "missing.yml"))


@pytest.mark.parametrize(
    "query, name",
    [("RTX 4090", "NVIDIA GeForce RTX 4090"), ("10de:2330", "NVIDIA H100 80GB HBM3"), ("NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3"),
     ("A100", None), ("4090", None)],
)
def test_lookup_gpu_filter(query, name):
    entry = lookup_gpu(query)
    assert (entry or {}).get("name") == name


def test_lookup_gpu_filter_gives_arch_cc_and_hand_kept_facts():
    entry = lookup_gpu("H100 SXM")
    assert (entry["pci_id"], entry["arch"], entry["cc"], entry["memory_gb"], entry["form"]) == ("2330", "hopper", "9.0", 80, "sxm")


def test_bad_catalog_path_is_a_filter_error(tmp_path):
    with pytest.raises(AnsibleFilterError, match="cannot read the GPU catalog"):
        lookup_gpu("RTX 4090", catalog_path=str(tmp_path / "missing.yml"))
