"""The fleet summary's count line (issue 50 red team rt50 L5): "1 host:", not "1 hosts:"."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
from dlboxdata import collection  # noqa: E402  pylint: disable=wrong-import-position,import-error


@pytest.mark.parametrize("hosts, line", [
    (0, "0 hosts: 0 changed"),
    (1, "1 host: 1 changed"),
    (2, "2 hosts: 2 changed"),
])
def test_the_count_line_says_host_for_one(hosts, line):
    collection.importable()
    from ansible_collections.dlbox.stack.plugins.plugin_utils import fleet_summary as fs
    counts = {"hosts": hosts, "changed": hosts, "unchanged": 0, "failed": 0, "unreachable": 0, "refused": 0,
              "not_run": 0, "pending_reboot": 0, "left_drained": 0}
    text = fs._counts_line(counts)  # pylint: disable=protected-access
    assert text == line + (", 0 unchanged, 0 failed, 0 unreachable, 0 refused, 0 not run, 0 with a reboot pending, 0 left drained")
