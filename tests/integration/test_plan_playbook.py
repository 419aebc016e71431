"""playbooks/plan.yml end to end: real ansible-playbook, JSON written, refusals exit non-zero."""

from __future__ import annotations

import json
import subprocess

import pytest

from conftest import ROOT, ansible_env


def playbook(path, extra, *options):
    """Run a playbook of this repository with extra variables; the finished process."""
    return subprocess.run(
        ["ansible-playbook", *options, path, "-e", json.dumps(extra)],
        cwd=ROOT, env=ansible_env(), capture_output=True, text=True, check=False, timeout=300,
    )


def run_plan(tmp_path, hardware=None, request=None):
    out = tmp_path / "plan.json"
    extra = {"dlbox_plan_output": str(out)}
    if hardware is not None:
        extra["dlbox_plan_hardware"] = hardware
    if request is not None:
        extra["dlbox_plan_request"] = request
    proc = playbook("playbooks/plan.yml", extra)
    plan = json.loads(out.read_text()) if out.exists() else None
    return proc, plan


@pytest.fixture(autouse=True)
def _collection(collection_installed):
    return collection_installed


def test_this_machine_without_gpu_gets_a_cpu_plan(tmp_path):
    proc, plan = run_plan(tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert plan["ok"] is True and plan["errors"] == []
    assert plan["stack"]["driver"] is None and plan["stack"]["cuda"] is None and plan["stack"]["cudnn"] is None
    assert plan["stack"]["pytorch"]["variant"] == "cpu"
    assert any("No NVIDIA GPU was found" in n for n in plan["notes"])
    assert "no NVIDIA GPU" in proc.stdout


def test_hgx_h100_server(tmp_path):
    proc, plan = run_plan(tmp_path, {"gpus": ["H100 SXM"] * 8, "nvswitch": True, "os": "ubuntu-22.04"})
    assert proc.returncode == 0, proc.stdout[-3000:]
    stack = plan["stack"]
    assert stack["driver"]["kernel_modules"] == "open"
    # The default method is Ubuntu's own archive, where Fabric Manager carries the branch in its name.
    assert stack["driver"]["method"] == "distro"
    assert stack["fabric_manager"]["package"] == "nvidia-fabricmanager-%d" % stack["driver"]["branch"]
    assert stack["fabric_manager"]["version"].startswith(str(stack["driver"]["branch"]))
    assert stack["nccl"]["version"]
    assert plan["host"]["gpu_count"] == 8


def test_gtx_1080_ti_on_pytorch_2_9(tmp_path):
    proc, plan = run_plan(tmp_path, {"gpus": ["GTX 1080 Ti"], "os": "ubuntu-22.04"}, {"pytorch": "2.9"})
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert plan["stack"]["driver"]["branch"] == 580
    assert plan["stack"]["driver"]["kernel_modules"] == "proprietary"
    assert plan["stack"]["pytorch"]["variant"] == "cu126"


@pytest.mark.parametrize(
    ("hardware", "request_", "reason"),
    [
        ({"gpus": ["Tesla K80"], "os": "ubuntu-22.04"}, {"cuda": "12.4"}, "CUDA 12.4"),
        ({"gpus": ["B200"], "nvswitch": True, "os": "ubuntu-22.04"}, {"kernel_modules": "proprietary"}, "open"),
        ({"gpus": ["RTX 4090"], "os": "ubuntu-22.04", "driver_version": "550.54.14"},
         {"pytorch_variant": "cu130"}, "550"),
    ],
)
def test_impossible_combinations_are_refused(tmp_path, hardware, request_, reason):
    proc, plan = run_plan(tmp_path, hardware, request_)
    assert proc.returncode != 0
    assert plan["ok"] is False
    assert any(reason in e for e in plan["errors"]), plan["errors"]
    assert "was refused" in proc.stdout


def test_bad_planning_variable_names_the_variable(tmp_path):
    proc, plan = run_plan(tmp_path, hardware=["RTX 4090"])
    assert proc.returncode != 0 and plan is None
    assert "dlbox_plan_hardware" in proc.stdout


def test_workstation_refuses_before_any_change(tmp_path):
    """workstation.yml plans first: a refused stack stops it before the roles touch the host."""
    extra = {"dlbox_plan_hardware": {"gpus": ["RTX 5090"], "os": "ubuntu-24.04"},
             "dlbox_plan_request": {"kernel_modules": "proprietary"}}
    proc = playbook("playbooks/workstation.yml", extra)
    assert proc.returncode != 0
    assert "Blackwell requires the open kernel modules" in proc.stdout
    assert "PLAY [Deep-learning workstation]" not in proc.stdout
    assert "dlbox.stack.common" not in proc.stdout


def test_several_hosts_write_one_mapping(tmp_path):
    """With several hosts in the play, the JSON maps each host to its plan."""
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(
        "all:\n  hosts:\n"
        "    lab-a: {ansible_connection: local, ansible_python_interpreter: '{{ ansible_playbook_python }}'}\n"
        "    lab-b: {ansible_connection: local, ansible_python_interpreter: '{{ ansible_playbook_python }}'}\n"
    )
    out = tmp_path / "plans.json"
    extra = {"dlbox_plan_output": str(out), "dlbox_plan_hardware": {"gpus": ["RTX 4090"], "os": "ubuntu-24.04"}}
    proc = playbook("playbooks/plan.yml", extra, "-i", str(inventory))
    assert proc.returncode == 0, proc.stdout[-3000:]
    plans = json.loads(out.read_text())
    assert sorted(plans) == ["lab-a", "lab-b"]
    assert all(p["ok"] and p["stack"]["driver"]["kernel_modules"] == "open" for p in plans.values())


def test_a_refused_host_stops_alone_and_each_host_keeps_its_own_variables(tmp_path):
    """plan.yml plans all hosts in one task: each still gets its own plan and roles from its own variables (the
    play's own vars win for all), a refused host fails alone and the others go on to the next play."""
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(
        "all:\n  vars: {ansible_connection: local, ansible_python_interpreter: '{{ ansible_playbook_python }}'}\n"
        "  hosts:\n"
        "    lab-a: {dlbox_plan_hardware: {gpus: [RTX 5090], os: ubuntu-24.04}, dlbox_plan_request: {kernel_modules: proprietary}}\n"
        "    lab-b: {dlbox_plan_hardware: {gpus: [RTX 4090], os: ubuntu-24.04}, dlbox_workstation_docker: false}\n"
        "    lab-c: {dlbox_plan_hardware: {gpus: [H100 SXM, H100 SXM, H100 SXM, H100 SXM, H100 SXM, H100 SXM, H100 SXM,"
        " H100 SXM], nvswitch: true, os: ubuntu-22.04}, dlbox_workstation_docker: true}\n"
    )
    out, roles = tmp_path / "plans.json", tmp_path / "roles.json"
    wrapper = tmp_path / "wrapper.yml"
    wrapper.write_text(
        "- name: Plan\n  ansible.builtin.import_playbook: %s/playbooks/plan.yml\n  vars:\n    dlbox_workstation_cuda: false\n"
        "- name: After the plan\n  hosts: all\n  gather_facts: false\n  tasks:\n"
        "    - name: Write what each host that goes on got\n      ansible.builtin.copy:\n"
        "        content: \"{{ dict(ansible_play_hosts | zip(ansible_play_hosts | map('extract', hostvars, 'dlbox_workstation'))) | to_json }}\"\n"
        "        dest: %s\n        mode: '0644'\n      delegate_to: localhost\n      run_once: true\n" % (ROOT, roles))
    proc = playbook(str(wrapper), {"dlbox_plan_output": str(out)}, "-i", str(inventory))
    assert proc.returncode == 2, proc.stdout[-3000:]
    plans = json.loads(out.read_text())
    assert sorted(plans) == ["lab-a", "lab-b", "lab-c"]
    assert plans["lab-a"]["ok"] is False and plans["lab-b"]["ok"] and plans["lab-c"]["ok"]
    assert plans["lab-c"]["host"]["gpu_count"] == 8 and plans["lab-b"]["host"]["gpu_count"] == 1
    assert "The stack for lab-a was refused" in proc.stdout
    assert "The stack for lab-b was refused" not in proc.stdout
    went_on = json.loads(roles.read_text())
    assert sorted(went_on) == ["lab-b", "lab-c"]
    assert went_on["lab-b"]["run"]["docker"] is False and went_on["lab-c"]["run"]["docker"] is True
    assert not went_on["lab-b"]["run"]["cuda"] and not went_on["lab-c"]["run"]["cuda"]  # the play's own variable
    assert went_on["lab-c"]["run"]["nvidia_driver"] is True


# Strict input: every kind of bad planning input is refused by plan.yml, naming the key or value, never a traceback.
BAD_PLANNING_INPUT = [
    ({"gpu": ["RTX 4090"], "os": "ubuntu-22.04", "arch": "riscv64", "driver_version": "abc"}, None,
     ["dlbox_plan_hardware: unknown key 'gpu'; did you mean 'gpus'?",
      "dlbox_plan_hardware.arch: 'riscv64' is not a machine architecture",
      "dlbox_plan_hardware.driver_version: 'abc' is not a version"]),
    ({"gpus": ["RTX 4090"], "os": "ubuntu-22.04"}, {"cuda": "12.4; rm -rf /", "pytroch": "2.9", "python": 3.10},
     ["dlbox_plan_request.cuda: '12.4; rm -rf /' is not a version",
      "dlbox_plan_request: unknown key 'pytroch'; did you mean 'pytorch'?",
      "dlbox_plan_request.python: 3.1 is a number"]),
]


@pytest.mark.parametrize(("hardware", "request_", "fragments"), BAD_PLANNING_INPUT, ids=["hardware", "request"])
def test_bad_planning_input_is_refused_naming_the_key(tmp_path, hardware, request_, fragments):
    proc, plan = run_plan(tmp_path, hardware, request_)
    assert proc.returncode != 0
    assert plan["ok"] is False
    assert all(part is None for part in plan["stack"].values())
    for fragment in fragments:
        assert any(fragment in e for e in plan["errors"]), (fragment, plan["errors"])
        assert fragment in proc.stdout
    assert "Traceback" not in proc.stdout + proc.stderr


def test_workstation_refuses_jetpack_on_x86_before_any_change(tmp_path):
    extra = {"dlbox_plan_hardware": {"gpus": ["RTX 4090"], "os": "ubuntu-24.04"},
             "dlbox_plan_request": {"jetpack": "6.2"}}
    proc = playbook("playbooks/workstation.yml", extra)
    assert proc.returncode != 0
    assert "jetpack: '6.2' was requested, but this host has discrete NVIDIA GPUs" in proc.stdout
    assert "PLAY [Deep-learning workstation]" not in proc.stdout
    assert "Traceback" not in proc.stdout + proc.stderr


def test_installed_collection_without_ansible_cfg_targets_the_inventory(tmp_path):
    """dlbox.stack.plan from the installed collection, outside this repository (no ansible.cfg), with a one-host
    inventory given as `-i name,`: no dlbox_target, no group to match; the host is planned."""
    env = ansible_env()
    env["ANSIBLE_CONFIG"] = str(tmp_path / "none.cfg")  # not there: Ansible's defaults
    extra = {"dlbox_plan_hardware": {"gpus": ["RTX 4090"], "os": "ubuntu-24.04"}}
    proc = subprocess.run(
        ["ansible-playbook", "-i", "labhost,", "-c", "local", "dlbox.stack.plan", "-e", json.dumps(extra)],
        cwd=tmp_path, env=env, capture_output=True, text=True, check=False, timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Could not match supplied host pattern" not in proc.stdout + proc.stderr
    assert "labhost" in proc.stdout and "ok=" in proc.stdout
    # The plan as text lines, not a JSON-quoted string (Ansible's default callback_result_format is json).
    assert "\nPlan for labhost: OK" in proc.stdout and "\nDriver:     R" in proc.stdout, proc.stdout
    assert '"msg": "Plan for' not in proc.stdout
    assert "Traceback" not in proc.stdout + proc.stderr
