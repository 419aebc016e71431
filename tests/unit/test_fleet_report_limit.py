"""The fleet summary under --limit (issue 50 red team rt50 M4): it lists every host of the site's groups that the limit
keeps, for a host list and for ``--limit @site.retry``, the retry file Ansible itself suggests ("to retry, use: --limit
@.../site.retry"). rollout_report.yml resolved the limit with the inventory_hostnames lookup, which takes host patterns
only: for "@site.retry" it matched nothing ("Could not match supplied host pattern, ignoring: @site.retry") and the
summary was empty ({}, counts hosts 0). Now dlbox.stack.rollout_limit_hosts, through Ansible's own --limit rule
(InventoryManager.subset: one host pattern a line, the path relative to the current directory).

Real ansible-playbook runs site.yml over the inventory of test_fleet_refused_group (local connection, the plan refuses
both workstations before any change, so nothing is changed on this machine and the servers' play never runs)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
sys.path.insert(0, str(ROOT / "tools"))
from dlboxdata import collection  # noqa: E402  pylint: disable=wrong-import-position,import-error

STOPPED = ("every host of workstations (w1, w2) was refused by its plan, before any change; Ansible ends the run "
           "when every host of a play fails: nothing was run on any host")


def _site(tmp_path, limit):
    """site.yml with ``--limit limit``, run from ``tmp_path``: (rc, output, summary.json)."""
    work = tmp_path / ("run-%d" % len(list(tmp_path.glob("run-*"))))
    work.mkdir()
    inventory = {"all": {
        "vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                 "dlbox_report_dir": str(work / "reports"),
                 "dlbox_plan_hardware": {"gpus": ["RTX 4090"], "os": "debian-12"}},
        "children": {
            # a CUDA release that data/compat.yml does not have: the plan refuses both
            "workstations": {"vars": {"dlbox_plan_request": {"cuda": "9.0"}}, "hosts": {"w1": {}, "w2": {}}},
            "servers": {"hosts": {"s1": {}, "s2": {}}}}}}
    (tmp_path / "hosts.yml").write_text(json.dumps(inventory))
    collection.importable()
    base = next(p for p in sys.path if (Path(p) / "ansible_collections" / "dlbox" / "stack").resolve() == ROOT)
    env = {"PATH": "%s:/usr/bin:/bin" % BIN, "ANSIBLE_CONFIG": str(tmp_path / "none.cfg"), "ANSIBLE_NOCOLOR": "1",
           "HOME": str(work), "ANSIBLE_LOCAL_TEMP": str(work / "tmp"), "ANSIBLE_COLLECTIONS_PATH": base,
           "LC_ALL": "C.UTF-8"}
    proc = subprocess.run([str(BIN / "ansible-playbook"), "-i", str(tmp_path / "hosts.yml"),
                           str(ROOT / "playbooks" / "site.yml"), "--limit", limit],
                          capture_output=True, text=True, check=False, env=env, timeout=300, cwd=tmp_path)
    out = proc.stdout + proc.stderr
    report = work / "reports" / "rollout" / "summary.json"
    assert report.is_file(), out[-4000:]
    return proc.returncode, out, json.loads(report.read_text())


def test_a_retry_file_limit_gives_the_same_summary_as_the_host_list(tmp_path):
    # s2 is left out by both limits: the summary lists the hosts the limit keeps, not the whole inventory
    rc_list, out_list, by_list = _site(tmp_path, "w1,w2,s1")
    # the retry file as Ansible writes it (one host a line), named relative to the current directory
    (tmp_path / "site.retry").write_text("w1\nw2\ns1\n")
    rc_file, out_file, by_file = _site(tmp_path, "@site.retry")
    assert rc_list == rc_file == 2, out_file[-4000:]
    assert "Could not match supplied host pattern" not in out_file, out_file[-4000:]
    # in the order of the site's groups (it was a set's order, which changes with Python's string hashing)
    statuses = [(row["host"], row["scenario"], row["status"]) for row in by_file["hosts"]]
    assert statuses == [("w1", "workstation", "refused"), ("w2", "workstation", "refused"),
                        ("s1", "server", "not run")], by_file
    assert by_file["counts"] == {"hosts": 3, "changed": 0, "unchanged": 0, "failed": 0, "unreachable": 0,
                                 "refused": 2, "not_run": 1, "pending_reboot": 0, "left_drained": 0}
    assert by_file["stopped"] == STOPPED
    assert by_file == by_list
    assert "3 hosts: 0 changed, 0 unchanged, 0 failed, 0 unreachable, 2 refused, 1 not run" in out_file


@pytest.mark.parametrize("limit, hosts", [
    (None, ["w1", "w2", "s1", "s2"]),
    ("", ["w1", "w2", "s1", "s2"]),
    ("w1,s1", ["w1", "s1"]),
    ("servers:w2", ["w2", "s1", "s2"]),
    ("all:!workstations", ["s1", "s2"]),
    ("s*", ["s1", "s2"]),
    ("@site.retry", ["w1", "s2"]),
    ("@site.retry,w2", ["w1", "w2", "s2"]),
    ("@sub/site.retry", ["s1"]),
])
def test_the_filter_follows_ansibles_limit_rule(tmp_path, monkeypatch, limit, hosts):
    collection.importable()
    from ansible_collections.dlbox.stack.plugins.filter.rollout_limit import rollout_limit_hosts
    groups = {"all": ["w1", "w2", "s1", "s2"], "ungrouped": [], "workstations": ["w1", "w2"], "servers": ["s1", "s2"]}
    (tmp_path / "site.retry").write_text("w1\ns2\n\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "site.retry").write_text("s1\n")
    monkeypatch.chdir(tmp_path)
    assert rollout_limit_hosts(groups, limit) == hosts


def test_a_missing_limit_file_is_an_error_that_names_it(tmp_path, monkeypatch):
    collection.importable()
    from ansible.errors import AnsibleFilterError
    from ansible_collections.dlbox.stack.plugins.filter.rollout_limit import rollout_limit_hosts
    monkeypatch.chdir(tmp_path)
    with pytest.raises(AnsibleFilterError, match="@gone.retry"):
        rollout_limit_hosts({"all": ["w1"]}, "@gone.retry")
