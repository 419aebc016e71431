# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""tools/data_refresh.py on the RECORDED copies of the indexes (tests/fixtures/indexes), never the live ones."""

from __future__ import annotations

import datetime
import io
import shutil

import data_refresh
import pytest
import yaml
from ansible_collections.dlbox.stack.plugins.plugin_utils import compat_data

from conftest import FIXTURES

BEFORE = FIXTURES / "compat-before.yml"
TODAY = datetime.date.today().isoformat()


def _args(data, *extra, ubuntu=FIXTURES / "ubuntu"):
    return data_refresh.parse_args([
        "--data", str(data),
        "--ubuntu-mirror", str(ubuntu),
        "--debian-mirror", str(FIXTURES / "debian"),
        "--debian-security-mirror", str(FIXTURES / "debian-security"),
        "--pypi-recorded", str(FIXTURES / "pypi"),
        *extra,
    ])


def _run(data, *extra, **kwargs):
    out = io.StringIO()
    status = data_refresh.run(_args(data, *extra, **kwargs), out)
    return status, out.getvalue()


@pytest.fixture
def data_copy(tmp_path):
    path = tmp_path / "compat.yml"
    shutil.copyfile(BEFORE, path)
    return path


def _section(path):
    return compat_data._dates_to_text(yaml.safe_load(path.read_text())[data_refresh.SECTION])  # pylint: disable=protected-access


def _flavours(section, os_id, branch, part="branches"):
    for entry in section["distros"][os_id]["distro"].get(part) or []:
        if entry["branch"] == branch:
            return entry["flavours"]
    return {}


def test_report_names_the_transitional_branch_and_what_is_new(data_copy):
    status, report = _run(data_copy)
    assert status == 0
    # a branch mapping that changed: 535-server now installs 580-server on Ubuntu 22.04
    assert "~ ubuntu-22.04 distro 535 server: 535.288.01-0ubuntu0.22.04.1 -> 535.309.01-0ubuntu0.22.04.2; branch mapping: installs 535 -> 580" in report
    # a flavour the archive does not have any more
    assert "- ubuntu-22.04 distro 545 server: was 545.29.06" in report
    # new entries, each saying which branch a transitional package really installs
    assert "+ ubuntu-22.04 distro 535 desktop: 535.309.01 (jammy-updates), transitional: installs 580 via nvidia-driver-580" in report
    assert "+ debian-12 distro 535 desktop: 535.309.01 (bookworm-security)" in report
    # driver versions for a human to add to driver_branches
    assert "? branch 580: 580.178.04 (ubuntu-22.04, ubuntu-24.04) not in driver_branches.versions" in report
    # PyPI findings against the frozen data
    assert "+ torch 2.14.1: new patch of 2.14 (add to its patches)" in report
    assert "~ torch 2.15.0: PyPI pins cuda-toolkit==13.2.2; data pypi_default cu130 is CUDA 13.0" in report
    assert "~ tensorflow 2.21.0 [and-cuda] nvidia-nccl-cu12: PyPI '<3.0,>=2.27.7', data and_cuda.nccl '>=2.25.1,<3.0'" in report
    assert "+ cuda-toolkit: 13.0.3 on PyPI, not in cuda.releases[].updates" in report
    assert "not written (run with --write to apply)" in report
    assert data_copy.read_text() == BEFORE.read_text()


def test_check_exits_1_on_differences_and_never_writes(data_copy):
    status = _run(data_copy, "--check", "--write")[0]
    assert status == 1
    assert data_copy.read_text() == BEFORE.read_text()


def test_write_rewrites_only_the_section_and_is_idempotent(data_copy, tmp_path):
    report_file = tmp_path / "report.txt"
    status, report = _run(data_copy, "--write", "--report", str(report_file))
    assert status == 0
    assert f"written to {data_copy}" in report
    assert report_file.read_text() == report
    text = data_copy.read_text()
    before = BEFORE.read_text()
    # everything before the section's comment block and the whole next section (with its comment) are untouched
    rule = "# " + "-" * 99 + "\n"
    head = before[:before.index(rule + "# FIXTURE distro_drivers")]
    tail = before[before.index("\n" + rule + "# A section after"):]
    assert text.startswith(head)
    assert text.endswith(tail)
    assert "MACHINE-MAINTAINED" in text

    section = _section(data_copy)
    assert section["date"] == TODAY
    server = _flavours(section, "ubuntu-22.04", 535)["server"]
    assert server["pulls_branch"] == 580 and server["pulls"] == "nvidia-driver-580-server"
    assert server["headless"] == "nvidia-headless-535-server"
    assert _flavours(section, "ubuntu-22.04", 580)["server"]["pulls_branch"] is None
    assert "server" not in _flavours(section, "ubuntu-22.04", 545)
    debian = _flavours(section, "debian-12", 535)
    assert debian["desktop"]["suite"] == "bookworm-security"
    assert debian["tesla"]["package"] == "nvidia-tesla-535-driver"
    # backports are kept apart (apt takes them only when asked)
    assert _flavours(section, "debian-12", 470, "backports")["tesla"]["suite"] == "bookworm-backports"
    assert _flavours(section, "debian-12", 470)["tesla"]["suite"] == "bookworm"
    trixie = section["distros"]["debian-13"]["distro"]
    assert trixie["cuda_toolkit"]["version"] == "12.4.1" and trixie["cuda_toolkit"]["nvcc"] == "12.4.131"
    assert trixie["nccl"]["version"] == "2.22.3"
    assert section["distros"]["debian-12"]["distro"]["nccl"] is None
    # the nvidia_repo entry a human wrote is kept; one is added where there was none
    assert section["distros"]["ubuntu-22.04"]["nvidia_repo"]["note"] == "kept as it is by the refresh"
    assert section["distros"]["debian-13"]["nvidia_repo"]["verifiable"] is False

    status, report = _run(data_copy, "--write")
    assert "differences: 0 in distro_drivers" in report and f"{data_refresh.SECTION}: unchanged" in report
    assert data_copy.read_text() == text
    assert _run(data_copy, "--check")[0] == 1  # the PyPI and driver_branches findings are still there for a human


def test_written_section_has_the_shape_the_loader_checks(data_copy):
    _run(data_copy, "--write")
    problems = []
    compat_data._shape_problems(_section(data_copy), compat_data.DISTRO_DRIVERS, "distro_drivers", problems)  # pylint: disable=protected-access
    assert problems == []
    section = _section(data_copy)
    section["distros"]["ubuntu-22.04"]["distro"]["branches"][0]["flavours"]["desktop"]["pulls_branch"] = "580"
    compat_data._shape_problems(section, compat_data.DISTRO_DRIVERS, "distro_drivers", problems)  # pylint: disable=protected-access
    assert problems and "pulls_branch" in problems[0]


def test_an_archive_that_cannot_be_read_keeps_its_entries(data_copy, tmp_path):
    empty = tmp_path / "no-ubuntu-here"
    empty.mkdir()
    status, report = _run(data_copy, "--write", ubuntu=empty)
    assert status == 0
    assert "== Not read" in report
    assert "ubuntu-22.04: no index could be read; its entry is kept as it was" in report
    section = _section(data_copy)
    assert _flavours(section, "ubuntu-22.04", 535)["server"]["version"] == "535.288.01"  # as before
    assert _flavours(section, "debian-12", 535)["desktop"]["version"] == "535.309.01"  # refreshed


def test_unknown_archive_name_is_refused(data_copy, capsys):
    data_copy.write_text(data_copy.read_text().replace("archive: debian-security,", "archive: debian-securty,"))
    assert data_refresh.main([str(a) for a in ("--data", data_copy, "--pypi-recorded", FIXTURES / "pypi",
                                               "--ubuntu-mirror", FIXTURES / "ubuntu", "--debian-mirror", FIXTURES / "debian")]) == 2
    assert "unknown archive 'debian-securty'" in capsys.readouterr().err


def test_data_without_the_section_is_refused(tmp_path, capsys):
    path = tmp_path / "compat.yml"
    path.write_text("schema_version: 1\n")
    assert data_refresh.main(["--data", str(path)]) == 2
    assert "no 'distro_drivers.distros' section" in capsys.readouterr().err


def _stanza(name, version, depends=""):
    return ({"Package": name, "Version": version, "Depends": depends}, "jammy-updates")


def test_transitional_chains_are_followed_to_the_branch_installed():
    packages = dict([
        ("nvidia-driver-440-server", _stanza("nvidia-driver-440-server", "450.248.02-0ubuntu1", "nvidia-driver-450-server")),
        ("nvidia-driver-450-server", _stanza("nvidia-driver-450-server", "450.248.02-0ubuntu1", "nvidia-driver-470")),
        ("nvidia-driver-470", _stanza("nvidia-driver-470", "470.256.02-0ubuntu1", "nvidia-dkms-470, nvidia-kernel-common-470")),
        ("nvidia-driver-520-open", _stanza("nvidia-driver-520-open", "525.147.05-0ubuntu1", "nvidia-driver-535")),
    ])
    branches = data_refresh.ubuntu_branches(packages)
    entry = branches[440]["server"]
    assert entry["pulls_branch"] == 470 and entry["pulls"] == "nvidia-driver-470"
    assert branches[470]["desktop"]["pulls_branch"] is None and "pulls" not in branches[470]["desktop"]
    # a target the archive does not carry is not followed
    assert branches[520]["desktop-open"]["pulls_branch"] is None


@pytest.mark.parametrize("kind, name, version, expected", [
    ("cuda_toolkit", "nvidia-cuda-toolkit", "12.4.131~12.4.1-2", {"version": "12.4.1", "nvcc": "12.4.131"}),
    ("cuda_toolkit", "nvidia-cuda-toolkit", "11.5.1-1ubuntu1", {"version": "11.5.1", "nvcc": "11.5.1"}),
    ("nccl", "libnccl2", "2.22.3-1-1", {"version": "2.22.3"}),
    ("cudnn", "nvidia-cudnn", "9.0.0.312~cuda12build1", {"version": "9.0.0.312", "cuda": "12"}),
    ("cudnn", "nvidia-cudnn", "8.2.4.15~cuda11.4", {"version": "8.2.4.15", "cuda": "11.4"}),
])
def test_library_versions_are_read_from_the_package_version(kind, name, version, expected):
    entry = data_refresh.library_entry(kind, {name: ({"Package": name, "Version": version}, "trixie")})
    assert {k: entry[k] for k in expected} == expected
    assert data_refresh.library_entry(kind, {}) is None


def test_canonicals_cuda_toolkit_wins_over_nvidia_cuda_toolkit_and_names_its_nvcc_and_home():
    """Ubuntu 26.04's multiverse has both: Debian's repackaged nvidia-cuda-toolkit 12.4.1 and Canonical's packaging of
    NVIDIA's CUDA, cuda-toolkit 13.1.1 (source cuda-meta-13-1) whose compiler is cuda-nvcc-13-1 in /usr/local/cuda-13.1.
    Versions as in http://archive.ubuntu.com/ubuntu/dists/resolute/multiverse/binary-amd64/Packages.xz (2026-12-06)."""
    packages = {
        "nvidia-cuda-toolkit": ({"Package": "nvidia-cuda-toolkit", "Version": "12.4.131~12.4.1-8"}, "resolute"),
        "cuda-toolkit": ({"Package": "cuda-toolkit", "Version": "13.1.1-0ubuntu1", "Depends": "cuda-toolkit-13-1 (>= 13.1.1)"},
                         "resolute"),
        "cuda-toolkit-13-1": ({"Package": "cuda-toolkit-13-1", "Version": "13.1.1-0ubuntu1"}, "resolute"),
        "cuda-nvcc-13-1": ({"Package": "cuda-nvcc-13-1", "Version": "13.1.115-0ubuntu1"}, "resolute"),
    }
    # the versioned meta of that X.Y (what the unversioned cuda-toolkit depends on) is the package the data names
    entry = data_refresh.library_entry("cuda_toolkit", packages)
    assert entry == {"package": "cuda-toolkit-13-1", "package_version": "13.1.1-0ubuntu1", "suite": "resolute", "version": "13.1.1",
                     "nvcc": "13.1.115", "home": "/usr/local/cuda-13.1"}
    assert any(p.match("cuda-toolkit-13-1") for p in data_refresh._USED_NAMES)  # pylint: disable=protected-access
    del packages["cuda-toolkit-13-1"]   # not read: the unversioned meta, as before
    assert data_refresh.library_entry("cuda_toolkit", packages)["package"] == "cuda-toolkit"
    del packages["cuda-nvcc-13-1"]   # no compiler package read: nvcc's version is the release's
    assert data_refresh.library_entry("cuda_toolkit", packages)["nvcc"] == "13.1.1"
    del packages["cuda-toolkit"]     # Debian, Ubuntu up to 24.04: nvidia-cuda-toolkit, no home (its nvcc is /usr/bin/nvcc)
    assert "home" not in data_refresh.library_entry("cuda_toolkit", packages)
    # the index filter keeps the compiler's stanza (merged_packages reads only the names it uses)
    assert any(p.match("cuda-nvcc-13-1") for p in data_refresh._USED_NAMES)  # pylint: disable=protected-access


def test_replace_section_appends_when_absent_and_keeps_one_blank_line_before_the_next():
    rendered = "distro_drivers:\n  grade: P\n"
    assert data_refresh.replace_section("a: 1\n", rendered) == "a: 1\n\n" + rendered
    text = "a: 1\n\n# old header\ndistro_drivers:\n  grade: U\n\n\n# next\nb: 2\n"
    assert data_refresh.replace_section(text, rendered) == "a: 1\n\n" + rendered + "\n# next\nb: 2\n"


def test_wrapped_flow_stays_within_the_line_limit():
    entry = {"package": "nvidia-driver-580-server-open", "version": "580.178.04", "package_version": "580.178.04-0ubuntu0.22.04.1",
             "suite": "jammy-updates", "pulls_branch": None, "headless": "nvidia-headless-580-server-open"}
    lines = data_refresh._wrapped_flow("              server-open: ", entry)  # pylint: disable=protected-access
    assert len(lines) == 2 and all(len(line) <= 160 for line in lines)
    assert yaml.safe_load("\n".join(lines))["server-open"] == entry
