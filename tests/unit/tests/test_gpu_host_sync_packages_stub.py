# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The FIXTURE GPU host's apt hook (tests/fixtures/gpu_host/bin/sync-packages, standing in for a DKMS package's postinst)
fails the way the real postinst does when the module does not build (state/dkms-build-fails): DKMS's and dpkg's recorded
lines, the DKMS package left half-configured, no module laid, a non-zero exit that fails the apt run. Run on the stub
itself against a temporary root (DLBOX_FIXTURE_ROOT) and dpkg database (the real dpkg-query with --admindir)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
GPU = ROOT / "tests" / "fixtures" / "gpu_host"
KERNEL = "6.8.0-1-fixture"
PKG = "nvidia-dkms-580-open"
VERSION = "580.95.05"
STANZA = """Package: %s
Status: install ok installed
Priority: optional
Section: libs
Maintainer: FIXTURE
Architecture: amd64
Version: %s-0ubuntu1+fixture1
Description: FIXTURE marker
"""

pytestmark = pytest.mark.skipif(shutil.which("dpkg-query") is None, reason="needs dpkg-query (the real dpkg database reader)")


def _model(tmp_path, fails, built=False):
    fixture = tmp_path / "fx"
    fixture.mkdir()
    (fixture / "bin").symlink_to(GPU / "bin")
    state = fixture / "state"
    state.mkdir()
    if fails:
        (state / "dkms-build-fails").write_text("")
    root = tmp_path / "root"
    (root / "lib" / "modules" / KERNEL / "build").mkdir(parents=True)
    (root / "usr" / "local" / "bin").mkdir(parents=True)
    admin = root / "var" / "lib" / "dpkg"
    (admin / "info").mkdir(parents=True)
    (admin / "updates").mkdir()
    (admin / "status").write_text(STANZA % (PKG, VERSION))
    (admin / "available").write_text("")
    if built:
        (root / "var" / "lib" / "dkms" / "nvidia" / VERSION / KERNEL / "x86_64" / "module").mkdir(parents=True)
    fake = tmp_path / "fakebin"
    fake.mkdir()
    (fake / "dpkg-query").write_text('#!/bin/sh\nexec %s --admindir=%s "$@"\n' % (shutil.which("dpkg-query"), admin))
    (fake / "dpkg-query").chmod(0o755)
    env = {"DLBOX_FIXTURE_GPU": str(fixture), "DLBOX_FIXTURE_ROOT": str(root), "PATH": "%s:/usr/bin:/bin" % fake}
    return env, root


def _status(env):
    return subprocess.run(["dpkg-query", "-W", "-f", "${db:Status-Abbrev}", PKG], env=env, capture_output=True, text=True,
                          check=True).stdout.strip()


def _hook(env):
    return subprocess.run(["sh", str(GPU / "bin" / "sync-packages")], env=env, capture_output=True, text=True, timeout=60,
                          check=False)


def test_a_failing_dkms_build_fails_the_package_as_its_postinst_does(tmp_path):
    env, root = _model(tmp_path, fails=True)
    assert _status(env) == "ii"
    hook = _hook(env)
    assert hook.returncode == 1, hook.stdout + hook.stderr
    lines = hook.stdout.splitlines()
    assert "Error! Bad return status for module build on kernel: %s (x86_64)" % KERNEL in lines
    assert "Consult /var/lib/dkms/nvidia/%s/build/make.log for more information." % VERSION in lines
    assert "dpkg: error processing package %s (--configure):" % PKG in lines
    assert " installed %s package post-installation script subprocess returned error exit status 10" % PKG in lines
    assert _status(env) == "iF"
    assert not (root / "lib" / "modules" / KERNEL / "updates").exists()


def test_without_the_flag_the_hook_succeeds(tmp_path):
    env = _model(tmp_path, fails=False)[0]
    hook = _hook(env)
    assert hook.returncode == 0, hook.stdout + hook.stderr
    assert "dpkg: error" not in hook.stdout and _status(env) == "ii"


def test_a_source_built_already_is_not_built_again(tmp_path):
    env = _model(tmp_path, fails=True, built=True)[0]
    hook = _hook(env)
    assert hook.returncode == 0, hook.stdout + hook.stderr
    assert _status(env) == "ii"


# Issue 44 red team LOW: Debian's own driver packages ship /etc/modprobe.d/nvidia-blacklists-nouveau.conf and the
# initramfs-tools trigger regenerates the initramfs (bin/sync-packages says where that is recorded); NVIDIA's repository's
# nvidia-driver (no Debian revision) ships none: the role writes its own there.
@pytest.mark.parametrize("package, version, ships", [
    ("nvidia-kernel-support", "535.216.03-1~deb12u1", True),
    ("nvidia-driver", "535.161.08-2~deb12u1", True),
    ("nvidia-driver", "580.95.05-1", False),
])
def test_debians_own_packages_ship_a_nouveau_blacklist_and_regenerate_the_initramfs(tmp_path, package, version, ships):
    env, root = _model(tmp_path, fails=False)
    admin = root / "var" / "lib" / "dpkg"
    (admin / "status").write_text((STANZA % (package, "x")).replace("Version: x-0ubuntu1+fixture1", "Version: " + version))
    (root / "boot").mkdir()
    (root / "boot" / ("vmlinuz-" + KERNEL)).write_text("FIXTURE\n")
    run = subprocess.run(["sh", str(GPU / "bin" / "sync-packages")], env=env, capture_output=True, text=True, timeout=60,
                         check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    blacklist = root / "etc" / "modprobe.d" / "nvidia-blacklists-nouveau.conf"
    state = Path(env["DLBOX_FIXTURE_GPU"]) / "state"
    assert blacklist.exists() == ships
    assert (state / ("initramfs-" + KERNEL)).exists() == ships
    if ships:
        assert blacklist.read_text() == "blacklist nouveau\n"
        assert "update-initramfs: Generating /boot/initrd.img-%s" % KERNEL in run.stdout
        # the package removed: its file goes
        (admin / "status").write_text("")
        assert subprocess.run(["sh", str(GPU / "bin" / "sync-packages")], env=env, capture_output=True, text=True, timeout=60,
                              check=False).returncode == 0
        assert not blacklist.exists()
