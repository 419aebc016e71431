# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""tools/dlboxdata/indexes.py: control-file parsing, dpkg version order, archives (folder, loopback HTTP), .debs."""

from __future__ import annotations

import gzip
import hashlib
import lzma
import shutil
import subprocess

import pytest
from dlboxdata import indexes

from conftest import FIXTURES

HAVE_DPKG = shutil.which("dpkg") is not None
HAVE_DPKG_DEB = shutil.which("dpkg-deb") is not None

PACKAGES = """\
Package: nvidia-headless-535-server
Source: nvidia-graphics-drivers-535-server
Version: 535.309.01-0ubuntu0.22.04.2
Depends: nvidia-headless-580-server
Filename: pool/restricted/n/x/nvidia-headless-535-server_535.309.01-0ubuntu0.22.04.2_amd64.deb
SHA256: 00
Description: NVIDIA headless metapackage (transitional package)
 This is a transitional package.
 .
 It can be removed.

Package: nvidia-driver-580
Version: 580.178.04-0ubuntu0.22.04.1
Pre-Depends: dkms (>= 3.0)
Depends: nvidia-dkms-580 (<= 580.178.04-1), nvidia-kernel-common-580 (>= 580.178.04) | nvidia-kernel-common-580-open,
 libc6:any [amd64], xserver-xorg-video-nvidia-580 <!nocheck>
Provides: nvidia-driver-binary
"""


def test_parse_stanzas_reads_fields_and_continuation_lines():
    first, second = indexes.parse_stanzas(PACKAGES)
    assert first["Package"] == "nvidia-headless-535-server"
    assert first["Depends"] == "nvidia-headless-580-server"
    assert first["Description"].splitlines() == [
        "NVIDIA headless metapackage (transitional package)", "This is a transitional package.", ".", "It can be removed."]
    assert second["Version"] == "580.178.04-0ubuntu0.22.04.1"
    assert "libc6:any" in second["Depends"]


def test_parse_stanzas_refuses_a_line_that_is_not_a_field():
    with pytest.raises(indexes.IndexError_, match="not a control-file line"):
        indexes.parse_stanzas("Package: a\nthis is not a field\n")


def test_relations_and_depends_names():
    second = indexes.parse_stanzas(PACKAGES)[1]
    groups = indexes.relations(second["Depends"])
    assert groups[0] == [indexes.Relation("nvidia-dkms-580", "<=", "580.178.04-1")]
    assert groups[1] == [indexes.Relation("nvidia-kernel-common-580", ">=", "580.178.04"),
                         indexes.Relation("nvidia-kernel-common-580-open")]
    assert groups[2] == [indexes.Relation("libc6")]
    assert indexes.depends_names(second) == [
        "dkms", "nvidia-dkms-580", "nvidia-kernel-common-580", "nvidia-kernel-common-580-open", "libc6",
        "xserver-xorg-video-nvidia-580"]
    assert indexes.relations("") == []
    with pytest.raises(indexes.IndexError_, match="cannot parse relation"):
        indexes.relations("Bad Name (>= 1)")


ORDERED = [
    "1.0~rc1", "1.0", "1.0-1", "1.0-1ubuntu1", "1.0a", "1.0+b1", "1.0.0",
    "11.8.89~11.8.0-5~deb12u1", "11.8.89~11.8.0-5",
    "535.261.03-1", "535.309.01-0ubuntu0.22.04.2", "535.309.01-0+deb12u1",
    "580.95.05-0ubuntu0.22.04.1", "580.178.04-0ubuntu0.22.04.1", "1:0.1",
]


@pytest.mark.parametrize("lower, higher", list(zip(ORDERED, ORDERED[1:])))
def test_compare_versions_orders_like_dpkg(lower, higher):
    assert indexes.compare_versions(lower, higher) < 0
    assert indexes.compare_versions(higher, lower) > 0
    assert indexes.compare_versions(lower, lower) == 0


@pytest.mark.skipif(not HAVE_DPKG, reason="dpkg is needed to cross-check the order")
def test_compare_versions_agrees_with_dpkg_on_every_pair():
    for left in ORDERED:
        for right in ORDERED:
            ours = indexes.compare_versions(left, right)
            op = "lt" if ours < 0 else "eq" if ours == 0 else "gt"
            assert subprocess.run(["dpkg", "--compare-versions", left, op, right], check=False).returncode == 0, (left, op, right)


@pytest.mark.parametrize("version, upstream", [
    ("580.95.05-0ubuntu0.22.04.1", "580.95.05"),
    ("1:2.0-3", "2.0"),
    ("12.4.131~12.4.1-2", "12.4.131~12.4.1"),
    ("2.22.3-1-1", "2.22.3-1"),
    ("440.100", "440.100"),
])
def test_upstream_version(version, upstream):
    assert indexes.upstream_version(version) == upstream


def _archive_with(tmp_path, suite, component, compressions):
    folder = tmp_path / "dists" / suite / component / "binary-amd64"
    folder.mkdir(parents=True)
    for ext in compressions:
        payload = PACKAGES.encode()
        if ext == ".xz":
            payload = lzma.compress(payload)
        elif ext == ".gz":
            payload = gzip.compress(payload)
        (folder / f"Packages{ext}").write_bytes(payload)
    return tmp_path


@pytest.mark.parametrize("compressions", [[".xz"], [".gz"], [""], [".xz", ".gz", ""]])
def test_archive_reads_a_local_folder_in_any_compression(tmp_path, compressions):
    archive = indexes.Archive(_archive_with(tmp_path, "jammy", "restricted", compressions))
    names = [s["Package"] for s in archive.packages("jammy", "restricted")]
    assert names == ["nvidia-headless-535-server", "nvidia-driver-580"]
    # the first compression present is the one read
    assert archive.fetched[0][0].endswith("Packages" + compressions[0])


def test_archive_says_which_index_is_missing(tmp_path):
    archive = indexes.Archive(_archive_with(tmp_path, "jammy", "restricted", [""]))
    with pytest.raises(indexes.IndexNotFound, match="dists/noble/restricted/binary-amd64/Packages"):
        archive.packages("noble", "restricted")


def _release(tmp_path, suite, entries):
    lines = ["Origin: FIXTURE", "SHA256:"] + [f" {sha} {size} {path}" for path, sha, size in entries]
    (tmp_path / "dists" / suite / "InRelease").write_text("\n".join(lines) + "\n")


def test_archive_checks_the_index_against_inrelease(tmp_path):
    root = _archive_with(tmp_path, "jammy", "restricted", [".gz"])
    payload = (root / "dists/jammy/restricted/binary-amd64/Packages.gz").read_bytes()
    _release(root, "jammy", [("restricted/binary-amd64/Packages.gz", hashlib.sha256(payload).hexdigest(), len(payload))])
    assert len(indexes.Archive(root).packages("jammy", "restricted")) == 2
    _release(root, "jammy", [("restricted/binary-amd64/Packages.gz", "0" * 64, len(payload))])
    with pytest.raises(indexes.IndexError_, match="SHA256 differs"):
        indexes.Archive(root).packages("jammy", "restricted")
    assert len(indexes.Archive(root, verify_release=False).packages("jammy", "restricted")) == 2


def test_archive_over_loopback_http(tmp_path, serve_dir):
    root = _archive_with(tmp_path, "bookworm", "non-free", [".xz"])
    archive = indexes.Archive(serve_dir(root) + "/")
    assert [s["Package"] for s in archive.packages("bookworm", "non-free")][0] == "nvidia-headless-535-server"
    with pytest.raises(indexes.IndexNotFound):
        archive.packages("trixie", "non-free")


def test_corrupt_index_is_an_error(tmp_path):
    folder = tmp_path / "dists/jammy/restricted/binary-amd64"
    folder.mkdir(parents=True)
    (folder / "Packages.xz").write_bytes(b"not xz at all")
    with pytest.raises(indexes.IndexError_, match="corrupt .xz index"):
        indexes.Archive(tmp_path).packages("jammy", "restricted")


def test_write_index_round_trips(tmp_path):
    stanzas = indexes.parse_stanzas(PACKAGES)
    path = indexes.write_index(stanzas, tmp_path / "Packages")
    assert indexes.read_index_file(path) == stanzas


@pytest.mark.skipif(not HAVE_DPKG_DEB, reason="dpkg-deb is needed to build and read a .deb")
def test_fetch_deb_checks_sha256_and_extracts_one_member(tmp_path, serve_dir):
    tree = tmp_path / "pkg"
    (tree / "DEBIAN").mkdir(parents=True)
    (tree / "DEBIAN/control").write_text(
        "Package: fixture-gpus\nVersion: 1.0\nArchitecture: all\nMaintainer: FIXTURE <fixture@invalid>\nDescription: FIXTURE\n")
    doc = tree / "usr/share/doc/fixture-gpus"
    doc.mkdir(parents=True)
    (doc / "supported-gpus.json").write_text('{"chips": []}\n')
    pool = tmp_path / "mirror/pool/f"
    pool.mkdir(parents=True)
    deb = pool / "fixture-gpus_1.0_all.deb"
    subprocess.run(["dpkg-deb", "--root-owner-group", "--build", str(tree), str(deb)], check=True, capture_output=True)
    sha = hashlib.sha256(deb.read_bytes()).hexdigest()
    archive = indexes.Archive(serve_dir(tmp_path / "mirror"))

    got = archive.fetch_deb("pool/f/fixture-gpus_1.0_all.deb", sha, tmp_path / "debs")
    assert indexes.extract_member(got, "usr/share/doc/fixture-gpus/supported-gpus.json") == b'{"chips": []}\n'
    assert indexes.extract_member(got, "./usr/share/doc/fixture-gpus/supported-gpus.json") == b'{"chips": []}\n'
    with pytest.raises(indexes.IndexError_, match="no member"):
        indexes.extract_member(got, "usr/share/doc/fixture-gpus/missing.json")

    reads = len(archive.fetched)
    assert archive.fetch_deb("pool/f/fixture-gpus_1.0_all.deb", sha, tmp_path / "debs") == got
    assert len(archive.fetched) == reads  # reused, not downloaded again
    with pytest.raises(indexes.IndexError_, match="is not the index's"):
        archive.fetch_deb("pool/f/fixture-gpus_1.0_all.deb", "1" * 64, tmp_path / "other")
    assert not (tmp_path / "other" / "fixture-gpus_1.0_all.deb").exists()


def test_recorded_ubuntu_index_holds_the_transitional_535_server():
    """The recorded jammy-updates copy: asking for 535-server on Ubuntu 22.04 pulls 580-server."""
    archive = indexes.Archive(FIXTURES / "ubuntu")
    stanzas = {s["Package"]: s for s in archive.packages("jammy-updates", "restricted")}
    headless = stanzas["nvidia-headless-535-server"]
    assert indexes.upstream_version(headless["Version"]).startswith("535.")
    assert indexes.depends_names(headless) == ["nvidia-headless-580-server"]
