# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 48 red team M7, M9: roles/nvidia_driver/tasks/install.yml's last tasks (the upgrade simulation, the reading of
unattended-upgrades' configuration, apt's archives and the kernel packages, the decision and the two messages), run by
real Ansible (connection local) with this machine's real apt-get, apt-cache, apt-config and dpkg-query pointed at a FIXTURE
host (APT_CONFIG, DPKG_ADMINDIR): the month archive split into Ubuntu's pockets with Ubuntu's DEFAULT
50unattended-upgrades (test_nvidia_driver_unattended_defaults_real.py builds it; the driver's point release in
noble-updates only, the new kernel and its module in -security too)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from pathlib import Path

import pytest
import yaml
from play_runner import run_play  # tests/unit/roles/play_runner.py, beside this file

ROOT = Path(__file__).resolve().parents[3]
FIRST = "Simulate an upgrade (a new kernel must come with its signed module)"
_SPEC = importlib.util.spec_from_file_location(
    "_uu_defaults", ROOT / "tests" / "unit" / "plugins" / "plugin_utils" / "test_nvidia_driver_unattended_defaults_real.py")
UU = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(UU)
pytestmark = pytest.mark.skipif(not (shutil.which("apt-get") and shutil.which("apt-config") and shutil.which("dpkg-query")),
                                reason="needs apt and dpkg")
FACTS_MODULE = '''#!/usr/bin/python
from ansible.module_utils.basic import AnsibleModule
module = AnsibleModule(argument_spec={"facts": {"type": "dict", "required": True}})
module.exit_json(changed=False, ansible_facts=module.params["facts"])
'''


def test_the_role_warns_of_the_kernel_that_comes_alone_and_names_the_older_kernel_without_a_module(tmp_path):
    # two FIXTURE hosts in one run (each its apt and dpkg by the play's per-host environment): "alone" has the driver's
    # point release in noble-updates only; "older" has it in -security too, and kernel 6.8.0-1001 with the module of
    # its day in /boot
    machines = {"alone": (UU.host(tmp_path / "alone", UU.month_archive(), driver_in_security=False), ["6.8.0-1002-generic"]),
                "older": (UU.host(tmp_path / "older", UU.month_archive(), driver_in_security=True, older=True),
                          ["6.8.0-1001-generic", "6.8.0-1002-generic"])}
    tasks = yaml.safe_load((ROOT / "roles" / "nvidia_driver" / "tasks" / "install.yml").read_text(encoding="utf-8"))
    first = next(i for i, t in enumerate(tasks) if t.get("name") == FIRST)
    (tmp_path / "library").mkdir()
    (tmp_path / "library" / "fixture_facts.py").write_text(FACTS_MODULE, encoding="utf-8")
    facts = {"distribution": "Ubuntu", "distribution_release": "noble", "kernel": "6.8.0-1002-generic"}
    hostvars = {}
    for name, (machine, boot) in machines.items():
        hostvars[name] = {
            "ansible_connection": "local", "ansible_python_interpreter": sys.executable, "nvidia_driver_unattended_blacklist": True,
            "fixture_apt_config": machine["env"]["APT_CONFIG"], "fixture_dpkg": os.path.join(machine["root"], "var", "lib", "dpkg"),
            "__nvidia_driver_decided": {"signing": {"path": "precompiled"}, "packages_only": False, "build_only": False, "blacklist": []},
            "__nvidia_driver_hold_changes": {"keep_user": [], "wanted": []},
            # unattended-upgrades installed (the role reads dpkg's list; this machine's own program does not count)
            "__nvidia_driver_facts": {"installed": [{"name": n} for n in machine["installed"] + ["unattended-upgrades"]],
                                      "kernel": {"boot": boot}}}
    play = {"hosts": "all", "gather_facts": False,
            "environment": {"APT_CONFIG": "{{ fixture_apt_config }}", "DPKG_ADMINDIR": "{{ fixture_dpkg }}"},
            "tasks": [{"name": "Facts of the FIXTURE host", "fixture_facts": {"facts": facts}}] + tasks[first:]}
    proc, out = run_play(tmp_path, play, hostvars, env={"ANSIBLE_LIBRARY": str(tmp_path / "library")})
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    results = dict((t["task"]["name"], t["hosts"]) for p in out["plays"] for t in p["tasks"])
    warning = results["Say which kernel an upgrade would bring without its signed module"]["alone"]
    assert not warning.get("skipped"), warning
    assert "Kernel 6.8.0-1003-generic" in warning["msg"] and "WITHOUT its NVIDIA module" in warning["msg"], warning["msg"]
    assert "o=Ubuntu,a=noble-security" in warning["msg"] and "noble-updates" in warning["msg"]
    note = "Say which kernels in /boot the next point release leaves without the NVIDIA module"
    assert results[note]["alone"].get("skipped")
    older = results[note]["older"]
    assert not older.get("skipped"), older
    assert "6.8.0-1001-generic (its signed module requires exactly the installed driver" in older["msg"], older["msg"]
    assert "6.8.0-1002-generic (" not in older["msg"]


def test_the_update_names_the_kernel_its_release_leaves_without_the_module(tmp_path):
    # update.yml's task on the preflight's kernel facts (as nvidia_driver_facts reads them: the module packages with their
    # Depends, the kernels in /boot) and the update's simulation, which removes 6.8.0-149's module (RECORDED Depends)
    tasks = yaml.safe_load((ROOT / "roles" / "nvidia_driver" / "tasks" / "update.yml").read_text(encoding="utf-8"))
    task = next(t for t in tasks if t.get("name") == "Say which kernels in /boot the update leaves without the NVIDIA module")
    old = "linux-image-6.8.0-149-generic | linux-image-unsigned-6.8.0-149-generic, nvidia-kernel-common-580 (<= 580.178.04-1), " \
          "nvidia-kernel-common-580 (>= 580.178.04)"
    packages = [{"name": "linux-image-6.8.0-149-generic", "version": "6.8.0-149.149", "installed": True, "depends": ""},
                {"name": "linux-image-6.8.0-151-generic", "version": "6.8.0-151.151", "installed": True, "depends": ""},
                {"name": "linux-modules-nvidia-580-open-6.8.0-149-generic", "version": "6.8.0-149.149", "installed": True, "depends": old},
                {"name": "linux-modules-nvidia-580-open-6.8.0-151-generic", "version": "6.8.0-151.151", "installed": True,
                 "depends": old.replace("149", "151")}]
    sim = ("Remv linux-modules-nvidia-580-open-6.8.0-149-generic [6.8.0-149.149]\n"
           "Inst linux-modules-nvidia-580-open-6.8.0-151-generic [6.8.0-151.151] (6.8.0-151.151+1 Ubuntu:24.04/noble-updates [amd64])\n")
    hostvars = {"host": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                         "__nvidia_driver_facts": {"kernel": {"packages": packages, "boot": ["6.8.0-149-generic", "6.8.0-151-generic"]}},
                         "__nvidia_driver_decided": {"signing": {"path": "precompiled"}},
                         "__nvidia_driver_update": {"action": "update", "available_version": "580.196.07"},
                         "__nvidia_driver_update_sim": {"stdout": sim, "rc": 0}}}
    proc, out = run_play(tmp_path, {"hosts": "all", "gather_facts": False, "tasks": [task]}, hostvars)
    assert proc.returncode == 0, proc.stdout[-3000:]
    msg = out["plays"][0]["tasks"][0]["hosts"]["host"]["msg"]
    assert "After the update to 580.196.07" in msg and "6.8.0-149-generic (" in msg and "6.8.0-151-generic (" not in msg, msg
