# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/edge.yml (the Jetson edge box): planned first, the jetpack preflight before any role that changes the
host, and none of the roles that use NVIDIA's x86_64/sbsa repositories."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
PLAYS = yaml.safe_load((ROOT / "playbooks" / "edge.yml").read_text(encoding="utf-8"))
# the driver and the roles that include cuda_repo (NVIDIA's x86_64/sbsa CUDA repository), and the toolkit role,
# which adds NVIDIA's libnvidia-container repository: JetPack brings all of it on L4T
NEVER_ON_L4T = {"nvidia_driver", "cuda_repo", "cuda", "cudnn", "nccl", "nvidia_container_toolkit"}


def _flat(tasks):
    """The tasks in the order they run, blocks opened (the rollout's block and its rescue, site.yml's)."""
    for task in tasks or []:
        yield task
        for part in ("block", "rescue", "always"):
            yield from _flat(task.get(part))


def _tasks():
    return [t for play in PLAYS for t in _flat(play.get("tasks"))]


def _includes():
    return [(t["ansible.builtin.include_role"]["name"].split(".")[-1], t["ansible.builtin.include_role"].get("tasks_from"))
            for t in _tasks() if "ansible.builtin.include_role" in t]


def test_the_plan_comes_first():
    assert PLAYS[0]["ansible.builtin.import_playbook"] == "plan.yml"


def test_the_jetpack_preflight_runs_before_any_other_role():
    assert _includes()[0] == ("jetpack", "preflight.yml")
    assert ("jetpack", None) in _includes()


def test_no_x86_or_sbsa_role():
    assert not NEVER_ON_L4T & {include[0] for include in _includes()}


def test_no_kernel_headers_on_l4t():
    common = next(t for t in _tasks() if t.get("ansible.builtin.include_role", {}).get("name") == "dlbox.stack.common")
    assert common["vars"]["common_kernel_headers"] is False


def test_the_roles_in_their_order():
    # the preflight, the baseline, JetPack, Docker with JetPack's runtime, PyTorch from the Jetson wheels
    assert [include[0] for include in _includes()] == ["jetpack", "common", "jetpack", "docker", "python_env"]


def test_docker_gets_the_nvidia_runtime_as_its_default_merged_into_daemon_json():
    docker = next(t for t in _tasks() if t.get("ansible.builtin.include_role", {}).get("name") == "dlbox.stack.docker")
    assert docker["vars"]["docker_default_runtime"] == "nvidia"
    # the runtime it names is one daemon.json defines (the docker role refuses another); merged, not written whole
    assert "nvidia" in docker["vars"]["docker_daemon_settings"]["runtimes"]
