# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ubuntu 26.04 (issue 53): what data/compat.yml and the golden plans say, against a REAL trimmed index of the
resolute archive (tests/fixtures/kernel/ubuntu2604/README.md says where it was read)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ansible_collections.dlbox.stack.plugins.plugin_utils.compat_data import load_compat, load_gpu_index
from ansible_collections.dlbox.stack.plugins.plugin_utils.stack_resolver import resolve

ROOT = Path(__file__).resolve().parents[4]
INDEX = ROOT / "tests" / "fixtures" / "kernel" / "ubuntu2604" / "Packages-resolute-trimmed"
GOLDEN = ROOT / "tests" / "unit" / "golden"


def _index():
    stanzas = {}
    for block in INDEX.read_text(encoding="utf-8").strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines())
        stanzas[fields["Package"]] = fields
    return stanzas


INDEXED = _index()
DATA = load_compat()
ENTRY = DATA["os"]["distros"]["ubuntu-26.04"]
ARCHIVE = DATA["distro_drivers"]["distros"]["ubuntu-26.04"]["distro"]


def test_os_entry_is_supported_with_the_archives_python():
    assert ENTRY["supported"] is True and ENTRY["repo_distro"] == "ubuntu2604"
    assert INDEXED["python3"]["Version"].startswith(ENTRY["python"] + ".")       # python3 3.14.3-0ubuntu2


def test_apt_verifies_with_gpgv_and_sqv_is_not_in_main():
    """apt 3.2 on 26.04 depends on gpgv; sqv is in universe only (the issue's "apt verifies with sqv" is not so)."""
    assert "gpgv" in INDEXED["apt"]["Depends"].split(", ") and "sqv" not in INDEXED["apt"]["Depends"]
    assert INDEXED["sqv"]["X-Dlbox-Pocket"].endswith("/universe")


def test_distro_cuda_toolkit_is_canonicals_as_in_the_index():
    """The data names the versioned meta cuda-toolkit-13-1 (what the unversioned cuda-toolkit depends on), so the cuda
    role installs exactly CUDA 13.1 and an archive move of cuda-toolkit to another X.Y never moves it."""
    toolkit = ARCHIVE["cuda_toolkit"]
    assert toolkit["package"] == "cuda-toolkit-13-1"
    assert INDEXED["cuda-toolkit"]["Depends"].startswith("cuda-toolkit-13-1 ")
    assert INDEXED["cuda-toolkit-13-1"]["Version"] == toolkit["package_version"]
    assert INDEXED["cuda-toolkit-13-1"]["Source"].startswith("cuda-meta-13-1")
    assert INDEXED["cuda-nvcc-13-1"]["Version"].startswith(toolkit["nvcc"] + "-")
    assert toolkit["home"] == "/usr/local/cuda-%s" % ".".join(toolkit["version"].split(".")[:2])


def _templates():
    names = DATA["driver_package_names"]["distro"]["ubuntu"]
    for profile, paths in names["packages"].items():
        for signing, templates in paths.items():
            yield profile, signing, templates, names


@pytest.mark.parametrize("branch, kernel_modules", [(580, "open"), (580, "proprietary"), (595, "open"), (595, "proprietary"),
                                                    (620, "open")])
def test_every_driver_set_of_the_data_is_in_the_archive(branch, kernel_modules):
    """The data's templates, filled as the plan fills them (generic flavour), name packages resolute really has."""
    assert any(b["branch"] == branch for b in ARCHIVE["branches"])
    for profile, signing, templates, names in _templates():
        server = names["server_suffix"] if profile == "server" else ""
        fields = {"branch": branch, "server": server, "open": "-open" if kernel_modules == "open" else "", "flavour": "generic"}
        fields["kernel_pkg"] = names["kernel_package"][kernel_modules].format(**fields)
        for template in templates:
            name = template.format(**fields)
            assert name in INDEXED, "%s (%s %s %s) is not in resolute" % (name, profile, signing, kernel_modules)


@pytest.mark.parametrize("golden", ["rtx4090-ubuntu2604", "h100-pcie-ubuntu2604", "hgx-h100-nvswitch-ubuntu2604"])
def test_golden_plans_name_packages_the_archive_has(golden):
    plan = json.loads((GOLDEN / ("%s.json" % golden)).read_text(encoding="utf-8"))
    stack = plan["stack"]
    names = list(stack["driver"]["packages"]) + list((stack.get("fabric_manager") or {}).get("packages") or [])
    assert names and all(n in INDEXED for n in names), names
    assert stack["python"]["version"] == "3.14"


def test_r620_has_no_proprietary_modules_as_the_data_says():
    """R620 (found by the 2026-12-06 refresh): resolute's nvidia-driver-620 and -620-server only depend on their -open
    packages, and no proprietary signed module exists, as kernel_modules.proprietary_removed_from_branch (620) says."""
    assert DATA["kernel_modules"]["proprietary_removed_from_branch"] == 620
    assert INDEXED["nvidia-driver-620"]["Depends"] == "nvidia-driver-620-open"
    assert INDEXED["nvidia-driver-620-server"]["Depends"] == "nvidia-driver-620-server-open"
    assert not any(n.startswith("linux-modules-nvidia-620-") and "-open-" not in n for n in INDEXED)
    flavours = next(b for b in ARCHIVE["branches"] if b["branch"] == 620)["flavours"]
    assert flavours["desktop-open"]["package_version"] == INDEXED["nvidia-driver-620-open"]["Version"]
    assert flavours["server-open"]["package_version"] == INDEXED["nvidia-driver-620-server-open"]["Version"]


HGX = {"gpus": ["NVIDIA H100 80GB HBM3"] * 8, "nvswitch": True, "os": "ubuntu-26.04"}
B200 = {"gpus": ["NVIDIA B200"] * 8, "os": "ubuntu-26.04"}


def _plan(hardware, request):
    index = load_gpu_index()
    return resolve(DATA, index.host_from_hardware(hardware), request, gpu_index=index)


FABRIC_BRANCHES = sorted(int(n.rsplit("-", 1)[1]) for n in INDEXED if n.startswith("nvidia-fabricmanager-"))


def test_the_index_has_fabric_manager_branches():
    assert FABRIC_BRANCHES and 620 in FABRIC_BRANCHES, FABRIC_BRANCHES


@pytest.mark.parametrize("branch", FABRIC_BRANCHES)
def test_every_fabric_manager_has_its_nscq_and_the_plan_names_it(branch):
    """resolute ships libnvidia-nscq-<b> beside each nvidia-fabricmanager-<b> (same version, same Depends, Provides
    libnvidia-nscq); the plan of an HGX H100 on 26.04 with that branch from the archive names it with Fabric Manager."""
    fabric, nscq = INDEXED["nvidia-fabricmanager-%d" % branch], INDEXED.get("libnvidia-nscq-%d" % branch)
    assert nscq is not None, "resolute has nvidia-fabricmanager-%d but the index no libnvidia-nscq-%d" % (branch, branch)
    assert nscq["Version"] == fabric["Version"] and nscq["Depends"] == fabric["Depends"]
    assert "libnvidia-nscq" in nscq["Provides"].split(", ")
    plan = _plan(HGX, {"driver_branch": str(branch), "driver_method": "distro"})
    assert plan["ok"], plan["errors"]
    fm = plan["stack"]["fabric_manager"]
    assert fm["packages"] == ["nvidia-fabricmanager-%d" % branch, "libnvidia-nscq-%d" % branch]
    assert fm["nscq"] == {"package": "libnvidia-nscq-%d" % branch}


def test_the_default_hgx_plan_names_nscq_the_archive_has():
    golden = json.loads((GOLDEN / "hgx-h100-nvswitch-ubuntu2604.json").read_text(encoding="utf-8"))
    fm = golden["stack"]["fabric_manager"]
    assert fm["nscq"]["package"] in INDEXED and fm["nscq"]["package"] in fm["packages"]


def test_nvidia_repo_on_2604_starts_at_the_data_branch():
    """NVIDIA's ubuntu2604 has R595 and later (data os.distros.ubuntu-26.04.nvidia_repo.branch_min): an HGX B200 (driver
    from NVIDIA's repository) is never planned with R580 from it, and a driver_branch below is refused, naming it."""
    floor = ENTRY["nvidia_repo"]["branch_min"]
    assert floor == 595
    plan = _plan(B200, {})
    assert plan["ok"], plan["errors"]
    driver = plan["stack"]["driver"]
    assert driver["method"] == "nvidia_repo" and driver["branch"] >= floor
    assert plan["stack"]["fabric_manager"]["branch"] == driver["branch"]
    refused = _plan(B200, {"driver_branch": "580"})
    assert not refused["ok"]
    text = " ".join(refused["errors"])
    assert "driver_branch: 580 with the driver from NVIDIA's repository (driver_method: nvidia_repo)" in text
    assert "NVIDIA's repository ubuntu2604 starts at driver branch R595" in text
    assert "request driver_branch: 595" in text and "driver_method: distro is no way here" in text


def test_a_lower_branch_from_nvidias_repository_names_the_archive_where_it_has_it():
    refused = _plan({"gpus": ["H100 PCIe"], "os": "ubuntu-26.04"}, {"driver_branch": "580", "driver_method": "nvidia_repo"})
    assert not refused["ok"]
    assert "request driver_method: distro, which installs ubuntu-26.04's own R580" in " ".join(refused["errors"])
    kept = _plan({"gpus": ["H100 PCIe"], "os": "ubuntu-24.04"}, {"driver_branch": "580", "driver_method": "nvidia_repo"})
    assert kept["ok"], kept["errors"]  # no floor recorded for ubuntu2404


def test_cuda_releases_unconfirmed_in_ubuntu2604_warn():
    confirmed = [c["version"] for c in ENTRY["nvidia_repo"]["cuda_confirmed"]]
    assert confirmed == ["13.3"]
    quiet = _plan({"gpus": ["RTX 4090"], "os": "ubuntu-26.04"}, {"cuda": "13.3"})
    assert not any("unconfirmed: data/compat.yml confirms only" in w for w in quiet["warnings"])
    for version in ("13.4", "13.5"):
        plan = _plan({"gpus": ["RTX 4090"], "os": "ubuntu-26.04"}, {"cuda": version})
        assert plan["ok"], plan["errors"]
        assert any("CUDA %s in NVIDIA's repository ubuntu2604 is unconfirmed" % version in w and "cuda: '13.3'" in w
                   for w in plan["warnings"]), plan["warnings"]


def test_r620_is_in_multiverse_as_the_data_says():
    rows = DATA["driver_package_names"]["distro"]["ubuntu"]["branch_components"]
    row = next(r for r in rows if "26.04" in r["versions"])
    for name, stanza in INDEXED.items():
        if name.startswith(("nvidia-driver-620", "nvidia-utils-620", "nvidia-headless-620", "nvidia-dkms-620")):
            assert stanza["X-Dlbox-Pocket"].endswith("/" + row["component"]), name
        if name.startswith(("nvidia-driver-580", "nvidia-driver-595")):
            assert stanza["X-Dlbox-Pocket"].endswith("/restricted"), name
