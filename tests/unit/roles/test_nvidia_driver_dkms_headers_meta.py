# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 48 red-team 4: on the DKMS path the kernel moves alone, so the next kernel has a module only if its headers come
with it: the distribution's headers meta of the running kernel's flavour. Only dlbox.stack.common installed it; the
nvidia_driver role used alone (meta/main.yml: no dependencies) left a Debian host without linux-headers-amd64. The role's
own three tasks of roles/nvidia_driver/tasks/kernel.yml run by real Ansible (connection local); dpkg-query and apt-cache
answer from files (a stand-in on PATH, what they print: dpkg-query -W -f with common's format, apt-cache policy's
"Candidate:"), the install task writes the name it would install instead of calling apt (dlbox.stack.apt_present).
Kernel releases: Debian 12's 6.1.0-28-amd64 (linux-image-amd64 Depends linux-image-6.1.0-28-amd64), Ubuntu 24.04 HWE
6.8.0-51-generic (linux-image-generic-hwe-24.04), as tests/unit/plugins/module_utils' headers tests read them."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
import yaml
from play_runner import run_play  # tests/unit/roles/play_runner.py, beside this file

from ansible_collections.dlbox.stack.plugins.plugin_utils import nvidia_driver_holds as nh

ROOT = Path(__file__).resolve().parents[3]
TITLES = ["Read dpkg's kernel meta packages (the headers meta that brings the next kernel's headers)",
          "Ask apt which headers meta package it would install",
          "Install the distribution's kernel headers meta package (DKMS builds the next kernel's module with it)"]
FAKE = "#!/bin/sh\ncat \"$FAKE_DIR/%s\"\n"

DEBIAN_DPKG = ("linux-image-amd64\t6.1.123-1\tii \tlinux-image-6.1.0-28-amd64 (= 6.1.123-1)\n"
               "linux-image-6.1.0-28-amd64\t6.1.123-1\tii \tkmod, linux-base (>= 4.3~)\n")
UBUNTU_DPKG = ("linux-image-generic-hwe-24.04\t6.8.0-51.52~22.04.1\tii \tlinux-image-6.8.0-51-generic, linux-firmware\n"
               "linux-image-6.8.0-51-generic\t6.8.0-51.52\tii \tlinux-modules-6.8.0-51-generic\n")


def _policy(*names):
    return "".join("%s:\n  Installed: (none)\n  Candidate: %s\n  Version table:\n" % (n, v) for n, v in names)


def _task(title):
    tasks = yaml.safe_load((ROOT / "roles" / "nvidia_driver" / "tasks" / "kernel.yml").read_text(encoding="utf-8"))
    return dict(next(t for t in tasks if t.get("name") == title))


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("dkms-headers-meta")
    link = tmp_path / "collections" / "ansible_collections" / "dlbox" / "stack"
    link.parent.mkdir(parents=True)
    link.symlink_to(ROOT, target_is_directory=True)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for tool, answer in (("dpkg-query", "dpkg.txt"), ("apt-cache", "policy.txt")):
        (bindir / tool).write_text(FAKE % answer, encoding="utf-8")
        (bindir / tool).chmod(0o755)
    # the facts as gather_facts would have them (a module next to the play that answers them: ansible_facts)
    (tmp_path / "library").mkdir()
    (tmp_path / "library" / "fake_facts").write_text(FAKE % "facts.json", encoding="utf-8")
    read, ask, install = (_task(t) for t in TITLES)
    install.pop("dlbox.stack.apt_present")
    install["ansible.builtin.copy"] = {"content": "{{ __nvidia_driver_headers_meta_found | first }}", "dest": "{{ out_dir }}/installed.txt",
                                       "mode": "0644"}
    play = {"hosts": "all", "gather_facts": False, "environment": {"FAKE_DIR": "{{ out_dir }}"}, "tasks": [
        {"name": "Facts", "fake_facts": {}}, read, ask, install]}
    hosts = {
        # the red team's host: Debian 12, the driver role alone, DKMS
        "debian-dkms": ("dkms", False, "Debian", "6.1.0-28-amd64", DEBIAN_DPKG, _policy(("linux-headers-amd64", "6.1.123-1"))),
        "ubuntu-hwe-dkms": ("dkms", False, "Ubuntu", "6.8.0-51-generic", UBUNTU_DPKG,
                            _policy(("linux-headers-generic-hwe-24.04", "6.8.0-51.52~22.04.1"), ("linux-headers-generic", "6.8.0-90.91"))),
        # Ubuntu's signed modules: the module metas follow the kernel; no headers needed
        "ubuntu-signed": ("precompiled", False, "Ubuntu", "6.8.0-51-generic", UBUNTU_DPKG,
                          _policy(("linux-headers-generic-hwe-24.04", "6.8.0-51.52~22.04.1"))),
        # nvidia_driver_build_kernels (an image build): the headers of those kernels only
        "build-only": ("dkms", True, "Debian", "6.1.0-28-amd64", DEBIAN_DPKG, _policy(("linux-headers-amd64", "6.1.123-1"))),
        # pinned out or not in the sources: nothing to install
        "no-candidate": ("dkms", False, "Debian", "6.1.0-28-amd64", DEBIAN_DPKG, _policy(("linux-headers-amd64", "(none)"))),
    }
    hostvars = {}
    for host, (path, build_only, distribution, kernel, dpkg, policy) in hosts.items():
        (tmp_path / host).mkdir()
        (tmp_path / host / "dpkg.txt").write_text(dpkg, encoding="utf-8")
        (tmp_path / host / "policy.txt").write_text(policy, encoding="utf-8")
        (tmp_path / host / "facts.json").write_text(json.dumps({"ansible_facts": {
            "kernel": kernel, "distribution": distribution, "architecture": "x86_64"}}), encoding="utf-8")
        hostvars[host] = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable, "out_dir": str(tmp_path / host),
                          "__nvidia_driver_decided": {"signing": {"path": path}, "build_only": build_only}}
    env = {"ANSIBLE_COLLECTIONS_PATH": str(tmp_path / "collections"), "PATH": "%s:%s" % (bindir, os.environ["PATH"])}
    proc, _out = run_play(tmp_path, play, hostvars, env=env)
    assert proc.returncode == 0, [(r.get("msg"), r.get("stderr")) for p in (_out or {}).get("plays", []) for t in p["tasks"] for r in t["hosts"].values()
                                  if r.get("failed")][:1] or proc.stderr[-2000:]
    got = {}
    for host in hosts:
        path = tmp_path / host / "installed.txt"
        got[host] = path.read_text(encoding="utf-8") if path.exists() else None
    return got


def test_the_driver_role_alone_installs_debians_headers_meta_on_the_dkms_path(results):
    assert results["debian-dkms"] == "linux-headers-amd64"


def test_the_hwe_flavour_of_the_installed_metas_comes_first(results):
    assert results["ubuntu-hwe-dkms"] == "linux-headers-generic-hwe-24.04"


@pytest.mark.parametrize("host", ["ubuntu-signed", "build-only", "no-candidate"])
def test_no_headers_meta_where_none_is_needed_or_none_is_there(results, host):
    assert results[host] is None


def test_the_role_never_holds_a_headers_meta():
    installed = ["linux-headers-amd64", "nvidia-driver", "nvidia-kernel-dkms"]
    assert "linux-headers-amd64" not in nh.hold_list(["nvidia-driver", "nvidia-kernel-dkms"], installed, "dkms", "distro")
    listed = nh.blacklist(["nvidia-driver"], installed, ["^(lib)?nvidia(?!-mig-manager$)", "^libcuda"], "dkms")["names"]
    assert "linux-headers-amd64" not in listed
