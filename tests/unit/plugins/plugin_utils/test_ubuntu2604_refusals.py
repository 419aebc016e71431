# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ubuntu 26.04 (issue 53) on the REAL data/compat.yml: what the plan refuses, naming the variable and what works.

- CUDA NVIDIA's repository has no release of for ubuntu2604 (it starts at 13.3), asked with the driver from that
  repository (driver_method: nvidia_repo), and the cuda role's cuda_method: nvidia_repo for such a version.
- A Python the archive does not package (resolute has python3.14 only; data os.distros.ubuntu-26.04.pythons), unless
  the host brings it (python_env_interpreters).
- cuda_method: distro installs Canonical's versioned cuda-toolkit-13-1, not the unversioned cuda-toolkit.
"""

from __future__ import annotations

import copy

import pytest

from ansible_collections.dlbox.stack.plugins.plugin_utils import cuda_plan as cp
from ansible_collections.dlbox.stack.plugins.plugin_utils import role_plan
from ansible_collections.dlbox.stack.plugins.plugin_utils import stack_resolver
from ansible_collections.dlbox.stack.plugins.plugin_utils.compat_data import load_compat, load_gpu_index

DATA = load_compat()
INDEX = load_gpu_index()
HW = {"gpus": ["RTX 4090"], "os": "ubuntu-26.04"}
OS = "ubuntu-26.04"
GXX = [{"path": "/usr/bin/g++", "major": 13}]


def plan_for(request, data=DATA, hardware=None, **kwargs):
    return stack_resolver.resolve(data, INDEX.host_from_hardware(hardware or HW), request, gpu_index=INDEX, **kwargs)


def repo_releases(data=DATA):
    return [r["version"] for r in data["cuda"]["releases"] if OS in (r.get("os") or [])]


def test_the_data_says_nvidias_ubuntu2604_has_no_cuda_13_1_and_the_archive_has_it():
    """The facts the refusals stand on (data/compat.yml; the archive's from make data-refresh)."""
    assert "13.1" not in repo_releases() and "13.3" in repo_releases()
    archive = DATA["distro_drivers"]["distros"][OS]["distro"]["cuda_toolkit"]
    assert archive["version"].startswith("13.1.")


def test_cuda_nvidias_repository_lacks_is_refused_with_the_driver_from_that_repository():
    plan = plan_for({"cuda": "13.1", "driver_method": "nvidia_repo"})
    assert not plan["ok"]
    text = " ".join(plan["errors"])
    assert "cuda: '13.1' with the driver from NVIDIA's repository (driver_method: nvidia_repo)" in text
    assert "NVIDIA's repository ubuntu2604 has no CUDA 13.1" in text
    names = ["'%s'" % v for v in repo_releases()]
    offered = names[0] if len(names) == 1 else "%s or %s" % (", ".join(names[:-1]), names[-1])
    assert "request cuda: %s" % offered in text
    assert "request driver_method: distro" in text and "cuda_method: distro (cuda-toolkit-13-1 13.1.1-" in text
    assert plan["stack"]["cuda"] is None


def test_a_cuda_nvidias_repository_has_is_planned_with_its_driver():
    plan = plan_for({"cuda": "13.3", "driver_method": "nvidia_repo"})
    assert plan["ok"], plan["errors"]
    assert plan["stack"]["cuda"]["version"] == "13.3" and plan["stack"]["driver"]["method"] == "nvidia_repo"


def test_with_the_archives_driver_the_archives_cuda_is_a_note_not_a_refusal():
    plan = plan_for({"cuda": "13.1"})
    assert plan["ok"], plan["errors"]
    assert plan["stack"]["driver"]["method"] == "distro"
    assert any("install it with cuda_method: distro" in n for n in plan["notes"])
    # the plan names the archive's package, never NVIDIA's ubuntu2604 (which has no 13.1 and the cuda role refuses)
    cuda = plan["stack"]["cuda"]
    assert cuda["repository"] is None and cuda["package"] == "cuda-toolkit-13-1" and cuda["latest_update"] == "13.1.1"
    assert any("names that package and no NVIDIA repository" in n for n in plan["notes"])
    repo = plan_for({"cuda": "13.3"})["stack"]["cuda"]
    assert repo["repository"] == "ubuntu2604/x86_64" and repo["package"] == "cuda-toolkit-13-3"


def test_no_release_for_the_os_in_the_data_says_so():
    data = copy.deepcopy(DATA)
    for rel in data["cuda"]["releases"]:
        rel["os"] = [o for o in rel.get("os") or [] if o != OS]
    plan = plan_for({"cuda": "13.1", "driver_method": "nvidia_repo"}, data=data)
    text = " ".join(plan["errors"])
    assert "data/compat.yml lists no CUDA release of NVIDIA's repository ubuntu2604" in text
    assert "cuda_method: distro" in text


@pytest.mark.parametrize("python", ["3.13", "3.12"])
def test_a_python_the_archive_does_not_package_is_refused(python):
    plan = plan_for({"python": python})
    assert not plan["ok"]
    text = " ".join(plan["errors"])
    assert "python: '%s': ubuntu-26.04's archive packages only Python 3.14" % python in text
    assert "request python: '3.14' or leave python out" in text
    assert "python_env_interpreters" in text and "never builds Python" in text


def test_the_archives_python_and_a_python_the_host_brings_are_planned():
    plan = plan_for({"python": "3.14"})
    assert plan["ok"], plan["errors"]
    plan = plan_for({"python": "3.13"}, own_pythons=["3.13"])
    assert plan["ok"], plan["errors"]
    assert plan["stack"]["python"]["version"] == "3.13"


def test_python_env_passes_its_interpreters_through_role_plan():
    """python_env's filter hands python_env_interpreters to the resolver (role_plan own_pythons)."""
    got = role_plan.role_plan("python_env", None, request={"python": "3.13"}, hardware=HW, own_pythons=["3.13"])
    assert got["plan"]["ok"], got["plan"]["errors"]
    got = role_plan.role_plan("python_env", None, request={"python": "3.13"}, hardware=HW)
    assert not got["plan"]["ok"]


def test_oses_without_a_python_list_keep_the_note():
    """Only an OS whose archive Pythons the data lists refuses; 24.04 (no list) keeps the note as before."""
    assert "pythons" not in DATA["os"]["distros"]["ubuntu-24.04"]
    plan = plan_for({"python": "3.11"}, hardware={"gpus": ["RTX 4090"], "os": "ubuntu-24.04"})
    assert plan["ok"], plan["errors"]
    assert any("Python 3.11 is not ubuntu-24.04's default python3" in n for n in plan["notes"])


def _options(**extra):
    base = {"method": "nvidia_repo", "versions": [], "default": "", "compat": False, "remove_unlisted": False,
            "local_repo_debs": {}, "verify": False, "verify_archs": [], "host_compiler": "", "wsl": False}
    base.update(extra)
    return base


def _role_plan(cuda):
    return {"ok": True, "host": {"os": OS, "compute_capabilities": ["8.9"]}, "stack": {"cuda": {"version": cuda}}}


def test_cuda_role_refuses_nvidia_repo_for_a_cuda_its_ubuntu2604_lacks():
    out = cp.decide(DATA, _role_plan("13.1"), _options(), resolve=lambda v: {"ok": True}, compilers=GXX)
    assert not out["ok"]
    text = " ".join(out["errors"])
    assert "cuda_versions (the plan's 13.1) ('13.1'): cuda_method: nvidia_repo, but NVIDIA's repository ubuntu2604 has no CUDA 13.1" in text
    assert "cuda_versions with one of %s" % ", ".join(repo_releases()) in text
    assert "cuda_method: distro (ubuntu-26.04's own cuda-toolkit-13-1 13.1.1-" in text
    named = cp.decide(DATA, _role_plan("13.3"), _options(versions=["13.1"]), resolve=lambda v: {"ok": True}, compilers=GXX)
    assert named["errors"][0].startswith("cuda_versions[0] ('13.1'): cuda_method: nvidia_repo")
    fine = cp.decide(DATA, _role_plan("13.3"), _options(), resolve=lambda v: {"ok": True}, compilers=GXX)
    assert fine["ok"], fine["errors"]
    assert fine["toolkits"][0]["packages"] == ["cuda-toolkit-13-3"]


def test_cuda_role_distro_method_installs_the_versioned_cuda_toolkit_13_1():
    out = cp.decide(DATA, _role_plan("13.3"), _options(method="distro"), resolve=lambda v: {"ok": True}, compilers=GXX)
    assert out["ok"], out["errors"]
    assert out["distro"]["package"] == "cuda-toolkit-13-1" and out["distro"]["home"] == "/usr/local/cuda-13.1"


def test_cuda_role_distro_method_says_it_installs_13_1_not_the_plans_13_3():
    out = cp.decide(DATA, _role_plan("13.3"), _options(method="distro"), resolve=lambda v: {"ok": True}, compilers=GXX)
    assert any("cuda_method: distro installs ubuntu-26.04's cuda-toolkit-13-1 13.1.1-0ubuntu1, CUDA 13.1, not the plan's "
               "CUDA 13.3" in n for n in out["notes"]), out["notes"]
    same = cp.decide(DATA, _role_plan("13.1"), _options(method="distro"), resolve=lambda v: {"ok": True}, compilers=GXX)
    assert not any("not the plan's" in n for n in same["notes"])


def test_cuda_role_distro_method_names_the_crt_minimum_of_the_updates_pocket():
    """Canonical's cuda-crt-13-1 13.1.115-0ubuntu1 (resolute) does not compile on glibc 2.43; the data's minimum is the
    resolute-updates build, and the decision names it."""
    minimum = DATA["os"]["distros"][OS]["distro_cuda_minimum"]
    assert minimum[0]["package"] == "cuda-crt-13-1" and minimum[0]["version"] == "13.1.115-0ubuntu1.1"
    out = cp.decide(DATA, _role_plan("13.1"), _options(method="distro"), resolve=lambda v: {"ok": True}, compilers=GXX)
    assert out["distro"]["minimum"] == [{"package": "cuda-crt-13-1", "version": "13.1.115-0ubuntu1.1", "suite": "resolute-updates"}]
    assert any("needs cuda-crt-13-1 13.1.115-0ubuntu1.1 or newer (resolute-updates" in n for n in out["notes"])


def test_the_driver_role_names_multiverse_when_apt_cannot_install_r620():
    from ansible_collections.dlbox.stack.plugins.plugin_utils import nvidia_driver_plan as ndp

    opts = dict(method="distro", branch="", kernel_modules="", profile="server", other_branch="refuse", change_branch=False,
                keep_dir="/var/backups/dlbox-nvidia-driver", in_container="skip", build_kernels=[], kernel_flavour="",
                secure_boot="auto", secure_boot_signing="auto", mok_key="", mok_certificate="",
                shim_mok_dir="/var/lib/shim-signed/mok", pin_name="p.pref", hostname="gpu1", distribution="Ubuntu",
                distribution_version="26.04", kernel="7.0.0-15-generic", check_mode=False, request_text="{}")
    family = DATA["driver_package_names"]["family"]

    def plan(branch):
        return {"ok": True, "errors": [], "host": {"nvswitch": False},
                "stack": {"driver": {"branch": branch, "kernel_modules": "open", "method": "distro",
                                     "packages": ["nvidia-driver-%d-server-open" % branch], "repo": None, "family": family,
                                     "min_version": "%d.0" % branch, "version_available": None}, "fabric_manager": None}}
    sim = {"rc": 100, "stdout": "", "stderr": "E: Package 'nvidia-headless-620-server-open' has no installation candidate\n"}
    out = ndp.decide(DATA, opts, plan(620), facts={"installed": [], "simulation": sim})
    assert not out["ok"] and out["branch_component"] == "multiverse"
    assert "enable the multiverse component in the apt sources (Ubuntu 26.04 ships driver branch 620 there only" in out["errors"][0]
    older = ndp.decide(DATA, opts, plan(595), facts={"installed": [], "simulation": sim})
    assert older["branch_component"] is None and "multiverse" not in older["errors"][0]
    noble = ndp.decide(DATA, dict(opts, distribution_version="24.04", kernel="6.8.0-90-generic"), plan(620),
                       facts={"installed": [], "simulation": sim})
    assert noble["branch_component"] is None


def test_python_env_filter_hands_python_env_interpreters_to_the_resolver():
    """An environment's python: "3.13" on 26.04 is planned when python_env_interpreters brings it, refused when not."""
    from ansible_collections.dlbox.stack.plugins.filter.python_env import python_env_plan

    envs = [{"name": "torch", "frameworks": ["pytorch"], "python": "3.13"}]
    out = python_env_plan(envs, None, hardware=HW, options={"interpreters": {"3.13": "/opt/py/bin/python3.13"}})
    assert out["ok"], out["errors"]
    assert out["environments"][0]["stack"]["python"] == {"version": "3.13"}
    out = python_env_plan(envs, None, hardware=HW, options={})
    assert not out["ok"] and "python_env_interpreters" in " ".join(out["errors"])


def test_a_framework_whose_wheels_stop_below_the_archives_python_is_refused():
    """Red team of 2026-12-06 (helper, MEDIUM): tensorflow: '2.21' (wheels for Python 3.9-3.13, data/compat.yml) on
    Ubuntu 26.04 (archive: 3.14 only) gave ok: true with Python 3.13 and a note that the environment role "must provide"
    it, which it never does: the run failed later, at python_env. Refused now as python: '3.13' is, naming
    python_env_interpreters; planned when the host brings a 3.13."""
    tf = next(r for r in DATA["tensorflow"] if r["version"] == "2.21")
    assert tf["python"]["max"] == "3.13"
    plan = plan_for({"tensorflow": "2.21"})
    assert not plan["ok"]
    text = " ".join(plan["errors"])
    assert ("TensorFlow 2.21 needs Python %s to 3.13, so Python 3.13: ubuntu-26.04's archive packages only Python 3.14"
            % tf["python"]["min"]) in text, text
    assert "request TensorFlow releases with wheels for Python 3.14 (data/compat.yml), or leave them out" in text
    assert "python_env_interpreters" in text and "never builds Python" in text
    brought = plan_for({"tensorflow": "2.21"}, own_pythons=["3.13"])
    assert brought["ok"], brought["errors"]
    assert brought["stack"]["python"]["version"] == "3.13"


def _dated(date):
    data = copy.deepcopy(DATA)
    data["date"] = date
    return data


def test_a_branch_whose_support_ends_soon_is_said_when_a_longer_one_fits_but_is_unconfirmed():
    """Red team of 2026-12-06 (helper, MEDIUM 3): driver_method nvidia_repo on 26.04 plans R595 (PB, until 2027-03)
    because data/compat.yml confirms no R620 (LTSB, until 2029-09) release of NVIDIA's repository; the plan said nothing
    about a branch four months from its end. It now warns, naming driver_branch: 620."""
    hw = {"gpus": ["H100 PCIe"], "os": OS}
    data = _dated("2026-12-04")
    assert data["driver_branches"][0]["branch"] == 620 and not data["driver_branches"][0]["versions"]
    plan = plan_for({"driver_method": "nvidia_repo"}, data=data, hardware=hw)
    assert plan["ok"], plan["errors"]
    assert plan["stack"]["driver"]["branch"] == 595
    said = [w for w in plan["warnings"] if w.startswith("Driver branch R595 is supported only until 2027-03")]
    assert said and "(3 months after this data's date, 2026-12-04)" in said[0], plan["warnings"]
    assert "R620 (LTSB, supported until 2029-09)" in said[0] and "Request driver_branch: 620" in said[0]
    # seven months before its end: nothing said; asking for R620: nothing said
    assert not any("supported only until" in w for w in plan_for({"driver_method": "nvidia_repo"}, data=_dated("2026-08-01"),
                                                                 hardware=hw)["warnings"])
    asked = plan_for({"driver_method": "nvidia_repo", "driver_branch": "620"}, data=data, hardware=hw)
    assert not any("supported only until" in w for w in asked["warnings"])


def test_the_default_archive_branch_is_not_said():
    """The archive's default (R620 on 26.04, R580 elsewhere) is supported for years: no such warning."""
    for os_key in (OS, "ubuntu-24.04"):
        plan = plan_for({}, data=_dated("2026-12-04"), hardware={"gpus": ["H100 PCIe"], "os": os_key})
        assert plan["ok"], plan["errors"]
        assert not any("supported only until" in w for w in plan["warnings"]), plan["warnings"]


def test_a_confirmed_cuda_wins_over_a_newer_unconfirmed_one_of_the_same_fit():
    """Red team of 2026-12-06 (helper, LOW 5): with R595 from NVIDIA's repository (driver_method nvidia_repo) neither CUDA
    13.3 nor 13.4 runs natively, and the ranking took the newer 13.4, which the data says is unconfirmed in ubuntu2604,
    over the confirmed 13.3 (os.distros.ubuntu-26.04.nvidia_repo.cuda_confirmed)."""
    confirmed = [c["version"] for c in DATA["os"]["distros"][OS]["nvidia_repo"]["cuda_confirmed"]]
    assert "13.3" in confirmed and "13.4" not in confirmed and "13.4" in repo_releases()
    plan = plan_for({"driver_method": "nvidia_repo"}, hardware={"gpus": ["H100 PCIe"], "os": OS})
    assert plan["ok"], plan["errors"]
    assert plan["stack"]["driver"]["branch"] == 595
    assert plan["stack"]["cuda"]["version"] == "13.3"
    assert not any("is unconfirmed: data/compat.yml confirms only" in w for w in plan["warnings"]), plan["warnings"]


def test_the_plan_says_when_the_archive_branch_is_in_multiverse():
    """Red team of 2026-12-06 (helper, LOW 8): 26.04's default R620 user space is in multiverse only (data
    branch_components), R580/R595 in restricted; the plan did not say so. It now notes the component and a restricted
    branch to request; a restricted branch, or another release, gets no such note."""
    said = [n for n in plan_for({})["notes"] if "user-space packages are in its multiverse component" in n]
    assert len(said) == 1 and said[0].startswith("ubuntu-26.04's R620") and "Request driver_branch: 580" in said[0]
    assert not any("multiverse component" in n for n in plan_for({"driver_branch": "580"})["notes"])
    other = plan_for({}, hardware={"gpus": ["RTX 4090"], "os": "ubuntu-24.04"})
    assert not any("multiverse component" in n for n in other["notes"])
