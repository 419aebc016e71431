# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A FIXTURE archive (build_repo.py SPEC) as a local apt root for this machine's REAL apt: no root, no network.

``make_root(root, spec, installed=None, pin=None)`` builds the archive (once per process and spec) as ROOT/repo, writes a dpkg status of the
archive's stanzas whose (Package, Version) ``installed`` names, the optional preferences file and a sources.list of the
archive, runs ``apt-get update`` and returns ``(opts, stanzas)``: the ``-o`` options every apt-get / apt-cache call of
the test passes, and the installed stanzas. ``run(opts, tool, *args)`` runs one of them in the C locale.
The unit tests of the driver's signed modules, updates and NSCQ (tests/unit/plugins/plugin_utils/*_apt.py) share it."""

from __future__ import annotations

import atexit
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
STATUS_FIELDS = ("Package", "Version", "Architecture", "Depends", "Provides", "Maintainer")


def stanzas(text):
    """The stanzas of a Packages or status text, each a dict of its one-line fields."""
    return [dict(re.findall(r"^(\S+): (.*)$", block, re.M)) for block in text.split("\n\n") if block.strip()]


# The archives built in this process, by (spec path, spec text): each spec is built once and ROOT/repo links to it
# (build_repo.py is reproducible, test_build_repo.py checks it; apt only reads the archive). A build is dpkg-deb for
# every package, and several test modules use the same spec (ubuntu-noble-signed-month.yml, ubuntu-jammy-server.yml).
_BUILT = {}


def _built(spec):
    with open(spec, encoding="utf-8") as fh:
        key = (spec, fh.read())
    if key not in _BUILT:
        base = tempfile.mkdtemp(prefix="dlbox-aptrepo-")
        atexit.register(shutil.rmtree, base, True)
        subprocess.run([sys.executable, os.path.join(HERE, "build_repo.py"), spec, os.path.join(base, "repo"),
                        "--key-dir", os.path.join(base, "keys")], check=True, capture_output=True)
        _BUILT[key] = os.path.join(base, "repo")
    return _BUILT[key]


def make_root(root, spec, installed=None, pin=None):
    repo = os.path.join(root, "repo")
    os.makedirs(root, exist_ok=True)
    os.symlink(_built(os.path.join(HERE, "specs", spec)), repo)
    with open(os.path.join(repo, "Packages"), encoding="utf-8") as fh:
        chosen = [s for s in stanzas(fh.read()) if (installed or {}).get(s["Package"]) == s["Version"]]
    status = []
    for stanza in chosen:
        keep = dict((key, value) for key, value in stanza.items() if key in STATUS_FIELDS)
        keep["Status"] = "install ok installed"
        keep.setdefault("Maintainer", "fixture")
        keep["Description"] = "FIXTURE"
        status.append("\n".join("%s: %s" % kv for kv in keep.items()))
    for sub in ("etc/preferences.d", "state/lists/partial", "cache/archives/partial"):
        os.makedirs(os.path.join(root, sub))
    with open(os.path.join(root, "state", "status"), "w", encoding="utf-8") as fh:
        fh.write("\n\n".join(status) + "\n" if status else "")
    with open(os.path.join(root, "etc", "sources.list"), "w", encoding="utf-8") as fh:
        fh.write("deb [trusted=yes] file:%s ./\n" % repo)
    if pin is not None:
        with open(os.path.join(root, "etc", "preferences.d", "dlbox-00-nvidia-driver-branch.pref"), "w", encoding="utf-8") as fh:
            fh.write(pin)
    opts = ["-o", "Dir::Etc=%s/etc" % root, "-o", "Dir::State=%s/state" % root, "-o", "Dir::Cache=%s/cache" % root,
            "-o", "Dir::State::status=%s/state/status" % root, "-o", "Debug::NoLocking=1", "-o", "APT::Architecture=amd64"]
    subprocess.run(["apt-get"] + opts + ["update", "-qq"], check=True, capture_output=True)
    return opts, chosen


def run(opts, tool, *args):
    return subprocess.run([tool] + opts + list(args), capture_output=True, text=True, check=False, env=dict(os.environ, LC_ALL="C"))
