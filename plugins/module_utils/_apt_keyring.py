# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""OpenPGP public keys for apt's ``Signed-By`` keyrings (pure, standard library, Python 3.8+; runs on the target).

A repository key is trusted only when it is exactly the key the caller pinned by fingerprint: the
fingerprints are computed here from the key packets themselves (RFC 9580: a v4 key's fingerprint is
SHA-1 over ``0x99``, a two-octet length and the public-key packet body; v5 and v6 use SHA-256 with a
four-octet length), so neither ``gpg`` nor a keyring directory is needed, also in check mode.

    fingerprints(<NVIDIA's 3bf863cc.pub>)  -> ['<its 40 hex digits, as in data/repositories.yml>']
    keyring_bytes(<the same>)              -> the binary packets apt reads from a ``.gpg`` keyring

I/O (downloading, reading and writing files) stays in the ``apt_keyring`` module.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re

__all__ = [
    "AptKeyError",
    "ARMOR_BEGIN",
    "normalise_fingerprint",
    "dearmor",
    "packets",
    "fingerprints",
    "keyring_bytes",
    "armor",
    "check_key",
]

ARMOR_BEGIN = "-----BEGIN PGP PUBLIC KEY BLOCK-----"
_ARMOR_END = "-----END PGP PUBLIC KEY BLOCK-----"
_FPR_RE = re.compile(r"^(?:[0-9A-F]{40}|[0-9A-F]{64})$")
_TAG_SECRET_KEY = 5
_TAG_PUBLIC_KEY = 6
_TAG_SECRET_SUBKEY = 7


class AptKeyError(ValueError):
    """The key cannot be used: not a public key, unreadable, or not the pinned one."""


def normalise_fingerprint(text):
    """``'eb69 3b30 ... 3bf8 63cc'`` -> ``'EB693B30...3BF863CC'``; anything but 40 or 64 hex digits raises."""
    value = re.sub(r"\s+", "", str(text or "")).upper()
    if value.startswith("0X"):
        value = value[2:]
    if not _FPR_RE.match(value):
        raise AptKeyError(
            "%r is not a full OpenPGP fingerprint (40 hexadecimal digits for a v4 key, 64 for v6; "
            "a short key id such as 3bf863cc is not enough)" % (text,))
    return value


def _crc24(data):
    crc = 0xB704CE
    for byte in data:
        crc ^= byte << 16
        for _dummy in range(8):
            crc <<= 1
            if crc & 0x1000000:
                crc ^= 0x1864CFB
    return crc & 0xFFFFFF


def dearmor(data):
    """ASCII-armored key block -> the binary packets; binary input is returned as it is.

    The armor checksum (``=XXXX``), when present, must match.
    """
    if isinstance(data, str):
        data = data.encode("utf-8")
    text = data.lstrip()
    if not text.startswith(b"-----BEGIN PGP"):
        if not text:
            raise AptKeyError("the key is empty")
        return data
    lines = text.decode("ascii", errors="replace").splitlines()
    if lines[0].strip() != ARMOR_BEGIN:
        raise AptKeyError("the armored block is %r, not a public key block (%s)" % (lines[0].strip(), ARMOR_BEGIN))
    body, crc, index = [], None, 1
    # armor headers ("Version: ...", "Comment: ...") end at the first empty line
    while index < len(lines) and ":" in lines[index] and lines[index].strip():
        index += 1
    for line in lines[index:]:
        line = line.strip()
        if line == _ARMOR_END:
            break
        if not line:
            continue
        if line.startswith("=") and len(line) == 5:
            crc = line[1:]
            continue
        body.append(line)
    else:
        raise AptKeyError("the armored key has no %s line" % _ARMOR_END)
    try:
        raw = base64.b64decode("".join(body), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise AptKeyError("the armored key is not valid base64: %s" % exc)
    if crc is not None:
        try:
            want = int.from_bytes(base64.b64decode(crc), "big")
        except (binascii.Error, ValueError):
            raise AptKeyError("the armored key's checksum line =%s is not base64" % crc)
        if want != _crc24(raw):
            raise AptKeyError("the armored key's checksum does not match its content (damaged download?)")
    return raw


def packets(raw):
    """Yield ``(tag, body)`` for each OpenPGP packet of binary key data (old and new packet formats)."""
    pos, size = 0, len(raw)
    while pos < size:
        ctb = raw[pos]
        pos += 1
        if not ctb & 0x80:
            raise AptKeyError("not OpenPGP key data (byte %d is 0x%02x, not a packet header)" % (pos - 1, ctb))
        if ctb & 0x40:  # new format
            tag = ctb & 0x3F
            if pos >= size:
                raise AptKeyError("truncated OpenPGP packet header")
            first = raw[pos]
            if first < 192:
                length, pos = first, pos + 1
            elif first < 224:
                if pos + 1 >= size:
                    raise AptKeyError("truncated OpenPGP packet header")
                length, pos = ((first - 192) << 8) + raw[pos + 1] + 192, pos + 2
            elif first == 255:
                length, pos = int.from_bytes(raw[pos + 1:pos + 5], "big"), pos + 5
            else:
                raise AptKeyError("partial-length OpenPGP packets do not belong in a key")
        else:  # old format
            tag, length_type = (ctb >> 2) & 0x0F, ctb & 0x03
            if length_type == 3:
                length = size - pos
            else:
                width = (1, 2, 4)[length_type]
                length, pos = int.from_bytes(raw[pos:pos + width], "big"), pos + width
        if pos + length > size:
            raise AptKeyError("truncated OpenPGP packet (tag %d)" % tag)
        yield tag, raw[pos:pos + length]
        pos += length


def _fingerprint(body):
    version = body[0] if body else 0
    if version == 4:
        return hashlib.sha1(b"\x99" + len(body).to_bytes(2, "big") + body).hexdigest().upper()
    if version == 5:
        return hashlib.sha256(b"\x9a" + len(body).to_bytes(4, "big") + body).hexdigest().upper()
    if version == 6:
        return hashlib.sha256(b"\x9b" + len(body).to_bytes(4, "big") + body).hexdigest().upper()
    raise AptKeyError("version %d OpenPGP keys are not supported (v4, v5 and v6 are)" % version)


def fingerprints(data):
    """The fingerprints of the primary keys in ``data`` (armored or binary), in file order.

    Subkeys are not listed: apt's ``Signed-By`` trusts a primary key with its subkeys, and the
    fingerprint a vendor publishes is the primary key's. Secret key material is refused.
    """
    found = []
    for tag, body in packets(dearmor(data)):
        if tag in (_TAG_SECRET_KEY, _TAG_SECRET_SUBKEY):
            raise AptKeyError("the file holds SECRET key material; a repository key must be a public key")
        if tag == _TAG_PUBLIC_KEY:
            found.append(_fingerprint(body))
    if not found:
        raise AptKeyError("the file holds no OpenPGP public key")
    return found


def armor(raw):
    """Binary key packets -> an ASCII-armored public key block (what apt reads from a ``<file>.asc``)."""
    text = base64.b64encode(raw).decode("ascii")
    lines = [text[i:i + 64] for i in range(0, len(text), 64)]
    crc = base64.b64encode(_crc24(raw).to_bytes(3, "big")).decode("ascii")
    return ("\n".join([ARMOR_BEGIN, ""] + lines + ["=" + crc, _ARMOR_END]) + "\n").encode("ascii")


def keyring_bytes(data, armored=False):
    """What apt reads for ``Signed-By: <file>``: the binary packets for a ``.gpg`` file, or with
    ``armored=True`` (a ``.asc`` file) an armored block - the input as it is when it already was one."""
    raw = dearmor(data)
    if not armored:
        return raw
    if isinstance(data, str):
        data = data.encode("utf-8")
    return data if data.lstrip().startswith(b"-----BEGIN PGP") else armor(raw)


def check_key(data, want, armored=False):
    """Return ``(keyring, fingerprints)`` when ``data`` holds exactly the key ``want``; raise otherwise.

    A file with the pinned key AND another primary key is refused too: apt would trust every key in
    a ``Signed-By`` file for the repository.
    """
    want = normalise_fingerprint(want)
    found = fingerprints(data)
    if want not in found:
        raise AptKeyError("the key has fingerprint %s, not the pinned %s" % (", ".join(found), want))
    others = [f for f in found if f != want]
    if others:
        raise AptKeyError("besides the pinned key %s the file holds other keys (%s), which apt would trust too"
                          % (want, ", ".join(others)))
    return keyring_bytes(data, armored), found
