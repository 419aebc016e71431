"""A virtual environment with the CPU build of PyTorch 2.13.0 for tests that run real PyTorch (no GPU).

The wheel comes from this machine kind's local copy (pip's find-links configuration: `pip download --no-deps
torch==2.13.0` is served from the disk, see ../shared/docs/test-platform.md), its dependencies (filelock, sympy,
networkx, jinja2, fsspec, typing-extensions) from the package registry. Built once into build/torch-cpu (about
20 s, 900 MB), reused while this file is unchanged; one builder at a time (a lock file). A machine where it cannot
be built fails the tests that need it: they are not skipped.
"""

from __future__ import annotations

import fcntl
import hashlib
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VENV = ROOT / "build" / "torch-cpu"
TORCH = "torch==2.13.0"


def torch_python():
    """The venv's python, built first when missing or made by another version of this file."""
    key = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:12]
    python = VENV / "bin" / "python"
    marker = VENV / (".complete-" + key)
    VENV.parent.mkdir(parents=True, exist_ok=True)
    with open(str(VENV) + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not marker.exists():
            subprocess.run(["rm", "-rf", str(VENV)], check=True)
            base = getattr(sys, "_base_executable", sys.executable)
            subprocess.run([base, "-m", "venv", str(VENV)], check=True)
            proc = subprocess.run([str(python), "-m", "pip", "install", "-q", TORCH], capture_output=True, text=True,
                                  check=False)
            assert proc.returncode == 0, "pip install %s into %s failed:\n%s" % (TORCH, VENV, proc.stderr[-3000:])
            marker.touch()
    return str(python)
