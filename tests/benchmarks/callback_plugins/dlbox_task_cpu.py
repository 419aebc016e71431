# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark callback (tests/benchmarks/bench_fleet_ssh.py, not shipped): the controller's CPU seconds per task.

For each task (and handler) of the run: its name, its file:line, the hosts it returned a result for, its wall seconds,
and the controller's CPU seconds from its start to the next task's (ansible-playbook itself plus its reaped children:
the worker forked for each host and task, and the ssh processes under it; a worker's CPU counts when it is reaped, a
little late). Written as JSON to $DLBOX_BENCH_TASK_CPU at the end of the run (tests/benchmarks/bench_top_tasks.py
lists the most expensive)."""

from __future__ import annotations

import json
import os
import time

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
name: dlbox_task_cpu
type: aggregate
short_description: the controller's CPU seconds per task (benchmark only)
description: writes each task's wall and controller CPU seconds and its hosts to $DLBOX_BENCH_TASK_CPU
requirements: [enable in the callbacks_enabled setting]
"""


def _cpu():
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "dlbox_task_cpu"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super().__init__()
        self.rows = []
        self.current = None
        self.start = (time.monotonic(), _cpu())

    def _close(self):
        if self.current is not None:
            name, cpu, wall, hosts, path = self.current
            self.rows.append({"task": name, "hosts": len(hosts), "wall": round(time.monotonic() - wall, 3),
                              "cpu": round(_cpu() - cpu, 3), "path": path})
            self.current = None

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._close()
        self.current = [task.get_name(), _cpu(), time.monotonic(), set(), task.get_path()]

    v2_playbook_on_handler_task_start = v2_playbook_on_task_start

    def _result(self, result, *_args, **_kwargs):
        if self.current is not None:
            self.current[3].add(result._host.get_name())  # pylint: disable=protected-access

    v2_runner_on_ok = v2_runner_on_failed = v2_runner_on_skipped = v2_runner_on_unreachable = _result

    def v2_playbook_on_stats(self, stats):
        self._close()
        out = os.environ.get("DLBOX_BENCH_TASK_CPU")
        if out:
            with open(out, "w", encoding="utf-8") as fh:
                json.dump({"wall": round(time.monotonic() - self.start[0], 3), "cpu": round(_cpu() - self.start[1], 3),
                           "tasks": self.rows}, fh, indent=1)
