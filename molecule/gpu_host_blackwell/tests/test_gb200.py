# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/server.yml on the FIXTURE GB200 NVL compute tray (a model, not a GPU and not a rack:
tests/fixtures/gpu_host/gb200 over ../hgx), planned as aarch64 on an amd64 container (the FIXTURE limitation of its
README), with the FIXTURE CUDA repository's nvidia-imex. Every result here is a fixture result. What the ROLE did is read
from the model's event log (state/events.log: the model's boots, the first nvidia-smi -q that shows the fabric
Completed, each IMEX start with the fabric state then) and from the results side_effect.yml recorded."""

import json
import os

import pytest
import testinfra.utils.ansible_runner

testinfra_hosts = testinfra.utils.ansible_runner.AnsibleRunner(os.environ["MOLECULE_INVENTORY_FILE"]).get_hosts("gb200")

EVENTS = "/opt/dlbox-fixture-gpu/state/events.log"
DRIVER = "580.95.05"


def _results(host):
    return json.loads(host.file("/root/dlbox-gb200-results.json").content_string)


def _boots(host):
    """The event log cut at each FIXTURE reboot ("reboot from boot ...", the reboot's first line): [[event, ...], ...],
    each event without its epoch; the boot's "boot <id> loaded <version>" line (written after systemd was asked to start
    the enabled units, so the boot's own IMEX start may come before it) as "driver loaded <version>"."""
    boots = []
    for line in host.file(EVENTS).content_string.splitlines():
        if line.startswith("reboot from boot "):
            boots.append([])
        elif not boots:
            continue
        elif line.startswith("boot ") and " loaded " in line:
            boots[-1].append("driver loaded " + line.rsplit(" ", 1)[-1])
        elif line.split(" ", 1)[0].isdigit():
            boots[-1].append(line.split(" ", 1)[1])
    return boots


def _order(events, *wanted):
    """The index of the first event starting with each of ``wanted``, in that order (ValueError if one is missing)."""
    return [next(i for i, e in enumerate(events) if e.startswith(w)) for w in wanted]


def test_imex_at_the_driver_version_and_no_fabric_manager_on_the_tray(host):
    assert host.check_output("dpkg-query -W -f '${Version}' nvidia-imex") == DRIVER + "-1"
    assert host.check_output("dpkg --get-selections nvidia-imex").split()[-1] == "hold"
    for name in ("nvidia-fabricmanager", "nvlsm", "libnvsdm"):
        assert host.run("dpkg-query -W -f '${db:Status-Abbrev}' %s" % name).stdout.strip() in ("", "un")
    assert host.file("/etc/nvidia-imex/nodes_config.cfg").contains("^10.136.206.48$")
    assert host.file("/etc/modprobe.d/dlbox-nvidia-imex-channel.conf").contains("NVreg_CreateImexChannel0=1")


def test_the_converge_boot_loaded_the_driver_then_the_fabric_completed_then_the_role_started_imex(host):
    boots = _boots(host)
    assert len(boots) >= 2  # the converge's FIXTURE reboot and side_effect's boot with the fabric stuck
    converge = boots[0]
    loaded, completed, imex_ok, started = _order(converge, "driver loaded " + DRIVER, "fabric Completed",
                                                 "nvidia-imex start: fabric Completed (4x Completed)", "nvidia-imex started")
    assert loaded < completed < imex_ok < started
    # no IMEX start went through before the fabric was Completed (the boot's own start, if it came first, was refused)
    assert all(e.startswith("nvidia-imex start refused") for e in converge[:completed] if e.startswith("nvidia-imex start"))


def test_imex_active_and_the_fabric_completed(host):
    assert host.service("nvidia-imex").is_running
    smi = host.check_output("nvidia-smi -q")
    assert smi.count("NVIDIA GB200") == 4 and smi.count("Completed") == 4 and "In Progress" not in smi
    assert host.check_output("nvidia-imex-ctl -q") == "READY"


def test_the_summary_shows_the_fabric_and_imex_ready(host):
    line = _results(host)["summary"]["fabric"]
    assert "fabric Completed/Success on 4 GPUs" in line and "IMEX READY" in line


def test_a_fabric_that_stays_in_progress_is_waited_for_then_fails_naming_the_switch_trays_and_imex(host):
    result = _results(host)
    message = result["fabric_stuck"]
    assert message.startswith("The NVLink fabric of this NVL compute tray")
    assert "did not come up within 10 s, so NVIDIA IMEX (nvidia-imex.service) was not started" in message
    assert "The NVLink fabric stayed In Progress for 10 s (4 GPU(s): 00000008:01:00.0" in message
    assert "the Fabric Manager of the rack's NVLink switch trays (NMX-Controller on NVOS)" in message
    assert "Check: the NVLink switch trays" in message
    assert "nvidia-imex at exactly the driver's version %s" % DRIVER in message
    assert "journalctl -u nvidia-imex" in message
    assert "nvidia-fabricmanager" not in message  # no Fabric Manager on a compute tray
    assert result["in_progress_reads"] >= 2  # the role read nvidia-smi -q again before giving up
    # the boot's own IMEX start was refused (fabric In Progress), the role's drop-in (Restart=on-failure, 10 s apart)
    # tried again and was refused again, and the role did not start it either: never active, never given up
    assert result["imex_at_stuck_boot"].startswith("activating/")
    assert result["imex_refused_at_stuck_boot"] >= 2
    assert result["imex_after_stuck_run"] == "activating"


def test_once_the_fabric_completes_imex_comes_up_on_its_own_after_it(host):
    result = _results(host)
    # issue 49 red team M4: no Ansible run between the fabric's completion and IMEX active (the drop-in's retry)
    assert result["imex_on_its_own"] == "active"
    assert result["fabric_back"] == "OK" and result["imex_back"] == "active"
    stuck = _boots(host)[-1]
    refused, completed, imex_ok, started = _order(stuck, "nvidia-imex start refused: fabric not Completed (4x In Progress)",
                                                  "fabric Completed", "nvidia-imex start: fabric Completed",
                                                  "nvidia-imex started")
    assert refused < completed < imex_ok < started


@pytest.mark.parametrize("command", ["uname -m", "dpkg --print-architecture"])
def test_the_fixture_limitation_the_container_is_amd64(host, command):
    # GB200 is aarch64 (Grace); the test machines have no arm64 emulation: the tray is planned as aarch64 in an amd64
    # container (tests/fixtures/gpu_host/gb200/README.md). Should this ever differ, that README is out of date.
    assert host.check_output(command) in ("x86_64", "amd64")
