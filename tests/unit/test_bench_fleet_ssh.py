"""tests/benchmarks/bench_fleet_ssh.py without Docker (issue 50): make bench's BENCH_SIZES as bench_fleet.sh reads it
("1 3 6") is read too, a case can be run alone and its rows join the stored ones, a run that hangs is stopped at its
bound with its whole process group, and the Makefile's bench target calls it."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "tests" / "benchmarks" / "bench_fleet_ssh.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("dlbox_bench_fleet_ssh", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("text, sizes", [("1,3,6", [1, 3, 6]), ("1 3 6", [1, 3, 6]), (" 6 ", [6]), ("1, 12", [1, 12])])
def test_sizes_with_commas_or_spaces(bench, text, sizes):
    assert bench.parse_sizes(text) == sizes


@pytest.mark.parametrize("text", ["", "0", "1,x"])
def test_bad_sizes_are_refused(bench, text):
    with pytest.raises((SystemExit, ValueError)):
        bench.parse_sizes(text)


def test_forks_cover_a_batch_of_all_hosts(bench):
    assert [bench.forks_for(n) for n in (1, 3, 6, 12)] == [6, 6, 6, 12]
    assert bench.forks_for(12, 4) == 4


def test_a_case_run_alone_joins_the_stored_rows_and_is_set_against_one_host(bench, tmp_path):
    stored = [{"hosts": 1, "batch": "all", "run": "first", "wall": 100.0, "cpu": 10.0, "tasks_per_host": 120,
               "cpu_per_host_task": 0.083},
              {"hosts": 1, "batch": "all", "run": "noop", "wall": 50.0, "cpu": 8.0, "tasks_per_host": 120,
               "cpu_per_host_task": 0.067},
              {"hosts": 6, "batch": "all", "run": "first", "wall": None, "error": "an older failed run"}]
    (tmp_path / "results.json").write_text(json.dumps(stored))
    new = [{"hosts": 6, "batch": "all", "run": "first", "wall": 250.0, "cpu": 45.0, "tasks_per_host": 120,
            "cpu_per_host_task": 0.062},
           {"hosts": 6, "batch": "all", "run": "noop", "wall": 90.0, "cpu": 30.0, "tasks_per_host": 120,
            "cpu_per_host_task": 0.042}]
    rows = bench.merge(bench.load(tmp_path / "results.json"), new)
    assert [(r["hosts"], r["run"], r["wall"]) for r in rows] == [(1, "first", 100.0), (1, "noop", 50.0),
                                                                 (6, "first", 250.0), (6, "noop", 90.0)]
    lines = bench.table(rows)
    six = [line for line in lines if line.split()[:3] == ["6", "all", "first"]]
    assert six and "2.50x" in six[0] and "4.50x" in six[0], lines
    assert bench.load(tmp_path / "missing.json") == []


def _fake_playbook(tmp_path, body):
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "ansible-playbook").write_text("#!/bin/sh\n" + body)
    (fake / "ansible-playbook").chmod(0o755)
    return fake


def test_a_run_that_hangs_is_stopped_at_its_bound_with_its_children(bench, tmp_path, monkeypatch):
    fake = _fake_playbook(tmp_path, "sleep 60 &\necho $! > \"$PWD/child.pid\"\nwait\n")
    monkeypatch.setattr(bench, "ansible_env", lambda: dict(os.environ, PATH="%s:%s" % (fake, os.environ["PATH"])))
    start = time.monotonic()
    with pytest.raises(bench.RunFailed, match=r"1-hosts-batch-all-first ran past 2 s \(stopped\)"):
        bench.run(tmp_path, "1-hosts-batch-all-first", {}, 6, timeout=2)
    assert time.monotonic() - start < 30
    child = int((tmp_path / "child.pid").read_text())
    for _try in range(50):                                # the orphan's reaper may take a moment
        if subprocess.run(["ps", "-o", "stat=", "-p", str(child)], capture_output=True, text=True,
                          check=False).stdout.strip() in ("", "Z"):
            break
        time.sleep(0.1)
    else:
        pytest.fail("the run's child process %d outlived the bound" % child)


def test_a_run_that_ends_gives_its_figures_and_a_failed_run_its_reason(bench, tmp_path, monkeypatch):
    fake = _fake_playbook(tmp_path, "echo '{\"tasks\": [{\"task\": \"t\", \"hosts\": 1, \"wall\": 0.1, \"cpu\": 0.1}]}'"
                                    " > \"$DLBOX_BENCH_TASK_CPU\"\necho \"forks=$ANSIBLE_FORKS\"\n"
                                    "[ -e \"$PWD/fail\" ] && exit 2\nexit 0\n")
    monkeypatch.setattr(bench, "ansible_env", lambda: dict(os.environ, PATH="%s:%s" % (fake, os.environ["PATH"])))
    wall, cpu, tasks = bench.run(tmp_path, "3-hosts-batch-1-first", {"dlbox_serial": 1}, 12, timeout=60)
    assert tasks == [{"task": "t", "hosts": 1, "wall": 0.1, "cpu": 0.1}] and wall >= 0 and cpu >= 0
    assert "forks=12" in (tmp_path / "3-hosts-batch-1-first.log").read_text()
    (tmp_path / "fail").write_text("")
    with pytest.raises(bench.RunFailed, match=r"3-hosts-batch-1-noop failed \(rc 2\)"):
        bench.run(tmp_path, "3-hosts-batch-1-noop", {}, 6, timeout=60)


def test_make_bench_calls_it_and_a_spaced_bench_sizes_reaches_it(bench, tmp_path, monkeypatch, capsys):
    recipe = subprocess.run(["make", "-n", "-C", str(ROOT), "--no-print-directory", "bench", "BENCH_SIZES=1 3 6"],
                            capture_output=True, text=True, check=False,
                            env=dict(os.environ, MAKEFLAGS="", MAKELEVEL="")).stdout
    assert re.search(r"^\S*/python tests/benchmarks/bench_fleet_ssh\.py$", recipe, flags=re.M), recipe
    # make exports a variable given on its command line to the recipe: the bench reads "1 3 6" from the environment
    monkeypatch.setenv("BENCH_SIZES", "1 3 6")
    monkeypatch.setattr(sys, "argv", ["bench_fleet_ssh.py"])
    seen = []
    monkeypatch.setattr(bench, "parse_sizes", lambda text: seen.append(text) or [1, 3, 6])
    monkeypatch.setattr(bench, "docker_ready", lambda image: "no docker here (unit test)")
    assert bench.main() == 0
    assert seen == ["1 3 6"] and "bench: skipped: no docker here" in capsys.readouterr().out
