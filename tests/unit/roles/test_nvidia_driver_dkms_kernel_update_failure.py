# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A DKMS build that fails for a NEW kernel (issue 44's third red team, M4), run by real Ansible (connection local) through
roles/nvidia_driver/tasks/kernel.yml's own text: the block that runs `dkms install -k KERNEL` for each kernel that lacks the
module, and its rescue.

The case users paste: a Debian 12 security kernel whose API the installed branch does not build against
(GoogleCloudDataproc/initialization-actions#1400: 6.1.0-52, pci_resize_resource). DKMS prints "Error! Bad return status
for module build on kernel: K" and "Consult /var/lib/dkms/<m>/<v>/build/make.log" (the RECORDED lines of
tests/fixtures/gpu_host/recorded/debian12-nvidia-kernel-dkms-build-failed.txt, DKMS 3.0.10 on Debian 12) and exits 10.
The rescue must name the kernel that failed, the end of its make.log, that the running kernel keeps its module, and what
to do before booting the failed kernel.

Harness (BUILT): a `dkms` that fails for one kernel with those lines and builds for the others; `tail` reading a
temporary root (the make.log lives there)."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml
from play_runner import run_play  # tests/unit/roles/play_runner.py, beside this file

ROOT = Path(__file__).resolve().parents[3]
KERNEL_YML = ROOT / "roles" / "nvidia_driver" / "tasks" / "kernel.yml"
RECORDED = ROOT / "tests" / "fixtures" / "gpu_host" / "recorded" / "debian12-nvidia-kernel-dkms-build-failed.txt"
VERSION = "535.161.08"
GOOD, BAD = "6.1.0-21-amd64", "6.1.0-52-amd64"
LOG = "/var/lib/dkms/nvidia-current/%s/build/make.log" % VERSION
MAKE_LOG_END = ("drivers/gpu/drm/nvidia/nv-pci.c:412:9: error: implicit declaration of function 'pci_resize_resource'\n"
                "make[2]: *** [scripts/Makefile.build:250: nvidia/nv-pci.o] Error 1\n")


def _block():
    tasks = yaml.safe_load(KERNEL_YML.read_text(encoding="utf-8"))
    return next(t for t in tasks if t.get("name", "").startswith("Build the module for the kernels that lack it"))


def _recorded_dkms_lines(kernel):
    lines = [line for line in RECORDED.read_text(encoding="utf-8").splitlines()
             if line.startswith(("Building", "Error! Bad return status", "Consult "))]
    return "\n".join(line.replace("6.1.0-21-amd64", kernel) for line in lines)


def _harness(base, fail_kernel):
    root, fake = base / "root", base / "fakebin"
    log = root / LOG.lstrip("/")
    log.parent.mkdir(parents=True)
    log.write_text("make -C /lib/modules/%s/build M=/var/lib/dkms/nvidia-current/%s/build modules\n%s" % (BAD, VERSION, MAKE_LOG_END))
    fake.mkdir()
    (base / "dkms-calls").write_text("")
    dkms = ('#!/bin/sh\necho "$*" >> %s\nk=""; prev=""; for a in "$@"; do [ "$prev" = -k ] && k=$a; prev=$a; done\n'
            'if [ "$k" = "%s" ]; then cat <<"EOF"\n%s\nEOF\nexit 10; fi\necho "Building initial module for $k"\necho "Done."\n'
            % (base / "dkms-calls", fail_kernel, _recorded_dkms_lines(fail_kernel)))
    tail = ('#!/bin/sh\nlast=""; for a in "$@"; do last=$a; done\nn=""; for a in "$@"; do [ "$a" = "$last" ] && break; n="$n $a"; done\n'
            'exec %s $n "%s$last"\n' % (shutil.which("tail"), root))
    for name, text in {"dkms": dkms, "tail": tail}.items():
        (fake / name).write_text(text)
        (fake / name).chmod(0o755)
    return {"PATH": "%s:/usr/sbin:/usr/bin:/sbin:/bin" % fake}


def _run(tmp_path, fail_kernel):
    link = tmp_path / "collections" / "ansible_collections" / "dlbox" / "stack"
    link.parent.mkdir(parents=True)
    link.symlink_to(ROOT, target_is_directory=True)
    env = _harness(tmp_path, fail_kernel)
    keep = {"name": "Keep the failure", "ansible.builtin.copy": {
        "content": "{{ ansible_failed_result.msg }}", "dest": str(tmp_path / "failed.txt"), "mode": "0644"}}
    play = {"hosts": "all", "gather_facts": True, "gather_subset": ["!all", "min"], "tasks": [
        {"name": "kernel.yml's DKMS build, as far as it goes here", "block": [_block()], "rescue": [keep]}]}
    hostvars = {"gpu1": {
        "ansible_connection": "local", "ansible_python_interpreter": str(Path(shutil.which("python3") or "/usr/bin/python3")),
        "__nvidia_driver_decided": {"signing": {"path": "dkms"}, "set": {"dkms_module": "nvidia-current"}},
        "__nvidia_driver_version": VERSION, "__nvidia_driver_dkms": {"dkms_missing": [GOOD, BAD]}}}
    proc, _out = run_play(tmp_path, play, hostvars, env=dict(env, ANSIBLE_COLLECTIONS_PATH=str(tmp_path / "collections")))
    failed = tmp_path / "failed.txt"
    return proc, failed.read_text(encoding="utf-8") if failed.exists() else None, (tmp_path / "dkms-calls").read_text()


def test_a_new_kernel_the_branch_cannot_build_for_is_named_with_its_make_log_and_what_to_do(tmp_path):
    proc, failed, calls = _run(tmp_path, BAD)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]   # the play's own rescue kept the message
    assert failed is not None, proc.stdout[-3000:]
    text = " ".join(failed.split())
    assert "-k %s" % GOOD in calls and "-k %s" % BAD in calls   # both kernels were tried (the loop goes on)
    assert "DKMS could not build nvidia-current/%s for kernel(s) %s:" % (VERSION, BAD) in text
    assert "Error! Bad return status for module build on kernel: %s (x86_64)" % BAD in text
    assert "The end of %s:" % LOG in text and "implicit declaration of function 'pci_resize_resource'" in text
    assert "keeps the module it has. Do not boot %s until it has one" % BAD in text
    assert "GRUB_DEFAULT or grub-set-default" in text and "nvidia_driver_branch" in text


def test_builds_that_pass_leave_nothing_to_report(tmp_path):
    proc, failed, calls = _run(tmp_path, "6.1.0-99-amd64")
    assert proc.returncode == 0 and failed is None, proc.stdout[-3000:]
    assert "-k %s" % GOOD in calls and "-k %s" % BAD in calls
