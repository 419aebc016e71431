# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The FIXTURE HGX H100 host (a model, not a GPU: tests/fixtures/gpu_host/hgx) after converge and side_effect.yml."""

import json
import re


def _json(host, path):
    return json.loads(host.file(path).content_string)


def test_the_plan_is_the_server_profile_with_fabric_manager(host):
    plan = _json(host, "/root/dlbox-hgx-plan.json")
    assert plan["host"]["nvswitch"] is True
    assert plan["fabric_manager"] and plan["fabric_manager"]["package"].startswith("nvidia-fabricmanager")
    assert plan["driver"]["profile"] == "server"


def test_driver_and_fabric_manager_came_in_one_apt_transaction(host):
    history = host.file("/var/log/apt/history.log").content_string
    transactions = [t for t in history.split("\n\n") if "nvidia-fabricmanager" in t]
    assert len(transactions) == 1, transactions
    one = transactions[0]
    # apt-get ... --no-remove (fail_on_autoremove) install <driver set> nvidia-fabricmanager=<version>: one command
    assert re.search(r"Commandline: .* --no-remove install .*nvidia-open-580=580\.95\.05\S* "
                     r".*nvidia-fabricmanager=580\.95\.05-1 libnvidia-nscq=580\.95\.05-1", one), one
    assert "nvidia-fabricmanager:amd64 (580.95.05-1)" in one and "nvidia-dkms-580-open:amd64 (580.95.05" in one
    assert "libnvidia-nscq:amd64 (580.95.05-1)" in one   # NVSwitch telemetry at the driver's version (fabric_manager.nscq)
    assert "Remove:" not in one
    assert host.package("nvidia-fabricmanager").version == "580.95.05-1"
    assert host.package("libnvidia-nscq").version == "580.95.05-1"


def test_the_role_enabled_fabric_manager_and_did_not_start_it_without_the_module(host):
    """Run 1 had no module loaded: the role enables Fabric Manager for the next boot and does not start it (the FIXTURE
    nv-fabricmanager, Type=forking, would fail the start with NV_WARN_NOTHING_TO_DO, as the real one does)."""
    assert host.service("nvidia-fabricmanager").is_enabled
    results = _json(host, "/root/dlbox-hgx-results.json")
    assert results["fm_after_persistenced"] == "inactive", results["fm_after_persistenced"]


def test_cuda_before_fabric_manager_fails_with_802_naming_it(host):
    msg = _json(host, "/root/dlbox-hgx-results.json")["cuda_before_fm"]["msg"]
    assert "system not yet initialized" in msg and "802" in msg
    assert "Fabric Manager" in msg and "nvidia-fabricmanager" in msg


def test_the_role_started_fabric_manager_after_the_module_and_waited_for_completed(host):
    results = _json(host, "/root/dlbox-hgx-results.json")
    assert results["role_module_loaded"]["msg"] == "OK"
    assert results["fm_after_role"] == "active"
    *polls, started = results["smi_log"]
    states = [line.split(" ", 1)[1] for line in polls]
    # it polled while In Progress and stopped only once Completed: it did not return early
    assert "In Progress" in states and states[-1] == "Completed", states
    assert states.index("Completed") == len(states) - 1
    last_poll = int(polls[-1].split(" ", 1)[0])
    assert last_poll - int(started) >= 15  # the FIXTURE fabric trains for 15 s after Fabric Manager starts


def test_cuda_passes_once_the_fabric_is_completed(host):
    assert _json(host, "/root/dlbox-hgx-results.json")["cuda_after_fm"]["msg"] == "OK"


def test_a_fabric_stuck_in_progress_fails_naming_fabric_manager_with_its_journal(host):
    results = _json(host, "/root/dlbox-hgx-results.json")
    stuck = results["role_fabric_stuck"]
    assert "Fabric Manager" in stuck["msg"] and "In Progress" in stuck["msg"]
    assert "journalctl -u nvidia-fabricmanager" in stuck["msg"] and "NVSwitches" in stuck["msg"]
    assert stuck["seconds"] >= 20
    assert len(results["stuck_log"]) >= 4 and all(line.endswith("In Progress") for line in results["stuck_log"])


def test_a_fabric_completed_with_degraded_bandwidth_is_not_ready(host):
    degraded = _json(host, "/root/dlbox-hgx-results.json")["role_fabric_degraded"]
    assert degraded["msg"] != "OK" and "Fabric Manager" in degraded["msg"], degraded
    assert "Degraded" in degraded["msg"] or "bandwidth" in degraded["msg"].lower(), degraded


def test_check_mode_on_the_fresh_host_reports_and_claims_nothing(host):
    check = _json(host, "/root/dlbox-check-fresh.json")
    assert check["rc"] == 0, check["tail"]
    assert check["unchanged"], "check mode changed the host"
    # the only change reported is the install check mode would make; no install, no enabled service claimed
    assert [c for c in check["changed"] if "would" not in c] == [] or all(
        not re.search(r"Install the driver|Enable Fabric Manager|Start Fabric Manager", c) for c in check["changed"])
    assert any("would make" in c for c in check["changed"]), check["changed"]
