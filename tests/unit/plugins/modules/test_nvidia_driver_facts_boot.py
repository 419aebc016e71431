# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""nvidia_driver_facts' boot=true: the running release, /boot's kernels and the kernel GRUB boots next, on a FIXTURE
file tree (the GRUB_DEFAULT value is the recorded one of Project-HAMi/website PR #737; see test_nvidia_driver_grub.py)."""

from __future__ import annotations

import json

import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.dlbox.stack.plugins.modules import nvidia_driver_facts as facts

AWS_ID = ("gnulinux-advanced-0ef35759-eb42-4358-9a2a-1f74696d7007>"
          "gnulinux-6.8.0-1008-aws-advanced-0ef35759-eb42-4358-9a2a-1f74696d7007")


def run(capsys, monkeypatch, files, boot, args):
    monkeypatch.setattr(facts, "running_release", lambda: "6.8.0-31-generic")
    monkeypatch.setattr(facts.glob, "glob", lambda pattern: [p for p in list(files) + ["/boot/vmlinuz-" + b for b in boot]
                                                             if __import__("fnmatch").fnmatch(p, pattern)])
    monkeypatch.setattr(facts.os.path, "isfile", lambda path: path in files)
    monkeypatch.setattr(facts, "_read", lambda path: files[path])
    monkeypatch.setattr(facts.AnsibleModule, "run_command", lambda self, argv, **k: (0, "", ""))
    monkeypatch.setattr(facts.AnsibleModule, "get_bin_path", lambda self, name, *a, **k: "/usr/bin/" + name)
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            facts.main()
    return json.loads(capsys.readouterr().out)


def test_boot_reads_grubs_default_kernel(capsys, monkeypatch):
    files = {"/etc/default/grub": "GRUB_DEFAULT=0\n", "/etc/default/grub.d/50-aws.cfg": 'GRUB_DEFAULT="%s"\n' % AWS_ID}
    out = run(capsys, monkeypatch, files, ["6.8.0-31-generic", "6.8.0-1008-aws", "7.0.0-44-generic"], {"boot": True})
    assert out["kernel"]["running"] == "6.8.0-31-generic"
    assert out["kernel"]["next_boot"] == "6.8.0-1008-aws"
    assert out["kernel"]["boot"] == ["6.8.0-1008-aws", "6.8.0-31-generic", "7.0.0-44-generic"]
    assert "packages" not in out["kernel"]


def test_boot_without_grub_configuration_is_the_newest(capsys, monkeypatch):
    out = run(capsys, monkeypatch, {}, ["6.8.0-31-generic", "7.0.0-44-generic"], {"boot": True})
    assert out["kernel"]["next_boot"] == "7.0.0-44-generic"
    assert out["kernel"]["next_boot_source"].startswith("no GRUB configuration read")


def test_boot_without_kernels_in_boot_is_the_running_one(capsys, monkeypatch):
    out = run(capsys, monkeypatch, {}, [], {"boot": True})
    assert out["kernel"]["next_boot"] == "6.8.0-31-generic"
    assert out["kernel"]["next_boot_source"] == "no kernel in /boot: the running one"
