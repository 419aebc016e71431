"""The nvidia_driver filters wire the pure functions: flavour from the kernel release, errors as filter errors."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.dlbox.stack.plugins.filter.nvidia_driver import FilterModule

F = FilterModule().filters()
NAMES = {
    "server_suffix": "-server",
    "packages": {"server": {"precompiled": ["nvidia-headless-no-dkms-{branch}{server}{open}",
                                            "linux-modules-nvidia-{branch}{server}{open}-{flavour}"]}},
}


def test_every_filter_is_documented():
    from pathlib import Path
    folder = Path(__file__).resolve().parents[4] / "plugins" / "filter"
    for name in F:
        assert (folder / ("%s.yml" % name)).is_file(), name


@pytest.mark.parametrize(
    ("release", "flavour", "meta"),
    [("5.15.0-204-generic", "", "linux-modules-nvidia-580-server-open-generic"),
     ("6.8.0-1015-nvidia", "", "linux-modules-nvidia-580-server-open-nvidia"),
     ("6.18.44-fc-v669", "", "linux-modules-nvidia-580-server-open-generic"),
     ("5.15.0-204-generic", "generic-hwe-22.04", "linux-modules-nvidia-580-server-open-generic-hwe-22.04")],
)
def test_packages_follow_the_kernel_flavour(release, flavour, meta):
    out = F["nvidia_driver_packages"](NAMES, "580", "open", "server", "precompiled", release, flavour)
    assert out["packages"][1] == meta


def test_bad_input_is_a_filter_error():
    with pytest.raises(AnsibleFilterError, match="nvidia_driver_packages"):
        F["nvidia_driver_packages"](NAMES, "580", "open", "desktop", "precompiled")


def test_signing_and_mok_state():
    assert F["nvidia_driver_signing"](True, "Ubuntu")["path"] == "precompiled"
    assert F["nvidia_driver_mok_state"]("x is not enrolled\n") == "not-enrolled"
