# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""molecule/package_cache/tests/test_fleet.py's split of the .debs the cache host fetched upstream for a later client:
a file the first client's fetch had cached counts against the cache, another version of a package the first client
got (the mirror published in between) does not. molecule/package_cache runs the whole test on a real fleet."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
_SPEC = importlib.util.spec_from_file_location("dlbox_test_fleet", ROOT / "molecule" / "package_cache" / "tests"
                                               / "test_fleet.py")
fleet = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(fleet)

POOL = "debrep/pool/main/"
FIRST = {POOL + "o/openssl/libssl3_3.0.15-1~deb12u1_amd64.deb": 2000000,
         POOL + "f/fio/fio_3.33-3_amd64.deb": 500000}


def test_name_and_version_of_a_pool_path():
    assert fleet._deb_name_version(POOL + "o/openssl/libssl3_3.0.15-1~deb12u1_amd64.deb") == \
        ("libssl3", "3.0.15-1~deb12u1")
    assert fleet._deb_name_version(POOL + "f/fio/fio_3.33-3_amd64.deb?x=1") == ("fio", "3.33-3")


def test_a_file_the_cache_had_counts_another_version_does_not():
    later = {POOL + "o/openssl/libssl3_3.0.16-1~deb12u1_amd64.deb": 2100000,  # published between the clients
             POOL + "f/fio/fio_3.33-3_amd64.deb": 500000,  # the cache had it: fetched again
             POOL + "x/xz-utils/xz-utils_5.4.1-1_amd64.deb": 300000,  # the first client never got it
             "security/pool/f/fio/fio_3.33-3_amd64.deb": 40000}  # the same version at another path: not excused
    figures = fleet._debs_again(FIRST, later)
    assert {kind: figures[kind] for kind in ("again", "other_version", "other")} == \
        {"again": 500000, "other_version": 2100000, "other": 340000}
    assert figures["files"] == {POOL + "o/openssl/libssl3_3.0.16-1~deb12u1_amd64.deb": (2100000, "other_version"),
                                POOL + "f/fio/fio_3.33-3_amd64.deb": (500000, "again"),
                                POOL + "x/xz-utils/xz-utils_5.4.1-1_amd64.deb": (300000, "other"),
                                "security/pool/f/fio/fio_3.33-3_amd64.deb": (40000, "other")}


def test_a_cache_that_keeps_nothing_is_all_again():
    figures = fleet._debs_again(FIRST, dict(FIRST))
    assert figures["again"] == sum(FIRST.values()) and figures["other_version"] == 0 and figures["other"] == 0
