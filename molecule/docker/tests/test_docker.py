"""dlbox.stack.docker with Debian's real docker.io in the test container (Docker in Docker)."""

import json

import pytest

USER_KEYS = {"log-level": "warn", "labels": ["dlbox-test=kept"], "max-concurrent-downloads": 4, "features": {"buildkit": True}}


def daemon_json(host):
    return json.loads(host.file("/etc/docker/daemon.json").content_string)


def test_docker_io_installed_and_running(host):
    assert host.package("docker.io").is_installed
    svc = host.service("docker")
    assert svc.is_running and svc.is_enabled


def test_docker_info_answers(host):
    out = host.run("docker info --format '{{.ServerVersion}} {{.LoggingDriver}} {{.LiveRestoreEnabled}}'")
    assert out.rc == 0, out.stderr
    version, driver, live = out.stdout.split()
    assert version.startswith("20.10") and driver == "json-file" and live == "true"


@pytest.mark.parametrize("key", sorted(USER_KEYS))
def test_user_keys_survive(host, key):
    assert daemon_json(host)[key] == USER_KEYS[key]


def test_role_settings_merged(host):
    cfg = daemon_json(host)
    assert cfg["live-restore"] is True
    assert cfg["log-opts"] == {"max-size": "100m", "max-file": "3"}
    assert cfg["default-address-pools"] == [{"base": "172.80.0.0/16", "size": 24}]


def test_running_daemon_uses_the_merged_file(host):
    # labels come from the user's keys, live restore from the role: the daemon loaded both
    out = host.run("docker info --format '{{json .Labels}} {{.LiveRestoreEnabled}}'")
    assert '"dlbox-test=kept"' in out.stdout and out.stdout.strip().endswith("true")


def test_only_listed_users_in_docker_group(host):
    assert "docker" in host.user("alice").groups
    assert "docker" not in host.user("bob").groups


def test_no_apt_key_and_no_docker_repository(host):
    assert not host.file("/etc/apt/sources.list.d/docker.sources").exists
    assert not host.file("/etc/apt/trusted.gpg").exists


def test_inner_container_runs(host):
    out = host.run("docker run --rm dlbox-tiny:latest /busybox echo dlbox-inner-ok")
    assert out.rc == 0 and out.stdout.strip() == "dlbox-inner-ok", out.stderr


def refusals(host):
    return {r["name"]: r for r in json.loads(host.file("/root/dlbox-refusals.json").content_string)}


CASES = ["unknown_runtime_name", "invalid_json", "unknown_container_engine", "user_does_not_exist",
         "hosts_next_to_fd", "data_root_over_data", "key_the_engine_rejects"]


@pytest.mark.parametrize("case", CASES)
def test_refused_naming_what_is_wrong(host, case):
    result = refusals(host)[case]
    assert result["msg"] != "NOT REFUSED"
    assert result["expect"] in result["msg"], result["msg"]


@pytest.mark.parametrize("case", CASES)
def test_refusal_left_daemon_json_byte_for_byte(host, case):
    assert refusals(host)[case]["unchanged"] is True


@pytest.mark.parametrize("case", CASES)
def test_docker_still_answers_after_refusal(host, case):
    assert refusals(host)[case]["docker_answers"] is True


def test_rejected_key_rolled_back_and_daemon_up(host):
    assert "no-such-key" not in daemon_json(host)
    assert host.service("docker").is_running


# --- check mode (prepare.yml: fresh host; side_effect.yml: converged host, changed request) ---------
def check_run(host, name):
    return json.loads(host.file(f"/root/dlbox-check-{name}.json").content_string)


@pytest.mark.parametrize("name", ["fresh", "changed_request"])
def test_check_mode_run_succeeds_and_changes_nothing(host, name):
    run = check_run(host, name)
    assert run["rc"] == 0, "\n".join(run["tail"])
    assert run["unchanged"] is True  # daemon.json, sources, keyrings, packages, units, service starts


def test_check_mode_on_a_fresh_host_reports_install_and_merge(host):
    changed = check_run(host, "fresh")["changed"]
    assert "Install the distribution's Docker" in changed and "Merge the settings into daemon.json" in changed, changed


def test_check_mode_reports_a_config_change_and_nothing_else(host):
    changed = set(check_run(host, "changed_request")["changed"])
    assert "Merge the settings into daemon.json" in changed, changed
    assert changed <= {"Merge the settings into daemon.json", "Restart Docker with the new daemon.json"}, changed
