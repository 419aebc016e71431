# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One option of an INI file such as ``/etc/pip.conf``, set or removed in its text (pure).

What ``community.general.ini_file`` did for the ``common`` role, with ansible-core alone: every other line,
comment and section stays as it is; an option is written ``option = value``; a missing section is added at the
end. The same text in gives the same text out when nothing is to change (idempotent).
"""

from __future__ import annotations

import re

_SECTION = re.compile(r"^\s*\[([^\]]*)\]\s*$")


def _option_re(option):
    return re.compile(r"^\s*%s\s*[=:]\s?(.*?)\s*$" % re.escape(option))


def _lines(text):
    return (text or "").splitlines()


def _section_span(lines, section):
    """(start, end) line indexes of the section's body, or None when the file has no such section."""
    start = None
    for index, line in enumerate(lines):
        match = _SECTION.match(line)
        if match and start is not None:
            return start, index
        if match and match.group(1).strip() == section:
            start = index + 1
    return (start, len(lines)) if start is not None else None


def set_option(text, section, option, value):
    """``text`` with ``option = value`` in ``[section]`` (replacing the option's line, else added to the section)."""
    lines = _lines(text)
    wanted = "%s = %s" % (option, value)
    span = _section_span(lines, section)
    if span is None:
        if lines and lines[-1].strip():
            lines.append("")
        lines += ["[%s]" % section, wanted]
        return "\n".join(lines) + "\n"
    start, end = span
    pattern = _option_re(option)
    for index in range(start, end):
        if pattern.match(lines[index]) and not lines[index].lstrip().startswith(("#", ";")):
            lines[index] = wanted
            return "\n".join(lines) + "\n"
    last = start
    for index in range(start, end):
        if lines[index].strip():
            last = index + 1
    lines.insert(last, wanted)
    return "\n".join(lines) + "\n"


def remove_option(text, section, option, value=None):
    """``text`` without ``option`` in ``[section]`` (only where it has ``value``, when one is given)."""
    lines = _lines(text)
    span = _section_span(lines, section)
    if span is None:
        return text
    start, end = span
    pattern = _option_re(option)
    keep = []
    for index, line in enumerate(lines):
        match = pattern.match(line) if start <= index < end else None
        if match and not line.lstrip().startswith(("#", ";")) and (value is None or match.group(1) == str(value)):
            continue
        keep.append(line)
    if keep == lines:
        return text
    return "\n".join(keep) + "\n"
