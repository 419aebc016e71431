# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The DKMS path where the running kernel's headers left the archive (issue 44 red team H1), through the role's own task
text: roles/nvidia_driver/tasks/kernel.yml's verdict tasks ("Judge the module version of every kernel", "Check the module
version for every kernel", "Say that the module loads only in the kernel that boots next") and vars/main.yml's reading of
apt-cache's exit status, run by real Ansible (connection local) on what the facts module and apt-cache answered before.

The host is GoogleCloudPlatform/compute-gpu-installation#28's: Debian 11 on GCE running 5.10.0-24-cloud-amd64 whose
headers the archive dropped when 5.10.0-25 came ("E: Unable to locate package linux-headers-5.10.0-24-cloud-amd64",
GoogleCloudDataproc/initialization-actions#1084; apt-cache show exits 100 for a name it does not know); the headers meta
brought 5.10.0-25's headers, DKMS built for it. modinfo's answer for a kernel without the module is kmod's
"modinfo: ERROR: Module nvidia not found." Three hosts: GRUB boots the running kernel again (the run must fail, naming the
headers package, not say "pending reboot"), GRUB boots 5.10.0-25 whose module was built ("pending reboot" naming it), and
the kernel that boots next has no headers either (fail naming its headers package)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml
from play_runner import run_play  # tests/unit/roles/play_runner.py, beside this file

ROOT = Path(__file__).resolve().parents[3]
TASKS = ROOT / "roles" / "nvidia_driver" / "tasks"
ROLE_VARS = yaml.safe_load((ROOT / "roles" / "nvidia_driver" / "vars" / "main.yml").read_text(encoding="utf-8"))
TITLES = ["Judge the module version of every kernel", "Check the module version for every kernel",
          "Say that the module loads only in the kernel that boots next"]
OLD, NEW, NEWER = "5.10.0-24-cloud-amd64", "5.10.0-25-cloud-amd64", "5.10.0-26-cloud-amd64"
VERSION = "535.216.03"
NOT_FOUND = "modinfo: ERROR: Module nvidia not found."


def _task(title):
    tasks = yaml.safe_load((TASKS / "kernel.yml").read_text(encoding="utf-8"))
    return next(t for t in tasks if t.get("name") == title)


def _host(out_dir, boot, next_boot, modinfo, lookups):
    return {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable, "out_dir": str(out_dir),
        "nvidia_driver_build_kernels": [], "__nvidia_driver_version": VERSION,
        "__nvidia_driver_decided": {"signing": {"path": "dkms"}, "build_only": False, "pending_reboot_reason": "",
                                    "set": {"dkms_module": "nvidia-current"}},
        "__nvidia_driver_dkms": {"kernels": [NEW]},
        "__nvidia_driver_boot": {"kernel": {"running": OLD, "boot": boot, "next_boot": next_boot}},
        "__nvidia_driver_dkms_after": {"modinfo": modinfo},
        "__nvidia_driver_next_headers": {"results": [dict(item=k, rc=rc) for k, rc in lookups]},
        "__nvidia_driver_headers_rc": ROLE_VARS["__nvidia_driver_headers_rc"],
    }


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("dkms-headers")
    link = tmp_path / "collections" / "ansible_collections" / "dlbox" / "stack"
    link.parent.mkdir(parents=True)
    link.symlink_to(ROOT, target_is_directory=True)
    judge, check, say = (dict(_task(t)) for t in TITLES)
    say_out = dict(say, register="__said")
    play = {"hosts": "all", "gather_facts": True, "gather_subset": ["!all", "min"], "tasks": [
        judge,
        {"name": "Verdict", "block": [check, say_out, {"name": "Keep the message", "ansible.builtin.copy": {
            "content": "{{ __said.msg | default('') }}", "dest": "{{ out_dir }}/said.txt", "mode": "0644"}}],
         "rescue": [{"name": "Keep the failure", "ansible.builtin.copy": {
             "content": "{{ ansible_failed_result.msg }}", "dest": "{{ out_dir }}/failed.txt", "mode": "0644"}}]}]}
    hosts = {
        # GRUB boots the running kernel again: 5.10.0-25 has headers and a module but no image in /boot
        "boots-the-same": ([OLD], OLD, {NEW: VERSION, OLD: NOT_FOUND}, [(OLD, 100)]),
        # the image of 5.10.0-25 is installed and GRUB's default: a reboot loads the module
        "boots-the-built": ([OLD, NEW], NEW, {NEW: VERSION}, [(NEW, 0), (OLD, 100)]),
        # GRUB boots 5.10.0-26, installed without its headers (the archive has them)
        "boots-one-without": ([OLD, NEW, NEWER], NEWER, {NEW: VERSION, NEWER: NOT_FOUND}, [(NEWER, 0), (OLD, 100)]),
    }
    hostvars = {}
    for host, args in hosts.items():
        (tmp_path / host).mkdir()
        hostvars[host] = _host(tmp_path / host, *args)
    proc, _out = run_play(tmp_path, play, hostvars, env={"ANSIBLE_COLLECTIONS_PATH": str(tmp_path / "collections")})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]

    def read(host, name):
        path = tmp_path / host / name
        return path.read_text(encoding="utf-8") if path.exists() else None
    return {host: {"failed": read(host, "failed.txt"), "said": read(host, "said.txt")} for host in hosts}


def test_the_running_kernel_booting_again_fails_naming_its_headers_and_says_no_pending_reboot(results):
    failed = results["boots-the-same"]["failed"]
    assert failed is not None and results["boots-the-same"]["said"] is None
    assert "linux-headers-%s is not installed and the archive no longer has it" % OLD in failed
    assert "a reboot would not load the driver" in failed and "pending reboot:" not in failed
    assert "apt install linux-image-%s" % NEW in failed


def test_pending_reboot_names_the_kernel_that_boots_next_with_its_module(results):
    assert results["boots-the-built"]["failed"] is None
    said = results["boots-the-built"]["said"]
    assert said.startswith("pending reboot: the running kernel %s has no headers" % OLD)
    assert "Kernel %s boots next and has the module" % NEW in said


def test_a_next_kernel_without_headers_fails_naming_its_headers_package(results):
    failed = results["boots-one-without"]["failed"]
    assert "the kernel that boots next, %s, has no NVIDIA %s module either" % (NEWER, VERSION) in failed
    assert "apt install linux-headers-%s" % NEWER in failed
