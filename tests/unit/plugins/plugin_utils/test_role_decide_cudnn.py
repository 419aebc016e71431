# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cudnn role's decision module (plugins/plugin_utils/roles/cudnn.py: options, decide, needs) through the one filter
dlbox.stack.role_decide (issue 47).

It replaces the preflight's YAML (the version from cudnn_version or the plan, the plan's CUDA, where the version came
from, handed to the cudnn_selection filter; the role_plan recheck against the GPUs and the driver) and the
cudnn_problems filter of the preflight (another cuDNN on the linker path) and of verify.yml (the installed cuDNN). The
rows pin that the decision gives what those gave (the old filters' functions stay, as the tests written against them
import them), on the frozen data file; the preflight's tasks run by real Ansible.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

import retired_filters as old  # pylint: disable=import-error
from ansible_collections.dlbox.stack.plugins.filter.role_decide import role_decide
from ansible_collections.dlbox.stack.plugins.plugin_utils import role_plan
from ansible_collections.dlbox.stack.plugins.plugin_utils.roles import cudnn, cuda_repo

ROOT = Path(__file__).resolve().parents[4]
FROZEN = str(ROOT / "tests" / "unit" / "data" / "compat-frozen.yml")
HW = {"gpus": ["RTX 4090"], "os": "debian-12"}
TOOLKITS = [{"version": "12.8", "path": "/usr/local/cuda-12.8"}, {"version": "12.6", "path": "/usr/local/cuda-12.6"}]
TASKS = ROOT / "roles" / "cudnn" / "tasks"
PLAN_VERSION = "the plan's stack.cudnn (set cudnn_version to choose another)"


@pytest.fixture(scope="module")
def plan():
    got = role_plan.resolve({}, {"cuda": "12.8"}, hardware=HW, data_path=FROZEN)
    assert got["ok"] and got["stack"]["cudnn"], got["errors"]
    return got


def spec_defaults():
    spec = yaml.safe_load((ROOT / "roles" / "cudnn" / "meta" / "argument_specs.yml").read_text(encoding="utf-8"))
    return {k: v.get("default") for k, v in spec["argument_specs"]["main"]["options"].items()}


def _decide(plan, given=None, **facts):
    return cudnn.decide(plan, cudnn.options(given), dict({"toolkits": TOOLKITS, "arch": "x86_64"}, **facts),
                        data_path=FROZEN)


def _old_selection(plan, opts, arch="x86_64"):
    """What the preflight's YAML handed cudnn_selection."""
    toolkits = TOOLKITS
    given = str(opts["cudnn_version"])
    stack = (plan or {}).get("stack") or {}
    return old.cudnn_selection(toolkits, given or ((stack.get("cudnn") or {}).get("version") or ""),
                               str(opts["cudnn_cuda_major"]), (stack.get("cuda") or {}).get("version") or "",
                               opts["cudnn_method"], arch, opts["cudnn_install_root"],
                               "cudnn_version" if given else PLAN_VERSION, data_path=FROZEN)


def test_options_are_the_argument_specs_defaults():
    assert cudnn.options() == spec_defaults()


@pytest.mark.parametrize("given", [
    {},
    {"cudnn_version": "9.10"},
    {"cudnn_cuda_major": "12"},
    {"cudnn_method": "tarball", "cudnn_install_root": "/opt/nv/cudnn"},
    {"cudnn_method": "wheel", "cudnn_version": "9.10"},
    {"cudnn_version": "8.0"},            # not in the data: refused naming cudnn_version
    {"cudnn_cuda_major": "11"},          # no 11.x toolkit installed: refused
])
def test_the_selection_is_what_the_preflights_yaml_and_cudnn_selection_gave(plan, given):
    got = _decide(plan, given)
    want = _old_selection(plan, cudnn.options(given))
    assert {k: v for k, v in got.items() if k not in ("method", "check", "foreign", "problems")} == want


def test_without_a_plan_the_version_must_be_given():
    got = _decide(None)
    assert got["errors"][0].startswith("No cuDNN version: the plan has no stack.cudnn") and got["check"] is None
    assert _decide(None, {"cudnn_version": "9.10"})["version"].startswith("9.10.")


def test_the_check_is_the_resolvers_recheck_with_the_installed_cuda_where_there_is_a_gpu_or_a_planned_one(plan):
    host = {"gpus": [{"name": "NVIDIA GeForce RTX 4090"}]}
    got = _decide(plan, host=host, request={}, hardware=HW)
    want = role_plan.role_plan("cudnn", plan, host=host, request={}, hardware=HW, data_path=FROZEN, recheck=True,
                               overrides={"cudnn": ["cudnn_version", got["version"]],
                                          "cuda": ["cudnn_cuda_major", got["cuda_version"]]})
    assert got["check"] == {"ok": want["ok"], "errors": want["errors"]} and got["check"]["ok"]
    assert _decide(plan, host={"gpus": []}, hardware=HW)["check"] is not None        # planned with dlbox_plan_hardware
    assert _decide(plan, host={"gpus": []})["check"] is None                         # an image build: no GPU, no plan
    assert _decide(plan, {"cudnn_version": "8.0"}, host=host, hardware=HW)["check"] is None   # refused before


def test_a_cudnn_the_gpus_cannot_run_is_refused_by_the_check(plan):
    """A Pascal GPU (compute capability 6.1): the resolver refuses cuDNN 9.10's build for it."""
    got = _decide(plan, {"cudnn_version": "9.10"}, host={"gpus": ["x"]}, hardware={"gpus": ["GTX 1080 Ti"], "os": "debian-12"})
    want = role_plan.role_plan("cudnn", plan, host={"gpus": ["x"]}, request={}, hardware={"gpus": ["GTX 1080 Ti"], "os": "debian-12"},
                               data_path=FROZEN, recheck=True, overrides={"cudnn": ["cudnn_version", got["version"]],
                                                                          "cuda": ["cudnn_cuda_major", got["cuda_version"]]})
    assert got["check"] == {"ok": want["ok"], "errors": want["errors"]}


def test_the_linkers_other_cudnn_is_what_cudnn_problems_said_in_the_preflight(plan):
    given = {"cudnn_method": "tarball"}
    sel = _decide(plan, given)
    linker = {"linker_paths": ["/usr/local/cuda-12.8/lib64/libcudnn.so.9", sel["lib_dir"] + "/libcudnn.so.9",
                               "/opt/cudnn/9.1.0.70-cuda12/lib/libcudnn.so.9"]}
    got = _decide(plan, given, linker=linker)
    assert got["foreign"] == old.cudnn_problems(linker, sel, "preflight")
    assert got["foreign"] == ["the linker already has libcudnn.so.9 at /usr/local/cuda-12.8/lib64/libcudnn.so.9"]
    assert sel["foreign"] == [] and _decide(plan, given, linker={"linker_paths": []})["foreign"] == []


def test_the_installed_cudnns_problems_are_what_cudnn_problems_said_in_verify(plan):
    sel = _decide(plan)
    right = {"header": sel["header"], "header_version": sel["expect"], "library": sel["lib_dir"] + "/libcudnn.so.9",
             "library_version": sel["expect"], "cudart_version": "12.8"}
    shadowed = dict(right, library="/usr/local/cuda-12.8/lib64/libcudnn.so.9", cudart_version="11.8")
    missing = {"header": sel["header"], "header_version": None, "library_version": None, "load_error": "not found"}
    for installed in (right, shadowed, missing):
        assert _decide(plan, installed=installed)["problems"] == old.cudnn_problems(installed, sel)
    assert _decide(plan, installed=right)["problems"] == []
    assert len(_decide(plan, installed=shadowed)["problems"]) == 2 and sel["problems"] == []


LINKER = {"linker_paths": ["/usr/local/cuda-12.8/lib64/libcudnn.so.9", "/opt/cudnn/9.1.0.70-cuda12/lib/libcudnn.so.9"]}


@pytest.mark.parametrize("given", [{}, {"cudnn_method": "tarball"}, {"cudnn_version": "8.0"}])
def test_the_later_facts_update_the_kept_decision_as_deciding_again_did(plan, given):
    """preflight.yml (the linker) and verify.yml (the installed cuDNN) hand the kept decision and their fact to the same
    entry point (update): what deciding again with that fact gave, the rest as kept."""
    kept = _decide(plan, given, hardware=HW)
    installed = {"header": kept.get("header"), "header_version": None, "library_version": None, "load_error": "not found"}
    for fact in ({"linker": LINKER}, {"linker": {"linker_paths": []}}, {"installed": installed}):
        again = _decide(plan, given, hardware=HW, **fact)
        got = cudnn.update(kept, fact)
        assert got == again, fact
    assert cudnn.update(kept, {"linker": LINKER})["foreign"] == ([] if kept["errors"] else [
        "the linker already has libcudnn.so.9 at /usr/local/cuda-12.8/lib64/libcudnn.so.9"])


def test_the_filter_updates_without_selecting_or_resolving_again(plan, monkeypatch):
    kept = role_decide("cudnn", plan, {}, {"toolkits": TOOLKITS, "arch": "x86_64", "hardware": HW})
    assert kept["check"] is not None
    calls = []
    for module, name in ((role_plan, "role_plan"), (cudnn._cudnn, "select")):  # pylint: disable=protected-access
        real = getattr(module, name)
        monkeypatch.setattr(module, name, lambda *a, _real=real, _name=name, **k: calls.append(_name) or _real(*a, **k))
    got = role_decide("cudnn", None, kept["options"], {"decided": kept, "linker": LINKER})
    assert calls == [] and got["foreign"] == ["the linker already has libcudnn.so.9 at /usr/local/cuda-12.8/lib64/libcudnn.so.9"]
    assert {k: v for k, v in got.items() if k != "foreign"} == {k: v for k, v in kept.items() if k != "foreign"}


def test_needs_the_apt_packages_with_nvidia_repo_only(plan):
    got = role_decide("cudnn", plan, {}, {"toolkits": TOOLKITS, "arch": "x86_64"})
    assert got["needs"]["repositories"] == ["cuda"] and got["needs"]["apt"] == got["apt"]["install"]
    assert all("=" in name for name in got["needs"]["apt"])
    for given in ({"cudnn_method": "tarball"}, {"cudnn_version": "8.0"}):
        assert role_decide("cudnn", plan, given, {"toolkits": TOOLKITS})["needs"] == {"apt": [], "repositories": []}


def test_offline_asks_the_same_decision_for_the_toolkits_cuda_installs(plan):
    got = cuda_repo.needs(run={"cuda": True, "cudnn": True, "nccl": False}, given={"cuda_versions": ["12.6", "12.8"]},
                          plan=plan, host={}, request={}, hardware=HW, data_path=FROZEN)
    newest_first = [{"version": "12.8", "path": "/usr/local/cuda-12.8"}, {"version": "12.6", "path": "/usr/local/cuda-12.6"}]
    decided = cudnn.decide(plan, cudnn.options(), {"toolkits": newest_first, "arch": "x86_64"}, data_path=FROZEN)
    assert got["packages"]["cudnn"] == cudnn.needs(decided)["apt"] + list(cuda_repo.PREREQUISITES)
    assert decided["cuda_version"] == "12.8"


def _tasks(path):
    return {t["name"]: t for t in yaml.safe_load((TASKS / path).read_text(encoding="utf-8"))}


def test_the_tasks_wire_the_decision_and_decide_nothing_themselves():
    preflight = _tasks("preflight.yml")
    assert "'cudnn' | dlbox.stack.role_decide(" in preflight["Decide the cuDNN build for the installed CUDA"][
        "ansible.builtin.set_fact"]["__cudnn_decision"]
    check = preflight["Check the cuDNN against the GPUs and the driver"]
    assert check["ansible.builtin.set_fact"] == {"__cudnn_check": "{{ __cudnn_decision.check }}"}
    assert check["when"] == "__cudnn_decision.check is not none"
    assert ").foreign" in preflight["Refuse to add a second cuDNN"]["vars"]["__cudnn_foreign"]
    assert "'decided': __cudnn_decision" in preflight["Refuse to add a second cuDNN"]["vars"]["__cudnn_foreign"]
    verify = _tasks("verify.yml")
    problems = next(t for n, t in verify.items() if n.startswith("Check that the header"))["vars"]["__cudnn_problems"]
    assert ").problems" in problems and "'decided': __cudnn_decision" in problems
    text = "".join(p.read_text(encoding="utf-8") for p in TASKS.glob("*.yml"))
    assert "dlbox.stack.cudnn_selection" not in text and "dlbox.stack.cudnn_problems" not in text and "role_plan(" not in text


# the two cases as two hosts of one ansible-playbook run (host name -> (its variables given, the refusal or None))
PREFLIGHT_CASES = {"defaults": ({}, None),
                   "cudnn_8_0": ({"cudnn_version": "8.0"}, "cuDNN '8.0' (cudnn_version) is not in data/compat.yml")}
PREFLIGHT_NAMES = ["Decide the cuDNN build for the installed CUDA", "Refuse a cuDNN that does not fit the installed CUDA",
                   "Check the cuDNN against the GPUs and the driver"]


@pytest.fixture(scope="module")
def preflight_run(tmp_path_factory):
    """The preflight's decide, refuse and check tasks with the role's defaults and vars, run once by real Ansible
    (local, facts gathered), one host per case: host name -> {task name: its result}."""
    sys.path.insert(0, str(ROOT / "tests" / "unit" / "roles"))
    from play_runner import run_play  # pylint: disable=import-outside-toplevel,import-error

    preflight = _tasks("preflight.yml")
    variables = dict(yaml.safe_load((ROOT / "roles" / "cudnn" / "defaults" / "main.yml").read_text(encoding="utf-8")),
                     **yaml.safe_load((ROOT / "roles" / "cudnn" / "vars" / "main.yml").read_text(encoding="utf-8")))
    variables.update(dlbox_plan={"ok": True, "stack": {"cuda": {"version": "12.8"}, "cudnn": {"version": "9.10.2.21"}}},
                     __cudnn_cuda={"cuda_toolkits": TOOLKITS})
    # a variable a case gives is a host variable of every host (play variables would win over it)
    per_host = set(k for given, _refused in PREFLIGHT_CASES.values() for k in given)
    hosts = {name: dict({k: given.get(k, variables[k]) for k in per_host}, ansible_connection="local",
                        ansible_python_interpreter=sys.executable) for name, (given, _refused) in PREFLIGHT_CASES.items()}
    play = {"hosts": "all", "gather_facts": True, "gather_subset": ["!all", "platform"],
            "vars": {k: v for k, v in variables.items() if k not in per_host},
            "tasks": [preflight[n] for n in PREFLIGHT_NAMES]
            + [{"name": "Show", "ansible.builtin.debug": {"msg": "{{ __cudnn_decision }}"}}]}
    proc, out = run_play(tmp_path_factory.mktemp("preflight"), play, hosts)
    assert out is not None, proc.stderr[-2000:]
    return {name: {t["task"]["name"]: t["hosts"][name] for t in out["plays"][0]["tasks"] if name in t["hosts"]}
            for name in PREFLIGHT_CASES}


@pytest.mark.parametrize("case", PREFLIGHT_CASES)
def test_the_preflights_decision_run_by_ansible(preflight_run, case):  # pylint: disable=redefined-outer-name
    """The decision is kept as __cudnn_decision; the check is skipped on a host without a GPU."""
    _given, refused = PREFLIGHT_CASES[case]
    names = PREFLIGHT_NAMES
    ran = preflight_run[case]
    if refused:
        assert ran[names[1]].get("failed") and refused in " ".join(ran[names[1]]["msg"])
        return
    assert not ran[names[1]].get("failed") and ran[names[2]].get("skipped")
    decision = ran["Show"]["msg"]
    assert decision["cuda_version"] == "12.8" and decision["check"] is None and decision["needs"]["repositories"] == ["cuda"]
    assert decision["options"]["cudnn_method"] == "nvidia_repo"


# the two cases as two hosts of one ansible-playbook run (host name -> (the installed cuDNN's cudart, failed))
CHECK_CASES = {"cudart_12_8": ("12.8", False), "cudart_11_8": ("11.8", True)}


@pytest.fixture(scope="module")
def check_run(tmp_path_factory):
    """verify.yml's check with the installed cuDNN (cudnn_facts' answer given as __cudnn_facts) through the decision,
    run once by real Ansible, one host per case: host name -> its result of the check."""
    sys.path.insert(0, str(ROOT / "tests" / "unit" / "roles"))
    from play_runner import run_play  # pylint: disable=import-outside-toplevel,import-error

    decision = role_decide("cudnn", None, {"cudnn_version": "9.10"}, {"toolkits": TOOLKITS, "arch": "x86_64"})
    check = next(t for n, t in _tasks("verify.yml").items() if n.startswith("Check that the header"))
    hosts = {}
    for name, (cudart, _failed) in CHECK_CASES.items():
        installed = {"header": decision["header"], "header_version": decision["expect"], "library_version": decision["expect"],
                     "library": decision["lib_dir"] + "/libcudnn.so.9", "cudart_version": cudart}
        hosts[name] = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                       "__cudnn_facts": {"cudnn": installed}}
    variables = dict(yaml.safe_load((ROOT / "roles" / "cudnn" / "defaults" / "main.yml").read_text(encoding="utf-8")),
                     **yaml.safe_load((ROOT / "roles" / "cudnn" / "vars" / "main.yml").read_text(encoding="utf-8")))
    variables.update(cudnn_version="9.10", __cudnn_cuda={"cuda_toolkits": TOOLKITS}, __cudnn_decision=decision)
    play = {"hosts": "all", "gather_facts": True, "gather_subset": ["!all", "platform"], "vars": variables, "tasks": [check]}
    proc, out = run_play(tmp_path_factory.mktemp("check"), play, hosts)
    assert out is not None, proc.stderr[-2000:]
    return out["plays"][0]["tasks"][-1]["hosts"]


@pytest.mark.parametrize("case", CHECK_CASES)
def test_verify_ymls_check_run_by_ansible(check_run, case):  # pylint: disable=redefined-outer-name
    """A library built for another CUDA major is named."""
    _cudart, failed = CHECK_CASES[case]
    got = check_run[case]
    assert bool(got.get("failed")) is failed, got
    if failed:
        assert "libcudnn.so.9 was built for CUDA 11.8, not CUDA 12" in " ".join(got["msg"])


@pytest.fixture(scope="module")
def linker_run(tmp_path_factory):
    """The preflight's refusal of a second cuDNN (cudnn_facts' answer before the install given as __cudnn_before)
    through the kept decision's update, run once by real Ansible: host name -> its result."""
    sys.path.insert(0, str(ROOT / "tests" / "unit" / "roles"))
    from play_runner import run_play  # pylint: disable=import-outside-toplevel,import-error

    decision = role_decide("cudnn", None, {"cudnn_version": "9.10"}, {"toolkits": TOOLKITS, "arch": "x86_64"})
    hosts = {name: {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                    "__cudnn_before": {"cudnn": {"linker_paths": paths}}}
             for name, paths in (("other", LINKER["linker_paths"]), ("own", [decision["lib_dir"] + "/libcudnn.so.9"]))}
    play = {"hosts": "all", "gather_facts": False, "vars": {"cudnn_method": "nvidia_repo", "__cudnn_decision": decision},
            "tasks": [_tasks("preflight.yml")["Refuse to add a second cuDNN"]]}
    proc, out = run_play(tmp_path_factory.mktemp("linker"), play, hosts)
    assert out is not None, proc.stderr[-2000:]
    return out["plays"][0]["tasks"][0]["hosts"]


def test_the_preflights_second_cudnn_refusal_run_by_ansible(linker_run):  # pylint: disable=redefined-outer-name
    """Another cuDNN on the linker path is refused naming it; the role's own library is not."""
    assert linker_run["other"].get("failed")
    assert "the linker already has libcudnn.so.9 at /usr/local/cuda-12.8/lib64/libcudnn.so.9" in linker_run["other"]["msg"]
    assert not linker_run["own"].get("failed"), linker_run["own"]
