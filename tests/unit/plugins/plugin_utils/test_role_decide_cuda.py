# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cuda role's decision module (plugins/plugin_utils/roles/cuda.py: options, decide, needs) through the one filter
dlbox.stack.role_decide (issue 47).

It replaces the cuda_plan filter (the preflight's decision) and the Jinja of verify.yml's last task (the toolkits that did
not verify, and error 802 named through the cuda_failure_hint filter). The rows below pin that the decision gives what
those gave: the old preflight's option mapping, the old verify Jinja rendered by Ansible's own templar on the same
results, and the task run by real Ansible. Verification outputs: the lines roles/cuda/files/cuda-verify.sh prints and
the recorded error 802 of tests/fixtures/fabric/cuda-802-devicequery-h100.txt (its source in SOURCES.md there).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar

from ansible_collections.dlbox.stack.plugins.filter.role_decide import role_decide
from ansible_collections.dlbox.stack.plugins.plugin_utils import cuda_plan, role_plan
from ansible_collections.dlbox.stack.plugins.plugin_utils.roles import cuda, cuda_repo

try:  # ansible-core 2.19: only trusted text is a template
    from ansible.template import trust_as_template
except ImportError:  # pragma: no cover - older ansible-core templates any text
    def trust_as_template(text):
        return text

ROOT = Path(__file__).resolve().parents[4]
FROZEN = str(ROOT / "tests" / "unit" / "data" / "compat-frozen.yml")
HW = {"gpus": ["RTX 4090"], "os": "debian-12"}
GXX12 = [{"path": "/usr/bin/g++", "major": 12}]
E802 = (ROOT / "tests" / "fixtures" / "fabric" / "cuda-802-devicequery-h100.txt").read_text(encoding="utf-8")
TASKS = ROOT / "roles" / "cuda" / "tasks"

# verify.yml's Jinja before this module (it built the list of toolkits that did not verify)
OLD_UNVERIFIED = """
{%- set bad = [] -%}
{%- for r in __cuda_verify.results | default([]) | selectattr('rc', 'defined') | rejectattr('rc', 'equalto', 0) -%}
{%- set _ = bad.append('CUDA ' ~ r.item.version ~ ' (' ~ r.item.nvcc ~ ') rc ' ~ r.rc ~ ': '
                       ~ ((r.stdout_lines + r.stderr_lines)[-12:] | join(' | '))) -%}
{%- endfor -%}
{{ bad | to_json }}"""


def result(version, rc, stdout, stderr=""):
    return {"item": {"version": version, "nvcc": "/usr/local/cuda-%s/bin/nvcc" % version, "ccbin": ""}, "rc": rc,
            "stdout_lines": stdout.splitlines(), "stderr_lines": stderr.splitlines(), "changed": False}


PASSED = result("13.0", 0, "nvcc=/usr/local/cuda-13.0/bin/nvcc nvcc_release=13.0 nvcc_version=13.0.88\n"
                           "host_compiler=/usr/bin/g++ gcc=12.2.0 archs=89\ncompiled=yes compile_ms=2100 binary_bytes=900000\n"
                           "sass_sm_89=yes\nran=yes")
WRONG_RELEASE = result("12.8", 2, "nvcc=/usr/local/cuda-12.8/bin/nvcc nvcc_release=12.6 nvcc_version=12.6.85",
                       "cuda-verify: /usr/local/cuda-12.8/bin/nvcc --version says release '12.6', not 12.8")
ON_GPU_802 = result("12.8", 4, "nvcc=/usr/local/cuda-12.8/bin/nvcc nvcc_release=12.8 nvcc_version=12.8.93\ncompiled=yes\n"
                    + E802, "cuda-verify: the program failed on the GPU")
LONG = result("12.6", 3, "\n".join("line %d" % i for i in range(20)), "cuda-verify: could not compile")
SKIPPED = {"item": {"version": "12.6", "nvcc": "x"}, "skipped": True, "changed": False}


@pytest.fixture(scope="module")
def plan():
    got = role_plan.resolve({}, {"driver_method": "nvidia_repo", "cuda": "13.0"}, hardware=HW, data_path=FROZEN)
    assert got["ok"], got["errors"]
    return got


def spec_defaults():
    spec = yaml.safe_load((ROOT / "roles" / "cuda" / "meta" / "argument_specs.yml").read_text(encoding="utf-8"))
    return {k: v.get("default") for k, v in spec["argument_specs"]["main"]["options"].items()}


def test_options_are_the_argument_specs_defaults_and_leave_cuda_repos_variables_out():
    assert cuda.options() == spec_defaults()
    assert "cuda_repo_packages" not in cuda.options({"cuda_repo_packages": ["x"]})
    assert cuda.options({"cuda_compat": "false"})["cuda_compat"] is False


@pytest.mark.parametrize("given, wsl", [
    ({}, False),
    ({"cuda_versions": ["12.6", "13.0"], "cuda_default_version": "12.6", "cuda_compat": True}, False),
    ({"cuda_verify_compile": False, "cuda_verify_archs": ["9.0"]}, False),
    ({"cuda_method": "distro"}, True),
    ({"cuda_method": "pip_wheels", "cuda_remove_unlisted": True, "cuda_host_compiler": "/usr/bin/g++"}, False),
])
def test_the_preflights_decision_is_what_the_cuda_plan_filter_decided(plan, given, wsl):
    """The old preflight handed cuda_plan this mapping of the role's variables; decide() maps them the same way."""
    opts = cuda.options(given)
    host = {"virtualization": {"wsl": wsl}}
    installed = {"cuda_toolkits": [{"version": "12.4", "path": "/usr/local/cuda-12.4", "source": "nvidia_repo"}],
                 "host_compilers": GXX12}
    old_options = {"method": opts["cuda_method"], "versions": opts["cuda_versions"], "default": opts["cuda_default_version"],
                   "compat": opts["cuda_compat"], "remove_unlisted": opts["cuda_remove_unlisted"],
                   "local_repo_debs": opts["cuda_local_repo_debs"],
                   "verify": opts["cuda_verify"] and opts["cuda_verify_compile"], "verify_archs": opts["cuda_verify_archs"],
                   "host_compiler": opts["cuda_host_compiler"], "wsl": wsl}
    got = role_plan.role_plan("cuda", plan, host=host, request={}, hardware=HW, data_path=FROZEN)

    def resolve(version):
        return role_plan.role_plan("cuda", got["plan"], host=host, request={}, hardware=HW, data_path=FROZEN,
                                   overrides={"cuda": ("cuda_versions", version)})["plan"]

    old = cuda_plan.decide(got["data"], got["plan"], old_options, resolve=resolve, installed=installed,
                           compilers=installed["host_compilers"])
    new = cuda.decide(plan, opts, {"host": host, "request": {}, "hardware": HW, "installed": installed}, data_path=FROZEN)
    assert {k: v for k, v in new.items() if k not in ("unverified", "verify_hint", "nvswitch")} == old
    assert new["unverified"] == [] and new["verify_hint"] == "" and new["nvswitch"] is False


def test_the_compile_check_needs_a_compiler_only_when_cuda_verify_compile_asks_for_it(plan):
    """cuda_verify and cuda_verify_compile both: the preflight handed cuda_plan 'verify: cuda_verify and
    cuda_verify_compile'; a host without g++ is refused only when the compile will run."""
    facts = {"hardware": HW, "installed": {"host_compilers": []}}
    assert not cuda.decide(plan, cuda.options(), facts, data_path=FROZEN)["ok"]
    for given in ({"cuda_verify_compile": False}, {"cuda_verify": False}):
        assert cuda.decide(plan, cuda.options(given), facts, data_path=FROZEN)["ok"]


@pytest.mark.parametrize("results", [
    [PASSED],
    [PASSED, WRONG_RELEASE],
    [WRONG_RELEASE, LONG, SKIPPED],
    [ON_GPU_802],
    [],
])
def test_unverified_is_what_verify_ymls_jinja_built(results):
    templar = Templar(loader=DataLoader(), variables={"__cuda_verify": {"results": results}})
    assert cuda.unverified(results) == _loaded(templar.template(trust_as_template(OLD_UNVERIFIED)))


def _loaded(rendered):
    return rendered if isinstance(rendered, list) else yaml.safe_load(rendered)


def test_a_failed_check_is_named_with_its_last_twelve_lines():
    last_twelve = ["line %d" % i for i in range(9, 20)] + ["cuda-verify: could not compile"]
    assert cuda.unverified([PASSED, LONG]) == ["CUDA 12.6 (/usr/local/cuda-12.6/bin/nvcc) rc 3: " + " | ".join(last_twelve)]


def test_error_802_names_fabric_manager_on_an_nvswitch_host_from_its_facts_or_the_plan(plan):
    opts = cuda.options()
    facts = {"hardware": HW, "installed": {"host_compilers": GXX12}, "verify": [PASSED, ON_GPU_802]}
    by_facts = role_decide("cuda", plan, opts, dict(facts, host={"nvswitches": [{"bdf": "0000:05:00.0"}]}))
    by_plan = role_decide("cuda", dict(plan, host=dict(plan["host"], nvswitch=True)), opts, facts)
    for got in (by_facts, by_plan):
        assert "Fabric Manager (nvidia-fabricmanager.service)" in got["verify_hint"]
        assert got["unverified"][0].startswith("CUDA 12.8 (/usr/local/cuda-12.8/bin/nvcc) rc 4: ")
    plain = role_decide("cuda", plan, opts, facts)
    assert "this host has no NVSwitch" in plain["verify_hint"]
    assert role_decide("cuda", plan, opts, dict(facts, verify=[PASSED, WRONG_RELEASE]))["verify_hint"] == ""


def test_the_verification_alone_decides_without_the_roles_options_or_a_stack():
    """molecule/gpu_host_hgx runs verify.yml alone: a kept decision with toolkits and archs only, and dlbox_plan = the
    host's facts (no stack); the verification's results still go through the same entry point."""
    got = role_decide("cuda", {"host": {"nvswitch": True}}, {},
                      {"host": {"gpus": []}, "request": {}, "hardware": None, "installed": None, "verify": [ON_GPU_802]})
    assert got["unverified"][0].startswith("CUDA 12.8 ") and "Fabric Manager" in got["verify_hint"]


@pytest.mark.parametrize("results", [[PASSED], [PASSED, WRONG_RELEASE], [PASSED, ON_GPU_802], [LONG, SKIPPED], []])
@pytest.mark.parametrize("nvswitch", [False, True])
def test_the_verifications_results_update_the_kept_decision_as_deciding_again_did(plan, results, nvswitch, monkeypatch):
    """verify.yml hands the kept decision and the results to the same entry point (update): the same unverified and
    verify_hint as the whole decision again with the results (what verify.yml did), nothing else changed, and the plan
    not resolved again."""
    plan = dict(plan, host=dict(plan["host"], nvswitch=nvswitch))
    facts = {"host": {"gpus": []}, "request": {}, "hardware": HW, "installed": {"host_compilers": GXX12, "cuda_toolkits": []}}
    kept = role_decide("cuda", plan, {}, facts)
    again = role_decide("cuda", plan, kept["options"], dict(facts, verify=results))
    calls = []
    real = role_plan.role_plan
    monkeypatch.setattr(role_plan, "role_plan", lambda *a, **k: calls.append(a) or real(*a, **k))
    got = role_decide("cuda", None, kept["options"], {"decided": kept, "verify": results})
    assert calls == []
    assert got == again
    assert {k: v for k, v in got.items() if k not in ("unverified", "verify_hint")} == \
        {k: v for k, v in kept.items() if k not in ("unverified", "verify_hint")}
    assert kept["nvswitch"] is nvswitch and cuda.update(kept, {"verify": results}) == dict(
        kept, unverified=again["unverified"], verify_hint=again["verify_hint"])


def test_needs_the_toolkits_packages_from_nvidias_repository_with_nvidia_repo_only(plan):
    facts = {"hardware": HW, "installed": {"host_compilers": GXX12}}
    got = role_decide("cuda", plan, {"cuda_versions": ["12.6", "13.0"], "cuda_compat": True}, facts)
    assert got["needs"] == {"apt": ["cuda-toolkit-12-6", "cuda-compat-12-6", "cuda-toolkit-13-0", "cuda-compat-13-0"],
                            "repositories": ["cuda"]}
    assert role_decide("cuda", plan, {"cuda_method": "pip_wheels"}, facts)["needs"] == {"apt": [], "repositories": []}


def test_offline_asks_the_same_decision_before_the_host_is_read(plan):
    """cuda_repo.needs (playbooks/tasks/offline_plan.yml) takes cuda's packages from decide() without "installed": no
    verification (no compiler needed), no removals, as the offline decision always was."""
    before = cuda.decide(plan, cuda.options({"cuda_verify": True}), {"hardware": HW}, data_path=FROZEN)
    assert before["ok"] and before["remove"] == []
    got = cuda_repo.needs(run={"cuda": True, "cudnn": False, "nccl": False}, given={}, plan=plan, host={}, request={},
                          hardware=HW, data_path=FROZEN)
    assert got["packages"]["cuda"] == cuda.needs(before)["apt"] + list(cuda_repo.PREREQUISITES)


def _task(path, name):
    return next(t for t in yaml.safe_load((TASKS / path).read_text(encoding="utf-8")) if t.get("name") == name)


def test_the_tasks_decide_through_role_decide_and_keep_no_decision_of_their_own():
    decide = _task("preflight.yml", "Decide the toolkits from the plan")
    assert "'cuda' | dlbox.stack.role_decide(" in decide["ansible.builtin.set_fact"]["__cuda_decided"]
    fail = _task("verify.yml", "Fail when a toolkit does not verify")
    assert "'cuda' | dlbox.stack.role_decide(" in fail["vars"]["__cuda_verified"]
    assert "'decided': __cuda_decided" in fail["vars"]["__cuda_verified"]
    text = (TASKS / "verify.yml").read_text(encoding="utf-8") + (TASKS / "preflight.yml").read_text(encoding="utf-8")
    assert "{%" not in text and "cuda_plan(" not in text and "cuda_failure_hint" not in text


# the two cases as two hosts of one ansible-playbook run (host name -> (__cuda_verify's results, failed))
VERIFY_CASES = {"passed": ([PASSED], False), "on_gpu_802": ([PASSED, ON_GPU_802], True)}


@pytest.fixture(scope="module")
def verify_run(tmp_path_factory, plan):  # pylint: disable=redefined-outer-name
    """verify.yml's last task run once by Ansible, one host per case: host name -> its result."""
    sys.path.insert(0, str(ROOT / "tests" / "unit" / "roles"))
    from play_runner import run_play  # pylint: disable=import-outside-toplevel,import-error

    task = _task("verify.yml", "Fail when a toolkit does not verify")
    nvswitch_plan = dict(plan, host=dict(plan["host"], nvswitch=True))
    installed = {"host_compilers": GXX12, "cuda_toolkits": []}
    # the preflight's kept decision (verify.yml reads no plan of its own: the decision says NVSwitch)
    variables = {"__cuda_decided": role_decide("cuda", nvswitch_plan, {}, {"hardware": HW, "installed": installed}),
                 "__cuda_installed": installed}
    hosts = {name: {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                    "__cuda_verify": {"results": results}} for name, (results, _failed) in VERIFY_CASES.items()}
    play = {"hosts": "all", "gather_facts": False, "vars": variables, "tasks": [task]}
    proc, out = run_play(tmp_path_factory.mktemp("verify"), play, hosts)
    assert out is not None, proc.stderr[-2000:]
    return out["plays"][0]["tasks"][0]["hosts"]


@pytest.mark.parametrize("case", VERIFY_CASES)
def test_verify_ymls_last_task_run_by_ansible(verify_run, case):  # pylint: disable=redefined-outer-name
    _results, failed = VERIFY_CASES[case]
    got = verify_run[case]
    assert bool(got.get("failed")) is failed, got
    if failed:
        assert got["msg"][0].startswith("Not verified (rc 2: wrong release")
        assert got["msg"][1].startswith("CUDA 12.8 (/usr/local/cuda-12.8/bin/nvcc) rc 4: ")
        assert "Fabric Manager (nvidia-fabricmanager.service)" in got["msg"][2]
