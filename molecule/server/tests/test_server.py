# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/server.yml on the FIXTURE HGX host (a model, not a GPU: tests/fixtures/gpu_host/hgx, with the settings
side of tests/fixtures/server/host from the recorded H200 capture) and FIXTURE DCGM/exporter packages."""

import json

import pytest

UNIT = "/etc/systemd/system/dlbox-gpu-settings.service"


def _results(host):
    return json.loads(host.file("/root/dlbox-server-results.json").content_string)


def _settings(host):
    return json.loads(host.file("/opt/dlbox-fixture-gpu/state/settings.json").content_string)


def test_persistence_mode_is_on_by_the_role_not_by_the_capture(host):
    """The FIXTURE persistence unit has Ubuntu's shape (--no-persistence-mode): after the model's reboot persistence mode
    is off until the role turns it on (gpu_settings_persistence_mode: true here: nvidia-smi -pm 1)."""
    assert _settings(host)["pm"] == "Enabled"
    assert "<persistence_mode>Enabled</persistence_mode>" in host.check_output("nvidia-smi -q -x")
    daemon = host.file("/opt/dlbox-fixture-gpu/state/persistence-mode")  # what the daemon itself did, if it ran
    assert not daemon.exists or daemon.content_string.strip() == "0"


def test_settings_applied_with_nvidia_smi(host):
    state = _settings(host)
    assert state["power"] == "600.00 W"
    assert state["compute"] == "Exclusive_Process"
    assert (state["ac_memory"], state["ac_graphics"]) == ("3201 MHz", "1755 MHz")
    assert state["locked"] == "1500,1980"


def test_each_setting_was_applied_once(host):
    log = host.file("/opt/dlbox-fixture-gpu/state/settings.log").content_string.splitlines()
    commands = [line.split(" ", 1)[1] for line in log]
    assert sorted(commands) == sorted(["-i 0 -pm 1", "-i 0 -pl 600", "-i 0 -lgc 1500,1980", "-i 0 -ac 3201,1755",
                                       "-i 0 -e 0", "-i 0 -c EXCLUSIVE_PROCESS"])


def test_ecc_change_is_pending_a_reboot_not_rebooted(host):
    assert _settings(host)["ecc_pending"] == "Disabled"
    xml = host.check_output("nvidia-smi -q -x")
    assert "<current_ecc>Enabled</current_ecc>" in xml and "<pending_ecc>Disabled</pending_ecc>" in xml
    assert host.file("/run/reboot-required").exists


def test_boot_unit_reapplies_all_but_ecc(host):
    unit = host.file(UNIT).content_string
    starts = [line for line in unit.splitlines() if line.startswith("ExecStart=")]
    assert starts == ["ExecStart=/usr/local/bin/nvidia-smi -i 0 " + args for args in
                      ("-pm 1", "-pl 600", "-lgc 1500,1980", "-ac 3201,1755", "-c EXCLUSIVE_PROCESS")]
    assert host.service("dlbox-gpu-settings").is_enabled


def test_boot_unit_verifies(host):
    out = host.run("systemd-analyze verify %s", UNIT)
    assert out.rc == 0, out.stderr
    assert "dlbox-gpu-settings" not in out.stderr, out.stderr


@pytest.mark.parametrize("unit", ["nvidia-persistenced.service", "nvidia-fabricmanager.service",
                                  "nvidia-mig-manager.service"])
def test_boot_unit_runs_after_the_driver_and_fabric_manager(host, unit):
    after = host.check_output("systemctl list-dependencies --after --plain --no-pager dlbox-gpu-settings.service")
    assert unit in after
    assert unit in host.check_output("systemctl show -p After --value dlbox-gpu-settings.service")


@pytest.mark.parametrize("unit", ["nvidia-dcgm.service", "nvidia-dcgm-exporter.service"])
def test_boot_unit_runs_before_dcgm_and_the_exporter(host, unit):
    before = host.check_output("systemctl list-dependencies --before --plain --no-pager dlbox-gpu-settings.service")
    assert unit in before
    assert "dlbox-gpu-settings.service" in host.check_output("systemctl show -p After --value %s" % unit)


def test_dcgm_package_for_the_drivers_cuda_major_held(host):
    pkg = host.package("datacenter-gpu-manager-4-cuda13")
    assert pkg.is_installed and pkg.version == "1:4.3.1-1"
    assert not host.package("datacenter-gpu-manager-4-cuda12").is_installed
    held = host.check_output("apt-mark showhold").split()
    assert {"datacenter-gpu-manager-4-core", "datacenter-gpu-manager-4-cuda13",
            "datacenter-gpu-manager-exporter"} <= set(held)


def test_exporter_paired_with_dcgm(host):
    assert host.package("datacenter-gpu-manager-exporter").version == "4.4.0-1"


def test_dcgm_runs_and_sees_the_gpus(host):
    assert host.service("nvidia-dcgm").is_running and host.service("nvidia-dcgm").is_enabled
    out = host.check_output("dcgmi discovery -l")
    assert "8 GPUs found." in out


def test_exporter_answers_on_the_configured_address(host):
    assert host.service("nvidia-dcgm-exporter").is_running
    metrics = host.check_output("curl -sf http://127.0.0.1:9400/metrics")
    for field in ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"):
        assert "# TYPE %s" % field in metrics
    assert host.socket("tcp://127.0.0.1:9400").is_listening
    assert not host.socket("tcp://0.0.0.0:9400").is_listening


@pytest.mark.parametrize("address", ["127.0.0.2", "other"])
def test_exporter_refuses_other_local_addresses(host, address):
    if address == "other":
        address = _results(host)["other_address"]
        assert address and not address.startswith("127.")
    out = host.run("curl -s -m 5 -o /dev/null http://%s:9400/metrics", address)
    assert out.rc == 7, (address, out.rc)  # curl: "Failed to connect" (connection refused)


def test_power_limit_above_the_maximum_refused_naming_the_variable_with_nothing_changed(host):
    results = _results(host)
    assert "gpu_settings_power_limit_w is 750 W" in results["refused"]
    assert "200-700 W" in results["refused"] and "Nothing was changed" in results["refused"]
    assert results["after_refusal"] == results["before"]


def test_check_mode_changes_nothing(host):
    results = _results(host)
    assert results["after_check"] == results["before_check"]
    assert "dlbox-config.yaml" in results["before_check"]       # the MIG files are in the snapshot


# ---------------------------------------------------------------- MIG (FIXTURE nvidia-mig-parted)

MIG_LOG = "/opt/dlbox-fixture-gpu/state/mig.log"
MIG_CONFIG = "/etc/nvidia-mig-manager/dlbox-config.yaml"


def test_mig_manager_package_installed_from_the_checked_download(host):
    assert host.package("nvidia-mig-manager").version == "0.15.0-1"
    assert host.file("/var/cache/dlbox/nvidia-mig-manager_0.15.0-1_amd64.deb").exists
    assert "FIXTURE" in host.check_output("nvidia-mig-parted version")


def test_mig_layout_applied_once_by_nvidia_mig_parted(host):
    assert "<current_mig>Enabled</current_mig>" in host.check_output("nvidia-smi -q -x")
    applies = [line.split(" ", 1)[1] for line in host.file(MIG_LOG).content_string.splitlines()]
    # converge applied it; the idempotence run asked `assert` and applied nothing; the FIXTURE boot applied it again
    assert applies[0] == "apply -f %s -c dlbox-h200 -k /etc/nvidia-mig-manager/hooks.yaml" % MIG_CONFIG
    assert len(applies) == 2
    out = host.run("nvidia-mig-parted assert -f %s -c dlbox-h200", MIG_CONFIG)
    assert out.rc == 0, out.stderr


def test_mig_layout_file_in_mig_parted_format(host):
    import yaml  # noqa: PLC0415 - testinfra's own environment has PyYAML (Molecule)
    layout = yaml.safe_load(host.file(MIG_CONFIG).content_string)
    assert layout == {"version": "v1", "mig-configs": {"dlbox-h200": [
        {"devices": "all", "mig-enabled": True, "mig-devices": {"3g.71gb": 2}}]}}


def test_mig_manager_service_reapplies_the_layout_at_boot(host):
    service = host.service("nvidia-mig-manager")
    assert service.is_enabled
    # the drop-in sorts after the package's override.conf (all-disabled): its values win
    env = host.check_output("systemctl show -p Environment --value nvidia-mig-manager.service")
    assert "MIG_PARTED_CONFIG_FILE=%s" % MIG_CONFIG in env and "MIG_PARTED_SELECTED_CONFIG=dlbox-h200" in env
    assert "all-disabled" not in env.split("MIG_PARTED_SELECTED_CONFIG=")[-1]
    assert _results(host)["mig_after_boot"] == {"0": {"devices": {"3g.71gb": 2}, "enabled": True}}


def test_mig_layout_the_gpu_cannot_take_refused_with_nothing_changed(host):
    results = _results(host)
    assert "gpu_settings_mig_config.mig-configs.too-big[0]" in results["mig_refused"]
    assert "at most 1 x 4g.71gb" in results["mig_refused"] and "Nothing was changed" in results["mig_refused"]
    assert results["after_refusal"] == results["before"]


def test_mig_switch_on_a_busy_gpu_refused_saying_how_to_drain(host):
    refused = _results(host)["busy_refused"]
    assert "runs 1 process(es) (PID 4242)" in refused and "switching MIG mode off" in refused
    assert "nvidia-smi --query-compute-apps" in refused and "Nothing was changed" in refused
    assert not host.file("/opt/dlbox-fixture-gpu/state/processes.json").exists


# ---------------------------------------------------------------- holds, InfiniBand

def test_cuda_and_cudnn_held(host):
    held = set(host.check_output("apt-mark showhold").split())
    assert {"cuda-toolkit-13-0", "cuda-nvcc-13-0", "libcudnn9-cuda-13"} <= held, held
    # nothing else of the toolkit's name pattern is left unheld
    installed = host.check_output("dpkg-query -W -f '${Package}\\n' 'cuda-*-13-0'").split()
    assert installed and set(installed) <= held


def test_infiniband_link_reported_from_ibstat(host):
    results = _results(host)
    assert len(results["ib_lines"]) == 1
    assert results["ib_lines"][0].startswith("mlx5_0/1: Initializing, LinkUp, 100 Gb/s, InfiniBand -- NOT Active")
    assert "subnet manager" in results["ib_lines"][0]
    assert results["ib_refused"].startswith("infiniband_require_active: mlx5_0/1")


# ---------------------------------------------------------------- DOCA-OFED (FIXTURE DOCA-Host repository)

DOCA_URL = "http://127.0.0.1:8089/doca/3.1.0-fixture/fixture/x86_64/"
DOCA_KEYRING = "/etc/apt/keyrings/dlbox-doca-keyring.gpg"


def test_doca_source_and_keyring(host):
    source = host.file("/etc/apt/sources.list.d/dlbox-doca.sources")
    assert source.exists and source.mode == 0o644
    lines = source.content_string.splitlines()
    assert "URIs: " + DOCA_URL in lines and "Signed-By: " + DOCA_KEYRING in lines and "Suites: /" in lines
    keyring = host.file(DOCA_KEYRING)
    assert keyring.exists and keyring.user == "root" and keyring.size > 0


def test_doca_ofed_installed_from_the_doca_repository(host):
    assert host.package("doca-ofed").version == "3.1.0-091000"
    # apt took it from the signed FIXTURE DOCA repository (an unverifiable Release would leave it out)
    policy = host.check_output("apt-cache policy doca-ofed")
    assert DOCA_URL.rstrip("/") in policy and "*** 3.1.0-091000" in policy, policy
    assert "FIXTURE" in host.file("/usr/share/doc/doca-ofed/FIXTURE-README").content_string


def test_doca_without_repository_url_refused_naming_the_variable_with_nothing_changed(host):
    results = _results(host)
    assert results["doca_refused"].startswith("infiniband_doca_repo_url is empty"), results["doca_refused"]
    assert "Nothing was changed" in results["doca_refused"]
    assert results["after_refusal"] == results["before"]
    assert "dlbox-doca.sources" in results["before"]            # the DOCA source is in the snapshot
