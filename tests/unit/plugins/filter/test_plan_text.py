"""dlbox.stack.plan_text renders resolver plans readably."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.dlbox.stack.plugins.filter.stack import plan_text, resolve_stack, workstation_roles


def _line(lines, prefix):
    found = [line for line in lines if line.startswith(prefix)]
    assert len(found) == 1, lines
    return found[0]


def test_cpu_only_plan_says_so():
    plan = resolve_stack({"arch": "x86_64", "os": {"key": "debian-12"}, "gpus": []}, {})
    lines = plan_text(plan, "box")
    assert lines[0].startswith("Plan for box: OK")
    assert "no NVIDIA GPU" in _line(lines, "Hardware:")
    assert _line(lines, "Driver:") == "Driver:     -"
    assert " cpu from https://download.pytorch.org/whl/cpu" in _line(lines, "PyTorch:")
    assert any("No NVIDIA GPU was found" in line for line in lines)


def test_nvswitch_server_plan_lists_fabric_manager():
    plan = resolve_stack({}, {}, {"gpus": ["H100 SXM"] * 8, "nvswitch": True, "os": "ubuntu-22.04"})
    lines = plan_text(plan)
    assert "8x NVIDIA H100 80GB HBM3 (Hopper, CC 9.0)" in _line(lines, "Hardware:")
    assert "NVSwitch" in _line(lines, "Hardware:")
    assert "open kernel modules" in _line(lines, "Driver:")
    branch = plan["stack"]["driver"]["branch"]  # the archive's newest LTSB (R620 since the 2026-12-06 refresh)
    assert _line(lines, "Fabric Mgr:").startswith("Fabric Mgr: nvidia-fabricmanager-%s " % branch)


@pytest.mark.parametrize(
    ("hardware", "request_", "reason"),
    [
        ({"gpus": ["RTX 5090"], "os": "ubuntu-24.04"}, {"kernel_modules": "proprietary"}, "open"),
        ({"gpus": ["RTX 5090"], "os": "ubuntu-24.04"}, {"pytorch": "2.6"}, "PyTorch 2.6 has no build for compute capability 12.0"),
    ],
)
def test_refused_plan_shows_reasons(hardware, request_, reason):
    lines = plan_text(resolve_stack({}, request_, hardware))
    assert "REFUSED" in lines[0]
    start = lines.index("Refused because:")
    assert any(reason in line for line in lines[start + 1:])


def test_rejects_something_that_is_not_a_plan():
    with pytest.raises(AnsibleFilterError, match="expected the result"):
        plan_text({"ok": True})


# --- what workstation.yml will do, the CUDA split, end-of-life wording, refusals (issue 21) ---------------

def _role_lines(lines):
    start = lines.index("workstation.yml on this host:")
    return {line.split()[0]: line for line in lines[start + 1:] if line.startswith("  ") and not line.startswith("  - ")}


def test_gpu_plan_has_docker_and_toolkit_lines():
    plan = resolve_stack({}, {}, {"gpus": ["RTX 4090"], "os": "ubuntu-22.04"})
    lines = plan_text(plan, "box", roles=workstation_roles(plan, {}))
    assert _line(lines, "Docker:") == "Docker:     for GPU containers, >= %s for CDI devices" % plan["stack"]["container_toolkit"]["docker_cdi_min"]
    assert _line(lines, "Toolkit:") == "Toolkit:    NVIDIA Container Toolkit %s (>= %s)" % (
        plan["stack"]["container_toolkit"]["version"], plan["stack"]["container_toolkit"]["min_version"])
    roles = _role_lines(lines)
    assert list(roles) == ["common", "nvidia_driver", "cuda", "cudnn", "nccl", "docker", "nvidia_container_toolkit", "python_env"]
    assert " runs " in roles["docker"] and " runs " in roles["nvidia_container_toolkit"]
    assert "skipped  NCCL is planned for two or more GPUs" in roles["nccl"]
    assert "kernel headers (for the driver's DKMS module)" in roles["common"]


def test_cpu_only_plan_builds_the_cpu_frameworks_by_default_and_matches_the_playbook():
    """Issue 45 (the CPU default a newcomer meets): the CPU PyTorch the plan prints is what make workstation builds."""
    plan = resolve_stack({"arch": "x86_64", "os": {"key": "debian-12"}, "gpus": []}, {})
    decided = workstation_roles(plan, {})
    lines = plan_text(plan, "box", roles=decided)
    assert _line(lines, "Docker:") == "Docker:     -" and _line(lines, "Toolkit:") == "Toolkit:    -"
    assert "not installed" not in _line(lines, "PyTorch:")
    roles = _role_lines(lines)
    assert ("runs     virtualenvs for PyTorch 2.15.0 cpu; no NVIDIA GPU on this host: the CPU build "
            "(-e dlbox_install_python_env=false skips it)") in roles["python_env"]
    assert decided["run"]["python_env"] is True            # the playbook follows the same decision
    assert "no kernel headers (no driver to build)" in roles["common"] and decided["kernel_headers"] is False
    for role in ("nvidia_driver", "cuda", "cudnn", "nccl", "docker", "nvidia_container_toolkit"):
        assert decided["run"][role] is False, role
    # with the switch off, the plan says so, and the PyTorch line says it is not installed
    off = workstation_roles(plan, {"python_env": "false"})
    lines = plan_text(plan, "box", roles=off)
    assert off["run"]["python_env"] is False
    assert "skipped  -e dlbox_install_python_env=false" in _role_lines(lines)["python_env"]
    assert "(not installed by workstation.yml here: see python_env below)" in _line(lines, "PyTorch:")


def test_cpu_only_plan_without_a_framework_skips_python_env():
    plan = resolve_stack({"arch": "x86_64", "os": {"key": "debian-12"}, "gpus": []}, {"pytorch": "none"})
    decided = workstation_roles(plan, {})
    assert decided["run"]["python_env"] is False
    assert next(r for r in decided["roles"] if r["role"] == "python_env")["why"] == "no framework in the plan"


def test_cuda_split_line_says_why_the_toolkit_and_pytorch_differ():
    # R580 named: its CUDA 13.0 differs from PyTorch's wheels (R620, the default since the 2026-12-06 refresh, plans 13.2 = theirs)
    plan = resolve_stack({}, {"driver_branch": "580"}, {"gpus": ["RTX 4090"], "os": "ubuntu-22.04"})
    system, theirs = plan["stack"]["cuda"]["version"], plan["stack"]["pytorch"]["cuda"]
    assert system != theirs
    line = _line(plan_text(plan), "CUDA split:")
    assert "CUDA %s is the system toolkit" % system in line
    assert "PyTorch's %s wheels bring their own CUDA %s runtime" % (plan["stack"]["pytorch"]["variant"], theirs) in line
    assert "minor-version compatibility" in line


def test_no_cuda_split_line_without_a_difference():
    plan = resolve_stack({"arch": "x86_64", "os": {"key": "debian-12"}, "gpus": []}, {})
    assert not [line for line in plan_text(plan) if line.startswith("CUDA split:")]


def test_gtx1080ti_eol_warning_has_the_branch_date_and_the_method_that_exists():
    # driver_method: distro named: without it Debian 12's end-of-life R535 sends the plan to NVIDIA's repository (issue 44)
    plan = resolve_stack({}, {"driver_method": "distro"}, {"gpus": ["GTX 1080 Ti"], "os": "debian-12"})
    lines = plan_text(plan)
    warning = [line for line in lines if "R535" in line and "end-of-life" in line]
    assert len(warning) == 1, lines
    assert "end-of-life since %s" % plan["stack"]["driver"]["eol"] in warning[0]
    assert plan["data_date"] not in warning[0]
    assert "newest that supports" not in warning[0]
    assert "driver_method: nvidia_repo installs R580" in warning[0]
    other = resolve_stack({}, {"driver_method": "nvidia_repo"}, {"gpus": ["GTX 1080 Ti"], "os": "debian-12"})
    assert other["stack"]["driver"]["branch"] == 580          # the advice holds


def test_the_plan_text_says_why_the_driver_comes_from_nvidia_repo():
    """No driver_method named, Debian 12's archive has only R535 (end of life): the Source line gives the reason."""
    lines = plan_text(resolve_stack({}, {}, {"gpus": ["GTX 1080 Ti"], "os": "debian-12"}))
    source = _line(lines, "Source:")
    assert source.startswith("Source:     nvidia_repo: debian-12's own archive has no supported driver branch")
    assert "R535, is end-of-life since" in source and "NVIDIA's repository has R580" in source


def test_refusal_is_printed_once_without_a_hardware_line():
    plan = resolve_stack({"arch": "x86_64", "os": {"key": "debian-12"}, "gpus": []}, {"gpu": 1})
    lines = plan_text(plan, "box")
    assert lines[0].startswith("Plan for box: REFUSED")
    assert not [line for line in lines if line.startswith(("Hardware:", "Driver:", "PyTorch:"))]
    text = "\n".join(lines)
    assert text.count("unknown key 'gpu'") == 1


def test_bad_switch_names_the_variable():
    plan = resolve_stack({"arch": "x86_64", "os": {"key": "debian-12"}, "gpus": []}, {})
    with pytest.raises(AnsibleFilterError, match="dlbox_install_cuda must be true or false"):
        workstation_roles(plan, {"cuda": "maybe"})
    with pytest.raises(AnsibleFilterError, match="unknown workstation switch dlbox_install_gpu"):
        workstation_roles(plan, {"gpu": True})


# --- the driver profile and set, the source of a branch, Jetson (issues 24, 25) ----------------------------

def test_nvswitch_plan_text_shows_the_server_profile_and_its_packages():
    plan = resolve_stack({}, {}, {"gpus": ["H100 SXM"] * 8, "nvswitch": True, "os": "ubuntu-22.04"})
    line = _line(plan_text(plan), "Driver:")
    assert ", server profile (NVSwitch host: ubuntu-22.04's Fabric Manager depends on the server driver series" in line
    branch = plan["stack"]["driver"]["branch"]
    assert line.endswith("[nvidia-headless-%s-server-open, nvidia-utils-%s-server]" % (branch, branch))


def test_transitional_branch_plan_text_says_where_it_comes_from():
    plan = resolve_stack({}, {"driver_branch": "535"}, {"gpus": ["RTX 4090"], "os": "ubuntu-22.04"})
    line = _line(plan_text(plan), "Source:")
    assert line.startswith("Source:     nvidia_repo: the archive's nvidia-driver-535")
    assert "is a transitional package that installs nvidia-driver-580" in line


@pytest.mark.parametrize("switches", [{}, {"cuda": True, "cudnn": True, "nccl": True}])
def test_jetson_plan_runs_no_role_that_uses_the_x86_or_sbsa_repositories(switches):
    plan = resolve_stack({}, {}, {"gpus": ["Jetson AGX Orin"]})
    assert plan["stack"]["jetpack"] and plan["stack"]["cuda"]  # JetPack's CUDA is planned ...
    decided = workstation_roles(plan, switches)
    for role in ("cuda", "cudnn", "nccl"):  # ... but not installed from NVIDIA's x86_64/sbsa repository
        assert decided["run"][role] is False
    lines = plan_text(plan, "orin", roles=decided)
    roles = _role_lines(lines)
    assert "skipped  Jetson (L4T): JetPack 6.2.3 brings CUDA 12.6 from NVIDIA's Jetson repository" in roles["cuda"]
    assert "must never go onto an L4T system" in roles["cudnn"] and "must never go onto an L4T system" in roles["nccl"]
    assert " skipped " in roles["nvidia_driver"]
