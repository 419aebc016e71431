# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""tests/integration/image_layers.py, which test_ci_image uses to look for the CA bundle secret in every file of every
layer of the built image (docker save), on synthetic archives in both layouts `docker save` writes: Docker's own
(<id>/layer.tar, uncompressed) and the OCI layout of Docker 25 and later (blobs/sha256/<digest>, here gzip-compressed)."""

from __future__ import annotations

import gzip
import io
import json
import sys
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "tests" / "integration"))
from image_layers import find_in_layers  # noqa: E402  pylint: disable=wrong-import-position,import-error

CANARY = b"dlbox-ci-image-test canary 0123456789abcdef"


def _tar(files):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, content in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))
        link = tarfile.TarInfo("etc/link")
        link.type, link.linkname = tarfile.SYMTYPE, "ssl/certs/ca-certificates.crt"
        tar.addfile(link)
    return buf.getvalue()


def _save(path, layers, layout, config=b'{"history": []}'):
    """A `docker save` archive of one image whose layers hold these files."""
    members, names = {}, []
    for n, files in enumerate(layers):
        blob = _tar(files)
        if layout == "oci":
            blob, name = gzip.compress(blob), "blobs/sha256/%064d" % n
        else:
            name = "%064d/layer.tar" % n
        members[name] = blob
        names.append(name)
    members["config.json"] = config
    members["manifest.json"] = json.dumps([{"Config": "config.json", "RepoTags": ["t:1"], "Layers": names}]).encode()
    with tarfile.open(path, mode="w") as tar:
        for name, content in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))
    return names


@pytest.mark.parametrize("layout", ["docker", "oci"])
def test_a_file_in_any_layer_that_holds_the_bytes_is_found(tmp_path, layout):
    names = _save(tmp_path / "image.tar", [
        {"etc/ssl/certs/ca-certificates.crt": b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"},
        {"usr/local/share/ca-certificates/lab.crt": b"x" * 5000 + CANARY + b"y" * 100, "opt/other": b"nothing"},
    ], layout)
    hits, files = find_in_layers(tmp_path / "image.tar", [CANARY, "BEGIN CERTIFICATE"], chunk=64)
    assert files == 3
    assert hits[CANARY] == [(names[1], "usr/local/share/ca-certificates/lab.crt")]
    assert hits[b"BEGIN CERTIFICATE"] == [(names[0], "etc/ssl/certs/ca-certificates.crt")]


@pytest.mark.parametrize("offset", range(60, 68))
def test_bytes_across_two_reads_are_found(tmp_path, offset):
    # chunk 64: the canary starts a few bytes before, at or after the end of the first read
    _save(tmp_path / "image.tar", [{"secret": b"z" * offset + CANARY}], "docker")
    hits, _files = find_in_layers(tmp_path / "image.tar", [CANARY], chunk=64)
    assert hits[CANARY] == [("%064d/layer.tar" % 0, "secret")]


def test_nothing_found_is_an_empty_list_and_the_config_is_read_too(tmp_path):
    _save(tmp_path / "image.tar", [{"a": b"one"}, {"b": b"two"}], "oci",
          config=json.dumps({"history": [{"created_by": "RUN echo %s" % CANARY.decode()}]}).encode())
    hits, files = find_in_layers(tmp_path / "image.tar", [CANARY, b"absent"])
    assert files == 2 and hits[b"absent"] == []
    assert hits[CANARY] == [("config.json", "(image config)")]
