# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The container engines of the nvidia_container_toolkit role in one place each (issue 47 red team): their names are
the argument spec's choices of nvidia_container_toolkit_runtimes (Ansible refuses another before the preflight), the
packages that install each are data/compat.yml's container_toolkit.engine_packages, handed on by the role's decision;
the preflight no longer types either. Its "installed engines" and "refuse a missing engine" tasks run here with real
Ansible (connection local) on FIXTURE package facts."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ansible_collections.dlbox.stack.plugins.plugin_utils.roles import _spec
from ansible_collections.dlbox.stack.plugins.plugin_utils.roles import nvidia_container_toolkit as nct
from play_runner import run_play  # tests/unit/roles/play_runner.py, beside this file

ROOT = Path(__file__).resolve().parents[3]
ROLE = ROOT / "roles" / "nvidia_container_toolkit"
PREFLIGHT = yaml.safe_load((ROLE / "tasks" / "preflight.yml").read_text(encoding="utf-8"))
SPEC = yaml.safe_load((ROLE / "meta" / "argument_specs.yml").read_text(encoding="utf-8"))
COMPAT = yaml.safe_load((ROOT / "data" / "compat.yml").read_text(encoding="utf-8"))
PLAN = {"stack": {"container_toolkit": {"version": "1.18.2", "min_version": "1.18.1"}}}


def _task(name):
    """The preflight's task, its package facts read from the FIXTURE variable fixture_packages (an inventory cannot
    set ansible_facts)."""
    task = next(t for t in PREFLIGHT if t.get("name") == name)
    return yaml.safe_load(yaml.safe_dump(task).replace("ansible_facts['packages']", "fixture_packages"))


def test_the_engines_are_the_spec_choices_and_their_packages_the_data():
    runtimes = SPEC["argument_specs"]["main"]["options"]["nvidia_container_toolkit_runtimes"]
    assert runtimes["choices"] == ["docker", "containerd"]
    decision = nct.decide(PLAN, nct.options({}), {"host": {}})
    assert decision["engine_packages"] == COMPAT["container_toolkit"]["engine_packages"]
    assert set(decision["ctk"]) == set(runtimes["choices"])


def test_no_engine_or_package_name_is_typed_in_the_tasks():
    text = "\n".join(p.read_text(encoding="utf-8") for p in sorted((ROLE / "tasks").glob("*.yml")))
    text += (ROLE / "vars" / "main.yml").read_text(encoding="utf-8")
    for name in ("docker-ce", "docker.io", "moby-engine", "containerd.io", "[docker, containerd]"):
        assert name not in text, name


@pytest.mark.parametrize("given, refused", [(["docker", "containerd"], False), (["docker", "crio"], True),
                                            ("crio", True)])
def test_the_options_read_a_list_choice_element_by_element(given, refused):
    if refused:
        with pytest.raises(_spec.SpecError, match="nvidia_container_toolkit_runtimes"):
            nct.options({"nvidia_container_toolkit_runtimes": given})
    else:
        assert nct.options({"nvidia_container_toolkit_runtimes": given})["nvidia_container_toolkit_runtimes"] == given


def test_installed_engines_and_the_refusal_with_real_ansible(tmp_path):
    decision = {"active": True, "engine_packages": COMPAT["container_toolkit"]["engine_packages"]}
    hosts = {  # FIXTURE package facts: the package names dpkg would list
        "docker-io": {"packages": ["docker.io", "runc"], "runtimes": ["docker"]},
        "moby-containerd": {"packages": ["moby-engine", "containerd"], "runtimes": ["docker", "containerd"]},
        "docker-only": {"packages": ["docker-ce", "containerd-rootless"], "runtimes": ["docker", "containerd"]},
        "nothing": {"packages": [], "runtimes": ["docker"]},
    }
    hostvars = {h: {"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}",
                    "__nvidia_container_toolkit_decision": decision, "nvidia_container_toolkit_runtimes": v["runtimes"],
                    "fixture_packages": {p: [{"version": "1"}] for p in v["packages"]}}
                for h, v in hosts.items()}
    play = {"hosts": "all", "gather_facts": False, "tasks": [
        _task("Record which engines are installed"),
        _task("Refuse an engine that is not installed"),
        {"name": "say", "ansible.builtin.debug": {"var": "__nvidia_container_toolkit_engines_installed"}}]}
    proc, out = run_play(tmp_path, play, hostvars)
    assert out is not None, proc.stderr
    stats = out["stats"]
    results = {h: r for task in out["plays"][0]["tasks"] for h, r in task["hosts"].items()
               if task["task"]["name"] == "say"}
    assert results["docker-io"]["__nvidia_container_toolkit_engines_installed"] == ["docker"]
    assert sorted(results["moby-containerd"]["__nvidia_container_toolkit_engines_installed"]) == ["containerd", "docker"]
    assert stats["docker-only"]["failures"] == 1 and stats["nothing"]["failures"] == 1
    assert stats["docker-io"]["failures"] == 0 and stats["moby-containerd"]["failures"] == 0
    refusal = next(task["hosts"]["docker-only"] for task in out["plays"][0]["tasks"]
                   if task["task"]["name"] == "Refuse an engine that is not installed")
    assert "lists containerd, which is not installed" in refusal["msg"]
