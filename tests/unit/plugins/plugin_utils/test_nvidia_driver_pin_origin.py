# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The branch pin by origin and version (issue 48), read by the REAL apt of this machine (apt-cache policy on two local
file: archives with the Release Origins of Ubuntu's and NVIDIA's archives; no root, no network). The two archives carry
the same name at two 580 versions, as Ubuntu's noble-updates (580.196.07-0ubuntu0.24.04.1, tests/fixtures/holds/) and
NVIDIA's Ubuntu repository (Ubuntu's names before 590, versions -0ubuntu1) do."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

from ansible_collections.dlbox.stack.plugins.plugin_utils import nvidia_driver_plan as p

FAMILY = ["*nvidia*", "libcuda*", "libnvcuvid*", "libnvoptix*", "libnvidia*", "cuda-drivers*"]
UBUNTU_V = "580.196.07-0ubuntu0.24.04.1"
NVIDIA_V = "580.200.01-0ubuntu1"

pytestmark = pytest.mark.skipif(not shutil.which("apt-cache"), reason="apt is not installed here")


def _archive(root, name, origin, packages):
    path = os.path.join(root, name)
    os.makedirs(path)
    with open(os.path.join(path, "Packages"), "w") as fh:
        for entry in packages:
            package, version = entry[0], entry[1]
            depends = "Depends: %s\n" % entry[2] if len(entry) > 2 and entry[2] else ""
            extra = entry[3] if len(entry) > 3 else ""
            fh.write("Package: %s\nVersion: %s\nArchitecture: amd64\n%s%sFilename: %s.deb\nSize: 1\nDescription: t\n\n"
                     % (package, version, depends, extra, package))
    with open(os.path.join(path, "Release"), "w") as fh:
        fh.write("Origin: %s\nLabel: %s\nSuite: test\nCodename: test\nArchitectures: amd64\nComponents: main\n" % (origin, origin))
    return path


PPA_V = "580.210.03-0ubuntu0~ppa1"


def _setup(tmp_path, pin_text, archives, status=""):
    root = str(tmp_path)
    paths = [_archive(root, name, origin, packages) for name, origin, packages in archives]
    for sub in ("etc/preferences.d", "state/lists/partial", "cache/archives/partial"):
        os.makedirs(os.path.join(root, sub))
    with open(os.path.join(root, "state", "status"), "w") as fh:
        fh.write(status)
    with open(os.path.join(root, "etc", "sources.list"), "w") as fh:
        fh.write("".join("deb [trusted=yes] file:%s ./\n" % path for path in paths))
    with open(os.path.join(root, "etc", "preferences.d", "dlbox-00-nvidia-driver-branch.pref"), "w") as fh:
        fh.write(pin_text)
    opts = ["-o", "Dir::Etc=%s/etc" % root, "-o", "Dir::State=%s/state" % root, "-o", "Dir::Cache=%s/cache" % root,
            "-o", "Dir::State::status=%s/state/status" % root, "-o", "Debug::NoLocking=1", "-o", "APT::Architecture=amd64"]
    subprocess.run(["apt-get"] + opts + ["update", "-qq"], check=True, capture_output=True)
    return opts


def _policy(tmp_path, pin_text, names, third=False):
    archives = [("ubuntu", "Ubuntu", [("libnvidia-compute-580", UBUNTU_V), ("nvidia-kernel-common-580", UBUNTU_V),
                                      ("linux-modules-nvidia-580-open-generic", "6.8.0-151.151+1"),
                                      ("nvidia-container-toolkit", "1.13.5-0ubuntu1")]),
                ("nvidia", "NVIDIA", [("libnvidia-compute-580", NVIDIA_V), ("nvidia-kernel-common-580", NVIDIA_V),
                                      ("nvidia-container-toolkit", "1.17.8-1"), ("nvidia-fabricmanager", "580.200.01-1"),
                                      ("libnvidia-nscq", "580.200.01-1")])]
    if third:
        # a PPA (or a mirror rewriting Origin) with a newer 580 point release under the same names
        archives.append(("ppa", "LP-PPA-graphics-drivers", [("libnvidia-compute-580", PPA_V), ("nvidia-kernel-common-580", PPA_V)]))
    opts = _setup(tmp_path, pin_text, archives)
    text = subprocess.run(["apt-cache"] + opts + ["policy"] + names, check=True, capture_output=True, text=True).stdout
    out = {}
    for block in re.split(r"\n(?=\S)", text):
        name = block.split(":", 1)[0]
        candidate = re.search(r"Candidate: (\S+)", block).group(1)
        priorities = dict(re.findall(r"^\s+(?:\*\*\* )?(\S+) (-?\d+)$", block, re.M))
        out[name] = {"candidate": candidate, "priorities": priorities}
    return out


def test_the_distributions_driver_never_takes_nvidias_packages_of_the_branch(tmp_path):
    pin = p.branch_pin(580, FAMILY, "test", "Ubuntu")
    got = _policy(tmp_path, pin, ["libnvidia-compute-580", "nvidia-kernel-common-580", "linux-modules-nvidia-580-open-generic",
                                  "nvidia-container-toolkit"])
    # NVIDIA's newer 580 point release would win on version alone; the origin stanza keeps Ubuntu's
    assert got["libnvidia-compute-580"]["candidate"] == UBUNTU_V
    assert got["libnvidia-compute-580"]["priorities"] == {NVIDIA_V: "-1", UBUNTU_V: "1000"}
    assert got["nvidia-kernel-common-580"]["candidate"] == UBUNTU_V
    assert got["linux-modules-nvidia-580-open-generic"]["candidate"] == "6.8.0-151.151+1"
    # a package of no driver branch is left to apt's defaults (the newest)
    assert got["nvidia-container-toolkit"]["candidate"] == "1.17.8-1"


def test_nvidias_driver_never_takes_the_distributions_packages_of_the_branch(tmp_path):
    pin = p.branch_pin(580, FAMILY, "test", "NVIDIA")
    got = _policy(tmp_path, pin, ["libnvidia-compute-580", "nvidia-kernel-common-580"])
    assert got["libnvidia-compute-580"]["priorities"] == {NVIDIA_V: "1000", UBUNTU_V: "-1"}
    assert got["nvidia-kernel-common-580"]["candidate"] == NVIDIA_V


def test_without_the_origin_the_branch_pin_admits_both_archives(tmp_path):
    # what issue 48 found: the version pin alone gives both archives' 580 versions 1000, and apt mixes them
    got = _policy(tmp_path, p.branch_pin(580, FAMILY, "test"), ["libnvidia-compute-580"])
    assert got["libnvidia-compute-580"]["priorities"] == {NVIDIA_V: "1000", UBUNTU_V: "1000"}


def test_the_plan_pins_by_origin():
    text = p.branch_pin(580, FAMILY, "nvidia_driver_method: nvidia_repo", "NVIDIA")
    first, second, third, fourth = text.split("\n\n")
    assert "Pin: release o=NVIDIA\nPin-Priority: 1000" in first and "nvidia*-580 nvidia*-580-* libnvidia*-580" in first
    assert "Pin: release *\nPin-Priority: -1" in second and second.split("\n")[0] == first.split("\n")[-3]
    assert "Pin: release *\nPin-Priority: -1" in third
    assert "Pin: version 580.*\nPin-Priority: 1000" in fourth


def test_a_third_archive_never_wins(tmp_path):
    # red-team of issue 48: a pin against one named origin let a PPA (or a mirror rewriting Origin) through at 1000
    got = _policy(tmp_path, p.branch_pin(580, FAMILY, "test", "Ubuntu"), ["libnvidia-compute-580", "nvidia-kernel-common-580"], third=True)
    assert got["libnvidia-compute-580"]["candidate"] == UBUNTU_V
    assert got["libnvidia-compute-580"]["priorities"] == {NVIDIA_V: "-1", UBUNTU_V: "1000", PPA_V: "-1"}
    assert got["nvidia-kernel-common-580"]["candidate"] == UBUNTU_V
    got = _policy(tmp_path / "n", p.branch_pin(580, FAMILY, "test", "NVIDIA"), ["libnvidia-compute-580"], third=True)
    assert got["libnvidia-compute-580"]["priorities"] == {NVIDIA_V: "1000", UBUNTU_V: "-1", PPA_V: "-1"}


def test_branchless_nvidia_packages_follow_the_origin(tmp_path):
    # red-team of issue 48: nvidia-fabricmanager / libnvidia-nscq carry no branch number from 580 (data/compat.yml); the
    # 580.* family pin at 1000 let NVIDIA's win on a signed Ubuntu host over cuda_repo's -1
    got = _policy(tmp_path, p.branch_pin(580, FAMILY, "test", "Ubuntu"), ["nvidia-fabricmanager", "libnvidia-nscq"])
    for name in ("nvidia-fabricmanager", "libnvidia-nscq"):
        assert got[name]["priorities"] == {"580.200.01-1": "-1"}, got
        assert got[name]["candidate"] == "(none)"
    got = _policy(tmp_path / "n", p.branch_pin(580, FAMILY, "test", "NVIDIA"), ["nvidia-fabricmanager"])
    assert got["nvidia-fabricmanager"]["candidate"] == "580.200.01-1"


# packages.ubuntu.com (questing-updates, 2026): when Ubuntu retired 590, nvidia-driver-590 590.48.01-0ubuntu0.25.10.5 became
# a transitional package depending on nvidia-driver-595, and linux-modules-nvidia-590-generic a dummy transitional
# package of linux-modules-nvidia-595-generic (modelled here with those Depends)
OLD_590 = "590.44.01-0ubuntu1"
TRANSITIONAL = "590.48.01-0ubuntu0.25.10.5"
NEW_595 = "595.58.03-0ubuntu0.25.10.1"


def _retired(tmp_path, pin_text):
    # Ubuntu's libnvidia-compute-<b> Provides and Conflicts libnvidia-compute (canonical/nvidia-graphics-drivers
    # debian/templates/control.in): the next branch's library removes this one's
    lib = "Provides: libnvidia-compute\nConflicts: libnvidia-compute\n"
    archive = [("nvidia-driver-590", OLD_590, "libnvidia-compute-590 (= %s)" % OLD_590),
               ("libnvidia-compute-590", OLD_590, "", lib),
               ("nvidia-driver-590", TRANSITIONAL, "nvidia-driver-595"),
               ("nvidia-driver-595", NEW_595, "libnvidia-compute-595 (= %s)" % NEW_595),
               ("libnvidia-compute-595", NEW_595, "", lib),
               ("linux-modules-nvidia-590-generic", "6.17.0-8.8", "linux-modules-nvidia-590-open-generic (= 6.17.0-8.8)"),
               ("linux-modules-nvidia-590-generic", "6.17.0-9.9", "linux-modules-nvidia-595-generic"),
               ("linux-modules-nvidia-590-open-generic", "6.17.0-8.8"),
               ("linux-modules-nvidia-595-generic", "6.17.0-9.9")]
    status = "".join("Package: %s\nStatus: install ok installed\nVersion: %s\nArchitecture: amd64\n%s%sDescription: t\n\n" % (
        n, v, ("Depends: %s\n" % d) if d else "", lib if n.startswith("libnvidia-compute") else "") for n, v, d in [
        ("nvidia-driver-590", OLD_590, "libnvidia-compute-590 (= %s)" % OLD_590),
        ("libnvidia-compute-590", OLD_590, ""),
        ("linux-modules-nvidia-590-generic", "6.17.0-8.8", "linux-modules-nvidia-590-open-generic (= 6.17.0-8.8)"),
        ("linux-modules-nvidia-590-open-generic", "6.17.0-8.8", "")])
    opts = _setup(tmp_path, pin_text, [("ubuntu", "Ubuntu", archive)], status)
    return subprocess.run(["apt-get"] + opts + ["-s", "dist-upgrade"], capture_output=True, text=True, check=False).stdout


def test_a_retired_branchs_transitional_metas_never_pull_the_next_branch(tmp_path):
    out = _retired(tmp_path, p.branch_pin(590, FAMILY, "test", "Ubuntu"))
    print(out)
    assert not re.search(r"^Inst \S*595", out, re.M), out
    assert not re.search(r"^Remv ", out, re.M), out


def test_without_the_other_branches_stanza_the_transitional_meta_pulls_the_next_branch(tmp_path):
    # the control: what the red-team found with the version pin alone (nvidia-driver-590's transitional version matches 590.*)
    pin = "Package: %s\nPin: version 590.*\nPin-Priority: 1000\n" % " ".join(FAMILY)
    out = _retired(tmp_path, pin)
    assert re.search(r"^Inst nvidia-driver-595 ", out, re.M), out
    assert re.search(r"^Remv libnvidia-compute-590 ", out, re.M), out


def test_nvidias_repository_keeps_its_branchless_packages_on_the_branch(tmp_path):
    """NVIDIA's repository carries nvidia-fabricmanager (and NSCQ, the persistence daemon) of every branch under one name:
    on nvidia_repo the driver's branch decides their version too (the clean-clone make test of 2026-12-06: a pin taking
    them from o=NVIDIA at 1000 whatever their version made apt pick the 620 Fabric Manager beside the 580 driver)."""
    fm = [("nvidia-fabricmanager", v) for v in ("580.95.05-1", "595.71.05-1", "620.0.0-1")] + [
        ("libnvidia-nscq", v) for v in ("580.95.05-1", "620.0.0-1")]
    opts = _setup(tmp_path, p.branch_pin(580, FAMILY, "test", "NVIDIA"), [("nvidia", "NVIDIA", fm)])
    text = subprocess.run(["apt-cache"] + opts + ["policy", "nvidia-fabricmanager", "libnvidia-nscq"], check=True,
                          capture_output=True, text=True).stdout
    assert re.findall(r"Candidate: (\S+)", text) == ["580.95.05-1", "580.95.05-1"], text


# Names from Ubuntu's noble(-updates) restricted/multiverse Packages and NVIDIA's ubuntu2404 repository (tests/fixtures/holds,
# tests/aptrepo/specs/ubuntu-noble-signed.yml, data/compat.yml): the branch's own, other branches', and names that only
# look alike (a kernel ABI number, the firmware's version, CUDA's GDS).
OWN_580 = ["nvidia-driver-580-open", "libnvidia-compute-580", "nvidia-kernel-common-580-server", "nvidia-firmware-580-580.196.07",
           "linux-modules-nvidia-580-open-generic-hwe-24.04", "linux-modules-nvidia-580-open-6.8.0-1001-generic",
           "linux-signatures-nvidia-6.8.0-1001-generic", "linux-objects-nvidia-580-server-6.8.0-1001-generic",
           "xserver-xorg-video-nvidia-580", "cuda-drivers-580", "cuda-drivers-fabricmanager-580", "nvidia-dkms-580-open",
           "nvidia-headless-no-dkms-580-server-open", "libnvidia-gl-580"]
OTHER = ["nvidia-driver-595", "libnvidia-compute-570-server", "linux-modules-nvidia-595-open-generic",
         "linux-modules-nvidia-470-6.8.0-1001-generic", "xserver-xorg-video-nvidia-620", "cuda-drivers-595",
         "cuda-drivers-fabricmanager-590", "nvidia-utils-535-server", "nvidia-firmware-595-595.112.07", "nvidia-driver-581"]


def _matches(patterns, name):
    import fnmatch  # pylint: disable=import-outside-toplevel
    return [pat for pat in patterns.split() if fnmatch.fnmatchcase(name, pat)]


def test_the_pin_has_globs_and_names_only():
    """apt matches every /regular expression/ of a preferences file against every package of its cache on every run:
    30 CPU-s an apt command on Ubuntu 24.04's full archive (nvidia_driver_plan's comment above branch_names_pattern)."""
    for branch, origin in ((580, None), (580, "Ubuntu"), (580, "NVIDIA"), (595, "NVIDIA")):
        text = p.branch_pin(branch, FAMILY, "x", origin)
        for line in text.splitlines():
            if line.startswith("Package:"):
                assert "/" not in line and "(" not in line and "|" not in line, line


@pytest.mark.parametrize("name", OWN_580)
def test_the_other_branches_globs_leave_the_branchs_names(name):
    assert not _matches(p.other_branches_pattern(580), name)


@pytest.mark.parametrize("name", OTHER)
def test_the_other_branches_globs_catch_every_other_branch(name):
    assert _matches(p.other_branches_pattern(580), name)
    assert not _matches(p.branch_names_pattern(580), name)


@pytest.mark.parametrize("name", [n for n in OWN_580 if not n.startswith("linux-signatures-nvidia-6")])
def test_the_branch_globs_name_the_branchs_packages(name):
    assert _matches(p.branch_names_pattern(580), name)


def test_a_branch_has_three_digits():
    with pytest.raises(ValueError):
        p.other_branches_pattern(1000)


# NVIDIA's Ubuntu repository from 590 on: the names carry no branch (NVIDIA Driver Installation Guide r590, Table 4 "Ubuntu
# 590 package renames"; nvidia-firmware_595.71.05-1ubuntu1_amd64.deb seen in a user's install, data/compat.yml's
# driver_package_names.nvidia_repo_branchless). Every branch of the repository sits under the same names; a PPA (or a mirror rewriting Origin) may
# carry them too, with a higher revision of the same upstream version.
R590 = "590.48.01-1ubuntu1"
R595 = "595.71.05-1ubuntu1"
PPA_590 = "590.48.01-1ubuntu2~ppa1"
BRANCHLESS_590 = ("nvidia-open", "cuda-drivers", "nvidia-dkms-open", "nvidia-kernel-common", "nvidia-firmware", "libnvidia-compute",
                  "libnvidia-gl", "nvidia-utils", "nvidia-fabricmanager", "libnvidia-nscq", "nvidia-driver-cuda", "nvidia-kernel-open-dkms")


def _policy_590(tmp_path, pin_text, names=BRANCHLESS_590):
    archives = [("nvidia", "NVIDIA", [(n, v) for n in names for v in (R590, R595)] + [("nvidia-container-toolkit", "1.17.8-1")]),
                ("ppa", "LP-PPA-graphics-drivers", [(n, PPA_590) for n in names])]
    opts = _setup(tmp_path, pin_text, archives)
    text = subprocess.run(["apt-cache"] + opts + ["policy"] + list(names) + ["nvidia-container-toolkit"], check=True,
                          capture_output=True, text=True).stdout
    out = {}
    for block in re.split(r"\n(?=\S)", text):
        out[block.split(":", 1)[0]] = {"candidate": re.search(r"Candidate: (\S+)", block).group(1),
                                       "priorities": dict(re.findall(r"^\s+(?:\*\*\* )?(\S+) (-?\d+)$", block, re.M))}
    return out


def test_nvidias_590_names_keep_the_branch_and_the_origin(tmp_path):
    got = _policy_590(tmp_path, p.branch_pin(590, FAMILY, "test", "NVIDIA"))
    for name in BRANCHLESS_590:
        # the branch's version from NVIDIA only: the next branch never, the PPA's revision of 590 never
        assert got[name]["priorities"] == {R590: "1000", R595: "-1", PPA_590: "-1"}, (name, got[name])
        assert got[name]["candidate"] == R590
    # a package of no driver branch is left to apt's defaults
    assert got["nvidia-container-toolkit"]["candidate"] == "1.17.8-1"


def test_the_next_branch_keeps_its_own_version(tmp_path):
    got = _policy_590(tmp_path, p.branch_pin(595, FAMILY, "test", "NVIDIA"), ["nvidia-open", "libnvidia-compute"])
    assert got["nvidia-open"]["priorities"] == {R590: "-1", R595: "1000", PPA_590: "-1"}
    assert got["libnvidia-compute"]["candidate"] == R595


def test_without_the_590_stanzas_the_version_pin_takes_a_ppas_revision(tmp_path):
    # the control: the pin before (the branch's Ubuntu-style names by origin, the family at 590.* from any archive) gives
    # the PPA's 590 revision 1000 too, and apt takes it for its higher revision: one driver from two archives
    pin = re.sub(r"# NVIDIA's names without a branch.*?(?=# Never a driver package)", "", p.branch_pin(590, FAMILY, "test", "NVIDIA"),
                 flags=re.S)
    got = _policy_590(tmp_path, pin, ["libnvidia-compute"])
    assert got["libnvidia-compute"]["priorities"][PPA_590] == "1000"
    assert got["libnvidia-compute"]["candidate"] == PPA_590


def test_the_590_stanzas_only_for_nvidias_repository_from_590():
    assert "libnvidia-compute " not in p.branch_pin(580, FAMILY, "x", "NVIDIA")
    assert "libnvidia-compute " not in p.branch_pin(595, FAMILY, "x", "Ubuntu")
    assert "libnvidia-compute " in p.branch_pin(595, FAMILY, "x", "NVIDIA")


@pytest.mark.parametrize("version,other", [("590.48.01-1ubuntu1", False), ("590.44.01-1", False), ("595.71.05-1ubuntu1", True),
                                           ("580.95.05-1", True), ("620.0.0-1", True), ("5900.1-1", True), ("59.1-1", True),
                                           ("1.17.8-1", True), ("490.1-1", True), ("591.2-1", True)])
def test_the_other_versions_globs(version, other):
    import fnmatch  # pylint: disable=import-outside-toplevel
    assert any(fnmatch.fnmatchcase(version, pat) for pat in p.other_versions(590)) is other


# With an origin the other-branches stanza is 8 globs of every branch (any_branch_pattern) where it was 24 digit classes
# (other_branches_pattern): apt matches each glob against every package name of its cache on every command (1.5 of the 3.0
# CPU-s an `apt-cache policy` took with the pin on Ubuntu 22.04's full archive, 170,908 names, molecule/server_hgx_default's
# container, 2026-12-06). The same priorities for every version, read by the real apt: the branch's own names in three
# archives and as an installed version no archive has any more (dpkg status only), and the other branches' names.
STATUS_ONLY = "580.65.06-0ubuntu1"


@pytest.mark.parametrize("origin", ["Ubuntu", "NVIDIA"])
def test_the_short_other_branches_stanza_gives_every_version_the_priority_the_long_one_gave(tmp_path, origin):
    names = OWN_580 + OTHER
    archives = [("ubuntu", "Ubuntu", [(n, UBUNTU_V) for n in names]), ("nvidia", "NVIDIA", [(n, NVIDIA_V) for n in names]),
                ("ppa", "LP-PPA-graphics-drivers", [(n, PPA_V) for n in names])]
    status_only = ("libnvidia-compute-580", "linux-objects-nvidia-580-server-6.8.0-1001-generic", "nvidia-utils-535-server", "cuda-drivers-580")
    status = "".join("Package: %s\nStatus: install ok installed\nVersion: %s\nArchitecture: amd64\nMaintainer: t <t@t>\n"
                     "Description: t\n\n" % (n, STATUS_ONLY) for n in status_only)
    short = p.branch_pin(580, FAMILY, "test", origin)
    assert p.any_branch_pattern() in short and p.other_branches_pattern(580) not in short
    long_form = short.replace(p.any_branch_pattern(), p.other_branches_pattern(580))
    got = {}
    for label, text in (("short", short), ("long", long_form)):
        opts = _setup(tmp_path / label, text, archives, status)
        got[label] = subprocess.run(["apt-cache"] + opts + ["policy"] + names, check=True, capture_output=True, text=True).stdout
        got[label] = re.sub(r"file:\S+", "ARCHIVE", got[label]).replace(str(tmp_path / label), "ROOT")
    assert got["short"] == got["long"]
    # and the comparison can tell: the 580 status-only version keeps its priority (-1 from release *, not the default 100)
    assert re.search(r"libnvidia-compute-580:.*?\*\*\* %s -1" % re.escape(STATUS_ONLY), got["short"], re.S)
    assert "Pin-Priority: -1" in short and p.branch_pin(580, FAMILY, "t").count("[0-9][0-9][0-9]") == 0


def test_the_family_stanza_leaves_out_the_globs_that_star_nvidia_star_covers():
    """``libnvidia*`` names nothing ``*nvidia*`` does not (one glob less); libcuda* and cuda-drivers* stay."""
    pin = p.branch_pin(580, FAMILY, "test", "Ubuntu")
    family_line = [line for line in pin.splitlines() if line.startswith("Package: *nvidia*")][-1]
    assert family_line.split()[1:] == ["*nvidia*", "libcuda*", "libnvcuvid*", "libnvoptix*", "cuda-drivers*"]
    for name in OWN_580 + OTHER + ["libcuda1", "libnvidia-ml1", "libnvcuvid1", "cuda-drivers"]:
        assert bool(_matches(" ".join(FAMILY), name)) == bool(_matches(" ".join(family_line.split()[1:]), name)), name
    # without *nvidia* in the family nothing is left out
    last = [line for line in p.branch_pin(580, ["libnvidia*", "libcuda*"], "test").splitlines() if line.startswith("Package:")][-1]
    assert last == "Package: libnvidia* libcuda*"
