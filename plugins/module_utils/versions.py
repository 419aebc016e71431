# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one version helper of the collection: parse, compare and match versions (pure; Python 3.8+).

It lives in module_utils so that modules running on the host (``cuda_facts``, ``nccl_facts``, ``cudnn_facts``)
and the controller's resolver and role decisions use the same code; ``plugin_utils.versions`` re-exports it.

* :func:`parse_version`: lenient, the leading numbers (``"2.5.0a0+872d"`` -> ``(2, 5, 0)``, ``"R580"`` -> ``(580,)``).
* :func:`version_tuple`: strict, dotted numbers only (``"12.10"`` -> ``(12, 10)``, sorts after ``"12.9"``);
  anything else -> ``()``, which sorts first.
* :func:`debian_version_compare`: dpkg's order of Debian package versions (epoch, upstream, revision).
"""

from __future__ import annotations

import re

__all__ = ["parse_version", "version_tuple", "compare_versions", "at_least", "at_most", "version_matches", "driver_branch_of",
           "major_minor", "major_of", "year_month", "debian_version_compare"]

_NUMBERS = re.compile(r"\d+")
_VERSION = re.compile(r"\d+(?:\.\d+)*")
_STRICT = re.compile(r"^\d+(\.\d+)*$")
_PARSED = {}


def parse_version(value):
    """Return the leading numeric components of a version as a tuple of ints.

    ``"12.4.1"`` -> ``(12, 4, 1)``; ``"2.5.0a0+872d"`` -> ``(2, 5, 0)``; ``"R580"`` -> ``(580,)``;
    ``12.4`` (a float from YAML) -> ``(12, 4)``. ``None``/empty -> ``()``.
    """
    if value is None:
        return ()
    text = str(value)
    cached = _PARSED.get(text)
    if cached is not None:
        return cached
    clean = text.strip().lower()
    if clean.startswith("r") and clean[1:2].isdigit():
        clean = clean[1:]
    match = _VERSION.match(clean)
    parsed = tuple(int(part) for part in match.group(0).split(".")) if match else ()
    if len(_PARSED) < 4096:
        _PARSED[text] = parsed
    return parsed


def version_tuple(value):
    """Strict: ``"525.105.17"`` -> ``(525, 105, 17)``; ``""``, None or anything but dotted numbers -> ``()``."""
    text = str(value if value is not None else "").strip()
    return tuple(int(part) for part in text.split(".")) if _STRICT.match(text) else ()


def compare_versions(left, right):
    """Compare two versions numerically; missing trailing parts count as 0. Returns -1, 0 or 1."""
    left_parts, right_parts = list(parse_version(left)), list(parse_version(right))
    width = max(len(left_parts), len(right_parts))
    left_parts += [0] * (width - len(left_parts))
    right_parts += [0] * (width - len(right_parts))
    return (left_parts > right_parts) - (left_parts < right_parts)


def at_least(version, floor):
    """``version >= floor``."""
    return compare_versions(version, floor) >= 0


def at_most(version, ceiling):
    """``version <= ceiling``."""
    return compare_versions(version, ceiling) <= 0


def version_matches(spec, version):
    """True when ``version`` starts with every component of ``spec`` ("12.4" matches "12.4.1")."""
    wanted, have = parse_version(spec), parse_version(version)
    return bool(wanted) and have[: len(wanted)] == wanted


def driver_branch_of(version):
    """Driver branch (major) of a driver version: ``"550.54.14"`` -> ``550``; None when unknown."""
    parts = parse_version(version)
    return parts[0] if parts else None


def major_minor(version):
    """``"12.4.1"`` -> ``"12.4"``."""
    return ".".join(str(part) for part in parse_version(version)[:2])


def major_of(version):
    """``"12.4.1"`` -> ``12``; None when unknown."""
    parts = parse_version(version)
    return parts[0] if parts else None


def year_month(value):
    """Year-month tuple of a date-like value (``"2026-11-29"``, ``"2028-06"``); None when it has none."""
    numbers = [int(n) for n in _NUMBERS.findall(str(value))]
    return tuple(numbers[:2]) if len(numbers) >= 2 else None


# Debian version order (deb-version(7)): the one copy, for offline mode (plugin_utils.offline) and the data tool
# (tools/dlboxdata/indexes.py, through the collection).
def _debian_order(char):
    if char == "~":
        return -1
    if not char or char.isdigit():
        return 0
    if char.isalpha():
        return ord(char)
    return ord(char) + 256


def _debian_compare_part(left, right):
    """dpkg's verrevcmp (lib/dpkg/version.c) on one part of two versions."""
    i = j = 0
    while i < len(left) or j < len(right):
        first_diff = 0
        while (i < len(left) and not left[i].isdigit()) or (j < len(right) and not right[j].isdigit()):
            a = _debian_order(left[i] if i < len(left) else "")
            b = _debian_order(right[j] if j < len(right) else "")
            if a != b:
                return a - b
            i += 1
            j += 1
        while i < len(left) and left[i] == "0":
            i += 1
        while j < len(right) and right[j] == "0":
            j += 1
        while i < len(left) and j < len(right) and left[i].isdigit() and right[j].isdigit():
            if not first_diff:
                first_diff = ord(left[i]) - ord(right[j])
            i += 1
            j += 1
        if i < len(left) and left[i].isdigit():
            return 1
        if j < len(right) and right[j].isdigit():
            return -1
        if first_diff:
            return first_diff
    return 0


def debian_version_compare(left, right):
    """Debian version order (epoch, upstream version, revision): <0, 0 or >0, as dpkg --compare-versions."""
    def split(version):
        epoch, _sep, rest = version.partition(":") if ":" in version else ("0", "", version)
        upstream, _sep, revision = rest.rpartition("-") if "-" in rest else (rest, "", "")
        return int(epoch or 0), upstream, revision
    le, lu, lr = split(left)
    re_, ru, rr = split(right)
    if le != re_:
        return le - re_
    return _debian_compare_part(lu, ru) or _debian_compare_part(lr, rr)
