"""dlbox.stack.common with an extra CA, a proxy, no kernel headers and an extra package."""

import pytest

CA_FILE = "/usr/local/share/ca-certificates/dlbox-lab-proxy.crt"


def test_extra_ca_file_installed(host):
    ca = host.file(CA_FILE)
    assert ca.exists and ca.mode == 0o644 and ca.user == "root"
    assert "BEGIN CERTIFICATE" in ca.content_string


def test_extra_ca_in_system_bundle(host):
    ca_body = "".join(host.file(CA_FILE).content_string.split("\n")[1:4])
    bundle = "".join(host.file("/etc/ssl/certs/ca-certificates.crt").content_string.split("\n"))
    assert ca_body in bundle


def test_pip_uses_system_bundle_and_keeps_user_keys(host):
    conf = host.file("/etc/pip.conf").content_string
    assert "cert = /etc/ssl/certs/ca-certificates.crt" in conf
    assert "proxy = http://127.0.0.1:3128" in conf
    assert "timeout = 60" in conf


def test_apt_proxy_file(host):
    conf = host.file("/etc/apt/apt.conf.d/80dlbox-proxy").content_string
    assert 'Acquire::http::Proxy "http://127.0.0.1:3128";' in conf
    assert 'Acquire::http::Proxy::mirror.lab.internal "DIRECT";' in conf


def test_apt_really_went_through_the_proxy(host):
    log = host.file("/var/log/dlbox-test-proxy.log").content_string
    assert "Packages" in log or "InRelease" in log
    assert ".deb" in log  # jq was downloaded through it


@pytest.mark.parametrize(
    "line",
    ["LANG=C.UTF-8", "http_proxy=http://127.0.0.1:3128", "HTTP_PROXY=http://127.0.0.1:3128",
     "no_proxy=localhost,127.0.0.1,mirror.lab.internal", "ftp_proxy=http://127.0.0.1:2121"],
)
def test_environment_lines(host, line):
    assert line in host.file("/etc/environment").content_string.splitlines()


def test_extra_package_installed(host):
    assert host.package("jq").is_installed


def test_no_kernel_headers_when_disabled(host):
    assert host.run("dpkg -l 'linux-headers-*' 2>/dev/null | grep -c '^ii'").stdout.strip() in ("", "0")


def test_cleared_https_proxy_is_gone(host):
    """prepare.yml left an earlier run's HTTPS proxy (:3129); common_https_proxy: "" removes it everywhere."""
    env = host.file("/etc/environment").content_string
    assert "3129" not in env and "https_proxy=" not in env.lower()
    apt = host.file("/etc/apt/apt.conf.d/80dlbox-proxy").content_string
    assert "Acquire::https::Proxy \"" not in apt and "3129" not in apt
    assert "// no_proxy: localhost,127.0.0.1,mirror.lab.internal" in apt
