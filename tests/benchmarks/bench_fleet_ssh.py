"""Benchmark a fleet rollout over SSH (issue 50): site.yml to 1, 3 and 6 test containers reached by SSH, the harness of
tests/integration/test_fleet_rollout.py (dlbox-test:debian12, its sshd started by hand, a key made here, ports on
127.0.0.1 only, the suite's package cache for apt and pip, Ansible's pipelining on as inventories/lab sets it), in
batches of all hosts and of 1, first converge on fresh containers then the no-op re-run. The role set is the plan's
for a host without a GPU (common's real apt install of its build tools and probes, the fitness report, the plan, the
summaries; Docker and the framework environments off), so what is measured is the rollout and Ansible, not a driver.

Prints per run: wall seconds, the controller's CPU seconds (ansible-playbook and everything it forked: workers, ssh),
the tasks each host ran, and the controller's CPU seconds per host per task; then the tasks that cost the controller
most (tests/benchmarks/callback_plugins/dlbox_task_cpu.py). Logs and JSON in build/bench-fleet-ssh/. A benchmark that
prints figures (make bench), not a timed test.

    .venv/bin/python tests/benchmarks/bench_fleet_ssh.py [--sizes 1,3,6] [--batches all,1] [--forks 6]
    BENCH_COLLECTIONS=DIR: another collections path (a copy of the collection, to compare two versions)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "integration"))
from conftest import ansible_env, docker_ready  # noqa: E402  pylint: disable=wrong-import-position,import-error

IMAGE = "dlbox-test:debian12"
CLIENT = ROOT / "build" / "test-cache" / "client"
KEEP = ROOT / "build" / "bench-fleet-ssh"


def sh(argv, check=True, **kw):
    proc = subprocess.run(argv, capture_output=True, text=True, check=False, **kw)
    if check and proc.returncode != 0:
        raise SystemExit("bench: %s: rc %d\n%s%s" % (" ".join(argv[:4]), proc.returncode, proc.stdout[-2000:],
                                                     proc.stderr[-2000:]))
    return proc


def start_hosts(names, key):
    """Containers of the test image with sshd (as the fleet test starts them): name -> its port on 127.0.0.1."""
    ports = {}
    pub = Path(str(key) + ".pub").read_text()
    for name in names:
        sh(["docker", "rm", "-f", name], check=False)
        sh(["docker", "run", "-d", "--name", name, "-p", "127.0.0.1::22",
            "-v", "%s:/etc/apt/apt.conf.d/01dlbox-test-cache:ro" % (CLIENT / "apt.conf"),
            "-v", "%s:/etc/xdg/pip/pip.conf:ro" % (CLIENT / "pip.conf"), IMAGE, "sleep", "infinity"])
        sh(["docker", "exec", name, "bash", "-c",
            "mkdir -p /run/sshd /root/.ssh && chmod 700 /root/.ssh && printf '%%s' %s > /root/.ssh/authorized_keys"
            " && chmod 600 /root/.ssh/authorized_keys && /usr/sbin/sshd" % json.dumps(pub)])
        port = sh(["docker", "port", name, "22/tcp"]).stdout.split()[0]
        assert port.startswith("127.0.0.1:"), port
        ports[name] = int(port.rsplit(":", 1)[1])
    return ports


def inventory(path, ports, key, report_dir):
    data = {"all": {
        "vars": {"ansible_host": "127.0.0.1", "ansible_user": "root", "ansible_ssh_private_key_file": str(key),
                 "ansible_ssh_common_args": "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null",
                 "ansible_python_interpreter": "/usr/bin/python3", "ansible_pipelining": True,
                 "dlbox_report_dir": str(report_dir),
                 "dlbox_workstation_docker": False, "dlbox_workstation_python_env": False},
        "children": {"workstations": {"hosts": {name: {"ansible_port": port} for name, port in ports.items()}}}}}
    path.write_text(json.dumps(data, indent=2))


def run(work, tag, extra_vars, forks):
    """One site.yml run: (wall s, controller CPU s, the callback's per-task rows)."""
    env = ansible_env()
    if os.environ.get("BENCH_COLLECTIONS"):
        env["ANSIBLE_COLLECTIONS_PATH"] = os.environ["BENCH_COLLECTIONS"]
    env.update(ANSIBLE_CONFIG=str(work / "none.cfg"), ANSIBLE_FORKS=str(forks),
               ANSIBLE_CALLBACK_PLUGINS=str(ROOT / "tests" / "benchmarks" / "callback_plugins"),
               ANSIBLE_CALLBACKS_ENABLED="dlbox_task_cpu", DLBOX_BENCH_TASK_CPU=str(work / ("%s.json" % tag)))
    log = open(work / ("%s.log" % tag), "w", encoding="utf-8")  # pylint: disable=consider-using-with
    start = time.monotonic()
    proc = subprocess.Popen(["ansible-playbook", "-i", str(work / "hosts.yml"), "dlbox.stack.site",  # pylint: disable=consider-using-with
                             "-e", json.dumps(extra_vars)], cwd=work, env=env, stdout=log, stderr=subprocess.STDOUT)
    _pid, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - start
    log.close()
    if os.waitstatus_to_exitcode(status) != 0:
        tail = (work / ("%s.log" % tag)).read_text()[-3000:]
        raise SystemExit("bench: %s failed (rc %d)\n%s" % (tag, os.waitstatus_to_exitcode(status), tail))
    tasks = json.loads((work / ("%s.json" % tag)).read_text())["tasks"]
    return wall, usage.ru_utime + usage.ru_stime, tasks


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--sizes", default=os.environ.get("BENCH_SIZES", "1,3,6"))
    parser.add_argument("--batches", default="all,1", help="all (one batch) and/or 1 (batches of one host)")
    parser.add_argument("--forks", type=int, default=6)
    parser.add_argument("--top", type=int, default=8)
    args = parser.parse_args()
    reason = docker_ready(IMAGE)
    if reason:
        print("bench: skipped: %s" % reason)
        return 0
    KEEP.mkdir(parents=True, exist_ok=True)
    os.environ["PATH"] = "%s:%s" % (ROOT / ".venv" / "bin", os.environ["PATH"])
    pid = str(os.getpid())
    sh(["bash", str(ROOT / "tests" / "scripts" / "test-cache.sh"), "start", pid], timeout=900)
    results = []
    with tempfile.TemporaryDirectory(prefix="dlbox-bench-ssh-") as tmp:
        work = Path(tmp)
        key = work / "id_ed25519"
        sh(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "dlbox-bench", "-f", str(key)])
        try:
            for size in [int(s) for s in args.sizes.split(",")]:
                for batch in args.batches.split(","):
                    if batch == "1" and size == 1:
                        continue                                   # one host: one batch either way
                    names = ["dlbox-bench-ssh-%s-%d-%s-%d" % (pid, size, batch, i) for i in range(1, size + 1)]
                    try:
                        ports = start_hosts(names, key)
                        inventory(work / "hosts.yml", ports, key, work / "reports")
                        extra = {"dlbox_serial": 0 if batch == "all" else 1}
                        for run_name in ("first", "noop"):
                            tag = "%d-hosts-batch-%s-%s" % (size, batch, run_name)
                            wall, cpu, tasks = run(work, tag, extra, args.forks)
                            per_host = sum(t["hosts"] for t in tasks) / size
                            row = {"hosts": size, "batch": batch, "run": run_name, "wall": round(wall, 1),
                                   "cpu": round(cpu, 1), "tasks_per_host": round(per_host),
                                   "cpu_per_host_task": round(cpu / size / per_host, 3),
                                   "top": sorted(tasks, key=lambda t: -t["cpu"])[:args.top]}
                            results.append(row)
                            print("fleet over SSH, %(hosts)d host(s), batch %(batch)s, %(run)s: %(wall).1f s wall, "
                                  "controller CPU %(cpu).1f s, %(tasks_per_host)d tasks a host, "
                                  "%(cpu_per_host_task).3f CPU-s per host per task" % row, flush=True)
                            for t in row["top"]:
                                print("    %6.2f CPU-s %6.1f s  %2d host(s)  %s" % (t["cpu"], t["wall"], t["hosts"], t["task"]))
                            for name in ("log", "json"):
                                src = work / ("%s.%s" % (tag, name))
                                (KEEP / src.name).write_text(src.read_text())
                    finally:
                        sh(["docker", "rm", "-f"] + names, check=False)
        finally:
            sh(["bash", str(ROOT / "tests" / "scripts" / "test-cache.sh"), "stop", pid], check=False)
    (KEEP / "results.json").write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
