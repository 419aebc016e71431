# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GB200/GB300 NVL fabric wait of roles/nvidia_driver/tasks/fabric_blackwell_start.yml run by Ansible (connection
local) against the FIXTURE GB200 NVL tray's own nvidia-smi (tests/fixtures/gpu_host/gb200, in a temporary model folder):
IMEX's block first waits for every GPU's Fabric State Completed; a fabric the switch trays never register (state/
fabric-stuck) is read again until the wait runs out, then the rescue fails naming the switch trays' Fabric Manager and
nvidia-imex (not started), never nvidia-fabricmanager; a trained fabric goes on with nvidia_driver_fabric kept ready.
The molecule/gpu_host_blackwell GB200 platform runs the whole role (make test-heavy)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest
import yaml
from play_runner import run_play  # tests/unit/roles/play_runner.py, beside this file

ROOT = Path(__file__).resolve().parents[3]
TASKS = ROOT / "roles" / "nvidia_driver" / "tasks" / "fabric_blackwell_start.yml"
GPU_HOST = ROOT / "tests" / "fixtures" / "gpu_host"
WAIT = "Wait until the switch trays' Fabric Manager has registered every GPU (Fabric State Completed, nvidia-smi -q)"
KEEP = "Keep the fabric's state (GB200/GB300 NVL)"
REPORT = "Report that the NVLink fabric did not come up, so IMEX was not started"
DRIVER = "580.95.05"


def _block():
    """IMEX's block with its wait, the fabric kept, and the rescue's fabric report (the IMEX start tasks left out)."""
    block = [t for t in yaml.safe_load(TASKS.read_text(encoding="utf-8")) if "block" in t and
             any(b.get("name") == WAIT for b in t["block"])][0]
    names = [t.get("name") for t in block["block"]]
    assert names.index(WAIT) < names.index(KEEP) < names.index("Start IMEX (restarted when its node list changed; it reads the list at start)")
    return {"vars": block["vars"], "block": [t for t in block["block"] if t.get("name") in (WAIT, KEEP)],
            "rescue": [t for t in block["rescue"] if t.get("name") == REPORT]}


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("nvl")
    hosts = {}
    for name in ("stuck", "trained"):
        model = tmp_path / name
        (model / "bin").mkdir(parents=True)
        (model / "bin" / "hgx-lib.sh").symlink_to(GPU_HOST / "hgx" / "lib.sh")
        (model / "bin" / "hgx-nvidia-smi").symlink_to(GPU_HOST / "hgx" / "nvidia-smi")
        (model / "path").mkdir()
        (model / "path" / "nvidia-smi").symlink_to(GPU_HOST / "gb200" / "nvidia-smi")
        (model / "path" / "dpkg-query").write_text("#!/bin/sh\nexit 0\n")
        (model / "path" / "dpkg-query").chmod(0o755)
        state = model / "state"
        state.mkdir()
        (state / "module-version").write_text(DRIVER + "\n")
        (state / "fm-started-at").write_text("%d\n" % (time.time() - 60))
        if name == "stuck":
            (state / "fabric-stuck").write_text("")
        hosts[name] = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                       "stub_env": {"PATH": "%s:/usr/bin:/bin" % (model / "path"), "DLBOX_FIXTURE_HGX": str(model / "bin"),
                                    "DLBOX_FIXTURE_STATE": str(state)}}
    collections = tmp_path / "collections" / "ansible_collections" / "dlbox"
    collections.mkdir(parents=True)
    (collections / "stack").symlink_to(ROOT, target_is_directory=True)
    play = {"hosts": "all", "gather_facts": False, "environment": "{{ stub_env }}",
            "vars": {"__nvidia_driver_fabric_timeout": 3, "__nvidia_driver_fabric_delay": 1, "__nvidia_driver_version": DRIVER,
                     "__nvidia_driver_decided": {
                         "fabric": {"kind": "nvl", "same_version": ["nvidia-imex"], "own_version": [], "kernel_modules": [],
                                    "imex": {"service": "nvidia-imex.service", "nodes_config": "/etc/nvidia-imex/nodes_config.cfg"}},
                         "after": {"fabric_versions": {"nvidia-imex": DRIVER + "-1"}}}},
            "tasks": [_block()]}
    _proc, out = run_play(tmp_path, play, hosts, env={"ANSIBLE_COLLECTIONS_PATH": str(tmp_path / "collections")})
    return dict((name, dict((t["task"]["name"], t["hosts"][name]) for t in out["plays"][0]["tasks"] if name in t["hosts"]))
                for name in hosts), out["stats"]


def test_a_fabric_that_stays_in_progress_is_read_again_then_fails_naming_the_switch_trays_and_imex(ran):
    tasks, stats = ran
    assert stats["stuck"]["failures"] == 1
    assert tasks["stuck"][WAIT]["failed"] and tasks["stuck"][WAIT]["attempts"] == 3  # retries 3 // 1: read 3 times
    message = tasks["stuck"][REPORT]["msg"]
    assert message.startswith("The NVLink fabric of this NVL compute tray (stuck) did not come up within 3 s, so NVIDIA IMEX "
                              "(nvidia-imex.service) was not started: The NVLink fabric stayed In Progress for 3 s (4 GPU(s): "
                              "00000008:01:00.0")
    assert "Check: the NVLink switch trays: their Fabric Manager (NMX-Controller, with NVLSM, on NVOS)" in message
    assert "nvidia-imex at exactly the driver's version %s" % DRIVER in message
    assert "nvidia-fabricmanager" not in message
    assert KEEP not in tasks["stuck"]


def test_a_trained_fabric_goes_on_and_is_kept(ran):
    tasks, stats = ran
    assert stats["trained"]["failures"] == 0
    kept = tasks["trained"][KEEP]["ansible_facts"]["nvidia_driver_fabric"]
    assert kept["ready"] and [g["state"] for g in kept["gpus"]] == ["Completed"] * 4
    assert "nvidia-imex.service is active and the fabric is Completed on 4 GPU(s)" in kept["reason"]
    assert REPORT not in tasks["trained"]
