"""Make ``ansible_collections.dlbox.stack`` importable when pytest runs from the repository.

The repository root *is* the collection. Under ``ansible-test units`` it already sits at
``ansible_collections/dlbox/stack``; from a plain checkout we point a symlink at it in a
private temporary folder and put that folder on ``sys.path``.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _ensure_importable() -> None:
    if ROOT.parent.name == "dlbox" and ROOT.parent.parent.name == "ansible_collections":
        base = ROOT.parent.parent.parent
    else:
        tag = hashlib.sha256(str(ROOT).encode()).hexdigest()[:12]
        base = Path(tempfile.gettempdir()) / f"dlbox-stack-{os.getuid()}-{tag}"
        link = base / "ansible_collections" / "dlbox" / "stack"
        link.parent.mkdir(parents=True, exist_ok=True)
        if not link.is_symlink():
            link.symlink_to(ROOT, target_is_directory=True)
    if str(base) not in sys.path:
        sys.path.insert(0, str(base))


_ensure_importable()
