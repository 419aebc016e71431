# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The REAL unattended-upgrade (Debian's/Ubuntu's package unattended-upgrades, python3-apt) run --dry-run against a
test root (ROOTDIR/etc/apt, ROOTDIR/var/lib/dpkg/status; its own lock file moved under ROOTDIR), shared by the unit
tests that run it. The program is this machine's (/usr/bin/unattended-upgrade) or one unpacked under
DLBOX_UNATTENDED_UPGRADE_ROOT; where neither is there, program() is None and the tests skip."""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import tempfile

PYTHON = "/usr/bin/python3"
_DRIVER = r'''
import importlib.machinery, importlib.util, sys
script, rootdir = sys.argv[1], sys.argv[2]
loader = importlib.machinery.SourceFileLoader("unattended_upgrade", script)
uu = importlib.util.module_from_spec(importlib.util.spec_from_loader("unattended_upgrade", loader))
loader.exec_module(uu)
uu.LOCK_FILE = rootdir + "/unattended-upgrades.lock"
%s
options = uu.Options()
options.dry_run = options.debug = options.verbose = True
sys.exit(uu.main(options, rootdir))
'''


def program(tools=("apt-get",)):
    """(script, env) of the real program where it and python3-apt are here (with ``tools`` on PATH), else None."""
    base = os.environ.get("DLBOX_UNATTENDED_UPGRADE_ROOT", "")
    script = os.path.join(base, "usr", "bin", "unattended-upgrade") if base else shutil.which("unattended-upgrade") or ""
    if not (script and os.path.exists(script) and os.path.exists(PYTHON) and all(shutil.which(tool) for tool in tools)):
        return None
    env = dict(os.environ, LC_ALL="C")
    if base:
        env["PYTHONPATH"] = os.path.join(base, "usr", "lib", "python3", "dist-packages")
    probe = subprocess.run([PYTHON, "-c", "import apt, apt_pkg, distro_info"], env=env, capture_output=True, check=False)
    return (script, env) if probe.returncode == 0 else None


def dry_run(script, rootdir, env, distro=None):
    """unattended-upgrade --dry-run --debug on ``rootdir``: the CompletedProcess. ``distro``: (id, codename) in place of
    lsb_release's answer (the program substitutes them into ${distro_id}/${distro_codename})."""
    override = 'uu.DISTRO_ID, uu.DISTRO_CODENAME = %r, %r' % tuple(distro) if distro else ""
    # one real unattended-upgrade at a time on this machine: it takes apt's system locks besides its own (moved into the
    # root), and two test processes side by side (two developers' runs, a helper beside CI) failed with "Lock could not
    # be acquired"; they wait for each other instead
    with open(os.path.join(tempfile.gettempdir(), "dlbox-unattended-upgrade-tests.lock"), "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return subprocess.run([PYTHON, "-c", _DRIVER % override, script, rootdir], capture_output=True, text=True, env=env,
                              timeout=300, check=False)


def upgraded_and_unpacked(log):
    """The run's 'Packages that will be upgraded' and the paths of the .debs it unpacks."""
    upgraded = (re.findall(r"^Packages that will be upgraded: (.*)$", log, re.M) or [""])[0].split()
    unpack = (re.findall(r"--unpack --auto-deconfigure (.*)$", log, re.M) or [""])[0].split()
    return upgraded, unpack
