# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The FIXTURE archive of molecule/server_hgx_default (tests/aptrepo/specs/ubuntu-jammy-server.yml) Depends as Ubuntu's
server series does (the RECORDED stanzas of tests/fixtures/holds/ubuntu2404-noble-updates-nvidia-580.txt): the user
space needs nvidia-kernel-common-580-server at the driver's version, which needs the firmware package of that version.
Judged by the REAL apt of this machine (no root, no network): the role's own package set for Ubuntu 22.04's server
profile with signed modules (data/compat.yml, ubuntu server precompiled), with Fabric Manager and NSCQ as
molecule/server_hgx_default installs them, still resolves, and now brings kernel-common and the firmware."""

from __future__ import annotations

import functools
import os
import shutil
import sys

import pytest
import yaml

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", ".."))
DRIVER = "580.178.04-0ubuntu0.22.04.1+fixture1"
FIRMWARE = "nvidia-firmware-580-server-580.178.04"

sys.path.insert(0, os.path.join(ROOT, "tests", "aptrepo"))
import apt_root  # noqa: E402  pylint: disable=wrong-import-position

pytestmark = pytest.mark.skipif(not (shutil.which("apt-get") and shutil.which("gpg")), reason="apt and gpg are not installed here")


def _ubuntu_row(node):
    """The distribution row of data/compat.yml whose server_suffix and packages name Ubuntu's sets."""
    if isinstance(node, dict):
        server = node.get("packages", {}).get("server") if isinstance(node.get("packages"), dict) else None
        if node.get("server_suffix") == "-server" and isinstance(server, dict) and "precompiled" in server:
            return node
        children = node.values()
    elif isinstance(node, list):
        children = node
    else:
        return None
    for child in children:
        found = _ubuntu_row(child)
        if found is not None:
            return found
    return None


@functools.lru_cache(maxsize=None)   # data/compat.yml read once for this module; callers get a fresh list
def _server_set_names():
    with open(os.path.join(ROOT, "data", "compat.yml"), encoding="utf-8") as fh:
        row = _ubuntu_row(yaml.safe_load(fh))
    return tuple(name.format(branch="580", server=row["server_suffix"], open="-open", flavour="generic")
                 for name in row["packages"]["server"]["precompiled"])


def _server_set():
    """The role's set for the server profile with Canonical's signed modules, at R580 open on the generic flavour."""
    return list(_server_set_names())


@pytest.fixture(scope="module")
def apt(tmp_path_factory):
    return apt_root.make_root(str(tmp_path_factory.mktemp("jammy-server-depends")), "ubuntu-jammy-server.yml")[0]


_run = apt_root.run


def test_the_roles_server_set_is_the_one_this_archive_serves():
    assert _server_set() == ["nvidia-headless-no-dkms-580-server-open", "nvidia-utils-580-server",
                             "linux-modules-nvidia-580-server-open-generic"]


def test_the_roles_set_with_fabric_manager_resolves_and_brings_kernel_common_and_firmware(apt):
    names = _server_set() + ["nvidia-fabricmanager-580=" + DRIVER, "libnvidia-nscq-580=" + DRIVER]
    sim = _run(apt, "apt-get", "-s", "install", "--no-install-recommends", *names)
    assert sim.returncode == 0, sim.stdout + sim.stderr
    for name in ("nvidia-kernel-common-580-server", FIRMWARE, "nvidia-utils-580-server", "libnvidia-compute-580-server",
                 "nvidia-fabricmanager-580"):
        assert "Inst %s (%s " % (name, DRIVER) in sim.stdout, sim.stdout


@pytest.mark.parametrize("package", ["nvidia-utils-580-server", "libnvidia-compute-580-server"])
def test_the_user_space_alone_pulls_kernel_common_and_its_firmware(apt, package):
    """Ubuntu's nvidia-utils-580-server and libnvidia-compute-580-server Depend nvidia-kernel-common-580-server-<version>
    (provided by nvidia-kernel-common-580-server), which Depends nvidia-firmware-580-server-<version>."""
    sim = _run(apt, "apt-get", "-s", "install", "--no-install-recommends", package)
    assert sim.returncode == 0, sim.stdout + sim.stderr
    assert "Inst nvidia-kernel-common-580-server (%s " % DRIVER in sim.stdout, sim.stdout
    assert "Inst %s (%s " % (FIRMWARE, DRIVER) in sim.stdout, sim.stdout


def test_the_depends_are_ubuntus(apt):
    depends = _run(apt, "apt-cache", "depends", "nvidia-utils-580-server", "libnvidia-compute-580-server",
                   "nvidia-kernel-common-580-server").stdout
    assert depends.count("Depends: <nvidia-kernel-common-580-server-580.178.04>\n    nvidia-kernel-common-580-server\n") == 2
    assert "  Depends: libnvidia-compute-580-server\n" in depends
    assert "  Depends: %s\n" % FIRMWARE in depends
