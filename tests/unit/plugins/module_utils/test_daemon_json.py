"""daemon.json decisions: merged never overwritten, refusals name the variable and change nothing."""

from __future__ import annotations

import json

import pytest

from ansible_collections.dlbox.stack.plugins.module_utils._daemon_json import (
    DaemonJsonError,
    data_root_change,
    default_runtime_problem,
    hosts_conflict,
    log_rotation,
    merge,
    parse_config,
    plan,
    render,
)

USER = {"log-level": "warn", "labels": ["team=vision"], "runtimes": {"crun": {"path": "/usr/bin/crun"}},
        "registry-mirrors": ["https://mirror.lab.example"]}


@pytest.mark.parametrize(("text", "expected"), [("", {}), ("  \n", {}), (None, {}), ('{"debug": true}', {"debug": True})])
def test_parse_config(text, expected):
    assert parse_config(text) == expected


@pytest.mark.parametrize("text", ['{"debug": true,}', "{", "debug: true", '{"a": 1} x'])
def test_invalid_json_is_refused_with_the_path(text):
    with pytest.raises(DaemonJsonError, match=r"/etc/docker/daemon.json is not valid JSON.*left exactly as it is"):
        parse_config(text)


@pytest.mark.parametrize("text", ["[]", '"x"', "3"])
def test_non_object_is_refused(text):
    with pytest.raises(DaemonJsonError, match="must hold a JSON object"):
        parse_config(text)


def test_merge_keeps_every_other_key_and_merges_mappings():
    got = merge(USER, {"runtimes": {"nvidia": {"path": "nvidia-container-runtime"}}, "live-restore": True})
    assert got["runtimes"] == {"crun": {"path": "/usr/bin/crun"}, "nvidia": {"path": "nvidia-container-runtime"}}
    assert got["log-level"] == "warn" and got["labels"] == ["team=vision"] and got["live-restore"] is True
    assert USER["runtimes"] == {"crun": {"path": "/usr/bin/crun"}}  # the input is not modified


def test_merge_replaces_lists_and_scalars_and_skips_none():
    got = merge({"labels": ["a"], "debug": False, "x": 1}, {"labels": ["b"], "debug": True, "x": None})
    assert got == {"labels": ["b"], "debug": True, "x": 1}


@pytest.mark.parametrize(
    ("config", "size", "files", "expected"),
    [
        ({}, "100m", 3, {"log-opts": {"max-size": "100m", "max-file": "3"}}),
        ({"log-driver": "local"}, "10m", 0, {"log-opts": {"max-size": "10m"}}),
        ({"log-driver": "journald"}, "100m", 3, {}),  # journald rejects max-size
        ({"log-driver": "syslog"}, "100m", 3, {}),
        ({}, "", 0, {}),
    ],
)
def test_log_rotation_only_for_rotating_drivers(config, size, files, expected):
    assert log_rotation(config, size, files) == expected


@pytest.mark.parametrize(
    ("config", "execstart", "expected"),
    [
        ({"hosts": ["unix:///run/docker.sock"]}, "/usr/sbin/dockerd -H fd:// $DOCKER_OPTS", True),
        ({"hosts": ["unix:///run/docker.sock"]}, "/usr/bin/dockerd --host=fd:// --containerd=/run/containerd.sock", True),
        ({"hosts": ["unix:///run/docker.sock"]}, None, True),  # the packaged unit passes -H fd://
        ({"hosts": ["unix:///run/docker.sock"]}, "/usr/bin/dockerd", False),
        ({"hosts": ["unix:///run/docker.sock"]}, "/usr/bin/dockerd --hostname-ish", False),
        ({}, "/usr/sbin/dockerd -H fd://", False),
    ],
)
def test_hosts_conflict(config, execstart, expected):
    assert hosts_conflict(config, execstart) is expected


@pytest.mark.parametrize(
    ("config", "bad"),
    [
        ({}, False),
        ({"default-runtime": "runc"}, False),
        ({"default-runtime": "nvidia", "runtimes": {"nvidia": {"path": "nvidia-container-runtime"}}}, False),
        ({"default-runtime": "nvidia"}, True),
        ({"default-runtime": "nvidai", "runtimes": {"nvidia": {}}}, True),
    ],
)
def test_default_runtime_must_be_defined(config, bad):
    assert (default_runtime_problem(config) is not None) is bad


def test_default_runtime_message_lists_known_runtimes():
    msg = default_runtime_problem({"default-runtime": "nvidai", "runtimes": {"nvidia": {}}})
    assert "nvidai" in msg and "nvidia, runc" in msg


@pytest.mark.parametrize(
    ("current", "merged", "expected"),
    [
        ({}, {}, None),
        ({}, {"data-root": "/var/lib/docker/"}, None),
        ({}, {"data-root": "/data/docker"}, ("/var/lib/docker", "/data/docker")),
        ({"data-root": "/data/docker"}, {"data-root": "/data/docker"}, None),
    ],
)
def test_data_root_change(current, merged, expected):
    assert data_root_change(current, merged) == expected


def test_render_keeps_key_order_and_ends_with_newline():
    text = render({"z": 1, "a": {"b": 2}})
    assert text.endswith("}\n") and text.index('"z"') < text.index('"a"')
    assert json.loads(text) == {"z": 1, "a": {"b": 2}}


NAMES = {"data-root": "docker_data_root", "default-runtime": "docker_default_runtime", "*": "docker_daemon_settings"}


def test_plan_merges_and_reports_change():
    got = plan(json.dumps(USER), {"live-restore": True}, "100m", 3, names=NAMES)
    assert got["changed"] and got["config"]["log-level"] == "warn" and got["config"]["live-restore"] is True
    assert got["config"]["log-opts"] == {"max-size": "100m", "max-file": "3"}
    assert got["data_root"] is None


def test_plan_same_content_other_formatting_is_no_change():
    text = '{\n    "live-restore": true,\n    "log-level": "warn"\n}'
    assert plan(text, {"live-restore": True})["changed"] is False


def test_plan_refuses_hosts_with_fd_naming_the_variable():
    with pytest.raises(DaemonJsonError, match=r"^docker_daemon_settings: 'hosts'.*-H fd://.*Nothing was changed"):
        plan("{}", {"hosts": ["tcp://127.0.0.1:2375"]}, execstart="/usr/sbin/dockerd -H fd://", names=NAMES)


def test_plan_refuses_unknown_default_runtime_naming_the_variable():
    with pytest.raises(DaemonJsonError, match=r"^docker_default_runtime: default-runtime 'nvidai'"):
        plan("{}", {"default-runtime": "nvidai"}, names=NAMES)


def test_plan_refuses_data_root_move_with_data_unless_asked():
    with pytest.raises(DaemonJsonError, match=r"^docker_data_root: .*/var/lib/docker to /data/docker.*docker_data_root_move: true"):
        plan("{}", {"data-root": "/data/docker"}, old_root_holds_data=lambda root: True, names=NAMES)
    got = plan("{}", {"data-root": "/data/docker"}, old_root_holds_data=lambda root: True, data_root_move=True, names=NAMES)
    assert got["data_root"] == {"old": "/var/lib/docker", "new": "/data/docker", "old_holds_data": True, "move": True}


def test_plan_empty_old_root_moves_without_asking():
    got = plan("{}", {"data-root": "/data/docker"}, old_root_holds_data=lambda root: False, names=NAMES)
    assert got["data_root"]["move"] is False and got["config"]["data-root"] == "/data/docker"


def test_plan_invalid_json_refused():
    with pytest.raises(DaemonJsonError, match="not valid JSON"):
        plan('{"log-level": "warn",', {"live-restore": True}, names=NAMES)
