"""nvidia-persistenced on the server profile, on the FIXTURE GPU host with Ubuntu's unit as shipped (issue 44, defects 2
and 3). Every figure is a fixture result: the daemon is the model's (tests/fixtures/gpu_host/bin/nvidia-persistenced),
the unit Ubuntu's recorded one (tests/fixtures/persistenced/)."""

import hashlib
import json
import os

import pytest

ROOT = os.environ.get("MOLECULE_PROJECT_DIRECTORY", os.path.join(os.path.dirname(__file__), "..", "..", ".."))
UBUNTU_UNIT = os.path.join(ROOT, "tests", "fixtures", "persistenced", "ubuntu-580-server-jammy.nvidia-persistenced.service")
DROPIN = "/etc/systemd/system/nvidia-persistenced.service.d/dlbox-persistence-mode.conf"


def record(host, name):
    return json.loads(host.file("/root/dlbox-persistence-%s.json" % name).content_string)


def test_run1_without_a_loaded_module_enables_but_does_not_start(host):
    run1 = record(host, "run1")
    assert run1["enabled"] == "enabled"          # the drop-in's WantedBy=multi-user.target: it starts at boot
    assert run1["active"] == "inactive"          # not started against no module
    assert run1["persistence_mode"] == "none"    # the model's daemon never ran
    assert run1["dropin"] == "yes"
    # (run 1 is converge, another ansible-playbook run: its facts are not in this record; runs 2 and 3 carry them)


def test_run2_after_the_reboot_starts_it_with_persistence_mode_on(host):
    run2 = record(host, "run2")
    assert run2["active"] == "active"
    assert "--persistence-mode" in run2["execstart"].split() and "--no-persistence-mode" not in run2["execstart"].split()
    assert run2["stopwhenunneeded"] == "no"
    assert run2["persistence_mode"] == "1"       # the model's daemon turned it on (Ubuntu's unit alone leaves it off)
    assert run2["decision"]["start"] is True


def test_run3_with_an_older_module_loaded_ends_green_without_starting_it(host):
    run3 = record(host, "run3")
    assert run3["loaded"] == "580.65.06"
    assert run3["active"] == "inactive"
    assert run3["persistence_mode"] == "none"
    assert run3["decision"]["start"] is False and run3["decision"]["message"].startswith("pending reboot")
    assert run3["driver_state"]["state"] == "pending_reboot"


def test_ubuntus_unit_is_left_as_shipped(host):
    with open(UBUNTU_UNIT, "rb") as handle:
        shipped = hashlib.sha256(handle.read()).hexdigest()
    for name in ("run1", "run2", "run3"):
        assert record(host, name)["unit_sha256"] == shipped
    assert host.file("/usr/lib/systemd/system/nvidia-persistenced.service").sha256sum == shipped


def test_the_dropin_resets_execstart_and_keeps_the_shipped_command(host):
    text = host.file(DROPIN).content_string
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    assert lines == ["[Unit]", "StopWhenUnneeded=false", "[Service]", "ExecStart=",
                     "ExecStart=/usr/bin/nvidia-persistenced --user nvidia-persistenced --persistence-mode --verbose",
                     "[Install]", "WantedBy=multi-user.target"]
    assert host.file(DROPIN).mode == 0o644


@pytest.mark.parametrize("what", ["is-enabled", "is-active"])
def test_in_the_end_the_daemon_runs_and_starts_at_boot(host, what):
    out = host.run("systemctl %s nvidia-persistenced.service" % what)
    assert out.stdout.strip() == {"is-enabled": "enabled", "is-active": "active"}[what]


@pytest.mark.parametrize("name", ["fresh", "final"])
def test_check_mode_changes_nothing(host, name):
    check = json.loads(host.file("/root/dlbox-check-%s.json" % name).content_string)
    assert check["rc"] == 0, check["tail"]
    assert check["unchanged"], check["tail"]
    if name == "final":
        assert check["changed"] == [], check["recap"]


def test_run5_persistence_mode_off_removes_the_dropin_and_its_boot_link(host):
    """nvidia_driver_persistence_mode true, then false: the drop-in's [Install] had linked the unit into
    multi-user.target.wants (run 1: enabled); without the disable that link stayed and the daemon started at every boot
    without persistence mode. Ubuntu's unit as shipped has no [Install]: systemctl says static."""
    assert record(host, "run2")["wants"] == "yes"
    run5 = record(host, "run5")
    assert run5["dropin"] == "no" and run5["wants"] == "no"
    assert run5["enabled"] == "static"
    assert run5["decision"]["disable"] is True and run5["decision"]["dropin_state"] == "absent"


def test_run6_persistence_mode_on_again_links_it_again(host):
    run6 = record(host, "run6")
    assert run6["dropin"] == "yes" and run6["wants"] == "yes" and run6["enabled"] == "enabled"
    assert run6["decision"]["disable"] is False
