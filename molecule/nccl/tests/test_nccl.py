"""dlbox.stack.nccl from the FIXTURE CUDA repository, nccl.conf decided from REAL captures.

The packages are stand-ins (tests/aptrepo): their names and +cudaX.Y build versions are NVIDIA's form,
their payload is a marker and an nccl.h with the version macros. The topologies, ACSCtl lines and
ibdev2netdev output are real captures (tests/fixtures/SOURCES.md) fed through nccl_host_captures.
"""

import json

import pytest

BUILD = "2.27.7-1+cuda12.9"  # the plan's NCCL 2.27.7 for the installed CUDA 12.6 (13.0 is the default toolkit)


def conf(host, path="/etc/nccl.conf"):
    text = host.file(path).content_string
    return text, dict(line.split("=", 1) for line in text.splitlines() if line and not line.startswith("#"))


# --- the build for the installed toolkit, held ------------------------------------------------------
@pytest.mark.parametrize("package", ["libnccl2", "libnccl-dev"])
def test_build_picked_by_the_installed_toolkit(host, package):
    assert host.package(package).version == BUILD


def test_the_repository_offered_other_builds_too(host):
    out = host.check_output("apt-cache madison libnccl2")
    assert "2.27.7-1+cuda13.0" in out and BUILD in out


@pytest.mark.parametrize("package", ["libnccl2", "libnccl-dev"])
def test_held_on_the_server_profile(host, package):
    assert host.check_output(f"dpkg --get-selections {package}").split()[-1] == "hold"


def test_header_is_the_planned_version(host):
    text = host.file("/usr/include/nccl.h").content_string
    assert "#define NCCL_MINOR 27" in text and "#define NCCL_PATCH 7" in text


def test_nccl_comes_from_the_shared_repository_unit(host):
    prefs = host.run("cat /etc/apt/preferences.d/*nccl*").stdout
    assert "libnccl2" in prefs and "libnccl-dev" in prefs


# --- nccl.conf of the converged host: the PCIe pair with ACS on -------------------------------------
def test_pcie_pair_with_acs_disables_p2p_and_says_why(host):
    text, keys = conf(host)
    assert keys["NCCL_P2P_DISABLE"] == "1"
    before = text.split("NCCL_P2P_DISABLE=1")[0].rstrip().splitlines()
    reason = " ".join(line[2:] for line in before[-6:] if line.startswith("# "))
    assert "fallback: P2P disabled because ACS is on" in reason and "GPU0<->GPU1" in reason


def test_defaults_debug_and_socket_ifname(host):
    keys = conf(host)[1]
    assert keys["NCCL_DEBUG"] == "WARN" and keys["NCCL_SOCKET_IFNAME"] == "^docker,lo"
    assert "NCCL_IB_HCA" not in keys


def test_user_key_kept_and_old_file_backed_up(host):
    keys = conf(host)[1]
    assert keys["NCCL_NSOCKS_PERTHREAD"] == "4"
    backups = host.run("ls /etc/nccl.conf.*~").stdout.split()
    assert backups and "NCCL_NSOCKS_PERTHREAD=4" in host.file(backups[0]).content_string


# --- nccl.conf of the other captured hosts (side_effect.yml) ----------------------------------------
def test_nvlink_box_keeps_p2p_on_nvlink(host):
    text, keys = conf(host, "/root/nccl-nvlink.conf")
    assert keys.get("NCCL_P2P_LEVEL") == "NVL" and "NCCL_P2P_DISABLE" not in keys
    assert "GPU0<->GPU2, GPU1<->GPU2" in text


def test_nvswitch_box_leaves_p2p_alone_despite_acs(host):
    keys = conf(host, "/root/nccl-nvswitch.conf")[1]
    assert "NCCL_P2P_DISABLE" not in keys and "NCCL_P2P_LEVEL" not in keys


def test_pcie_pair_without_acs_keeps_p2p(host):
    keys = conf(host, "/root/nccl-pcie_acs_off.conf")[1]
    assert "NCCL_P2P_DISABLE" not in keys


def test_infiniband_host_uses_the_active_hcas_with_peermem(host):
    text, keys = conf(host, "/root/nccl-infiniband.conf")
    assert keys["NCCL_IB_HCA"] == "mlx5_2,mlx5_3,mlx5_5"
    assert "mlx5_5 port 1 -> ib0" in text
    assert host.file("/etc/modules-load.d/nvidia-peermem.conf").content_string.strip().endswith("nvidia-peermem")


# --- check mode ------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["fresh", "changed_request"])
def test_check_mode_reports_and_changes_nothing(host, name):
    result = json.loads(host.file(f"/root/dlbox-check-{name}.json").content_string)
    assert result["rc"] == 0, result["tail"]
    assert result["unchanged"], result["tail"]
    assert "Write nccl.conf" in result["changed"], result


# --- refusals (side_effect.yml) ---------------------------------------------------------------------
def refusals(host):
    return {r["name"]: r for r in json.loads(host.file("/root/dlbox-refusals.json").content_string)}


@pytest.mark.parametrize("case", [
    "version_without_a_build_for_the_toolkit", "toolkit_not_installed", "driver_too_old_for_cuda_12",
    "gpu_too_old_for_cuda_13", "version_not_in_the_repository", "unknown_p2p_choice",
])
def test_refused_naming_the_variable_and_nothing_changed(host, case):
    result = refusals(host)[case]
    assert result["msg"] != "NOT REFUSED"
    for text in result["expect"]:
        assert text in result["msg"], result["msg"]
    assert result["unchanged"]
