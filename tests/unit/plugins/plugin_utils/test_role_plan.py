"""Tests for the one entry point that gives a role its plan (plugins/plugin_utils/role_plan.py)."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.dlbox.stack.plugins.filter.role_module import role_module
from ansible_collections.dlbox.stack.plugins.filter.stack import resolve_stack
from ansible_collections.dlbox.stack.plugins.plugin_utils.role_plan import ROLE_PARTS, resolve, role_data, role_plan

HW = {"gpus": ["RTX 4090"], "os": "ubuntu-22.04"}


def test_resolve_is_the_filter_resolver():
    assert resolve({}, {"pytorch": "2.9"}, hardware=HW) == resolve_stack({}, {"pytorch": "2.9"}, hardware=HW)


def test_dlbox_plan_is_used_as_it_is():
    plan = resolve({}, None, hardware=HW)
    got = role_plan("cuda", plan, hardware={"gpus": ["GTX 1080 Ti"], "os": "debian-12"})
    assert got["source"] == "dlbox_plan"
    assert got["plan"] is plan
    assert got["stack"] == {"cuda": plan["stack"]["cuda"]}
    assert got["ok"] is True and got["host"] == plan["host"]


def test_no_plan_resolves_once_with_the_request():
    got = role_plan("python_env", None, request={"pytorch": "2.9"}, hardware=HW)
    assert got["source"] == "resolved"
    assert got["plan"] == resolve({}, {"pytorch": "2.9"}, hardware=HW)
    assert set(got["stack"]) == set(got["plan"]["stack"])  # python_env reads the whole stack


def test_an_override_the_plan_did_not_pick_is_resolved():
    plan = resolve({}, None, hardware=HW)
    other = "12.8" if plan["stack"]["cuda"]["version"] != "12.8" else "12.9"
    got = role_plan("cuda", plan, hardware=HW, overrides={"cuda": ("cuda_versions[0]", other)})
    assert got["source"] == "resolved"
    assert got["stack"]["cuda"]["version"] == other
    same = role_plan("cuda", plan, hardware=HW, overrides={"cuda": ("cuda_versions[0]", plan["stack"]["cuda"]["version"])})
    assert same["source"] == "dlbox_plan"


def test_unset_overrides_keep_the_plan():
    plan = resolve({}, None, hardware=HW)
    assert role_plan("cudnn", plan, overrides={"cudnn": ("cudnn_version", ""), "cuda": ("x", "auto")})["source"] == "dlbox_plan"


@pytest.mark.parametrize("value, words", [(12.8, "quote versions"), ("twelve", "is not a version like '12.8'")])
def test_overrides_are_checked_like_a_request_naming_the_variable(value, words):
    got = role_plan("cuda", None, hardware=HW, overrides={"cuda": ("cuda_versions[0]", value)})
    assert got["ok"] is False and got["source"] == "refused"
    assert got["errors"][0].startswith("cuda_versions[0]: ")
    assert words in got["errors"][0]


def test_unknown_role_and_key_are_programming_errors():
    with pytest.raises(ValueError):
        role_plan("nope", None)
    with pytest.raises(ValueError):
        role_plan("cuda", None, overrides={"nccl": ("nccl_version", "2.27.7")})


def test_every_role_has_a_slice():
    assert set(ROLE_PARTS) >= {"cuda", "cudnn", "nccl", "nvidia_container_toolkit", "python_env", "nvidia_driver", "common"}


def test_cudnn_rechecks_with_the_driver_keys_of_the_request_only():
    plan = resolve({}, None, hardware=HW)
    picked = {"cudnn": ("cudnn_version", plan["stack"]["cudnn"]["version"]), "cuda": ("cudnn_cuda_major", plan["stack"]["cuda"]["version"])}
    assert role_plan("cudnn", plan, hardware=HW, overrides=picked)["source"] == "dlbox_plan"
    got = role_plan("cudnn", plan, hardware={"gpus": ["GTX 1080 Ti"], "os": "debian-12"}, overrides=picked, recheck=True,
                    request={"pytorch": "nonsense", "kernel_modules": "open"})
    assert got["source"] == "resolved"  # the pytorch key is not the cudnn role's: no request error about it
    assert not any("pytorch" in e for e in got["errors"])


def test_a_role_without_a_stack_part_resolves_nothing():
    got = role_plan("common", None, request={"pytorch": "nonsense"})
    assert got["ok"] and got["source"] == "no plan needed"
    assert "debian-12" in role_data("common", got["data"])["supported_os"]


def test_the_data_a_role_hands_on_comes_from_the_loader():
    data = role_plan("nccl", None)["data"]
    nccl = role_data("nccl", data)
    assert nccl["known"] == data["nccl"] and nccl["packages"] == ["libnccl2", "libnccl-dev"]
    assert role_data("nvidia_container_toolkit", data)["packages"] == data["container_toolkit"]["packages"]
    assert role_data("cuda", data) == {}


def role_plan_filter(plan, role, **kwargs):
    """The one filter's plan entry (was the role_plan filter): ``role | role_module('plan', plan=..., ...)``."""
    return role_module(role, "plan", plan=plan, **kwargs)


def test_the_filter_returns_the_slice_and_the_data_not_the_whole_data():
    got = role_plan_filter(None, "nvidia_container_toolkit", hardware=HW)
    assert set(got) == {"ok", "errors", "plan", "stack", "host", "source", "data"}
    assert got["stack"]["container_toolkit"]["packages"] == got["data"]["packages"]
    with pytest.raises(AnsibleFilterError, match="variable name, value"):
        role_plan_filter(None, "cuda", overrides={"cuda": "12.8"})
    with pytest.raises(AnsibleFilterError, match="unknown role"):
        role_plan_filter(None, "nope")
    assert role_plan_filter(None, "nccl")["stack"] == {"cuda": None, "nccl": None}  # no GPU, no NCCL


@pytest.mark.parametrize("key, var, pick", [
    ("driver_branch", "nvidia_driver_branch", lambda s: s["driver"]["branch"]),
    ("driver_method", "nvidia_driver_method", lambda s: s["driver"]["method"]),
    ("kernel_modules", "nvidia_driver_kernel_modules", lambda s: s["driver"]["kernel_modules"]),
    ("pytorch_variant", "python_env_pytorch_variant", lambda s: s["pytorch"]["variant"]),
])
def test_an_override_the_plan_already_picked_keeps_the_plan_wherever_the_stack_holds_it(key, var, pick):
    plan = resolve({}, None, hardware=HW)
    same = role_plan("python_env", plan, hardware=HW, overrides={key: (var, str(pick(plan["stack"])))})
    assert same["source"] == "dlbox_plan"


def test_a_driver_branch_the_plan_did_not_pick_is_resolved():
    plan = resolve({}, None, hardware=HW)
    other = "570" if plan["stack"]["driver"]["branch"] != 570 else "580"
    got = role_plan("python_env", plan, hardware=HW, overrides={"driver_branch": ("nvidia_driver_branch", other)})
    assert got["source"] == "resolved"
