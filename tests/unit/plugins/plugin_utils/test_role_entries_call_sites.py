# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The roles' own entries that replaced public filters (issue 47: cuda's held_packages and distro_minimum, python_env's
lock and check_lines, jetpack's pytorch and power_result, package_cache's client_apt), checked where Molecule alone
would run them: every call of a role's own entry in the roles' tasks, the playbooks and the Molecule scenarios names
only keywords of the entry's function and every one it needs; and each rewritten call site, taken from its task file
as it is, is rendered by real Ansible (one ansible-playbook run, local host) and gives what the pure function the old
filter called gives."""

from __future__ import annotations

import inspect
import json
import re
import sys
from pathlib import Path

import pytest
import yaml

from ansible_collections.dlbox.stack.plugins.plugin_utils import cuda_plan, jetpack_plan, jetpack_pytorch
from ansible_collections.dlbox.stack.plugins.plugin_utils import package_cache_plan, python_env_plan, roles
from ansible_collections.dlbox.stack.plugins.plugin_utils.compat_data import load_compat
from jinja_calls import call_arguments, keyword_names  # pylint: disable=import-error

ROOT = Path(__file__).resolve().parents[4]
CALL = re.compile(r"'(\w+)'\s*\|\s*dlbox\.stack\.role_module\(\s*'(\w+)'\s*,?")
MOVED = {("cuda", "held_packages"), ("cuda", "distro_minimum"), ("python_env", "lock"), ("python_env", "check_lines"),
         ("jetpack", "pytorch"), ("jetpack", "power_result"), ("package_cache", "client_apt")}


def own_entry_calls(root=ROOT, standard=False):
    """(file, role, entry, keyword names) of every call of a role's own entry (not options/vendor/decide/needs/plan);
    with ``standard``, of every call of options/vendor/decide/needs/plan instead."""
    files = sorted(root.glob("roles/*/tasks/*.yml")) + sorted(root.glob("roles/*/vars/*.yml")) \
        + sorted(root.glob("playbooks/**/*.yml")) + sorted(root.glob("molecule/**/*.yml"))
    found = []
    for path in files:
        text = path.read_text(encoding="utf-8")
        for match in CALL.finditer(text):
            role, entry = match.groups()
            if (entry in roles.ENTRIES) != standard:
                continue
            found.append((str(path.relative_to(root)), role, entry, keyword_names(call_arguments(text, match.end()))))
    return found


def signature_problems(calls):
    problems = []
    for where, role, entry, names in calls:
        if entry not in roles.ROLES.get(role, ()):
            problems.append("%s: %s has no entry %r in ROLES" % (where, role, entry))
            continue
        params = inspect.signature(getattr(roles.module(role), entry)).parameters
        if None in names:
            problems.append("%s: %s.%s takes keyword arguments only (role_module), not a positional one" % (where, role, entry))
        unknown = [n for n in names if n is not None and n not in params]
        missing = [n for n, p in params.items() if p.default is inspect.Parameter.empty and n not in names]
        if unknown or missing:
            problems.append("%s: %s.%s unknown %s, missing %s" % (where, role, entry, unknown, missing))
    return problems


def test_every_call_of_a_roles_own_entry_names_the_entrys_keywords():
    calls = own_entry_calls()
    seen = {(call[1], call[2]) for call in calls}
    assert MOVED <= seen, MOVED - seen          # the scan sees every rewritten call
    assert signature_problems(calls) == []


def standard_problems(calls):
    """A standard entry's call that names a keyword role_module refuses (roles.keywords) or passes one positionally."""
    problems = []
    for where, role, entry, names in calls:
        takes = roles.keywords(role, entry)
        if None in names:
            problems.append("%s: %s.%s takes keyword arguments only (role_module), not a positional one" % (where, role, entry))
        unknown = [n for n in names if n is not None and n not in takes]
        if unknown:
            problems.append("%s: %s.%s unknown %s (it takes %s)" % (where, role, entry, unknown, ", ".join(takes)))
    return problems


def test_every_call_of_a_standard_entry_names_only_keywords_it_takes():
    calls = own_entry_calls(standard=True)
    seen = {(call[1], call[2]) for call in calls}
    assert {("docker", "decide"), ("jetpack", "decide"), ("common", "needs"), ("cuda_repo", "needs"),
            ("common", "plan"), ("docker", "vendor")} <= seen, seen     # the scan sees the standard calls
    assert standard_problems(calls) == []


def test_the_standard_check_names_a_wrong_keyword_and_a_positional_one(tmp_path):
    (tmp_path / "roles" / "x" / "tasks").mkdir(parents=True)
    (tmp_path / "roles" / "x" / "tasks" / "main.yml").write_text(
        "a: \"{{ 'docker' | dlbox.stack.role_module('decide', options=o, facts={}) }}\"\n"
        "b: \"{{ 'common' | dlbox.stack.role_module('needs', givn=g) }}\"\n"
        "c: \"{{ 'docker' | dlbox.stack.role_module('vendor', p) }}\"\n"
        "d: \"{{ 'nccl' | dlbox.stack.role_module('decide', plan=p, given=g, facts=f) }}\"\n", encoding="utf-8")
    got = standard_problems(own_entry_calls(tmp_path, standard=True))
    assert got == ["roles/x/tasks/main.yml: docker.decide unknown ['options'] (it takes plan, given, facts)",
                   "roles/x/tasks/main.yml: common.needs unknown ['givn'] (it takes given)",
                   "roles/x/tasks/main.yml: docker.vendor takes keyword arguments only (role_module), not a positional one"]


def test_the_check_names_a_wrong_keyword_a_missing_one_and_a_positional_one(tmp_path):
    (tmp_path / "roles" / "x" / "tasks").mkdir(parents=True)
    (tmp_path / "roles" / "x" / "tasks" / "main.yml").write_text(
        "a: \"{{ 'cuda' | dlbox.stack.role_module('held_packages', dpkg_lines=l, version=v) }}\"\n"
        "b: \"{{ 'jetpack' | dlbox.stack.role_module('power_result', power=p) }}\"\n"
        "c: \"{{ 'python_env' | dlbox.stack.role_module('check_lines', r) }}\"\n"
        "d: \"{{ 'cuda' | dlbox.stack.role_module('lock', installed=i, sha256sum_output=s) }}\"\n", encoding="utf-8")
    got = signature_problems(own_entry_calls(tmp_path))
    assert got == ["roles/x/tasks/main.yml: cuda.held_packages unknown ['version'], missing ['versions']",
                   "roles/x/tasks/main.yml: jetpack.power_result unknown [], missing ['rc']",
                   "roles/x/tasks/main.yml: python_env.check_lines takes keyword arguments only (role_module), not a "
                   "positional one",
                   "roles/x/tasks/main.yml: python_env.check_lines unknown [], missing ['report']",
                   "roles/x/tasks/main.yml: cuda has no entry 'lock' in ROLES"]


# --- each rewritten call site rendered by real Ansible ----------------------------------------------------------------

def _tasks(path):
    return yaml.safe_load((ROOT / path).read_text(encoding="utf-8"))


def _find(tasks, name):
    for task in tasks:
        if task.get("name") == name:
            return task
        found = _find(task.get("block") or [], name) if "block" in task else None
        if found:
            return found
    raise AssertionError(name)


DPKG = ["ii  cuda-nvcc-12-8", "ii  cuda-cudart-12-8", "ii  cuda-nvcc-12-6", "rc  cuda-cudart-dev-12-8", "ii  libc6"]
POLICY = "cuda-crt-13-1:\n  Installed: (none)\n  Candidate: 13.1.115-0ubuntu1\n  Version table:\n"
MINIMUM = load_compat()["os"]["distros"]["ubuntu-26.04"]["distro_cuda_minimum"]
PIP_LIST = [{"name": "six", "version": "1.17.0"}, {"name": "numpy", "version": "2.1.0"}]
SUMS = "%s  /w/six-1.17.0-py2.py3-none-any.whl\n" % ("c" * 64)
REPORT = {"status": 0, "frameworks": [{"framework": "PyTorch", "version": "2.9.1+cpu", "gpu_visible": False,
                                       "steps": [{"name": "autocast", "device": "cpu", "ok": True, "seconds": 0.25,
                                                  "detail": "bfloat16 training step"}]}]}
POWER = {"id": 0, "name": "MAXN", "change": True, "pending": False, "reboot": "never"}
NV_OUT = "NVPM WARN: Reboot required for changing to this power mode: 0\nDO YOU WANT TO REBOOT NOW? enter YES/yes to confirm:\n"
JETSON_PLAN = {"stack": {"python": {"version": "3.10"}, "jetpack": {"version": "6.2", "family": "orin"},
                         "pytorch": {"version": "2.5.0", "variant": "jp6-cu126",
                                     "index_url": "https://pypi.jetson-ai-lab.io/jp6/cu126"}}}
TORCH_OPTIONS = {"source": "auto", "mirror_url": "", "mirror_kind": "index", "libraries_url": "", "components": ["all"]}
NVIDIA_PAGE = (ROOT / "tests" / "fixtures" / "jetson" / "pytorch_index" / "nvidia-redist-jp-v61-pytorch.html").read_text(
    encoding="utf-8")


def _site(path, name, key, where="vars"):
    """The expression ``key`` of task ``name`` of ``path`` (its set_fact's or its vars'), with the task's vars."""
    task = _find(_tasks(path), name)
    own = dict(task.get("vars") or {})
    expression = (task.get("ansible.builtin.set_fact") or {}).get(key) if where == "set_fact" else \
        task["loop"] if where == "loop" else own.pop(key)
    assert "dlbox.stack.role_module(" in expression, (path, name)
    return expression, {k: v for k, v in own.items() if k != key}


def _sites():
    """(label, expression, the task's own vars, the variables it reads, what the old filter's function gives)."""
    jetpack_data = jetpack_plan.load_jetson_data()
    chosen = jetpack_pytorch.choose(JETSON_PLAN["stack"]["pytorch"], TORCH_OPTIONS, jetpack_data["pytorch_sources"],
                                    jetpack=JETSON_PLAN["stack"]["jetpack"], holds=None)
    python = JETSON_PLAN["stack"]["python"]["version"]
    holds = jetpack_pytorch.listing_versions(NVIDIA_PAGE, python)
    listed = jetpack_pytorch.choose(JETSON_PLAN["stack"]["pytorch"], TORCH_OPTIONS, jetpack_data["pytorch_sources"],
                                    jetpack=JETSON_PLAN["stack"]["jetpack"], holds=holds)
    found = jetpack_pytorch.check_listing(NVIDIA_PAGE, listed, python=python)
    listed = dict(listed, ok=found["ok"], errors=found["errors"], versions=found["versions"])
    # the archive of the first library NVIDIA's wheel needs, answered 404 (already as {url, ok, answer})
    reach = [{"url": chosen["libraries"][0]["url"], "ok": False, "answer": "HTTP 404"}]
    reached = jetpack_pytorch.check_reach(chosen, reach)
    env = {"name": "t", "python": "3.11"}
    header = [env["name"] + " (Python " + env["python"] + "), written by dlbox.stack.python_env",
              "Reinstall: python" + env["python"] + " -m venv NEW && NEW/bin/pip install --require-hashes -r requirements.lock"]
    cache = {"package_cache_host": "cache1.lab", "package_cache_apt_port": 8080, "package_cache_pypi_port": 8081}
    set_run = {"rc": 0, "stdout": NV_OUT, "stderr": ""}
    return [
        ("cuda held_packages",) + _site("roles/cuda/tasks/apt_toolkits.yml",
                                        "Hold the toolkits' packages (cuda_hold), or release the holds", "loop", "loop")
        + ({"__cuda_dpkg_packages": {"stdout_lines": DPKG}, "__cuda_decided": {"toolkits": [{"version": "12.8"}]}},
           cuda_plan.held_packages(DPKG, ["12.8"])),
        ("cuda distro_minimum",) + _site("roles/cuda/tasks/install_distro.yml",
                                         "Refuse a toolkit that apt would install without its fix", "__cuda_distro_floor_problems")
        + ({"__cuda_distro_floor_policy": {"results": [{"item": {"package": "cuda-crt-13-1"}, "stdout": POLICY}]},
            "__cuda_decided": {"distro": {"minimum": MINIMUM}}, "dlbox_plan": {"host": {"os": "ubuntu-26.04"}}},
           cuda_plan.distro_minimum_problems(MINIMUM, {"cuda-crt-13-1": POLICY}, "ubuntu-26.04")),
        ("python_env lock",) + _site("roles/python_env/tasks/build.yml", "Render the lock", "__python_env_lock", "set_fact")
        + ({"__python_env_installed": {"stdout": json.dumps(PIP_LIST)}, "__python_env_sums": {"stdout": SUMS},
            "__python_env_env": env},
           python_env_plan.render_lock(PIP_LIST, python_env_plan.parse_sha256sum(SUMS), header)),
        ("python_env check_lines", _find(_tasks("roles/python_env/tasks/verify.yml"), "Show what dlbox-check found")
         ["ansible.builtin.debug"]["msg"], {},
         {"python_env_check_results": {"t": REPORT}, "item": {"item": {"name": "t"}}}, python_env_plan.check_lines(REPORT)),
        ("jetpack pytorch",) + _site("roles/jetpack/tasks/pytorch.yml", "Choose the source of the plan's PyTorch",
                                     "__jetpack_pytorch", "set_fact")
        + ({"__jetpack_pytorch_options": TORCH_OPTIONS, "dlbox_plan": JETSON_PLAN}, chosen),
        ("jetpack pytorch listing",) + _site("roles/jetpack/tasks/pytorch.yml", "Check that the source has the planned wheel",
                                             "__jetpack_pytorch", "set_fact")
        + ({"__jetpack_pytorch_options": TORCH_OPTIONS, "dlbox_plan": JETSON_PLAN,
            "__jetpack_pytorch_folder": {"skipped": True}, "__jetpack_pytorch_page": {"content": NVIDIA_PAGE}}, listed),
        ("jetpack pytorch reach",) + _site("roles/jetpack/tasks/pytorch.yml",
                                           "Refuse a library archive this host cannot fetch", "__jetpack_libraries_check")
        + ({"__jetpack_pytorch_options": TORCH_OPTIONS, "dlbox_plan": JETSON_PLAN,
            "__jetpack_libraries_reach": {"results": reach}, "__jetpack_libraries_files": {"results": []},
            "__jetpack_libraries_missing": ["x"]}, dict(chosen, ok=reached["ok"], errors=reached["errors"])),
        ("jetpack power_result ran",) + _site("roles/jetpack/tasks/power.yml", "Read what nvpmodel did",
                                              "__jetpack_power_step", "set_fact")
        + ({"__jetpack_decided": {"power": POWER}, "__jetpack_power_set": set_run},
           jetpack_plan.power_result(POWER, 0, NV_OUT + "\n")),
        ("jetpack power_result not run",) + _site("roles/jetpack/tasks/power.yml", "Read what nvpmodel did",
                                                  "__jetpack_power_step", "set_fact")
        + ({"__jetpack_decided": {"power": POWER}}, jetpack_plan.power_result(POWER, None, "\n")),
        ("package_cache client_apt",) + _site(
            "roles/common/tasks/proxy.yml",
            "Work out the fleet package cache's part of the apt proxy and pip's index (dlbox_package_cache_host)",
            "__common_apt_cache", "set_fact")
        + (dict(cache, ansible_facts={"fqdn": "ws1.lab"}),
           package_cache_plan.client_apt("cache1.lab", "localhost", "ws1.lab", "auto", 8080, ["localhost", "127.0.0.1"], 8081)),
    ]


def _power_now_site():
    """power.yml's nvpmodel task reads its own result in failed_when (its vars' __jetpack_power_step_now)."""
    task = next(t for t in _tasks("roles/jetpack/tasks/power.yml") if t["name"].startswith("Set the power mode with nvpmodel -m"))
    return task["vars"]["__jetpack_power_step_now"]


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    sys.path.insert(0, str(ROOT / "tests" / "unit" / "roles"))
    from play_runner import run_play  # pylint: disable=import-outside-toplevel,import-error

    sites = _sites() + [("jetpack power_result now", _power_now_site(), {},
                         {"__jetpack_decided": {"power": POWER}, "__jetpack_power_set": {"rc": 0, "stdout": NV_OUT, "stderr": ""}},
                         jetpack_plan.power_result(POWER, 0, NV_OUT + "\n"))]
    tasks = []
    for index, (label, expression, own, variables, _want) in enumerate(sites):
        tasks.append({"name": label, "ansible.builtin.set_fact": {"__got_%d" % index: expression},
                      "vars": dict(variables, **own)})
    tasks.append({"name": "show", "ansible.builtin.debug": {
        "msg": "{{ {%s} }}" % ", ".join("'%d': __got_%d" % (i, i) for i in range(len(sites)))}})
    tmp = tmp_path_factory.mktemp("entries")
    proc, out = run_play(tmp, {"hosts": "all", "gather_facts": False, "tasks": tasks},
                         {"localhost": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}})
    assert out is not None, proc.stderr[-3000:]
    ran = out["plays"][0]["tasks"]
    failed = [(t["task"]["name"], t["hosts"]["localhost"].get("msg")) for t in ran if t["hosts"]["localhost"].get("failed")]
    assert failed == []
    return sites, ran[-1]["hosts"]["localhost"]["msg"]


@pytest.mark.parametrize("index", range(11))
def test_each_rewritten_call_site_gives_what_the_old_filter_gave(rendered, index):
    sites, got = rendered
    label, _expression, _own, _variables, want = sites[index]
    assert got[str(index)] == json.loads(json.dumps(want)), label


def test_the_fixtures_reach_the_branches_that_matter():
    """Each site's case does something: holds, a refusal, a lock with a hash, a pending reboot, the cache's proxy."""
    want = {s[0]: s[4] for s in _sites()}
    assert want["cuda held_packages"] == ["cuda-cudart-12-8", "cuda-nvcc-12-8"]
    assert len(want["cuda distro_minimum"]) == 1 and "resolute-updates" in want["cuda distro_minimum"][0]
    assert "--hash=sha256:" + "c" * 64 in want["python_env lock"]["text"] and want["python_env lock"]["missing"] == ["numpy==2.1.0"]
    assert want["python_env check_lines"][-1] == "Result: OK"
    assert want["jetpack pytorch"]["ok"] and want["jetpack pytorch listing"]["versions"]
    assert not want["jetpack pytorch reach"]["ok"] and "HTTP 404" in want["jetpack pytorch reach"]["errors"][0]
    assert want["jetpack power_result ran"]["state"] == "pending_reboot"
    assert want["jetpack power_result not run"]["state"] == "unchanged"
    assert want["package_cache client_apt"]["proxy"] == "http://cache1.lab:8080"


def test_every_call_site_of_the_moved_entries_is_rendered_here():
    """A new call site of a moved entry in a role's tasks is rendered above too (or this count is raised with it)."""
    calls = [c for c in own_entry_calls() if (c[1], c[2]) in MOVED and c[0].startswith("roles/")]
    assert len(calls) == 10, calls
