# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/server.yml on the FIXTURE HGX B200 host (a model, not a GPU: tests/fixtures/gpu_host/blackwell over
../hgx) with the FIXTURE CUDA repository's NVLink5 packages (tests/aptrepo/specs/_cuda-nvlink5.yml). Every result here
is a fixture result."""

import json
import os

import pytest
import testinfra.utils.ansible_runner

# the HGX B200 platform only (the scenario's second platform, the GB200 tray, has test_gb200.py); none where Molecule
# runs the GB200 platform alone (-p)
testinfra_hosts = testinfra.utils.ansible_runner.AnsibleRunner(os.environ["MOLECULE_INVENTORY_FILE"]).get_hosts("b200")

EVENTS = "/opt/dlbox-fixture-gpu/state/events.log"


def _results(host):
    return json.loads(host.file("/root/dlbox-blackwell-results.json").content_string)


def _version(host, name):
    return host.check_output("dpkg-query -W -f '${Version}' %s" % name)


@pytest.mark.parametrize(("name", "version"), [
    ("nvidia-fabricmanager", "580.95.05-1"), ("libnvidia-nscq", "580.95.05-1"), ("libnvsdm", "580.95.05-1"),
    ("nvlsm", "2025.06.5-1")])
def test_fabric_packages_installed_at_the_driver_version_and_held(host, name, version):
    assert _version(host, name) == version
    assert host.check_output("dpkg --get-selections %s" % name).split()[-1] == "hold"


def test_the_driver_is_nvidias_r580_server_set(host):
    assert _version(host, "nvidia-open-580").startswith("580.95.05")


def test_nvlsm_and_ib_modules_load_at_boot(host):
    lines = host.file("/etc/modules-load.d/dlbox-nvlink5.conf").content_string.splitlines()
    assert [m.strip() for m in lines if m.strip() and not m.startswith("#")] == ["mlx5_core", "mlx5_ib", "ib_umad"]
    assert host.file("/sys/module/ib_umad").is_directory  # the model's loaded modules (tmpfs over /sys/module)


def test_nvlsm_started_before_fabric_manager_at_the_last_boot(host):
    lines = host.file(EVENTS).content_string.splitlines()
    # the HGX model's reboot writes "reboot from boot ..." first; systemd starts the unit while it finishes the boot
    last_boot = max(i for i, line in enumerate(lines) if line.startswith("reboot from boot "))
    after = [line.split(" ", 1)[1] for line in lines[last_boot + 1:] if not line.startswith(("boot ", "reboot "))]
    assert "nvlsm started" in after and "nv-fabricmanager started" in after
    assert after.index("nvlsm started") < after.index("nv-fabricmanager started")


def test_fabric_manager_active_nvlsm_running_fabric_completed(host):
    assert host.service("nvidia-fabricmanager").is_running
    assert host.run("pgrep -x nvlsm").rc == 0
    smi = host.check_output("nvidia-smi -q")
    assert "NVIDIA B200" in smi and smi.count("Completed") == 8 and "In Progress" not in smi


def test_a_companion_missing_at_the_driver_version_is_refused_before_any_change(host):
    result = _results(host)
    assert "libnvsdm at exactly the driver's version 595.71.05" in result["r595_refused"]
    assert "nvidia_driver_branch" in result["r595_refused"] and "Nothing was changed" in result["r595_refused"]
    assert result["dpkg_same"] is True


def test_a_boot_without_ib_umad_stops_fabric_manager_and_the_role_names_it(host):
    result = _results(host)
    assert result["fm_no_umad"] == "failed"
    assert result["no_ib_umad"].startswith("ib_umad not loaded")
    assert "linux-modules-extra" in result["no_ib_umad"] and "was not started" in result["no_ib_umad"]
    assert result["ib_umad_back"] == "OK"


def test_an_nvlsm_the_repository_does_not_have_is_refused_before_any_change(host):
    result = _results(host)
    assert [line.split()[:2] for line in result["nvlsm_before"]] == [["nvlsm", "2025.09.1-1"]]
    message = result["nvlsm_other"]
    assert "has nvlsm 2025.09.1-1 installed, and the repositories have nvlsm 2025.06.5-1" in message
    assert "apt-get install --allow-downgrades nvlsm=2025.06.5-1" in message and "Nothing was changed" in message
    assert result["dpkg_same_nvlsm"] is True


def test_a_fabric_that_stays_in_progress_is_waited_for_then_fails_naming_fabric_manager(host):
    result = _results(host)
    message = result["fabric_stuck"]
    assert message.startswith("NVIDIA Fabric Manager (nvidia-fabricmanager")
    assert "did not bring the NVLink fabric up within 10 s" in message
    # fabric_not_ready_hint: how long, on which GPUs, what to check
    assert "The NVLink fabric stayed In Progress for 10 s (8 GPU(s): 00000000:18:00.0" in message
    assert "Check: nvidia-fabricmanager, libnvidia-nscq, libnvsdm at exactly the driver's version 580.95.05" in message
    assert "journalctl -u nvidia-fabricmanager" in message
    assert result["in_progress_reads"] >= 2  # the checks read nvidia-smi -q again before giving up
