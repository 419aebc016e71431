# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 48 must-show, heavy (make test-heavy): against Ubuntu's LIVE archive (noble, noble-updates; main, restricted),
by apt simulation, a 24.04 host with the role's signed-module set and an older kernel gets the newest kernel and its
signed module together from apt-get upgrade.

No container: the test machine's real apt (apt 2.6 of Debian 12; Ubuntu's keyring is not on it, so the sources are
[trusted=yes]: nothing is installed, apt only simulates) in a throwaway root with its own sources, lists and dpkg
status. Through the suite's package cache (tests/scripts/test-cache.sh, apt-cacher-ng on 127.0.0.1:3142) when it runs
and DLBOX_TEST_CACHE is not 0; direct otherwise, as the live-archive Molecule scenarios go with the cache off.

The host: dpkg's status built from the archive's REAL control data (tests/fixtures/kernel/build-status.sh: no file
unpacked, no maintainer script) for the kernel before the newest one whose 580-server-open signed module apt can
install with the archive's nvidia-kernel-common-580-server (Ubuntu respins the module of the kernel of the day before
against a point release: 6.8.0-151.151+1 on 2026-12-06), the role's signed set for the server profile (data/compat.yml:
nvidia-headless-no-dkms-{branch}-server-open, nvidia-utils-{branch}-server, linux-modules-nvidia-{branch}-server-open-
{flavour}), and the flavour metas as they were at that kernel (the archive's stanzas of linux-generic, linux-image-
generic, linux-headers-generic and linux-modules-nvidia-580-server-open-generic with that kernel's ABI and version:
the archive keeps only the newest meta). The role's holds on that set (plugin_utils.nvidia_driver_holds.hold_list: none
on the signed path) are applied. Control: the module meta held as older versions of the role held it -> the newest
kernel comes WITHOUT its module (the failure the rule prevents).

apt-mark showhold and apt-cache policy are printed before and after (pytest -s shows them)."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "tools"))
from dlboxdata import collection  # noqa: E402  pylint: disable=wrong-import-position

collection.importable()
from ansible_collections.dlbox.stack.plugins.plugin_utils import nvidia_driver_holds as nh  # noqa: E402

pytestmark = pytest.mark.heavy

BUILD_STATUS = ROOT / "tests" / "fixtures" / "kernel" / "build-status.sh"
ARCHIVE = os.environ.get("DLBOX_UBUNTU_MIRROR", "http://archive.ubuntu.com/ubuntu")
BRANCH, FLAVOUR = "580", "generic"
MODULE_META = "linux-modules-nvidia-%s-server-open-%s" % (BRANCH, FLAVOUR)
SIGNED_SET = ["nvidia-headless-no-dkms-%s-server-open" % BRANCH, "nvidia-utils-%s-server" % BRANCH, MODULE_META]
KERNEL_METAS = ["linux-%s" % FLAVOUR, "linux-image-%s" % FLAVOUR, "linux-headers-%s" % FLAVOUR]
_DROP = re.compile(r"^(Filename|Size|MD5sum|SHA1|SHA256|SHA512|Description-md5|Task|Supported|Phased-Update-Percentage):")


def _cache_proxy():
    if os.environ.get("DLBOX_TEST_CACHE", "1") == "0":
        return None
    try:
        with socket.create_connection(("127.0.0.1", 3142), timeout=2):
            return "http://127.0.0.1:3142"
    except OSError:
        return None


class Apt:
    """apt in a throwaway root: APT_CONFIG names its own Dir, sources, lists and dpkg status."""

    def __init__(self, root):
        self.root = root
        self.status = root / "var/lib/dpkg/status"
        for sub in ("etc/apt/apt.conf.d", "etc/apt/preferences.d", "etc/apt/sources.list.d", "var/lib/apt/lists/partial",
                    "var/cache/apt/archives/partial", "var/lib/dpkg"):
            (root / sub).mkdir(parents=True, exist_ok=True)
        self.status.write_text("", encoding="utf-8")
        proxy = _cache_proxy()
        (root / "etc/apt/apt.conf").write_text(
            'Dir "%s/";\nDir::State::status "%s";\nDir::Etc::Trusted "/nonexistent";\nDir::Etc::TrustedParts "/nonexistent";\n'
            'APT::Architecture "amd64";\nAPT::Architectures { "amd64"; };\nAcquire::Languages "none";\n'
            'Debug::NoLocking "true";\nDir::Bin::dpkg "/bin/false";\n%s'
            % (root, self.status, 'Acquire::http::Proxy "%s";\n' % proxy if proxy else ""), encoding="utf-8")
        (root / "etc/apt/sources.list").write_text(
            "deb [trusted=yes] %s noble main restricted\ndeb [trusted=yes] %s noble-updates main restricted\n" % (ARCHIVE, ARCHIVE),
            encoding="utf-8")
        self.env = dict(os.environ, APT_CONFIG=str(root / "etc/apt/apt.conf"), LC_ALL="C", DPKG_STATUS=str(self.status))
        self.proxy = proxy

    def run(self, *argv, check=True):
        proc = subprocess.run(list(argv), capture_output=True, text=True, env=self.env, timeout=600, check=False)
        if check and proc.returncode != 0:
            raise AssertionError("%s: exit %s\n%s%s" % (" ".join(argv), proc.returncode, proc.stdout[-3000:], proc.stderr[-3000:]))
        return proc.stdout

    def show(self, name):
        return self.run("apt-cache", "show", "--no-all-versions", name).split("\n\n")[0]

    def version(self, name):
        return re.search(r"^Version: (\S+)", self.show(name), re.M).group(1)

    def installed_version(self, name):
        match = re.search(r"^Package: %s\n(?:.+\n)*?Version: (\S+)" % re.escape(name), self.status.read_text(encoding="utf-8"), re.M)
        return match.group(1) if match else None

    def hold(self, names):
        text = self.status.read_text(encoding="utf-8")
        for name in names:
            text = re.sub(r"^(Package: %s\n)Status: install ok installed$" % re.escape(name), r"\1Status: hold ok installed", text,
                          flags=re.M)
        self.status.write_text(text, encoding="utf-8")

    def report(self, title, names):
        print("\n===== %s (apt %s)" % (title, "via the test cache %s" % self.proxy if self.proxy else "direct"))
        print("$ apt-mark showhold\n" + (self.run("apt-mark", "showhold").strip() or "(none)"))
        print("$ apt-cache policy " + " ".join(names) + "\n" + self.run("apt-cache", "policy", *names))


def _stanza_as_installed(stanza, version, replace):
    lines = []
    skip = False
    for line in stanza.splitlines():
        if _DROP.match(line):
            skip = True
            continue
        if not line.startswith(" "):
            skip = False
        if skip:
            continue
        for old, new in replace:
            line = line.replace(old, new)
        if line.startswith("Version:"):
            line = "Version: " + version
        if line.startswith("Description-en:"):
            line = "Description:" + line[len("Description-en:"):]
        lines.append(line)
        if line.startswith("Package:"):
            lines.append("Status: install ok installed")
    return "\n".join(lines) + "\n\n"


def _inst(text):
    return re.findall(r"^Inst (\S+)", text, re.M)


@pytest.fixture(scope="module")
def host(tmp_path_factory):
    apt = Apt(tmp_path_factory.mktemp("noble-live") / "root")
    proc = subprocess.run(["apt-get", "update"], capture_output=True, text=True, env=apt.env, timeout=600, check=False)
    if proc.returncode != 0 or "Failed to fetch" in proc.stdout + proc.stderr:
        pytest.skip("Ubuntu's archive did not answer (best-effort reachable, ../shared/docs/test-platform.md): "
                    + (proc.stdout + proc.stderr)[-500:])
    newest = re.search(r"Depends: linux-image-(\d+\.\d+\.\d+-(\d+))-%s" % FLAVOUR,
                       apt.run("apt-cache", "depends", "linux-image-%s" % FLAVOUR)).groups()
    names = apt.run("apt-cache", "pkgnames", "linux-modules-nvidia-%s-server-open-" % BRANCH)
    abis = sorted((int(m.group(1)) for m in re.finditer(r"^linux-modules-nvidia-%s-server-open-6\.8\.0-(\d+)-%s$" % (BRANCH, FLAVOUR),
                                                        names, re.M)), reverse=True)
    old = None
    for abi in [a for a in abis if a < int(newest[1])]:
        wanted = ["linux-image-6.8.0-%d-%s" % (abi, FLAVOUR), "linux-modules-nvidia-%s-server-open-6.8.0-%d-%s" % (BRANCH, abi, FLAVOUR)]
        if subprocess.run(["apt-get", "-s", "install"] + wanted + SIGNED_SET[:2], capture_output=True, env=apt.env, timeout=300,
                          check=False).returncode == 0:
            old = abi
            break
    assert old, "no older kernel whose signed module apt can install with the archive's driver (%s)" % abis
    old_kernel = "6.8.0-%d-%s" % (old, FLAVOUR)
    old_module = "linux-modules-nvidia-%s-server-open-%s" % (BRANCH, old_kernel)
    apt.run("sh", str(BUILD_STATUS), "linux-image-" + old_kernel, "linux-modules-" + old_kernel, "linux-modules-extra-" + old_kernel,
            "linux-headers-" + old_kernel, old_module, *SIGNED_SET[:2], "linux-firmware", "intel-microcode", "amd64-microcode")
    # the metas as they were at the older kernel: the archive's stanzas with that kernel's ABI and version
    new_abi = newest[1]
    kernel_version, module_version = "6.8.0-%d.%d" % (old, old), apt.installed_version(old_module)
    with apt.status.open("a", encoding="utf-8") as status:
        for meta in KERNEL_METAS:
            now = apt.version(meta)
            status.write(_stanza_as_installed(apt.show(meta), kernel_version,
                                              [("(= %s)" % now, "(= %s)" % kernel_version), ("-%s-" % new_abi, "-%d-" % old)]))
        now = apt.version(MODULE_META)
        status.write(_stanza_as_installed(apt.show(MODULE_META), module_version,
                                          [("(= %s)" % now, "(= %s)" % module_version), ("-%s-" % new_abi, "-%d-" % old)]))
    apt.run("apt-get", "check")  # the host is consistent before the upgrade
    installed = re.findall(r"^Package: (\S+)", apt.status.read_text(encoding="utf-8"), re.M)
    holds = nh.hold_list(SIGNED_SET, installed, "precompiled", "distro")
    apt.hold(holds)
    return {"apt": apt, "newest": newest[0] + "-" + FLAVOUR, "old": old_kernel, "holds": holds,
            "policy": KERNEL_METAS + [MODULE_META, "nvidia-kernel-common-%s-server" % BRANCH, "linux-image-" + old_kernel]}


def test_the_role_holds_nothing_of_the_signed_set(host):
    assert host["holds"] == []
    assert host["apt"].run("apt-mark", "showhold").strip() == ""


def test_apt_get_upgrade_brings_the_newest_kernel_and_its_signed_module_together(host):
    apt, newest = host["apt"], host["newest"]
    apt.report("before: kernel %s, the signed 580-server-open set" % host["old"], host["policy"])
    plain = apt.run("apt-get", "-s", "upgrade")
    print("$ apt-get -s upgrade\n" + "\n".join(line for line in plain.splitlines() if not line.startswith(("Conf ", "Inst "))))
    # plain apt-get upgrade installs no new package: the kernel metas and the module meta are kept back TOGETHER
    kept = re.search(r"kept back:\n((?:  .*\n)+)", plain)
    assert kept and set(KERNEL_METAS + [MODULE_META]) <= set(kept.group(1).split()), plain
    assert "linux-image-" + newest not in _inst(plain)
    upgrade = apt.run("apt-get", "-s", "upgrade", "--with-new-pkgs")
    inst = _inst(upgrade)
    print("$ apt-get -s upgrade --with-new-pkgs: kernel and NVIDIA lines\n"
          + "\n".join(line for line in upgrade.splitlines() if line.startswith("Inst ") and ("linux-" in line or "nvidia" in line)))
    assert "linux-image-" + newest in inst, upgrade
    assert "linux-modules-nvidia-%s-server-open-%s" % (BRANCH, newest) in inst, upgrade
    assert set(KERNEL_METAS + [MODULE_META]) <= set(inst), upgrade
    assert nh.kernel_without_module(upgrade) == []
    dist = apt.run("apt-get", "-s", "dist-upgrade")
    assert {"linux-image-" + newest, "linux-modules-nvidia-%s-server-open-%s" % (BRANCH, newest)} <= set(_inst(dist))
    apt.report("after (simulated: the status is unchanged)", host["policy"])


def test_control_the_module_meta_held_the_newest_kernel_comes_without_its_module(host):
    apt, newest = host["apt"], host["newest"]
    saved = apt.status.read_text(encoding="utf-8")
    try:
        apt.hold([MODULE_META])
        apt.report("control: %s held (older versions of the role)" % MODULE_META, host["policy"])
        upgrade = apt.run("apt-get", "-s", "upgrade", "--with-new-pkgs")
        inst = _inst(upgrade)
        assert "linux-image-" + newest in inst and "linux-modules-nvidia-%s-server-open-%s" % (BRANCH, newest) not in inst, upgrade
        assert nh.kernel_without_module(upgrade) == [newest]
    finally:
        apt.status.write_text(saved, encoding="utf-8")
