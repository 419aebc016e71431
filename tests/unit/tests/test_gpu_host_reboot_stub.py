# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The FIXTURE GPU host's reboot stubs fail the way a real reboot does (tests/fixtures/gpu_host/bin/reboot says why):
the command is accepted and the machine never comes back (state/boot-hangs), so boot-id answers nothing (exit 255) and
ansible.builtin.reboot times out. Run here on the stubs themselves, in a temporary model folder."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
GPU = ROOT / "tests" / "fixtures" / "gpu_host"


def _model(tmp_path, hangs):
    state = tmp_path / "state"
    state.mkdir()
    (state / "boot_id").write_text("fixture-boot-1\n")
    if hangs:
        (state / "boot-hangs").write_text("")
    return state


def test_bin_reboot_that_hangs_leaves_the_machine_down(tmp_path):
    (tmp_path / "bin").symlink_to(GPU / "bin")
    state = _model(tmp_path, hangs=True)
    env = {"DLBOX_FIXTURE_GPU": str(tmp_path), "PATH": "/usr/bin:/bin"}
    assert subprocess.run(["sh", str(GPU / "bin" / "reboot")], env=env, check=False).returncode == 0
    assert (state / "down").exists() and (state / "boot_id").read_text() == "fixture-boot-1\n"
    booted = subprocess.run(["sh", str(GPU / "bin" / "boot-id")], env=env, capture_output=True, text=True, check=False)
    assert booted.returncode == 255 and "the machine is down" in booted.stderr
    assert "boot hangs" in (state / "events.log").read_text()


def test_hgx_reboot_that_hangs_leaves_the_machine_down(tmp_path):
    lib = tmp_path / "hgxbin"
    lib.mkdir()
    (lib / "hgx-lib.sh").symlink_to(GPU / "hgx" / "lib.sh")
    state = _model(tmp_path, hangs=True)
    env = {"DLBOX_FIXTURE_HGX": str(lib), "DLBOX_FIXTURE_STATE": str(state), "PATH": "/usr/bin:/bin"}
    assert subprocess.run(["sh", str(GPU / "hgx" / "reboot")], env=env, check=False).returncode == 0
    assert (state / "down").exists() and (state / "boot_id").read_text() == "fixture-boot-1\n"
    booted = subprocess.run(["sh", str(GPU / "hgx" / "boot-id")], env=env, capture_output=True, text=True, check=False)
    assert booted.returncode == 255 and "the machine is down" in booted.stderr


def test_blackwell_reboot_that_hangs_loads_no_module_and_leaves_the_machine_down(tmp_path):
    """The HGX B200 model's reboot decides the boot's kernel modules, then runs the HGX model's: a boot that never
    comes back changes no module and ends down, as the HGX one does."""
    lib = tmp_path / "hgxbin"
    lib.mkdir()
    (lib / "hgx-lib.sh").symlink_to(GPU / "hgx" / "lib.sh")
    (lib / "hgx-reboot-base").symlink_to(GPU / "hgx" / "reboot")
    state = _model(tmp_path, hangs=True)
    env = {"DLBOX_FIXTURE_HGX": str(lib), "DLBOX_FIXTURE_STATE": str(state), "PATH": "/usr/bin:/bin"}
    assert subprocess.run(["sh", str(GPU / "blackwell" / "reboot")], env=env, check=False).returncode == 0
    assert (state / "down").exists() and (state / "boot_id").read_text() == "fixture-boot-1\n"
    events = (state / "events.log").read_text()
    assert "boot hangs" in events and "modules at boot" not in events
