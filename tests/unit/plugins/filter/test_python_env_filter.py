# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters python_env_plan, python_env_wheels and python_env_lock (deprecated), the module's entries lock, wheels and
check_lines through dlbox.stack.role_module: the wiring between the plan, the resolver and plugin_utils.python_env_plan.

The resolver is replaced by a recorder here (its rules have their own tests); Molecule's python_env
scenario runs the real one.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.dlbox.stack.plugins.filter import python_env
from ansible_collections.dlbox.stack.plugins.filter.role_module import role_module
from ansible_collections.dlbox.stack.plugins.plugin_utils import role_plan

TORCH = {"version": "2.13.0", "variant": "cpu", "index_url": "https://idx.example/whl/cpu", "cuda": None,
         "torchvision": "0.28.0"}
PLAN = {"ok": True, "errors": [], "host": {"gpu_count": 0, "arch": "x86_64"}, "data_date": "2026-11-29",
        "stack": {"python": {"version": "3.11"}, "pytorch": TORCH, "tensorflow": None}}


@pytest.fixture
def resolver(monkeypatch):
    calls = []

    def fake(host, request=None, hardware=None, data_path=None, catalog_path=None):
        calls.append({"host": host, "request": request, "hardware": hardware})
        if request.get("pytorch") == "2.99":
            return {"ok": False, "errors": ["PyTorch '2.99' is not a release"], "host": {}, "stack": {}}
        stack = dict(PLAN["stack"])
        if request.get("tensorflow"):
            stack["tensorflow"] = {"version": "2.21.0", "cuda": "12.5", "extra": "and-cuda"}
        return {"ok": True, "errors": [], "host": PLAN["host"], "stack": stack}

    monkeypatch.setattr(role_plan, "resolve", fake)  # the one resolver entry the filter goes through
    return calls


def test_empty_list_means_one_environment_per_planned_framework(resolver):
    out = python_env.python_env_plan([], PLAN)
    assert out["ok"] and [e["name"] for e in out["environments"]] == ["pytorch"]
    assert out["environments"][0]["requirements"] == ["torch==2.13.0+cpu", "torchvision==0.28.0+cpu"]
    assert out["environments"][0]["var"] == "python_env_environments[0]"
    assert out["driver_floors"]  # from data/compat.yml's cuda.minor_compat
    assert resolver == []  # the plan's stack was used as it is


def test_plain_environment_uses_the_plan_and_gets_pip_args(resolver):
    out = python_env.python_env_plan([{"name": "t", "frameworks": ["pytorch"], "torchvision": False}], PLAN,
                                     options={"no_index": True, "find_links": ["/srv/wh"]})
    env = out["environments"][0]
    assert env["pip_args"] == ["--no-index", "--find-links", "/srv/wh"]
    assert env["requirements"] == ["torch==2.13.0+cpu"] and env["stack"]["pytorch"] == TORCH
    assert resolver == []


def test_an_environment_that_sets_a_version_is_resolved_again(resolver):
    hardware = {"gpus": [], "os": "debian-12"}
    out = python_env.python_env_plan([{"name": "t", "frameworks": ["pytorch"], "pytorch": "2.13", "python": "3.11"}], PLAN,
                                     host={"os": "x"}, request={"cuda": "12.4", "kernel_modules": "open"}, hardware=hardware)
    assert out["ok"]
    assert resolver == [{"host": {"os": "x"}, "request": {"kernel_modules": "open", "pytorch": "2.13", "python": "3.11"},
                         "hardware": hardware}]


def test_a_resolver_refusal_names_the_environment_and_its_key(resolver):
    out = python_env.python_env_plan([{"name": "t", "frameworks": ["pytorch"], "pytorch": "2.99"}], PLAN)
    assert not out["ok"]
    assert out["errors"] == ["python_env_environments[0] ('t', python_env_environments[0].pytorch='2.99'): "
                             "PyTorch '2.99' is not a release"]


def test_tensorflow_environment_gets_a_tensorflow_plan(resolver):
    out = python_env.python_env_plan([{"name": "tf", "frameworks": ["tensorflow"]}], PLAN)
    assert out["ok"] and out["environments"][0]["requirements"] == ["tensorflow-cpu==2.21.0"]
    assert resolver[0]["request"] == {"tensorflow": "latest"}


def test_requirements_text_changes_the_request_id(resolver):
    envs = [{"name": "t", "frameworks": ["pytorch"], "requirements": "req.txt"}]
    one = python_env.python_env_plan(envs, PLAN)["environments"][0]
    two = python_env.python_env_plan(envs, PLAN, requirements={"t": "numpy\n"})["environments"][0]
    assert one["request_id"] != two["request_id"] and two["has_requirements_file"]


def test_shape_errors_stop_before_resolving(resolver):
    out = python_env.python_env_plan([{"name": "a", "pytorch": "2.99", "frameworks": ["pytorch"]}, {"name": "a"}], PLAN)
    assert not out["ok"] and resolver == []
    assert "used twice" in out["errors"][0]
    assert python_env.python_env_plan([{"name": "a"}], PLAN, check_only=True) == {
        "ok": True, "errors": [], "environments": [], "driver_floors": {}}


def test_a_refused_plan_refuses_the_environments(resolver):
    out = python_env.python_env_plan([], dict(PLAN, ok=False, errors=["no driver fits"]))
    assert not out["ok"] and out["errors"] == ["the plan was refused: no driver fits"]


def test_not_a_plan_is_an_error():
    with pytest.raises(AnsibleFilterError, match="expected the plan"):
        python_env.python_env_plan([], {"ok": True})


def test_python_env_wheels_from_file_names_and_pip_list():
    files = ["nvidia_cublas_cu12-12.9.1.4-py3-none-manylinux_2_27_x86_64.whl",
             "nvidia_cuda_runtime-13.0.96-py3-none-manylinux_2_27_x86_64.whl", "six-1.17.0-py2.py3-none-any.whl"]
    out = python_env.python_env_wheels(files, ["nvidia-ml-py"], name="t")
    assert out["majors"] == [12, 13] and "two CUDA majors" in out["error"] and "'t'" in out["error"]
    listed = python_env.python_env_wheels([{"name": "nvidia-cudnn-cu12", "version": "9.3.0.75"}])
    assert listed["error"] == "" and listed["cudnn"] == "9.3.0.75"


def test_python_env_lock():
    out = python_env.python_env_lock([{"name": "six", "version": "1.17.0"}], "%s  /w/six-1.17.0-py2.py3-none-any.whl\n" % ("c" * 64))
    assert out == {"text": "six==1.17.0 \\\n    --hash=sha256:%s\n" % ("c" * 64), "missing": []}
    with pytest.raises(AnsibleFilterError, match="from_json"):
        python_env.python_env_lock("[]", "")


def test_python_env_wheels_with_given_majors_reads_no_data():
    out = python_env.python_env_wheels(["cuda_toolkit-14.0.1-py3-none-any.whl"], majors=["14"], data_path="/nonexistent.yml")
    assert out["majors"] == [14]


@pytest.mark.parametrize("old", ["pyenv_plan", "pyenv_wheels", "pyenv_lock"])
def test_old_pyenv_names_are_deprecated_redirects_to_the_python_env_filters(old):
    """The names of release 0.1.0 still work until 1.0.0: meta/runtime.yml routes each to its python_env_* filter."""
    runtime = yaml.safe_load((Path(__file__).resolve().parents[4] / "meta" / "runtime.yml").read_text())
    route = runtime["plugin_routing"]["filter"][old]
    new = old.replace("pyenv_", "python_env_")
    assert route["redirect"] == "dlbox.stack." + new
    assert route["deprecation"]["removal_version"] == "1.0.0" and new in route["deprecation"]["warning_text"]
    assert new in python_env.FilterModule().filters() and old not in python_env.FilterModule().filters()


def test_check_lines_name_each_step_its_time_and_a_failure_cause():
    report = {"status": 4, "problems": ["PyTorch compile on cpu failed: headers"], "frameworks": [
        {"framework": "PyTorch", "version": "2.9.1+cu128", "cuda": "12.8", "torchaudio": "2.9.1+cu128", "gpu_visible": False,
         "matmul": {"n": 1024, "dtype": "float32", "device": "cpu", "tflops": 0.3},
         "steps": [{"name": "compile", "device": "cpu", "ok": False, "seconds": 0.001, "detail": "",
                    "cause": "the Python headers are missing", "fix": "install python3.11-dev"},
                   {"name": "autocast", "device": "cpu", "ok": True, "seconds": 0.25, "detail": "bfloat16 training step"}]}]}
    assert role_module("python_env", "check_lines", report=report) == [
        "PyTorch 2.9.1+cu128 (CUDA 12.8, torchaudio 2.9.1+cu128): no GPU visible",
        "  matmul 1024x1024 float32 on cpu: 0.3 TFLOP/s",
        "  compile on cpu: FAILED in 0.00 s, the Python headers are missing; fix: install python3.11-dev",
        "  autocast on cpu: ok in 0.25 s, bfloat16 training step",
        "PROBLEM: PyTorch compile on cpu failed: headers",
        "Result: FAILED (exit 4)",
    ]
    assert role_module("python_env", "check_lines", report={"status": 0, "frameworks": []}) == ["Result: OK"]
    with pytest.raises(AnsibleFilterError, match=r"role_module\(python_env, check_lines\): expected dlbox-check's --json report, parsed"):
        role_module("python_env", "check_lines", report="{}")


def test_the_deprecated_lock_and_wheels_filters_are_the_modules_entries():
    installed, sums = [{"name": "six", "version": "1.17.0"}], "%s  /w/six-1.17.0-py2.py3-none-any.whl\n" % ("c" * 64)
    assert python_env.python_env_lock(installed, sums, header=["h"]) == role_module(
        "python_env", "lock", installed=installed, sha256sum_output=sums, header=["h"])
    files = ["nvidia_cublas_cu12-12.9.1.4-py3-none-manylinux_2_27_x86_64.whl", "nvidia_nccl_cu13-2.28.3-py3-none-any.whl"]
    assert python_env.python_env_wheels(files, name="t") == role_module("python_env", "wheels", dists=files, name="t")
    with pytest.raises(AnsibleFilterError, match=r"role_module\(python_env, lock\): expected the parsed output of pip list"):
        role_module("python_env", "lock", installed="[]", sha256sum_output="")
    runtime = yaml.safe_load((Path(__file__).resolve().parents[4] / "meta" / "runtime.yml").read_text())["plugin_routing"]
    for name, entry in (("python_env_plan", "decide"), ("python_env_wheels", "wheels"), ("python_env_lock", "lock")):
        route = runtime["filter"][name]
        assert route["deprecation"]["removal_version"] == "1.0.0" and "role_module('%s'" % entry in route["deprecation"]["warning_text"]
    assert "role_module('check_lines', report=...)" in runtime["filter"]["python_env_check_lines"]["tombstone"]["warning_text"]
    assert "python_env_check_lines" not in python_env.FilterModule().filters()
