# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 49's red team, M6, L1 and L3 in roles/nvidia_driver's YAML, run by real Ansible (connection local):

- M6 (preflight.yml): an NVL tray whose host runs IMEX (nvidia_driver_imex_service: host) with an empty
  nvidia_driver_imex_nodes is refused naming the variable (NVIDIA IMEX guide, "Deployment Models": the node list is
  written before IMEX starts); host names are accepted from R580 (IMEX R580 logs "Treating node config entry ... as a
  host name": kubernetes-sigs/dra-driver-nvidia-gpu#1465) and refused before it; disabled IMEX or an HGX board need none.
- L1/L3 (fabric_wait.yml's rescue): the report names the plan's Fabric Manager package, and a fabric that failed at
  once (Bandwidth Degraded: tests/fixtures/fabric/EDITED-smi-q-fabric-health-degraded-bandwidth.txt, an EDITED fixture,
  SOURCES.md there) is not reported as "did not ... within 300 s"; one that stayed In Progress still is."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml
from play_runner import run_play  # tests/unit/roles/play_runner.py, beside this file

ROOT = Path(__file__).resolve().parents[3]
TASKS = ROOT / "roles" / "nvidia_driver" / "tasks"
FABRIC = ROOT / "tests" / "fixtures" / "fabric"
CHECK_VARS = "Check the IMEX variables (GB200/GB300 NVL compute trays)"
REFUSE = "Refuse an NVL tray's host IMEX without its node list (nvidia_driver_imex_nodes)"
REPORT = "Report that Fabric Manager did not bring the NVLink fabric up"
DRIVER = "580.95.05"

# host: (fabric kind, branch, nvidia_driver_imex_service, nvidia_driver_imex_nodes)
PREFLIGHT = {
    "empty_host": ("nvl", 580, "host", []),
    "empty_disabled": ("nvl", 580, "disabled", []),
    "names_r580": ("nvl", 580, "host", ["gb200-tray01.rack1", "10.136.206.48"]),
    "names_r570": ("nvl", 570, "host", ["gb200-tray01"]),
    "not_a_name": ("nvl", 580, "host", ["tray 01"]),
    "hgx_empty": ("hgx", 580, "host", []),
}


def _named(tasks, name):
    return [t for t in tasks if t.get("name") == name][0]


def _collections(tmp_path):
    collections = tmp_path / "collections" / "ansible_collections" / "dlbox"
    collections.mkdir(parents=True)
    (collections / "stack").symlink_to(ROOT, target_is_directory=True)
    return {"ANSIBLE_COLLECTIONS_PATH": str(tmp_path / "collections")}


def _by_host(out, hosts):
    return dict((name, dict((t["task"]["name"], t["hosts"][name]) for t in out["plays"][0]["tasks"] if name in t["hosts"]))
                for name in hosts)


@pytest.fixture(scope="module")
def preflight(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("preflight")
    tasks = yaml.safe_load((TASKS / "preflight.yml").read_text(encoding="utf-8"))
    hosts = dict((name, {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                         "nvidia_driver_imex_service": service, "nvidia_driver_imex_nodes": nodes,
                         "__nvidia_driver_decided": {"ok": True, "driver": {"branch": branch},
                                                     "fabric": {"kind": kind, "imex": {"nodes_config": "/etc/nvidia-imex/nodes_config.cfg"}}}})
                 for name, (kind, branch, service, nodes) in PREFLIGHT.items())
    play = {"hosts": "all", "gather_facts": False, "vars": {"nvidia_driver_imex_channel": "channel0"},
            "tasks": [_named(tasks, CHECK_VARS), _named(tasks, REFUSE)]}
    _proc, out = run_play(tmp_path, play, hosts, env=_collections(tmp_path))
    return _by_host(out, hosts), out["stats"]


def test_an_empty_node_list_with_host_imex_is_refused_naming_the_variable(preflight):
    tasks, stats = preflight
    assert stats["empty_host"]["failures"] == 1
    message = tasks["empty_host"][REFUSE]["msg"]
    assert message.startswith("nvidia_driver_imex_nodes is empty: empty_host is a GB200/GB300 NVL compute tray")
    assert "/etc/nvidia-imex/nodes_config.cfg" in message and message.endswith("Nothing was changed.")


def test_no_node_list_is_needed_with_imex_disabled_or_on_an_hgx_board(preflight):
    tasks, stats = preflight
    assert stats["empty_disabled"]["failures"] == 0 and tasks["empty_disabled"][REFUSE].get("skipped")
    assert stats["hgx_empty"]["failures"] == 0 and tasks["hgx_empty"][REFUSE].get("skipped")


def test_host_names_are_accepted_from_r580_and_refused_before(preflight):
    tasks, stats = preflight
    assert stats["names_r580"]["failures"] == 0 and not tasks["names_r580"][REFUSE].get("failed")
    assert stats["names_r570"]["failures"] == 1
    assert tasks["names_r570"][REFUSE]["msg"].startswith(
        "nvidia_driver_imex_nodes names host names (gb200-tray01): IMEX reads host names from driver R580; the planned branch is R570.")


def test_what_is_neither_an_address_nor_a_host_name_is_still_refused(preflight):
    tasks, stats = preflight
    assert stats["not_a_name"]["failures"] == 1
    assert tasks["not_a_name"][CHECK_VARS]["msg"].startswith("nvidia_driver_imex_nodes must be a list of the IPv4 or IPv6 addresses")


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("fmreport")
    degraded = (FABRIC / "EDITED-smi-q-fabric-health-degraded-bandwidth.txt").read_text(encoding="utf-8")
    stuck = (FABRIC / "smi-q-fabric-in-progress-h100.txt").read_text(encoding="utf-8")
    hosts = dict((name, {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                         "__nvidia_driver_fabric_smi": {"rc": 0, "stdout": "GPU 00000000:18:00.0\n" + text}})
                 for name, text in (("degraded", degraded), ("stuck", stuck)))
    rescue = _named(yaml.safe_load((TASKS / "fabric_wait.yml").read_text(encoding="utf-8")), "Start Fabric Manager and wait for the NVLink fabric")["rescue"]
    play = {"hosts": "all", "gather_facts": False,
            "vars": {"__nvidia_driver_fm_service": "nvidia-fabricmanager.service", "__nvidia_driver_fabric_timeout": 300,
                     "__nvidia_driver_version": DRIVER, "__nvidia_driver_fm_active": {"stdout": "active"},
                     "__nvidia_driver_fm_journal": {"stdout_lines": []}, "__nvidia_driver_nvlsm_log": "/var/log/nvlsm.log",
                     "__nvidia_driver_decided": {"fabric": {"kind": "nvswitch", "same_version": ["libnvidia-nscq-580"],
                                                            "own_version": [], "kernel_modules": []},
                                                 "fabric_manager": {"package": "nvidia-fabricmanager-580"}}},
            "tasks": [_named(rescue, REPORT)]}
    _proc, out = run_play(tmp_path, play, hosts, env=_collections(tmp_path))
    return _by_host(out, hosts)


def test_a_failed_fabric_is_reported_as_failed_not_as_a_timeout(report):
    message = report["degraded"][REPORT]["msg"]
    assert message.startswith("NVIDIA Fabric Manager (nvidia-fabricmanager.service) did not bring the NVLink fabric up "
                              "(it failed; waiting does not help)")
    assert "within 300 s" not in message
    assert "The NVLink fabric failed (waiting does not bring it up; not a timeout)" in message


def test_a_fabric_that_stayed_in_progress_is_still_a_timeout_naming_the_planned_package(report):
    message = report["stuck"][REPORT]["msg"]
    assert message.startswith("NVIDIA Fabric Manager (nvidia-fabricmanager.service) did not bring the NVLink fabric up within 300 s")
    assert "nvidia-fabricmanager-580, libnvidia-nscq-580 at exactly the driver's version %s" % DRIVER in message
