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


def _role_tasks():
    play = [p for p in _plays() if "tasks" in p and p.get("become")][0]
    return [t for t in _tasks(play["tasks"]) if "ansible.builtin.include_role" in t]


def test_composition_in_order():
    roles = [t["ansible.builtin.include_role"]["name"].split(".")[-1] for t in _role_tasks()]
    assert roles == ["summary", "common", "nvidia_driver", "cuda", "cudnn", "nccl", "docker",
                     "nvidia_container_toolkit", "dcgm", "gpu_settings", "infiniband", "python_env", "summary"]
    by_role = {t["ansible.builtin.include_role"]["name"]: t for t in _role_tasks()}
    assert by_role["dlbox.stack.nvidia_driver"]["vars"] == {"nvidia_driver_profile": "server",
                                                            "nvidia_driver_reboot": "never"}


def test_toolkits_held_on_servers():
    by_role = {t["ansible.builtin.include_role"]["name"]: t for t in _role_tasks()}
    assert by_role["dlbox.stack.cuda"]["vars"] == {"cuda_hold": True}
    assert by_role["dlbox.stack.cudnn"]["vars"] == {"cudnn_profile": "server"}
    assert by_role["dlbox.stack.nccl"]["vars"] == {"nccl_profile": "server"}


def test_acceptance_last_on_the_hosts_whose_driver_answers():
    last = _plays()[-1]
    assert last["ansible.builtin.import_playbook"] == "acceptance.yml"
    assert last["vars"] == {"dlbox_acceptance_hosts": "__dlbox_server_driver_loaded"}
    assert last["when"] == "dlbox_server_acceptance | default(true) | bool"


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
