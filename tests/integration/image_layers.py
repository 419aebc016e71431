"""What the layers of a saved image hold: the files of every layer of a ``docker save`` archive that contain some bytes.

``docker history`` shows the commands that made the layers, never the files in them: a secret copied into a layer does
not show there. This reads the archive ``docker save`` writes, in both of its layouts (Docker's own, ``<id>/layer.tar``,
and the OCI layout of Docker 25 and later, ``blobs/sha256/<digest>``, both listed by ``manifest.json``), each layer a
tar file, uncompressed or gzip-compressed, and each file in it. Used by tests/integration/test_ci_image.py; unit-tested
on synthetic archives in tests/unit/tests/test_image_layers.py.
"""

from __future__ import annotations

import json
import tarfile

_GZIP = b"\x1f\x8b"


def _contains(fileobj, needles, found, chunk):
    """Add to ``found`` each needle in the stream (read in chunks; a needle across two chunks is found too)."""
    keep = max(len(n) for n in needles) - 1
    tail = b""
    while True:
        block = fileobj.read(chunk)
        if not block:
            return
        window = tail + block
        for needle in needles:
            if needle in window:
                found.add(needle)
        tail = window[-keep:] if keep else b""


def _layer(fileobj):
    head = fileobj.read(2)
    fileobj.seek(0)
    return tarfile.open(fileobj=fileobj, mode="r:gz" if head == _GZIP else "r:")


def find_in_layers(archive, needles, chunk=1 << 20):
    """Where each of ``needles`` (bytes) is in the image saved at ``archive``.

    Returns ``({needle: [(layer, path), ...]}, files)``: for each needle the layer and the path of every regular file
    that holds it (``(config, "(image config)")`` for the image's configuration: environment, labels, history), and the
    number of files read, so that a caller can tell an empty answer from an archive that was not read.
    """
    needles = [n.encode() if isinstance(n, str) else n for n in needles]
    hits = {needle: [] for needle in needles}
    files = 0
    with tarfile.open(archive, mode="r:") as outer:
        manifest = json.load(outer.extractfile("manifest.json"))
        for entry in manifest:
            found = set()
            _contains(outer.extractfile(entry["Config"]), needles, found, chunk)
            for needle in found:
                hits[needle].append((entry["Config"], "(image config)"))
            for layer in entry["Layers"]:
                with _layer(outer.extractfile(layer)) as inner:
                    for item in inner:
                        if not item.isfile():
                            continue
                        files += 1
                        found = set()
                        _contains(inner.extractfile(item), needles, found, chunk)
                        for needle in found:
                            hits[needle].append((layer, item.name))
    return hits, files
