# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cuda role's decisions (plugins/plugin_utils/cuda_plan.py), on the frozen data file, through the role's decision
entry point (plugins/plugin_utils/roles/cuda.py decide, as dlbox.stack.role_decide runs it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.dlbox.stack.plugins.plugin_utils import cuda_plan as cp
from ansible_collections.dlbox.stack.plugins.plugin_utils.roles import cuda as role
from ansible_collections.dlbox.stack.plugins.plugin_utils.compat_data import load_compat

FROZEN = str(Path(__file__).resolve().parents[3] / "unit" / "data" / "compat-frozen.yml")
DATA = load_compat(FROZEN)
GXX12 = [{"path": "/usr/bin/g++", "major": 12}]
HW = {"gpus": ["RTX 4090"], "os": "debian-12"}
REQUEST = {"driver_method": "nvidia_repo", "cuda": "13.0"}


def cuda_plan(opts, plan, request=None, hardware=None, installed=None, compilers=None, data_path=None):
    """The decision as the role's preflight asks for it: ``opts`` (cuda_plan's names) as the role's variables, the
    compilers as cuda_facts reports them (``host_compilers``), WSL from the host's facts. The variables are handed to
    decide() as given (not through options(), whose choices check would refuse cuda_method 'runfile' first)."""
    given = {"cuda_method": opts["method"], "cuda_versions": opts["versions"], "cuda_default_version": opts["default"],
             "cuda_compat": opts["compat"], "cuda_remove_unlisted": opts["remove_unlisted"],
             "cuda_local_repo_debs": opts["local_repo_debs"], "cuda_verify": opts["verify"], "cuda_verify_compile": True,
             "cuda_verify_archs": opts["verify_archs"], "cuda_host_compiler": opts["host_compiler"]}
    facts = {"host": {"virtualization": {"wsl": opts["wsl"]}} if opts["wsl"] else {}, "request": request,
             "hardware": hardware, "installed": dict(installed or {}, host_compilers=compilers)}
    return role.decide(plan, given, facts, data_path=data_path)


def options(**extra):
    base = {"method": "nvidia_repo", "versions": [], "default": "", "compat": False, "remove_unlisted": False,
            "local_repo_debs": {}, "verify": True, "verify_archs": [], "host_compiler": "", "wsl": False}
    base.update(extra)
    return base


@pytest.fixture(scope="module")
def plan():
    from ansible_collections.dlbox.stack.plugins.filter.stack import resolve_stack
    result = resolve_stack({}, REQUEST, hardware=HW, data_path=FROZEN)
    assert result["ok"], result["errors"]
    return result


def run(plan, installed=None, compilers=None, request=None, **extra):
    return cuda_plan(options(**extra), plan, request=REQUEST if request is None else request, hardware=HW, installed=installed,
                     compilers=GXX12 if compilers is None else compilers, data_path=FROZEN)


def test_default_is_the_plans_toolkit_from_nvidias_repository(plan):
    out = run(plan)
    assert out["ok"], out["errors"]
    assert [t["version"] for t in out["toolkits"]] == ["13.0"]
    assert out["toolkits"][0]["packages"] == ["cuda-toolkit-13-0"]
    assert out["repo_packages"] == ["cuda-toolkit-13-0", "cuda-*-13-0", "libcu*-13-0", "cuda-toolkit-13-config-common"]
    assert out["default"] == {"version": "13.0", "path": "/usr/local/cuda-13.0"}
    assert out["archs"] == ["89"]


def test_two_toolkits_side_by_side_with_compat_and_a_chosen_default(plan):
    out = run(plan, versions=["12.6", "13.0"], default="12.6", compat=True)
    assert out["ok"], out["errors"]
    expected = [["cuda-toolkit-12-6", "cuda-compat-12-6"], ["cuda-toolkit-13-0", "cuda-compat-13-0"]]
    assert [t["packages"] for t in out["toolkits"]] == expected
    assert out["default"]["path"] == "/usr/local/cuda-12.6"
    assert "cuda-compat-12-6" in out["repo_packages"]


@pytest.mark.parametrize(("extra", "needle"), [
    ({"method": "runfile"}, "cuda_method 'runfile'"),
    ({"versions": ["13"]}, "cuda_versions[0] '13'"),
    ({"versions": [13.0]}, "cuda_versions[0] 13.0"),
    ({"versions": "13.0"}, "cuda_versions must be a list"),
    ({"default": "13"}, "cuda_default_version '13'"),
    ({"verify_archs": ["sm_90"]}, "cuda_verify_archs[0] 'sm_90'"),
    ({"method": "local_repo", "versions": ["13.0"], "local_repo_debs": {"13.0": {"url": "http://x/a.deb", "checksum": "md5:1"}}},
     "cuda_local_repo_debs['13.0'].checksum"),
    ({"method": "local_repo", "versions": ["13.0"], "local_repo_debs": {"13.0": {"checksum": "sha256:" + "0" * 64}}},
     "needs exactly one of url"),
    ({"method": "pip_wheels", "compat": True}, "cuda_compat: true needs cuda_method nvidia_repo"),
    ({"method": "distro", "wsl": True}, "cuda_method: distro is refused on WSL"),
])
def test_bad_variables_are_refused_naming_them(plan, extra, needle):
    out = run(plan, **extra)
    assert not out["ok"]
    assert any(needle in e for e in out["errors"]), out["errors"]


def test_unknown_version_is_refused_with_the_resolvers_reason(plan):
    out = run(plan, versions=["12.7"])
    assert not out["ok"]
    assert out["errors"][0].startswith("cuda_versions[0] ('12.7'): CUDA '12.7' is not a CUDA release")


def test_version_the_installed_driver_cannot_run_is_refused():
    hardware = dict(HW, driver_version="535.261.03")
    from ansible_collections.dlbox.stack.plugins.filter.stack import resolve_stack
    plan = resolve_stack({}, {}, hardware=hardware, data_path=FROZEN)
    assert plan["ok"]
    out = cuda_plan(options(versions=["13.0"]), plan, request={}, hardware=hardware, compilers=GXX12, data_path=FROZEN)
    assert not out["ok"]
    assert "cuda_versions[0] ('13.0')" in out["errors"][0] and "535.261.03" in out["errors"][0]


def test_default_must_be_listed_or_installed(plan):
    out = run(plan, versions=["13.0"], default="12.6")
    assert any(e.startswith("cuda_default_version '12.6' is neither") for e in out["errors"])
    installed = {"cuda_toolkits": [{"version": "12.6", "path": "/usr/local/cuda-12.6", "source": "nvidia_repo"}]}
    assert run(plan, installed=installed, versions=["13.0"], default="12.6")["ok"]


def test_pip_wheels_need_wheels_in_the_data(plan):
    out = run(plan, method="pip_wheels", versions=["13.0"])
    assert out["ok"], out["errors"]
    assert out["toolkits"][0]["wheels"] == {"version": "13.0.88", "root": "nvidia/cu13",
                                            "packages": ["nvidia-cuda-nvcc==13.0.88", "nvidia-nvvm==13.0.88"]}
    refused = run(plan, method="pip_wheels", versions=["12.6"])
    assert "cuda.pip_wheels has 13.0" in refused["errors"][0]


def test_local_repo_deb(plan):
    deb = {"src": "/srv/cuda-repo-debian12-13-0-local_13.0.2-580.95.05-1_amd64.deb", "checksum": "sha256:" + "a" * 64}
    out = run(plan, method="local_repo", versions=["13.0"], local_repo_debs={"13.0": deb})
    assert out["ok"], out["errors"]
    assert out["toolkits"][0]["local_deb"]["filename"] == "cuda-repo-debian12-13-0-local_13.0.2-580.95.05-1_amd64.deb"
    assert "cuda_local_repo_debs['13.0'] = {url or src" in run(plan, method="local_repo", versions=["13.0"])["errors"][0]


def test_distro_method_takes_the_distributions_version(plan):
    out = run(plan, method="distro")
    # the frozen data's debian-12 nvidia-cuda-toolkit
    version = cp._major_minor(DATA["distro_drivers"]["distros"]["debian-12"]["distro"]["cuda_toolkit"]["nvcc"])
    assert out["distro"]["version"] == version and out["default"] is None
    assert out["toolkits"][0]["nvcc"] == "/usr/bin/nvcc"
    refused = run(plan, method="distro", versions=["13.0"])
    assert "cuda_method: distro installs only debian-12's nvidia-cuda-toolkit" in refused["errors"][0]


def test_distro_method_on_ubuntu_2604_is_canonicals_cuda_toolkit_in_nvidias_layout():
    """Ubuntu 26.04: data names Canonical's cuda-toolkit with its home; nvcc is <home>/bin/nvcc, not /usr/bin/nvcc."""
    import copy
    data = copy.deepcopy(DATA)
    data["distro_drivers"]["distros"]["ubuntu-26.04"] = {"distro": {"cuda_toolkit": {
        "package": "cuda-toolkit", "package_version": "13.1.1-0ubuntu1", "suite": "resolute", "version": "13.1.1",
        "nvcc": "13.1.115", "home": "/usr/local/cuda-13.1"}}}
    plan_2604 = {"ok": True, "host": {"os": "ubuntu-26.04", "compute_capabilities": ["8.9"]}, "stack": {"cuda": {"version": "13.5"}}}
    out = cp.decide(data, plan_2604, options(method="distro"), resolve=lambda v: {"ok": True}, compilers=GXX12)
    assert out["ok"], out["errors"]
    assert out["distro"] == {"version": "13.1", "package": "cuda-toolkit", "package_version": "13.1.1-0ubuntu1",
                             "home": "/usr/local/cuda-13.1", "nvcc": "/usr/local/cuda-13.1/bin/nvcc"}
    assert out["toolkits"][0]["path"] == "/usr/local/cuda-13.1" and out["toolkits"][0]["nvcc"] == "/usr/local/cuda-13.1/bin/nvcc"
    refused = cp.decide(data, plan_2604, options(method="distro", versions=["13.5"]), compilers=GXX12)
    assert "installs only ubuntu-26.04's cuda-toolkit, CUDA 13.1" in refused["errors"][0]


INSTALLED = {"cuda_toolkits": [
    {"version": "12.4", "path": "/usr/local/cuda-12.4", "source": "nvidia_repo"},
    {"version": "12.2", "path": "/usr/local/cuda-12.2", "source": "unknown"},
    {"version": "11.8", "path": "/usr/local/cuda-11.8", "source": "pip_wheels"},
]}


def test_unlisted_toolkits_stay_unless_asked(plan):
    out = run(plan, installed=INSTALLED)
    assert out["ok"] and out["remove"] == []
    assert len(out["notes"]) == 3


def test_unlisted_toolkits_removed_when_asked_but_never_an_unknown_one(plan):
    out = run(plan, installed=INSTALLED, remove_unlisted=True)
    assert out["ok"], out["errors"]
    assert [(r["version"], r["source"]) for r in out["remove"]] == [("12.4", "nvidia_repo"), ("11.8", "pip_wheels")]
    assert out["remove"][0]["packages"] == ["cuda-toolkit-12-4", "cuda-*-12-4", "libcu*-12-4"]
    assert any("12.2" in n and "stays" in n for n in out["notes"])


def test_default_is_never_removed(plan):
    out = run(plan, installed=INSTALLED, remove_unlisted=True, default="12.4")
    assert any("would remove" in e for e in out["errors"])


@pytest.mark.parametrize(("cap", "compilers", "given", "ccbin", "error"), [
    (15, [{"path": "/usr/bin/g++", "major": 12}], "", None, None),
    (11, [{"path": "/usr/bin/g++", "major": 12}, {"path": "/usr/bin/g++-11", "major": 11},
          {"path": "/usr/bin/g++-10", "major": 10}], "", "/usr/bin/g++-11", None),
    (11, [{"path": "/usr/bin/g++", "major": 12}], "", None, "install g++-11"),
    (None, [{"path": "/usr/bin/g++", "major": 20}], "", None, None),
    (16, [], "", None, "no g++ on the host"),
    (16, [{"path": "/opt/g++-17", "major": 17}], "/opt/g++-17", None, "cuda_host_compiler '/opt/g++-17' is gcc 17"),
    (16, [{"path": "/usr/bin/g++-14", "major": 14}], "/usr/bin/g++-14", "/usr/bin/g++-14", None),
    (16, [], "/usr/bin/g++-9", None, "is not a g++ that answers"),
])
def test_pick_host_compiler(cap, compilers, given, ccbin, error):
    choice = cp.pick_host_compiler(cap, compilers, given)
    assert choice["ccbin"] == ccbin
    if error:
        assert error in choice["error"]
    else:
        assert choice["error"] is None


def test_unsupported_host_compiler_refused_before_install(plan):
    out = run(plan, compilers=[{"path": "/opt/g++-17", "major": 17}], host_compiler="/opt/g++-17")
    assert not out["ok"]
    assert out["errors"][0].startswith("CUDA 13.0 (nvcc accepts gcc <= 15): cuda_host_compiler '/opt/g++-17' is gcc 17")


@pytest.mark.parametrize(("version", "cap"), [("11.8", 11), ("12.3", 12), ("12.6", 13), ("13.5", 15), ("10.2", None)])
def test_gcc_max_from_data(version, cap):
    assert cp.gcc_max(DATA, version) == cap


def test_verify_archs_override_and_no_verify(plan):
    out = run(plan, verify_archs=["9.0", "8.9"], compilers=[])
    assert not out["ok"]  # no g++ at all
    out = run(plan, verify_archs=["9.0", "8.9"], compilers=[], verify=False)
    assert out["ok"] and out["archs"] == ["89", "90"] and out["toolkits"][0]["ccbin"] is None


def test_refused_plan_refuses(plan):
    bad = dict(plan, ok=False, errors=["GPU too old"])
    out = run(bad)
    assert out["errors"] == ["the plan was refused (dlbox_plan): GPU too old"]


def test_a_tree_of_another_method_is_not_written_over(plan):
    installed = {"cuda_toolkits": [{"version": "13.0", "path": "/usr/local/cuda-13.0", "source": "unknown"}]}
    out = run(plan, installed=installed, method="pip_wheels")
    assert "/usr/local/cuda-13.0 is already there, installed by unknown" in out["errors"][0]
    installed["cuda_toolkits"][0]["source"] = "local_repo"
    assert run(plan, installed=installed)["ok"]


# dpkg-query -W -f '${db:Status-Abbrev} ${Package}\n' on a host with NVIDIA's CUDA 13.0 toolkit (names as NVIDIA's
# repository has them) beside a removed 12.6 and a held 12.8
DPKG = ["ii  cuda-toolkit-13-0", "ii  cuda-nvcc-13-0", "ii  libcublas-13-0", "ii  gds-tools-13-0",
        "ii  cuda-toolkit-13-0-config-common", "ii  cuda-toolkit-config-common", "rc  cuda-nvcc-12-6",
        "hi  cuda-nvcc-12-8", "ii  libnccl2", "ii  nvidia-driver-580-open"]


@pytest.mark.parametrize("versions, held", [
    (["13.0"], ["cuda-nvcc-13-0", "cuda-toolkit-13-0", "gds-tools-13-0", "libcublas-13-0"]),
    (["13.0", "12.8"], ["cuda-nvcc-12-8", "cuda-nvcc-13-0", "cuda-toolkit-13-0", "gds-tools-13-0", "libcublas-13-0"]),
    (["12.6"], []),            # removed, configuration files left: nothing to hold
    ([], []),
])
def test_every_installed_part_of_a_toolkit_is_held(versions, held):
    assert cp.held_packages(DPKG, versions) == held
