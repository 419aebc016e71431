# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""server.yml runs acceptance inside the batch, before the resume (issue 50 red team HIGH 3), and a host down from the
start makes the run's exit status non-zero (issue 50's exit code).

Before: acceptance.yml ran as a separate play after rollout_finish.yml had resumed the host (dlbox_resume_command): a
server whose acceptance failed was back in the scheduler; a host down from the start was left out of the later plays
and the run exited 0.

Real ansible-playbook of playbooks/server.yml, over the local connection, `--tags acceptance` (the roles' own tasks
are not run: nothing is installed here; the plan, the rollout, the summary and acceptance run whatever --tags). The
plan is an H100 server on paper (dlbox_plan_hardware). FIXTURES on PATH: `nvidia-smi -L` prints the line of an H100
host (tests/fixtures/nvlink5/nvlink-s-h100-bottlerocket4418.txt), so the driver "answers"; `python3` stands in for
playbooks/files/dlbox-acceptance.py only (any other use is the real Python): it notes its call in the scheduler's call
log and prints the script's JSON: a pass (nvidia-smi listed the GPU), or, for host "bad", nvidia-smi's check failed
with NVML's "Failed to initialize NVML: Unknown Error" (tests/fixtures/doctor/nvml-unknown-error-container.txt). The
resume command appends to the same call log, so the log gives the order. A host "down" has an SSH port that refuses.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
sys.path.insert(0, str(ROOT / "tools"))
from dlboxdata import collection  # noqa: E402  pylint: disable=wrong-import-position,import-error

SMI_L = "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-4039dfe4-0c97-4b1e-683e-eb7d42699053)"
PASS = {"checks": {"nvidia_smi": {"status": "pass", "label": "nvidia-smi", "value": "NVIDIA H100 80GB HBM3"}},
        "gpus": [], "figures": {}, "skipped": {}, "errors": {}}
FAIL = {"checks": {"nvidia_smi": {"status": "fail", "label": "nvidia-smi",
                                  "reason": "Failed to initialize NVML: Unknown Error"}},
        "gpus": [], "figures": {}, "skipped": {}, "errors": {}}


def _fixtures(work):
    """The FIXTURE nvidia-smi and python3 (see the module's doc) in work/bin; the call log is work/calls."""
    fake = work / "bin"
    fake.mkdir()
    (fake / "nvidia-smi").write_text("#!/bin/sh\n[ \"$1\" = -L ] && echo '%s' && exit 0\nexit 9\n" % SMI_L)
    (fake / "python3").write_text(
        "#!/bin/sh\n"
        "case \"$1\" in */dlbox-acceptance.py) ;; *) exec %s \"$@\";; esac\n"
        "host=; prev=; for a in \"$@\"; do [ \"$prev\" = --host ] && host=$a; prev=$a; done\n"
        "echo accept-$host >> %s/calls\n"
        "if [ \"$host\" = bad ]; then echo '%s'; else echo '%s'; fi\n"
        % (sys.executable, work, json.dumps(dict(FAIL, host="bad")), json.dumps(PASS)))
    for tool in fake.iterdir():
        tool.chmod(0o755)
    return fake


def server(work, hosts, playbook="server.yml"):
    """``playbook`` --tags acceptance on ``hosts`` (name -> host variables), the group servers: (process, summary.json
    or None, the call log)."""
    fake = _fixtures(work)
    (work / "reports").mkdir()
    inventory = {"all": {
        "vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable, "ansible_become": False,
                 "dlbox_report_dir": str(work / "reports"),
                 "dlbox_plan_hardware": {"gpus": ["H100 SXM"], "os": "ubuntu-24.04", "arch": "x86_64"},
                 "dlbox_resume_command": "echo resume-{{ inventory_hostname }} >> %s/calls" % work,
                 "dlbox_acceptance_fio_size": "16M"},
        "children": {"servers": {"hosts": hosts}}}}
    (work / "hosts.yml").write_text(yaml.safe_dump(inventory))
    collection.importable()
    base = next(p for p in sys.path if (Path(p) / "ansible_collections" / "dlbox" / "stack").resolve() == ROOT)
    env = {"PATH": "%s:%s:/usr/bin:/bin" % (fake, BIN), "ANSIBLE_CONFIG": str(work / "none.cfg"),
           "ANSIBLE_NOCOLOR": "1", "HOME": str(work), "ANSIBLE_LOCAL_TEMP": str(work / "tmp"),
           "ANSIBLE_COLLECTIONS_PATH": base, "LC_ALL": "C.UTF-8", "ANSIBLE_INTERNAL_POLL_INTERVAL": "0.005",
           "DLBOX_STACK_CACHE_DIR": "off", "ANSIBLE_STDOUT_CALLBACK": "ansible.builtin.json"}
    proc = subprocess.run([str(BIN / "ansible-playbook"), "-i", str(work / "hosts.yml"),
                           str(ROOT / "playbooks" / playbook), "--tags", "acceptance"],
                          capture_output=True, text=True, check=False, env=env, timeout=300, cwd=work)
    report = work / "reports" / "rollout" / "summary.json"
    calls = (work / "calls").read_text().split() if (work / "calls").is_file() else []
    return proc, (json.loads(report.read_text()) if report.is_file() else None), calls


def results(proc, host):
    """(play name, task name, result) of each task that ran on ``host``, in order (the JSON callback's output)."""
    out = json.loads(proc.stdout[proc.stdout.index("{"):])
    return [(play["play"]["name"], task["task"]["name"], task["hosts"][host])
            for play in out["plays"] for task in play["tasks"] if host in task["hosts"]]


def fact(proc, host, name):
    """The last value set_fact gave ``name`` on ``host``."""
    return [r["ansible_facts"][name] for _p, _t, r in results(proc, host) if name in r.get("ansible_facts", {})][-1]


def test_acceptance_failure_is_recorded_and_the_host_not_resumed_and_a_pass_is_resumed_after_it(tmp_path):
    proc, summary, calls = server(tmp_path, {"good": {}, "bad": {}})
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2 and "Traceback" not in out, out[-4000:]
    # the pass is resumed after its acceptance; the failure is measured and never resumed
    assert calls.index("accept-good") < calls.index("resume-good"), calls
    assert "accept-bad" in calls and "resume-bad" not in calls, calls
    rows = {row["host"]: row for row in summary["hosts"]}
    assert rows["good"]["status"] != "failed", rows["good"]
    assert rows["bad"]["status"] == "failed", rows["bad"]
    assert rows["bad"]["failure"]["task"] == "Fail the hosts whose acceptance failed", rows["bad"]
    assert rows["bad"]["failure"]["message"].startswith("Acceptance failed on bad: nvidia_smi"), rows["bad"]
    # recorded at its step, "server: acceptance", and the per-host fact for the summary
    ran = results(proc, "bad")
    failed = [t for _p, t, r in ran if r.get("failed")]
    assert failed == ["Fail the hosts whose acceptance failed", "Fail the hosts that failed or were refused, and the "
                      "whole batch when it is over its failure budget"], failed
    steps = [r["ansible_facts"]["dlbox_rollout_step"] for _p, _t, r in ran
             if "dlbox_rollout_step" in r.get("ansible_facts", {})]
    assert steps[-2:] == ["server: acceptance", "server: resume and fleet summary"], steps
    assert fact(proc, "bad", "dlbox_rollout_acceptance") == "failed: Acceptance failed on bad: nvidia_smi (report: %s)" \
        % (tmp_path / "reports" / "fleet.html"), fact(proc, "bad", "dlbox_rollout_acceptance")
    assert fact(proc, "good", "dlbox_rollout_acceptance") == "passed"
    last = [r["msg"] for _p, t, r in ran if t.startswith("Fail the hosts that failed or were refused")][0]
    assert last.startswith('bad failed at "Fail the hosts whose acceptance failed": Acceptance failed on bad: '
                           'nvidia_smi'), last
    acc = json.loads((tmp_path / "reports" / "acceptance" / "bad.json").read_text())
    assert acc["ok"] is False and acc["failed"] == ["nvidia_smi"], acc
    stats = json.loads(proc.stdout[proc.stdout.index("{"):])["stats"]
    assert stats["good"]["failures"] == 0 and stats["bad"]["failures"] == 1, stats


def test_a_host_down_from_the_start_fails_the_run_after_the_summary_is_written(tmp_path):
    """site.yml (its summary lists every host of its groups), the servers good and down: down is left out of the plays
    after the fitness report (group dlbox_lost), good is installed, accepted and resumed; the run used to exit 0."""
    proc, summary, calls = server(tmp_path, {"good": {}, "down": {"ansible_connection": "ssh",
                                                                  "ansible_host": "127.0.0.1", "ansible_port": 1}},
                                  playbook="site.yml")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2 and "Traceback" not in out, out[-4000:]
    assert calls == ["accept-good", "resume-good"], calls
    rows = {row["host"]: row for row in summary["hosts"]}
    assert rows["good"]["status"] != "failed", rows
    assert rows["down"]["status"] == "unreachable", rows["down"]
    assert rows["down"]["reason"].startswith("lost before any change (it did not answer: the fitness report)"), rows
    # the closing play, last, fails the host down from the start (the summary was written in the batch before it)
    down = results(proc, "down")
    assert down[-1][:2] == ("Fail the hosts down from the start", "Fail a host that was unreachable from the start"), down
    assert down[-1][2]["failed"] and down[-1][2]["msg"].startswith("down was unreachable from the start"), down[-1]
    assert [t for _p, t, r in down if r.get("failed")] == ["Fail a host that was unreachable from the start"], down
    stats = json.loads(proc.stdout[proc.stdout.index("{"):])["stats"]
    assert stats["down"]["failures"] == 1 and stats["good"]["failures"] == 0, stats
    assert fact(proc, "good", "dlbox_rollout_acceptance") == "passed"
