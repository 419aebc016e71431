# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every L4T release data/compat.yml gives a JetPack that edge.yml supports (6 and newer) is in an apt suite NVIDIA's
Jetson repository is publicly known to have (issue 52 L-4): the jetpack role writes sources for r<major>.<minor> of the
module's L4T, and a suite that does not exist fails apt on the box. JetPack 7.2 was listed with L4T 39.0 and 39.1, for
which no public source shows a release or a suite.

The known suites: those of anduril/jetpack-nixos sourceinfo/*-debs.json, which its debs-update.py fills from NVIDIA's
Packages of each suite (https://github.com/anduril/jetpack-nixos/tree/master/sourceinfo, listed 2026-12-07: r35.4,
r35.5, r35.6, r36.3, r36.4, r36.5, r38.2, r38.4, r39.2), and r36.4/r36.5 as modules' own lists show them
(tests/fixtures/jetson/apt). A new suite is added here with its source when the data gains one."""

from __future__ import annotations

from ansible_collections.dlbox.stack.plugins.plugin_utils.compat_data import load_compat

KNOWN_SUITES = {"r36.3", "r36.4", "r36.5", "r38.2", "r38.4", "r39.2"}


def _suite(l4t):
    major, minor = str(l4t).split(".")[:2]
    return "r%s.%s" % (major, minor)


def test_every_l4t_of_a_supported_jetpack_is_in_a_known_suite():
    unknown = {}
    for entry in load_compat()["jetpack"]:
        if int(str(entry["version"]).split(".", maxsplit=1)[0]) < 6:
            continue
        for l4t in entry["l4t"]:
            if _suite(l4t) not in KNOWN_SUITES:
                unknown.setdefault(entry["version"], []).append(l4t)
    assert unknown == {}, unknown


def test_jetpack_7_2_is_l4t_39_2_0():
    entry = next(e for e in load_compat()["jetpack"] if e["version"] == "7.2")
    assert entry["l4t"] == ["39.2.0"]
