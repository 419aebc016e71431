# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``data/repositories.yml``: the vendors' repositories and indexes (root URL, layout, signing keys), checked.

``repository("docker")`` -> ``{"url": "https://download.docker.com", "key_path": "gpg", "fingerprint": "9DC8...",
...}``; ``site_roots()`` -> the upstream root each ``dlbox_site_mirrors`` key replaces (Jetson's from
``data/jetson.yml``, PyTorch's index from ``data/compat.yml``). A file of the wrong shape raises VendorDataError naming the entry and key.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

import yaml

DATA_DIR = Path(__file__).resolve().parents[3] / "data"
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_FINGERPRINT = re.compile(r"^[0-9A-F]{40}$")
_URL = re.compile(r"^https://[^\s]+[^/\s]$")


class VendorDataError(Exception):
    """data/repositories.yml (or data/jetson.yml) does not load or has the wrong shape."""


def _load(path):
    try:
        return yaml.load(Path(path).read_text(encoding="utf-8"), Loader=_LOADER)  # nosec - CSafeLoader/SafeLoader
    except (OSError, yaml.YAMLError) as exc:
        raise VendorDataError("%s: %s" % (path, exc)) from exc


def _check_key(where, key):
    if not isinstance(key.get("fingerprint"), str) or not _FINGERPRINT.match(key["fingerprint"]):
        raise VendorDataError("%s.fingerprint must be 40 upper-case hex digits, not %r" % (where, key.get("fingerprint")))
    if not key.get("source"):
        raise VendorDataError("%s has no source" % where)


@lru_cache(maxsize=None)
def load(data_dir=None):
    """The checked contents of repositories.yml: {"repositories": {...}, "indexes": {...}}."""
    path = Path(data_dir or DATA_DIR) / "repositories.yml"
    data = _load(path)
    if not isinstance(data, dict) or data.get("schema") != 1:
        raise VendorDataError("%s: expected a mapping with schema: 1" % path)
    for section in ("repositories", "indexes"):
        for name, entry in (data.get(section) or {}).items():
            where = "%s: %s.%s" % (path.name, section, name)
            if not isinstance(entry, dict) or not isinstance(entry.get("url"), str) or not _URL.match(entry["url"]):
                raise VendorDataError("%s.url must be an https:// URL without a trailing /" % where)
            if "signing_keys" in entry:
                if "default" not in entry["signing_keys"]:
                    raise VendorDataError("%s.signing_keys needs a default key" % where)
                for key_name, key in entry["signing_keys"].items():
                    _check_key("%s.signing_keys.%s" % (where, key_name), key)
                    if not key.get("file"):
                        raise VendorDataError("%s.signing_keys.%s has no file" % (where, key_name))
            elif section == "repositories":
                _check_key(where, entry)
            elif not entry.get("source"):
                raise VendorDataError("%s has no source" % where)
    return data


def repository(name, data_dir=None):
    """One vendor repository's entry (a copy)."""
    entries = load(data_dir).get("repositories") or {}
    if name not in entries:
        raise VendorDataError("repositories.yml has no repository %r (has: %s)" % (name, ", ".join(entries)))
    return dict(entries[name])


def site_roots(data_dir=None):
    """{dlbox_site_mirrors key: the vendor root it replaces}, from repositories.yml and jetson.yml."""
    data = load(data_dir)
    roots = {}
    for section in ("repositories", "indexes"):
        for entry in (data.get(section) or {}).values():
            if entry.get("site_mirror"):
                roots[entry["site_mirror"]] = entry["url"]
    jetson = _load(Path(data_dir or DATA_DIR) / "jetson.yml")
    roots["jetson"] = str(((jetson or {}).get("repository") or {}).get("base_url") or "").rstrip("/")
    compat = _load(Path(data_dir or DATA_DIR) / "compat.yml")
    roots["pytorch_index"] = str(((compat or {}).get("pytorch") or {}).get("index_url_base") or "").rstrip("/")
    return roots


def index(name, data_dir=None):
    """One package index's root URL (``pypi``)."""
    entries = load(data_dir).get("indexes") or {}
    if name not in entries:
        raise VendorDataError("repositories.yml has no index %r (has: %s)" % (name, ", ".join(entries)))
    return entries[name]["url"]
