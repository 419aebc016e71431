"""make bench's no-op workstation figures without Docker (issue 47): the benchmark callback records each task's file:line
(a real ansible-playbook run), bench_top_tasks.py lists the most expensive tasks as medians over the re-runs (a task
included several times a run summed within the run), and the Makefile's bench target runs both no-op benches (the CPU
host and the FIXTURE GPU host), which refuse a missing test image before they start anything."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "tests" / "benchmarks"


@pytest.fixture(scope="module")
def top():
    spec = importlib.util.spec_from_file_location("dlbox_bench_top_tasks", BENCH / "bench_top_tasks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_callback_records_each_task_with_its_file_and_line(tmp_path):
    (tmp_path / "inc.yml").write_text("- name: included\n  ansible.builtin.debug: {msg: hi}\n")
    play = tmp_path / "play.yml"
    play.write_text("- hosts: localhost\n  gather_facts: false\n  tasks:\n"
                    "    - name: first\n      ansible.builtin.debug: {msg: one}\n"
                    "    - name: twice\n      ansible.builtin.include_tasks: inc.yml\n      loop: [1, 2]\n")
    out = tmp_path / "tasks.json"
    env = dict(os.environ, ANSIBLE_CALLBACK_PLUGINS=str(BENCH / "callback_plugins"),
               ANSIBLE_CALLBACKS_ENABLED="dlbox_task_cpu", DLBOX_BENCH_TASK_CPU=str(out), ANSIBLE_NOCOLOR="1")
    got = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,", "-c", "local",
                          str(play)], env=env, capture_output=True, text=True, timeout=300, check=False)
    assert got.returncode == 0, got.stdout[-2000:] + got.stderr[-2000:]
    rows = json.loads(out.read_text())["tasks"]
    where = [(r["task"], r["path"].replace(str(tmp_path) + "/", "")) for r in rows]
    assert ("first", "play.yml:4") in where and ("included", "inc.yml:1") in where, where


def _run(tasks):
    return {"wall": sum(task[2] for task in tasks), "cpu": sum(task[3] for task in tasks),
            "tasks": [{"task": name, "path": path, "hosts": 1, "wall": wall, "cpu": cpu} for name, path, wall, cpu in tasks]}


def test_top_tasks_are_medians_over_the_runs_with_includes_summed_within_a_run(top):
    runs = [_run([("probe", "/x/ansible_collections/dlbox/stack/roles/a/tasks/main.yml:3", 5.0, 0.1),
                  ("write", "/x/ansible_collections/dlbox/stack/playbooks/p.yml:9", 1.0, 0.5),
                  ("write", "/x/ansible_collections/dlbox/stack/playbooks/p.yml:9", 1.5, 0.5)]),
            _run([("probe", "/x/ansible_collections/dlbox/stack/roles/a/tasks/main.yml:3", 1.0, 0.1),
                  ("write", "/x/ansible_collections/dlbox/stack/playbooks/p.yml:9", 3.0, 0.2)]),
            _run([("probe", "/x/ansible_collections/dlbox/stack/roles/a/tasks/main.yml:3", 2.0, 0.3),
                  ("write", "/x/ansible_collections/dlbox/stack/playbooks/p.yml:9", 2.0, 0.4)])]
    rows = top.top(runs, 15)
    # write: 2.5 (two inclusions summed), 3.0, 2.0 -> 2.5; probe: 5, 1, 2 -> 2.0
    assert [(w, c, key[1]) for w, c, key in rows] == [(2.5, 0.4, "write"), (2.0, 0.1, "probe")]
    assert top.short(rows[0][2][0]) == "playbooks/p.yml:9"
    assert len(top.top(runs, 1)) == 1


def test_make_bench_runs_both_noop_benches():
    text = (ROOT / "Makefile").read_text()
    recipe = re.search(r"^bench:.*\n((?:\t.*\n)+)", text, flags=re.M).group(1)
    for script in ("bench_workstation_noop.sh", "bench_workstation_gpu_noop.sh"):
        assert re.search(r"^\tbash tests/benchmarks/%s$" % re.escape(script), recipe, flags=re.M), recipe


@pytest.mark.parametrize("script", ["bench_workstation_noop.sh", "bench_workstation_gpu_noop.sh"])
def test_a_missing_test_image_is_refused_before_anything_starts(script, tmp_path):
    env = dict(os.environ, BENCH_DISTRO="no-such-distro-%d" % os.getpid(), DLBOX_TEST_CACHE="0")
    got = subprocess.run(["bash", str(BENCH / script)], env=env, capture_output=True, text=True, timeout=120,
                         check=False, cwd=tmp_path)
    assert got.returncode == 2 and "no image dlbox-test:no-such-distro" in got.stderr, got.stderr
