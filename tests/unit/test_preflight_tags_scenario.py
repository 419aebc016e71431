"""One role by its tag through a scenario playbook (issue 47 red team HIGH 1): `ansible-playbook playbooks/workstation.yml
--tags nvidia_driver` runs the plan whatever --tags (plan.yml's plays are tagged always; so are preflight.yml's fitness
report and offline.yml), then that role's own tasks alone: the other roles' includes are tagged always, their tasks
keep their own tags (the install block is not tagged: a block's tags reach the included roles' tasks), and the rollout
tasks and the summary run (include apply: always).

Before: no task of plan.yml had a tag, so with any --tags neither dlbox_plan nor dlbox_workstation was set, and the run
stopped at common's include ('dlbox_workstation' is undefined), and again in the summary.

Real ansible-playbook in check mode over the local connection (nothing changed here); the plan is a FIXTURE RTX 4090 on
Debian 12 on paper (dlbox_plan_hardware), so the plan includes the driver role."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
sys.path.insert(0, str(ROOT / "tools"))
from dlboxdata import collection  # noqa: E402  pylint: disable=wrong-import-position,import-error


def test_workstation_with_tags_nvidia_driver_plans_then_runs_that_role_alone(tmp_path):
    inventory = {"all": {
        "vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable, "ansible_become": False,
                 "dlbox_report_dir": str(tmp_path / "reports"),
                 "dlbox_plan_hardware": {"gpus": ["RTX 4090"], "os": "debian-12"}},
        "hosts": {"localhost": {}}}}
    (tmp_path / "hosts.yml").write_text(json.dumps(inventory))
    collection.importable()
    base = next(p for p in sys.path if (Path(p) / "ansible_collections" / "dlbox" / "stack").resolve() == ROOT)
    env = {"PATH": "%s:/usr/bin:/bin" % BIN, "ANSIBLE_CONFIG": str(tmp_path / "none.cfg"), "ANSIBLE_NOCOLOR": "1",
           "HOME": str(tmp_path), "ANSIBLE_LOCAL_TEMP": str(tmp_path / "tmp"), "ANSIBLE_COLLECTIONS_PATH": base,
           "LC_ALL": "C.UTF-8"}
    proc = subprocess.run([str(BIN / "ansible-playbook"), "-i", str(tmp_path / "hosts.yml"),
                           str(ROOT / "playbooks" / "workstation.yml"), "--check", "--tags", "nvidia_driver"],
                          capture_output=True, text=True, check=False, env=env, timeout=300, cwd=tmp_path)
    out = proc.stdout + proc.stderr
    assert "is undefined" not in out, out[-4000:]
    assert proc.returncode == 0, out[-4000:]
    # the README quickstart test's rule (the detection play has no host here: dlbox_plan_hardware skips it)
    assert "no hosts matched" not in out.split("PLAY [Decide the stack]", 1)[-1], out
    # the plan ran and handed each host its plan and its roles
    assert "TASK [Hand each host its plan (dlbox_plan) and its roles (dlbox_workstation)]" in out, out[-4000:]
    # the tagged role's own tasks ran (its preflight decided the driver from the plan)
    assert "TASK [dlbox.stack.nvidia_driver : Decide the driver from the plan]" in out, out[-4000:]
    # the other roles: only Ansible's argument check (tagged always by Ansible), none of their own tasks
    others = re.findall(r"^TASK \[dlbox\.stack\.(common|cuda|cudnn|nccl|docker|nvidia_container_toolkit|python_env) : (.*)\]",
                        out, flags=re.M)
    assert others and all(name.startswith("Validating arguments") for _role, name in others), others
    # the rollout's tasks and the end-of-run summary still ran
    assert "TASK [dlbox.stack.summary : Show the summary]" in out, out[-4000:]
    assert "TASK [Note that the host's changes begin]" in out and "TASK [Count the batch against the failure budget" in out
    assert re.search(r"^localhost +: .*failed=0", out.split("PLAY RECAP")[-1], flags=re.M), out[-2000:]
