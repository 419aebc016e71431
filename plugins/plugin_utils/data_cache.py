# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A disk cache for the loaded data and the GPU index, shared by Ansible's worker processes (controller only).

Ansible templates each task of each host in a fresh worker process, so an in-memory cache dies with the task:
every host paid for parsing ``data/compat.yml`` and ``data/gpu_catalog.yml`` and building the GPU index again
(about 250 ms of CPU). Here the finished objects are pickled once, keyed by the SHA-256 of the files' bytes
and of the code that builds them, and loaded by the next process in a few milliseconds. A changed file or
changed code gets a new key; nothing is ever served stale.

Where: ``$DLBOX_STACK_CACHE_DIR``, else ``$XDG_CACHE_HOME/dlbox-stack``, else ``~/.cache/dlbox-stack``;
``DLBOX_STACK_CACHE_DIR=off`` turns it off. The folder is created mode 0700 and a pickle is read only when it
and its folder belong to the current user and nobody else can write them (a pickle runs code when loaded).
Any failure (read-only home, a broken file) falls back to building in memory, as without the cache.
"""

from __future__ import annotations

import hashlib
import os
import pickle  # nosec - only files this user wrote, in a folder only this user can write (see _trusted)
import sys
import tempfile
from pathlib import Path

_HERE = Path(__file__).resolve().parent
# The code whose output is cached: a change to any of these makes new keys.
_CODE = ("compat_data.py", "gpu_catalog.py", "compat_index.py", "data_cache.py")
_TAG = None
_KEEP = 16  # pickles kept per kind; older ones are removed when a new one is written


def cache_dir():
    """The cache folder, or None when the cache is off."""
    chosen = os.environ.get("DLBOX_STACK_CACHE_DIR")
    if chosen is not None:
        return None if chosen.strip().lower() in ("", "off", "0", "false", "no") else Path(chosen)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "dlbox-stack"


def code_tag():
    """SHA-256 of the Python version and of the source of the code that builds what is cached."""
    global _TAG  # pylint: disable=global-statement
    if _TAG is None:
        digest = hashlib.sha256(sys.version.encode())
        for name in _CODE:
            try:
                digest.update((_HERE / name).read_bytes())
            except OSError:
                digest.update(name.encode())
        _TAG = digest.hexdigest()
    return _TAG


def key(*parts):
    """A cache key from byte strings or texts (file contents, other keys) and the code tag."""
    digest = hashlib.sha256(code_tag().encode())
    for part in parts:
        digest.update(part if isinstance(part, bytes) else str(part).encode())
        digest.update(b"\0")
    return digest.hexdigest()


def _trusted(path):
    try:
        info, folder = os.stat(path), os.stat(path.parent)
    except OSError:
        return False
    uid = os.getuid()
    return info.st_uid == uid and folder.st_uid == uid and not (info.st_mode | folder.st_mode) & 0o022


def get(kind, cache_key):
    """The object stored under ``kind``/``cache_key``, or None."""
    folder = cache_dir()
    if folder is None:
        return None
    path = folder / ("%s-%s.pickle" % (kind, cache_key))
    if not _trusted(path):
        return None
    try:
        with open(path, "rb") as handle:
            return pickle.load(handle)  # nosec - see _trusted
    except Exception:  # pylint: disable=broad-except
        return None  # a broken cache file is rebuilt, never an error


def put(kind, cache_key, value):
    """Store ``value``; silently does nothing where the folder cannot be written."""
    folder = cache_dir()
    if folder is None:
        return
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not _trusted_folder(folder):
            return
        handle, tmp = tempfile.mkstemp(dir=str(folder), prefix=".%s-" % kind)
        with os.fdopen(handle, "wb") as out:
            pickle.dump(value, out, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, folder / ("%s-%s.pickle" % (kind, cache_key)))
        _prune(folder, kind)
    except Exception:  # pylint: disable=broad-except
        return  # the cache is an optimisation only


def _trusted_folder(folder):
    info = os.stat(folder)
    return info.st_uid == os.getuid() and not info.st_mode & 0o022


def _prune(folder, kind):
    old = sorted(folder.glob("%s-*.pickle" % kind), key=lambda p: p.stat().st_mtime, reverse=True)[_KEEP:]
    for path in old:
        try:
            path.unlink()
        except OSError:
            pass
