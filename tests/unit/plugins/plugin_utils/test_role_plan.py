"""Tests for the one entry point that gives a role its plan (plugins/plugin_utils/role_plan.py)."""

from __future__ import annotations

import pytest

from ansible_collections.dlbox.stack.plugins.filter.stack import resolve_stack
from ansible_collections.dlbox.stack.plugins.plugin_utils.role_plan import ROLE_PARTS, resolve, role_plan

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
