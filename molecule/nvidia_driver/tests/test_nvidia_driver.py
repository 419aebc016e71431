"""dlbox.stack.nvidia_driver on Debian 12 with Debian's real driver packages.

Scenario nvidia_driver (make test): the packages only (nvidia_driver_in_container: packages), no module built.
Scenario nvidia_driver_dkms (make test-heavy, these same tests): build-only mode, the module built with DKMS for a
Debian kernel and checked with modinfo; the kernel side (headers, DKMS, nouveau, the persistence daemon) is tested
there only.
"""

import json

import pytest

SERVER_SET = ["nvidia-kernel-dkms", "nvidia-smi", "libcuda1", "nvidia-persistenced", "firmware-nvidia-gsp"]


def build_kernel(host):
    return host.file("/root/dlbox-build-kernel").content_string.strip()


def built(host):
    return host.file("/root/dlbox-test-mode").content_string.strip() == "build"


@pytest.fixture
def build_mode(host):
    """The kernel side runs in build-only mode only (scenario nvidia_driver_dkms)."""
    if not built(host):
        pytest.skip("packages only here: the DKMS build is tested by scenario nvidia_driver_dkms (make test-heavy)")


def driver_version(host):
    return host.run("dpkg-query -W -f='${Version}' nvidia-kernel-dkms").stdout.rsplit("-", 1)[0]


@pytest.mark.parametrize("name", SERVER_SET)
def test_compute_only_set_installed(host, name):
    assert host.package(name).is_installed


def test_full_desktop_driver_not_installed(host):
    assert not host.package("nvidia-driver").is_installed


def test_driver_branch_is_the_planned_one(host):
    assert driver_version(host).split(".")[0] == "535"


def test_gsp_firmware_at_the_driver_version(host):
    out = host.run("dpkg-query -W -f='${Version}' firmware-nvidia-gsp").stdout
    assert out.rsplit("-", 1)[0] == driver_version(host)


def test_headers_of_the_build_kernel_installed(host, build_mode):
    assert host.package("linux-headers-%s" % build_kernel(host)).is_installed


def test_dkms_installed_nvidia_current_for_the_build_kernel(host, build_mode):
    out = host.check_output("dkms status")
    assert "nvidia-current/%s, %s, x86_64: installed" % (driver_version(host), build_kernel(host)) in out


def test_modinfo_shows_the_driver_version(host, build_mode):
    out = host.check_output("modinfo -k %s -F version nvidia-current" % build_kernel(host))
    assert out.strip() == driver_version(host)


def test_module_file_in_the_kernel_tree(host, build_mode):
    out = host.check_output("modinfo -k %s -n nvidia-current" % build_kernel(host))
    assert out.startswith("/lib/modules/%s/updates/dkms/" % build_kernel(host))


@pytest.mark.parametrize("name", SERVER_SET)
def test_packages_held(host, name):
    assert host.check_output("apt-mark showhold").split().count(name) == 1


def test_unattended_upgrades_blacklist(host):
    text = host.file("/etc/apt/apt.conf.d/51dlbox-nvidia-driver").content_string
    assert "Unattended-Upgrade::Package-Blacklist {" in text
    for name in SERVER_SET:
        assert '"^%s$";' % name.replace(".", "[.]") in text


def test_apt_reads_the_blacklist(host):
    out = host.check_output("apt-config dump Unattended-Upgrade::Package-Blacklist")
    assert '"^nvidia-kernel-dkms$"' in out


def test_sources_list_gained_components_once(host):
    lines = [l for l in host.file("/etc/apt/sources.list").content_string.splitlines() if l.startswith("deb ")]
    assert len(lines) == 3
    for line in lines:
        comps = line.split()[3:]
        assert comps == ["main", "contrib", "non-free", "non-free-firmware"], line


def test_sources_list_comment_kept(host):
    assert "# Debian 12 as the installer writes it" in host.file("/etc/apt/sources.list").content_string


def test_nouveau_blacklisted(host, build_mode):
    out = host.run("grep -rlsE '^[[:space:]]*blacklist[[:space:]]+nouveau' /etc/modprobe.d /lib/modprobe.d /usr/lib/modprobe.d")
    assert out.rc == 0 and out.stdout.strip()


def test_persistence_daemon_enabled(host, build_mode):
    assert host.service("nvidia-persistenced").is_enabled


def test_no_module_loaded_in_build_only_mode(host):
    assert not host.file("/proc/driver/nvidia/version").exists


def test_packages_only_builds_no_module(host):
    """Packages mode: DKMS knows the module's source but built it for no kernel (no headers were installed)."""
    if built(host):
        pytest.skip("build-only mode builds it (test_dkms_installed_nvidia_current_for_the_build_kernel)")
    assert host.file("/usr/src/nvidia-current-%s" % driver_version(host)).is_directory
    assert ": installed" not in host.check_output("dkms status")
    assert host.check_output("find /lib/modules -name 'nvidia-current*.ko*' 2>/dev/null | wc -l").strip() == "0"
    assert host.check_output("dpkg -l 'linux-headers-*' 2>/dev/null | grep -c '^ii' || true").strip() == "0"


def refusals(host):
    return {r["name"]: r for r in json.loads(host.file("/root/dlbox-refusals.json").content_string)}


CASES = ["unknown_branch", "branch_too_old_for_the_gpu", "branch_too_new_for_the_gpu", "proprietary_on_blackwell",
         "secure_boot_without_signing_path", "unknown_method", "distro_on_debian_nvswitch_host"]


@pytest.mark.parametrize("case", CASES)
def test_bad_input_refused_naming_the_variable(host, case):
    result = refusals(host)[case]
    assert result["msg"] != "NOT REFUSED"
    for text in result["expect"]:
        assert text in result["msg"], (text, result["msg"])


@pytest.mark.parametrize("case", CASES)
def test_bad_input_changed_nothing(host, case):
    assert refusals(host)[case]["unchanged"]
