# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A filter call's arguments read out of a task file's Jinja text, brackets nested and strings skipped: shared by the
tests that look at how the roles call their modules (tests/unit/test_decided_once.py,
tests/unit/plugins/plugin_utils/test_role_entries_call_sites.py)."""

from __future__ import annotations

import re


def _walk(text, start=0, depth=0):
    """(index, character, bracket depth after it) of each character of ``text`` from ``start`` outside quotes."""
    quote = None
    for index in range(start, len(text)):
        char = text[index]
        if quote:
            quote = None if char == quote else quote
            continue
        if char in "'\"":
            quote = char
            continue
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        yield index, char, depth


def call_arguments(text, start):
    """The text of a call's arguments from ``start`` (just after its opening parenthesis) to its closing one."""
    for index, char, depth in _walk(text, start, depth=1):
        if char in ")]}" and depth == 0:
            return text[start:index]
    raise AssertionError("unbalanced call at %d" % start)


def keyword_names(args):
    """The keyword names of a call's top-level arguments (None for a positional one)."""
    names, begin = [], 0
    text = args + ","
    for index, char, depth in _walk(text):
        if char == "," and depth == 0:
            part = text[begin:index]
            if part.strip():
                match = re.match(r"\s*(\w+)\s*=(?!=)", part)
                names.append(match.group(1) if match else None)
            begin = index + 1
    return names
