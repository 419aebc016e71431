"""Decisions and parsers of the nvidia_driver role, on outputs captured in the Debian 12 and Ubuntu 22.04
test containers (tests/fixtures/driver/README.md names each capture) and on the name tables of the data
(driver_package_names.distro, frozen copy)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from ansible_collections.dlbox.stack.plugins.module_utils import _nvidia_driver as nd
from ansible_collections.dlbox.stack.plugins.plugin_utils import nvidia_driver_plan as plan
from ansible_collections.dlbox.stack.plugins.plugin_utils.compat_data import load_compat

ROOT = Path(__file__).resolve().parents[4]
FIX = ROOT / "tests" / "fixtures" / "driver"
FROZEN = ROOT / "tests" / "unit" / "data" / "compat-frozen.yml"


def fixture(name):
    return (FIX / name).read_text(encoding="utf-8")


def names(distribution):
    """The package-name table of a distribution's archive, from the FROZEN data (driver_package_names.distro)."""
    return load_compat(str(FROZEN))["driver_package_names"]["distro"][distribution.lower()]


# --- package sets --------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("profile", "modules", "signing", "expected"),
    [
        ("desktop", "open", "dkms", ["nvidia-driver-580-open"]),
        ("desktop", "proprietary", "dkms", ["nvidia-driver-580"]),
        ("server", "open", "dkms", ["nvidia-headless-580-server-open", "nvidia-utils-580-server"]),
        ("server", "proprietary", "dkms", ["nvidia-headless-580-server", "nvidia-utils-580-server"]),
        ("server", "open", "precompiled", ["nvidia-headless-no-dkms-580-server-open", "nvidia-utils-580-server",
                                           "linux-modules-nvidia-580-server-open-generic"]),
        ("desktop", "open", "precompiled", ["nvidia-driver-580-open", "linux-modules-nvidia-580-open-generic"]),
    ],
)
def test_ubuntu_package_sets(profile, modules, signing, expected):
    out = plan.driver_packages(names("Ubuntu"), 580, modules, profile, signing, "generic")
    assert out["packages"] == expected
    assert out["primary"] == expected[0]
    assert out["dkms_module"] == (None if signing == "precompiled" else "nvidia")


def _stanza(text, package):
    """The fields of one package's stanza in an apt-cache show / Packages text (the first one of that name)."""
    block = next(b for b in text.split("\n\n") if re.search(r"^Package: %s$" % re.escape(package), b, re.M))
    return dict(re.findall(r"^([A-Za-z-]+): (.*)$", block, re.M))


@pytest.mark.parametrize("data", ["data/compat.yml", "frozen"])
def test_ubuntu_desktop_signed_set_is_ubuntu_drivers_set_and_needs_no_dkms(data):
    # ubuntu-drivers' desktop set on the signed path: the full driver meta and the flavour's signed-module meta, whose
    # Provides nvidia-dkms-580-open (= <driver version>) stands for the DKMS package (issue 44). Real Ubuntu 24.04 records:
    # the Packages index of noble-updates/restricted and apt-cache show of the flavour metas.
    table = (load_compat(None if data == "data/compat.yml" else str(FROZEN))["driver_package_names"]["distro"]["ubuntu"])
    out = plan.driver_packages(table, 580, "open", "desktop", "precompiled", "generic")
    assert out["packages"] == ["nvidia-driver-580-open", "linux-modules-nvidia-580-open-generic"]
    index = (ROOT / "tests/fixtures/indexes/ubuntu/dists/noble-updates/restricted/binary-amd64/Packages").read_text(encoding="utf-8")
    metas = (ROOT / "tests/fixtures/kernel/ubuntu2404/apt-cache-show-metas.txt").read_text(encoding="utf-8")
    depends = [d.split(" (")[0] for d in _stanza(index, out["primary"])["Depends"].split(", ")]
    # NVENC/NVDEC, FBC, the extra libraries and the X driver come with the driver meta
    for name in ("libnvidia-encode-580", "libnvidia-decode-580", "libnvidia-fbc1-580", "libnvidia-extra-580",
                 "libnvidia-gl-580", "nvidia-utils-580", "xserver-xorg-video-nvidia-580"):
        assert name in depends, name
    provides = [p.split(" (")[0] for p in _stanza(metas, out["packages"][1])["Provides"].split(", ")]
    assert [d for d in depends if d.startswith("nvidia-dkms-")] == ["nvidia-dkms-580-open"] * 2
    assert "nvidia-dkms-580-open" in provides
    assert not [n for n in out["packages"] if "no-dkms" in n or n.startswith("nvidia-dkms")]


def test_ubuntu_server_signed_set_keeps_the_headless_no_dkms_meta():
    table = load_compat()["driver_package_names"]["distro"]["ubuntu"]
    out = plan.driver_packages(table, 580, "open", "server", "precompiled", "generic")
    assert out["packages"] == ["nvidia-headless-no-dkms-580-server-open", "nvidia-utils-580-server",
                               "linux-modules-nvidia-580-server-open-generic"]


def test_ubuntu_precompiled_follows_the_kernel_flavour():
    out = plan.driver_packages(names("Ubuntu"), 580, "open", "server", "precompiled", "generic-hwe-22.04")
    assert "linux-modules-nvidia-580-server-open-generic-hwe-22.04" in out["packages"]


@pytest.mark.parametrize(
    ("capture", "profile"),
    [("ubuntu2204-apt-get-s-install-580-server-open-signed.txt", "server"),
     ("ubuntu2204-apt-get-s-install-580-open-signed.txt", None)],
)
def test_ubuntu_precompiled_names_exist_in_the_archive(capture, profile):
    # apt accepted these names in the Ubuntu 22.04 container: each shows up as an Inst line
    installs = [item["name"] for item in nd.parse_apt_simulate(fixture(capture))]
    sets = [plan.driver_packages(names("Ubuntu"), 580, "open", profile, "precompiled")["packages"]] if profile else [
        ["nvidia-headless-no-dkms-580-open", "nvidia-utils-580", "linux-modules-nvidia-580-open-generic"]]
    for name in sets[0]:
        assert name in installs


@pytest.mark.parametrize(
    ("profile", "modules", "expected", "module"),
    [
        ("desktop", "proprietary", ["nvidia-kernel-dkms", "nvidia-driver", "firmware-nvidia-gsp"], "nvidia-current"),
        ("server", "proprietary", ["nvidia-kernel-dkms", "nvidia-smi", "libcuda1", "nvidia-persistenced", "firmware-nvidia-gsp"],
         "nvidia-current"),
        ("server", "open", ["nvidia-open-kernel-dkms", "nvidia-smi", "libcuda1", "nvidia-persistenced", "firmware-nvidia-gsp"],
         "nvidia-current-open"),
    ],
)
def test_debian_package_sets(profile, modules, expected, module):
    out = plan.driver_packages(names("Debian"), 535, modules, profile, "dkms")
    assert out["packages"] == expected
    assert out["dkms_module"] == module
    assert "firmware-nvidia-gsp" in out["same_version"]


def test_debian_has_no_precompiled_modules():
    with pytest.raises(ValueError, match="no precompiled package set"):
        plan.driver_packages(names("Debian"), 535, "open", "server", "precompiled")


@pytest.mark.parametrize(("modules", "profile"), [("closed", "server"), ("open", "workstation")])
def test_bad_flavour_or_profile(modules, profile):
    with pytest.raises(ValueError):
        plan.driver_packages(names("Ubuntu"), 580, modules, profile)


def test_unknown_template_field():
    with pytest.raises(ValueError, match="unknown field"):
        plan.driver_packages({"packages": {"desktop": {"dkms": ["nvidia-{nope}"]}}}, 580, "open")


# --- Secure Boot -----------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("distribution", "secure_boot", "choice", "key", "dkms_major", "path", "config"),
    [
        ("Ubuntu", False, "auto", "", 3, "dkms", None),
        ("Debian", None, "auto", "", 3, "dkms", None),
        ("Ubuntu", True, "auto", "", 2, "precompiled", None),
        ("Ubuntu", True, "precompiled", "", 3, "precompiled", None),
        ("Debian", True, "auto", "/root/mok.key", 3, "dkms", "framework"),
        ("Ubuntu", True, "mok", "/var/lib/shim-signed/mok/MOK.priv", 2, "dkms", "shim-signed"),
        ("Ubuntu", True, "mok", "/root/mok.key", 3, "dkms", "framework"),
    ],
)
def test_signing_paths(distribution, secure_boot, choice, key, dkms_major, path, config):
    cert = key.replace(".key", ".der").replace("MOK.priv", "MOK.der")
    out = plan.signing_path(distribution, secure_boot, choice, key, cert, dkms_major)
    assert (out["path"], out["dkms_config"], out["problem"]) == (path, config, None)


def test_secure_boot_on_debian_without_a_key_is_refused_naming_the_ways_out():
    out = plan.signing_path("Debian", True)
    assert out["path"] is None
    assert "nvidia_driver_mok_key" in out["problem"] and "nvidia_driver_mok_certificate" in out["problem"]
    assert "precompiled" not in out["problem"]


def test_mok_on_ubuntu_without_a_key_names_precompiled_too():
    out = plan.signing_path("Ubuntu", True, "mok")
    assert out["path"] is None and "precompiled" in out["problem"]


def test_precompiled_on_debian_refused():
    out = plan.signing_path("Debian", True, "precompiled")
    assert out["path"] is None and "nvidia_driver_secure_boot_signing" in out["problem"]


def test_unknown_signing_choice():
    assert "nvidia_driver_secure_boot_signing" in plan.signing_path("Ubuntu", True, "shim")["problem"]


# --- apt simulation ------------------------------------------------------------------------------

def test_parse_apt_simulate_upgrade_and_new_lines():
    items = nd.parse_apt_simulate(fixture("debian12-apt-get-s-install-compute-set.txt"))
    assert items[0] == {"name": "perl-base", "version": "5.36.0-7+deb12u4", "old": "5.36.0-7+deb12u3"}
    assert {"name": "nvidia-kernel-dkms", "version": "535.309.01-0+deb12u1", "old": None} in items
    assert len(items) == 60


def test_transitional_535_server_on_jammy_is_caught():
    # nvidia-headless-535-server (535.309.01) depends on the 580-server packages: asking for 535 installs 580
    out = plan.check_simulation(fixture("ubuntu2204-apt-get-s-install-535-server.txt"), "nvidia-headless-535-server", 535,
                                ["nvidia-utils-535-server"])
    assert not out["ok"]
    assert out["branch_found"] == 580
    assert {"name": "nvidia-headless-580-server", "branch": 580} in out["pulled"]
    assert "nvidia-dkms-580-server" in out["dkms"]
    assert out["version"] == "535.309.01"


def test_debian_compute_set_is_what_was_asked():
    out = plan.check_simulation(fixture("debian12-apt-get-s-install-compute-set.txt"), "nvidia-kernel-dkms", 535,
                                ["firmware-nvidia-gsp", "nvidia-smi", "libcuda1"])
    assert out["ok"] and out["pulled"] == [] and out["mismatched"] == []
    assert out["version"] == "535.309.01"
    # nvidia-persistenced is 535.171.04 in bookworm: not a driver-versioned package, so not checked
    assert "nvidia-persistenced" in out["installs"]


def test_debian_wrong_branch_from_version():
    out = plan.check_simulation(fixture("debian12-apt-get-s-install-compute-set.txt"), "nvidia-kernel-dkms", 550)
    assert not out["ok"] and out["pulled"][0] == {"name": "nvidia-kernel-dkms", "branch": 535}


def test_gsp_firmware_at_another_version_is_caught():
    text = fixture("debian12-apt-get-s-install-compute-set.txt").replace(
        "Inst firmware-nvidia-gsp (535.309.01-0+deb12u1", "Inst firmware-nvidia-gsp (535.261.03-1")
    out = plan.check_simulation(text, "nvidia-kernel-dkms", 535, ["firmware-nvidia-gsp"])
    assert not out["ok"] and out["mismatched"] == [{"name": "firmware-nvidia-gsp", "version": "535.261.03"}]


def test_signed_set_brings_no_dkms_but_nvidia_driver_does():
    signed = plan.check_simulation(fixture("ubuntu2204-apt-get-s-install-580-open-signed.txt"), "nvidia-headless-no-dkms-580-open", 580)
    plain = plan.check_simulation(fixture("ubuntu2204-apt-get-s-install-nvidia-driver-580-open.txt"), "nvidia-driver-580-open", 580)
    assert signed["ok"] and signed["dkms"] == []
    assert plain["ok"] and plain["dkms"] == ["nvidia-dkms-580-open"]


def test_already_installed_primary_has_no_inst_line():
    out = plan.check_simulation("Reading package lists...\n0 upgraded, 0 newly installed, 0 to remove and 11 not upgraded.\n",
                                "nvidia-kernel-dkms", 535, ["firmware-nvidia-gsp"],
                                {"nvidia-kernel-dkms": "535.309.01-0+deb12u1", "firmware-nvidia-gsp": "535.309.01-0+deb12u1"})
    assert out["ok"] and out["version"] == "535.309.01"


def test_nothing_known_is_not_ok():
    assert not plan.check_simulation("", "nvidia-kernel-dkms", 535)["ok"]


@pytest.mark.parametrize(
    ("value", "upstream", "branch"),
    [("535.309.01-0+deb12u1", "535.309.01", 535), ("580.178.04-0ubuntu0.22.04.1", "580.178.04", 580),
     ("1:2.3-4", "2.3", 2), ("20220217+3~deb12u1", "20220217+3~deb12u1", None), ("", "", None)],
)
def test_versions(value, upstream, branch):
    assert nd.upstream_version(value) == upstream
    assert nd.branch_of_version(value) == branch


@pytest.mark.parametrize(
    ("name", "branch"),
    [("nvidia-firmware-580-server-580.178.04", 580), ("nvidia-dkms-590-open", 590), ("libnvidia-compute-535", 535),
     ("nvidia-kernel-dkms", None), ("libcuda1", None), ("linux-modules-5.15.0-204-generic", None)],
)
def test_branch_in_name(name, branch):
    assert nd.branch_in_name(name) == branch


# --- DKMS -------------------------------------------------------------------------------------------

def test_dkms_status_debian12_capture():
    entries = nd.parse_dkms_status(fixture("debian12-dkms-status.txt"))
    assert entries == [{"module": "nvidia-current", "version": "535.309.01", "kernel": "6.1.0-57-amd64", "arch": "x86_64",
                        "state": "installed"}]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        # Ubuntu 22.04 (DKMS 2.8.7) prints module/version too
        ("amdgpu/6.8.5-2009582.22.04, 5.15.0-117-generic, x86_64: installed",
         ("amdgpu", "6.8.5-2009582.22.04", "5.15.0-117-generic", "installed")),
        ("8812au/4.2.3: added", ("8812au", "4.2.3", None, "added")),
        # DKMS before 2.8.2: comma-separated
        ("virtualbox, 4.3.18, 3.13.0-37-generic, x86_64: installed", ("virtualbox", "4.3.18", "3.13.0-37-generic", "installed")),
        ("nvidia/535.309.01, 6.1.0-57-amd64, x86_64: installed (WARNING! Diff between built and installed module!)",
         ("nvidia", "535.309.01", "6.1.0-57-amd64", "installed")),
        ("Error! Could not locate dkms.conf file.", None),
    ],
)
def test_dkms_status_lines(line, expected):
    entries = nd.parse_dkms_status(line)
    got = (entries[0]["module"], entries[0]["version"], entries[0]["kernel"], entries[0]["state"]) if entries else None
    assert got == expected


def test_dkms_missing_lists_kernels_without_the_module():
    status = fixture("debian12-dkms-status.txt")
    assert nd.dkms_missing(status, "nvidia-current", "535.309.01", ["6.1.0-57-amd64"]) == []
    assert nd.dkms_missing(status, "nvidia-current", "535.309.01", ["6.1.0-57-amd64", "6.1.0-58-amd64"]) == ["6.1.0-58-amd64"]
    assert nd.dkms_missing(status, "nvidia-current", "535.261.03", ["6.1.0-57-amd64"]) == ["6.1.0-57-amd64"]
    assert nd.dkms_missing(status + "nvidia-current/535.309.01, 6.1.0-58-amd64, x86_64: built\n", "nvidia-current",
                           "535.309.01", ["6.1.0-58-amd64"]) == ["6.1.0-58-amd64"]


# --- mokutil -------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("text", "state"),
    [
        ("/var/lib/shim-signed/mok/MOK.der is already enrolled\n", "enrolled"),
        ("/root/mok.der is already in db\n", "enrolled"),
        ("/root/mok.der is not enrolled\n", "not-enrolled"),
        ("/var/lib/shim-signed/mok/MOK.der is already in the enrollment request\n", "pending"),
        ("/root/mok.der is blocked in dbx\n", "blocked"),
        ("EFI variables are not supported on this system\n", "unknown"),
        ("Failed to open /root/nope.der\n", "unknown"),
        ("", "unknown"),
    ],
)
def test_mokutil_test_key(text, state):
    assert nd.parse_mokutil_test_key(text) == state


# --- apt sources ----------------------------------------------------------------------------------

COMPONENTS = ["contrib", "non-free", "non-free-firmware"]


def test_one_line_sources_list_gets_components_once():
    text = ("# comment\ndeb http://deb.debian.org/debian bookworm main\n"
            "deb-src http://deb.debian.org/debian bookworm main contrib\n"
            "deb [signed-by=/usr/share/keyrings/x.gpg arch=amd64] http://deb.debian.org/debian-security bookworm-security main\n"
            "deb http://example.org/other stable extra\n")
    out = plan.apt_sources_with_components(text, COMPONENTS)
    assert out.splitlines() == [
        "# comment",
        "deb http://deb.debian.org/debian bookworm main contrib non-free non-free-firmware",
        "deb-src http://deb.debian.org/debian bookworm main contrib non-free non-free-firmware",
        "deb [signed-by=/usr/share/keyrings/x.gpg arch=amd64] http://deb.debian.org/debian-security bookworm-security main contrib "
        "non-free non-free-firmware",
        "deb http://example.org/other stable extra",
    ]
    assert plan.apt_sources_with_components(out, COMPONENTS) == out


def test_deb822_components():
    text = ("Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm bookworm-updates\nComponents: main\n"
            "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n")
    out = plan.apt_sources_with_components(text, COMPONENTS, deb822=True)
    assert "Components: main contrib non-free non-free-firmware\n" in out
    assert plan.apt_sources_with_components(out, COMPONENTS, deb822=True) == out


def test_complete_sources_unchanged():
    text = "deb http://deb.debian.org/debian bookworm main contrib non-free non-free-firmware\n"
    assert plan.apt_sources_with_components(text, COMPONENTS) == text
