"""The apt_keyring module on real files: written only for the pinned key, idempotent, check mode, refusals."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.dlbox.stack.plugins.module_utils._apt_keyring import dearmor
from ansible_collections.dlbox.stack.plugins.modules import apt_keyring

KEYS = Path(__file__).resolve().parents[2] / "data" / "openpgp"
KEY_A, FPR_A = (KEYS / "key-a.asc").read_text(), "15B8409770AB99BF042C60A03B029FEC7061F288"
KEY_B, FPR_B = (KEYS / "key-b.asc").read_text(), "1EE193A03146CF046872B36162CE2864BA7A19CE"


def run(capsys, args, check_mode=False):
    if check_mode:
        args = dict(args, _ansible_check_mode=True)
    with patch_module_args(args):
        with pytest.raises(SystemExit) as exc:
            apt_keyring.main()
    return exc.value.code, json.loads(capsys.readouterr().out)


def test_writes_binary_keyring_then_nothing_changes(tmp_path, capsys):
    dest = tmp_path / "keyrings" / "cuda.gpg"
    rc, result = run(capsys, {"dest": str(dest), "content": KEY_A, "fingerprint": FPR_A})
    assert rc == 0 and result["changed"] and result["created"] and result["fingerprints"] == [FPR_A]
    assert dest.read_bytes() == dearmor(KEY_A)
    assert oct(os.stat(dest).st_mode & 0o777) == "0o644"
    rc, again = run(capsys, {"dest": str(dest), "content": KEY_A, "fingerprint": FPR_A})
    assert rc == 0 and not again["changed"]


def test_file_url_and_binary_source(tmp_path, capsys):
    src = tmp_path / "key.gpg"
    src.write_bytes(dearmor(KEY_B))
    dest = tmp_path / "k.gpg"
    rc, result = run(capsys, {"dest": str(dest), "url": "file://%s" % src, "fingerprint": FPR_B})
    assert rc == 0 and result["changed"] and dest.read_bytes() == dearmor(KEY_B)


def test_check_mode_reports_and_writes_nothing(tmp_path, capsys):
    dest = tmp_path / "k.gpg"
    rc, result = run(capsys, {"dest": str(dest), "content": KEY_A, "fingerprint": FPR_A}, check_mode=True)
    assert rc == 0 and result["changed"] and not dest.exists()


def test_wrong_key_refused_and_the_old_keyring_kept(tmp_path, capsys):
    dest = tmp_path / "k.gpg"
    dest.write_bytes(dearmor(KEY_A))
    names = {"fingerprint": "cuda_repo_key_fingerprint", "content": "cuda_repo_key_src"}
    rc, result = run(capsys, {"dest": str(dest), "content": KEY_B, "fingerprint": FPR_A, "names": names})
    assert rc == 1 and result["failed"]
    assert FPR_B in result["msg"] and "cuda_repo_key_fingerprint" in result["msg"] and "cuda_repo_key_src" in result["msg"]
    assert dest.read_bytes() == dearmor(KEY_A)


def test_bad_fingerprint_named(tmp_path, capsys):
    rc, result = run(capsys, {"dest": str(tmp_path / "k.gpg"), "content": KEY_A, "fingerprint": "3bf863cc",
                              "names": {"fingerprint": "cuda_repo_key_fingerprint"}})
    assert rc == 1 and result["msg"].startswith("cuda_repo_key_fingerprint:")


def test_unreadable_url_named(tmp_path, capsys):
    rc, result = run(capsys, {"dest": str(tmp_path / "k.gpg"), "url": "file://%s/missing" % tmp_path, "fingerprint": FPR_A,
                              "names": {"url": "cuda_repo_key_url"}})
    assert rc == 1 and "cuda_repo_key_url" in result["msg"] and not (tmp_path / "k.gpg").exists()


def test_mode_fixed_without_rewriting(tmp_path, capsys):
    dest = tmp_path / "k.gpg"
    dest.write_bytes(dearmor(KEY_A))
    dest.chmod(0o600)
    rc, result = run(capsys, {"dest": str(dest), "content": KEY_A, "fingerprint": FPR_A})
    assert rc == 0 and result["changed"] and oct(os.stat(dest).st_mode & 0o777) == "0o644"


def test_asc_destination_written_armored(tmp_path, capsys):
    dest = tmp_path / "docker.asc"
    rc, result = run(capsys, {"dest": str(dest), "content": KEY_A, "fingerprint": FPR_A})
    assert rc == 0 and result["changed"] and dest.read_text() == KEY_A
    src = tmp_path / "key.gpg"
    src.write_bytes(dearmor(KEY_A))
    rc, again = run(capsys, {"dest": str(dest), "url": "file://%s" % src, "fingerprint": FPR_A})
    # armored from the binary key, byte for byte as gpg --export --armor wrote it: nothing to change
    assert rc == 0 and not again["changed"] and dest.read_text() == KEY_A
