# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""roles/jetpack/tasks/power.yml answers nvpmodel's reboot prompt "no" through a shell pipe, not the command module's
stdin. nvpmodel reads the answer only when it asks (a mode that needs a reboot) and otherwise exits at once; the module
then wrote to a pipe nobody read and failed the task with "[Errno 32] Broken pipe" (2 of 8 check-mode runs of
molecule/edge under load on 2026-12-06, where `true` stands in for nvpmodel; the CI runs of 2026-12-05 and 2026-12-06
failed on it). A pipe's writer (printf) just dies of SIGPIPE and the shell returns nvpmodel's own exit code."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
TASKS = yaml.safe_load((ROOT / "roles" / "jetpack" / "tasks" / "power.yml").read_text(encoding="utf-8"))
TASK = next(t for t in TASKS if str(t.get("name", "")).startswith("Set the power mode with nvpmodel -m"))
SCRIPT = 'printf "no\\n" | "$0" -m "$1"'


def test_the_task_gives_no_stdin_to_the_module_and_pipes_the_answer():
    args = TASK["ansible.builtin.command"]
    assert "stdin" not in args
    assert "'/bin/sh', '-c', '%s'" % SCRIPT in args["argv"]


def test_writing_to_a_command_that_exited_without_reading_is_a_broken_pipe():
    """What the module's stdin did: the process is gone before the write (here for certain; under load, by chance)."""
    proc = subprocess.Popen(["true"], stdin=subprocess.PIPE)  # pylint: disable=consider-using-with
    proc.wait()
    time.sleep(0.05)
    with pytest.raises(BrokenPipeError):
        proc.stdin.write(b"no")
        proc.stdin.flush()
    proc.stdin = None


@pytest.mark.parametrize("nvpmodel,rc", [("true", 0), ("false", 1)])
def test_the_pipe_returns_nvpmodels_exit_code_when_it_never_reads(nvpmodel, rc):
    for attempt in range(50):
        done = subprocess.run(["/bin/sh", "-c", SCRIPT, nvpmodel, "0"], capture_output=True, check=False)
        assert done.returncode == rc and done.stderr == b"", attempt


def test_the_pipe_gives_the_answer_to_a_nvpmodel_that_asks(tmp_path):
    asker = tmp_path / "nvpmodel"
    asker.write_text('#!/bin/sh\necho "DO YOU WANT TO REBOOT NOW? enter YES/yes to confirm:"\nread -r a\necho "answer=$a mode=$2"\n')
    asker.chmod(0o755)
    done = subprocess.run(["/bin/sh", "-c", SCRIPT, str(asker), "0"], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines()[-1] == "answer=no mode=0"
