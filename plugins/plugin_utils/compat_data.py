# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Load and validate ``data/compat.yml`` on the controller (cached by path and mtime)."""

from __future__ import annotations

import datetime
import os
from pathlib import Path

import yaml

DEFAULT_PATH = Path(__file__).resolve().parents[2] / "data" / "compat.yml"

# top-level key -> expected type
REQUIRED_KEYS = {
    "schema_version": int,
    "date": str,
    "architectures": dict,
    "gpus": list,
    "cuda": dict,
    "driver_branches": list,
    "cudnn": list,
    "nccl": list,
    "pytorch": dict,
    "tensorflow": list,
    "jetpack": list,
    "fabric_manager": dict,
    "os": dict,
}
SUPPORTED_SCHEMA = 1

_CACHE: dict = {}
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class CompatDataError(ValueError):
    """data/compat.yml is missing, unreadable or has the wrong shape."""


def _dates_to_text(value):
    """YAML turns 2026-11-29 into a date; the resolver compares text, so make every date ISO text."""
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat()[:10]
    if isinstance(value, dict):
        return {k: _dates_to_text(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_dates_to_text(v) for v in value]
    return value


GRADES = ("P", "Pc", "M", "S", "U")


def _entries_default_date(value, file_date, where="", problems=None):
    """Give every sourced entry the file's ``date`` unless it has its own; collect grade problems."""
    if isinstance(value, dict):
        if "source" in value:
            value.setdefault("date", file_date)
            if value.get("grade") not in GRADES:
                problems.append(
                    "%s: grade %r is not one of %s" % (where or "top level", value.get("grade"), ", ".join(GRADES))
                )
        for key, item in value.items():
            _entries_default_date(item, file_date, "%s.%s" % (where, key) if where else str(key), problems)
    elif isinstance(value, list):
        for pos, item in enumerate(value):
            _entries_default_date(item, file_date, "%s[%d]" % (where, pos), problems)
    return problems


def validate(data, path="data/compat.yml"):
    """Check the top-level shape; raise CompatDataError naming the first wrong key."""
    if not isinstance(data, dict):
        raise CompatDataError(f"{path}: the top level must be a mapping, not {type(data).__name__}")
    for key, kind in REQUIRED_KEYS.items():
        if key not in data:
            raise CompatDataError(f"{path}: top-level key '{key}' is missing")
        if not isinstance(data[key], kind):
            raise CompatDataError(
                f"{path}: top-level key '{key}' must be a {kind.__name__}, not {type(data[key]).__name__}"
            )
    if data["schema_version"] != SUPPORTED_SCHEMA:
        raise CompatDataError(
            f"{path}: schema_version {data['schema_version']} is not supported (this collection reads {SUPPORTED_SCHEMA})"
        )
    if not isinstance(data["cuda"].get("releases"), list) or not isinstance(data["cuda"].get("minor_compat"), list):
        raise CompatDataError(f"{path}: 'cuda' must have the lists 'releases' and 'minor_compat'")
    if not isinstance(data["pytorch"].get("releases"), list):
        raise CompatDataError(f"{path}: 'pytorch' must have the list 'releases'")
    if not isinstance(data["os"].get("distros"), dict):
        raise CompatDataError(f"{path}: 'os' must have the mapping 'distros'")
    problems = _entries_default_date(data, data["date"], "", [])
    if problems:
        raise CompatDataError(f"{path}: {problems[0]}")
    return data


def load_compat(path=None):
    """Return the parsed, validated compatibility data. Cached until the file's mtime changes."""
    path = Path(path) if path else DEFAULT_PATH
    try:
        stat = os.stat(path)
    except OSError as exc:
        raise CompatDataError(f"cannot read compatibility data {path}: {exc.strerror}") from exc
    key = str(path.resolve())
    cached = _CACHE.get(key)
    if cached and cached[0] == stat.st_mtime_ns and cached[1] == stat.st_size:
        return cached[2]
    try:
        with open(path, encoding="utf-8") as handle:
            raw = yaml.load(handle, Loader=_LOADER)  # noqa: S506 - a SafeLoader
    except yaml.YAMLError as exc:
        raise CompatDataError(f"{path} is not valid YAML: {exc}") from exc
    data = validate(_dates_to_text(raw), str(path))
    _CACHE[key] = (stat.st_mtime_ns, stat.st_size, data)
    return data
