# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The FIXTURE HGX host's Fabric Manager start script fails the way NVIDIA's nvidia-fabricmanager-start.sh does
(tests/fixtures/gpu_host/hgx/nvidia-fabricmanager-start.sh says why, with its sources): the precheck of an NVL5+ system
without ib_umad, the start's failure around the FIXTURE nv-fabricmanager. Run on the stubs themselves, in a temporary
model folder with a dpkg-query that answers the installed Fabric Manager package; and the unit's drop-in runs it in
ExecStartPre and ExecStart, each list reset first."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path
from types import SimpleNamespace

import yaml

ROOT = Path(__file__).resolve().parents[3]
HGX = ROOT / "tests" / "fixtures" / "gpu_host" / "hgx"
START = HGX / "nvidia-fabricmanager-start.sh"
FM_VERSION = "580.178.04"


def _model(tmp_path, module=FM_VERSION, nvl5=False, ib_umad=False, no_nvswitch=False):
    """A model folder: hgx-lib.sh and nv-fabricmanager as installed, a state folder, a /sys, a dpkg-query."""
    lib = tmp_path / "bin"
    lib.mkdir()
    (lib / "hgx-lib.sh").symlink_to(HGX / "lib.sh")
    (lib / "nv-fabricmanager").symlink_to(HGX / "nv-fabricmanager")
    state = tmp_path / "state"
    state.mkdir()
    if module:
        (state / "module-version").write_text(module + "\n")
    if no_nvswitch:
        (state / "no-nvswitch").write_text("")
    sys_root = tmp_path / "sys"
    (sys_root / "module").mkdir(parents=True)
    if nvl5:
        port = sys_root / "class" / "infiniband" / "mlx5_10" / "device"
        port.mkdir(parents=True)
        (port / "vpd").write_bytes(b"\x82\x10NVIDIA ConnectX-7\x90\x20V0:SW_MNG\x78")
    if ib_umad:
        (sys_root / "module" / "ib_umad").mkdir()
    fake = tmp_path / "fakebin"
    fake.mkdir()
    (fake / "dpkg-query").write_text("#!/bin/sh\necho 'ii  nvidia-fabricmanager-580 %s-0ubuntu0.22.04.1+fixture1'\n" % FM_VERSION)
    (fake / "dpkg-query").chmod(0o755)
    env = {"DLBOX_FIXTURE_HGX": str(lib), "DLBOX_FIXTURE_STATE": str(state), "DLBOX_FIXTURE_SYS": str(sys_root),
           "PATH": "%s:/usr/bin:/bin" % fake}
    return env, state


def _run(env, mode):
    """Run the start script in its own process group; a forked FIXTURE daemon is ended by that group's id."""
    proc = subprocess.Popen(["sh", str(START), "--mode", mode], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    out, err = proc.communicate(timeout=30)
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    return SimpleNamespace(rc=proc.returncode, out=out, err=err)


def test_precheck_passes_silently_on_a_pre_nvl5_system(tmp_path):
    env = _model(tmp_path, module=None, no_nvswitch=True)[0]
    ran = _run(env, "precheck")
    assert (ran.rc, ran.out, ran.err) == (0, "", "")


def test_precheck_refuses_an_nvl5_system_without_ib_umad(tmp_path):
    ran = _run(_model(tmp_path, nvl5=True)[0], "precheck")
    assert ran.rc != 0
    assert "Detected NVL5+ system" in ran.out
    assert 'Kernel module "ib_umad" has not been loaded, fabric manager cannot be started' in ran.out


def test_precheck_passes_an_nvl5_system_with_ib_umad(tmp_path):
    ran = _run(_model(tmp_path, nvl5=True, ib_umad=True)[0], "precheck")
    assert ran.rc == 0 and "Detected NVL5+ system" in ran.out


def test_start_runs_fabric_manager_of_the_loaded_version(tmp_path):
    env, state = _model(tmp_path)
    ran = _run(env, "start")
    assert ran.rc == 0, ran.out + ran.err
    assert ran.out.splitlines()[0] == "Detected Pre-NVL5 system"
    assert "Successfully configured all the available NVSwitches" in ran.out
    assert ran.out.splitlines()[-1] == 'Started "Nvidia Fabric Manager"'
    assert (state / "fm-started-at").exists()


def test_start_fails_on_a_module_of_another_version(tmp_path):
    env, state = _model(tmp_path, module="570.195.03")
    ran = _run(env, "start")
    assert ran.rc == 1 and "Detected Pre-NVL5 system" in ran.out
    assert "driver interface version %s don't match with driver version 570.195.03" % FM_VERSION in ran.err
    assert "-c /usr/share/nvidia/nvswitch/fabricmanager.cfg\" failed! Exit code: 1" in ran.err
    assert not (state / "fm-started-at").exists()


def test_start_fails_without_an_nvswitch(tmp_path):
    ran = _run(_model(tmp_path, no_nvswitch=True)[0], "start")
    assert ran.rc == 1
    assert "[NV_WARN_NOTHING_TO_DO]" in ran.err and "failed! Exit code: 1" in ran.err


def test_start_without_a_mode_is_refused(tmp_path):
    env = _model(tmp_path)[0]
    proc = subprocess.run(["sh", str(START)], env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 1


def _unit_lines(text):
    return [line.strip() for line in text.splitlines() if line.strip().startswith(("ExecStart", "Type="))]


def test_the_drop_in_resets_and_runs_the_start_script_in_both_places():
    tasks = yaml.safe_load((HGX / "install.yml").read_text(encoding="utf-8"))
    dropin = next(t for t in tasks if t.get("ansible.builtin.copy", {}).get("dest", "").endswith(
        "nvidia-fabricmanager.service.d/dlbox-fixture.conf"))["ansible.builtin.copy"]["content"]
    script = "/opt/dlbox-fixture-gpu/bin/nvidia-fabricmanager-start.sh"
    assert _unit_lines(dropin) == ["Type=forking", "ExecStartPre=", "ExecStartPre=%s --mode precheck" % script,
                                   "ExecStart=", "ExecStart=%s --mode start" % script]
    stubs = next(t for t in tasks if t.get("name") == "Copy the FIXTURE stubs")["vars"]
    for listing in stubs.values():
        assert {"src": START.name, "dest": script} in listing


def test_the_ubuntu_marker_unit_is_shaped_as_nvidia_ships_it():
    spec = yaml.safe_load((ROOT / "tests" / "aptrepo" / "specs" / "ubuntu-jammy-server.yml").read_text(encoding="utf-8"))
    fm = next(p for p in spec["packages"] if p["name"] == "nvidia-fabricmanager-580")
    unit = next(f for f in fm["files"] if f["path"] == "/lib/systemd/system/nvidia-fabricmanager.service")["content"]
    assert _unit_lines(unit) == ["Type=forking", "ExecStartPre=/usr/bin/nvidia-fabricmanager-start.sh --mode precheck",
                                 "ExecStart=/usr/bin/nvidia-fabricmanager-start.sh --mode start"]
