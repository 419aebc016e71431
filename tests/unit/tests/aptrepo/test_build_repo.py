"""tests/aptrepo/build_repo.py and serve.py: pure parts, the shipped specs, and one real build.

The real-build tests need dpkg-deb and gpg (skipped without them); nothing here needs Docker.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

APTREPO = Path(__file__).resolve().parents[4] / "tests" / "aptrepo"
SPECS = APTREPO / "specs"
sys.path.insert(0, str(APTREPO))
import build_repo as br  # noqa: E402  pylint: disable=wrong-import-position
import serve  # noqa: E402  pylint: disable=wrong-import-position

HAVE_TOOLS = all(shutil.which(t) for t in ("dpkg-deb", "gpg", "gpgv"))
needs_tools = pytest.mark.skipif(not HAVE_TOOLS, reason="dpkg-deb, gpg and gpgv are needed for a real build")


# ----------------------------------------------------------------------------------------------
# pure helpers
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("version, upstream, filename", [
    ("1.1-1", "1.1", "p_1.1-1_all.deb"),
    ("12.4.131-1", "12.4.131", "p_12.4.131-1_all.deb"),
    ("2.27.7-1+cuda12.9", "2.27.7", "p_2.27.7-1+cuda12.9_all.deb"),
    ("5:20.10.24-1~debian.12~bookworm", "20.10.24", "p_20.10.24-1~debian.12~bookworm_all.deb"),
    ("620.0.0~fixture-1", "620.0.0~fixture", "p_620.0.0~fixture-1_all.deb"),
    ("1.0", "1.0", "p_1.0_all.deb"),
])
def test_versions_and_filenames(version, upstream, filename):
    assert br.upstream_version(version) == upstream
    assert br.deb_filename("p", version, "all") == filename


@pytest.mark.parametrize("text, values, expected", [
    ("@version@", {"version": "1-1"}, "1-1"),
    ("/usr/local/cuda-@release@/bin", {"release": "12.4"}, "/usr/local/cuda-12.4/bin"),
    ("mail me@example.org @unknown@", {"version": "1"}, "mail me@example.org @unknown@"),
    ("${HOME} {braces} $1", {"x": "y"}, "${HOME} {braces} $1"),
])
def test_substitute(text, values, expected):
    assert br.substitute(text, values) == expected


@pytest.mark.parametrize("value, expected", [
    (None, ""), ("a, b", "a, b"), (["a (>= 1)", "b | c"], "a (>= 1), b | c"), ([], ""),
])
def test_relation(value, expected):
    assert br.relation(value) == expected


@pytest.mark.parametrize("summary, expected", [
    ("fake nvcc", "FIXTURE: fake nvcc"),
    ("FIXTURE: already", "FIXTURE: already"),
    ("  two\n lines ", "FIXTURE: two lines"),
])
def test_fixture_summary(summary, expected):
    assert br.fixture_summary(summary) == expected


def test_format_description_folds_long_text():
    text = br.format_description("short", "line one\n\nline three\n")
    assert text == "FIXTURE: short\n line one\n .\n line three"


def _pkg(**kw):
    pkg = {"name": "cuda-nvcc-12-4", "version": "12.4.131-1", "architecture": "amd64",
           "description": "fake nvcc", "long_description": ""}
    pkg.update(kw)
    return pkg


def test_render_control_fields_and_order():
    text = br.render_control(_pkg(depends="cuda-toolkit-12-4-config-common", conflicts=["x", "y"],
                                  long_description="more\n\ntext"), 3)
    fields = br.parse_stanza(text)
    assert fields["Package"] == "cuda-nvcc-12-4"
    assert fields["Version"] == "12.4.131-1"
    assert fields["Architecture"] == "amd64"
    assert fields["Maintainer"].startswith("dlbox.stack test fixtures")
    assert fields["Installed-Size"] == "3"
    assert fields["Depends"] == "cuda-toolkit-12-4-config-common"
    assert fields["Conflicts"] == "x, y"
    assert "Provides" not in fields and "Homepage" not in fields  # empty fields are left out
    lines = text.splitlines()
    assert lines[0] == "Package: cuda-nvcc-12-4"
    assert lines[-4:] == ["Description: FIXTURE: fake nvcc", " more", " .", " text"]
    assert text.endswith("\n") and "\n\n" not in text


def test_packages_stanza_has_file_fields():
    control = br.render_control(_pkg(), 1)
    data = b"not really a deb"
    stanza = br.packages_stanza(control, "./cuda-nvcc-12-4_12.4.131-1_amd64.deb", data)
    fields = br.parse_stanza(stanza)
    assert fields["Filename"] == "./cuda-nvcc-12-4_12.4.131-1_amd64.deb"
    assert fields["Size"] == str(len(data))
    assert fields["MD5sum"] == hashlib.md5(data).hexdigest()  # noqa: S324
    assert fields["SHA1"] == hashlib.sha1(data).hexdigest()  # noqa: S324
    assert fields["SHA256"] == hashlib.sha256(data).hexdigest()
    assert stanza.splitlines()[-1].startswith("Description: FIXTURE:")


def test_render_release_hashes():
    indexes = {"Packages": b"abc\n", "Packages.gz": br.gzip_bytes(b"abc\n")}
    text = br.render_release({"Origin": "NVIDIA", "Label": "dlbox fixture", "Suite": "s", "Codename": "c",
                              "Date": br.rfc2822_utc(0), "Architectures": "amd64", "Components": "",
                              "Description": "FIXTURE: x"}, indexes)
    head, sums = text.split("MD5Sum:\n", 1)
    assert "Label: dlbox fixture\n" in head and "Date: Thu, 01 Jan 1970 00:00:00 UTC\n" in head
    assert "Components" not in head and head.count("Description:") == 1
    md5, sha = sums.split("SHA256:\n", 1)
    for block, algo in ((md5, hashlib.md5), (sha, hashlib.sha256)):
        rows = [line.split() for line in block.splitlines()]
        assert {r[2]: (r[0], int(r[1])) for r in rows} == {p: (algo(d).hexdigest(), len(d)) for p, d in indexes.items()}


@pytest.mark.parametrize("ts, expected", [
    (0, "Thu, 01 Jan 1970 00:00:00 UTC"),
    (1795975200, "Sun, 29 Nov 2026 18:00:00 UTC"),
])
def test_rfc2822_utc(ts, expected):
    assert br.rfc2822_utc(ts) == expected


def test_gzip_is_reproducible():
    assert br.gzip_bytes(b"x" * 100) == br.gzip_bytes(b"x" * 100)
    assert gzip.decompress(br.gzip_bytes(b"hello")) == b"hello"


@pytest.mark.parametrize("value, expected", [(None, 0o644), ("0755", 0o755), (0o600, 0o600), ("644", 0o644)])
def test_parse_mode(value, expected):
    assert br.parse_mode(value) == expected


# ----------------------------------------------------------------------------------------------
# spec loading
# ----------------------------------------------------------------------------------------------
def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_include_merges_packages_and_defaults(tmp_path):
    _write(tmp_path, "_base.yml", "layout: flat\norigin: NVIDIA\nvars: {a: '1'}\n_anchor: {x: 1}\n"
           "packages:\n  - {name: base-pkg, version: '1-1'}\n")
    spec = br.load_spec(_write(tmp_path, "top.yml", "include: [_base.yml]\nname: top\nvars: {b: '2'}\n"
                               "packages:\n  - {name: top-pkg, version: '2-1'}\n"))
    assert [p["name"] for p in spec["packages"]] == ["base-pkg", "top-pkg"]
    assert spec["origin"] == "NVIDIA" and spec["vars"] == {"a": "1", "b": "2"}
    assert "_anchor" not in spec


@pytest.mark.parametrize("text, message", [
    ("name: x\nbogus: 1\n", "unknown keys"),
    ("name: x\npackages: [{name: p, version: '1', colour: red}]\n", "unknown keys"),
    ("name: x\npackages: [{name: P_bad, version: '1'}]\n", "bad package name"),
    ("name: x\npackages: [{name: pp}]\n", "needs version"),
    ("name: x\nlayout: dists\n", "needs suites"),
    ("name: x\nlayout: weird\n", "layout must be"),
    ("name: x\nlabel: Official\n", "fixture"),
    ("name: x\nflat_dir: ../out\n", "relative path"),
])
def test_bad_specs(tmp_path, text, message):
    with pytest.raises(br.SpecError, match=message):
        br.normalise_spec(br.load_spec(_write(tmp_path, "s.yml", text)))


def test_resolve_versions_and_placeholders(tmp_path):
    spec = br.normalise_spec(br.load_spec(_write(tmp_path, "s.yml", """
name: t
vars: {distro: debian12, release: repo-level}
packages:
  - name: nvidia-open
    versions: ["580.95.05-1", "595.71.05-1"]
    architecture: amd64
    description: "driver @upstream@ branch @branch@ for @distro@"
    depends: "nvidia-driver (= @version@)"
    vars: {release: pkg-level}
    files: [{path: "/opt/@release@/@name@", content: "@codename@", mode: "0755"}]
""")))
    pkgs = br.resolve_packages(spec)
    assert [p["version"] for p in pkgs] == ["580.95.05-1", "595.71.05-1"]
    assert pkgs[0]["description"] == "FIXTURE: driver 580.95.05 branch 580 for debian12"
    assert pkgs[1]["depends"] == "nvidia-driver (= 595.71.05-1)"
    assert pkgs[0]["files"] == [{"path": "/opt/pkg-level/nvidia-open", "content": "t", "mode": 0o755}]
    assert pkgs[0]["suite"] == "/"


def test_digest_follows_the_spec():
    a = br.spec_digest({"name": "a", "packages": []})
    assert a == br.spec_digest({"packages": [], "name": "a"})
    assert a != br.spec_digest({"name": "b", "packages": []})


# ----------------------------------------------------------------------------------------------
# the shipped specs
# ----------------------------------------------------------------------------------------------
SHIPPED = sorted(p.name for p in SPECS.glob("*.yml") if not p.name.startswith("_"))


def _resolved(name):
    return br.resolve_packages(br.normalise_spec(br.load_spec(SPECS / name)))


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_specs_resolve_and_say_fixture(name):
    spec = br.normalise_spec(br.load_spec(SPECS / name))
    assert spec["label"] == "dlbox fixture" and spec["description"].startswith("FIXTURE:")
    for pkg in br.resolve_packages(spec):
        assert pkg["description"].startswith("FIXTURE:"), pkg["name"]
        assert "@" not in pkg["version"] and "@" not in pkg["depends"], pkg["name"]
        for f in pkg["files"]:
            if f["path"].startswith(("/lib/modules", "/usr/lib/modules")) or f["path"].endswith(".ko"):
                # never a real module: only the FIXTURE GPU host's text stand-ins (tests/fixtures/gpu_host/bin/fixture-lib.sh)
                assert "data" not in f and ("symlink" in f or f.get("content", "").startswith("# FIXTURE")), (pkg["name"], f["path"])
            assert "@version@" not in f.get("content", "") and "@upstream@" not in f.get("content", "")


def test_expected_spec_files_exist():
    assert {"cuda-ubuntu2204.yml", "cuda-debian12.yml", "container-toolkit.yml", "docker-ce.yml"} <= set(SHIPPED)


@pytest.mark.parametrize("spec", ["cuda-ubuntu2204.yml", "cuda-debian12.yml"])
@pytest.mark.parametrize("package, version", [
    ("cuda-keyring", "1.1-1"),
    ("cuda-toolkit-12-4", "12.4.1-1"),
    ("cuda-nvcc-12-4", "12.4.131-1"),
    ("cuda-toolkit-12-6", None),
    ("cuda-toolkit-13-0", None),
    ("cuda-compat-12-4", "550.54.15-1"),
    ("libcudnn9-cuda-12", "9.10.2.21-1"),
    ("libcudnn9-dev-cuda-12", "9.10.2.21-1"),
    ("libcudnn9-cuda-13", "9.20.0.48-1"),
    ("libnccl2", "2.27.7-1+cuda12.9"),
    ("libnccl-dev", "2.27.7-1+cuda12.9"),
    ("nvidia-open", "595.71.05-1"),
    ("cuda-drivers", "580.95.05-1"),
    ("nvidia-driver-pinning-620", None),
    ("nvidia-fabricmanager", "580.95.05-1"),
    ("nvidia-fabricmanager-580", "580.95.05-1"),
    ("cuda-drivers-fabricmanager-580", "580.95.05-1"),
    ("nvidia-open", "590.48.01-1"),           # _cuda-driver.yml: a build with no Fabric Manager at its version
    ("nvidia-driver-pinning-590", "590.48.01-1"),
])
def test_cuda_spec_packages(spec, package, version):
    versions = [p["version"] for p in _resolved(spec) if p["name"] == package]
    assert versions, package
    if version:
        assert version in versions


def test_nvcc_text_is_realistic():
    (nvcc,) = [p for p in _resolved("cuda-debian12.yml") if p["name"] == "cuda-nvcc-12-4"]
    (script,) = [f["content"] for f in nvcc["files"] if f["path"] == "/usr/local/cuda-12.4/bin/nvcc"]
    assert "Cuda compilation tools, release 12.4, V12.4.131" in script and "FIXTURE" in script


@pytest.mark.parametrize("package", ["nvidia-container-toolkit", "nvidia-container-toolkit-base",
                                     "libnvidia-container-tools", "libnvidia-container1"])
def test_container_toolkit_versions(package):
    assert [p["version"] for p in _resolved("container-toolkit.yml") if p["name"] == package] == ["1.17.8-1", "1.18.1-1", "1.18.2-1"]


def test_docker_ce_is_a_repack_of_docker_io():
    pkgs = {p["name"]: p for p in _resolved("docker-ce.yml")}
    assert pkgs["docker-ce"]["repack"] == "docker.io"
    assert "docker.io" in pkgs["docker-ce"]["description"]
    assert pkgs["containerd.io"]["depends"] == "containerd, runc"


# ----------------------------------------------------------------------------------------------
# a real build (dpkg-deb + gpg)
# ----------------------------------------------------------------------------------------------
def _quiet(_msg):
    return None


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    if not HAVE_TOOLS:
        pytest.skip("dpkg-deb, gpg and gpgv are needed for a real build")
    root = tmp_path_factory.mktemp("repo")
    keys = tmp_path_factory.mktemp("keys")
    out = root / "container-toolkit"
    stamp = br.build(SPECS / "container-toolkit.yml", out, key_dir=keys, log=_quiet)
    return {"out": out, "keys": keys, "stamp": stamp}


@needs_tools
def test_release_hashes_match_the_indexes(built):
    base = built["out"] / "stable" / "deb" / "amd64"
    release = (base / "Release").read_text()
    sha = release.split("SHA256:\n", 1)[1]
    rows = [line.split() for line in sha.splitlines() if line.startswith(" ")]
    assert {r[2] for r in rows} == {"Packages", "Packages.gz"}
    for digest, size, name in rows:
        data = (base / name).read_bytes()
        assert hashlib.sha256(data).hexdigest() == digest and len(data) == int(size)
    assert gzip.decompress((base / "Packages.gz").read_bytes()) == (base / "Packages").read_bytes()


@needs_tools
def test_signatures_verify_with_the_exported_keyring(built, tmp_path):
    base = built["out"] / "stable" / "deb" / "amd64"
    keyring = built["out"] / "nvidia-container-toolkit-keyring.gpg"
    ok = subprocess.run(["gpgv", "--keyring", str(keyring), str(base / "InRelease")], capture_output=True, check=False)
    assert ok.returncode == 0, ok.stderr
    ok = subprocess.run(["gpgv", "--keyring", str(keyring), str(base / "Release.gpg"), str(base / "Release")],
                        capture_output=True, check=False)
    assert ok.returncode == 0, ok.stderr
    # the armored gpgkey is the same key, and the fingerprint file names it
    fprs = set()
    for name in ("gpgkey", "nvidia-container-toolkit-keyring.gpg"):
        out = subprocess.run(["gpg", "--homedir", str(tmp_path), "--show-keys", "--with-colons", str(built["out"] / name)],
                             capture_output=True, text=True, check=True).stdout
        fprs |= {line.split(":")[9] for line in out.splitlines() if line.startswith("fpr:")}
    fpr_file = (built["out"] / "nvidia-container-toolkit-keyring.fingerprint").read_text().strip()
    assert fprs == {fpr_file} == {built["stamp"]["fingerprint"]}
    assert "BEGIN PGP PUBLIC KEY BLOCK" in (built["out"] / "gpgkey").read_text()


@needs_tools
def test_debs_are_real_and_say_fixture(built):
    deb = built["out"] / "stable" / "deb" / "amd64" / "nvidia-container-toolkit-base_1.17.8-1_amd64.deb"
    fields = br.parse_stanza(subprocess.run(["dpkg-deb", "-f", str(deb)], capture_output=True, text=True, check=True).stdout)
    assert fields["Package"] == "nvidia-container-toolkit-base" and fields["Version"] == "1.17.8-1"
    assert fields["Description"].startswith("FIXTURE:") and fields["Maintainer"].startswith("dlbox.stack test fixtures")
    listing = subprocess.run(["dpkg-deb", "-c", str(deb)], capture_output=True, text=True, check=True).stdout
    assert "-rwxr-xr-x root/root" in listing and "./usr/bin/nvidia-ctk" in listing
    assert "./usr/share/dlbox-fixture/nvidia-container-toolkit-base" in listing
    conffiles = subprocess.run(["dpkg-deb", "-I", str(deb), "conffiles"], capture_output=True, text=True, check=True).stdout
    assert "/etc/nvidia-container-runtime/config.toml" in conffiles
    readme = (built["out"] / "FIXTURE-README").read_text()
    assert readme.startswith("FIXTURE:") and built["stamp"]["fingerprint"] in readme


@needs_tools
def test_unchanged_spec_is_not_rebuilt_and_force_is_reproducible(built):
    out = built["out"]
    before = {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()}
    packages = (out / "stable/deb/amd64/Packages").read_bytes()
    again = br.build(SPECS / "container-toolkit.yml", out, key_dir=built["keys"], log=_quiet)
    assert again == built["stamp"]
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()} == before
    # a forced rebuild with the same key makes byte-identical .debs and indexes
    forced = br.build(SPECS / "container-toolkit.yml", out, key_dir=built["keys"], force=True, log=_quiet)
    assert forced["fingerprint"] == built["stamp"]["fingerprint"]
    assert (out / "stable/deb/amd64/Packages").read_bytes() == packages


@needs_tools
def test_refuses_to_replace_a_foreign_directory(tmp_path):
    (tmp_path / "precious.txt").write_text("keep me")
    with pytest.raises(RuntimeError, match="refusing"):
        br.build(SPECS / "container-toolkit.yml", tmp_path, log=_quiet)
    assert (tmp_path / "precious.txt").read_text() == "keep me"


@needs_tools
def test_dists_layout_and_repack(tmp_path):
    """A dists/ repository; repack keeps the payload and renames the package (no network)."""
    src_root = tmp_path / "src"
    (src_root / "DEBIAN").mkdir(parents=True)
    (src_root / "usr/bin").mkdir(parents=True)
    (src_root / "usr/bin/engine").write_text("#!/bin/sh\necho engine\n")
    (src_root / "DEBIAN/control").write_text("Package: engine.io\nVersion: 1.0-1\nArchitecture: all\nMaintainer: x <x@y>\n"
                                             "Depends: libc6\nConflicts: engine-ce\nDescription: real engine\n")
    (src_root / "DEBIAN/postinst").write_text("#!/bin/sh\necho configured\n")
    (src_root / "DEBIAN/postinst").chmod(0o755)
    cache = tmp_path / "cache"
    cache.mkdir()
    source = cache / "engine.io_1.0-1_all.deb"
    subprocess.run(["dpkg-deb", "--root-owner-group", "--build", str(src_root), str(source)], capture_output=True, check=True)
    pkg = br.resolve_packages(br.normalise_spec(br.load_spec(_write(tmp_path, "s.yml", """
name: t
layout: dists
suites: [{suite: bookworm, vars: {os_tag: debian.12}}]
components: [stable]
packages:
  - {name: engine-ce, version: "5:1.0-1~@os_tag@~@codename@", repack: engine.io, depends: engine-cli, description: repacked}
"""))))[0]
    dest = tmp_path / "engine-ce.deb"
    control = br.repack_deb(pkg, source, dest).decode()
    fields = br.parse_stanza(subprocess.run(["dpkg-deb", "-f", str(dest)], capture_output=True, text=True, check=True).stdout)
    assert fields["Package"] == "engine-ce" and fields["Version"] == "5:1.0-1~debian.12~bookworm"
    assert fields["Depends"] == "libc6, engine-cli" and "Conflicts" not in fields
    assert br.parse_stanza(control)["Package"] == "engine-ce"
    listing = subprocess.run(["dpkg-deb", "-c", str(dest)], capture_output=True, text=True, check=True).stdout
    assert "./usr/bin/engine" in listing
    assert "echo configured" in subprocess.run(["dpkg-deb", "-I", str(dest), "postinst"], capture_output=True, text=True,
                                               check=True).stdout


@needs_tools
def test_dists_layout_build(tmp_path):
    spec = _write(tmp_path, "d.yml", """
name: d
layout: dists
suites: [bookworm, trixie]
components: [stable]
architectures: [amd64, arm64]
packages:
  - {name: meta, version: "1.0-1", description: a meta}
  - {name: tool, version: "2.0-1~@codename@", architecture: amd64, description: a tool}
""")
    out = tmp_path / "out"
    stamp = br.build(spec, out, key_dir=tmp_path / "keys", log=_quiet, now=0)
    assert (out / "dists/bookworm/InRelease").exists() and (out / "dists/trixie/Release.gpg").exists()
    amd = (out / "dists/trixie/stable/binary-amd64/Packages").read_text()
    arm = (out / "dists/trixie/stable/binary-arm64/Packages").read_text()
    assert "Package: meta" in amd and "Package: meta" in arm and "Package: tool" not in arm
    assert "Filename: pool/stable/t/tool/tool_2.0-1~trixie_amd64.deb" in amd
    release = br.parse_stanza((out / "dists/bookworm/Release").read_text().split("MD5Sum:")[0])
    assert release["Suite"] == release["Codename"] == "bookworm" and release["Components"] == "stable"
    assert release["Architectures"] == "amd64 arm64" and release["Date"] == "Thu, 01 Jan 1970 00:00:00 UTC"
    assert json.loads((out / br.STAMP_FILE).read_text())["fingerprint"] == stamp["fingerprint"]


@needs_tools
def test_builders_side_by_side_share_one_key(tmp_path):
    """Molecule runs scenarios at once from an empty key folder, and specs share a key (cuda-*): every builder
    must sign with the one key that is saved, and a second builder of the same folder keeps the first's build.
    Before the locks, each made its own key and the last saved won (CI at stop 40: server and gpu_host)."""
    specs = [_write(tmp_path, f"{name}.yml", f"name: {name}\nlayout: flat\nkey: shared\n"
                    f"packages: [{{name: p-{name}, version: '1.0-1', description: one}}]\n") for name in ("a", "b", "c")]
    keys = tmp_path / "keys"
    procs = [subprocess.Popen([sys.executable, str(APTREPO / "build_repo.py"), str(spec), str(tmp_path / "out" / spec.stem),
                               "--key-dir", str(keys)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for spec in specs + specs]
    results = [proc.communicate(timeout=120) + (proc.returncode,) for proc in procs]
    assert all(rc == 0 for _out, _err, rc in results), results
    saved = (keys / "shared" / "fingerprint").read_text().strip()
    for spec in specs:
        out = tmp_path / "out" / spec.stem
        assert json.loads((out / br.STAMP_FILE).read_text())["fingerprint"] == saved
        assert (out / f"{spec.stem}-keyring.fingerprint").read_text().strip() == saved
    # of the two builders of each folder, one built it and the other found it unchanged
    assert sum("unchanged" in out for out, _err, _rc in results) == len(specs), results


# ----------------------------------------------------------------------------------------------
# serve.py
# ----------------------------------------------------------------------------------------------
def test_serve_loopback_only(tmp_path):
    (tmp_path / "Release").write_text("Origin: x\n")
    (tmp_path / ".fixture-build.json").write_text("{}")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.deb").write_text("deb")
    server, thread = serve.start(tmp_path)
    try:
        url = serve.url_of(server)
        assert url.startswith("http://127.0.0.1:")
        assert urllib.request.urlopen(url + "Release", timeout=5).read() == b"Origin: x\n"
        assert urllib.request.urlopen(url + "sub/./a.deb", timeout=5).read() == b"deb"
        with pytest.raises(urllib.error.HTTPError):
            urllib.request.urlopen(url + ".fixture-build.json", timeout=5)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.10", "example.org", "::"])
def test_serve_refuses_other_addresses(tmp_path, host):
    with pytest.raises(ValueError, match="loopback"):
        serve.make_server(tmp_path, 0, host)


@pytest.mark.parametrize("spec", ["cuda-debian12.yml", "cuda-ubuntu2204.yml", "cuda-ubuntu2404.yml", "cuda-ubuntu2604.yml"])
def test_no_fabric_manager_at_the_590_fixture_build(spec):
    versions = [p["version"] for p in _resolved(spec) if p["name"] == "nvidia-fabricmanager"]
    assert versions and "590.48.01-1" not in versions


def test_a_driver_version_can_be_made_to_fail():
    (pkg,) = [p for p in _resolved("cuda-debian12.yml") if p["name"] == "nvidia-kernel-open-dkms" and p["version"] == "595.71.05-1"]
    assert "/etc/dlbox-fixture/fail-postinst-595.71.05" in pkg["postinst"] and "exit 1" in pkg["postinst"]
