# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""PyPI's JSON API, live or from recorded copies, and the few readings dlbox.stack's data needs.

``PyPI()`` reads ``https://pypi.org/pypi/<name>/json`` and ``/<name>/<version>/json``;
``PyPI(recorded="tests/fixtures/indexes/pypi")`` reads ``<dir>/<name>.json`` and
``<dir>/<name>/<version>.json`` instead (the same shapes, trimmed by :func:`trim_project`), so
tests run the same code on frozen copies::

    pypi = PyPI()
    project = pypi.project("torch")
    release_versions(project)                  # ["2.15.0", "2.14.1", ...] newest first, no pre/yanked
    meta = pypi.release("torch", "2.15.0")
    meta["info"]["requires_python"]            # ">=3.11"
    requirements(meta)                         # [Requirement(name="nvidia-cudnn-cu13", specifier="==9.26.0.51", ...)]
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement as _Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

DEFAULT_BASE = "https://pypi.org/pypi"
DEFAULT_TIMEOUT = 60
_USER_AGENT = "dlbox.stack-data-refresh/1"


class PyPIError(RuntimeError):
    """A project or release could not be read."""


class PyPINotFound(PyPIError):
    """PyPI (or the recorded copy) has no such project or release."""


@dataclass(frozen=True)
class Requirement:
    """One ``requires_dist`` line, read: ``nvidia-cudnn-cu13==9.26.0.51; platform_system == "Linux"``."""

    name: str
    specifier: str
    extras: tuple
    marker: str
    extra: str | None  # the extra that pulls it (``and-cuda``), None for a base dependency

    def pinned(self):
        """The version of an ``==`` pin (``"9.26.0.51"``), else None."""
        match = re.fullmatch(r"===?([^,\s]+)", self.specifier)
        return match.group(1) if match else None


class PyPI:
    """PyPI's JSON API at ``base``, or recorded copies in the folder ``recorded``."""

    def __init__(self, base=DEFAULT_BASE, recorded=None, timeout=DEFAULT_TIMEOUT):
        self.base = base.rstrip("/")
        self.recorded = Path(recorded) if recorded else None
        self.timeout = timeout
        self.requests = 0
        self.bytes = 0

    def _get(self, parts):
        if self.recorded is not None:
            path = self.recorded.joinpath(*parts[:-1], parts[-1] + ".json")
            try:
                payload = path.read_bytes()
            except FileNotFoundError as exc:
                raise PyPINotFound(f"{path}: no recorded copy") from exc
        else:
            url = "/".join([self.base, *(urllib.parse.quote(p) for p in parts), "json"])
            request = urllib.request.Request(url, headers={"User-Agent": _USER_AGENT, "Accept": "application/json"})
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:  # noqa: S310 - https only
                    payload = response.read()
            except urllib.error.HTTPError as exc:
                if exc.code == 404:
                    raise PyPINotFound(f"{url}: not found (HTTP 404)") from exc
                raise PyPIError(f"{url}: HTTP {exc.code}") from exc
            except (urllib.error.URLError, OSError) as exc:
                raise PyPIError(f"{url}: {getattr(exc, 'reason', exc)}") from exc
        self.requests += 1
        self.bytes += len(payload)
        try:
            return json.loads(payload)
        except ValueError as exc:
            raise PyPIError(f"{'/'.join(parts)}: not JSON: {exc}") from exc

    def project(self, name):
        """``/pypi/<name>/json``: ``info`` (of the newest release) and ``releases`` {version: [files]}."""
        return self._get([canonicalize_name(name)])

    def release(self, name, version):
        """``/pypi/<name>/<version>/json``: ``info`` of that release (``requires_dist``, ``requires_python``).

        Some PyPI proxies answer only the project document; then the newest release's ``info`` (which
        that document carries) is used, and any other version raises :class:`PyPINotFound`.
        """
        try:
            return self._get([canonicalize_name(name), version])
        except PyPINotFound:
            project = self.project(name)
            if (project.get("info") or {}).get("version") == version:
                return {"info": project["info"]}
            raise


def _parse_version(text):
    try:
        return Version(text)
    except InvalidVersion:
        return None


def release_versions(project, include_prereleases=False, include_yanked=False):
    """Versions with at least one file, newest first; pre-releases and fully yanked ones left out by default."""
    found = []
    for text, files in (project.get("releases") or {}).items():
        version = _parse_version(text)
        if version is None or not files:
            continue
        if version.is_prerelease and not include_prereleases:
            continue
        if not include_yanked and all(f.get("yanked") for f in files):
            continue
        found.append((version, text))
    return [pair[1] for pair in sorted(found, reverse=True)]


def latest_version(project, **kwargs):
    """The newest version :func:`release_versions` keeps, or None."""
    versions = release_versions(project, **kwargs)
    return versions[0] if versions else None


def files(project, version):
    """The file entries of one release (``filename``, ``packagetype``, ``requires_python``, ``yanked``...)."""
    return list((project.get("releases") or {}).get(version) or [])


def requires_python(release):
    """``info.requires_python`` of a release document (``">=3.10"``), or None."""
    return (release.get("info") or {}).get("requires_python") or None


def requirements(release):
    """``info.requires_dist`` parsed into :class:`Requirement` (unparsable lines raise PyPIError)."""
    found = []
    for line in (release.get("info") or {}).get("requires_dist") or []:
        try:
            req = _Requirement(line)
        except InvalidRequirement as exc:
            raise PyPIError(f"cannot parse requires_dist line {line!r}: {exc}") from exc
        marker = str(req.marker) if req.marker else ""
        extra = None
        match = re.search(r"""extra\s*==\s*["']([^"']+)["']""", marker)
        if match:
            extra = match.group(1)
        found.append(Requirement(canonicalize_name(req.name), str(req.specifier), tuple(sorted(req.extras)), marker, extra))
    return found


def trim_project(project, versions=None):
    """A small copy of a project document for recording: ``info`` essentials and file essentials.

    ``versions``: keep only these releases (None keeps all).
    """
    keep_file = ("filename", "packagetype", "python_version", "requires_python", "yanked", "upload_time")
    info = project.get("info") or {}
    releases = {}
    for version, entries in (project.get("releases") or {}).items():
        if versions is not None and version not in versions:
            continue
        releases[version] = [{k: f.get(k) for k in keep_file} for f in entries]
    return {
        "info": {k: info.get(k) for k in ("name", "version", "requires_python", "requires_dist")},
        "releases": releases,
    }


def trim_release(release):
    """A small copy of a release document for recording: only what :func:`requirements` reads."""
    info = release.get("info") or {}
    return {"info": {k: info.get(k) for k in ("name", "version", "requires_python", "requires_dist")}}


def write_recorded(folder, name, document, version=None):
    """Write a recorded copy where ``PyPI(recorded=folder)`` will look for it; return the path."""
    folder = Path(folder)
    path = folder / f"{canonicalize_name(name)}.json" if version is None else folder / canonicalize_name(name) / f"{version}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return path
