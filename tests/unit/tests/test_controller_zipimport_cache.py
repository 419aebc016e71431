# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""tests/controller/sitecustomize.py: a Python started with that folder on PYTHONPATH and DLBOX_ZIPIMPORT_CACHE set
keeps the compiled code of what it imports from a zip there and uses it again (same results, tracebacks naming the
file in the zip); without the variable it leaves zipimport alone."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SOURCE = 'VALUE = 41 + 1\n\ndef boom():\n    raise RuntimeError("from the zip")\n'
PROBE = """
import sys, traceback, zipimport
sys.path.insert(0, sys.argv[1])
import dlboxprobe
print(dlboxprobe.VALUE)
print(zipimport._compile_source.__module__)
try:
    dlboxprobe.boom()
except RuntimeError:
    print(traceback.extract_tb(sys.exc_info()[2])[-1].filename)
"""


def run(tmp_path, cache):
    payload = tmp_path / "payload.zip"
    with zipfile.ZipFile(payload, "w") as z:
        z.writestr("dlboxprobe.py", SOURCE)
    env = {k: v for k, v in os.environ.items() if k not in ("DLBOX_ZIPIMPORT_CACHE", "PYTHONPATH")}
    env["PYTHONPATH"] = str(ROOT / "tests" / "controller")
    if cache is not None:
        env["DLBOX_ZIPIMPORT_CACHE"] = str(cache)
    proc = subprocess.run([sys.executable, "-c", PROBE, str(payload)], env=env, capture_output=True, text=True, check=True)
    return proc.stdout.split("\n")


def test_the_compiled_code_is_kept_and_used_again(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    first = run(tmp_path, cache)
    assert first[:2] == ["42", "dlbox_zipimport_cache"]
    assert first[2] == str(tmp_path / "payload.zip" / "dlboxprobe.py")
    kept = list(cache.iterdir())
    assert len(kept) == 1
    mtime = kept[0].stat().st_mtime_ns
    assert run(tmp_path, cache)[:3] == first[:3]
    assert [p.stat().st_mtime_ns for p in cache.iterdir()] == [mtime]      # read, not written again


def test_without_the_variable_or_the_folder_zipimport_is_left_alone(tmp_path):
    assert run(tmp_path, None)[1] == "zipimport"
    assert run(tmp_path, tmp_path / "missing")[1] == "zipimport"
