"""Benchmark playbooks/plan.yml on the controller: one host, and 116 hosts in one run (20 forks).

The hosts are fake (ansible_connection=local) and planned on paper with dlbox_plan_hardware, so no detection
runs and the figures are the planning's own: Ansible's start, the resolver, the plan's text. Each figure is
taken twice in the same run: without the disk cache of the loaded data and GPU index
(DLBOX_STACK_CACHE_DIR=off: every Ansible worker process loads data/ and builds the index again, as before
issue 20) and with it (a cache folder made empty first, so the first worker builds it).

    python tests/benchmarks/bench_plan.py [HOSTS] [FORKS]      (default 116 hosts, 20 forks)

BENCH_BEFORE=<git ref> adds the plan.yml of that commit, with the data cache, in the same run (before/after).

Issue 20's goal: 116 hosts cost at most 6 times one host. Since plan.yml plans all hosts in one run_once task
(dlbox.stack.plan_fleet), only Ansible's own per-host work grows with the fleet (handing each host its plan).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import shutil
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HARDWARE = [
    {"gpus": ["RTX 4090"], "os": "ubuntu-22.04"},
    {"gpus": ["H100 SXM"] * 8, "nvswitch": True, "os": "ubuntu-22.04"},
    {"gpus": ["RTX 5090"], "os": "ubuntu-24.04"},
    {"gpus": ["GTX 1080 Ti"], "os": "debian-12"},
    {"gpus": [], "os": "debian-12"},
    {"gpus": ["NVIDIA H100 NVL", "NVIDIA H100 NVL"], "os": "debian-12"},
]


def inventory(folder, count):
    hosts = {"bench-%03d" % i: {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                                "dlbox_plan_hardware": HARDWARE[i % len(HARDWARE)]} for i in range(count)}
    path = Path(folder) / ("hosts-%d.json" % count)
    path.write_text(json.dumps({"all": {"hosts": hosts}}))
    return path


def run(inv, forks, cache, playbook="playbooks/plan.yml"):
    env = dict(os.environ, DLBOX_STACK_CACHE_DIR=cache, ANSIBLE_FORKS=str(forks))
    start = time.perf_counter()
    done = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(inv), str(playbook)],
                          cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False)
    seconds = time.perf_counter() - start
    # plan.yml fails the hosts whose stack is refused (none of these is); any other failure is a broken bench
    if done.returncode != 0:
        sys.stderr.write(done.stderr[-2000:])
        raise SystemExit("plan.yml failed (rc %d)" % done.returncode)
    return seconds


def main(argv):
    count = int(argv[1]) if len(argv) > 1 else 116
    forks = int(argv[2]) if len(argv) > 2 else 20
    folder = tempfile.mkdtemp(prefix="dlbox-bench-")
    try:
        one, many = inventory(folder, 1), inventory(folder, count)
        cache = os.path.join(folder, "cache")
        variants = [("without the data cache (each worker loads data/ again)", "off", "playbooks/plan.yml"),
                    ("with the data cache", cache, "playbooks/plan.yml")]
        before = os.environ.get("BENCH_BEFORE")
        if before:
            old = Path(folder) / "plan-before.yml"
            old.write_text(subprocess.run(["git", "show", "%s:playbooks/plan.yml" % before], cwd=ROOT, check=True,
                                          capture_output=True, text=True).stdout)
            variants.insert(1, ("of %s, with the data cache" % before, cache, old))
        figures = {}
        for label, cache_dir, playbook in variants:
            if cache_dir != "off":
                shutil.rmtree(cache_dir, ignore_errors=True)
            run(one, forks, cache_dir, playbook)  # warm the OS file cache (and build the data cache)
            single = min(run(one, forks, cache_dir, playbook) for _attempt in range(2))
            fleet = run(many, forks, cache_dir, playbook)
            figures[label] = (single, fleet)
            print("plan.yml %s: 1 host %.2f s; %d hosts (%d forks) %.2f s = %.1f x one host (goal: at most 6 x)"
                  % (label, single, count, forks, fleet, fleet / single))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 0  # figures only: a benchmark never fails on a slow or busy machine


if __name__ == "__main__":
    sys.exit(main(sys.argv))
