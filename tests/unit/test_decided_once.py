"""Decided once per host per run (issue 47; rt47 M2): every role whose module decides (plugins/plugin_utils/roles,
DECIDERS) calls its ``decide`` entry (``dlbox.stack.role_decide('<role>', ...)`` or ``role_module('decide', ...)``)
from scratch once, in one task file of its run (the files its tasks/main.yml reaches through import_tasks and
include_tasks); every other call hands over what that one kept: the kept decision (``'decided': __<role>_...``, the
module's update) or the plan it worked from (``__<role>_....plan``). A task file run alone (tasks_from) decides at most
once too. Then the later steps of dcgm and gpu_settings, run by real Ansible with a kept decision.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
import yaml

from ansible_collections.dlbox.stack.plugins.filter.role_decide import role_decide
from ansible_collections.dlbox.stack.plugins.plugin_utils.roles import DECIDERS
from jinja_calls import call_arguments  # pylint: disable=import-error

ROOT = Path(__file__).resolve().parents[2]
ROLES = ROOT / "roles"
FIXTURES = ROOT / "tests" / "fixtures"
H100_Q = (FIXTURES / "server" / "h100-sxm-8x-driver-565-q.txt").read_text(encoding="utf-8")
H200_X = (FIXTURES / "nvidia-smi" / "h200-driver-580-device.xml").read_text(encoding="utf-8")

_INCLUDE = re.compile(r"(?:import_tasks|include_tasks):\s*(?:\n\s+file:\s*)?([\w./-]+\.yml)\s*$", re.M)


def _call(role):
    return re.compile(r"'%s'\s*\|\s*dlbox\.stack\.(?:role_decide\(|role_module\(\s*'decide'\s*,)" % role)


def calls_from_scratch(role, text):
    """The calls of ``role``'s decide entry in ``text`` that hand over nothing kept (they decide again)."""
    kept_plan = re.compile(r"\s*(?:plan=)?__%s_\w+\.plan\b" % role)
    found = []
    for match in _call(role).finditer(text):
        args = call_arguments(text, match.end())
        if "'decided':" not in args and not kept_plan.match(args):
            found.append(args)
    return found


def reach(tasks, name, seen=None):
    """The task files of a role's folder ``tasks`` that ``name`` runs (itself, and what it imports or includes)."""
    seen = set() if seen is None else seen
    if name in seen or not (tasks / name).is_file():
        return seen
    seen.add(name)
    for included in _INCLUDE.findall((tasks / name).read_text(encoding="utf-8")):
        reach(tasks, included, seen)
    return seen


def deciding_calls(tasks, names):
    """The from-scratch calls in the files ``names``, as "<file> (<count>)" per file that has any, and their number."""
    counts = {n: len(calls_from_scratch(tasks.parent.name, (tasks / n).read_text(encoding="utf-8"))) for n in names}
    return ["%s (%d)" % (n, c) for n, c in sorted(counts.items()) if c], sum(counts.values())


def check_role(role_dir):
    """The problems of one role's tasks against the rule (empty when it holds)."""
    tasks = role_dir / "tasks"
    problems = []
    files, count = deciding_calls(tasks, reach(tasks, "main.yml"))
    if count != 1 or len(files) != 1:
        problems.append("%s decides from scratch %d times in its run (%s), not once in one task file"
                        % (role_dir.name, count, ", ".join(files) or "none"))
    for path in sorted(p for p in tasks.glob("*.yml") if p.name != "main.yml"):
        files, count = deciding_calls(tasks, reach(tasks, path.name))
        if count > 1:
            problems.append("%s: tasks_from %s decides %d times (%s)" % (role_dir.name, path.name, count, ", ".join(files)))
    return problems


@pytest.mark.parametrize("role", DECIDERS)
def test_each_role_decides_once_and_later_steps_hand_over_what_it_kept(role):
    assert check_role(ROLES / role) == []


def test_the_check_tells_a_later_step_that_decides_again_from_one_that_updates():
    """The rule on text: a second from-scratch call is one; the kept decision or the kept plan handed over is not."""
    fresh = "{{ 'cuda' | dlbox.stack.role_decide(dlbox_plan | default(none), __o, {'verify': x}) }}"
    assert len(calls_from_scratch("cuda", fresh)) == 1
    assert calls_from_scratch("cuda", "{{ 'cuda' | dlbox.stack.role_decide(none, __o, {'decided': __cuda_decided}) }}") == []
    assert calls_from_scratch("nccl", "{{ 'nccl' | dlbox.stack.role_decide(__nccl_decision.plan, __o, f) }}") == []
    assert len(calls_from_scratch("cuda", "{{ 'cuda' | dlbox.stack.role_module('decide', plan=none, given=o) }}")) == 1
    assert calls_from_scratch("cuda", "{{ 'cudnn' | dlbox.stack.role_decide(none, o, f) }}") == []


def _copy_with(tmp_path, name, task_file, old, new):
    """A copy of role ``name``'s task files with ``old`` (which must be there) replaced by ``new`` in ``task_file``."""
    role = tmp_path / name
    (role / "tasks").mkdir(parents=True)
    for path in (ROLES / name / "tasks").glob("*.yml"):
        (role / "tasks" / path.name).write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    target = role / "tasks" / task_file
    text = target.read_text(encoding="utf-8")
    assert old in text, (name, task_file, old)
    target.write_text(text.replace(old, new), encoding="utf-8")
    return role


def test_a_role_whose_later_step_decides_again_is_named(tmp_path):
    """A copy of the cuda role's tasks whose verification decides again from scratch (HEAD before this test's commit):
    the role is named with both files."""
    role = _copy_with(tmp_path, "cuda", "verify.yml", "{'decided': __cuda_decided, ",
                      "{'host': ansible_facts['dlbox_host'], ")
    assert check_role(role) == ["cuda decides from scratch 2 times in its run (preflight.yml (1), verify.yml (1)), "
                                "not once in one task file"]


def test_a_second_call_in_the_deciding_file_is_named(tmp_path):
    """A copy of the cudnn role's tasks whose linker check decides again in the preflight itself (as it did before)."""
    role = _copy_with(tmp_path, "cudnn", "preflight.yml", "{'decided': __cudnn_decision, 'linker'", "{'linker'")
    assert check_role(role) == ["cudnn decides from scratch 2 times in its run (preflight.yml (2)), "
                                "not once in one task file", "cudnn: tasks_from preflight.yml decides 2 times "
                                "(preflight.yml (2))"]


# --- the later steps, run by real Ansible with the kept decision ---------------------------------------------------

def _task(role, path, name):
    return next(t for t in yaml.safe_load((ROLES / role / "tasks" / path).read_text(encoding="utf-8")) if t["name"] == name)


def _run(tmp_path, tasks, hosts, variables=None):
    sys.path.insert(0, str(ROOT / "tests" / "unit" / "roles"))
    from play_runner import run_play  # pylint: disable=import-outside-toplevel,import-error

    hostvars = {name: dict(vars_, ansible_connection="local", ansible_python_interpreter=sys.executable)
                for name, vars_ in hosts.items()}
    play = {"hosts": "all", "gather_facts": False, "vars": variables or {}, "tasks": tasks}
    proc, out = run_play(tmp_path, play, hostvars)
    assert out is not None, proc.stderr[-2000:]
    return out["plays"][0]["tasks"]


def test_dcgm_pairs_the_exporter_with_the_installed_dcgm_through_the_kept_decision(tmp_path):
    """install.yml's pairing task: the kept decision and the installed DCGM (package_facts' answer) -> what deciding
    again with nvidia-smi's output and that version gives; nothing installed (check mode) -> the kept pairing."""
    kept = role_decide("dcgm", None, {}, {"smi": H100_Q})
    package = kept["packages"][0]
    installed = "1:4.2.3-1"
    hosts = {"installed": {"__packages": {package: [{"version": installed}]}}, "none": {"__packages": {}}}
    tasks = [{"name": "The installed packages (package_facts' answer)",
              "ansible.builtin.set_fact": {"ansible_facts": {"packages": "{{ __packages }}"}}},
             _task("dcgm", "install.yml", "Pair the exporter with the installed DCGM"),
             {"name": "Show", "ansible.builtin.debug": {"msg": "{{ __dcgm_decision }}"}}]
    ran = _run(tmp_path, tasks, hosts, {"__dcgm_decision": kept})
    for host, version in (("installed", installed), ("none", "")):
        got = ran[-1]["hosts"][host]["msg"]
        assert got == role_decide("dcgm", None, kept["options"], {"smi": H100_Q, "installed_dcgm": version}), host
    assert ran[-1]["hosts"]["installed"]["msg"]["dcgm_version"] == "4.2.3"


def test_gpu_settings_checks_the_gpus_read_again_against_the_kept_decision(tmp_path):
    """verify.yml's check: a power limit the GPU still does not have fails naming its command; no setting passes."""
    task = _task("gpu_settings", "verify.yml", "Check that nothing differs any more")
    hosts = {}
    for name, given in (("differs", {"gpu_settings_power_limit_w": 600}), ("same", {})):
        kept = role_decide("gpu_settings", None, given, {"smi": H200_X, "nvidia_smi": "/usr/bin/nvidia-smi"})
        hosts[name] = {"__gpu_settings_decision": kept, "__gpu_settings_smi_after": {"stdout": H200_X, "rc": 0}}
    ran = _run(tmp_path, [task], hosts)[0]["hosts"]
    assert ran["differs"].get("failed") and '[["nvidia-smi", "-i", "0", "-pl", "600"]]' in ran["differs"]["msg"]
    assert not ran["same"].get("failed"), ran["same"]
