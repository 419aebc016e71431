# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""IMEX channel 0 and the host IMEX service (issue 49, red team H1/H2), run by real Ansible (connection local):
roles/nvidia_driver/tasks/fabric_blackwell.yml's IMEX block, reboot.yml's driver-state record and the tail of
fabric_blackwell_start.yml, with the modprobe file and the channel device in a temporary folder.

- NVreg_CreateImexChannel0=1 acts only when the nvidia module loads (NVIDIA IMEX guide, "IMEX Channels": no channel
  exists by default; CUDA's calls fail with CUDA_ERROR_NOT_PERMITTED without one, NVIDIA/nvbandwidth#39): a module loaded
  before the option was written (a cloud image with the driver preloaded) leaves a pending reboot, and the check after
  the boot fails naming the device when it is still missing.
- nvidia_driver_imex_service: disabled (Kubernetes DRA ComputeDomains: systemctl disable --now and mask
  nvidia-imex.service, NVIDIA/cloud-native-docs#453 and #502) stops, disables and masks the unit, never starts IMEX, and
  the summary's IMEX state says so."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml
from play_runner import run_play  # tests/unit/roles/play_runner.py, beside this file

ROOT = Path(__file__).resolve().parents[3]
TASKS = ROOT / "roles" / "nvidia_driver" / "tasks"
DRIVER = "580.95.05"
PENDING = "Record that IMEX channel 0 needs the nvidia module loaded again (pending reboot)"
RECORD = "Record the driver state (and whether a reboot is needed) for the roles after this one"
CHECK = "Check that IMEX channel 0 exists (nvidia_driver_imex_channel = channel0)"
DISABLED = "Say that IMEX is left to Kubernetes DRA or the scheduler (nvidia_driver_imex_service = disabled)"
MASK = "Stop, disable and mask IMEX (nvidia_driver_imex_service = disabled)"
START = "Start IMEX once the module is loaded and wait for it (GB200/GB300 NVL)"


def _load(name):
    return yaml.safe_load((TASKS / name).read_text(encoding="utf-8"))


def _named(tasks, name):
    return [t for t in tasks if t.get("name") == name][0]


# host: (module loaded at the play's start, channel device present, phase, imex service)
HOSTS = {
    "preloaded": (DRIVER, False, "before", "host"),  # cloud image: module loaded before the option was written
    "fresh": ("", False, "before", "host"),  # module not loaded yet: it loads with the option at the next boot
    "has_channel": (DRIVER, True, "before", "host"),
    "booted_missing": (DRIVER, False, "after", "host"),  # after the boot, still no channel 0
    "booted_present": (DRIVER, True, "after", "host"),
    "dra": (DRIVER, True, "after", "disabled"),
}


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("imexch")
    hosts = {}
    for name, (loaded, present, phase, service) in HOSTS.items():
        folder = tmp_path / name
        folder.mkdir()
        if present:
            (folder / "channel0").write_text("")
        hosts[name] = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable, "phase": phase,
                       "loaded": loaded, "nvidia_driver_imex_service": service,
                       "__nvidia_driver_imex_channel_device": str(folder / "channel0"),
                       "__nvidia_driver_imex_modprobe_file": str(folder / "dlbox-nvidia-imex-channel.conf")}
        if phase == "after":
            hosts[name]["nvidia_driver_reboot_required"] = False
    collections = tmp_path / "collections" / "ansible_collections" / "dlbox"
    collections.mkdir(parents=True)
    (collections / "stack").symlink_to(ROOT, target_is_directory=True)
    imex_block = [t for t in _load("fabric_blackwell.yml") if t.get("name") == "Configure IMEX (GB200/GB300 NVL compute tray)"][0]
    start = _load("fabric_blackwell_start.yml")
    tail = start[[t.get("name") for t in start].index(START) + 1:]
    play = {"hosts": "all", "gather_facts": False,
            "vars": {"__nvidia_driver_version": DRIVER, "__nvidia_driver_fm_loaded": DRIVER, "nvidia_driver_imex_nodes": [],
                     "nvidia_driver_imex_channel": "channel0", "__nvidia_driver_facts": {"systemd": False},
                     "__nvidia_driver_smi_now": {"rc": 0, "stdout": DRIVER, "stdout_lines": [DRIVER]},
                     "__nvidia_driver_proc_now": {},
                     "__nvidia_driver_decided": {
                         "packages_only": False, "after": {"fabric_installed": False},
                         "fabric": {"kind": "nvl", "kernel_modules": [],
                                    "imex": {"service": "nvidia-imex.service", "nodes_config": str(tmp_path / "nodes_config.cfg")}}}},
            "tasks": [{"name": "The host's facts at the play's start (dlbox.stack.gpu_facts)",
                       "ansible.builtin.set_fact": {"dlbox_host": {"modules": {"nvidia_version": "{{ loaded }}"}}, "cacheable": True}},
                      {"name": "Before the boot", "when": "phase == 'before'",
                       "block": [imex_block, _named(_load("reboot.yml"), RECORD)]}] + tail}
    _proc, out = run_play(tmp_path, play, hosts, env={"ANSIBLE_COLLECTIONS_PATH": str(tmp_path / "collections")})
    return dict((name, dict((t["task"]["name"], t["hosts"][name]) for t in out["plays"][0]["tasks"] if name in t["hosts"]))
                for name in hosts), out["stats"], tmp_path


def test_a_module_loaded_before_the_option_leaves_channel0_as_a_pending_reboot(ran):
    tasks, stats, tmp_path = ran
    assert stats["preloaded"]["failures"] == 0
    assert "options nvidia NVreg_CreateImexChannel0=1" in (tmp_path / "preloaded" / "dlbox-nvidia-imex-channel.conf").read_text()
    assert tasks["preloaded"][PENDING]["ansible_facts"]["__nvidia_driver_imex_channel_pending"] is True
    assert tasks["preloaded"][RECORD]["ansible_facts"]["nvidia_driver_reboot_required"] is True
    assert tasks["preloaded"][CHECK].get("skipped")  # checked after the boot, not while it is pending


def test_no_pending_reboot_when_the_module_is_not_loaded_or_the_channel_exists(ran):
    tasks, stats, _tmp = ran
    for name in ("fresh", "has_channel"):
        assert tasks[name][PENDING].get("skipped"), name
        assert tasks[name][RECORD]["ansible_facts"]["nvidia_driver_reboot_required"] is False, name
    assert stats["has_channel"]["failures"] == 0 and not tasks["has_channel"][CHECK].get("failed")


def test_after_the_boot_a_missing_channel0_fails_naming_the_device(ran):
    tasks, stats, tmp_path = ran
    assert stats["booted_missing"]["failures"] == 1
    message = tasks["booted_missing"][CHECK]["msg"]
    assert message.startswith("IMEX channel 0 (%s) does not exist on booted_missing" % (tmp_path / "booted_missing" / "channel0"))
    assert "CUDA_ERROR_NOT_PERMITTED" in message
    assert stats["booted_present"]["failures"] == 0 and not tasks["booted_present"][CHECK].get("failed")


def test_host_imex_disabled_is_said_in_the_summary_and_the_unit_is_masked(ran):
    tasks, stats, _tmp = ran
    assert stats["dra"]["failures"] == 0
    kept = tasks["dra"][DISABLED]["ansible_facts"]["nvidia_driver_imex"]
    assert kept["daemon"] == "disabled" and not kept["ready"]
    assert kept["reason"].startswith("nvidia-imex.service masked (nvidia_driver_imex_service: disabled)")
    assert tasks["booted_present"][DISABLED].get("skipped")
    mask = _named(_named(_load("fabric_blackwell.yml"), "Configure IMEX (GB200/GB300 NVL compute tray)")["block"], MASK)
    want = {"name": "{{ __nvidia_driver_decided.fabric.imex.service }}", "state": "stopped", "enabled": False, "masked": True}
    assert mask["ansible.builtin.systemd_service"] == want
    assert "nvidia_driver_imex_service == 'disabled'" in mask["when"]
    assert "nvidia_driver_imex_service == 'host'" in _named(_load("fabric_blackwell_start.yml"), START)["when"]
