# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/server.yml: what it composes, and that it refuses a host without GPUs and a Jetson before any change
(the plan from dlbox_plan_hardware, run on localhost in check mode: the refusal comes before the first role)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]


def _plays():
    return yaml.safe_load((ROOT / "playbooks" / "server.yml").read_text(encoding="utf-8"))


def _tasks(tasks):
    """The tasks of a play in order, blocks (and their rescue) opened."""
    for task in tasks or []:
        if "block" in task:
            yield from _tasks(task["block"])
            yield from _tasks(task.get("rescue"))
        else:
            yield task


def _main_play():
    return [p for p in _plays() if "tasks" in p and p.get("become")][0]


def _expanded(tasks, given, where):
    """The tasks in order with install_stack.yml's includes opened (the include's vars given to each task, the task's
    own vars winning, as Ansible gives them)."""
    for task in _tasks(tasks):
        include = task.get("ansible.builtin.include_tasks", {})
        name = include.get("file", "") if isinstance(include, dict) else include
        merged = dict(given, **task.get("vars", {}))
        if name.endswith("install_stack.yml") or name == "{{ __dlbox_install_loaded }}":
            path = where / (name if name.endswith("install_stack.yml") else merged["__dlbox_install_loaded"])
            yield from _expanded(yaml.safe_load(path.read_text(encoding="utf-8")), merged, path.parent)
        else:
            yield dict(task, vars=merged)


def _role_tasks():
    return [t for t in _expanded(_main_play()["tasks"], {}, ROOT / "playbooks")
            if "ansible.builtin.include_role" in t]


def _own(task):
    """The variables of the role a task includes that it is given (the role's own prefix)."""
    role = task["ansible.builtin.include_role"]["name"].split(".")[-1]
    return {k: v for k, v in task["vars"].items() if k.startswith(role + "_")}


def test_composition_in_order():
    roles = [t["ansible.builtin.include_role"]["name"].split(".")[-1] for t in _role_tasks()]
    assert roles == ["summary", "common", "nvidia_driver", "cuda", "cudnn", "nccl", "docker",
                     "nvidia_container_toolkit", "dcgm", "gpu_settings", "infiniband", "python_env", "summary"]
    by_role = {t["ansible.builtin.include_role"]["name"]: t for t in _role_tasks()}
    assert _own(by_role["dlbox.stack.nvidia_driver"]) == {"nvidia_driver_profile": "server",
                                                          "nvidia_driver_reboot": "never"}


def test_toolkits_held_on_servers():
    by_role = {t["ansible.builtin.include_role"]["name"]: t for t in _role_tasks()}
    assert _own(by_role["dlbox.stack.cuda"]) == {"cuda_hold": True}
    assert _own(by_role["dlbox.stack.cudnn"]) == {"cudnn_profile": "server"}
    assert _own(by_role["dlbox.stack.nccl"]) == {"nccl_profile": "server"}


def test_acceptance_in_the_batch_before_the_resume_on_the_hosts_whose_driver_answers():
    """issue 50 red team HIGH 3: acceptance (tasks/acceptance.yml, as acceptance.yml runs it) after the install and
    before rollout_finish.yml (the resume), its failure rescued by rollout_failed.yml (the host is not resumed)."""
    tasks = _main_play()["tasks"]
    files = [t.get("ansible.builtin.include_tasks", {}).get("file") for t in tasks]
    accept = next(i for i, t in enumerate(tasks) if "block" in t and any(
        s.get("ansible.builtin.include_tasks", {}).get("file") == "tasks/acceptance.yml" for s in t["block"]))
    assert files.index("tasks/install_stack.yml") < accept < files.index("tasks/rollout_finish.yml")
    block = tasks[accept]
    assert "when" not in block and "tags" not in block           # run_once inside, and --tags (see the skip reason)
    assert block["rescue"][0]["ansible.builtin.include_tasks"]["file"] == "tasks/rollout_failed.yml"
    steps = [t["ansible.builtin.set_fact"]["dlbox_rollout_step"] for t in block["block"]
             if "dlbox_rollout_step" in t.get("ansible.builtin.set_fact", {})]
    assert steps == ["server: acceptance"]
    skip = block["block"][0]["vars"]["__dlbox_server_skip"]
    assert "dlbox_server_acceptance" in skip and "__dlbox_server_smi.rc" in skip and "dlbox_failure is defined" in skip
    # no separate acceptance play after the resume any more; acceptance.yml runs the same task file on its own
    assert not any(p.get("ansible.builtin.import_playbook") == "acceptance.yml" for p in _plays())
    alone = yaml.safe_load((ROOT / "playbooks" / "acceptance.yml").read_text(encoding="utf-8"))
    assert alone[0]["tasks"] == [{"name": alone[0]["tasks"][0]["name"], "ansible.builtin.import_tasks": "tasks/acceptance.yml"}]


def test_the_hosts_down_from_the_start_fail_last():
    last = _plays()[-1]
    assert last["hosts"].startswith("{{ 'dlbox_lost' if 'dlbox_lost' in groups") and last["gather_facts"] is False
    assert [list(t)[1] for t in last["tasks"]] == ["ansible.builtin.fail"]


def test_no_reboot_anywhere():
    text = (ROOT / "playbooks" / "server.yml").read_text(encoding="utf-8")
    assert "ansible.builtin.reboot" not in text and "if_needed" not in text


def test_refusal_play_comes_before_the_roles():
    names = [p.get("name", "") for p in _plays()]
    assert names.index("Refuse hosts that are not GPU servers, before any change") < names.index("24/7 training server")


# The three refusals are one ansible-playbook run over three local hosts (each host's dlbox_plan_hardware in the
# inventory, as the docs set it): one start of Ansible and of the plan instead of three; each host is judged on its own.
REFUSED = {
    "nogpu": {"dlbox_plan_hardware": {"gpus": [], "os": "ubuntu-24.04"}},
    "jetson": {"dlbox_plan_hardware": {"gpus": ["Jetson AGX Orin"], "l4t": "36.4.3", "arch": "aarch64"}},
    # DOCA-OFED (dlbox.stack.infiniband, late in the run) asked for without its repository URL
    "doca": {"dlbox_plan_hardware": {"gpus": ["H100 SXM"], "os": "ubuntu-24.04", "arch": "x86_64"},
             "infiniband_doca_install": True, "infiniband_doca_key_fingerprint": "0123456789ABCDEF0123456789ABCDEF01234567"},
}


@pytest.fixture(scope="module")
def refused(tmp_path_factory):
    """server.yml in check mode on the three hosts of REFUSED: (the process, its JSON output)."""
    tmp_path = tmp_path_factory.mktemp("server")
    hosts = {name: dict(hostvars, ansible_connection="local", ansible_python_interpreter=sys.executable)
             for name, hostvars in REFUSED.items()}
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(yaml.safe_dump({"all": {"children": {"servers": {"hosts": hosts}}}}), encoding="utf-8")
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json",
               ANSIBLE_COLLECTIONS_PATH=str(ROOT / "build" / "collections"), DLBOX_STACK_CACHE_DIR="off")
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(inventory), "--check",
         str(ROOT / "playbooks" / "server.yml"), "-e", "dlbox_server_fitness=false"],
        capture_output=True, text=True, env=env, cwd=str(ROOT), timeout=300, check=False)
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    return json.loads(proc.stdout[proc.stdout.index("{"):])


def _ran_and_failed(out, host):
    """The names of the tasks that ran on ``host``, and of those that failed there (each with its result)."""
    tasks = [task for play in out["plays"] for task in play["tasks"] if host in task["hosts"]]
    failed = [(task["task"]["name"], task["hosts"][host]) for task in tasks if task["hosts"][host].get("failed")]
    return [task["task"]["name"] for task in tasks], failed


@pytest.mark.parametrize("host, words", [("nogpu", "finds no NVIDIA GPU"), ("jetson", "is a Jetson")])
def test_refuses_before_any_change(refused, host, words):
    ran, failed = _ran_and_failed(refused, host)
    assert [name for name, _result in failed] == ["Refuse a host without GPUs or a Jetson"]
    assert "Note what is installed before the roles" not in ran
    message = failed[0][1]["msg"]
    assert words in message and "Nothing was changed" in message


def test_doca_without_repository_url_refused_before_any_change(refused):
    """DOCA-OFED (dlbox.stack.infiniband, late in the run) asked for without its repository URL: refused by the
    refusal play, naming the variable, before the first role."""
    ran, failed = _ran_and_failed(refused, "doca")
    assert [name for name, _result in failed] == [
        "Refuse DOCA-OFED variables that cannot work (infiniband_doca_*), before any change"]
    assert "Note what is installed before the roles" not in ran
    message = failed[0][1]["msg"]
    assert message.startswith("infiniband_doca_repo_url is empty") and "Nothing was changed" in message
