"""Planning every host of a play in one task (plugin_utils/plan_fleet.py, filters plan_inputs and plan_fleet).

plan.yml reads each host's planning variables from hostvars once; these tests give plain mappings in their
place. The plans themselves must be the ones the per-host path (resolve_stack + workstation_roles) makes.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.dlbox.stack.plugins.filter.stack import (
    plan_fleet, plan_inputs, plan_text, resolve_stack, workstation_roles)
from ansible_collections.dlbox.stack.plugins.plugin_utils import plan_fleet as fleet

RTX4090 = {"gpus": ["RTX 4090"], "os": "ubuntu-24.04"}
RTX5090 = {"gpus": ["RTX 5090"], "os": "ubuntu-24.04"}
DETECTED = {"arch": "x86_64", "os": {"key": "ubuntu-24.04"}, "gpus": [{"pci_device_id": "2b85"}], "driver": {"present": False}}


def test_each_host_keeps_its_own_variables():
    hostvars = {
        "a": {"dlbox_plan_hardware": RTX4090, "dlbox_workstation_docker": False},
        "b": {"dlbox_plan_hardware": RTX5090, "dlbox_plan_request": {"pytorch": "2.9"}},
        "c": {},
    }
    got = fleet.inputs(hostvars, ["a", "b", "c"], {"dlbox_plan_hardware": RTX4090, "dlbox_workstation_docker": False})
    assert got["errors"] == [] and got["message"] == ""
    assert got["detect"] == ["c"]
    assert got["hosts"]["a"]["switches"]["docker"] is False
    assert got["hosts"]["b"]["switches"]["docker"] is None
    assert got["hosts"]["b"]["hardware"] == RTX5090 and got["hosts"]["b"]["request"] == {"pytorch": "2.9"}
    assert "hardware" not in got["hosts"]["c"] and got["hosts"]["c"]["request"] == {}


def test_a_value_the_play_sets_wins_for_every_host():
    """Play vars beat inventory vars in Ansible: a value in the context that is not the first host's own is the play's."""
    hostvars = {"a": {"dlbox_workstation_cuda": True}, "b": {"dlbox_workstation_cuda": True}, "c": {}}
    got = fleet.inputs(hostvars, ["a", "b", "c"], {"dlbox_workstation_cuda": False})
    assert [got["hosts"][h]["switches"]["cuda"] for h in "abc"] == [False, False, False]


def test_kernel_headers_fall_back_to_common_kernel_headers():
    hostvars = {"a": {"common_kernel_headers": False}, "b": {"common_kernel_headers": False, "dlbox_workstation_kernel_headers": None}}
    got = fleet.inputs(hostvars, ["a", "b"], {"common_kernel_headers": False})
    assert got["hosts"]["a"]["switches"]["kernel_headers"] is False
    assert got["hosts"]["b"]["switches"]["kernel_headers"] is None  # set to null: default() does not replace it


@pytest.mark.parametrize("values, bad", [
    ({"dlbox_plan_request": ["pytorch"]}, ["dlbox_plan_request"]),
    ({"dlbox_plan_request": None}, ["dlbox_plan_request"]),
    ({"dlbox_plan_hardware": "RTX 4090"}, ["dlbox_plan_hardware"]),
    ({"dlbox_plan_hardware": None}, ["dlbox_plan_hardware"]),
    ({"dlbox_plan_hardware": {"gpus": 4090}}, ["dlbox_plan_hardware.gpus"]),
    ({"dlbox_plan_hardware": {"gpus": "RTX 4090"}}, []),  # a string passes here (Jinja's sequence test) and the resolver refuses it
])
def test_bad_shapes_name_the_variable(values, bad):
    got = fleet.inputs({"h": values}, ["h"], {})
    assert [e["variables"] for e in got["errors"]] == ([bad] if bad else [])
    if bad:
        assert "h" not in got["hosts"]
        assert bad[0] in got["message"] and "must be a mapping such as" in got["message"]
        assert got["message"].startswith(fleet.HELP)


def test_no_hosts():
    assert fleet.inputs({}, [], {}) == {"hosts": {}, "detect": [], "errors": [], "message": ""}


def test_context_must_be_a_mapping():
    with pytest.raises(AnsibleFilterError, match="context must be a mapping"):
        plan_inputs({"h": {}}, ["h"], ["dlbox_plan_request"])


def test_plans_are_the_per_host_plans():
    """The fleet's plan, roles and text for each host are what plan.yml made one host at a time."""
    hostvars = {
        "a": {"dlbox_plan_hardware": RTX4090, "dlbox_workstation_python_env": True},
        "b": {"dlbox_plan_hardware": RTX5090, "dlbox_plan_request": {"kernel_modules": "proprietary"}},
        "c": {"ansible_facts": {"dlbox_host": DETECTED}},
    }
    inputs = plan_inputs(hostvars, ["a", "b", "c"], {"dlbox_plan_hardware": RTX4090, "dlbox_workstation_python_env": True})
    got = plan_fleet(inputs, hostvars, ["a", "b", "c"])
    texts = []
    for name, host, request, hardware, switches in (
            ("a", {}, {}, RTX4090, {"python_env": True}),
            ("b", {}, {"kernel_modules": "proprietary"}, RTX5090, {}),
            ("c", DETECTED, {}, None, {})):
        plan = resolve_stack(host, request, hardware=hardware)
        roles = workstation_roles(plan, dict({s: None for s in fleet.SWITCHES}, **switches))
        assert got["plans"][name] == plan
        assert got["workstation"][name] == roles
        texts.append("\n".join(plan_text(plan, name, roles=roles)))
    assert got["text"] == "\n\n".join(texts)
    assert got["refused"] == ["b"]
    assert got["plans"]["c"]["host"]["gpus"][0]["name"] == "NVIDIA GeForce RTX 5090"  # from the detected facts


def test_a_host_that_was_not_read_is_an_error():
    with pytest.raises(AnsibleFilterError, match="x was not read"):
        plan_fleet({"hosts": {}}, {}, ["x"])
    with pytest.raises(AnsibleFilterError, match="expected the result of dlbox.stack.plan_inputs"):
        plan_fleet([], {}, ["x"])


def test_a_bad_switch_names_the_host():
    hostvars = {"a": {"dlbox_plan_hardware": RTX4090, "dlbox_workstation_cuda": "maybe"}}
    with pytest.raises(AnsibleFilterError, match="^a: .*cuda"):
        plan_fleet(plan_inputs(hostvars, ["a"], {}), hostvars, ["a"])


def test_plan_yml_looks_up_exactly_the_planning_variables():
    """plan.yml collects the task's own planning variables with this pattern: it must name every one of NAMES."""
    text = (Path(__file__).resolve().parents[4] / "playbooks" / "plan.yml").read_text()
    assert fleet.CONTEXT_PATTERN in text
    assert sorted(n for n in fleet.NAMES if re.match(fleet.CONTEXT_PATTERN, n)) == sorted(fleet.NAMES)
    assert not re.match(fleet.CONTEXT_PATTERN, "dlbox_workstation") and not re.match(fleet.CONTEXT_PATTERN, "dlbox_plan_output")
