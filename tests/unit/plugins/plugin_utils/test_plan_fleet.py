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


# Issue 47: each switch is dlbox_install_<name> on every kind of host; dlbox_workstation_<name> is its deprecated alias.
@pytest.mark.parametrize("name", fleet.SWITCHES)
def test_the_new_name_and_the_old_alias_both_set_a_switch(name):
    hostvars = {"new": {"dlbox_install_%s" % name: False}, "old": {"dlbox_workstation_%s" % name: False}, "none": {}}
    got = fleet.inputs(hostvars, ["new", "old", "none"], {})
    assert got["errors"] == [] and got["message"] == ""
    assert [got["hosts"][h]["switches"][name] for h in ("new", "old", "none")] == [False, False, None]


def test_the_new_name_reaches_the_plan_and_its_text_names_it():
    hostvars = {"a": {"dlbox_plan_hardware": RTX4090, "dlbox_install_docker": False},
                "b": {"dlbox_plan_hardware": RTX4090, "dlbox_workstation_docker": False}}
    got = plan_fleet(plan_inputs(hostvars, ["a", "b"], {}), hostvars, ["a", "b"])
    for host in "ab":
        assert got["workstation"][host]["run"]["docker"] is False
        assert got["workstation"][host]["run"]["nvidia_container_toolkit"] is False
        docker = next(r for r in got["workstation"][host]["roles"] if r["role"] == "docker")
        assert docker["switch"] == "dlbox_install_docker" and docker["why"] == "-e dlbox_install_docker=false"


def test_the_play_may_set_the_new_name():
    hostvars = {"a": {"dlbox_install_cuda": True}, "b": {}}
    got = fleet.inputs(hostvars, ["a", "b"], {"dlbox_install_cuda": False})
    assert [got["hosts"][h]["switches"]["cuda"] for h in "ab"] == [False, False]


@pytest.mark.parametrize("new, old", [(True, True), (False, "no"), ("yes", True), (None, False), (False, None)])
def test_both_names_that_agree_are_fine(new, old):
    hostvars = {"a": {"dlbox_install_nccl": new, "dlbox_workstation_nccl": old}}
    got = fleet.inputs(hostvars, ["a"], {})
    assert got["errors"] == [] and got["message"] == ""
    assert got["hosts"]["a"]["switches"]["nccl"] == (new if new is not None else old)


def test_both_names_that_differ_are_refused_naming_both_before_any_change():
    hostvars = {"a": {"dlbox_plan_hardware": RTX4090, "dlbox_install_cuda": False, "dlbox_workstation_cuda": True},
                "b": {"dlbox_plan_hardware": RTX4090, "dlbox_install_driver": True}}
    got = fleet.inputs(hostvars, ["a", "b"], {})
    assert "a" not in got["hosts"] and list(got["hosts"]) == ["b"]
    assert [e["host"] for e in got["errors"]] == ["a"]
    assert got["errors"][0]["variables"] == ["dlbox_install_cuda", "dlbox_workstation_cuda"]
    assert "a sets dlbox_install_cuda=false and dlbox_workstation_cuda=true (set dlbox_install_cuda alone)" in got["message"]
    assert "removed in 1.0.0" in got["message"]
    assert "dlbox_plan_request must be a mapping" not in got["message"]


def test_kernel_headers_under_the_new_name_beat_common_kernel_headers():
    hostvars = {"a": {"common_kernel_headers": False, "dlbox_install_kernel_headers": True}}
    assert fleet.inputs(hostvars, ["a"], {})["hosts"]["a"]["switches"]["kernel_headers"] is True


def test_a_bad_value_under_the_new_name_names_it():
    hostvars = {"a": {"dlbox_plan_hardware": RTX4090, "dlbox_install_cuda": "maybe"}}
    with pytest.raises(AnsibleFilterError, match="^a: dlbox_install_cuda must be true or false"):
        plan_fleet(plan_inputs(hostvars, ["a"], {}), hostvars, ["a"])


def test_the_context_pattern_reads_both_names():
    for name in fleet.SWITCHES:
        assert re.match(fleet.CONTEXT_PATTERN, "dlbox_install_" + name)
        assert re.match(fleet.CONTEXT_PATTERN, "dlbox_workstation_" + name)
    assert not re.match(fleet.CONTEXT_PATTERN, "dlbox_install_gpu")


def test_the_old_switch_names_are_named_with_their_replacement_once_each():
    """rt47b: an old dlbox_workstation_* name gave no warning when a run read it. deprecated_names lists each one
    that a host or the play sets (null counts as unset, as the plan reads it), with the name that replaces it."""
    hostvars = {"a": {"dlbox_workstation_docker": False, "dlbox_install_cuda": False},
                "b": {"dlbox_workstation_docker": True, "dlbox_workstation_nccl": None},
                "c": {"dlbox_install_docker": False}}
    assert fleet.deprecated_names(hostvars, ["a", "b", "c"], {}) == [
        ("dlbox_workstation_docker", "dlbox_install_docker")]
    assert fleet.deprecated_names(hostvars, ["c"], {"dlbox_workstation_cuda": "no"}) == [
        ("dlbox_workstation_cuda", "dlbox_install_cuda")]
    assert fleet.deprecated_names({"c": {"dlbox_install_docker": False}}, ["c"], {}) == []
    assert fleet.deprecated_names({}, [], {}) == []


def test_a_run_that_reads_an_old_switch_name_prints_ansibles_deprecation_warning(tmp_path):
    """The warning a user of any Ansible collection knows ([DEPRECATION WARNING] ... version 1.0.0), from a real
    ansible-playbook run of the filter plan.yml uses; none when only the new names are set."""
    import os
    import subprocess
    import sys
    play = tmp_path / "play.yml"
    play.write_text("- hosts: all\n  gather_facts: false\n  tasks:\n    - ansible.builtin.debug:\n"
                    "        msg: \"{{ hostvars | dlbox.stack.plan_inputs(ansible_play_hosts, {}) | length }}\"\n"
                    "      run_once: true\n")
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(Path(__file__).resolve().parents[4] / "build" / "collections"),
               ANSIBLE_NOCOLOR="1", ANSIBLE_DEPRECATION_WARNINGS="true")
    argv = [str(Path(sys.executable).parent / "ansible-playbook"), "-i", "a,b,", "-c", "local", str(play)]
    old = subprocess.run(argv + ["-e", "dlbox_workstation_cuda=false"], env=env, capture_output=True, text=True,
                         timeout=300, check=False)
    out = old.stdout + old.stderr
    assert old.returncode == 0, out[-2000:]
    assert re.search(r"\[DEPRECATION WARNING\]: dlbox_workstation_cuda is the old name of dlbox_install_cuda .*set "
                     r"dlbox_install_cuda instead.*version 1\.0\.0", out.replace("\n", " ")), out[-2000:]
    assert out.count("dlbox_workstation_cuda is the old name") == 1, out[-2000:]
    new = subprocess.run(argv + ["-e", "dlbox_install_cuda=false"], env=env, capture_output=True, text=True,
                         timeout=300, check=False)
    assert new.returncode == 0 and "DEPRECATION" not in new.stdout + new.stderr, (new.stdout + new.stderr)[-2000:]
