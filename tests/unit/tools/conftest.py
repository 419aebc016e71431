# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests of the maintainer tools under tools/: put that folder on sys.path, serve folders on loopback."""

from __future__ import annotations

import functools
import http.server
import sys
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
TOOLS = ROOT / "tools"
FIXTURES = ROOT / "tests" / "fixtures" / "indexes"
if str(TOOLS) not in sys.path:
    sys.path.insert(0, str(TOOLS))


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # pylint: disable=redefined-builtin
        pass


@pytest.fixture
def serve_dir():
    """``serve_dir(folder)`` -> ``http://127.0.0.1:PORT`` serving that folder (loopback only)."""
    servers = []

    def start(folder):
        handler = functools.partial(_QuietHandler, directory=str(folder))
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()
