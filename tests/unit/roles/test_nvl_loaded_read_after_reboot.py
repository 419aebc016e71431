# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 49, gb200-run-0028: the FIXTURE GB200 tray's converge (server.yml, the FIXTURE reboot, server.yml in ONE
ansible-playbook run) skipped IMEX's whole block in its second server.yml, and the idempotence run started IMEX. The
tray is a packages-only host (no reboot.yml, so no nvidia_driver_loaded_version), preflight.yml's gpu_facts runs only
where no dlbox_host facts are there yet, and the facts of the first server.yml said no module loaded. Run here by
Ansible (connection local): gpu_facts reads a model root with no module, the "reboot" lays its
/proc/driver/nvidia/version, preflight's detection is skipped (the stale facts stay), then
roles/nvidia_driver/tasks/fabric_blackwell_start.yml's read and IMEX's block's own conditions: the block must run."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml
from play_runner import run_play  # tests/unit/roles/play_runner.py, beside this file

ROOT = Path(__file__).resolve().parents[3]
TASKS = ROOT / "roles" / "nvidia_driver" / "tasks"
DRIVER = "580.95.05"
DETECT = "Detect GPUs, Secure Boot and containers"
READ = "Read the version of the loaded module again where this run has not (dlbox.stack.gpu_facts, /proc/driver/nvidia/version)"
IMEX_BLOCK = "Start IMEX once the module is loaded and wait for it (GB200/GB300 NVL)"
# /proc/driver/nvidia/version as the FIXTURE HGX model lays it (tests/fixtures/gpu_host/hgx/nvidia-persistenced)
PROC = ("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  %s  Release Build  (FIXTURE@dlbox)  Thu Jan  1 00:00:00 UTC 2026\n"
        "GCC version:  gcc version 13.3.0 (Ubuntu 13.3.0-6ubuntu2~24.04)\n" % DRIVER)


def _task(name, file_name):
    found = [t for t in yaml.safe_load((TASKS / file_name).read_text(encoding="utf-8")) if t.get("name") == name]
    assert len(found) == 1, name
    return found[0]


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("nvl-reboot")
    model = tmp_path / "model"
    (model / "proc").mkdir(parents=True)
    (tmp_path / "path").mkdir()  # no nvidia-smi: the reading is /proc's
    collections = tmp_path / "collections" / "ansible_collections" / "dlbox"
    collections.mkdir(parents=True)
    (collections / "stack").symlink_to(ROOT, target_is_directory=True)
    block = _task(IMEX_BLOCK, "fabric_blackwell_start.yml")
    play = {"hosts": "all", "gather_facts": False, "environment": {"PATH": "%s:/usr/bin:/bin" % (tmp_path / "path")},
            "vars_files": [str(ROOT / "roles" / "nvidia_driver" / "vars" / "main.yml")],
            "vars": {"__nvidia_driver_version": DRIVER, "nvidia_driver_imex_service": "host",
                     "__nvidia_driver_facts": {"systemd": True},
                     "__nvidia_driver_decided": {"packages_only": True, "build_only": False, "after": {"fabric_installed": True},
                                                 "fabric": {"kind": "nvl", "kernel_modules": [],
                                                            "imex": {"service": "nvidia-imex.service"}}}},
            "tasks": []}
    play["tasks"] = [
        {"name": "First server.yml: the facts before the reboot (no module loaded)",
         "dlbox.stack.gpu_facts": {"root": str(model)}},
        {"name": "The reboot loads the module", "ansible.builtin.copy": {
            "dest": str(model / "proc" / "driver" / "nvidia" / "version"), "content": PROC, "mode": "0644"}},
        _task(DETECT, "preflight.yml"),
        {"name": "Loaded before the read", "ansible.builtin.debug": {"msg": "{{ __nvidia_driver_fm_loaded }}"}},
        _task(READ, "fabric_blackwell_start.yml"),
        {"name": "Loaded after the read", "ansible.builtin.debug": {"msg": "{{ __nvidia_driver_fm_loaded }}"}},
        {"name": "IMEX's block runs", "ansible.builtin.debug": {"msg": "runs"}, "when": block["when"]},
    ]
    # the module's folder must be there before copy writes the file in it
    (model / "proc" / "driver" / "nvidia").mkdir(parents=True)
    proc, out = run_play(tmp_path, play, {"tray": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}},
                         env={"ANSIBLE_COLLECTIONS_PATH": str(tmp_path / "collections")})
    assert out is not None, proc.stderr
    return dict((t["task"]["name"], t["hosts"]["tray"]) for t in out["plays"][0]["tasks"]), out["stats"]["tray"]


def test_the_facts_of_before_the_reboot_are_kept_by_preflight(ran):
    tasks, stats = ran
    assert stats["failures"] == 0
    assert tasks[DETECT].get("skipped")
    assert tasks["Loaded before the read"]["msg"] == ""


def test_the_start_reads_the_loaded_module_again_and_imex_block_runs(ran):
    tasks, _stats = ran
    assert not tasks[READ].get("skipped")
    assert tasks[READ]["ansible_facts"]["dlbox_host"]["modules"]["nvidia_version"] == DRIVER
    assert tasks["Loaded after the read"]["msg"] == DRIVER
    assert not tasks["IMEX's block runs"].get("skipped")
