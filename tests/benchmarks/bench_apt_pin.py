# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the nvidia_driver role's branch pin costs every apt command: this machine's REAL apt-cache policy on a local file:
archive of N package names (default 100,000, about Ubuntu 24.04's main, restricted, universe and multiverse together),
without a preferences file, with the role's pin (nvidia_driver_plan.branch_pin: globs and names), and with the same pin
written with apt's /regular expressions/ as the role wrote it until 2026-12-06. Prints wall and CPU seconds; no root,
no network.

    .venv/bin/python tests/benchmarks/bench_apt_pin.py [N]
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "build" / "collections"))
from ansible_collections.dlbox.stack.plugins.plugin_utils import nvidia_driver_plan as p  # noqa: E402  pylint: disable=wrong-import-position

FAMILY = ["*nvidia*", "libcuda*", "libnvcuvid*", "libnvoptix*", "libnvidia*", "cuda-drivers*"]
# the regular-expression form of the same stanzas (the role's pin before 2026-12-06)
REGEX_PIN = """Package: /^(lib)?nvidia.*-580(-|$)/ /^linux-(modules|objects|signatures)-nvidia-580-/ /^xserver-xorg-video-nvidia-580$/ \
/^cuda-drivers(-fabricmanager)?-580$/ /^(nvidia-fabricmanager|libnvidia-nscq|nvidia-imex|nvidia-persistenced|nvidia-settings|nvidia-modprobe)(-dev)?$/
Pin: release o=Ubuntu
Pin-Priority: 1000

Package: /^(lib)?nvidia(-[a-z0-9.]+)*-([0-9]{1,2}|[0-9]{4,}|[012346789][0-9][0-9]|5[012345679][0-9]|58[123456789])(-[a-z]+)*$/ \
/^linux-(modules|objects|signatures)-nvidia-([0-9]{1,2}|[0-9]{4,}|[012346789][0-9][0-9]|5[012345679][0-9]|58[123456789])-/
Pin: release *
Pin-Priority: -1

Package: *nvidia* libcuda* libnvcuvid* libnvoptix* libnvidia* cuda-drivers*
Pin: version 580.*
Pin-Priority: 1000
"""


def main():
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 100000
    with tempfile.TemporaryDirectory() as root:
        archive = os.path.join(root, "archive")
        os.makedirs(archive)
        with open(os.path.join(archive, "Packages"), "w", encoding="utf-8") as fh:
            for i in range(count):
                fh.write("Package: pkg-%06d-lib\nVersion: 1.%d-1\nArchitecture: amd64\nFilename: p%d.deb\nSize: 1\nDescription: t\n\n"
                         % (i, i % 7, i))
            for name in ("nvidia-utils-580", "nvidia-driver-580-open", "nvidia-driver-595", "libnvidia-compute-580"):
                fh.write("Package: %s\nVersion: 580.196.07-0ubuntu0.24.04.1\nArchitecture: amd64\nFilename: n.deb\nSize: 1\n"
                         "Description: t\n\n" % name)
        with open(os.path.join(archive, "Release"), "w", encoding="utf-8") as fh:
            fh.write("Origin: Ubuntu\nLabel: Ubuntu\nSuite: test\nCodename: test\nArchitectures: amd64\nComponents: main\n")
        for sub in ("etc/preferences.d", "state/lists/partial", "cache/archives/partial"):
            os.makedirs(os.path.join(root, sub))
        Path(root, "state", "status").write_text("", encoding="utf-8")
        Path(root, "etc", "sources.list").write_text("deb [trusted=yes] file:%s ./\n" % archive, encoding="utf-8")
        opts = ["-o", "Dir::Etc=%s/etc" % root, "-o", "Dir::State=%s/state" % root, "-o", "Dir::Cache=%s/cache" % root,
                "-o", "Dir::State::status=%s/state/status" % root, "-o", "Debug::NoLocking=1", "-o", "APT::Architecture=amd64"]
        subprocess.run(["apt-get"] + opts + ["update", "-qq"], check=True, capture_output=True)
        subprocess.run(["apt-cache"] + opts + ["policy", "nvidia-utils-580"], check=True, capture_output=True)  # the cache file
        pref = Path(root, "etc", "preferences.d", "dlbox-00-nvidia-driver-branch.pref")
        for label, text in (("no preferences file", None), ("the role's pin (globs, names)", p.branch_pin(580, FAMILY, "bench", "Ubuntu")),
                            ("the same pin as /regular expressions/ (before 2026-12-06)", REGEX_PIN)):
            if text is None:
                pref.unlink(missing_ok=True)
            else:
                pref.write_text(text, encoding="utf-8")
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.monotonic()
            subprocess.run(["apt-cache"] + opts + ["policy", "nvidia-utils-580"], check=True, capture_output=True)
            wall = time.monotonic() - start
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            print("apt-cache policy, %d packages, %-58s %6.2f s wall %6.2f CPU-s" % (count + 4, label + ":", wall, cpu))


if __name__ == "__main__":
    main()
