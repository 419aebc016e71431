# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The most expensive tasks of benchmark runs (callback_plugins/dlbox_task_cpu.py's JSON, one file a run).

    bench_top_tasks.py [-n 15] RUN.json [RUN.json ...]

With several runs (the same playbook, e.g. three no-op re-runs) each task's figures are the median over the runs it
appears in, keyed by file:line and name (a task included in a loop appears once a run per inclusion: its figures are
summed within the run). Prints the run's wall and controller CPU seconds, then the top tasks by wall seconds with
their controller CPU seconds and where they are."""

from __future__ import annotations

import argparse
import json
import os
import statistics


def load(paths):
    runs = []
    for path in paths:
        with open(path, encoding="utf-8") as fh:
            runs.append(json.load(fh))
    return runs


def top(runs, n):
    per = {}
    for run in runs:
        mine = {}
        for row in run["tasks"]:
            key = (row.get("path") or "?", row["task"])
            wall, cpu = mine.get(key, (0.0, 0.0))
            mine[key] = (wall + row["wall"], cpu + row["cpu"])
        for key, value in mine.items():
            per.setdefault(key, []).append(value)
    rows = [(statistics.median(pair[0] for pair in v), statistics.median(pair[1] for pair in v), key) for key, v in per.items()]
    rows.sort(key=lambda r: -r[0])
    return rows[:n]


def short(path):
    marker = os.sep + "stack" + os.sep
    return path.split(marker, 1)[1] if marker in path else path


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=15)
    ap.add_argument("runs", nargs="+")
    args = ap.parse_args()
    runs = load(args.runs)
    print("runs: %d; wall %s s; controller CPU %s s; tasks started %s" % (
        len(runs), [r["wall"] for r in runs], [r["cpu"] for r in runs], [len(r["tasks"]) for r in runs]))
    print("%7s %7s  %-60s %s" % ("wall s", "CPU s", "task", "file:line"))
    for wall, cpu, (path, name) in top(runs, args.n):
        print("%7.2f %7.2f  %-60s %s" % (wall, cpu, name[:60], short(path)))


if __name__ == "__main__":
    main()
