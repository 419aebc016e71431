"""Build a signed FIXTURE apt repository from a small YAML description.

    build_repo.py SPEC.yml OUTDIR [--key-dir DIR] [--deb-cache DIR] [--force]

dlbox.stack's tests cannot reach NVIDIA's or Docker's apt repositories. The roles take a base URL,
mirror and keyring for each, and the tests point them at a local repository built by this script:
real ``.deb`` files (``dpkg-deb --build``), real ``Packages``/``Release`` metadata, a real GPG
signature (``InRelease`` and ``Release.gpg``) made with a throw-away key, and fake payloads.
Every generated file says that it is a fixture.

Spec (YAML; see specs/ for complete examples)::

    _anchors: ...                 # top-level keys starting with "_" are ignored (YAML anchor holders)
    include: [_common.yml]        # optional: files whose packages (and unset keys) are merged in
    name: cuda-ubuntu2204         # identifies the repository in FIXTURE-README
    keyring_name: cuda-archive    # -> cuda-archive-keyring.gpg (binary, for signed-by=) + .fingerprint
    key: cuda                     # key name inside --key-dir (default: keyring_name)
    armored_key_files: [gpgkey]   # ASCII-armored copies of the public key at the repository root
    origin: NVIDIA                # Release Origin (Label is always "dlbox fixture" unless given)
    description: "..."            # Release Description ("FIXTURE: " is prepended when missing)
    layout: flat                  # flat: `deb [signed-by=K] URL/<flat_dir> /`
    flat_dir: "."                 #   where Packages/Release and the .debs live (relative to OUTDIR)
    codename: ubuntu2204          #   Release Suite/Codename of a flat repository
    # layout: dists               # dists: `deb [signed-by=K] URL <suite> <component>`
    # suites: [{suite: bookworm, codename: bookworm, vars: {os_tag: debian.12}}]
    # components: [stable]
    architectures: [amd64]
    vars: {distro: ubuntu2204}    # @name@ placeholders in package fields, files and scripts
    packages:
      - name: cuda-nvcc-12-4
        version: 12.4.131-1       # or versions: [a, b] for one entry per version
        architecture: amd64       # default: all
        depends: [cuda-toolkit-12-4-config-common]   # also pre_depends recommends suggests provides
        description: fake nvcc    #   conflicts breaks replaces (string or list, joined with ", ")
        vars: {release: "12.4"}
        files:
          - {path: /usr/local/cuda-12.4/bin/nvcc, mode: "0755", content: "#!/bin/sh\\n..."}
          - {path: /usr/share/keyrings/x.gpg, keyring: binary}    # the fixture's public key
          - {path: /usr/lib/x/libx.so.1.2.3, content_base64: "f0VMRg..."}  # bytes (a fixture ELF)
          - {path: /usr/lib/x/libx.so.1, symlink: libx.so.1.2.3}
        postinst: |                # also preinst prerm postrm
          #!/bin/sh
        repack: docker.io          # instead of files: reuse this Debian package's payload
                                   # (fetched with `apt-get download`, cached in --deb-cache)

Placeholders: ``@version@`` (full), ``@upstream@`` (no epoch, no revision), ``@branch@`` (first
component of upstream), ``@name@``, ``@arch@``, ``@suite@``, ``@codename@``, ``@component@`` and
every key of the repository's, the suite's and the package's ``vars``.

Rebuilding an unchanged spec (same resolved spec, same builder, same key) does nothing at all, so
apt sees no change (the stamp is OUTDIR/.fixture-build.json). ``--key-dir`` keeps the signing keys (``DIR/<key>/secret.asc``) between
builds; without it a new key is generated whenever a build is needed.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import fcntl
import gzip
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

BUILDER_VERSION = "1"
MAINTAINER = "dlbox.stack test fixtures <fixtures@dlbox.invalid>"
DEFAULT_LABEL = "dlbox fixture"
FIXTURE_PREFIX = "FIXTURE:"
STAMP_FILE = ".fixture-build.json"
README_FILE = "FIXTURE-README"
# Timestamp of every file inside the .debs (and of the ar members): 2025-01-01T00:00:00Z.
DEB_EPOCH = 1735689600
CONTROL_ORDER = (
    "Package", "Source", "Version", "Architecture", "Maintainer", "Installed-Size", "Pre-Depends", "Depends",
    "Recommends", "Suggests", "Breaks", "Conflicts", "Replaces", "Provides", "Section", "Priority", "Homepage",
)
RELATION_KEYS = {
    "pre_depends": "Pre-Depends", "depends": "Depends", "recommends": "Recommends", "suggests": "Suggests",
    "breaks": "Breaks", "conflicts": "Conflicts", "replaces": "Replaces", "provides": "Provides",
}
SCRIPTS = ("preinst", "postinst", "prerm", "postrm")
PACKAGE_KEYS = {
    "name", "version", "versions", "architecture", "description", "long_description", "section", "priority",
    "homepage", "files", "vars", "component", "suites", "repack", "marker", *RELATION_KEYS, *SCRIPTS,
}
SPEC_KEYS = {
    "include", "name", "keyring_name", "key", "key_algo", "armored_key_files", "origin", "label", "description",
    "layout", "flat_dir", "codename", "suites", "components", "architectures", "vars", "packages", "date",
}
_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9+.-]+$")
_VERSION_RE = re.compile(r"^(?:[0-9]+:)?[0-9][A-Za-z0-9.+~:-]*$")
_PLACEHOLDER_RE = re.compile(r"@([a-z][a-z0-9_]*)@")


class SpecError(ValueError):
    """The YAML description is not usable."""


# ----------------------------------------------------------------------------------------------
# Pure helpers (unit-tested without dpkg or gpg)
# ----------------------------------------------------------------------------------------------
def upstream_version(version: str) -> str:
    """``5:27.5.1-1~debian.12`` -> ``27.5.1``: without epoch and Debian revision."""
    v = version.split(":", 1)[1] if ":" in version else version
    return v.rsplit("-", 1)[0] if "-" in v else v


def deb_filename(name: str, version: str, arch: str) -> str:
    """Debian pool file name: the epoch is not part of it."""
    v = version.split(":", 1)[1] if ":" in version else version
    return f"{name}_{v}_{arch}.deb"


def substitute(text: str, values: dict[str, str]) -> str:
    """Replace ``@key@`` for the keys in values; leave every other ``@...@`` alone."""
    return _PLACEHOLDER_RE.sub(lambda m: str(values[m.group(1)]) if m.group(1) in values else m.group(0), text)


def relation(value: Any) -> str:
    """A relation field from a string or a list of strings."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value.strip()
    return ", ".join(str(v).strip() for v in value)


def fixture_summary(text: str) -> str:
    text = " ".join(str(text or "").split())
    if not text.startswith(FIXTURE_PREFIX):
        text = f"{FIXTURE_PREFIX} {text}".rstrip()
    return text


def format_description(summary: str, long_text: str = "") -> str:
    """The value of a Description field: summary line, then the long text folded per Debian policy."""
    lines = [fixture_summary(summary)]
    for line in (long_text or "").strip("\n").splitlines():
        lines.append(" ." if not line.strip() else " " + line.rstrip())
    return "\n".join(lines)


def render_fields(fields: dict[str, str], order: tuple[str, ...] = CONTROL_ORDER) -> str:
    """deb822 text of one stanza: known fields in ``order``, then the rest, Description last."""
    keys = [k for k in order if fields.get(k) and k != "Description"]
    keys += [k for k in fields if k not in keys and k != "Description" and fields[k]]
    if fields.get("Description"):
        keys.append("Description")
    out = []
    for key in keys:
        value = str(fields[key])
        if "\n" in value:
            first, rest = value.split("\n", 1)
            cont = "\n".join(line if line.startswith(" ") else " " + line for line in rest.split("\n"))
            out.append(f"{key}: {first}\n{cont}")
        else:
            out.append(f"{key}: {value}")
    return "\n".join(out) + "\n"


def render_control(pkg: dict[str, Any], installed_kb: int) -> str:
    """DEBIAN/control of a resolved package (see resolve_packages)."""
    fields = {
        "Package": pkg["name"],
        "Version": pkg["version"],
        "Architecture": pkg["architecture"],
        "Maintainer": MAINTAINER,
        "Installed-Size": str(installed_kb),
        "Section": pkg.get("section") or "misc",
        "Priority": pkg.get("priority") or "optional",
        "Homepage": pkg.get("homepage") or "",
        "Description": format_description(pkg["description"], pkg.get("long_description", "")),
    }
    for key, field in RELATION_KEYS.items():
        fields[field] = relation(pkg.get(key))
    return render_fields(fields)


def file_hashes(data: bytes) -> dict[str, str]:
    return {
        "MD5sum": hashlib.md5(data).hexdigest(),  # noqa: S324 - apt's index format
        "SHA1": hashlib.sha1(data).hexdigest(),  # noqa: S324
        "SHA256": hashlib.sha256(data).hexdigest(),
    }


def packages_stanza(control_text: str, filename: str, data: bytes) -> str:
    """The Packages index stanza of a .deb: its control fields plus Filename, Size and hashes."""
    fields = parse_stanza(control_text)
    desc = fields.pop("Description", "")
    fields["Filename"] = filename
    fields["Size"] = str(len(data))
    fields.update(file_hashes(data))
    fields["Description"] = desc
    order = CONTROL_ORDER + ("Filename", "Size", "MD5sum", "SHA1", "SHA256")
    return render_fields(fields, order)


def parse_stanza(text: str) -> dict[str, str]:
    """deb822 stanza -> dict (continuation lines kept with their leading space)."""
    fields: dict[str, str] = {}
    key = None
    for line in text.splitlines():
        if not line.strip() and key is None:
            continue
        if line[:1] in (" ", "\t") and key:
            fields[key] += "\n" + line
        elif ":" in line:
            key, value = line.split(":", 1)
            fields[key] = value.strip()
    return fields


def rfc2822_utc(ts: float) -> str:
    """Release ``Date`` format, locale-independent: ``Sat, 29 Nov 2026 18:00:00 UTC``."""
    t = time.gmtime(ts)
    return f"{_DAYS[t.tm_wday]}, {t.tm_mday:02d} {_MONTHS[t.tm_mon - 1]} {t.tm_year} {t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d} UTC"


def render_release(fields: dict[str, str], indexes: dict[str, bytes]) -> str:
    """Release file text: ``fields`` then MD5Sum and SHA256 of each index (path relative to Release)."""
    order = ("Origin", "Label", "Suite", "Codename", "Version", "Date", "Architectures", "Components", "Description")
    text = render_fields(fields, order)
    width = max((len(str(len(d))) for d in indexes.values()), default=1)
    for title, algo in (("MD5Sum", hashlib.md5), ("SHA256", hashlib.sha256)):
        text += f"{title}:\n"
        for path in sorted(indexes):
            data = indexes[path]
            text += f" {algo(data).hexdigest()} {len(data):>{width}} {path}\n"
    return text


def gzip_bytes(data: bytes) -> bytes:
    """Reproducible gzip (no name, mtime 0)."""
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as fh:
        fh.write(data)
    return buf.getvalue()


def parse_mode(value: Any, default: int = 0o644) -> int:
    if value is None:
        return default
    if isinstance(value, int):
        return value
    return int(str(value), 8)


# ----------------------------------------------------------------------------------------------
# Spec loading and resolution
# ----------------------------------------------------------------------------------------------
def load_spec(path: Path, _seen: tuple[Path, ...] = ()) -> dict[str, Any]:
    """Read a spec and its includes (relative to the including file). Included packages come first."""
    path = path.resolve()
    if path in _seen:
        raise SpecError(f"include loop at {path}")
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    if not isinstance(data, dict):
        raise SpecError(f"{path}: top level must be a mapping")
    data = {k: v for k, v in data.items() if not str(k).startswith("_")}  # _x: YAML anchor holders
    unknown = set(data) - SPEC_KEYS
    if unknown:
        raise SpecError(f"{path}: unknown keys {sorted(unknown)}")
    merged: dict[str, Any] = {}
    packages: list[dict[str, Any]] = []
    for inc in data.get("include") or []:
        sub = load_spec(path.parent / inc, _seen + (path,))
        packages += sub.pop("packages", [])
        for key, value in sub.items():
            if key == "vars":
                merged.setdefault("vars", {}).update(value)
            else:
                merged.setdefault(key, value)
    for key, value in data.items():
        if key in ("include", "packages"):
            continue
        if key == "vars":
            merged.setdefault("vars", {}).update(value or {})
        else:
            merged[key] = value
    merged["packages"] = packages + list(data.get("packages") or [])
    return merged


def normalise_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """Fill defaults and check the spec; the result is what the build (and its hash) depends on."""
    s = dict(spec)
    if not s.get("name"):
        raise SpecError("spec needs a name")
    s.setdefault("keyring_name", s["name"])
    s.setdefault("key", s["keyring_name"])
    s.setdefault("key_algo", "ed25519")
    s.setdefault("armored_key_files", ["gpgkey"])
    s.setdefault("origin", "dlbox fixture")
    s.setdefault("label", DEFAULT_LABEL)
    if "fixture" not in s["label"].lower():
        raise SpecError("label must say it is a fixture")
    s["description"] = fixture_summary(s.get("description") or f"dlbox.stack test repository {s['name']}")
    s.setdefault("layout", "flat")
    s.setdefault("architectures", ["amd64"])
    s.setdefault("vars", {})
    if s["layout"] == "flat":
        s.setdefault("flat_dir", ".")
        s.setdefault("codename", s["name"])
        if s.get("suites") or s.get("components"):
            raise SpecError("a flat repository has no suites or components")
        if Path(s["flat_dir"]).is_absolute() or ".." in Path(s["flat_dir"]).parts:
            raise SpecError("flat_dir must be a relative path inside OUTDIR")
        s["suites"] = [{"suite": "/", "codename": s["codename"], "vars": {}}]
        s["components"] = []
    elif s["layout"] == "dists":
        suites = []
        for item in s.get("suites") or []:
            item = {"suite": item} if isinstance(item, str) else dict(item)
            item.setdefault("codename", item["suite"])
            item.setdefault("vars", {})
            suites.append(item)
        if not suites:
            raise SpecError("a dists repository needs suites")
        s["suites"] = suites
        s.setdefault("components", ["main"])
    else:
        raise SpecError(f"layout must be flat or dists, not {s['layout']!r}")
    for pkg in s.get("packages") or []:
        unknown = set(pkg) - PACKAGE_KEYS
        if unknown:
            raise SpecError(f"package {pkg.get('name')}: unknown keys {sorted(unknown)}")
        if not _NAME_RE.match(str(pkg.get("name", ""))):
            raise SpecError(f"bad package name {pkg.get('name')!r}")
        if not (pkg.get("version") or pkg.get("versions")):
            raise SpecError(f"package {pkg['name']} needs version or versions")
    return s


def resolve_packages(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """One entry per (package, version, suite) with every placeholder filled in."""
    out = []
    for suite in spec["suites"]:
        for raw in spec["packages"]:
            if raw.get("suites") and suite["suite"] not in raw["suites"] and suite["codename"] not in raw["suites"]:
                continue
            versions = raw.get("versions") or [raw["version"]]
            for version in versions:
                values = {k: str(v) for k, v in (spec.get("vars") or {}).items()}
                values.update({k: str(v) for k, v in (suite.get("vars") or {}).items()})
                values.update({"suite": suite["suite"], "codename": suite["codename"]})
                values.update({k: str(v) for k, v in (raw.get("vars") or {}).items()})
                version = substitute(str(version), values)
                if not _VERSION_RE.match(version):
                    raise SpecError(f"package {raw['name']}: bad version {version!r}")
                arch = raw.get("architecture", "all")
                component = raw.get("component") or (spec["components"][0] if spec["components"] else "")
                values.update({
                    "name": raw["name"], "version": version, "upstream": upstream_version(version),
                    "branch": upstream_version(version).split(".")[0], "arch": arch, "component": component,
                })
                pkg: dict[str, Any] = {
                    "name": raw["name"], "version": version, "architecture": arch, "component": component,
                    "suite": suite["suite"], "codename": suite["codename"],
                    "section": raw.get("section"), "priority": raw.get("priority"), "homepage": raw.get("homepage"),
                    "description": fixture_summary(substitute(str(raw.get("description") or raw["name"]), values)),
                    "long_description": substitute(str(raw.get("long_description") or ""), values),
                    "repack": raw.get("repack"),
                    "marker": raw.get("marker", True),
                }
                for key in RELATION_KEYS:
                    pkg[key] = substitute(relation(raw.get(key)), values)
                for key in SCRIPTS:
                    if raw.get(key):
                        pkg[key] = substitute(str(raw[key]), values)
                files = []
                for f in raw.get("files") or []:
                    entry = {"path": substitute(str(f["path"]), values), "mode": parse_mode(f.get("mode"))}
                    if f.get("keyring"):
                        if f["keyring"] not in ("binary", "armored"):
                            raise SpecError(f"{raw['name']}: keyring must be binary or armored")
                        entry["keyring"] = f["keyring"]
                    elif "symlink" in f:
                        entry["symlink"] = substitute(str(f["symlink"]), values)
                    elif "content_base64" in f:
                        entry["data"] = base64.b64decode("".join(substitute(str(f["content_base64"]), values).split()), validate=True)
                    else:
                        entry["content"] = substitute(str(f.get("content", "")), values)
                    if not entry["path"].startswith("/") or ".." in Path(entry["path"]).parts:
                        raise SpecError(f"{raw['name']}: file path must be absolute: {entry['path']}")
                    files.append(entry)
                pkg["files"] = files
                out.append(pkg)
    return out


def spec_digest(spec: dict[str, Any]) -> str:
    """Hash of the normalised spec and of this builder's source: a change in either rebuilds."""
    h = hashlib.sha256()
    h.update(json.dumps(spec, sort_keys=True, default=str).encode())
    h.update(Path(__file__).read_bytes())
    h.update(BUILDER_VERSION.encode())
    return h.hexdigest()


# ----------------------------------------------------------------------------------------------
# GPG
# ----------------------------------------------------------------------------------------------
@contextlib.contextmanager
def locked(path: Path):
    """An exclusive lock on PATH (created if missing) for the block: builders running side by side take turns."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _write_atomic(path: Path, data: bytes, mode: int) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_bytes(data)
    os.chmod(tmp, mode)
    tmp.rename(path)


class Signer:
    """A throw-away signing key in a private, temporary GNUPGHOME."""

    def __init__(self, key_name: str, key_dir: Path | None, algo: str = "ed25519"):
        self.home = Path(tempfile.mkdtemp(prefix="dlbox-gpg-"))  # short: gpg-agent socket path limit
        os.chmod(self.home, 0o700)
        self.key_name = key_name
        if not key_dir:
            self._generate(algo)
            return
        saved = key_dir / key_name / "secret.asc"
        saved.parent.mkdir(parents=True, exist_ok=True)
        os.chmod(saved.parent, 0o700)
        # Several builders may start at once from an empty key folder (Molecule runs scenarios side by side and
        # specs share a key): one makes the key, the others wait and import it. Without the lock each made its
        # own, the last one saved won, and a repository built with a losing key was rebuilt under the feet of
        # the scenario that was serving it (CI, stop 40: server and gpu_host both build cuda-ubuntu2404).
        with locked(saved.parent / ".lock"):
            if saved.exists():
                self._gpg("--import", str(saved))
                self.fingerprint = self._fingerprint()
                return
            self._generate(algo)
            secret = self._gpg("--pinentry-mode", "loopback", "--passphrase", "", "--armor",
                               "--export-secret-keys", self.fingerprint)
            _write_atomic(saved.parent / "fingerprint", (self.fingerprint + "\n").encode(), 0o644)
            _write_atomic(saved, secret, 0o600)

    def _generate(self, algo: str) -> None:
        uid = (f"dlbox.stack FIXTURE signing key ({self.key_name}; test fixture, not a vendor key) "
               f"<fixture-{self.key_name}@dlbox.invalid>")
        self._gpg("--passphrase", "", "--quick-gen-key", uid, algo, "sign", "never")
        self.fingerprint = self._fingerprint()

    def _gpg(self, *args: str, stdin: bytes | None = None) -> bytes:
        cmd = ["gpg", "--homedir", str(self.home), "--batch", "--yes", "--no-tty", "--quiet", *args]
        proc = subprocess.run(cmd, input=stdin, capture_output=True, check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed: {proc.stderr.decode(errors='replace')}")
        return proc.stdout

    def _fingerprint(self) -> str:
        out = self._gpg("--with-colons", "--list-secret-keys").decode()
        fprs = [line.split(":")[9] for line in out.splitlines() if line.startswith("fpr:")]
        if not fprs:
            raise RuntimeError("no secret key in the fixture GNUPGHOME")
        return fprs[0]

    def export(self, armor: bool) -> bytes:
        return self._gpg(*(["--armor"] if armor else []), "--export", self.fingerprint)

    def sign(self, data: bytes, clearsign: bool) -> bytes:
        mode = ["--clearsign"] if clearsign else ["--armor", "--detach-sign"]
        return self._gpg("--pinentry-mode", "loopback", "--passphrase", "", "--local-user", self.fingerprint,
                         "--digest-algo", "SHA512", *mode, stdin=data)

    def close(self) -> None:
        subprocess.run(["gpgconf", "--homedir", str(self.home), "--kill", "all"], capture_output=True, check=False)
        shutil.rmtree(self.home, ignore_errors=True)


def saved_fingerprint(key_dir: Path | None, key_name: str) -> str | None:
    if not key_dir:
        return None
    path = key_dir / key_name / "fingerprint"
    return path.read_text().strip() if path.exists() else None


# ----------------------------------------------------------------------------------------------
# .deb building
# ----------------------------------------------------------------------------------------------
def _clamp_tree(root: Path) -> None:
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            os.utime(os.path.join(dirpath, name), (DEB_EPOCH, DEB_EPOCH), follow_symlinks=False)
    os.utime(root, (DEB_EPOCH, DEB_EPOCH))


def _marker_text(pkg: dict[str, Any], spec_name: str) -> str:
    return (f"{FIXTURE_PREFIX} package {pkg['name']} {pkg['version']} from the dlbox.stack test apt repository "
            f"'{spec_name}'.\nIt is not the vendor's package: fake payload, real apt metadata.\n")


def build_deb(pkg: dict[str, Any], spec_name: str, keys: dict[str, bytes], workdir: Path, dest: Path) -> bytes:
    """Build one .deb with dpkg-deb --build; returns its control text."""
    stage = Path(tempfile.mkdtemp(prefix=f"{pkg['name']}-", dir=workdir))
    debian = stage / "DEBIAN"
    debian.mkdir(mode=0o755)
    files = list(pkg["files"])
    if pkg["marker"]:
        files.append({"path": f"/usr/share/dlbox-fixture/{pkg['name']}", "mode": 0o644,
                      "content": _marker_text(pkg, spec_name)})
    total = 0
    conffiles = []
    for f in files:
        target = stage / f["path"].lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        if "symlink" in f:
            os.symlink(f["symlink"], target)
            continue
        data = keys[f["keyring"]] if "keyring" in f else f["data"] if "data" in f else f["content"].encode()
        target.write_bytes(data)
        os.chmod(target, f["mode"])
        total += (len(data) + 1023) // 1024
        if f["path"].startswith("/etc/"):
            conffiles.append(f["path"])
    for dirpath, _dirs, _files in os.walk(stage):
        os.chmod(dirpath, 0o755)
    control = render_control(pkg, max(total, 1))
    (debian / "control").write_text(control)
    if conffiles:
        (debian / "conffiles").write_text("\n".join(sorted(conffiles)) + "\n")
    for script in SCRIPTS:
        if pkg.get(script):
            path = debian / script
            text = pkg[script] if pkg[script].startswith("#!") else "#!/bin/sh\nset -e\n" + pkg[script]
            path.write_text(text if text.endswith("\n") else text + "\n")
            os.chmod(path, 0o755)
    _clamp_tree(stage)
    env = dict(os.environ, SOURCE_DATE_EPOCH=str(DEB_EPOCH))
    proc = subprocess.run(["dpkg-deb", "--root-owner-group", "-Zxz", "--build", str(stage), str(dest)],
                          capture_output=True, env=env, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"dpkg-deb failed for {pkg['name']}: {proc.stderr.decode(errors='replace')}")
    shutil.rmtree(stage)
    return control.encode()


def _ar_member(name: str, data: bytes) -> bytes:
    header = f"{name:<16}{DEB_EPOCH:<12}{0:<6}{0:<6}{'100644':<8}{len(data):<10}`\n".encode()
    return header + data + (b"\n" if len(data) % 2 else b"")


def _read_ar(data: bytes) -> list[tuple[str, bytes]]:
    if not data.startswith(b"!<arch>\n"):
        raise RuntimeError("not an ar archive")
    pos, members = 8, []
    while pos < len(data):
        header = data[pos:pos + 60]
        name = header[:16].decode().strip().rstrip("/")
        size = int(header[48:58].decode().strip())
        members.append((name, data[pos + 60:pos + 60 + size]))
        pos += 60 + size + (size % 2)
    return members


def fetch_deb(package: str, cache: Path) -> Path:
    """The candidate .deb of a package from this machine's apt sources (`apt-get download`), cached."""
    cache.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(["apt-cache", "show", "--no-all-versions", package], capture_output=True, text=True, check=False)
    fields = parse_stanza(proc.stdout.split("\n\n")[0]) if proc.returncode == 0 else {}
    if not fields.get("Version"):
        raise RuntimeError(f"repack: apt on this machine does not know package {package!r}")
    path = cache / deb_filename(package, fields["Version"], fields.get("Architecture", "amd64"))
    if not path.exists():
        tmp = Path(tempfile.mkdtemp(prefix="dlbox-debdl-", dir=cache))
        os.chmod(tmp, 0o755)  # lets apt's _apt sandbox user write there
        proc = subprocess.run(["apt-get", "download", "-q", f"{package}={fields['Version']}"], cwd=tmp,
                              capture_output=True, text=True, check=False)
        got = list(tmp.glob("*.deb"))
        if proc.returncode != 0 or not got:
            shutil.rmtree(tmp, ignore_errors=True)
            raise RuntimeError(f"repack: apt-get download {package} failed: {proc.stderr.strip()}")
        got[0].rename(path)
        shutil.rmtree(tmp, ignore_errors=True)
    return path


def repack_deb(pkg: dict[str, Any], source: Path, dest: Path) -> bytes:
    """A real package's payload and maintainer scripts under a new name and control file.

    The data member is copied byte for byte; only control.tar is rewritten (new control, the
    original conffiles/md5sums/scripts). Relations of the original are kept and the spec's added.
    """
    members = dict(_read_ar(source.read_bytes()))
    ctl_name = next(n for n in members if n.startswith("control.tar"))
    data_name = next(n for n in members if n.startswith("data.tar"))
    with tarfile.open(fileobj=io.BytesIO(members[ctl_name])) as tin:
        originals = {m.name.lstrip("./"): (m, tin.extractfile(m).read() if m.isfile() else b"") for m in tin.getmembers()}
    orig = parse_stanza(originals["control"][1].decode())
    merged = dict(pkg)
    # Keep what the payload needs (Pre-Depends, Depends, Recommends, Suggests); drop the original's
    # Conflicts/Breaks/Replaces/Provides, which name the packages this repack stands in for.
    for key in ("pre_depends", "depends", "recommends", "suggests"):
        field = RELATION_KEYS[key]
        parts = [p for p in (" ".join(orig.get(field, "").split()), pkg.get(key, "")) if p.strip()]
        merged[key] = ", ".join(parts)
    long_text = (pkg.get("long_description") or "") + (
        f"\n\nRepacked from {orig['Package']} {orig['Version']} (payload and maintainer scripts unchanged).")
    merged["long_description"] = long_text.strip()
    merged["homepage"] = pkg.get("homepage") or orig.get("Homepage")
    merged["section"] = pkg.get("section") or orig.get("Section")
    control = render_control(merged, int(orig.get("Installed-Size", "1")))
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", format=tarfile.GNU_FORMAT) as tout:
        items = [("control", 0o644, control.encode())]
        items += [(n, m.mode, d) for n, (m, d) in sorted(originals.items()) if m.isfile() and n != "control"]
        for name, mode, data in items:
            info = tarfile.TarInfo("./" + name)
            info.size, info.mode, info.mtime, info.uname, info.gname = len(data), mode, DEB_EPOCH, "root", "root"
            tout.addfile(info, io.BytesIO(data))
    ctl = gzip_bytes(gzip.decompress(buf.getvalue()))
    out = b"!<arch>\n" + _ar_member("debian-binary", b"2.0\n") + _ar_member("control.tar.gz", ctl)
    out += _ar_member(data_name, members[data_name])
    dest.write_bytes(out)
    return control.encode()


# ----------------------------------------------------------------------------------------------
# The repository
# ----------------------------------------------------------------------------------------------
def readme_text(spec: dict[str, Any], fingerprint: str, digest: str) -> str:
    keyring = f"{spec['keyring_name']}-keyring.gpg"
    if spec["layout"] == "flat":
        sub = "" if spec["flat_dir"] in (".", "") else "/" + spec["flat_dir"].strip("/")
        example = f"Types: deb\nURIs: <base URL>{sub}\nSuites: /\nSigned-By: /usr/share/keyrings/{keyring}\n"
    else:
        example = (f"Types: deb\nURIs: <base URL>\nSuites: {spec['suites'][0]['suite']}\n"
                   f"Components: {' '.join(spec['components'])}\nSigned-By: /usr/share/keyrings/{keyring}\n")
    return f"""{FIXTURE_PREFIX} this is a TEST FIXTURE apt repository built by dlbox.stack (tests/aptrepo/build_repo.py).
It is NOT the vendor's repository: the packages carry fake payloads ("FIXTURE:" in every Description),
signed with a throw-away key that has nothing to do with the vendor's key.

name:        {spec['name']}
description: {spec['description']}
layout:      {spec['layout']}
origin:      {spec['origin']} (Label: {spec['label']})
keyring:     {keyring} (binary, for signed-by=); {', '.join(spec['armored_key_files'])} (ASCII-armored)
fingerprint: {fingerprint} (also in {spec['keyring_name']}-keyring.fingerprint)
spec hash:   {digest}

deb822 source (apt >= 1.1):

{example}"""


def build(spec_path: Path, outdir: Path, key_dir: Path | None = None, deb_cache: Path | None = None,
          force: bool = False, now: float | None = None, log=print) -> dict[str, Any]:
    """Build (or keep) the repository; returns the stamp (spec hash, fingerprint, files).

    Builders of the same OUTDIR take turns (a lock beside it): the second finds the first's stamp and keeps it."""
    outdir = outdir.resolve()
    with locked(outdir.parent / f".{outdir.name}.lock"):
        return _build(spec_path, outdir, key_dir, deb_cache, force, now, log)


def _build(spec_path: Path, outdir: Path, key_dir: Path | None, deb_cache: Path | None,
           force: bool, now: float | None, log) -> dict[str, Any]:
    spec = normalise_spec(load_spec(spec_path))
    packages = resolve_packages(spec)
    repacks = {p["repack"] for p in packages if p.get("repack")}
    sources: dict[str, Path] = {}
    cache = deb_cache or (key_dir / "deb-cache" if key_dir else Path(tempfile.gettempdir()) / "dlbox-aptrepo-debs")
    for name in sorted(repacks):
        sources[name] = fetch_deb(name, cache)
    digest_input = dict(spec, _repack_sources={k: v.name for k, v in sources.items()})
    digest = spec_digest(digest_input)
    key_name = spec["key"]
    stamp_path = outdir / STAMP_FILE
    if stamp_path.exists() and not force:
        old = json.loads(stamp_path.read_text())
        wanted_fpr = saved_fingerprint(key_dir, key_name)
        if old.get("spec_hash") == digest and (wanted_fpr is None or wanted_fpr == old.get("fingerprint")) \
                and all((outdir / f).exists() for f in old.get("files", [])):
            log(f"{spec['name']}: unchanged (spec hash {digest[:12]}), nothing rebuilt in {outdir}")
            return old
    if outdir.exists() and any(outdir.iterdir()) and not stamp_path.exists():
        raise RuntimeError(f"{outdir} is not empty and is not a fixture repository built here; refusing to replace it")

    outdir.parent.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=f".{outdir.name}.build-", dir=outdir.parent))
    work = Path(tempfile.mkdtemp(prefix="dlbox-aptrepo-work-"))
    signer = Signer(key_name, key_dir, spec["key_algo"])
    try:
        keys = {"binary": signer.export(armor=False), "armored": signer.export(armor=True)}
        keyring = f"{spec['keyring_name']}-keyring.gpg"
        (stage / keyring).write_bytes(keys["binary"])
        (stage / f"{spec['keyring_name']}-keyring.fingerprint").write_text(signer.fingerprint + "\n")
        for name in spec["armored_key_files"]:
            (stage / name).write_bytes(keys["armored"])

        # .debs, grouped per index (suite, component, arch)
        indexes: dict[tuple[str, str, str], list[str]] = {}
        built: dict[str, str] = {}  # pool path -> sha256 (identical rebuilds across suites are fine)
        for pkg in packages:
            fname = deb_filename(pkg["name"], pkg["version"], pkg["architecture"])
            if spec["layout"] == "flat":
                rel_dir = Path(spec["flat_dir"])
                filename = f"./{fname}"
            else:
                rel_dir = Path("pool") / pkg["component"] / pkg["name"][0] / pkg["name"]
                filename = str(rel_dir / fname)
            (stage / rel_dir).mkdir(parents=True, exist_ok=True)
            dest = stage / rel_dir / fname
            if pkg.get("repack"):
                control = repack_deb(pkg, sources[pkg["repack"]], dest if not dest.exists() else work / fname)
            else:
                control = build_deb(pkg, spec["name"], keys, work, dest if not dest.exists() else work / fname)
            data = (work / fname).read_bytes() if (work / fname).exists() else dest.read_bytes()
            sha = hashlib.sha256(data).hexdigest()
            key = str(rel_dir / fname)
            if key in built and built[key] != sha:
                raise SpecError(f"{fname} differs between suites; put @codename@ in its version")
            built[key] = sha
            (work / fname).unlink(missing_ok=True)
            archs = spec["architectures"] if pkg["architecture"] == "all" else [pkg["architecture"]]
            for arch in archs:
                indexes.setdefault((pkg["suite"], pkg["component"], arch), []).append(
                    packages_stanza(control.decode(), filename, data))

        date = rfc2822_utc(now if now is not None else float(os.environ.get("SOURCE_DATE_EPOCH", time.time())))
        for suite in spec["suites"]:
            files: dict[str, bytes] = {}
            if spec["layout"] == "flat":
                base = stage / spec["flat_dir"]
                text = "\n".join(indexes.get(("/", "", spec["architectures"][0]), [])).encode()
                for arch in spec["architectures"][1:]:
                    text += b"\n" + "\n".join(indexes.get(("/", "", arch), [])).encode()
                files = {"Packages": text, "Packages.gz": gzip_bytes(text)}
            else:
                base = stage / "dists" / suite["suite"]
                for comp in spec["components"]:
                    for arch in spec["architectures"]:
                        text = "\n".join(indexes.get((suite["suite"], comp, arch), [])).encode()
                        files[f"{comp}/binary-{arch}/Packages"] = text
                        files[f"{comp}/binary-{arch}/Packages.gz"] = gzip_bytes(text)
            for rel, data in files.items():
                (base / rel).parent.mkdir(parents=True, exist_ok=True)
                (base / rel).write_bytes(data)
            fields = {
                "Origin": spec["origin"], "Label": spec["label"],
                "Suite": suite["suite"] if spec["layout"] == "dists" else suite["codename"],
                "Codename": suite["codename"], "Date": date,
                "Architectures": " ".join(spec["architectures"]),
                "Components": " ".join(spec["components"]),
                "Description": spec["description"],
            }
            release = render_release(fields, files).encode()
            (base / "Release").write_bytes(release)
            (base / "InRelease").write_bytes(signer.sign(release, clearsign=True))
            (base / "Release.gpg").write_bytes(signer.sign(release, clearsign=False))

        (stage / README_FILE).write_text(readme_text(spec, signer.fingerprint, digest))
        all_files = sorted(str(p.relative_to(stage)) for p in stage.rglob("*") if p.is_file())
        stamp = {"spec_hash": digest, "fingerprint": signer.fingerprint, "name": spec["name"],
                 "keyring": keyring, "layout": spec["layout"], "date": date, "files": all_files}
        (stage / STAMP_FILE).write_text(json.dumps(stamp, indent=1, sort_keys=True) + "\n")
        for path in [stage, *stage.rglob("*")]:
            if path.is_dir():
                os.chmod(path, 0o755)
            else:
                os.chmod(path, 0o644)
        if outdir.exists():
            old = outdir.with_name(f".{outdir.name}.old-{os.getpid()}")
            outdir.rename(old)
            stage.rename(outdir)
            shutil.rmtree(old)
        else:
            stage.rename(outdir)
        log(f"{spec['name']}: built {len(built)} packages into {outdir} (key {signer.fingerprint})")
        return stamp
    finally:
        signer.close()
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(stage, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("spec", type=Path, help="YAML description (tests/aptrepo/specs/*.yml)")
    parser.add_argument("outdir", type=Path, help="repository root to create (replaced only if built here before)")
    parser.add_argument("--key-dir", type=Path, help="keep/reuse signing keys here (DIR/<key>/secret.asc)")
    parser.add_argument("--deb-cache", type=Path,
                        help="where packages for `repack:` are downloaded to (default KEY_DIR/deb-cache, else /tmp/dlbox-aptrepo-debs)")
    parser.add_argument("--force", action="store_true", help="rebuild even when the spec is unchanged")
    args = parser.parse_args(argv)
    try:
        build(args.spec, args.outdir, key_dir=args.key_dir, deb_cache=args.deb_cache, force=args.force)
    except (SpecError, RuntimeError, OSError, yaml.YAMLError) as exc:
        print(f"build_repo.py: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
