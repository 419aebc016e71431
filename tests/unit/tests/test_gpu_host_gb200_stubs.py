# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The FIXTURE GB200 NVL compute tray's stubs (tests/fixtures/gpu_host/gb200, README.md there with the sources), run
themselves in a temporary model folder: nvidia-smi shows the tray's 4 GB200 GPUs at their recorded addresses, In Progress
until the switch trays' Fabric Manager (state/fm-started-at, written by the model's reboot) has trained the fabric, and
logs "fabric Completed" once a boot; IMEX's start check records each start and refuses until the fabric is Completed;
nvidia-imex-ctl answers the recorded READY and one-node domain only while nvidia-imex is active. What the role reads of
them is read with the role's own parsers (fabric_state.verdict, imex_ctl.verdict)."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
import yaml

from ansible_collections.dlbox.stack.plugins.plugin_utils import fabric_state as fs
from ansible_collections.dlbox.stack.plugins.plugin_utils import imex_ctl

ROOT = Path(__file__).resolve().parents[3]
GB200 = ROOT / "tests" / "fixtures" / "gpu_host" / "gb200"
HGX = GB200.parent / "hgx"
IMEX_RECORD = ROOT / "tests" / "fixtures" / "imex" / "imex-ctl-q-N-s-1-node-gh200-dra-repro.txt"
DRIVER = "580.95.05"
BUSES = ["00000008:01:00.0", "00000009:01:00.0", "00000018:01:00.0", "00000019:01:00.0"]


@pytest.fixture
def model(tmp_path):
    """A model folder: the HGX model's nvidia-smi and lib as installed, a state folder with the module loaded and a boot
    in the event log, nvidia-smi on PATH, a dpkg-query with no driver installed and a systemctl answering state/imex."""
    lib = tmp_path / "bin"
    lib.mkdir()
    (lib / "hgx-lib.sh").symlink_to(HGX / "lib.sh")
    (lib / "hgx-nvidia-smi").symlink_to(HGX / "nvidia-smi")
    path = tmp_path / "path"
    path.mkdir()
    (path / "nvidia-smi").symlink_to(GB200 / "nvidia-smi")
    for name, body in (("dpkg-query", "exit 0"),
                       ("systemctl", '[ "$(cat "$DLBOX_FIXTURE_STATE/imex" 2>/dev/null)" = active ]')):
        (path / name).write_text("#!/bin/sh\n%s\n" % body)
        (path / name).chmod(0o755)
    state = tmp_path / "state"
    state.mkdir()
    (state / "module-version").write_text(DRIVER + "\n")
    (state / "training-seconds").write_text("5\n")
    (state / "events.log").write_text("reboot from boot a\nboot b loaded %s\n" % DRIVER)
    env = {"DLBOX_FIXTURE_HGX": str(lib), "DLBOX_FIXTURE_STATE": str(state), "DLBOX_FIXTURE_IMEX_RECORD": str(IMEX_RECORD),
           "PATH": "%s:/usr/bin:/bin" % path}
    return env, state


def _run(env, *argv):
    return subprocess.run([str(a) for a in argv], env=env, capture_output=True, text=True, timeout=60, check=False)


def _trained(state, seconds_ago=60):
    (state / "fm-started-at").write_text("%d\n" % (time.time() - seconds_ago))


def test_four_gb200_gpus_at_the_recorded_addresses_in_progress_before_the_switch_trays(model):
    env, _state = model
    smi = _run(env, GB200 / "nvidia-smi", "-q")
    assert smi.returncode == 0
    assert [line.split()[1] for line in smi.stdout.splitlines() if line.startswith("GPU ")] == BUSES
    assert smi.stdout.count("Product Name                          : NVIDIA GB200") == 4
    assert "Attached GPUs                             : 4" in smi.stdout and "Blackwell" in smi.stdout
    verdict = fs.verdict(smi.stdout, "active")
    assert verdict["waiting"] and not verdict["ready"] and len(verdict["gpus"]) == 4
    listed = _run(env, GB200 / "nvidia-smi", "-L").stdout.splitlines()
    assert [line.split(" (UUID")[0] for line in listed] == ["GPU %d: NVIDIA GB200" % i for i in range(4)]
    assert _run(env, GB200 / "nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader").stdout.split() == [DRIVER] * 4


def test_completed_once_trained_with_clique_and_cluster_and_logged_once_a_boot(model):
    env, state = model
    _trained(state)
    _run(env, GB200 / "nvidia-smi", "-q")
    smi = _run(env, GB200 / "nvidia-smi", "-q")  # a second read: the event is logged once a boot
    verdict = fs.verdict(smi.stdout, "active")
    assert verdict["ready"] and [g["state"] for g in verdict["gpus"]] == ["Completed"] * 4
    assert "ClusterUUID                       : 6a130f54-faaa-4b8f-847f-be44ab70f917" in smi.stdout
    events = (state / "events.log").read_text().splitlines()
    assert [e.split(" ", 1)[1] for e in events if e.endswith(" fabric Completed")] == ["fabric Completed"]


def test_fabric_stuck_keeps_every_gpu_in_progress(model):
    env, state = model
    _trained(state)
    (state / "fabric-stuck").write_text("")
    smi = _run(env, GB200 / "nvidia-smi", "-q")
    assert smi.stdout.count("In Progress") == 4 and "Completed" not in smi.stdout
    assert "fabric Completed" not in (state / "events.log").read_text()


def test_no_module_no_answer(model):
    env, state = model
    (state / "module-version").unlink()
    smi = _run(env, GB200 / "nvidia-smi", "-q")
    assert smi.returncode == 9 and "couldn't communicate with the NVIDIA driver" in smi.stdout


def test_imex_start_is_refused_until_the_fabric_is_completed(model):
    env, state = model
    refused = _run(env, GB200 / "imex-start-check")
    assert refused.returncode == 1 and "not registered with the NVLink fabric (4x In Progress)" in refused.stderr
    _trained(state)
    assert _run(env, GB200 / "imex-start-check").returncode == 0
    events = [e.split(" ", 1)[1] for e in (state / "events.log").read_text().splitlines() if e[:1].isdigit()]
    assert events == ["nvidia-imex start refused: fabric not Completed (4x In Progress)", "fabric Completed",
                      "nvidia-imex start: fabric Completed (4x Completed)"]


def test_imex_start_is_refused_without_the_module(model):
    env, state = model
    (state / "module-version").unlink()
    refused = _run(env, GB200 / "imex-start-check")
    assert refused.returncode == 1 and "no nvidia-smi answer" in refused.stderr


def test_imex_ctl_answers_the_recorded_ready_and_domain_while_imex_is_active(model):
    env, state = model
    assert _run(env, GB200 / "nvidia-imex-ctl", "-q").returncode == 1
    (state / "imex").write_text("active\n")
    query = _run(env, GB200 / "nvidia-imex-ctl", "-q").stdout
    domain = _run(env, GB200 / "nvidia-imex-ctl", "-N").stdout
    assert query == "READY\n" and domain in IMEX_RECORD.read_text()
    verdict = imex_ctl.verdict(query, domain, "active", DRIVER)
    assert verdict["ready"] and verdict["domain"]["state"] == "UP" and not verdict["warnings"]
    assert [n["address"] for n in verdict["domain"]["nodes"]] == ["10.136.206.48"]


def test_the_imex_drop_in_runs_the_check_and_escapes_systemds_specifiers():
    tasks = yaml.safe_load((GB200 / "install.yml").read_text(encoding="utf-8"))
    drop_in = next(t for t in tasks if "zz-dlbox-fixture-gb200.conf" in str(t.get("ansible.builtin.copy", {}).get("dest")))
    lines = drop_in["ansible.builtin.copy"]["content"].splitlines()
    assert "ExecStartPre=/opt/dlbox-fixture-gpu/bin/imex-start-check" in lines
    post = next(line for line in lines if line.startswith("ExecStartPost="))
    # systemd expands $NAME and %x in ExecStart lines: a literal $( and %s are written $$( and %%s (systemd.service(5))
    assert "$$(date +%%s) nvidia-imex started" in post


def test_no_fabric_manager_drop_in_on_the_tray():
    tasks = yaml.safe_load((GB200 / "install.yml").read_text(encoding="utf-8"))
    removed = [t["ansible.builtin.file"]["path"] for t in tasks if t.get("ansible.builtin.file", {}).get("state") == "absent"]
    assert removed == ["/etc/systemd/system/nvidia-fabricmanager.service.d"]


def test_the_drop_in_folder_is_made_before_the_drop_in():
    # laid before the nvidia-imex package brings its unit: copy does not create the folder (molecule/gpu_host_blackwell's
    # prepare failed on "Destination directory /etc/systemd/system/nvidia-imex.service.d does not exist", 2026-12-06)
    tasks = yaml.safe_load((GB200 / "install.yml").read_text(encoding="utf-8"))
    made = [i for i, t in enumerate(tasks) if t.get("ansible.builtin.file", {}).get("path") == "/etc/systemd/system/nvidia-imex.service.d"
            and t["ansible.builtin.file"].get("state") == "directory"]
    copied = [i for i, t in enumerate(tasks) if str(t.get("ansible.builtin.copy", {}).get("dest", "")).startswith(
        "/etc/systemd/system/nvidia-imex.service.d/")]
    assert made and copied and made[0] < copied[0]
