"""The docker_daemon_json module on real files: merge, validation with a stand-in dockerd, refusals."""

from __future__ import annotations

import json
import os

import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.dlbox.stack.plugins.modules import docker_daemon_json


def run(capsys, args, check_mode=False):
    if check_mode:
        args = dict(args, _ansible_check_mode=True)
    with patch_module_args(args):
        with pytest.raises(SystemExit) as exc:
            docker_daemon_json.main()
    result = json.loads(capsys.readouterr().out)
    return exc.value.code, result


def fake_dockerd(tmp_path, validate, accept=True):
    """A dockerd stand-in: --help lists --validate or not; --validate accepts or rejects."""
    path = tmp_path / "dockerd"
    help_text = "  --validate   Validate daemon configuration and exit" if validate else "  --debug"
    path.write_text("#!/bin/sh\ncase \"$1\" in\n"
                    f"  --help) echo '{help_text}' ;;\n"
                    "  --version) echo 'Docker version 20.10.24+dfsg1, build 297e128' ;;\n"
                    f"  --validate) {'echo configuration OK' if accept else 'echo unknown key: nvidai >&2; exit 1'} ;;\n"
                    "esac\n")
    path.chmod(0o755)
    return str(path)


def test_merge_writes_keeps_keys_and_backs_up(tmp_path, capsys):
    cfg = tmp_path / "daemon.json"
    cfg.write_text('{"log-level": "warn", "runtimes": {"crun": {"path": "/usr/bin/crun"}}}')
    rc, result = run(capsys, {"path": str(cfg), "settings": {"live-restore": True}, "log_max_size": "100m",
                              "dockerd_path": fake_dockerd(tmp_path, validate=False)})
    assert rc == 0 and result["changed"] and not result["validated"]
    assert "has no --validate" in result["validation"]
    data = json.loads(cfg.read_text())
    assert data == {"log-level": "warn", "runtimes": {"crun": {"path": "/usr/bin/crun"}}, "live-restore": True,
                    "log-opts": {"max-size": "100m"}}
    assert json.loads(open(result["backup_file"]).read()) == {"log-level": "warn", "runtimes": {"crun": {"path": "/usr/bin/crun"}}}
    rc, again = run(capsys, {"path": str(cfg), "settings": {"live-restore": True}, "log_max_size": "100m"})
    assert rc == 0 and again["changed"] is False


def test_validated_when_dockerd_has_validate(tmp_path, capsys):
    cfg = tmp_path / "daemon.json"
    rc, result = run(capsys, {"path": str(cfg), "settings": {"live-restore": True},
                              "dockerd_path": fake_dockerd(tmp_path, validate=True)})
    assert rc == 0 and result["validated"] and result["created"]
    assert json.loads(cfg.read_text()) == {"live-restore": True}
    assert oct(os.stat(cfg).st_mode & 0o777) == "0o644"


def test_rejected_by_validate_leaves_file_untouched(tmp_path, capsys):
    cfg = tmp_path / "daemon.json"
    cfg.write_bytes(b'{"log-level":"warn"}')
    rc, result = run(capsys, {"path": str(cfg), "settings": {"nvidai": True}, "names": {"*": "docker_daemon_settings"},
                              "dockerd_path": fake_dockerd(tmp_path, validate=True, accept=False)})
    assert rc == 1 and "unknown key: nvidai" in result["msg"] and "docker_daemon_settings" in result["msg"]
    assert cfg.read_bytes() == b'{"log-level":"warn"}'
    assert sorted(os.listdir(tmp_path)) == ["daemon.json", "dockerd"]  # no candidate left behind


def test_invalid_json_refused_byte_for_byte(tmp_path, capsys):
    cfg = tmp_path / "daemon.json"
    cfg.write_bytes(b'{"log-level": "warn",\n')
    rc, result = run(capsys, {"path": str(cfg), "settings": {"live-restore": True}})
    assert rc == 1 and "is not valid JSON" in result["msg"]
    assert cfg.read_bytes() == b'{"log-level": "warn",\n'


def test_check_mode_writes_nothing(tmp_path, capsys):
    cfg = tmp_path / "daemon.json"
    cfg.write_text("{}")
    rc, result = run(capsys, {"path": str(cfg), "settings": {"live-restore": True}}, check_mode=True)
    assert rc == 0 and result["changed"] and cfg.read_text() == "{}"


def test_data_root_with_data_refused_then_allowed(tmp_path, capsys):
    old = tmp_path / "old"
    (old / "volumes" / "mine").mkdir(parents=True)
    cfg = tmp_path / "daemon.json"
    cfg.write_text(json.dumps({"data-root": str(old)}))
    args = {"path": str(cfg), "settings": {"data-root": str(tmp_path / "new")}, "names": {"data-root": "docker_data_root"},
            "validate": "never"}
    rc, result = run(capsys, args)
    assert rc == 1 and result["msg"].startswith("docker_data_root:")
    rc, result = run(capsys, dict(args, data_root_move=True))
    assert rc == 0 and result["data_root"]["move"] is True
