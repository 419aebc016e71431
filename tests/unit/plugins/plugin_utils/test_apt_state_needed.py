"""apt_state.needed (plugins/plugin_utils/apt_state.py, read by the dlbox.stack.apt_present action): skip a no-op apt
task. (Its filter apt_needed had no caller and is gone; these are its tests, on the function.)"""

from __future__ import annotations

import pytest

from ansible_collections.dlbox.stack.plugins.plugin_utils import apt_state

# dpkg-query --show --showformat='${Package}\t${db:Status-Abbrev}\n' on Debian 12 (unknown names print nothing)
DPKG = "git\tii \nmake\tii \npciutils\thi \nlibfoo1\trc \nbar\tiU \n"
STATES = """Package: make
Architecture: amd64
Auto-Installed: 1

Package: git
Architecture: amd64
Auto-Installed: 0
"""


def test_everything_installed_and_manual_needs_nothing():
    assert apt_state.needed(["git", "pciutils"], DPKG, STATES) == []


def test_missing_config_files_only_and_unpacked_packages_go_to_apt():
    assert apt_state.needed(["git", "libfoo1", "bar", "fio"], DPKG, STATES) == ["libfoo1", "bar", "fio"]


def test_an_automatic_package_goes_to_apt_to_be_marked_manual():
    assert apt_state.needed(["git", "make"], DPKG, STATES) == ["make"]


@pytest.mark.parametrize("entry", ["git=1:2.39*", "nvidia-*", "libc6:i386", "/tmp/x.deb", "git>=2", "cuda-drivers=580.*"])
def test_anything_but_plain_names_leaves_the_whole_list_to_apt(entry):
    assert apt_state.needed(["git", entry], DPKG, STATES) == ["git", entry]


def test_no_extended_states_file_means_nothing_automatic():
    assert apt_state.needed(["make"], DPKG, "") == []
    assert apt_state.needed(["make"], DPKG, None) == []


def test_empty_list_needs_nothing():
    assert apt_state.needed([], DPKG) == []


def test_auto_names_reads_every_stanza_and_ignores_zero():
    assert apt_state.auto_names(STATES + "\nPackage: libx\nAuto-Installed: 1\n") == {"make", "libx"}


# with the version field: ${Package}\t${db:Status-Abbrev}\t${Version}
DPKG_V = "nvidia-driver\tii \t580.95.05-1\nnvidia-fabricmanager\thi \t580.95.05-1\ngit\tii \t1:2.39.5-0+deb12u2\n"


def test_an_exact_version_installed_needs_nothing():
    assert apt_state.needed(["nvidia-driver=580.95.05-1", "nvidia-fabricmanager=580.95.05-1", "git=1:2.39.5-0+deb12u2"],
                            DPKG_V, "") == []


def test_another_installed_version_goes_to_apt():
    assert apt_state.needed(["nvidia-driver=580.105.08-1", "git"], DPKG_V, "") == ["nvidia-driver=580.105.08-1"]


def test_a_version_without_the_version_field_goes_to_apt():
    assert apt_state.needed(["git=1:2.39.5-0+deb12u2", "make"], DPKG, STATES) == ["git=1:2.39.5-0+deb12u2", "make"]
