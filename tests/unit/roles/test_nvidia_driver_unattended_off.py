# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 48 red-team 6: nvidia_driver_unattended_blacklist: false left the role's /etc/apt/apt.conf.d/51dlbox-nvidia-driver
of an earlier run in place (it kept blacklisting). roles/nvidia_driver/tasks/install.yml's removal task, run by real
Ansible (connection local) on a file standing in for it."""

from __future__ import annotations

import sys
from pathlib import Path

import yaml
from play_runner import run_play  # tests/unit/roles/play_runner.py, beside this file

ROOT = Path(__file__).resolve().parents[3]
TITLE = "Remove the role's unattended-upgrades file (nvidia_driver_unattended_blacklist is false)"


def test_false_removes_the_file_of_an_earlier_run_and_true_keeps_it(tmp_path):
    tasks = yaml.safe_load((ROOT / "roles" / "nvidia_driver" / "tasks" / "install.yml").read_text(encoding="utf-8"))
    task = next(t for t in tasks if t.get("name") == TITLE)
    hostvars = {}
    for host, value in (("off", False), ("on", True)):
        (tmp_path / host).mkdir()
        (tmp_path / host / "51dlbox-nvidia-driver").write_text('Unattended-Upgrade::Package-Blacklist { "nvidia-driver-580"; };\n',
                                                               encoding="utf-8")
        hostvars[host] = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                          "nvidia_driver_unattended_blacklist": value, "__nvidia_driver_uu_file": str(tmp_path / host / "51dlbox-nvidia-driver")}
    proc, _out = run_play(tmp_path, {"hosts": "all", "gather_facts": False, "tasks": [task]}, hostvars)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert not (tmp_path / "off" / "51dlbox-nvidia-driver").exists()
    assert (tmp_path / "on" / "51dlbox-nvidia-driver").exists()
