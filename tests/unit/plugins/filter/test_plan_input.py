"""Strict planning input: every kind of bad dlbox_plan_hardware / dlbox_plan_request is refused before any
planning, naming the key or value at fault (through the resolve_stack filter that playbooks/plan.yml calls)."""

from __future__ import annotations

import pytest

from ansible_collections.dlbox.stack.plugins.filter.stack import resolve_stack
from ansible_collections.dlbox.stack.plugins.plugin_utils import stack_input
from ansible_collections.dlbox.stack.plugins.plugin_utils import stack_resolver

RTX4090 = {"gpus": ["RTX 4090"], "os": "ubuntu-22.04"}

BAD_INPUT = [
    # (title, hardware, request, fragments every one of which must be in the errors)
    ("typo'd hardware key", {"gpu": ["RTX 4090"], "os": "ubuntu-22.04"}, {},
     ["dlbox_plan_hardware: unknown key 'gpu'; did you mean 'gpus'?"]),
    ("typo'd request key", RTX4090, {"pytroch": "2.9"}, ["dlbox_plan_request: unknown key 'pytroch'; did you mean 'pytorch'?"]),
    ("unknown request key, nothing close", RTX4090, {"colour": "green"}, ["unknown key 'colour'; valid keys: driver_branch"]),
    ("hardware not a mapping", ["RTX 4090"], {}, ["dlbox_plan_hardware must be a mapping", "not list"]),
    ("request not a mapping", RTX4090, "pytorch=2.9", ["dlbox_plan_request must be a mapping", "not str 'pytorch=2.9'"]),
    ("gpus not a list", {"gpus": "RTX 4090"}, {}, ["dlbox_plan_hardware.gpus must be a list", "'RTX 4090'"]),
    ("gpu name with shell characters", {"gpus": ["RTX 4090; reboot"]}, {}, ["dlbox_plan_hardware.gpus: 'RTX 4090; reboot' is not a GPU name"]),
    ("nvswitch not a boolean", {"gpus": ["H100 SXM"], "nvswitch": "yes"}, {}, ["dlbox_plan_hardware.nvswitch: 'yes' is not true or false"]),
    ("unknown OS", {"gpus": ["RTX 4090"], "os": "windows-11"}, {},
     ["dlbox_plan_hardware.os: 'windows-11' is not an operating system", "ubuntu-22.04"]),
    ("architecture no NVIDIA stack serves", {"gpus": ["RTX 4090"], "os": "ubuntu-22.04", "arch": "riscv64"}, {},
     ["dlbox_plan_hardware.arch: 'riscv64' is not a machine architecture", "aarch64, x86_64"]),
    ("driver version that is not one", {"gpus": ["RTX 4090"], "os": "ubuntu-22.04", "driver_version": "abc"}, {},
     ["dlbox_plan_hardware.driver_version: 'abc' is not a version like '550.54.14'"]),
    ("l4t that is not a version", {"gpus": ["Jetson AGX Orin"], "l4t": "r36"}, {}, ["dlbox_plan_hardware.l4t: 'r36'"]),
    ("command in a CUDA version", RTX4090, {"cuda": "12.4; rm -rf /"},
     ["dlbox_plan_request.cuda: '12.4; rm -rf /' is not a version like '12.8'"]),
    ("CUDA as a YAML number", RTX4090, {"cuda": 12.4}, ["dlbox_plan_request.cuda: 12.4 is a number; quote versions (cuda: '12.8')"]),
    ("Python as a YAML number", RTX4090, {"python": 3.10}, ["dlbox_plan_request.python: 3.1 is a number"]),
    ("Python 2", RTX4090, {"python": "2.7"}, ["dlbox_plan_request.python: '2.7' is not a version like '3.12'"]),
    ("driver branch that is not one", RTX4090, {"driver_branch": "newest"}, ["dlbox_plan_request.driver_branch: 'newest'"]),
    ("cuDNN with a wildcard", RTX4090, {"cudnn": "9.*"}, ["dlbox_plan_request.cudnn: '9.*' is not a version like '9.10'"]),
    ("PyTorch with a pip option", RTX4090, {"pytorch": "2.9 --pre"}, ["dlbox_plan_request.pytorch: '2.9 --pre'"]),
    ("TensorFlow as a list", RTX4090, {"tensorflow": ["2.20"]}, ["dlbox_plan_request.tensorflow: ['2.20']"]),
    ("JetPack that is not a version", {"gpus": ["Jetson AGX Orin"]}, {"jetpack": "six"}, ["dlbox_plan_request.jetpack: 'six'"]),
    ("PyTorch build that is not one", RTX4090, {"pytorch_variant": "cuda13"}, ["dlbox_plan_request.pytorch_variant: 'cuda13' is not a PyTorch build"]),
    ("kernel modules that do not exist", RTX4090, {"kernel_modules": "closed"},
     ["dlbox_plan_request.kernel_modules: 'closed' is not one of: open, proprietary"]),
    ("driver install method that does not exist", RTX4090, {"driver_method": "ppa"},
     ["dlbox_plan_request.driver_method: 'ppa' is not one of: distro, nvidia_repo"]),
    ("JetPack for an x86 workstation", RTX4090, {"jetpack": "6.2"},
     ["jetpack: '6.2' was requested, but this host has discrete NVIDIA GPUs", "JetPack applies to Jetson modules only"]),
    ("TensorFlow CUDA build on aarch64", {"gpus": ["H100 SXM"], "os": "ubuntu-24.04", "arch": "aarch64"}, {"tensorflow": "2.20"},
     ["tensorflow: '2.20' was requested, but TensorFlow ships no CUDA build for aarch64"]),
]


@pytest.mark.parametrize("title, hardware, request_, fragments", BAD_INPUT, ids=[case[0] for case in BAD_INPUT])
def test_bad_input_is_refused_naming_the_key(title, hardware, request_, fragments):
    plan = resolve_stack({}, request_, hardware=hardware)
    assert plan["ok"] is False, title
    text = "\n".join(plan["errors"])
    for fragment in fragments:
        assert fragment in text, (fragment, plan["errors"])


@pytest.mark.parametrize("title, hardware, request_, fragments", BAD_INPUT[:-2], ids=[case[0] for case in BAD_INPUT[:-2]])
def test_bad_input_is_refused_before_any_planning(title, hardware, request_, fragments):
    """Malformed input never reaches the resolver: the plan is empty, with no warnings or notes."""
    plan = resolve_stack({}, request_, hardware=hardware)
    assert all(part is None for part in plan["stack"].values()), title
    assert plan["warnings"] == [] and plan["notes"] == []


def test_several_problems_are_all_reported():
    plan = resolve_stack({}, {"cuda": "12.4; rm -rf /", "torch": "2.9"}, hardware={"gpu": ["RTX 4090"], "arch": "sparc"})
    assert len(plan["errors"]) == 4, plan["errors"]


@pytest.mark.parametrize(
    "request_",
    [{"cuda": "12.8"}, {"cuda": "12.8.1"}, {"driver_branch": 580}, {"driver_branch": "R580"}, {"python": "3.10"},
     {"pytorch": "latest"}, {"tensorflow": True}, {"tensorflow": "none"}, {"cudnn": "none"}, {"pytorch_variant": "CU128"},
     {"cuda": "auto", "kernel_modules": None}, {"driver_method": "distro"}],
)
def test_good_input_passes_the_checks(request_):
    assert stack_input.check_request(request_) == []


def test_resolve_checks_its_request_too():
    """Callers that skip the filter (the action plugin, the benchmark) get the same refusal."""
    from ansible_collections.dlbox.stack.plugins.plugin_utils.compat_data import load_compat

    data = load_compat()
    plan = stack_resolver.resolve(data, {"arch": "x86_64", "gpus": []}, {"cuda": "12.4 && reboot"})
    assert plan["ok"] is False
    assert plan["errors"] == ["dlbox_plan_request.cuda: '12.4 && reboot' is not a version like '12.8' (or auto)."]


def test_one_list_of_request_keys():
    """The README and the role docs name the request keys; they come from stack_input.REQUEST_KEYS only."""
    assert set(stack_input.REQUEST_KEYS) == {
        "driver_branch", "driver_method", "driver_profile", "kernel_modules", "cuda", "cudnn", "pytorch", "pytorch_variant", "tensorflow",
        "python", "jetpack",
    }
