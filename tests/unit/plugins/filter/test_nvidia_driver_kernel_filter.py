"""Filter dlbox.stack.nvidia_driver_module_check (deprecated) and the role module's persistence entry
(``'nvidia_driver' | dlbox.stack.role_module('persistence', unit_text=..., ...)``, the filter nvidia_driver_persistence
before issue 47): what the role's tasks pass in (the plan, nvidia_driver_facts' results, the unit's text) reaches plugin_utils.nvidia_driver_kernel, and bad
input is refused. Unit text: Ubuntu's, recorded (tests/fixtures/persistenced/)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.dlbox.stack.plugins.filter import nvidia_driver_kernel as f
from ansible_collections.dlbox.stack.plugins.filter.role_module import role_module

ROOT = Path(__file__).resolve().parents[4]
UBUNTU_UNIT = (ROOT / "tests" / "fixtures" / "persistenced" / "ubuntu-580-server-jammy.nvidia-persistenced.service").read_text(encoding="utf-8")
PLAN = {"signing": {"path": "precompiled"}, "build_only": False,
        "pending_reboot_reason": "The running kernel 6.8.0-31-generic has no signed NVIDIA module in the archive ..."}
BOOT = {"running": "6.8.0-31-generic", "next_boot": "7.0.0-44-generic", "boot": ["6.8.0-31-generic", "7.0.0-44-generic"]}


def test_registered_filters():
    # persistence, failure_logs, install_failure: the role module's entries (issue 47), their filters tombstoned
    assert set(f.FilterModule().filters()) == {"nvidia_driver_module_check"}


def test_module_check_takes_the_plan_and_the_boot_facts():
    assert f.nvidia_driver_module_check(PLAN, running="x", boot=BOOT)["kernels"] == ["6.8.0-31-generic", "7.0.0-44-generic"]
    modinfo = {"6.8.0-31-generic": "modinfo: ERROR: Module nvidia not found.", "7.0.0-44-generic": "580.95.05"}
    out = f.nvidia_driver_module_check(PLAN, boot=BOOT, modinfo=modinfo, expected="580.95.05")
    assert out["problems"] == [] and out["pending_reboot_reason"].startswith("pending reboot")


def test_module_check_without_boot_facts_uses_the_running_kernel():
    assert f.nvidia_driver_module_check(dict(PLAN, pending_reboot_reason=""), running="6.8.0-31-generic", boot=None)["kernels"] == \
        ["6.8.0-31-generic"]


@pytest.mark.parametrize("bad", [None, "plan", {"signing": "precompiled"}])
def test_module_check_refuses_what_is_not_a_plan(bad):
    with pytest.raises(AnsibleFilterError):
        f.nvidia_driver_module_check(bad)


def test_persistence_from_the_state_fact():
    state = {"state": "pending_reboot", "loaded_version": "575.57.08", "installed_version": "580.95.05"}
    out = role_module("nvidia_driver", "persistence", unit_text=UBUNTU_UNIT, manage=True, installed="580.95.05", state=state,
                      persistence_mode=True, unit_path="/lib/systemd/system/nvidia-persistenced.service")
    assert out["start"] is False and "575.57.08" in out["message"] and out["dropin_state"] == "present"


def test_persistence_refuses_a_state_that_is_not_a_mapping():
    with pytest.raises(AnsibleFilterError):
        role_module("nvidia_driver", "persistence", unit_text=UBUNTU_UNIT, state="loaded")
