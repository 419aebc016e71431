"""The apt_present action (plugins/action/apt_present.py): which tasks dpkg may answer, and the probe's commands."""

from __future__ import annotations

import subprocess

import pytest

from ansible_collections.dlbox.stack.plugins.action.apt_present import (
    deb_alone, deb_command, probe_command, still_needed, wanted_names)


@pytest.mark.parametrize(("args", "names"), [
    ({"name": ["git", "make"]}, ["git", "make"]),
    ({"name": "git, make", "state": "present"}, ["git", "make"]),
    ({"pkg": ["nvidia-driver=580.95.05-1"], "install_recommends": False, "fail_on_autoremove": True},
     ["nvidia-driver=580.95.05-1"]),
    ({"name": ["git"], "update_cache": False, "cache_valid_time": 0}, ["git"]),
    ({"name": []}, []),                                 # nothing named: nothing to install, apt is not asked
])
def test_a_present_task_is_asked_of_dpkg(args, names):
    assert wanted_names(args) == names


@pytest.mark.parametrize("args", [
    {"name": ["git"], "state": "latest"},
    {"name": ["git"], "state": "absent"},
    {"name": ["git"], "update_cache": True},
    {"name": ["git"], "upgrade": "dist"},
    {"name": ["git"], "autoremove": True},
    {"name": ["git"], "purge": True},
    {"name": ["git"], "only_upgrade": True},
    {"update_cache": True},
    {"name": ["git"], "cache_valid_time": 3600},       # refreshes the lists, as update_cache does
    {"name": ["git"], "pkg": ["make"]},
])
def test_anything_more_than_installing_goes_to_apt_as_it_is(args):
    assert wanted_names(args) is None


def test_a_deb_file_alone_is_asked_of_dpkg_by_its_package_and_version():
    assert deb_alone({"deb": "/var/cache/x/nvidia-mig-manager_0.15.0-1_amd64.deb"})
    assert not deb_alone({"deb": "/tmp/x.deb", "name": ["git"]})
    assert not deb_alone({"deb": "/tmp/x.deb", "update_cache": True})
    assert not deb_alone({"name": ["git"]})


DPKG_V = "nvidia-driver\tii \t580.95.05-1\ngit\tii \t1:2.39.5-0+deb12u2\nmake\tii \t4.3-4.1\n"
STATES = "Package: make\nArchitecture: amd64\nAuto-Installed: 1\n"


def test_the_probe_output_gives_what_is_still_needed():
    out = DPKG_V + "#extended_states\n" + STATES
    assert still_needed(["nvidia-driver=580.95.05-1", "git"], out) == []
    assert still_needed(["nvidia-driver=580.105.08-1", "git", "make", "fio"], out) == [
        "nvidia-driver=580.105.08-1", "make", "fio"]
    # a version glob: the whole list to apt (the apt module upgrades to a newer match, which dpkg cannot know)
    assert still_needed(["git", "nvidia-container-toolkit=1.17.8-*"], out) == ["git", "nvidia-container-toolkit=1.17.8-*"]


def test_the_probe_commands_run_in_a_shell_and_quote_their_arguments(tmp_path):
    """The commands as the connection's /bin/sh runs them: dpkg-query of the host (names without versions), the mark
    even when dpkg knows none of them, and dpkg-deb's package=version of a file."""
    out = subprocess.run(["/bin/sh", "-c", probe_command(["dpkg=0", "no-such-package-dlbox", "dpkg"])],
                         capture_output=True, text=True, check=True).stdout
    first, mark, _rest = out.partition("#extended_states")
    assert mark and first.startswith("dpkg\tii \t") and first.count("\n") == 1
    assert "'$(touch" in probe_command(["$(touch /tmp/x)"])
    assert deb_command("/tmp/a b.deb") == "dpkg-deb --show --showformat='${Package}=${Version}' '/tmp/a b.deb'"
