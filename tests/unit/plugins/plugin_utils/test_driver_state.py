# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""driver_state: loaded / pending reboot / absent, from nvidia_driver's probes and from gpu_facts' host facts."""

from __future__ import annotations

import os

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.dlbox.stack.plugins.filter.driver_state import driver_state as driver_state_filter
from ansible_collections.dlbox.stack.plugins.plugin_utils import driver_state as ds

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures")


def _read(rel):
    with open(os.path.join(FIXTURES, rel), encoding="utf-8") as handle:
        return handle.read()


# Recorded real outputs (tests/fixtures/SOURCES.md): nvidia-smi without a loaded module, and /proc of open 565.
SMI_FAILED = {"rc": 9, "stdout": _read("doctor/smi-cannot-communicate.txt").split("\n", 1)[1]}
PROC_565 = _read("doctor/proc-driver-version-open-565.txt")


def test_installed_not_loaded_is_pending_reboot_with_the_next_step():
    got = ds.from_probes("580.95.05", SMI_FAILED, "")
    assert got["state"] == "pending_reboot" and got["reboot_required"]
    assert got["installed_version"] == "580.95.05" and got["loaded_version"] is None
    assert "pending reboot" in got["message"] and "run the same command again" in got["message"]


def test_nvidia_smi_answering_the_installed_version_is_loaded():
    got = ds.from_probes("580.95.05", {"rc": 0, "stdout": "580.95.05\n580.95.05\n"}, "")
    assert got["state"] == "loaded" and not got["reboot_required"] and got["loaded_version"] == "580.95.05"


def test_an_older_module_still_loaded_is_pending_reboot():
    got = ds.from_probes("580.95.05", {"rc": 0, "stdout": "570.86.15"}, "")
    assert got["state"] == "pending_reboot" and got["loaded_version"] == "570.86.15"
    assert "570.86.15" in got["message"]


def test_proc_version_speaks_when_nvidia_smi_cannot():
    assert "565." in PROC_565
    got = ds.from_probes("580.95.05", {"rc": 18, "stdout": "Failed to initialize NVML: Driver/library version mismatch"},
                         PROC_565)
    assert got["state"] == "pending_reboot" and got["loaded_version"].startswith("565.")
    same = ds.from_probes(got["loaded_version"], {"rc": 18, "stdout": ""}, PROC_565)
    assert same["state"] == "loaded"


def test_nothing_installed_nothing_loaded_is_absent():
    assert ds.from_probes("", {}, None)["state"] == "absent"
    assert ds.from_probes(None, {"rc": 9, "stdout": ""}, "")["state"] == "absent"


@pytest.mark.parametrize("host, state", [
    ({"driver": {"present": True, "version": "535.86.05"}, "modules": {}, "probes": {"nvidia_smi": "ok"}}, "loaded"),
    ({"driver": {"present": False}, "modules": {"nvidia_version": "565.57.01"}, "probes": {"nvidia_smi": "failed rc=18"}},
     "loaded"),
    ({"driver": {"present": False, "version": None}, "modules": {"nvidia_version": None},
      "probes": {"nvidia_smi": "failed rc=9"}}, "pending_reboot"),
    ({"driver": {"present": False}, "modules": {}, "probes": {"nvidia_smi": "missing"}}, "absent"),
    ({"driver": {"present": False}, "modules": {}, "probes": {}}, "unknown"),
    ({}, "unknown"),
    (None, "unknown"),
])
def test_from_host_facts(host, state):
    assert ds.from_host(host)["state"] == state


def test_the_recorded_fact_wins_over_host_facts():
    recorded = ds.from_probes("580.95.05", SMI_FAILED, "")
    host = {"driver": {"present": False}, "modules": {}, "probes": {"nvidia_smi": "missing"}}
    assert ds.driver_state(recorded, host)["state"] == "pending_reboot"
    assert ds.driver_state({"state": "bogus"}, host)["state"] == "absent"


def test_filter_entry_points_and_bad_input():
    assert driver_state_filter(None, installed="580.95.05", smi=SMI_FAILED, proc="")["state"] == "pending_reboot"
    assert driver_state_filter(None, host={"probes": {"nvidia_smi": "missing"}})["state"] == "absent"
    with pytest.raises(AnsibleFilterError, match="nvidia_driver_state"):
        driver_state_filter("pending", host=None)
    with pytest.raises(AnsibleFilterError, match="dlbox_host"):
        driver_state_filter(None, host="x")
