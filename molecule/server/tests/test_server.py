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


def test_settings_applied_with_nvidia_smi(host):
    state = _settings(host)
    # the recorded H200 had persistence mode on already: nothing to set (see the next test)
    assert "pm" not in state and "<persistence_mode>Enabled</persistence_mode>" in host.check_output("nvidia-smi -q -x")
    assert state["power"] == "600.00 W"
    assert state["compute"] == "Exclusive_Process"
    assert (state["ac_memory"], state["ac_graphics"]) == ("3201 MHz", "1755 MHz")
    assert state["locked"] == "1500,1980"


def test_each_setting_was_applied_once(host):
    log = host.file("/opt/dlbox-fixture-gpu/state/settings.log").content_string.splitlines()
    commands = [line.split(" ", 1)[1] for line in log]
    assert sorted(commands) == sorted(["-i 0 -pl 600", "-i 0 -lgc 1500,1980", "-i 0 -ac 3201,1755",
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


@pytest.mark.parametrize("unit", ["nvidia-persistenced.service", "nvidia-fabricmanager.service"])
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
    assert results["after_check"] == results["before"]
