"""Which headers meta package follows the running kernel's flavour."""

from __future__ import annotations

import pytest

from ansible_collections.dlbox.stack.plugins.module_utils import kernel as k
from ansible_collections.dlbox.stack.plugins.module_utils.kernel import headers_meta_candidates, kernel_flavour


@pytest.mark.parametrize(
    ("release", "flavour"),
    [
        ("6.1.0-18-amd64", "amd64"),
        ("6.1.0-18-cloud-amd64", "cloud-amd64"),
        ("6.1.0-18-rt-amd64", "rt-amd64"),
        ("5.15.0-1050-aws", "aws"),
        ("6.8.0-45-generic", "generic"),
        ("6.8.0-1015-nvidia", "nvidia"),
        ("5.15.0-91-lowlatency", "lowlatency"),
        ("6.18.44-fc-v595", None),          # a custom host kernel, as under Docker here
        ("5.15.153.1-microsoft-standard-WSL2", None),
        ("5.15.148-tegra", None),           # Jetson L4T
        ("", None),
        (None, None),
    ],
)
def test_kernel_flavour(release, flavour):
    assert kernel_flavour(release) == flavour


@pytest.mark.parametrize(
    ("release", "distribution", "arch", "expected"),
    [
        ("6.1.0-18-amd64", "Debian", "x86_64", ["linux-headers-amd64"]),
        ("6.1.0-18-cloud-amd64", "Debian", "x86_64", ["linux-headers-cloud-amd64", "linux-headers-amd64"]),
        ("6.1.0-18-arm64", "Debian", "aarch64", ["linux-headers-arm64"]),
        ("5.15.0-1050-aws", "Ubuntu", "x86_64", ["linux-headers-aws", "linux-headers-generic"]),
        ("6.8.0-45-generic", "Ubuntu", "aarch64", ["linux-headers-generic"]),
        ("6.18.44-fc-v595", "Debian", "x86_64", ["linux-headers-amd64"]),
        ("6.18.44-fc-v595", "Ubuntu", "x86_64", ["linux-headers-generic"]),
        ("6.8.0-45-generic", "Fedora", "x86_64", ["linux-headers-generic"]),
        ("6.18.44-fc-v595", "Fedora", "x86_64", []),
    ],
)
def test_headers_meta_candidates(release, distribution, arch, expected):
    assert headers_meta_candidates(release, distribution, arch) == expected


# dpkg's status abbreviations (dpkg-query(1), "db:Status-Abbrev": desired action, then package state):
# one reading for the kernel packages and the driver's packages.
@pytest.mark.parametrize("status, present", [
    ("ii ", True), ("hi ", True), ("iU ", True), ("iF ", True), ("iH ", True), ("iW ", True), ("it ", True),
    ("rc ", False), ("un ", False), ("pn ", False),
])
def test_dpkg_present_one_reading(status, present):
    from ansible_collections.dlbox.stack.plugins.module_utils import _nvidia_driver as nd
    assert k.dpkg_present(status) is present
    kernel = k.parse_kernel_packages("linux-image-6.8.0-31-generic\t6.8.0-31.31\t%s\t\n" % status)
    driver = nd.parse_dpkg_query("nvidia-driver-580\t580.95.05-0ubuntu1\tamd64\t%s\n" % status)
    assert kernel[0]["installed"] is present
    assert bool(driver) is present


# --- one apt-cache policy for several headers names (roles/common/tasks/headers.yml) -------------------------------------
POLICY = __import__("pathlib").Path(__file__).resolve().parents[3] / "fixtures" / "kernel" / "policy"


def test_policy_candidates_on_debian12_real_lists():
    """tests/fixtures/kernel/README.md: the running (cloud) kernel's headers name is unknown to apt: not in the answer."""
    text = (POLICY / "apt-cache-policy-headers-debian12.txt").read_text()
    got = k.policy_candidates(text)
    assert got == {"linux-headers-cloud-amd64": "6.1.192-3", "linux-headers-amd64": "6.1.192-3", "mail-transport-agent": None}


def test_policy_candidates_with_pinned_out_versions():
    """Versions pinned to -1 are no candidate (apt-cache show answered 0 for linux-headers-virtual, whose install fails)."""
    text = (POLICY / "apt-cache-policy-headers-ubuntu2204-fixture-pins.txt").read_text()
    got = k.policy_candidates(text)
    assert got == {"linux-headers-5.15.0-1002-generic": "5.15.0-1002.1002", "linux-headers-generic": "5.15.0.1002.1002",
                   "linux-headers-virtual": None, "linux-headers-generic-hwe-22.04": None}


def test_policy_candidates_of_nothing():
    assert k.policy_candidates("") == {} and k.policy_candidates(None) == {}
