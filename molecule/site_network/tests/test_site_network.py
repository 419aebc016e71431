"""The site's network variables on one container: a FIXTURE HTTPS mirror (127.0.0.1:8443, a test CA made per run)
is reached by apt, pip and the roles only after dlbox.stack.common trusted the CA from dlbox_site_ca_certificates."""

import json

import pytest

MIRROR = "https://127.0.0.1:8443"
CA = "/usr/local/share/ca-certificates/dlbox-site-network-test.crt"


@pytest.fixture(scope="module")
def without_ca(host):
    return json.loads(host.file("/root/site-network-without-ca.json").content_string)


# --- before the roles: each client fails on the unknown CA, and says so --------------------------------------
def test_apt_failed_without_the_ca_on_the_certificate(without_ca):
    assert "Certificate verification failed: The certificate is NOT trusted." in without_ca["apt"], without_ca["apt"]
    assert "127.0.0.1:8443" in without_ca["apt"]


def test_pip_failed_without_the_ca_on_the_certificate(without_ca):
    assert without_ca["pip"]["rc"] != 0
    assert "CERTIFICATE_VERIFY_FAILED" in without_ca["pip"]["output"], without_ca["pip"]["output"]


def test_the_role_failed_without_the_ca_naming_the_variable_and_the_cause(without_ca):
    role = without_ca["role"]
    assert role["failed"], role
    assert "nvidia_container_toolkit_repo_url" in role["msg"], role["msg"]
    assert "CERTIFICATE_VERIFY_FAILED" in role["msg"] or "certificate verify failed" in role["msg"], role["msg"]


# --- after: the CA is trusted where each client looks ---------------------------------------------------------
def test_the_ca_is_in_the_system_store(host):
    ca = host.file(CA)
    assert ca.exists and ca.mode == 0o644
    bundle = host.file("/etc/ssl/certs/ca-certificates.crt").content_string
    assert ca.content_string.strip().splitlines()[1] in bundle


def test_pip_conf_has_the_trust_store_and_the_site_index(host):
    conf = host.file("/etc/pip.conf").content_string
    assert "cert = /etc/ssl/certs/ca-certificates.crt" in conf
    assert "index-url = %s/simple/" % MIRROR in conf


def test_requests_uses_the_system_store_in_login_shells(host):
    assert "REQUESTS_CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt" in host.file("/etc/environment").content_string


def test_apt_source_points_at_the_site_mirror(host):
    source = host.file("/etc/apt/sources.list.d/nvidia-container-toolkit.sources").content_string
    assert "URIs: %s/container-toolkit/stable/deb/$(ARCH)" % MIRROR in source


def test_apt_reaches_the_https_mirror_and_downloads_a_package(host):
    update = host.run("apt-get update 2>&1")
    assert update.rc == 0 and "Certificate verification failed" not in update.stdout, update.stdout
    assert "%s/container-toolkit/stable/deb/amd64" % MIRROR in update.stdout
    policy = host.check_output("apt-cache policy libnvidia-container1")
    assert "%s/container-toolkit/stable/deb/amd64" % MIRROR in policy
    got = host.run("cd /tmp && apt-get download libnvidia-container1 2>&1 && ls libnvidia-container1_*.deb")
    assert got.rc == 0, got.stdout


def test_pip_reaches_the_https_index_through_pip_conf(host):
    # no --index-url: /etc/pip.conf (dlbox_site_mirrors.pypi) names the mirror
    got = host.run("rm -rf /tmp/wheels && python3 -m pip download --no-deps --retries 0 -d /tmp/wheels dlbox-fixture-tiny")
    assert got.rc == 0, got.stderr
    assert host.file("/tmp/wheels/dlbox_fixture_tiny-1.0-py3-none-any.whl").exists
    assert "127.0.0.1:8443" in got.stdout + got.stderr


def test_python_reaches_the_mirror_with_the_system_store(host):
    got = host.run("python3 -c \"import urllib.request; print(urllib.request.urlopen('%s/simple/').status)\"" % MIRROR)
    assert got.rc == 0 and got.stdout.strip() == "200", got.stderr


# --- Docker's proxy from dlbox_site_proxy -----------------------------------------------------------------------
def test_dockerd_proxy_drop_in(host):
    dropin = host.file("/etc/systemd/system/docker.service.d/http-proxy.conf")
    assert dropin.mode == 0o644 and dropin.user == "root"
    lines = [line for line in dropin.content_string.splitlines() if not line.startswith("#")]
    assert lines == [
        "[Service]",
        'Environment="HTTP_PROXY=http://proxy.test.invalid:3128"',
        'Environment="HTTPS_PROXY=http://proxy.test.invalid:3129"',
        'Environment="NO_PROXY=localhost,127.0.0.1,.test.invalid"',
    ]


def test_docker_client_config_gets_the_proxy_and_keeps_its_keys(host):
    config = host.file("/home/tester/.docker/config.json")
    assert config.user == "tester" and config.mode == 0o600
    data = json.loads(config.content_string)
    assert data["auths"] == {"registry.test.invalid": {}}
    assert data["proxies"] == {
        "registry.test.invalid": {"httpProxy": "http://other:1"},
        "default": {"httpProxy": "http://proxy.test.invalid:3128", "httpsProxy": "http://proxy.test.invalid:3129",
                    "noProxy": "localhost,127.0.0.1,.test.invalid"},
    }


# --- refusals (side_effect.yml through molecule/shared/tasks/refuse.yml) -----------------------------
@pytest.mark.parametrize("case", ["pypi_mirror_without_scheme", "proxy_without_scheme", "unknown_mirror_key",
                                  "ca_file_missing", "common_https_proxy_not_a_url", "common_pip_index_url_not_a_url",
                                  "common_ca_entry_with_content_and_src", "proxy_with_a_space_in_the_docker_role"])
def test_bad_site_variable_refused_before_changes_naming_the_variable(host, case):
    results = {r["name"]: r for r in json.loads(host.file("/root/dlbox-refusals.json").content_string)}
    result = results[case]
    assert result["msg"] != "NOT REFUSED"
    assert result["expect"] in result["msg"], result["msg"]
    assert result["unchanged"]
