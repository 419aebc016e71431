"""Docker CE and the NVIDIA Container Toolkit from the FIXTURE repositories, after a nvidia-docker2 migration.

The packages are stand-ins (tests/aptrepo); docker-ce is Debian's real docker.io repacked, so a real
engine runs inside the test container; nvidia-ctk is the fixture's 1.18 stand-in.
"""

import json

import pytest

TOOLKIT = ["nvidia-container-toolkit", "nvidia-container-toolkit-base", "libnvidia-container-tools", "libnvidia-container1"]
USER_KEYS = {"log-level": "warn", "labels": ["dlbox-test=kept"], "max-concurrent-uploads": 3}
REPOS = "/srv/fixture-repos"


def daemon_json(host):
    return json.loads(host.file("/etc/docker/daemon.json").content_string)


def fingerprint(host, keyring):
    out = host.check_output(f"gpg --show-keys --with-colons {keyring} | awk -F: '/^fpr:/{{print $10; exit}}'")
    return out.strip()


# --- sources, keyrings, pinned versions ---------------------------------------------------------
@pytest.mark.parametrize(
    ("sources", "uri", "keyring", "fixture_fpr"),
    [
        ("docker.sources", "http://127.0.0.1:8089/docker-ce", "/etc/apt/keyrings/docker.asc",
         "docker-ce/docker-keyring.fingerprint"),
        ("nvidia-container-toolkit.sources", "http://127.0.0.1:8089/container-toolkit/stable/deb/$(ARCH)",
         "/etc/apt/keyrings/nvidia-container-toolkit.asc", "container-toolkit/nvidia-container-toolkit-keyring.fingerprint"),
    ],
)
def test_deb822_source_with_pinned_keyring(host, sources, uri, keyring, fixture_fpr):
    text = host.file(f"/etc/apt/sources.list.d/{sources}").content_string
    assert f"URIs: {uri}" in text and f"Signed-By: {keyring}" in text
    assert fingerprint(host, keyring) == host.file(f"{REPOS}/{fixture_fpr}").content_string.strip()


def test_docker_ce_installed_at_the_requested_version(host):
    assert host.package("docker-ce").version == "5:20.10.24-1~debian.12~bookworm"
    assert not host.package("docker.io").is_installed
    for name in ("docker-ce-cli", "containerd.io", "docker-buildx-plugin", "docker-compose-plugin"):
        assert host.package(name).is_installed, name


@pytest.mark.parametrize("package", TOOLKIT)
def test_toolkit_installed_at_the_planned_version(host, package):
    # plan.yml -> stack.container_toolkit.version (data/compat.yml) = what the role installed
    assert host.package(package).version == "1.18.2-1"


def test_toolkit_version_pinned(host):
    pin = host.file("/etc/apt/preferences.d/nvidia-container-toolkit").content_string
    assert "Pin: version 1.18.2-*" in pin and "Pin-Priority: 1001" in pin
    assert "Package: " + " ".join(TOOLKIT) in pin
    assert "1.18.2-1" in host.check_output("apt-cache policy nvidia-container-toolkit | sed -n 3p")


def test_nvidia_ctk_is_1_18(host):
    assert "version 1.18.2" in host.check_output("nvidia-ctk --version")


# --- the nvidia runtime -------------------------------------------------------------------------
def test_nvidia_runtime_registered_in_docker_info(host):
    runtimes = json.loads(host.check_output("docker info --format '{{json .Runtimes}}'"))
    assert "nvidia" in runtimes and "runc" in runtimes


def test_runtime_entry_written_by_nvidia_ctk(host):
    cfg = daemon_json(host)
    assert cfg["runtimes"]["nvidia"]["path"] == "nvidia-container-runtime"
    assert "default-runtime" not in cfg  # nvidia_container_toolkit_set_as_default: false


def test_container_with_runtime_nvidia_reaches_the_runtime_stub(host):
    log = "/run/nvidia-container-runtime.fixture.log"
    before = host.run(f"wc -l < {log}").stdout.strip() or "0"
    out = host.run("docker run --rm --runtime=nvidia dlbox/glibc-probe:local /lib64/ld-linux-x86-64.so.2 --version")
    assert out.rc == 0, out.stderr
    assert "GNU C Library" in out.stdout or "ld.so" in out.stdout
    lines = host.file(log).content_string.splitlines()
    assert len(lines) > int(before)
    assert any("FIXTURE nvidia-container-runtime 1.18.2" in line and " create " in line for line in lines[int(before):])


def test_features_cdi_gated_on_docker_25(host):
    # the engine here is 20.10: features.cdi stays unset (docker_cdi_min is 25.0 in the plan)
    assert "cdi" not in daemon_json(host).get("features", {})


def test_containerd_drop_in(host):
    dropin = host.file("/etc/containerd/conf.d/99-nvidia.toml")
    assert dropin.exists and "runtimes.nvidia" in dropin.content_string
    assert 'imports = ["/etc/containerd/conf.d/*.toml"]' in host.file("/etc/containerd/config.toml").content_string
    assert host.service("containerd").is_running


@pytest.mark.parametrize("unit", ["nvidia-cdi-refresh.path", "nvidia-cdi-refresh.service"])
def test_cdi_refresh_units_enabled(host, unit):
    assert host.service(unit).is_enabled


def test_cdi_refresh_path_unit_watching(host):
    assert host.run("systemctl is-active nvidia-cdi-refresh.path").stdout.strip() == "active"


def test_dev_char_udev_rule(host):
    rule = host.file("/etc/udev/rules.d/71-nvidia-dev-char.rules").content_string
    assert 'RUN+="/usr/bin/nvidia-ctk system create-dev-char-symlinks --create-all"' in rule


# --- migration from nvidia-docker2 --------------------------------------------------------------
def test_nvidia_docker2_removed_not_purged(host):
    status = host.run("dpkg-query -W -f '${db:Status-Abbrev}' nvidia-docker2").stdout.strip()
    assert status == "rc"  # removed, its conffiles (daemon.json) kept


@pytest.mark.parametrize("key", sorted(USER_KEYS))
def test_user_keys_survive_the_migration(host, key):
    assert daemon_json(host)[key] == USER_KEYS[key]


def test_daemon_json_backed_up_before_removal(host):
    backup = json.loads(host.file("/etc/docker/daemon.json.before-nvidia-docker2-removal").content_string)
    assert backup["log-level"] == "warn"


def test_legacy_source_gone(host):
    assert not host.file("/etc/apt/sources.list.d/nvidia-docker.list").exists


def test_legacy_apt_key_entry_gone(host):
    fpr = host.file(f"{REPOS}/container-toolkit/nvidia-container-toolkit-keyring.fingerprint").content_string.strip()
    keys = host.run("gpg --batch --no-default-keyring --keyring /etc/apt/trusted.gpg --with-colons --fingerprint")
    assert fpr not in keys.stdout


def test_docker_role_settings_merged_too(host):
    cfg = daemon_json(host)
    assert cfg["live-restore"] is True and cfg["log-opts"] == {"max-size": "100m", "max-file": "3"}


# --- refusals (side_effect.yml) -----------------------------------------------------------------
def refusals(host):
    return {r["name"]: r for r in json.loads(host.file("/root/dlbox-refusals.json").content_string)}


@pytest.mark.parametrize("case", ["unknown_container_engine", "toolkit_too_old"])
def test_refused_naming_the_variable_and_nothing_changed(host, case):
    result = refusals(host)[case]
    assert result["msg"] != "NOT REFUSED"
    assert result["expect"] in result["msg"], result["msg"]
    assert result["unchanged"] is True


# --- check mode (prepare.yml: the old guide's host; side_effect.yml: converged, changed request) ------
def check_run(host, name):
    return json.loads(host.file(f"/root/dlbox-check-{name}.json").content_string)


@pytest.mark.parametrize("name", ["fresh", "changed_request"])
def test_check_mode_run_succeeds_and_changes_nothing(host, name):
    run = check_run(host, name)
    assert run["rc"] == 0, "\n".join(run["tail"])
    assert run["unchanged"] is True  # daemon.json, sources, keyrings, packages, units, service starts


def test_check_mode_on_the_old_host_reports_migration_and_install(host):
    changed = check_run(host, "fresh")["changed"]
    for task in ("Remove nvidia-docker2 (not purge)", "Delete the legacy apt sources",
                 "Delete NVIDIA's key from the legacy keyring (without apt-key)", "Pin the toolkit packages to the planned version",
                 "Merge the settings into daemon.json"):
        assert task in changed, changed


def test_check_mode_reports_a_runtime_change_and_nothing_else(host):
    changed = set(check_run(host, "changed_request")["changed"])
    wanted = {"Register the nvidia runtime with Docker", "Write the containerd drop-in for the nvidia runtime"}
    assert wanted <= changed, changed
    assert changed <= wanted | {"Restart docker for the NVIDIA runtime", "Restart containerd for the NVIDIA runtime"}, changed
