# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The python_env role's decision module (plugins/plugin_utils/roles/python_env.py: options, decide, needs) through the
one filter dlbox.stack.role_decide (issue 47), on the frozen data file.

It replaces the python_env_plan filter call of tasks/plan.yml, the wheelhouse key that wheelhouse.yml computed twice
(its markers' names must stay the ones Ansible's ``to_json | hash('sha256')`` gave, or every wheelhouse downloads
again), the python_env_wheels calls of build.yml and the manifest build.yml assembled in Jinja (its values as the YAML
gave them for the same report: MANIFEST_BY_YAML, rendered from build.yml at 1e71969 with these inputs).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

from ansible_collections.dlbox.stack.plugins.filter.role_decide import role_decide
from ansible_collections.dlbox.stack.plugins.plugin_utils import role_plan
from ansible_collections.dlbox.stack.plugins.plugin_utils.roles import python_env

ROOT = Path(__file__).resolve().parents[4]
FROZEN = str(ROOT / "tests" / "unit" / "data" / "compat-frozen.yml")
HW = {"gpus": ["RTX 4090"], "os": "debian-12"}
PLATFORMS = {"x86_64": ["manylinux_2_28_x86_64", "manylinux_2_17_x86_64"], "aarch64": ["manylinux_2_28_aarch64"]}
# dlbox-check --json (the keys the manifest reads) and pip list --format=json of a PyTorch environment
REPORT = {"python": "3.12.3", "status": 0, "frameworks": [
    {"framework": "PyTorch", "version": "2.9.1+cu128", "cuda": "12.8", "cudnn": 91002},
    {"framework": "TensorFlow", "version": "2.20.0", "cuda": "12.5.1", "cudnn": "9"}]}
INSTALLED = [{"name": "torch", "version": "2.9.1+cu128"}, {"name": "nvidia-cudnn-cu12", "version": "9.10.2.21"},
             {"name": "nvidia-nccl-cu12", "version": "2.27.5"}, {"name": "nvidia-ml-py", "version": "13.580.82"},
             {"name": "numpy", "version": "2.3.5"}]

MANIFEST_BY_YAML = {
    "build": "/opt/e/.versions/pytorch-1",
    "cuda": [
        "12.8",
        "12.5.1"
    ],
    "cudnn": [
        "91002",
        "9"
    ],
    "driver_floors": {
        "11": "450.80.02",
        "12": "525.60.13",
        "13": "580.65.06"
    },
    "driver_required": [
        "525.60.13"
    ],
    "frameworks": {
        "PyTorch": "2.9.1+cu128",
        "TensorFlow": "2.20.0"
    },
    "name": "pytorch",
    "path": "/opt/e/pytorch",
    "plan_data_date": "2026-11-29",
    "python": "3.12.3",
    "wheels": {
        "cuda": None,
        "cudnn": "9.10.2.21",
        "majors": [
            12
        ],
        "nccl": "2.27.5",
        "nvidia": {
            "nvidia-cudnn-cu12": "9.10.2.21",
            "nvidia-ml-py": "13.580.82",
            "nvidia-nccl-cu12": "2.27.5"
        }
    }
}


@pytest.fixture(scope="module")
def plan():
    got = role_plan.resolve({}, {}, hardware=HW, data_path=FROZEN)
    assert got["ok"] and got["stack"]["pytorch"], got["errors"]
    return got


def _decide(plan, given=None, **facts):
    return python_env.decide(plan, python_env.options(given), dict({"hardware": HW}, **facts), data_path=FROZEN)


def test_the_decision_is_the_environments_of_the_plan(plan):
    got = _decide(plan)
    assert got["ok"] and [e["name"] for e in got["environments"]] == ["pytorch"] and got["plan"] is plan
    assert got["environments"][0]["stack"]["pytorch"] == plan["stack"]["pytorch"]
    assert got["driver_floors"] and all(isinstance(k, str) for k in got["driver_floors"])
    shape = _decide(plan, {"python_env_environments": [{"frameworks": ["pytorch"]}]}, check_only=True)
    assert not shape["ok"] and shape["environments"] == [] and shape["errors"]


def test_pip_options_come_from_the_role_variables(plan):
    got = _decide(plan, {"python_env_index_url": "https://pypi.lab.example/simple", "python_env_proxy": "http://p:3128",
                         "python_env_pytorch_index": False})
    args = got["environments"][0]["pip_args"]
    assert args[args.index("--index-url") + 1] == "https://pypi.lab.example/simple"
    assert args[args.index("--proxy") + 1] == "http://p:3128"


def test_a_spec_default_that_is_a_template_is_no_index(plan):
    # python_env_index_url's default is "{{ dlbox_site_mirrors.pypi | default('') }}": only a role run renders it
    args = _decide(plan)["environments"][0]["pip_args"]
    assert not [a for a in args if "{{" in a] and "--index-url" not in args


def test_a_later_fact_does_not_decide_the_environments_again(plan, monkeypatch):
    first = role_decide("python_env", plan, {}, {"hardware": HW})
    monkeypatch.setattr(python_env, "environments", lambda *a, **k: pytest.fail("decided again"))
    later = role_decide("python_env", first["plan"], first["options"], {"decided": first, "platforms": PLATFORMS})
    assert later["environments"] == first["environments"] and later["wheelhouse"]["platforms"] == PLATFORMS["x86_64"]


@pytest.mark.parametrize("python, platforms", [("", []), ("3.13", ["manylinux2014_aarch64"])])
def test_the_wheelhouse_key_is_the_one_ansible_wrote(plan, python, platforms):
    given = {"python_env_wheelhouse_python": python, "python_env_wheelhouse_platforms": platforms}
    got = _decide(plan, given, platforms=PLATFORMS)["wheelhouse"]
    (request,) = got["requests"]
    env = _decide(plan)["environments"][0]
    # wheelhouse.yml at 1e71969, both places: ([request_id, wheelhouse_python or python, platforms] | to_json
    # | hash('sha256'))[:12]
    template = "{{ ([request_id, wheelhouse_python or python, platforms] | to_json | hash('sha256'))[:12] }}"
    want = Templar(loader=DataLoader(), variables={
        "request_id": env["request_id"], "wheelhouse_python": python, "python": env["python"],
        "platforms": platforms or PLATFORMS["x86_64"]}).template(trust_as_template(template))
    assert request["key"] == want and request["marker"] == "pytorch-%s.json" % want
    assert request["python"] == (python or env["python"]) and got["platforms"] == (platforms or PLATFORMS["x86_64"])


def test_two_cuda_majors_of_downloaded_wheels_are_refused(plan):
    first = _decide(plan)
    ok = _decide(plan, decided=first, built={"name": "pytorch", "downloaded": [
        "nvidia_cudnn_cu12-9.10.2.21-py3-none-manylinux_2_27_x86_64.whl", "nvidia_ml_py-13.580.82-py3-none-any.whl"]})
    assert ok["built"]["wheel_error"] == "" and "manifest" not in ok["built"]
    mixed = _decide(plan, decided=first, built={"name": "pytorch", "downloaded": [
        "nvidia_cudnn_cu12-9.10.2.21-py3-none-manylinux_2_27_x86_64.whl",
        "nvidia_cublas_cu13-13.0.0.19-py3-none-manylinux_2_27_x86_64.whl"]})
    assert "pytorch" in mixed["built"]["wheel_error"] and "12" in mixed["built"]["wheel_error"]


def test_the_manifest_is_what_the_yaml_wrote(plan):
    first = _decide(plan)
    built = {"name": "pytorch", "report": REPORT, "installed": INSTALLED, "dir": "/opt/e/.versions/pytorch-1",
             "link": "/opt/e/pytorch"}
    got = _decide(plan, decided=first, built=built)
    manifest = got["built"]["manifest"]
    assert manifest["frameworks"] == {"PyTorch": "2.9.1+cu128", "TensorFlow": "2.20.0"}
    assert manifest["cuda"] == ["12.8", "12.5.1"] and manifest["cudnn"] == ["91002", "9"]
    assert manifest["driver_required"] == [first["driver_floors"]["12"]]
    assert manifest["wheels"]["cudnn"] == "9.10.2.21" and "error" not in manifest["wheels"]
    assert manifest["path"] == "/opt/e/pytorch" and manifest["build"] == "/opt/e/.versions/pytorch-1"
    # rendered by ansible-playbook from build.yml's manifest vars at 1e71969 with this environment, REPORT and INSTALLED
    # (to_nice_json), on the frozen data; the environment's own parts (request id, requirements, pip args) compared
    # from the decision itself, which test_the_decision_is_the_environments_of_the_plan pins
    env = first["environments"][0]
    assert manifest == dict(MANIFEST_BY_YAML, request_id=env["request_id"], requirements=env["requirements"],
                            stack=env["stack"], frameworks_modules=env["modules"], gpu_expected=env["gpu_expected"],
                            pip_index_args=env["pip_args"])


def test_needs_are_the_roles_apt_rule(plan):
    got = role_decide("python_env", plan, {"python_env_install_build_tools": "false"}, {"hardware": HW})
    assert got["needs"]["apt"] and not [p for p in got["needs"]["apt"] if p == "g++" or p.endswith("-dev")]
    assert got["needs"]["pypi"]["pytorch"] == got["environments"][0]["requirements"]
