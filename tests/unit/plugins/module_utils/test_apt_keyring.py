"""Fingerprints computed from the key packets, dearmoring, and the refusals of _apt_keyring."""

from __future__ import annotations

import base64
import hashlib
import shutil
import subprocess
from pathlib import Path

import pytest

from ansible_collections.dlbox.stack.plugins.module_utils._apt_keyring import (
    AptKeyError, armor, check_key, dearmor, fingerprints, keyring_bytes, normalise_fingerprint, packets,
)

# Two throw-away ed25519 public keys (dlbox.stack test fixtures, not vendor keys), as gpg exported them.
KEYS = Path(__file__).resolve().parents[2] / "data" / "openpgp"
KEY_A = (KEYS / "key-a.asc").read_text()
FPR_A = "15B8409770AB99BF042C60A03B029FEC7061F288"
KEY_B = (KEYS / "key-b.asc").read_text()
FPR_B = "1EE193A03146CF046872B36162CE2864BA7A19CE"


@pytest.mark.parametrize("text, want", [
    (FPR_A, FPR_A),
    (FPR_A.lower(), FPR_A),
    ("15B8 4097 70AB 99BF 042C  60A0 3B02 9FEC 7061 F288", FPR_A),
    ("0x" + FPR_A, FPR_A),
    ("a" * 64, "A" * 64),
])
def test_normalise_fingerprint(text, want):
    assert normalise_fingerprint(text) == want


@pytest.mark.parametrize("text", ["3bf863cc", "A4B469963BF863CC", "", None, FPR_A + "0", "Z" * 40, "not a fingerprint"])
def test_normalise_fingerprint_refuses(text):
    with pytest.raises(AptKeyError, match="not a full OpenPGP fingerprint"):
        normalise_fingerprint(text)


def test_fingerprint_of_armored_and_binary_key():
    assert fingerprints(KEY_A) == [FPR_A]
    assert fingerprints(KEY_A.encode()) == [FPR_A]
    assert fingerprints(dearmor(KEY_A)) == [FPR_A]
    assert fingerprints(KEY_B) == [FPR_B]


def test_fingerprint_is_sha1_over_the_v4_key_packet():
    tag, body = next(packets(dearmor(KEY_A)))
    assert tag == 6 and body[0] == 4
    assert hashlib.sha1(b"\x99" + len(body).to_bytes(2, "big") + body).hexdigest().upper() == FPR_A


def test_old_format_packet_header_reads_the_same():
    raw = dearmor(KEY_A)
    tag, body = next(packets(raw))
    old = bytes([0x80 | (6 << 2) | 1]) + len(body).to_bytes(2, "big") + body
    assert fingerprints(old) == [FPR_A]


def test_v6_key_fingerprint_is_sha256():
    body = bytes([6]) + b"\x00" * 20
    packet = bytes([0xC0 | 6, len(body)]) + body
    assert fingerprints(packet) == [hashlib.sha256(b"\x9b" + len(body).to_bytes(4, "big") + body).hexdigest().upper()]


def test_v3_key_refused():
    body = bytes([3]) + b"\x00" * 20
    with pytest.raises(AptKeyError, match="version 3"):
        fingerprints(bytes([0xC0 | 6, len(body)]) + body)


def test_keyring_bytes_are_the_dearmored_packets():
    raw = keyring_bytes(KEY_A)
    assert raw[0] & 0x80 and b"-----BEGIN" not in raw
    assert keyring_bytes(raw) == raw


@pytest.mark.skipif(shutil.which("gpg") is None, reason="gpg is not installed")
def test_keyring_bytes_equal_gpg_dearmor_and_gpg_agrees_on_the_fingerprint():
    dearmored = subprocess.run(["gpg", "--dearmor"], input=KEY_A.encode(), capture_output=True, check=True).stdout
    assert keyring_bytes(KEY_A) == dearmored
    shown = subprocess.run(["gpg", "--show-keys", "--with-colons"], input=dearmored, capture_output=True, check=True).stdout
    assert FPR_A in shown.decode()


def test_check_key_accepts_exactly_the_pinned_key():
    keyring, found = check_key(KEY_A, FPR_A.lower())
    assert found == [FPR_A] and keyring == dearmor(KEY_A)


def test_check_key_refuses_another_key():
    with pytest.raises(AptKeyError, match="fingerprint %s, not the pinned %s" % (FPR_B, FPR_A)):
        check_key(KEY_B, FPR_A)


def test_check_key_refuses_a_file_with_an_extra_key():
    both = dearmor(KEY_A) + dearmor(KEY_B)
    assert fingerprints(both) == [FPR_A, FPR_B]
    with pytest.raises(AptKeyError, match="other keys .%s." % FPR_B):
        check_key(both, FPR_A)


def test_secret_key_material_refused():
    body = bytes([4]) + b"\x00" * 20
    with pytest.raises(AptKeyError, match="SECRET"):
        fingerprints(bytes([0xC0 | 5, len(body)]) + body)


@pytest.mark.parametrize("data, match", [
    (b"", "empty"),
    (b"hello, this is an HTML error page", "not OpenPGP key data"),
    (KEY_A.replace("=H6pi", "=AAAA"), "checksum does not match"),
    (KEY_A.replace("-----END PGP PUBLIC KEY BLOCK-----", ""), "no -----END"),
    (KEY_A.replace("PUBLIC KEY", "PRIVATE KEY", 1), "not a public key block"),
    (KEY_A.replace("0azn4WISzh", "0az!4WISzh"), "not valid base64"),
    (dearmor(KEY_A)[:40], "truncated"),
])
def test_bad_key_data_refused(data, match):
    with pytest.raises(AptKeyError, match=match):
        fingerprints(data)


def test_armor_headers_are_skipped():
    with_header = KEY_A.replace("-----\n\n", "-----\nComment: dlbox test\nVersion: x\n\n", 1)
    assert fingerprints(with_header) == [FPR_A]
    assert base64.b64encode(dearmor(with_header)) == base64.b64encode(dearmor(KEY_A))


def test_armor_round_trip_and_armored_input_kept_as_it_is():
    raw = dearmor(KEY_A)
    armored = armor(raw)
    assert armored.startswith(b"-----BEGIN PGP PUBLIC KEY BLOCK-----\n\n") and dearmor(armored) == raw
    assert fingerprints(armored) == [FPR_A]
    assert keyring_bytes(KEY_A, armored=True) == KEY_A.encode()
    assert keyring_bytes(raw, armored=True) == armored


@pytest.mark.skipif(shutil.which("gpg") is None, reason="gpg is not installed")
def test_gpg_reads_our_armor():
    shown = subprocess.run(["gpg", "--show-keys", "--with-colons"], input=armor(dearmor(KEY_B)), capture_output=True, check=True)
    assert FPR_B in shown.stdout.decode()
