"""docs/fleet.md's Slurm example is the lab's (issue 50 red team rt50 L1): the same drain, check and resume commands as
inventories/lab/group_vars/all.yml, whose check test_fleet_drain.py runs with real ansible-playbook (a suffixed state
is drained; a node Slurm does not know fails at once). docs/fleet.md had `sinfo -h -n {{ inventory_hostname }} -o %T |
grep -qx drained`: grep exits 1 on sinfo's empty output for an unknown node (polled for the whole timeout), and
drained*/drained~ never matched. And the artifacts' per-host keys that docs/fleet.md lists are rollout_report.yml's."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "fleet.md").read_text()
KEYS = ("dlbox_scheduler_host", "dlbox_scheduler_become", "dlbox_drain_command", "dlbox_drain_check_command",
        "dlbox_drain_timeout", "dlbox_drain_check_interval", "dlbox_resume_command", "dlbox_drain_reason_command")


def _docs_example():
    section = DOC[DOC.index("\n## Drain and wait\n"):]
    return yaml.safe_load(re.search(r"```yaml\n(.*?)```", section, re.S).group(1))


def _lab_example():
    """The commented example of inventories/lab/group_vars/all.yml, uncommented."""
    lines = (ROOT / "inventories" / "lab" / "group_vars" / "all.yml").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("# dlbox_scheduler_host:"))
    block = []
    for line in lines[start:]:
        if not (line.startswith("# dlbox_") or line.startswith("#   ")):
            break
        block.append(line[2:])
    return yaml.safe_load("\n".join(block))


def test_the_docs_slurm_example_is_the_labs():
    docs, lab = _docs_example(), _lab_example()
    assert set(docs) == set(lab) == set(KEYS), (sorted(docs), sorted(lab))
    assert docs == lab
    # the check that test_fleet_drain.py runs (an unknown node exits 2, a suffixed state is drained)
    assert docs["dlbox_drain_check_command"] == (
        's=$(sinfo -h -n {{ inventory_hostname_short }} -o %T) && [ -n "$s" ] || exit 2; '
        'case "$s" in drained*) exit 0;; esac; echo "$s"; exit 1')
    for key in ("dlbox_drain_command", "dlbox_resume_command"):
        assert "nodename={{ inventory_hostname_short }} " in docs[key], docs[key]


def test_the_docs_list_the_artifacts_per_host_keys_of_rollout_report():
    report = (ROOT / "playbooks" / "tasks" / "rollout_report.yml").read_text()
    hosts = report[report.index("        hosts: >-"):report.index("report_dir:")]
    keys = re.findall(r"'(\w+)'", re.search(r"'in', \[(.*?)\]", hosts, re.S).group(1))
    assert "acceptance" in keys, keys
    listed = re.search(r"and per host (.*?);", DOC, re.S).group(1)
    assert re.findall(r"`(\w+)`", listed) == keys, listed
