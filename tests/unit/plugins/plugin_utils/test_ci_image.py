"""What playbooks/ci_image.yml decides (plugins/plugin_utils/ci_image.py, filter dlbox.stack.ci_image_plan)."""

from __future__ import annotations

import json

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.dlbox.stack.plugins.filter.ci_image import ci_image_plan
from ansible_collections.dlbox.stack.plugins.plugin_utils.ci_image import decide, image_stack, runtime_set, stack_label
from ansible_collections.dlbox.stack.plugins.plugin_utils.role_plan import load_data, resolve

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
    assert stack == {"driver_min": plan["stack"]["cuda"]["toolkit_driver_min"], "cuda": "13.0", "cudnn": "9.20.0.48",
                     "nccl": plan["stack"]["nccl"]["version"], "frameworks": {"pytorch": plan["stack"]["pytorch"]["version"]}}
    assert json.loads(stack_label(stack)) == stack
    # parts the image does not install are not in its label
    assert image_stack(plan, {"cudnn": False, "nccl": False, "python_env": False}) == dict(
        stack, cudnn=None, nccl=None, frameworks={})


def test_a_label_that_is_not_the_plan_is_refused_with_the_right_one(plan, data):
    right = stack_label(image_stack(plan))
    ok = decide(plan, data, layer="all", archs=["9.0"], image_env={"stack": right}, recorded=None)
    assert ok["ok"], ok["errors"]
    assert ok["label"] == right
    wrong = json.loads(right)
    wrong["cudnn"] = "9.10.2.21"
    got = decide(plan, data, layer="all", archs=["9.0"], image_env={"stack": json.dumps(wrong)})
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


@pytest.mark.parametrize("archs", [None, [], ["sm_90"], ["90"]])
def test_bad_architectures_are_refused(plan, data, archs):
    got = decide(plan, data, archs=archs)
    assert not got["ok"] and "dlbox_ci_cuda_archs" in got["errors"][0]


def test_the_frameworks_layer_keeps_the_cuda_layers_stack(plan, data):
    same = decide(plan, data, layer="frameworks", archs=["9.0"], recorded=plan)
    assert same["ok"], same["errors"]
    moved = json.loads(json.dumps(plan))
    moved["stack"]["cudnn"]["version"] = "9.10.2.21"
    got = decide(plan, data, layer="frameworks", archs=["9.0"], recorded=moved)
    assert not got["ok"] and "cudnn 9.20.0.48 (cuda layer: 9.10.2.21)" in got["errors"][0]
    missing = decide(plan, data, layer="frameworks", archs=["9.0"], recorded=None)
    assert not missing["ok"] and "no plan recorded" in missing["errors"][0]


def test_the_filter_wants_a_plan(plan):
    with pytest.raises(AnsibleFilterError):
        ci_image_plan({"no": "plan"})
    got = ci_image_plan(plan, flavour="runtime", layer="cuda", archs=["9.0", "10.0"])
    assert (got["archs"], got["cudaarchs"]) == ("9.0;10.0", "90;100")
    assert got["runtime"]["packages"] == ["cuda-libraries-13-0"]
