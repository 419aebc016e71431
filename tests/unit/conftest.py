"""Make ``ansible_collections.dlbox.stack`` importable when pytest runs from the repository.

The repository root *is* the collection. Under ``ansible-test units`` it already sits at
``ansible_collections/dlbox/stack``; from a plain checkout a symlink in a private temporary folder
points at it. One helper does that for the tests and for the tools: ``tools/dlboxdata/collection.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

sys.path.insert(0, str(ROOT / "tools"))
from dlboxdata import collection  # noqa: E402  pylint: disable=wrong-import-position

collection.importable()
