# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""common's package-lists freshness, judged as ansible.builtin.apt judges cache_valid_time (get_cache_mtime: the
update-success-stamp, else the lists folder) without opening apt's cache; on a REAL find result of this machine
(tests/fixtures/apt_lists/README.md)."""

from __future__ import annotations

import json
import pathlib

import pytest

from ansible_collections.dlbox.stack.plugins.plugin_utils import apt_state
from ansible_collections.dlbox.stack.plugins.filter.common import apt_lists_fresh

FIND = json.loads((pathlib.Path(__file__).resolve().parents[3] / "fixtures" / "apt_lists" / "find-debian12.json").read_text())
LISTS_MTIME = 1796545498.5788047  # the lists folder's mtime in the recorded result


def test_the_recorded_lists_are_fresh_within_the_valid_time():
    got = apt_lists_fresh(FIND, 3600, LISTS_MTIME + 3599)
    assert got == {"fresh": True, "lists": 3, "age": pytest.approx(3599)}


def test_the_recorded_lists_are_stale_after_it():
    assert apt_lists_fresh(FIND, 3600, LISTS_MTIME + 3601)["fresh"] is False


def test_the_stamp_wins_over_the_folder():
    """Ubuntu's hook stamp (constructed entry: this machine has none) is what the module reads first."""
    files = FIND["files"] + [{"path": apt_state.STAMP, "mtime": LISTS_MTIME - 7200}]
    assert apt_state.lists_age(files, 3600, LISTS_MTIME + 10)["fresh"] is False
    files = FIND["files"] + [{"path": apt_state.STAMP, "mtime": LISTS_MTIME + 100}]
    assert apt_state.lists_age(files, 3600, LISTS_MTIME + 3650)["fresh"] is True


def test_a_fresh_image_without_lists_is_never_fresh():
    """A new image's empty lists folder has a new time: no Packages list, refresh (the module's cache_valid_time would skip)."""
    files = [f for f in FIND["files"] if f["path"] == apt_state.LISTS]
    got = apt_state.lists_age(files, 3600, LISTS_MTIME + 1)
    assert got["fresh"] is False and got["lists"] == 0


def test_nothing_found_is_not_fresh():
    assert apt_state.lists_age([], 3600, 0) == {"fresh": False, "lists": 0, "age": None}


def test_the_filter_wants_finds_result():
    from ansible.errors import AnsibleFilterError  # pylint: disable=import-outside-toplevel
    with pytest.raises(AnsibleFilterError):
        apt_lists_fresh([], 3600, 0)
