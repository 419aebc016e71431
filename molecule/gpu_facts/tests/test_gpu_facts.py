"""gpu_facts on a real target without a GPU, and the plan the resolver makes from it."""

import json

import pytest


@pytest.fixture(scope="module")
def facts(host):
    return json.loads(host.file("/root/dlbox-facts.json").content_string)


def test_os_key_matches_the_target(host, facts):
    info = host.system_info
    expected = f"{info.distribution}-{info.release}" if info.distribution == "ubuntu" else f"debian-{info.release.split('.')[0]}"
    assert facts["host"]["os"]["key"] == expected


def test_no_gpu_and_no_driver(facts):
    assert facts["host"]["gpus"] == []
    assert facts["host"]["nvswitches"] == []
    assert facts["host"]["driver"]["present"] is False


def test_lspci_probe_ran_and_nvidia_smi_is_missing(facts):
    assert facts["host"]["probes"]["lspci"] == "ok"
    assert facts["host"]["probes"]["nvidia_smi"] == "missing"


def test_container_detected(facts):
    assert facts["host"]["virtualization"]["container"] is True
    assert facts["host"]["virtualization"]["container_type"] == "docker"


def test_facts_carry_the_data_date(facts):
    assert facts["host"]["compat_data_date"] == facts["plan"]["data_date"]


def test_plan_is_cpu_only(facts):
    plan = facts["plan"]
    assert plan["ok"] is True, plan["errors"]
    assert plan["stack"]["driver"] is None and plan["stack"]["cuda"] is None
    assert plan["stack"]["pytorch"]["variant"] == "cpu"
    assert any("No NVIDIA GPU was found" in n for n in plan["notes"])


def test_plan_python_is_the_targets(host, facts):
    target = host.run("python3 -c 'import sys; print(\"%d.%d\" % sys.version_info[:2])'").stdout.strip()
    assert facts["plan"]["stack"]["python"]["version"] == target
