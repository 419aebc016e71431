# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Debian/Ubuntu ``Packages`` indexes: fetch (live or a local copy), parse, order versions, get .debs.

An *archive* is a base URL (``http://deb.debian.org/debian``) or a local folder laid out the same way
(``<base>/dists/<suite>/<component>/binary-<arch>/Packages[.xz|.gz]``), so tests read recorded copies
through exactly the code that reads the live archive::

    archive = Archive("http://archive.ubuntu.com/ubuntu")
    stanzas = archive.packages("jammy-updates", "restricted")          # list of dicts, one per package
    stanzas[0]["Package"], stanzas[0]["Version"], relations(stanzas[0].get("Depends", ""))
    deb = archive.fetch_deb(stanza["Filename"], stanza["SHA256"], Path("build/debs"))
    text = extract_member(deb, "usr/share/doc/nvidia-kernel-common-595/supported-gpus.json")

When the suite's ``InRelease`` (or ``Release``) is present, the downloaded index is checked against
the SHA256 it lists (integrity only: the signature is not verified here). A suite that the archive
does not have raises :class:`IndexNotFound`; a wrong checksum raises :class:`IndexError_`.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import io
import lzma
import re
import subprocess
import tarfile
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

COMPRESSIONS = (".xz", ".gz", "")
DEFAULT_TIMEOUT = 60
_USER_AGENT = "dlbox.stack-data-refresh/1"


class IndexError_(RuntimeError):  # pylint: disable=invalid-name
    """An index or package could not be read, or did not match its checksum."""


class IndexNotFound(IndexError_):
    """The archive has no such suite/component/architecture index."""


# ----------------------------------------------------------------------------------------------
# Parsing
# ----------------------------------------------------------------------------------------------
def parse_stanzas(text):
    """Split a Debian control file (``Packages``, ``Release``) into a list of field dicts.

    ``"Package: a\\nVersion: 1\\n\\nPackage: b\\n"`` -> ``[{"Package": "a", "Version": "1"}, {"Package": "b"}]``.
    Continuation lines (starting with a space or tab) are joined to their field with a newline.
    """
    stanzas = []
    current = {}
    last = None
    for line in text.splitlines():
        if not line.strip():
            if current:
                stanzas.append(current)
            current, last = {}, None
            continue
        if line[0] in " \t":
            if last is not None:
                current[last] += "\n" + line[1:]
            continue
        name, sep, value = line.partition(":")
        if not sep:
            raise IndexError_(f"not a control-file line: {line[:80]!r}")
        last = name.strip()
        current[last] = value.strip()
    if current:
        stanzas.append(current)
    return stanzas


_RELATION = re.compile(
    r"^\s*(?P<name>[a-z0-9][a-z0-9+.\-]*)(?::(?P<arch_q>[a-z0-9\-]+))?"
    r"\s*(?:\(\s*(?P<op><<|<=|=|>=|>>|<|>)\s*(?P<version>[^)\s]+)\s*\))?"
    r"\s*(?:\[(?P<archs>[^\]]*)\])?\s*(?:<[^>]*>\s*)*$"
)


@dataclass(frozen=True)
class Relation:
    """One package in a ``Depends``-like field: ``nvidia-driver-580 (>= 580.95)``."""

    name: str
    op: str | None = None
    version: str | None = None


def relations(value):
    """Parse ``Depends``/``Provides``: a list of alternative groups, each a list of :class:`Relation`.

    ``"a (>= 1), b | c"`` -> ``[[Relation("a", ">=", "1")], [Relation("b"), Relation("c")]]``.
    """
    groups = []
    for group in (value or "").split(","):
        if not group.strip():
            continue
        alternatives = []
        for alternative in group.split("|"):
            match = _RELATION.match(alternative.replace("\n", " "))
            if not match:
                raise IndexError_(f"cannot parse relation {alternative.strip()!r}")
            alternatives.append(Relation(match["name"], match["op"], match["version"]))
        groups.append(alternatives)
    return groups


def depends_names(stanza, fields=("Pre-Depends", "Depends")):
    """Every package name that ``stanza`` depends on (any alternative), in order, without repeats."""
    names = []
    for name in fields:
        for group in relations(stanza.get(name, "")):
            for rel in group:
                if rel.name not in names:
                    names.append(rel.name)
    return names


# ----------------------------------------------------------------------------------------------
# Debian version ordering (deb-version(7))
# ----------------------------------------------------------------------------------------------
def _split_version(version):
    epoch, rest = version.split(":", 1) if ":" in version else ("0", version)
    upstream, dash, revision = rest.rpartition("-")
    if not dash:
        upstream, revision = rest, ""
    return int(epoch or 0), upstream, revision


def compare_versions(left, right):
    """dpkg's ordering: negative, zero or positive. ``compare_versions("1.0~rc1", "1.0") < 0``. The collection's one
    copy (plugins/module_utils/versions.py ``debian_version_compare``), imported as the collection does."""
    return _versions().debian_version_compare(left, right)


@functools.lru_cache(maxsize=None)
def _versions():
    from dlboxdata.collection import collection_module  # pylint: disable=import-outside-toplevel
    return collection_module("plugins.module_utils.versions")


version_key = functools.cmp_to_key(compare_versions)


def upstream_version(version):
    """The upstream part of a Debian version: ``1:580.95.05-0ubuntu0.22.04.1`` -> ``580.95.05``."""
    return _split_version(version)[1]


# ----------------------------------------------------------------------------------------------
# Archives (live URL or local folder)
# ----------------------------------------------------------------------------------------------
def _is_url(base):
    return urllib.parse.urlsplit(str(base)).scheme in ("http", "https", "file")


@dataclass
class Archive:
    """A Debian-style archive at ``base`` (http(s)/file URL or a local folder)."""

    base: str
    timeout: float = DEFAULT_TIMEOUT
    verify_release: bool = True
    fetched: list = field(default_factory=list)  # (relative path, bytes) log, for reports and timing

    def __post_init__(self):
        self.base = str(self.base).rstrip("/")
        self._release_cache = {}

    def location(self, relpath):
        """Where ``relpath`` lives: a URL or a local path (as text)."""
        return f"{self.base}/{relpath}"

    def read(self, relpath):
        """The bytes at ``relpath``; :class:`IndexNotFound` when absent."""
        if _is_url(self.base):
            request = urllib.request.Request(self.location(relpath), headers={"User-Agent": _USER_AGENT})
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:  # noqa: S310 - http(s)/file only
                    payload = response.read()
            except urllib.error.HTTPError as exc:
                if exc.code == 404:
                    raise IndexNotFound(f"{self.location(relpath)}: not found (HTTP 404)") from exc
                raise IndexError_(f"{self.location(relpath)}: HTTP {exc.code}") from exc
            except urllib.error.URLError as exc:
                if isinstance(exc.reason, FileNotFoundError):
                    raise IndexNotFound(f"{self.location(relpath)}: not found") from exc
                raise IndexError_(f"{self.location(relpath)}: {exc.reason}") from exc
            except OSError as exc:
                raise IndexError_(f"{self.location(relpath)}: {exc}") from exc
        else:
            path = Path(self.base) / relpath
            try:
                payload = path.read_bytes()
            except FileNotFoundError as exc:
                raise IndexNotFound(f"{path}: not found") from exc
            except OSError as exc:
                raise IndexError_(f"{path}: {exc.strerror}") from exc
        self.fetched.append((relpath, len(payload)))
        return payload

    def release_sha256(self, suite):
        """``{relative path: (sha256, size)}`` from the suite's InRelease/Release; ``{}`` when it has none."""
        if suite in self._release_cache:
            return self._release_cache[suite]
        listing = {}
        for name in ("InRelease", "Release"):
            try:
                text = self.read(f"dists/{suite}/{name}").decode("utf-8", "replace")
            except IndexNotFound:
                continue
            listing = parse_release_sha256(text)
            break
        self._release_cache[suite] = listing
        return listing

    def index_text(self, suite, component, arch="amd64"):
        """The text of ``dists/<suite>/<component>/binary-<arch>/Packages`` (tries .xz, .gz, plain)."""
        stem = f"{component}/binary-{arch}/Packages"
        last = None
        for ext in COMPRESSIONS:
            relpath = f"dists/{suite}/{stem}{ext}"
            try:
                payload = self.read(relpath)
            except IndexNotFound as exc:
                last = exc
                continue
            if self.verify_release:
                listed = self.release_sha256(suite).get(f"{stem}{ext}")
                if listed and hashlib.sha256(payload).hexdigest() != listed[0]:
                    raise IndexError_(f"{self.location(relpath)}: SHA256 differs from dists/{suite}/InRelease")
            return decompress(payload, ext).decode("utf-8", "replace")
        raise IndexNotFound(f"{self.location(f'dists/{suite}/{stem}')}{{.xz,.gz,}}: not found") from last

    def packages(self, suite, component, arch="amd64"):
        """Parsed stanzas of one index."""
        return parse_stanzas(self.index_text(suite, component, arch))

    def fetch_deb(self, filename, sha256, dest_dir):
        """Download ``Filename`` (from a stanza) into ``dest_dir``, check its SHA256, return the path.

        A file already there with the right checksum is reused (no download).
        """
        dest = Path(dest_dir) / Path(filename).name
        if dest.is_file() and _sha256_file(dest) == sha256:
            return dest
        payload = self.read(filename)
        digest = hashlib.sha256(payload).hexdigest()
        if digest != sha256:
            raise IndexError_(f"{self.location(filename)}: SHA256 {digest} is not the index's {sha256}")
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_suffix(dest.suffix + ".part")
        tmp.write_bytes(payload)
        tmp.replace(dest)
        return dest


def decompress(payload, ext):
    """Undo ``.xz``/``.gz`` (by extension); plain bytes come back as they are."""
    try:
        if ext == ".xz":
            return lzma.decompress(payload)
        if ext == ".gz":
            return gzip.decompress(payload)
    except (lzma.LZMAError, OSError, EOFError) as exc:
        raise IndexError_(f"corrupt {ext} index: {exc}") from exc
    return payload


def parse_release_sha256(text):
    """``{path: (sha256, size)}`` from the ``SHA256:`` block of a (In)Release file."""
    listing = {}
    in_block = False
    for line in text.splitlines():
        if not line.startswith(" "):
            in_block = line.startswith("SHA256:")
            continue
        if in_block:
            parts = line.split()
            if len(parts) == 3:
                listing[parts[2]] = (parts[0], int(parts[1]))
    return listing


def read_index_file(path):
    """Parse a ``Packages`` file on disk (``.xz``, ``.gz`` or plain, by extension)."""
    path = Path(path)
    ext = path.suffix if path.suffix in (".xz", ".gz") else ""
    return parse_stanzas(decompress(path.read_bytes(), ext).decode("utf-8", "replace"))


def _sha256_file(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _member_name(name):
    """``./usr/share/x`` and ``/usr/share/x`` -> ``usr/share/x``."""
    return re.sub(r"^(?:\./|/)+", "", name)


def extract_member(deb_path, member):
    """The bytes of one file inside a ``.deb`` (``dpkg-deb --fsys-tarfile``), e.g. a shipped JSON list."""
    wanted = _member_name(member)
    try:
        tar_bytes = subprocess.run(
            ["dpkg-deb", "--fsys-tarfile", str(deb_path)], check=True, capture_output=True
        ).stdout
    except FileNotFoundError as exc:
        raise IndexError_("dpkg-deb is needed to read .deb files") from exc
    except subprocess.CalledProcessError as exc:
        raise IndexError_(f"{deb_path}: dpkg-deb failed: {exc.stderr.decode(errors='replace').strip()}") from exc
    with tarfile.open(fileobj=io.BytesIO(tar_bytes)) as archive:
        for info in archive:
            if _member_name(info.name) == wanted and info.isfile():
                return archive.extractfile(info).read()
    raise IndexError_(f"{deb_path}: no member {member}")


def write_index(stanzas, path):
    """Write stanzas as a plain ``Packages`` file (used to record trimmed copies for tests)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    blocks = []
    for stanza in stanzas:
        lines = []
        for name, value in stanza.items():
            first, *rest = value.split("\n")
            lines.append(f"{name}: {first}".rstrip())
            lines.extend(f" {line}" for line in rest)
        blocks.append("\n".join(lines))
    path.write_text("\n\n".join(blocks) + ("\n" if blocks else ""), encoding="utf-8")
    return path
