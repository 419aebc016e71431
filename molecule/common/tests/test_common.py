"""dlbox.stack.common with its defaults: what a host must look like afterwards."""

import pytest


@pytest.mark.parametrize("package", ["build-essential", "ca-certificates", "curl", "gnupg", "pciutils", "kmod"])
def test_baseline_package_installed(host, package):
    assert host.package(package).is_installed


def test_apt_cache_is_fresh(host):
    lists = host.run("find /var/lib/apt/lists -maxdepth 1 -name '*_Packages*' | wc -l")
    assert int(lists.stdout.strip()) > 0


def test_compiler_works(host):
    cmd = host.run("printf 'int main(void){return 0;}' | gcc -x c -o /var/tmp/dlbox-cc-probe - && /var/tmp/dlbox-cc-probe")
    assert cmd.rc == 0, cmd.stderr


def test_headers_meta_package_installed(host):
    distro = host.system_info.distribution
    meta = "linux-headers-amd64" if distro == "debian" else "linux-headers-generic"
    assert host.package(meta).is_installed


def test_headers_for_running_kernel_when_packaged(host):
    kernel = host.run("uname -r").stdout.strip()
    packaged = host.run(f"apt-cache show --no-all-versions linux-headers-{kernel}").rc == 0
    assert host.package(f"linux-headers-{kernel}").is_installed == packaged


def test_no_proxy_configured_by_default(host):
    assert not host.file("/etc/apt/apt.conf.d/80dlbox-proxy").exists
    env = host.file("/etc/environment")
    assert not env.exists or "proxy" not in env.content_string.lower()


def test_no_apt_key_used(host):
    assert not host.file("/etc/apt/trusted.gpg").exists
