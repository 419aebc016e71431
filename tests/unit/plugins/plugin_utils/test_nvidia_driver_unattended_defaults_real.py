# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The REAL unattended-upgrade program with Ubuntu's DEFAULT configuration (issue 48 red team M7, M8, M9), against
the FIXTURE month archive (tests/aptrepo/specs/ubuntu-noble-signed-month.yml: a point release 580.178.04 -> 580.196.07,
kernel 6.8.0-1003 whose signed module needs it, 6.8.0-1002's module respun "+1") split into Ubuntu's pockets: noble (the
installed versions), noble-updates (everything new) and noble-security (the new kernel with its module; the driver too
or not, per test). Origin Ubuntu, Suite noble[-pocket], Codename noble, as Ubuntu's Release files.

unattended-upgrades' configuration is Ubuntu's own file, verbatim (tests/fixtures/unattended/50unattended-upgrades.Ubuntu-2.9.1:
``${distro_id}:${distro_codename}``, ``-security``, the ESM pockets; -updates commented out) with the package's
20auto-upgrades; the program runs with ``${distro_id}`` Ubuntu and ``${distro_codename}`` noble (its DISTRO_ID and
DISTRO_CODENAME, lsb_release's answers on a 24.04 host). The other real-u-u tests (test_nvidia_driver_holds_unattended_real.py)
allow every origin.

Each test compares what the real program does with what the role decides
(plugin_utils.nvidia_driver_unattended.decide) from the same host's ``apt-config dump``, ``apt-cache policy`` and
``apt-get -s upgrade --with-new-pkgs``. Skipped without unattended-upgrades and python3-apt (as the other real-u-u tests;
DLBOX_UNATTENDED_UPGRADE_ROOT names an unpacked copy)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from ansible_collections.dlbox.stack.plugins.plugin_utils import nvidia_driver_holds as nh
from ansible_collections.dlbox.stack.plugins.plugin_utils import nvidia_driver_unattended as nu

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "aptrepo"))
import apt_root  # noqa: E402  pylint: disable=wrong-import-position
import real_uu  # noqa: E402  pylint: disable=wrong-import-position

OLD = "580.178.04-0ubuntu0.24.04.1+fixture1"
NEW = "580.196.07-0ubuntu0.24.04.1+fixture1"
USER = ["nvidia-driver-580-open", "libnvidia-gl-580", "libnvidia-common-580", "nvidia-kernel-common-580", "nvidia-kernel-source-580-open",
        "libnvidia-compute-580", "libnvidia-extra-580", "nvidia-compute-utils-580", "libnvidia-decode-580", "libnvidia-encode-580",
        "nvidia-utils-580", "xserver-xorg-video-nvidia-580", "libnvidia-cfg1-580", "libnvidia-fbc1-580"]
KERNEL = {"linux-image-6.8.0-1002-generic": "6.8.0-1002.1002", "linux-modules-6.8.0-1002-generic": "6.8.0-1002.1002",
          "linux-image-generic-hwe-24.04": "6.8.0-1002.1002", "linux-modules-nvidia-580-open-6.8.0-1002-generic": "6.8.0-1002.1002",
          "linux-modules-nvidia-580-open-generic-hwe-24.04": "6.8.0-1002.1002",
          "linux-generic-hwe-24.04": "6.8.0-1002.1002", "linux-headers-generic-hwe-24.04": "6.8.0-1002.1002",
          "linux-headers-6.8.0-1002-generic": "6.8.0-1002.1002"}
# M9: an older kernel still in /boot with the signed module of ITS day, built against 580.178.04 and never respun
# (as Ubuntu's noble-updates left linux-modules-nvidia-580-open-6.8.0-149-generic at 6.8.0-149.149: RECORDED
# tests/fixtures/holds/ubuntu2404-noble-updates-nvidia-580.txt, Depends nvidia-kernel-common-580 (<= 580.178.04-1),
# nvidia-kernel-common-580 (>= 580.178.04)); installed only (dpkg status), as the archive dropped them.
OLDER = [{"Package": "linux-image-6.8.0-1001-generic", "Version": "6.8.0-1001.1001", "Architecture": "amd64"},
         {"Package": "linux-modules-nvidia-580-open-6.8.0-1001-generic", "Version": "6.8.0-1001.1001", "Architecture": "amd64",
          "Depends": "linux-image-6.8.0-1001-generic | linux-image-unsigned-6.8.0-1001-generic, "
                     "nvidia-kernel-common-580 (<= 580.178.04-1), nvidia-kernel-common-580 (>= 580.178.04)"}]
UBUNTU_DEFAULT = os.path.join(ROOT, "tests", "fixtures", "unattended", "50unattended-upgrades.Ubuntu-2.9.1")
# unattended-upgrades' data/20auto-upgrades (what its debconf question writes when automatic updates are on)
AUTO = 'APT::Periodic::Update-Package-Lists "1";\nAPT::Periodic::Unattended-Upgrade "1";\n'
PROGRAM = real_uu.program(("apt-get", "apt-config"))
pytestmark = pytest.mark.skipif(PROGRAM is None, reason="unattended-upgrades (with python3-apt) is not installed here, nor unpacked "
                                                        "in DLBOX_UNATTENDED_UPGRADE_ROOT")


def month_archive():
    """The month archive (built once per process) and its Packages stanzas."""
    # pylint: disable-next=protected-access
    repo = apt_root._built(os.path.join(ROOT, "tests", "aptrepo", "specs", "ubuntu-noble-signed-month.yml"))
    with open(os.path.join(repo, "Packages"), encoding="utf-8") as fh:
        return repo, fh.read().split("\n\n")


@pytest.fixture(scope="module")
def packages():
    return month_archive()


def _pockets(base, repo, blocks, driver_in_security):
    """noble: the installed versions; noble-updates: every newer one; noble-security: the new kernel, its metas and its
    module (``driver_in_security``: the driver's point release too). Filenames stay relative to the archive's root."""
    installed = dict((n, OLD) for n in USER)
    installed.update(KERNEL)
    pockets = {"noble": [], "noble-updates": [], "noble-security": []}
    for block in blocks:
        fields = apt_root.stanzas(block)
        if not fields:
            continue
        name, version = fields[0]["Package"], fields[0]["Version"]
        if installed.get(name) == version or version == OLD:
            pockets["noble"].append(block)
            continue
        pockets["noble-updates"].append(block)
        if name.startswith("linux-") or driver_in_security:
            pockets["noble-security"].append(block)
    lines = []
    for suite, chosen in pockets.items():
        folder = os.path.join(base, "pockets", suite)
        os.makedirs(folder)
        with open(os.path.join(folder, "Packages"), "w", encoding="utf-8") as fh:
            fh.write("\n\n".join(b.strip("\n") for b in chosen) + "\n")
        with open(os.path.join(folder, "Release"), "w", encoding="utf-8") as fh:
            fh.write("Origin: Ubuntu\nLabel: dlbox fixture\nSuite: %s\nVersion: 24.04\nCodename: noble\nArchitectures: amd64\n"
                     "Description: FIXTURE: the month archive's %s pocket (test_nvidia_driver_unattended_defaults_real.py)\n"
                     % (suite, suite))
        # deb URI DIR/: Filename (./x.deb) is relative to URI, the month archive
        lines.append("deb [trusted=yes] file:%s %s/\n" % (repo, os.path.relpath(folder, repo)))
    return "".join(lines)


def host(tmp_path, packages, driver_in_security, older=False):
    """A fresh apt root with Ubuntu's default unattended-upgrades configuration: {opts, env, root, installed}."""
    repo, blocks = packages
    rootdir = str(tmp_path / "root")
    for sub in ("etc/apt/apt.conf.d", "etc/apt/preferences.d", "var/lib/dpkg/updates", "var/lib/apt/lists/partial",
                "var/cache/apt/archives/partial", "var/log/unattended-upgrades"):
        os.makedirs(os.path.join(rootdir, sub))
    want = dict((n, OLD) for n in USER)
    want.update(KERNEL)
    status = []
    chosen = [apt_root.stanzas(b)[0] for b in blocks if apt_root.stanzas(b)]
    chosen = [s for s in chosen if want.get(s["Package"]) == s["Version"]] + (OLDER if older else [])
    for stanza in chosen:
        fields = dict((k, v) for k, v in stanza.items() if k in apt_root.STATUS_FIELDS)
        fields["Status"] = "install ok installed"
        fields.setdefault("Maintainer", "fixture")
        fields["Description"] = "FIXTURE"
        status.append("\n".join("%s: %s" % kv for kv in fields.items()))
    with open(os.path.join(rootdir, "var", "lib", "dpkg", "status"), "w", encoding="utf-8") as fh:
        fh.write("\n\n".join(status) + "\n")
    with open(os.path.join(rootdir, "etc", "apt", "sources.list"), "w", encoding="utf-8") as fh:
        fh.write(_pockets(str(tmp_path), repo, blocks, driver_in_security))
    shutil.copy(UBUNTU_DEFAULT, os.path.join(rootdir, "etc", "apt", "apt.conf.d", "50unattended-upgrades"))
    with open(os.path.join(rootdir, "etc", "apt", "apt.conf.d", "20auto-upgrades"), "w", encoding="utf-8") as fh:
        fh.write(AUTO)
    with open(os.path.join(rootdir, "etc", "apt", "apt.conf.d", "00arch"), "w", encoding="utf-8") as fh:
        fh.write('APT::Architecture "amd64";\n')
    config = os.path.join(rootdir, "apt.conf")
    with open(config, "w", encoding="utf-8") as fh:
        fh.write('Dir "%s/";\nDir::State::status "%s/var/lib/dpkg/status";\n' % (rootdir, rootdir))
    env = dict(PROGRAM[1] if PROGRAM else dict(os.environ, LC_ALL="C"), APT_CONFIG=config)
    update = subprocess.run(["apt-get", "update"], capture_output=True, text=True, env=env, check=False)
    assert update.returncode == 0, update.stderr
    return {"env": env, "root": rootdir, "installed": [s["Package"] for s in chosen]}


def role_decides(machine):
    """The role's inputs, read from the host as install.yml reads them, and its decision."""
    def out(*argv):
        return subprocess.run(list(argv), capture_output=True, text=True, env=machine["env"], check=True).stdout
    sim = out("apt-get", "-s", "upgrade", "--with-new-pkgs")
    return nu.decide(sim, out("apt-cache", "policy"), out("apt-config", "dump"), "Ubuntu", "noble", machine["installed"]), sim


def unattended(machine):
    """The real unattended-upgrade --dry-run: {upgraded, unpacked, log}."""
    script, _env = PROGRAM
    env = dict(machine["env"])
    env.pop("APT_CONFIG")  # the program sets its own root (main(options, rootdir)) and reads ROOT/etc/apt
    # the program's ${distro_id}/${distro_codename} are lsb_release -is / -cs on Ubuntu 24.04
    run = real_uu.dry_run(script, machine["root"], env, distro=("Ubuntu", "noble"))
    log = run.stdout + run.stderr
    assert run.returncode == 0 and "Option --dry-run given" in log, log[-3000:]
    upgraded, unpack = real_uu.upgraded_and_unpacked(log)
    # the .debs it unpacks, name and version (the status stanzas carry fewer fields than the archive's, so apt also
    # "upgrades" some packages to the same version: only the versions tell what moved)
    debs = [os.path.basename(p).split("_") for p in unpack]
    return {"upgraded": upgraded, "unpacked": [d[0] for d in debs], "versions": dict((d[0], d[1]) for d in debs if len(d) > 1),
            "log": log}


def kernels_alone(result, installed):
    sim = "\n".join("Inst %s (x)" % name for name in result["unpacked"])
    return nh.kernel_without_module(sim, installed)


def test_ubuntu_default_origins_a_security_kernel_whose_driver_is_in_updates_comes_alone(tmp_path, packages):
    machine = host(tmp_path, packages, driver_in_security=False)
    decided, sim = role_decides(machine)
    # the all-origins simulation brings kernel, module and driver together: the old check saw nothing
    assert nh.kernel_without_module(sim, machine["installed"]) == []
    result = unattended(machine)
    print(result["log"][-3000:])
    assert "linux-image-6.8.0-1003-generic" in result["unpacked"] and result["versions"].get("nvidia-kernel-common-580") != NEW
    assert kernels_alone(result, machine["installed"]) == ["6.8.0-1003-generic"]
    # the role's decision from the host's own configuration says the same
    assert [k["kernel"] for k in decided["kernels_alone"]] == ["6.8.0-1003-generic"] and not decided["driver"]["moves"]
    assert "noble-updates" in decided["message"], decided["message"]


def test_ubuntu_default_origins_driver_and_kernel_in_security_move_together(tmp_path, packages):
    machine = host(tmp_path, packages, driver_in_security=True)
    decided, _sim = role_decides(machine)
    result = unattended(machine)
    assert {"linux-image-6.8.0-1003-generic", "linux-modules-nvidia-580-open-6.8.0-1003-generic"} <= set(result["unpacked"])
    assert result["versions"]["nvidia-kernel-common-580"] == NEW and kernels_alone(result, machine["installed"]) == []
    assert decided["driver"]["moves"] and decided["kernels_with_module"] == ["6.8.0-1003-generic"], decided["message"]


def test_an_older_kernels_module_keeps_the_driver_back_and_the_new_kernel_comes_alone(tmp_path, packages):
    # M9 with the real program: the point release must remove 6.8.0-1001's module (built against 580.178.04), and
    # unattended-upgrades never removes a package, so it keeps the driver and brings the new kernel alone
    machine = host(tmp_path, packages, driver_in_security=True, older=True)
    decided, _sim = role_decides(machine)
    result = unattended(machine)
    print(result["log"][-3000:])
    assert result["versions"].get("nvidia-kernel-common-580") != NEW
    assert kernels_alone(result, machine["installed"]) == ["6.8.0-1003-generic"]
    assert [k["kernel"] for k in decided["kernels_alone"]] == ["6.8.0-1003-generic"], decided["message"]
    assert not decided["driver"]["moves"] and "apt keeps back" in decided["message"] and "nvidia-kernel-common-580" in decided["driver"]["packages"]


def test_a_full_upgrade_removes_the_older_kernels_module_and_the_role_names_that_kernel(tmp_path, packages):
    # M9 with the real apt: what an administrator's full-upgrade (or the role's update) does on the same host; the
    # kernels in /boot read as nvidia_driver_facts reads them (1001 and 1002 installed, 1003 arriving)
    machine = host(tmp_path, packages, driver_in_security=True, older=True)
    sim = subprocess.run(["apt-get", "-s", "dist-upgrade"], capture_output=True, text=True, env=machine["env"], check=True).stdout
    assert "Remv linux-modules-nvidia-580-open-6.8.0-1001-generic" in sim
    modules = {"6.8.0-1001-generic": OLDER[1]["Depends"],
               "6.8.0-1002-generic": "linux-image-6.8.0-1002-generic, nvidia-kernel-common-580 (<= 580.178.04-1), "
                                     "nvidia-kernel-common-580 (>= 580.178.04)"}
    out = nu.boot_without_module(["6.8.0-1001-generic", "6.8.0-1002-generic", "6.8.0-1003-generic"], "precompiled", "580.196.07",
                                 modules, simulation=sim)
    assert [i["kernel"] for i in out] == ["6.8.0-1001-generic"], out
    # before the release: the forecast names the same kernel (1002 is the newest in /boot, respun as Ubuntu respins it)
    assert [i["kernel"] for i in nu.next_release_forecast(["6.8.0-1001-generic", "6.8.0-1002-generic"], "precompiled",
                                                          modules)] == ["6.8.0-1001-generic"]
