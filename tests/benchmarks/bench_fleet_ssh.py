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

    .venv/bin/python tests/benchmarks/bench_fleet_ssh.py [--sizes 1,3,6] [--batches all,1] [--forks N]
                                                         [--run-timeout 3600]
    BENCH_SIZES="1 3 6" (make bench's, as bench_fleet.sh reads it: spaces or commas): the sizes when --sizes is not given
    BENCH_COLLECTIONS=DIR: another collections path (a copy of the collection, to compare two versions)

Cases can be run apart: `--sizes 6` alone (the 6-host case, some 20 minutes on a free 2-core machine) adds its rows to
build/bench-fleet-ssh/results.json, which keeps the rows of earlier runs of the other cases (a case run again replaces
its rows), and the table printed at the end sets every size against 1 host from that file. Each case's rows are written
as soon as they are measured; a run that fails or passes --run-timeout (its containers are removed, its log kept) is
recorded as such, the bench goes on to the next case, and it exits 1 at the end. Forks: at least the hosts of a batch
(default max(6, hosts)), so that 6 or 12 hosts in one batch run side by side.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# the integration tests' helpers, loaded by path under a name of their own (a plain `import conftest` would take
# whichever conftest module a test process imported first)
_SPEC = importlib.util.spec_from_file_location("dlbox_integration_conftest", ROOT / "tests" / "integration" / "conftest.py")
_CONFTEST = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(_CONFTEST)
ansible_env, docker_ready = _CONFTEST.ansible_env, _CONFTEST.docker_ready

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
                 "dlbox_install_docker": False, "dlbox_install_python_env": False},
        "children": {"workstations": {"hosts": {name: {"ansible_port": port} for name, port in ports.items()}}}}}
    path.write_text(json.dumps(data, indent=2))


def parse_sizes(text):
    """"1,3,6", "1 3 6" (make bench's BENCH_SIZES, as bench_fleet.sh reads it) or "6": [1, 3, 6]."""
    sizes = [int(s) for s in re.split(r"[,\s]+", str(text).strip()) if s]
    if not sizes or min(sizes) < 1:
        raise SystemExit("bench: sizes must be whole numbers of hosts, 1 or more (got %r)" % text)
    return sizes


def forks_for(size, forks=None):
    """Ansible's forks for a case: the given number, else at least the case's hosts (one batch of all side by side)."""
    return forks if forks else max(6, size)


def key(row):
    return (row["hosts"], str(row["batch"]), row["run"])


def merge(old, new):
    """The rows of results.json: the earlier runs' rows, each replaced by this run's row of the same case."""
    ours = {key(r) for r in new}
    return sorted([r for r in old if key(r) not in ours] + list(new), key=lambda r: (r["hosts"], str(r["batch"]),
                                                                                     r["run"] != "first"))


def load(path):
    try:
        rows = json.loads(path.read_text())
    except (OSError, ValueError):
        return []
    return [r for r in rows if isinstance(r, dict) and {"hosts", "batch", "run"} <= set(r)] if isinstance(rows, list) else []


def table(rows):
    """Lines: each case's wall and CPU, and against 1 host (same run kind) where results.json has it."""
    one = {r["run"]: r for r in rows if r["hosts"] == 1 and r.get("wall") is not None}
    lines = ["hosts batch run    wall s  CPU-s  tasks/host  CPU-s/host/task  wall/1 host  CPU/1 host"]
    for r in rows:
        if r.get("wall") is None:
            lines.append("%5d %5s %-5s  %s" % (r["hosts"], r["batch"], r["run"], r.get("error", "no figure")))
            continue
        base = one.get(r["run"])
        ratio = ("%10.2fx  %9.2fx" % (r["wall"] / base["wall"], r["cpu"] / base["cpu"])) if base else ""
        figures = (r["hosts"], r["batch"], r["run"], r["wall"], r["cpu"], r["tasks_per_host"], r["cpu_per_host_task"], ratio)
        lines.append("%5d %5s %-5s %8.1f %6.1f %11d %16.3f  %s" % figures)
    return lines


class RunFailed(Exception):
    """A site.yml run of the bench failed or ran past its time."""


def run(work, tag, extra_vars, forks, timeout=None):
    """One site.yml run: (wall s, controller CPU s, the callback's per-task rows). RunFailed past TIMEOUT s (its
    process group killed) or when it fails."""
    env = ansible_env()
    if os.environ.get("BENCH_COLLECTIONS"):
        env["ANSIBLE_COLLECTIONS_PATH"] = os.environ["BENCH_COLLECTIONS"]
    env.update(ANSIBLE_CONFIG=str(work / "none.cfg"), ANSIBLE_FORKS=str(forks),
               ANSIBLE_CALLBACK_PLUGINS=str(ROOT / "tests" / "benchmarks" / "callback_plugins"),
               ANSIBLE_CALLBACKS_ENABLED="dlbox_task_cpu", DLBOX_BENCH_TASK_CPU=str(work / ("%s.json" % tag)))
    log = open(work / ("%s.log" % tag), "w", encoding="utf-8")  # pylint: disable=consider-using-with
    start = time.monotonic()
    proc = subprocess.Popen(["ansible-playbook", "-i", str(work / "hosts.yml"), "dlbox.stack.site",  # pylint: disable=consider-using-with
                             "-e", json.dumps(extra_vars)], cwd=work, env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    timed_out = False
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if timeout and time.monotonic() - start > timeout and not timed_out:
            timed_out = True
            os.killpg(proc.pid, signal.SIGKILL)              # ansible-playbook, its workers and their ssh
        time.sleep(0.5)
    proc.returncode = os.waitstatus_to_exitcode(status)   # reaped here: Popen must not wait for it again
    wall = time.monotonic() - start
    log.close()
    if timed_out or proc.returncode != 0:
        tail = (work / ("%s.log" % tag)).read_text()[-3000:]
        why = "ran past %d s (stopped)" % timeout if timed_out else "failed (rc %d)" % proc.returncode
        raise RunFailed("%s %s after %.0f s\n%s" % (tag, why, wall, tail))
    tasks = json.loads((work / ("%s.json" % tag)).read_text())["tasks"]
    return wall, usage.ru_utime + usage.ru_stime, tasks


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--sizes", default=os.environ.get("BENCH_SIZES") or "1,3,6",
                        help="numbers of hosts, commas or spaces (default: $BENCH_SIZES, else 1,3,6)")
    parser.add_argument("--batches", default="all,1", help="all (one batch) and/or 1 (batches of one host)")
    parser.add_argument("--forks", type=int, default=None, help="Ansible's forks (default: max(6, hosts))")
    parser.add_argument("--run-timeout", type=int, default=3600, help="seconds a site.yml run may take (0: no bound)")
    parser.add_argument("--top", type=int, default=8)
    args = parser.parse_args()
    sizes = parse_sizes(args.sizes)
    reason = docker_ready(IMAGE)
    if reason:
        print("bench: skipped: %s" % reason)
        return 0
    KEEP.mkdir(parents=True, exist_ok=True)
    os.environ["PATH"] = "%s:%s" % (ROOT / ".venv" / "bin", os.environ["PATH"])
    pid = str(os.getpid())
    sh(["bash", str(ROOT / "tests" / "scripts" / "test-cache.sh"), "start", pid], timeout=900)
    stored = load(KEEP / "results.json")
    results, failed = [], []
    with tempfile.TemporaryDirectory(prefix="dlbox-bench-ssh-") as tmp:
        work = Path(tmp)
        key_file = work / "id_ed25519"
        sh(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "dlbox-bench", "-f", str(key_file)])
        try:
            for size in sizes:
                for batch in [b.strip() for b in args.batches.split(",") if b.strip()]:
                    if batch == "1" and size == 1:
                        continue                                   # one host: one batch either way
                    names = ["dlbox-bench-ssh-%s-%d-%s-%d" % (pid, size, batch, i) for i in range(1, size + 1)]
                    forks = forks_for(size, args.forks)
                    try:
                        ports = start_hosts(names, key_file)
                        inventory(work / "hosts.yml", ports, key_file, work / "reports")
                        extra = {"dlbox_serial": 0 if batch == "all" else 1}
                        for run_name in ("first", "noop"):
                            tag = "%d-hosts-batch-%s-%s" % (size, batch, run_name)
                            try:
                                wall, cpu, tasks = run(work, tag, extra, forks, args.run_timeout or None)
                            except RunFailed as exc:
                                print("bench: %s" % exc, flush=True)
                                results.append({"hosts": size, "batch": batch, "run": run_name, "wall": None,
                                                "forks": forks, "error": str(exc).splitlines()[0]})
                                failed.append(tag)
                                break                              # no no-op run after a failed first one
                            finally:
                                for name in ("log", "json"):
                                    src = work / ("%s.%s" % (tag, name))
                                    if src.is_file():
                                        (KEEP / src.name).write_text(src.read_text())
                            per_host = sum(t["hosts"] for t in tasks) / size
                            row = {"hosts": size, "batch": batch, "run": run_name, "wall": round(wall, 1),
                                   "cpu": round(cpu, 1), "forks": forks, "tasks_per_host": round(per_host),
                                   "cpu_per_host_task": round(cpu / size / per_host, 3),
                                   "top": sorted(tasks, key=lambda t: -t["cpu"])[:args.top]}
                            results.append(row)
                            print("fleet over SSH, %(hosts)d host(s), batch %(batch)s, %(run)s: %(wall).1f s wall, "
                                  "controller CPU %(cpu).1f s, %(tasks_per_host)d tasks a host, "
                                  "%(cpu_per_host_task).3f CPU-s per host per task" % row, flush=True)
                            for t in row["top"]:
                                print("    %6.2f CPU-s %6.1f s  %2d host(s)  %s" % (t["cpu"], t["wall"], t["hosts"], t["task"]))
                    finally:
                        sh(["docker", "rm", "-f"] + names, check=False)
                        # each case's rows as soon as they are measured, beside the stored ones of other cases
                        (KEEP / "results.json").write_text(json.dumps(merge(stored, results), indent=1))
        finally:
            sh(["bash", str(ROOT / "tests" / "scripts" / "test-cache.sh"), "stop", pid], check=False)
    rows = merge(stored, results)
    (KEEP / "results.json").write_text(json.dumps(rows, indent=1))
    print("\n".join(["", "fleet over SSH (%s; this run's cases and the stored ones):" % (KEEP / "results.json")]
                    + table(rows)))
    if failed:
        print("bench: failed: %s (logs in %s)" % (", ".join(failed), KEEP))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
