# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's own Python, imported under its real name (``ansible_collections.dlbox.stack...``).

A tool that needs a module of ``plugins/`` (``tools/gpu_catalog.py`` builds the catalog with
``plugins/plugin_utils/gpu_catalog.py``) imports it as the collection does, so there is one module with one
name, never a second copy loaded from its file. As ``tests/unit/conftest.py`` does: the checkout is the
collection; when it does not sit at ``ansible_collections/dlbox/stack`` already, a link in a private temporary
folder makes it so.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def importable():
    """Put ``ansible_collections.dlbox.stack`` (this checkout) on ``sys.path``."""
    if ROOT.parent.name == "dlbox" and ROOT.parent.parent.name == "ansible_collections":
        base = ROOT.parent.parent.parent
    else:
        tag = hashlib.sha256(str(ROOT).encode()).hexdigest()[:12]
        base = Path(tempfile.gettempdir()) / ("dlbox-stack-%d-%s" % (os.getuid(), tag))
        link = base / "ansible_collections" / "dlbox" / "stack"
        link.parent.mkdir(parents=True, exist_ok=True)
        if not link.is_symlink():
            link.symlink_to(ROOT, target_is_directory=True)
    if str(base) not in sys.path:
        sys.path.insert(0, str(base))


def collection_module(dotted):
    """``collection_module("plugins.plugin_utils.gpu_catalog")`` -> that module of this checkout."""
    importable()
    return importlib.import_module("ansible_collections.dlbox.stack." + dotted)
