# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""roles/nvidia_driver/tasks/nova.yml run by Ansible (connection local) on laid-out roots: nova_core, which Ubuntu 26.04's
first 7.0 kernels ship (CONFIG_NOVA_CORE=m, LP #2150845) and which binds Turing/Ampere/Ada GPUs before NVIDIA's module
("NVRM: GPU 0000:01:00.0 is already bound to NovaCore", beclab/Olares#3963), is blacklisted where a kernel ships it and
no modprobe file blacklists it, with the initramfs handler notified; elsewhere nothing is written."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml
from play_runner import run_play  # tests/unit/roles/play_runner.py, beside this file

ROOT = Path(__file__).resolve().parents[3]
TASKS = ROOT / "roles" / "nvidia_driver" / "tasks" / "nova.yml"


def _root(tmp_path, name, nova=False, blacklist=None):
    root = tmp_path / name
    (root / "lib/modules/7.0.0-14-generic/kernel/drivers/gpu/drm/nouveau").mkdir(parents=True)
    (root / "lib/modules/7.0.0-14-generic/kernel/drivers/gpu/drm/nouveau/nouveau.ko.zst").write_bytes(b"")
    if nova:
        (root / "lib/modules/7.0.0-14-generic/kernel/drivers/gpu/nova-core").mkdir(parents=True)
        (root / "lib/modules/7.0.0-14-generic/kernel/drivers/gpu/nova-core/nova_core.ko.zst").write_bytes(b"")
    for sub in ("etc/modprobe.d", "lib/modprobe.d"):
        (root / sub).mkdir(parents=True)
    if blacklist:
        (root / "lib/modprobe.d" / blacklist[0]).write_text(blacklist[1], encoding="utf-8")
    return root


def run(tmp_path, cases, check=False):
    hostvars = {}
    for name, root in cases.items():
        hostvars[name] = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                          "__nvidia_driver_modules_root": str(root / "lib/modules"),
                          "__nvidia_driver_modprobe_dirs": [str(root / "etc/modprobe.d"), str(root / "lib/modprobe.d")],
                          "__nvidia_driver_nova_file": str(root / "etc/modprobe.d/dlbox-blacklist-nova.conf")}
    play = {"hosts": "all", "gather_facts": False, "tasks": yaml.safe_load(TASKS.read_text(encoding="utf-8")),
            "handlers": [{"name": "initramfs", "ansible.builtin.debug": {"msg": "regenerate"},
                          "listen": "dlbox nvidia_driver initramfs"}]}
    proc, out = run_play(tmp_path, play, hostvars, check=check)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    changed = dict((h, [t["task"]["name"] for t in out["plays"][0]["tasks"] if t["hosts"].get(h, {}).get("changed")])
                   for h in cases)
    # the handler (a debug here) runs only where it was notified
    handled = dict((h, any(t["task"]["name"] == "initramfs" and h in t["hosts"] for t in out["plays"][0]["tasks"]))
                   for h in cases)
    return changed, handled


@pytest.fixture()
def cases(tmp_path):
    return {"nova": _root(tmp_path, "nova", nova=True),
            "no-nova": _root(tmp_path, "no-nova"),
            "canonical": _root(tmp_path, "canonical", nova=True,
                               blacklist=("nvidia-graphics-drivers-nova.conf", "blacklist nova_core\nblacklist nova_drm\n"))}


def test_a_kernel_with_nova_core_gets_the_blacklist_and_the_initramfs_handler(tmp_path, cases):
    changed, handled = run(tmp_path, cases)
    assert changed == {"nova": ["Blacklist nova_core where a kernel ships it and nothing blacklists it"],
                       "no-nova": [], "canonical": []}
    assert handled == {"nova": True, "no-nova": False, "canonical": False}
    text = (cases["nova"] / "etc/modprobe.d/dlbox-blacklist-nova.conf").read_text(encoding="utf-8")
    assert "\nblacklist nova_core\nblacklist nova_drm\n" in text and "nova_core.ko.zst" in text
    assert not (cases["no-nova"] / "etc/modprobe.d/dlbox-blacklist-nova.conf").exists()
    assert not (cases["canonical"] / "etc/modprobe.d/dlbox-blacklist-nova.conf").exists()   # a package's blacklist is enough
    # the second run changes nothing (its own file is not "another blacklist", and its content is the same)
    changed, handled = run(tmp_path, cases)
    assert changed == {"nova": [], "no-nova": [], "canonical": []} and not any(handled.values())


def test_check_mode_reports_and_writes_nothing(tmp_path, cases):
    changed, _handled = run(tmp_path, cases, check=True)
    assert changed["nova"] == ["Blacklist nova_core where a kernel ships it and nothing blacklists it"]
    assert not (cases["nova"] / "etc/modprobe.d/dlbox-blacklist-nova.conf").exists()
