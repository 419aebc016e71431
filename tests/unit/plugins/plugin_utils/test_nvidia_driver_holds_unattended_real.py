# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The REAL unattended-upgrade program, --dry-run, against a local file: archive (no Docker, no network, no root
file touched): the host a month later of tests/aptrepo/specs/ubuntu-noble-signed-month.yml (FIXTURE archive with
Ubuntu's names and Depends: a point release 580.178.04 -> 580.196.07 and kernel 6.8.0-1003 whose signed module is
built against it; Origin Ubuntu), Ubuntu's signed desktop set installed at 580.178.04 on kernel 6.8.0-1002.

The program is unattended-upgrades' own script run through its test hook ``main(options, rootdir)`` (its apt root is
ROOTDIR/etc/apt, ROOTDIR/var/lib/dpkg/status ...; the lock file moved under ROOTDIR), with /usr/bin/python3's
python3-apt. The role's unattended-upgrades file is rendered from roles/nvidia_driver/templates/unattended-upgrades.conf.j2
with the role's decision (nvidia_driver_holds.blacklist then nvidia_driver_kernel.keep_lists).

Where: the installed program (Debian/Ubuntu package unattended-upgrades with python3-distro-info), or a folder where
those .debs were unpacked (``dpkg-deb -x``), named by DLBOX_UNATTENDED_UPGRADE_ROOT. Without either the tests are
skipped (the CI image has neither)."""

from __future__ import annotations

import os
import subprocess
import sys

import jinja2
import pytest

from ansible_collections.dlbox.stack.plugins.plugin_utils import nvidia_driver_holds as nh
from ansible_collections.dlbox.stack.plugins.plugin_utils import nvidia_driver_kernel as nk

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "aptrepo"))
import apt_root  # noqa: E402  pylint: disable=wrong-import-position
import real_uu  # noqa: E402  pylint: disable=wrong-import-position

OLD = "580.178.04-0ubuntu0.24.04.1+fixture1"
USER = ["nvidia-driver-580-open", "libnvidia-gl-580", "libnvidia-common-580", "nvidia-kernel-common-580", "nvidia-kernel-source-580-open",
        "libnvidia-compute-580", "libnvidia-extra-580", "nvidia-compute-utils-580", "libnvidia-decode-580", "libnvidia-encode-580",
        "nvidia-utils-580", "xserver-xorg-video-nvidia-580", "libnvidia-cfg1-580", "libnvidia-fbc1-580"]
KERNEL = {"linux-image-6.8.0-1002-generic": "6.8.0-1002.1002", "linux-modules-6.8.0-1002-generic": "6.8.0-1002.1002",
          "linux-image-generic-hwe-24.04": "6.8.0-1002.1002", "linux-modules-nvidia-580-open-6.8.0-1002-generic": "6.8.0-1002.1002",
          "linux-modules-nvidia-580-open-generic-hwe-24.04": "6.8.0-1002.1002",
          "linux-generic-hwe-24.04": "6.8.0-1002.1002", "linux-headers-generic-hwe-24.04": "6.8.0-1002.1002",
          "linux-headers-6.8.0-1002-generic": "6.8.0-1002.1002"}
SET = ["nvidia-driver-580-open", "linux-modules-nvidia-580-open-generic-hwe-24.04", "linux-modules-nvidia-580-open-6.8.0-1002-generic"]
PATTERNS = ["^(lib)?nvidia(?!-mig-manager$)", "^libcuda", "^firmware-nvidia", "^xserver-xorg-video-nvidia"]  # data/compat.yml
PROGRAM = real_uu.program()
pytestmark = pytest.mark.skipif(PROGRAM is None, reason="unattended-upgrades (with python3-apt) is not installed here, nor unpacked "
                                                        "in DLBOX_UNATTENDED_UPGRADE_ROOT")


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    base = str(tmp_path_factory.mktemp("uu"))
    subprocess.run([sys.executable, os.path.join(ROOT, "tests", "aptrepo", "build_repo.py"),
                    os.path.join(ROOT, "tests", "aptrepo", "specs", "ubuntu-noble-signed-month.yml"), os.path.join(base, "repo"),
                    "--key-dir", os.path.join(base, "keys")], check=True, capture_output=True)
    return os.path.join(base, "repo")


def _blacklist_file(names):
    with open(os.path.join(ROOT, "roles", "nvidia_driver", "templates", "unattended-upgrades.conf.j2"), encoding="utf-8") as fh:
        template = jinja2.Template(fh.read())
    return template.render(ansible_managed="test", __nvidia_driver_blacklist=names,
                           __nvidia_driver_decided={"blacklist_reason": "test"})


def unattended(repo, rootdir, held=(), blacklisted=(), want=None):
    """Run the real unattended-upgrade --dry-run on a fresh apt root: {upgraded, unpacked}. ``want``: the installed
    {name: version} (this file's host when None; test_nvidia_driver_month_hgx_apt.py passes the HGX host's)."""
    if want is None:
        want = dict((n, OLD) for n in USER)
        want.update(KERNEL)
    with open(os.path.join(repo, "Packages"), encoding="utf-8") as fh:
        chosen = [s for s in apt_root.stanzas(fh.read()) if want.get(s["Package"]) == s["Version"]]
    assert len(chosen) == len(want)
    for sub in ("etc/apt/apt.conf.d", "etc/apt/preferences.d", "var/lib/dpkg/updates", "var/lib/apt/lists/partial",
                "var/cache/apt/archives/partial", "var/log/unattended-upgrades"):
        os.makedirs(os.path.join(rootdir, sub))
    status = []
    for stanza in chosen:
        fields = dict((k, v) for k, v in stanza.items() if k in apt_root.STATUS_FIELDS)
        fields["Status"] = ("hold" if stanza["Package"] in held else "install") + " ok installed"
        fields.setdefault("Maintainer", "fixture")
        fields["Description"] = "FIXTURE"
        status.append("\n".join("%s: %s" % kv for kv in fields.items()))
    with open(os.path.join(rootdir, "var", "lib", "dpkg", "status"), "w", encoding="utf-8") as fh:
        fh.write("\n\n".join(status) + "\n")
    with open(os.path.join(rootdir, "etc", "apt", "sources.list"), "w", encoding="utf-8") as fh:
        fh.write("deb [trusted=yes] file:%s ./\n" % repo)
    with open(os.path.join(rootdir, "etc", "apt", "apt.conf.d", "50unattended-upgrades"), "w", encoding="utf-8") as fh:
        # Ubuntu's own file allows ${distro_id}:${distro_codename}[-security|-updates]; the FIXTURE archive is Origin Ubuntu
        fh.write('APT::Architecture "amd64";\nUnattended-Upgrade::Origins-Pattern { "origin=Ubuntu"; };\n'
                 'Unattended-Upgrade::DevRelease "true";\n')
    with open(os.path.join(rootdir, "etc", "apt", "apt.conf.d", "51dlbox-nvidia-driver"), "w", encoding="utf-8") as fh:
        fh.write(_blacklist_file(list(blacklisted)))
    script, env = PROGRAM
    update = subprocess.run(["apt-get", "-o", "Dir=" + rootdir, "-o", "Dir::State::status=%s/var/lib/dpkg/status" % rootdir, "update"],
                            capture_output=True, text=True, env=env, check=False)
    assert update.returncode == 0, update.stderr
    run = real_uu.dry_run(script, rootdir, env)
    out = run.stdout + run.stderr
    assert run.returncode == 0 and "Option --dry-run given" in out, out[-3000:]
    upgraded, unpack = real_uu.upgraded_and_unpacked(out)
    return {"upgraded": upgraded, "unpacked": [os.path.basename(p).split("_", 1)[0] for p in unpack], "log": out}


def kernels_alone(result):
    """New kernel images the run would unpack without their signed NVIDIA module."""
    sim = "\n".join("Inst %s (x)" % name for name in result["unpacked"])
    return nh.kernel_without_module(sim, list(KERNEL))


def role_kept_out(signing):
    installed = USER + list(KERNEL)
    holds = nh.hold_list(SET, installed, signing, "distro")
    listed = nh.blacklist(SET, installed, PATTERNS, signing, ["generic-hwe-24.04"],
                          ["linux-modules-nvidia-580-open-generic-hwe-24.04"])["names"]
    return nk.keep_lists(holds, listed, signing, 580)


def test_the_real_unattended_upgrade_moves_the_kernel_with_its_module_and_driver(repo, tmp_path):
    holds, listed = role_kept_out("precompiled")
    result = unattended(repo, str(tmp_path / "root"), holds, listed)
    print(result["log"][-4000:])
    for name in ("linux-image-generic-hwe-24.04", "linux-modules-nvidia-580-open-generic-hwe-24.04", "nvidia-kernel-common-580",
                 "libnvidia-compute-580", "nvidia-driver-580-open"):
        assert name in result["upgraded"], result["upgraded"]
    assert {"linux-image-6.8.0-1003-generic", "linux-modules-nvidia-580-open-6.8.0-1003-generic"} <= set(result["unpacked"])
    assert kernels_alone(result) == []


@pytest.mark.parametrize("rule", ["dkms blacklist", "old holds"])
def test_the_real_unattended_upgrade_brings_the_kernel_alone_when_the_driver_is_kept_out(repo, tmp_path, rule):
    # the controls: the DKMS path's blacklist (the user space) on this signed host, and the first issue-48 rule (the
    # user space held): unattended-upgrades' sanity check refuses the driver's change and installs the kernel alone
    holds, listed = role_kept_out("dkms")
    result = unattended(repo, str(tmp_path / "root"), holds if rule == "old holds" else (),
                        listed if rule == "dkms blacklist" else ())
    assert "linux-image-generic-hwe-24.04" in result["upgraded"] and "nvidia-kernel-common-580" not in result["upgraded"]
    assert kernels_alone(result) == ["6.8.0-1003-generic"], result["unpacked"]
