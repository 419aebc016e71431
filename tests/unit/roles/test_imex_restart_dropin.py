# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 49 red team M4: IMEX's own start at boot may come while the tray's NVLink fabric is still In Progress; the
packaged nvidia-imex.service has no Restart= (Base Command Manager's copy of it; AWS ParallelCluster replaces it with a
unit that adds Restart=on-failure), so after a reboot outside Ansible IMEX stayed down until the next run.
roles/nvidia_driver/tasks/fabric_blackwell.yml writes a drop-in; run here by Ansible (connection local) into a temporary
folder: the drop-in retries on failure, 10 s apart (systemd's default start limit, 5 starts within 10 s, never ends the
retries), a second run changes nothing, IMEX's enable reloads systemd when the drop-in changed, and
nvidia_driver_imex_service: disabled removes it. The FIXTURE GB200 tray (molecule/gpu_host_blackwell, heavy) boots with it."""

from __future__ import annotations

import configparser
import re
import sys
from pathlib import Path

import pytest
import yaml
from play_runner import run_play  # tests/unit/roles/play_runner.py, beside this file

ROOT = Path(__file__).resolve().parents[3]
TASKS = ROOT / "roles" / "nvidia_driver" / "tasks" / "fabric_blackwell.yml"
FOLDER = "Create the folder of IMEX's drop-ins (nvidia_driver_imex_service = host)"
DROPIN = "Retry IMEX's start until the fabric lets it (drop-in, Restart=on-failure)"
ENABLE = "Enable IMEX (nvidia_driver_imex_service = host)"
REMOVE = "Remove the role's IMEX drop-in (nvidia_driver_imex_service = disabled)"
# systemd's defaults (systemd-system.conf: DefaultStartLimitIntervalSec=10s, DefaultStartLimitBurst=5)
START_LIMIT_INTERVAL, START_LIMIT_BURST = 10, 5


def _imex_tasks():
    block = [t for t in yaml.safe_load(TASKS.read_text(encoding="utf-8")) if t.get("name") == "Configure IMEX (GB200/GB300 NVL compute tray)"]
    return dict((t["name"], t) for t in block[0]["block"])


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("imex-dropin")
    tasks = _imex_tasks()
    dropin = tmp_path / "etc" / "systemd" / "system" / "nvidia-imex.service.d" / "dlbox-restart.conf"
    common = {"__nvidia_driver_imex_dropin": str(dropin), "__nvidia_driver_facts": {"systemd": True},
              "__nvidia_driver_decided": {"after": {"fabric_installed": True}, "fabric": {"imex": {"service": "nvidia-imex.service"}}}}
    host = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    plays = []
    for service in ("host", "host", "disabled"):
        play = {"hosts": "all", "gather_facts": False, "vars": dict(common, nvidia_driver_imex_service=service),
                "tasks": [tasks[FOLDER], tasks[DROPIN], tasks[REMOVE],
                          {"name": "What the enable reloads", "ansible.builtin.debug": {"msg": tasks[ENABLE]["ansible.builtin.systemd_service"]}}]}
        _proc, out = run_play(tmp_path, play, {"tray": host})
        assert out is not None and out["stats"]["tray"]["failures"] == 0, _proc.stdout[-2000:]
        plays.append((dict((t["task"]["name"], t["hosts"]["tray"]) for t in out["plays"][0]["tasks"]),
                      dropin.read_text(encoding="utf-8") if dropin.exists() else None))
    return plays


def test_the_dropin_retries_a_failed_start_often_enough_never_to_hit_the_start_limit(ran):
    tasks, text = ran[0]
    assert tasks[DROPIN]["changed"]
    unit = configparser.ConfigParser(strict=True, interpolation=None)
    unit.read_string(text)
    assert unit["Service"]["Restart"] == "on-failure"
    seconds = int(re.fullmatch(r"(\d+)s", unit["Service"]["RestartSec"]).group(1))
    # the start limit counts starts within its interval: retries RestartSec apart stay under it
    assert seconds * (START_LIMIT_BURST - 1) > START_LIMIT_INTERVAL


def test_a_second_run_changes_nothing_and_the_enable_reloads_only_on_a_change(ran):
    first, second = ran[0][0], ran[1][0]
    assert not second[DROPIN]["changed"] and not second[FOLDER]["changed"]
    assert first["What the enable reloads"]["msg"]["daemon_reload"] is True
    assert second["What the enable reloads"]["msg"]["daemon_reload"] is False


def test_imex_left_to_the_scheduler_loses_the_dropin(ran):
    tasks, text = ran[2]
    assert tasks[DROPIN].get("skipped") and tasks[REMOVE]["changed"] and text is None
