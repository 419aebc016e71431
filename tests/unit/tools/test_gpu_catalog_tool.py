# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""tools/gpu_catalog.py on recorded copies (tests/fixtures/catalog/, see SOURCES.md); never the live archive.

The fetch path runs against a local folder laid out like an archive, holding .deb files built here around the
recorded lists (dpkg-deb), so the same code that reads Ubuntu's and Debian's archives is exercised offline.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
# data/*.yml read as the collection reads them (plugin_utils.compat_data, fitness): libyaml where PyYAML has it
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
FIXTURES = ROOT / "tests" / "fixtures" / "catalog"
LIST_595 = FIXTURES / "supported-gpus-595.99.02.json"
LIST_580 = FIXTURES / "supported-gpus-580.178.04.json"
PCI = FIXTURES / "pci-ids-10de.txt"


@pytest.fixture(scope="module")
def tool():
    spec = importlib.util.spec_from_file_location("gpu_catalog_tool", ROOT / "tools" / "gpu_catalog.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def built(tool):
    lists = {595: tool.parse_supported_gpus(LIST_595.read_text()), 580: tool.parse_supported_gpus(LIST_580.read_text())}
    _version, _date, section = tool.nvidia_pci_section(PCI.read_text())
    chips = yaml.load((ROOT / "data" / "compat.yml").read_text(), Loader=LOADER)["gpu_chips"]  # noqa: S506 - a SafeLoader
    return tool.build_catalog(lists, tool.parse_pci_devices(section), chips, {"test": True}, "2026-11-30")


def test_packages_index_picks_each_branch(tool):
    stanzas = tool.parse_packages((FIXTURES / "noble-updates-restricted-Packages.excerpt").read_text())
    packages = tool.kernel_common_packages(stanzas)
    assert {b: s["Version"] for b, s in packages.items()} == {
        580: "580.178.04-0ubuntu0.24.04.1", 590: "590.48.01-0ubuntu0.24.04.5", 595: "595.99.02-0ubuntu0.24.04.1"}
    assert packages[595]["SHA256"] == "102b6ca64d2782163409e786b423361778d1f94e13a71c5649e8ba328fe5e6c2"


def test_newer_version_of_one_branch_wins(tool):
    stanzas = [{"Package": "nvidia-kernel-common-580", "Version": v} for v in ("580.95.05-0ubuntu1", "580.178.04-0ubuntu1", "580.9-1")]
    assert tool.kernel_common_packages(stanzas)[580]["Version"] == "580.178.04-0ubuntu1"


def test_supported_gpus_shape_is_checked(tool):
    assert len(tool.parse_supported_gpus(LIST_595.read_text())) == 2320
    with pytest.raises(tool.CatalogError, match="expected"):
        tool.parse_supported_gpus('{"gpus": []}')
    with pytest.raises(tool.CatalogError, match="without devid"):
        tool.parse_supported_gpus('{"chips": [{"devid": "2330"}]}')
    assert tool.legacy_branches(json.loads(LIST_595.read_text())["chips"])[:2] == [580, 470]


def test_pci_section_and_chips(tool):
    version, date, section = tool.nvidia_pci_section(PCI.read_text())
    assert (version, date) == (None, None)  # the pinned section keeps its version in its own header comment
    devices = tool.parse_pci_devices(section)
    assert len(devices) == 1992
    assert devices["2684"] == "AD102 [GeForce RTX 4090]"
    whole = "#\tVersion: 2026.10.24\n#\tDate:    2026-10-24 03:15:02\n10b5  PLX\n\t8747  switch\n" + section + "10df  Emulex\n\tf100  x\n"
    version, date, again = tool.nvidia_pci_section(whole)
    assert (version, date, again) == ("2026.10.24", "2026-10-24", section)
    with pytest.raises(tool.CatalogError, match="no NVIDIA"):
        tool.nvidia_pci_section("10b5  PLX\n")


def test_summary_of_the_recorded_inputs(built):
    catalog, summary = built
    assert summary["entries"] == {"580": 2312, "595": 2320}
    assert summary["devices"] == 1172
    assert summary["chips"] == 47
    assert summary["unplaced_current"] == []  # every device R470 or newer supports has a known chip
    assert set(summary["unplaced_legacy"]) == {"390.xx", "340.xx", "304.xx", "173.14.xx", "96.43.xx", "71.86.xx"}
    assert len(summary["legacy_with_kernelopen"]) == 162  # 595's Maxwell..Volta entries flagged kernelopen
    assert catalog["devices"]["2330"]["name"] == "NVIDIA H100 80GB HBM3"
    assert catalog["devices"]["25b6"]["variants"][0]["name"] in ("NVIDIA A2", "NVIDIA A16")


def test_render_is_yamllint_shaped_and_round_trips(tool, built):
    catalog, _summary = built
    text = tool.render_catalog(catalog)
    assert max(len(line) for line in text.splitlines()) <= 160
    # the pure-Python SafeLoader here: the catalog must read the same where PyYAML has no libyaml
    assert yaml.safe_load(text)["devices"] == json.loads(json.dumps(catalog["devices"]))


def test_local_copies_reproduce_the_shipped_devices(tool, tmp_path, capsys):
    out = tmp_path / "gpu_catalog.yml"
    argv = ["--supported-gpus", "595=%s" % LIST_595, "--supported-gpus", "580=%s" % LIST_580, "--pci-ids", str(PCI),
            "--output", str(out), "--pci-output", str(tmp_path / "pci.txt"), "--date", "2026-11-30"]
    assert tool.main(argv) == 0
    printed = capsys.readouterr().out
    assert "entries per list: 580: 2312, 595: 2320" in printed and "devices: 1172; chips placed: 47" in printed
    shipped = yaml.load((ROOT / "data" / "gpu_catalog.yml").read_text(), Loader=LOADER)  # noqa: S506 - a SafeLoader
    assert yaml.load(out.read_text(), Loader=LOADER)["devices"] == shipped["devices"]  # noqa: S506 - a SafeLoader
    # and as text, line for line (the one-line records come from libyaml's emitter where PyYAML has it)
    assert out.read_text().split("\ndevices:\n", 1)[1] == (ROOT / "data" / "gpu_catalog.yml").read_text().split("\ndevices:\n", 1)[1]
    assert tool.main(argv + ["--check"]) == 0
    out.write_text(out.read_text().replace("NVIDIA H100 80GB HBM3", "H100"))
    assert tool.main(argv + ["--check"]) == 1


def test_bad_local_list_is_refused(tool, tmp_path, capsys):
    assert tool.main(["--supported-gpus", "latest=%s" % LIST_595, "--pci-ids", str(PCI), "--output", str(tmp_path / "x")]) == 2
    assert "BRANCH=PATH" in capsys.readouterr().err


def _deb(tmp, package, member, payload):
    root = tmp / package
    (root / "DEBIAN").mkdir(parents=True)
    (root / "DEBIAN" / "control").write_text(
        "Package: %s\nVersion: 1.0-1\nArchitecture: all\nMaintainer: test <t@example.invalid>\nDescription: fixture\n" % package)
    target = root / member
    target.parent.mkdir(parents=True)
    target.write_bytes(payload)
    deb = tmp / ("%s.deb" % package)
    subprocess.run(["dpkg-deb", "--root-owner-group", "-Znone", "--build", str(root), str(deb)], check=True, capture_output=True)
    return deb


def _archive(base, suite, component, arch, debs):
    stanzas = []
    for package, version, deb in debs:
        rel = "pool/%s/%s" % (component, deb.name)
        (base / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(deb, base / rel)
        blob = deb.read_bytes()
        stanzas.append("Package: %s\nVersion: %s\nFilename: %s\nSize: %d\nSHA256: %s\n"
                       % (package, version, rel, len(blob), hashlib.sha256(blob).hexdigest()))
    index = base / "dists" / suite / component / ("binary-%s" % arch) / "Packages"
    index.parent.mkdir(parents=True, exist_ok=True)
    index.write_text("\n".join(stanzas))


@pytest.mark.skipif(shutil.which("dpkg-deb") is None, reason="dpkg-deb is needed to build the fixture packages")
def test_fetch_path_on_a_local_archive(tool, tmp_path, capsys):
    """The archive reader (tools/dlboxdata) finds the newest branch, follows its legacy branch, checks SHA256."""
    work = tmp_path / "debs"
    work.mkdir()
    debs = []
    for branch, path in ((595, LIST_595), (580, LIST_580)):
        package = "nvidia-kernel-common-%d" % branch
        debs.append((package, "%d.1-0ubuntu1" % branch,
                     _deb(work, package, "usr/share/doc/%s/supported-gpus.json" % package, path.read_bytes())))
    debs.append(("nvidia-kernel-common-470", "470.1-0ubuntu1", _deb(work, "nvidia-kernel-common-470", "usr/share/doc/x", b"x")))
    _archive(tmp_path / "ubuntu", "noble-updates", "restricted", "amd64", debs)
    _archive(tmp_path / "debian", "testing", "main", "all",
             [("pci.ids", "0.0~2026.10.24-1", _deb(work, "pci.ids", "usr/share/misc/pci.ids", PCI.read_bytes()))])
    out = tmp_path / "gpu_catalog.yml"
    assert tool.main(["--ubuntu-mirror", str(tmp_path / "ubuntu"), "--debian-mirror", str(tmp_path / "debian"),
                      "--output", str(out), "--pci-output", str(tmp_path / "pci.txt"), "--date", "2026-11-30"]) == 0
    catalog = yaml.load(out.read_text(), Loader=LOADER)  # noqa: S506 - a SafeLoader
    assert [s["branch"] for s in catalog["sources"]["supported_gpus"]] == ["595", "580"]  # 470 not fetched
    assert catalog["sources"]["pci_ids"]["version"] == "0.0~2026.10.24-1"
    assert len(catalog["devices"]) == 1172
    assert (tmp_path / "pci.txt").read_text().count("\n\t2684  ") == 1
    # a tampered package is refused by its index checksum
    deb = tmp_path / "ubuntu" / "pool" / "restricted" / "nvidia-kernel-common-595.deb"
    deb.write_bytes(deb.read_bytes() + b"x")
    assert tool.main(["--ubuntu-mirror", str(tmp_path / "ubuntu"), "--debian-mirror", str(tmp_path / "debian"),
                      "--output", str(out), "--pci-output", str(tmp_path / "pci.txt")]) == 2
    assert "SHA256" in capsys.readouterr().err
