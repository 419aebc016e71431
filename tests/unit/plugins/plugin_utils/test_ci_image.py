"""What playbooks/ci_image.yml decides (plugins/plugin_utils/ci_image.py, filter dlbox.stack.ci_image_plan)."""

from __future__ import annotations

import datetime
import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.dlbox.stack.plugins.filter.ci_image import ci_image_plan
from ansible_collections.dlbox.stack.plugins.plugin_utils.ci_image import (decide, environments_carry_cuda, held_packages,
                                                                           image_identity, image_stack, system_cuda,
                                                                           linker, nvidia_require_cuda, runtime_set,
                                                                           stack_label)
from ansible_collections.dlbox.stack.plugins.plugin_utils.role_plan import load_data, resolve

ROOT = Path(__file__).resolve().parents[4]
HW = {"gpus": ["H100 SXM", "H100 SXM"], "os": "debian-12", "arch": "x86_64", "driver_version": "580.95.05"}
REQUEST = {"cuda": "13.0", "cudnn": "9.20.0.48", "pytorch": "2.13"}


@pytest.fixture(scope="module")
def plan():
    return resolve({}, REQUEST, hardware=HW)


@pytest.fixture(scope="module")
def data():
    return load_data()


def test_the_runtime_set_is_the_data_filled_in_for_the_plan(plan, data):
    got = runtime_set(data, plan["stack"]["cuda"]["version"])
    entry = data["cuda"]["runtime_set"]
    assert got["packages"] == [t.replace("{major}", "13").replace("{minor}", "0") for t in entry["packages"]]
    assert got["nccl"] == entry["nccl"]
    # nothing of the runtime set is a compiler, a -dev package or the toolkit meta (which pulls them all)
    assert not [p for p in got["packages"] + got["repo_packages"] if "-dev" in p or "nvcc" in p or p.startswith("cuda-toolkit-13-0")
                and not p.endswith("config-common")]
    assert "libnccl-dev" not in got["nccl"]


def test_the_label_is_the_resolved_stack(plan):
    stack = image_stack(plan)
    assert stack == {"driver_min": plan["stack"]["cuda"]["toolkit_driver_min"], "cuda": "13.0", "system_cuda": True,
                     "cudnn": "9.20.0.48",
                     "nccl": plan["stack"]["nccl"]["version"], "frameworks": {"pytorch": plan["stack"]["pytorch"]["version"]},
                     "framework_wheels": {"pytorch": ["cu130"]}}
    assert json.loads(stack_label(stack)) == stack
    # parts the image does not install are not in its label
    assert image_stack(plan, {"cudnn": False, "nccl": False, "python_env": False}) == dict(
        stack, cudnn=None, nccl=None, frameworks={}, framework_wheels={})


def test_a_label_that_is_not_the_plan_is_refused_with_the_right_one(plan, data):
    right = stack_label(image_stack(plan))
    ok = decide(plan, data, layer="all", archs=["9.0"], image_env={"stack": right}, recorded=None, system=True)
    assert ok["ok"], ok["errors"]
    assert ok["label"] == right
    wrong = json.loads(right)
    wrong["cudnn"] = "9.10.2.21"
    got = decide(plan, data, layer="all", archs=["9.0"], image_env={"stack": json.dumps(wrong)}, system=True)
    assert not got["ok"]
    assert "DLBOX_STACK" in got["errors"][0] and right in got["errors"][0]
    empty = decide(plan, data, layer="frameworks", archs=["9.0"], image_env={"stack": ""}, recorded=plan)
    assert [e for e in empty["errors"] if "DLBOX_STACK" in e and "is empty" in e]
    # the cuda layer does not know the label (it is not an argument of its RUN): not checked there
    assert decide(plan, data, layer="cuda", archs=["9.0"], image_env={"stack": ""})["ok"]


@pytest.mark.parametrize("env, names", [
    ({"cuda": "12.9"}, "DLBOX_CUDA"),
    ({"cuda": ""}, "DLBOX_CUDA"),
    ({"torch_cuda_arch_list": "8.0;9.0"}, "DLBOX_CUDA_ARCHS"),
    ({"cudaarchs": "80"}, "DLBOX_CUDAARCHS"),
])
def test_env_lines_that_are_not_the_plan_are_refused(plan, data, env, names):
    got = decide(plan, data, layer="cuda", archs=["9.0"], image_env=env)
    assert not got["ok"] and names in got["errors"][0]


@pytest.mark.parametrize("archs", [None, [], ["sm_90"], ["90"], ["9.0b"], ["9.0+ptx"], ["9.0a+PTX+PTX"]])
def test_bad_architectures_are_refused(plan, data, archs):
    got = decide(plan, data, archs=archs)
    assert not got["ok"] and "dlbox_ci_cuda_archs" in got["errors"][0]


def test_architecture_specific_and_ptx_capabilities_are_taken(plan, data):
    """TORCH_CUDA_ARCH_LIST's own forms (torch.utils.cpp_extension): sm_90a for FlashAttention-3 / DeepGEMM, 12.0f,
    +PTX; CMake's CUDAARCHS gets 90a, and a bare 90 for +PTX (CMake builds PTX for a bare number)."""
    got = decide(plan, data, archs=["8.0", "9.0a", "10.0a", "12.0f", "12.0+PTX"])
    assert got["ok"], got["errors"]
    assert got["archs"] == "8.0;9.0a;10.0a;12.0f;12.0+PTX" and got["cudaarchs"] == "80;90a;100a;120f;120"


def test_the_frameworks_layer_keeps_the_cuda_layers_stack(plan, data):
    same = decide(plan, data, layer="frameworks", archs=["9.0"], recorded=plan, recorded_layer={"system_cuda": False})
    assert same["ok"], same["errors"]
    moved = json.loads(json.dumps(plan))
    moved["stack"]["cudnn"]["version"] = "9.10.2.21"
    got = decide(plan, data, layer="frameworks", archs=["9.0"], recorded=moved, recorded_layer={"system_cuda": False})
    assert not got["ok"] and "cudnn 9.20.0.48 (cuda layer: 9.10.2.21)" in got["errors"][0]
    missing = decide(plan, data, layer="frameworks", archs=["9.0"], recorded=None)
    assert not missing["ok"] and "no plan recorded" in missing["errors"][0]


def test_the_filter_wants_a_plan(plan):
    with pytest.raises(AnsibleFilterError):
        ci_image_plan({"no": "plan"})
    got = ci_image_plan(plan, flavour="runtime", layer="cuda", archs=["9.0", "10.0"], system=True)
    assert (got["archs"], got["cudaarchs"]) == ("9.0;10.0", "90;100")
    assert got["runtime"]["packages"] == ["cuda-libraries-13-0", "cuda-nvtx-13-0"]


# NVIDIA_REQUIRE_CUDA of nvidia/cuda 13.0.2 (CUDA_VERSION=13.0.2), verbatim as the image config of vllm/vllm-openai:v0.23.0
# carries it, recorded in a public repository's Go test (TestReferenceImageBaselineEnvironmentIsExactAndDetached); the
# source of data/compat.yml cuda.image_require's 13.0 entry
NVIDIA_13_0 = ("cuda>=13.0 " + " ".join(
    "brand=%s,driver>=%d,driver<%d" % (brand, branch, branch + 1) for branch in (535, 550, 565, 570, 575)
    for brand in ("unknown", "grid", "tesla", "nvidia", "quadro", "quadrortx", "nvidiartx", "vapps", "vpc", "vcs", "vws",
                  "cloudgaming")))
# nvidia/cuda 12.0.0 base (gitlab.com/nvidia/container-images/cuda dist/12.0.0/ubuntu2204/base/Dockerfile, as copied in
# wordslab-org/wordslab doc/infra/containers/nvidia-cuda-base-install.sh)
NVIDIA_12_0 = ("cuda>=12.0 brand=tesla,driver>=450,driver<451 " + " ".join(
    "brand=%s,driver>=%d,driver<%d" % (brand, branch, branch + 1) for branch in (470, 510, 515, 520)
    for brand in ("tesla", "unknown", "nvidia", "nvidiartx", "geforce", "geforcertx", "quadro", "quadrortx", "titan",
                  "titanrtx")))
NO_FORWARD_COMPAT = ("geforce", "geforcertx", "titan", "titanrtx")


def test_nvidia_require_cuda_is_the_cuda_alone_without_cuda_compat(data):
    assert nvidia_require_cuda(data, "13.0") == ("cuda>=13.0", None)
    assert nvidia_require_cuda(data, "12.0", compat=False) == ("cuda>=12.0", None)


def test_with_cuda_compat_it_is_nvidias_own_text_for_13_0(data):
    assert NVIDIA_13_0.count("brand=") == 60
    assert nvidia_require_cuda(data, "13.0", compat=True) == (NVIDIA_13_0, None)


def test_with_cuda_compat_the_brands_without_forward_compatibility_are_left_out(data):
    text, problem = nvidia_require_cuda(data, "12.0", compat=True)
    assert problem is None
    kept = [c for c in NVIDIA_12_0.split() if not c.startswith(tuple("brand=%s," % b for b in NO_FORWARD_COMPAT))]
    assert text.split() == kept
    assert "brand=tesla,driver>=450,driver<451" in text.split() and "geforce" not in text and "titan" not in text


def test_cuda_compat_for_a_release_without_known_clauses_is_refused(plan, data):
    text, problem = nvidia_require_cuda(data, "12.6", compat=True)
    assert text == "cuda>=12.0" and "12.6" in problem and "data/compat.yml cuda.image_require" in problem
    moved = json.loads(json.dumps(plan))
    moved["stack"]["cuda"]["version"] = "12.6"
    got = decide(moved, data, archs=["9.0"], compat=True)
    assert not got["ok"] and [e for e in got["errors"] if "cuda.image_require" in e]


def test_a_nvidia_require_cuda_that_is_not_the_plans_is_refused(plan, data):
    assert decide(plan, data, layer="cuda", archs=["9.0"], image_env={"nvidia_require_cuda": "cuda>=13.0"})["ok"]
    got = decide(plan, data, layer="cuda", archs=["9.0"], image_env={"nvidia_require_cuda": "cuda>=13.0"}, compat=True)
    assert not got["ok"] and "DLBOX_NVIDIA_REQUIRE_CUDA" in got["errors"][0] and NVIDIA_13_0 in got["errors"][0]
    assert decide(plan, data, layer="cuda", archs=["9.0"], image_env={"nvidia_require_cuda": NVIDIA_13_0}, compat=True)["ok"]
    assert decide(plan, data, archs=["9.0"], compat=True)["require"] == NVIDIA_13_0


def test_the_runtime_set_names_nvtx_and_cuda_compat_with_forward_compatibility(data):
    # NVIDIA's runtime Dockerfile names cuda-nvtx-X-Y beside cuda-libraries-X-Y, which does not pull it
    assert "cuda-nvtx-13-0" in runtime_set(data, "13.0")["packages"]
    assert "cuda-compat-13-0" not in runtime_set(data, "13.0")["packages"]
    assert "cuda-compat-13-0" in runtime_set(data, "13.0", compat=True)["packages"]
    assert "cuda-compat-13-0" in decide(resolve({}, REQUEST, hardware=HW), data, archs=["9.0"], compat=True)["runtime"]["packages"]


@pytest.mark.parametrize("flavour, parts, held", [
    ("runtime", None, ["libcublas-13-0", "libnccl2"]),
    ("toolkit", None, ["libcublas-13-0", "libnccl2", "libcublas-dev-13-0", "libnccl-dev"]),
    ("runtime", {"nccl": False}, ["libcublas-13-0"]),
    ("toolkit", {"cuda": False}, ["libnccl2", "libnccl-dev"]),
])
def test_cublas_and_nccl_are_held_where_the_image_installs_them(plan, data, flavour, parts, held):
    assert held_packages(data, "13.0", flavour, parts) == held
    if parts is None:
        assert decide(plan, data, flavour=flavour, archs=["9.0"], system=True)["hold"] == held


def test_the_image_identity_of_an_installed_collection(tmp_path):
    (tmp_path / "MANIFEST.json").write_text(json.dumps({"collection_info": {
        "namespace": "dlbox", "name": "stack", "version": "1.2.3", "repository": "https://example.org/dlbox.stack"}}))
    got = image_identity(tmp_path, environ={}, now=datetime.datetime(2026, 12, 6, 12, 30, 5, tzinfo=datetime.timezone.utc))
    assert got == {"version": "1.2.3", "source": "https://example.org/dlbox.stack", "revision": None,
                   "created": "2026-12-06T12:30:05Z"}
    # SOURCE_DATE_EPOCH (a reproducible build) wins over the clock
    assert image_identity(tmp_path, environ={"SOURCE_DATE_EPOCH": "1796428800"})["created"] == "2026-12-05T00:00:00Z"


def test_the_image_identity_of_a_checkout_has_its_commit(tmp_path):
    (tmp_path / "galaxy.yml").write_text("namespace: dlbox\nname: stack\nversion: 0.4.0\nrepository: https://example.org/r\n")
    assert image_identity(tmp_path, environ={})["revision"] is None          # not a git checkout
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@example.org"]
    subprocess.run(git + ["init", "-q"], check=True)
    subprocess.run(git + ["add", "galaxy.yml"], check=True)
    subprocess.run(git + ["commit", "-q", "-m", "one"], check=True)
    head = subprocess.run(git + ["rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
    got = image_identity(tmp_path, environ={})
    assert (got["version"], got["source"], got["revision"]) == ("0.4.0", "https://example.org/r", head)
    assert got["created"].endswith("Z") and len(got["created"]) == 20
    # this collection's own (the default root)
    assert image_identity(environ={})["version"] == yaml.safe_load((ROOT / "galaxy.yml").read_text())["version"]


# NVIDIA's images install cuda-compat-X-Y and leave its folder off every static library path; the NVIDIA Container
# Toolkit adds /usr/local/cuda/compat at container start under an older host driver (data/compat.yml cuda.image_compat,
# NVIDIA/nvidia-container-toolkit cmd/nvidia-cdi-hook/cudacompat/cudacompat.go).
@pytest.mark.parametrize("machine, target", [("x86_64", "x86_64-linux"), ("aarch64", "sbsa-linux")])
def test_forward_compatibility_is_on_no_static_path_and_where_the_toolkit_looks(plan, data, machine, target):
    got = decide(plan, data, archs=["9.0"], compat=True, machine=machine)
    assert got["ok"], got["errors"]
    assert got["linker"]["paths"] == ["/usr/local/cuda-13.0/targets/%s/lib" % target]
    assert got["linker"]["compat"] == {"dir": "/usr/local/cuda-13.0/compat", "seen_as": "/usr/local/cuda/compat",
                                       "library": "libcuda.so.*.*"}
    assert not [p for p in got["linker"]["paths"] if "compat" in p]
    # without cuda-compat there is nothing to find
    without = decide(plan, data, archs=["9.0"], machine=machine, system=True)
    assert without["linker"] == {"paths": got["linker"]["paths"], "compat": None}


def test_the_toolkits_rule_finds_the_folder_the_image_is_told_about(tmp_path, data):
    """The image as cuda-compat-13-0 and config-common lay it (the /usr/local/cuda alternative, libcuda.so.1 and
    libcuda.so links, one regular libcuda.so.<driver>): the toolkit hook's rule on data/compat.yml's dir and library
    (symlinks resolved inside the root, regular files only) finds exactly the folder linker() names."""
    compat = linker(data, "13.0", compat=True)["compat"]
    folder = tmp_path / compat["dir"].lstrip("/")
    folder.mkdir(parents=True)
    (folder / "libcuda.so.580.95.05").write_text("FIXTURE\n", encoding="utf-8")
    (folder / "libcuda.so.1").symlink_to("libcuda.so.580.95.05")
    (folder / "libcuda.so").symlink_to("libcuda.so.1")
    (tmp_path / "etc/alternatives").mkdir(parents=True)
    (tmp_path / "etc/alternatives/cuda").symlink_to("/usr/local/cuda-13.0")
    (tmp_path / "usr/local/cuda").symlink_to("/etc/alternatives/cuda")

    def resolve_in_root(path):   # moby/sys/symlink FollowSymlinkInScope, for the absolute links used here
        current = tmp_path
        for part in Path(path).relative_to("/").parts:
            current = current / part
            while current.is_symlink():
                target = Path(os.readlink(current))
                current = (tmp_path / target.relative_to("/")) if target.is_absolute() else current.parent / target
        return current

    seen = resolve_in_root(compat["seen_as"])
    found = [p for p in seen.glob(compat["library"]) if p.is_file() and not p.is_symlink()]
    assert [p.name for p in found] == ["libcuda.so.580.95.05"]
    assert seen == tmp_path / compat["dir"].lstrip("/")


# ---- issue 51 red team MEDIUM: NVIDIA_REQUIRE_CUDA admits what the plan accepts (minor-version compatibility) ----------

def _reported(data, driver):
    """The CUDA version a driver reports (cuDriverGetVersion, nvidia-smi's "CUDA Version"): the newest release whose own
    driver it meets (data/compat.yml cuda.releases)."""
    def key(version):
        return tuple(int(x) for x in str(version).replace("-", ".").split(".") if x.isdigit())
    met = [r["version"] for r in data["cuda"]["releases"] if r.get("toolkit_driver_min") and key(r["toolkit_driver_min"]) <= key(driver)]
    return max(met, key=key)


def _admits(require, reported):
    """The NVIDIA Container Toolkit's check of the first clause (cuda>=X.Y against the driver's CUDA version)."""
    wanted = require.split()[0]
    assert wanted.startswith("cuda>=")
    return tuple(int(x) for x in reported.split(".")) >= tuple(int(x) for x in wanted[len("cuda>="):].split("."))


@pytest.mark.parametrize("cuda", ["13.0", "13.1", "13.2", "12.8"])
def test_nvidia_require_cuda_admits_the_oldest_driver_the_plan_accepts(data, cuda):
    """The plan accepts the runners' driver by minor-version compatibility (the major's floor: 580.65.06 for 13.x,
    NVIDIA's "Minor Version Compatibility" Table 1); the image's NVIDIA_REQUIRE_CUDA must then not refuse it at docker run
    (the container toolkit compares cuda>= with the CUDA version the driver reports: a 580 driver reports 13.0). The
    label's driver_min is that same floor."""
    floor = {str(e["major"]): e["driver_min"] for e in data["cuda"]["minor_compat"]}[cuda.split(".")[0]]
    plan = resolve({}, {"cuda": cuda}, hardware=dict(HW, driver_version=floor))
    assert plan["ok"] and plan["stack"]["cuda"]["version"] == cuda, plan.get("errors")
    got = decide(plan, data, archs=["9.0"])
    assert got["ok"], got["errors"]
    assert _admits(got["require"], _reported(data, floor)), (got["require"], _reported(data, floor))
    assert got["stack"]["driver_min"] == floor
    # a driver older than the floor is refused by the plan, and by the image too
    older = "%d.00" % (int(floor.split(".")[0]) - 5)
    assert not _admits(got["require"], _reported(data, older))


def test_cuda_13_2_needs_its_own_driver_only_for_what_minor_version_compatibility_lacks(data):
    """CUDA 13.2 on the runners' 580.95.05: the plan warns (PTX JIT, newer APIs) and accepts; the image asks cuda>=13.0,
    which 580.95.05 (reporting 13.0) meets; cuda>=13.2 would have refused it (SyneRBI/PETRIC2 issue 27: cuda>=12.8
    refused on a 12.4 driver)."""
    plan = resolve({}, {"cuda": "13.2"}, hardware=HW)
    assert plan["ok"] and [w for w in plan["warnings"] if "minor-version compatibility" in w]
    got = decide(plan, data, archs=["9.0"])
    assert got["require"] == "cuda>=13.0" and got["stack"]["driver_min"] == "580.65.06"
    assert _reported(data, "580.95.05") == "13.0" and not _admits("cuda>=13.2", "13.0")


@pytest.mark.parametrize("environments, wheels", [
    (None, ["cu130"]),                                                                # the plan's one environment
    ([], ["cu130"]),
    ([{"name": "torch", "frameworks": ["pytorch"], "variant": "cpu"}], ["cpu"]),     # the heavy test's environment
    ([{"name": "a", "frameworks": ["pytorch"]}, {"name": "b", "frameworks": ["pytorch"], "variant": "cpu"}],
     ["cpu", "cu130"]),
    ([{"name": "tf", "frameworks": ["tensorflow"]}], []),
])
def test_the_label_says_which_torch_wheels_the_environments_hold(plan, data, environments, wheels):
    """The label's cuda/cudnn/nccl are the image's system libraries; a cu130 torch loads its own nvidia-* wheels' CUDA,
    cuDNN and NCCL (the versions its wheel pins), a cpu one none: the label names the variants the environments hold
    (issue 51 red team MEDIUM), as the python_env role picks them (variant auto: the plan's)."""
    got = decide(plan, data, archs=["9.0"], environments=environments)
    assert got["stack"]["framework_wheels"] == ({"pytorch": wheels} if wheels else {})
    assert json.loads(got["label"])["framework_wheels"] == got["stack"]["framework_wheels"]
    # the filter hands the playbooks' python_env_environments on
    assert ci_image_plan(plan, archs=["9.0"], environments=environments)["stack"] == got["stack"]


# ---- NVIDIA's apt CUDA user space beside framework wheels that carry their own (issue 51 red team MEDIUM 5) -----------
# A cu130 torch wheel depends on nvidia-cuda-runtime-cu13, nvidia-cublas-cu13, nvidia-cudnn-cu13, nvidia-nccl-cu13, ...
# and loads those; NVIDIA's runtime set from apt beside them is a second copy the framework never loads.

def _stack(pytorch_variant="cu130", tensorflow_extra=False):
    stack = {"cuda": {"version": "13.0", "toolkit_driver_min": "580.65.06"}, "cudnn": {"version": "9.20.0.48"},
             "nccl": {"version": "2.27.7"},
             "pytorch": {"version": "2.13.0", "variant": pytorch_variant,
                         "cuda": None if pytorch_variant == "cpu" else "13.0"}}
    if tensorflow_extra is not False:
        stack["tensorflow"] = {"version": "2.21.0", "extra": tensorflow_extra, "cuda": "12.5"}
    return {"stack": stack}


def test_by_default_the_runtime_image_has_no_apt_cuda_beside_torch_wheels_that_carry_their_own(plan, data):
    got = decide(plan, data, archs=["9.0"])
    assert got["ok"], got["errors"]
    assert got["system_cuda"] is False
    assert got["parts"] == {"cuda": False, "cudnn": False, "nccl": False, "python_env": True}
    # nothing of NVIDIA's apt CUDA, cuDNN or NCCL is installed, held or put on the library path
    assert got["runtime"]["packages"] == [] and got["runtime"]["repo_packages"] == []
    assert got["hold"] == [] and got["linker"] == {"paths": [], "compat": None}
    # the label says so: no system cuDNN or NCCL; the plan's CUDA, which NVIDIA_REQUIRE_CUDA asks of the driver
    label = json.loads(got["label"])
    assert label["system_cuda"] is False and label["cudnn"] is None and label["nccl"] is None
    assert label["cuda"] == "13.0" and label["framework_wheels"] == {"pytorch": ["cu130"]}
    assert got["require"] == "cuda>=13.0"
    # the filter (the playbooks' call) decides the same by default
    assert ci_image_plan(plan, archs=["9.0"])["system_cuda"] is False


@pytest.mark.parametrize("kwargs, why", [
    ({"flavour": "toolkit"}, "the toolkit flavour is NVIDIA's apt toolkit"),
    ({"compat": True}, "cuda-compat-X-Y comes with the runtime set"),
    ({"parts": {"python_env": False}}, "no framework environment"),
    ({"environments": [{"name": "torch", "frameworks": ["pytorch"], "variant": "cpu"}]}, "a cpu torch"),
    ({"environments": [{"name": "a", "frameworks": ["pytorch"]}, {"name": "b", "frameworks": ["pytorch"], "variant": "cpu"}]},
     "one cpu torch among cu130 ones"),
    ({"environments": [{"name": "tools", "packages": ["cupy-cuda13x"]}]}, "an environment without a framework"),
    ({"environments": [{"name": "tf", "frameworks": ["tensorflow"]}]}, "TensorFlow the plan has without [and-cuda]"),
    ({"system": True}, "asked for"),
    ({"system": "true"}, "asked for, as text"),
])
def test_auto_keeps_the_apt_cuda_where_something_needs_it_and_true_asks_for_it(plan, data, kwargs, why):
    got = decide(plan, data, archs=["9.0"], **kwargs)
    assert got["ok"], (why, got["errors"])
    assert got["system_cuda"] is True, why
    assert json.loads(got["label"])["system_cuda"] is True
    if kwargs.get("flavour") != "toolkit":
        assert got["runtime"]["packages"][:2] == ["cuda-libraries-13-0", "cuda-nvtx-13-0"], why
        assert got["linker"]["paths"] == ["/usr/local/cuda-13.0/targets/x86_64-linux/lib"]
    assert got["parts"]["cuda"] and got["parts"]["cudnn"] and got["parts"]["nccl"]


@pytest.mark.parametrize("plan_, environments, carries", [
    (_stack("cu130"), None, True),                                                     # the plan's environment
    (_stack("cu130"), [{"name": "t", "frameworks": ["pytorch"], "variant": "cu128"}], True),
    (_stack("cu130"), [{"name": "t", "frameworks": ["pytorch"], "variant": "pypi"}], True),   # PyPI's CUDA build
    (_stack("cpu"), None, False),
    (_stack("cpu"), [{"name": "t", "frameworks": ["pytorch"], "variant": "pypi"}], False),
    (_stack("cu130", "and-cuda"), None, True),                                         # tensorflow[and-cuda]
    (_stack("cu130", "and-cuda"), [{"name": "tf", "frameworks": ["tensorflow"], "variant": "cpu"}], False),
    (_stack("cu130", None), None, False),                                              # TensorFlow on the system's CUDA
    ({"stack": {"cuda": {"version": "13.0"}}}, None, False),                           # no framework at all
])
def test_which_environments_load_cuda_from_their_own_wheels(plan_, environments, carries):
    got, reasons = environments_carry_cuda(plan_, environments)
    assert got is carries and bool(reasons) is not carries
    assert system_cuda(dict(plan_), environments=environments) == (not carries, None)


@pytest.mark.parametrize("kwargs, words", [
    ({"system": "sometimes"}, "dlbox_ci_system_cuda must be auto, true or false"),
    ({"system": False, "flavour": "toolkit"}, "cannot go with dlbox_ci_cuda toolkit"),
    ({"system": "false", "compat": True}, "cannot go with cuda_compat true"),
])
def test_a_system_cuda_that_cannot_be_is_refused(plan, data, kwargs, words):
    got = decide(plan, data, archs=["9.0"], **kwargs)
    assert not got["ok"] and [e for e in got["errors"] if words in e], got["errors"]


def test_false_leaves_the_apt_cuda_out_even_beside_a_cpu_torch(plan, data):
    got = decide(plan, data, archs=["9.0"], system=False,
                 environments=[{"name": "torch", "frameworks": ["pytorch"], "variant": "cpu"}])
    assert got["ok"] and got["system_cuda"] is False and got["runtime"]["packages"] == []


def test_the_frameworks_layer_refuses_environments_the_cuda_layer_did_not_decide_for(plan, data):
    """The cuda layer does not read DLBOX_FRAMEWORK_VARS_FILE: it decided from the plan's environment (a cu130 torch, no
    apt CUDA). A cpu torch given to the frameworks layer alone would want the apt CUDA the cuda layer left out."""
    cpu = [{"name": "torch", "frameworks": ["pytorch"], "variant": "cpu"}]
    got = decide(plan, data, layer="frameworks", archs=["9.0"], recorded=plan, recorded_layer={"system_cuda": False},
                 environments=cpu)
    assert not got["ok"]
    (error,) = got["errors"]
    assert "left out NVIDIA's apt CUDA user space" in error and "DLBOX_VARS_FILE" in error and "variant cpu" in error
    # the other way round: the cuda layer installed it (asked), the frameworks layer's auto would not
    other = decide(plan, data, layer="frameworks", archs=["9.0"], recorded=plan, recorded_layer={"system_cuda": True})
    assert not other["ok"] and "installed NVIDIA's apt CUDA user space" in other["errors"][0]
    # the same setting in both layers (DLBOX_VARS_FILE): agreed
    assert decide(plan, data, layer="frameworks", archs=["9.0"], recorded=plan, recorded_layer={"system_cuda": True},
                  environments=cpu, system=True)["ok"]
    # no record of the cuda layer's decision
    missing = decide(plan, data, layer="frameworks", archs=["9.0"], recorded=plan, recorded_layer=None)
    assert not missing["ok"] and "ci-layer.json" in missing["errors"][0]
    # the filter hands the record on
    assert ci_image_plan(plan, layer="frameworks", archs=["9.0"], recorded=plan, recorded_layer={"system_cuda": True},
                         environments=cpu)["ok"]


# ---- NVIDIA's devel set, what nvidia/cuda's devel images install (issue 51 red team MEDIUM 3) -------------------------
# gitlab.com/nvidia/container-images/cuda dist/13.0.0/ubuntu2404/devel/Dockerfile's apt-get install line (the names; its
# pinned versions dropped), as copied verbatim in a public repository (code index id 27328508114): data/compat.yml
# cuda.devel_set's source
NVIDIA_DEVEL_13_0 = ["cuda-cudart-dev-13-0", "cuda-command-line-tools-13-0", "cuda-minimal-build-13-0",
                     "cuda-libraries-dev-13-0", "cuda-nvml-dev-13-0", "libnpp-dev-13-0", "libcusparse-dev-13-0",
                     "libcublas-dev-13-0", "libnccl-dev", "cuda-nsight-compute-13-0"]


def test_the_devel_set_is_nvidias_devel_image_set_and_not_the_toolkit_meta(data):
    from ansible_collections.dlbox.stack.plugins.plugin_utils.ci_image import devel_set  # pylint: disable=import-outside-toplevel
    got = devel_set(data, "13.0")
    assert sorted(got["packages"] + got["nccl"]) == sorted(NVIDIA_DEVEL_13_0)
    # what the cuda-toolkit-X-Y meta pulls beyond it is not in it
    beyond = ("cuda-toolkit-", "nsight-systems", "cuda-nsight-systems", "cuda-visual-tools", "gds-tools",
              "cuda-documentation", "cuda-gdb-src", "cuda-demo-suite")
    assert not [p for p in got["packages"] if p.startswith(beyond)]
    # CUDA 12's devel images also name cuda-nvprof (dist/12.8.0: NV_NVPROF_DEV_PACKAGE cuda-nvprof-12-8), CUDA 13 has none
    assert "cuda-nvprof-12-8" in devel_set(data, "12.8")["packages"] and not [p for p in got["packages"] if "nvprof" in p]
    assert devel_set(data, None) == {"packages": [], "nccl": []}
    assert "devel/Dockerfile" in data["cuda"]["devel_set"]["source"]
