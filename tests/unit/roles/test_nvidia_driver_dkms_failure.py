# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A DKMS build that fails (issue 44 red team H2), run by real Ansible (connection local) through the role's own task
text (roles/nvidia_driver/tasks/install.yml: its rescue, and the configure of what dpkg left unconfigured) against the
FIXTURE GPU host's state (tests/fixtures/gpu_host: bin/dkms under state/dkms-build-fails, in a temporary model folder and
host root, DLBOX_FIXTURE_GPU / DLBOX_FIXTURE_ROOT, as tests/unit/tests/test_gpu_host_kernel_stubs.py runs it).

- first run: the install fails in the DKMS build: the failure names /var/lib/dkms/<m>/<v>/build/make.log and its last
  lines (the model's make.log), not only apt's E: and dpkg: lines;
- next run: dpkg's status holds the DKMS package half-configured (iF, what bin/sync-packages leaves) and the meta
  unpacked (iU): the real nvidia_driver_facts module reads it, the real plan filter lists them as not configured, and
  install.yml runs `dpkg --configure -a` first; the build fails again, and the failure says `dpkg --configure -a` and the
  make.log. With the build fixed (no flag) the configure passes and nothing fails.

Harness (BUILT, the model's convention that host paths live under DLBOX_FIXTURE_ROOT): `tail` and `dpkg-query` read that
root (dpkg-query --admindir), `dpkg --configure -a` re-runs the DKMS package's postinst as dkms_common.postinst does
(`dkms autoinstall` of the model) and fails with dpkg's recorded lines when it fails."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
import yaml
from play_runner import run_play  # tests/unit/roles/play_runner.py, beside this file

ROOT = Path(__file__).resolve().parents[3]
GPU = ROOT / "tests" / "fixtures" / "gpu_host"
INSTALL = ROOT / "roles" / "nvidia_driver" / "tasks" / "install.yml"
FROZEN = str(ROOT / "tests" / "unit" / "data" / "compat-frozen.yml")
KERNEL = "6.1.0-21-amd64"
VERSION = "535.161.08"
PKG_VERSION = VERSION + "-2~deb12u1"
FAMILY = yaml.safe_load(Path(FROZEN).read_text(encoding="utf-8"))["driver_package_names"]["family"]
LOG = "/var/lib/dkms/nvidia-current/%s/build/make.log" % VERSION


def _install_block():
    tasks = yaml.safe_load(INSTALL.read_text(encoding="utf-8"))
    return next(t for t in tasks if t.get("name") == "Install the driver (rolled back to the kept packages if a branch change fails)")


def _status(unconfigured):
    def stanza(name, status):
        return ("Package: %s\nStatus: %s\nPriority: optional\nSection: non-free/kernel\nMaintainer: FIXTURE\nArchitecture: amd64\n"
                "Version: %s\nDescription: FIXTURE %s\n\n" % (name, status, PKG_VERSION, name))
    return (stanza("nvidia-kernel-dkms", "install ok half-configured" if unconfigured else "install ok installed")
            + stanza("nvidia-driver", "install ok unpacked" if unconfigured else "install ok installed")
            + stanza("nvidia-smi", "install ok installed"))


def _model(base, fails, unconfigured):
    fx, host, fake = base / "fx", base / "host", base / "fakebin"
    (fx / "state").mkdir(parents=True)
    (fx / "bin").symlink_to(GPU / "bin")
    (fx / "state/running_kernel").write_text(KERNEL + "\n")
    (fx / "state/boot_id").write_text("fixture-boot-1\n")
    if fails:
        (fx / "state/dkms-build-fails").write_text("")
    (host / "lib/modules" / KERNEL / "build").mkdir(parents=True)
    (host / "var/lib/dpkg/updates").mkdir(parents=True)
    (host / "var/lib/dpkg/info").mkdir()
    (host / "var/lib/dpkg/status").write_text(_status(unconfigured))
    conf = host / "usr/src" / ("nvidia-current-" + VERSION) / "dkms.conf"
    conf.parent.mkdir(parents=True)
    conf.write_text('PACKAGE_NAME="nvidia-current"\nPACKAGE_VERSION="%s"\n' % VERSION)
    fake.mkdir()
    scripts = {
        "uname": '#!/bin/sh\ncat "$DLBOX_FIXTURE_GPU/state/running_kernel"\n',
        "dkms": '#!/bin/sh\nexec sh "$DLBOX_FIXTURE_GPU/bin/dkms" "$@"\n',
        "dpkg-query": '#!/bin/sh\nexec %s --admindir="$DLBOX_FIXTURE_ROOT/var/lib/dpkg" "$@"\n' % shutil.which("dpkg-query"),
        "tail": '#!/bin/sh\nlast=""; for a in "$@"; do last=$a; done\n'
                'n=""; for a in "$@"; do [ "$a" = "$last" ] && break; n="$n $a"; done\n'
                'exec %s $n "$DLBOX_FIXTURE_ROOT$last"\n' % shutil.which("tail"),
        # dpkg --configure -a: the half-configured DKMS package's postinst again (dkms_common.postinst: dkms autoinstall)
        "dpkg": '#!/bin/sh\necho "$*" >> "$DLBOX_FIXTURE_GPU/state/dpkg-calls"\n'
                '[ "$*" = "--configure -a" ] || exit 2\n'
                'echo "Setting up nvidia-kernel-dkms (%s) ..."\n'
                'if dkms autoinstall -k %s; then sed -i "s/^Status: install ok .*/Status: install ok installed/" '
                '"$DLBOX_FIXTURE_ROOT/var/lib/dpkg/status"; exit 0; fi\n'
                'echo "dpkg: error processing package nvidia-kernel-dkms (--configure):" >&2\n'
                'echo " installed nvidia-kernel-dkms package post-installation script subprocess returned error exit status 10" >&2\n'
                'echo "Errors were encountered while processing:" >&2\necho " nvidia-kernel-dkms" >&2\nexit 1\n' % (PKG_VERSION, KERNEL),
    }
    for name, text in scripts.items():
        (fake / name).write_text(text)
        (fake / name).chmod(0o755)
    return {"DLBOX_FIXTURE_GPU": str(fx), "DLBOX_FIXTURE_ROOT": str(host), "PATH": "%s:/usr/sbin:/usr/bin:/sbin:/bin" % fake}


def _decided_vars():
    options = {"method": "distro", "branch": "535", "kernel_modules": "proprietary", "profile": "server", "other_branch": "refuse",
               "change_branch": False, "keep_dir": "/var/backups/dlbox-nvidia-driver", "in_container": "skip",
               "build_kernels": [], "kernel_flavour": "", "secure_boot": "auto", "secure_boot_signing": "auto", "mok_key": "",
               "mok_certificate": "", "shim_mok_dir": "/var/lib/shim-signed/mok", "pin_name": "dlbox-00-nvidia-driver-branch.pref",
               "hostname": "gpu1", "distribution": "Debian", "distribution_version": "12", "kernel": KERNEL,
               "check_mode": False, "request_text": "{}"}
    plan = {"ok": True, "errors": [], "host": {"nvswitch": False},
            "stack": {"driver": {"branch": 535, "kernel_modules": "proprietary", "method": "distro", "packages": ["nvidia-driver"],
                                 "repo": None, "family": FAMILY, "min_version": "535.0", "version_available": None},
                      "fabric_manager": None}}
    return {"__opts": options, "__plan": plan}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("dkms-failure")
    link = tmp_path / "collections" / "ansible_collections" / "dlbox" / "stack"
    link.parent.mkdir(parents=True)
    link.symlink_to(ROOT, target_is_directory=True)
    block = _install_block()
    rescue = block["rescue"]
    configure = next(t for t in block["block"] if t.get("name", "").startswith("Configure the driver packages dpkg left"))
    # the first run's install fails in the model's DKMS build (the task the package's postinst runs)
    first_fail = {"name": "Install the driver packages (the DKMS build of the postinst fails)",
                  "ansible.builtin.command": {"argv": ["dkms", "install", "-m", "nvidia-current", "-v", VERSION, "-k", KERNEL]}}
    keep = {"name": "Keep the failure",
            "ansible.builtin.copy": {"content": "{{ ansible_failed_result.msg }}", "dest": "{{ out_dir }}/failed.txt", "mode": "0644"}}
    play = {"hosts": "all", "gather_facts": False, "environment": "{{ model_env }}", "tasks": [
        {"name": "Read what dpkg has (the next run's preflight)", "dlbox.stack.nvidia_driver_facts": {}, "register": "__facts"},
        {"name": "Plan", "ansible.builtin.set_fact": {"__nvidia_driver_decided": (
            "{{ __opts | dlbox.stack.nvidia_driver_plan(__plan, host={}, facts={'installed': __facts.installed}, "
            "data_path='%s') | combine({'change': {'action': 'install'}}) }}" % FROZEN)}},
        {"name": "Keep the plan's list", "ansible.builtin.copy": {
            "content": "{{ __nvidia_driver_decided.installed.unconfigured | to_json }}", "dest": "{{ out_dir }}/unconfigured.json",
            "mode": "0644"}},
        {"name": "The role's install, as far as it goes here", "block": [
            {"name": "Install", "block": [configure, dict(first_fail, when="first_run | bool")], "rescue": rescue}],
         "rescue": [keep]},
    ]}
    hosts = {"first-run": (True, False), "next-run": (True, True), "next-run-fixed": (False, True)}
    hostvars = {}
    for host, (fails, unconfigured) in hosts.items():
        base = tmp_path / host
        base.mkdir()
        env = _model(base, fails, unconfigured)
        (base / "out").mkdir()
        hostvars[host] = dict(_decided_vars(), ansible_connection="local", ansible_python_interpreter=sys.executable,
                              out_dir=str(base / "out"), model_env=env, first_run=host == "first-run")
    proc, _out = run_play(tmp_path, play, hostvars, env={"ANSIBLE_COLLECTIONS_PATH": str(tmp_path / "collections")})
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]

    def read(host, name):
        path = tmp_path / host / name
        return path.read_text(encoding="utf-8") if path.exists() else None
    return {host: {"failed": read(host, "out/failed.txt"), "unconfigured": yaml.safe_load(read(host, "out/unconfigured.json")),
                   "dpkg_calls": read(host, "fx/state/dpkg-calls"), "status": read(host, "host/var/lib/dpkg/status")}
            for host in hosts}


def test_the_first_failed_build_names_the_make_log_and_its_end(runs):
    failed = runs["first-run"]["failed"]
    assert failed.startswith("Installing NVIDIA driver branch 535 failed at 'Install the driver packages")
    assert "Consult %s for more information." % LOG in failed
    assert "The end of %s: DKMS make.log for nvidia-current-%s for kernel %s (x86_64)" % (LOG, VERSION, KERNEL) in failed
    assert "FIXTURE: the build fails (state/dkms-build-fails)" in failed
    assert runs["first-run"]["dpkg_calls"] is None  # nothing unconfigured before it: no configure


def test_the_next_run_does_not_count_half_configured_packages_as_installed(runs):
    run = runs["next-run"]
    assert sorted((x["name"], x["status"]) for x in run["unconfigured"]) == [("nvidia-driver", "iU"), ("nvidia-kernel-dkms", "iF")]
    assert run["dpkg_calls"] == "--configure -a\n"
    failed = run["failed"]
    assert "failed at 'Configure the driver packages dpkg left unconfigured" in failed
    assert "dpkg --configure -a" in failed and "dpkg left nvidia-kernel-dkms not configured" in failed
    assert "Consult %s for more information." % LOG in failed and "The end of %s" % LOG in failed


def test_with_the_build_fixed_the_configure_passes(runs):
    run = runs["next-run-fixed"]
    assert run["dpkg_calls"] == "--configure -a\n" and run["failed"] is None
    assert "half-configured" not in run["status"] and "unpacked" not in run["status"]
