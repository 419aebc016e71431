# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/preflight.yml judges a machine from a dlbox-collect tarball as it judges the machine itself.

On the machine running the tests (no Docker, no GPU needed): dlbox-collect writes its tarball of this machine, then
preflight.yml runs twice through ansible-playbook, live (gpu_facts on localhost) and from the tarball
(-e dlbox_fitness_captures=...). Both reports must give the same verdict: the same problems and the same status for
every check, whatever this machine is. A folder of neutrally named pastes is judged too, and a path with nothing the
report reads is refused by name.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import ROOT, ansible_env

COLLECT = ROOT / "playbooks" / "files" / "dlbox-collect"
FIXTURES = ROOT / "tests" / "fixtures"


@pytest.fixture(autouse=True)
def _collection(collection_installed):
    return collection_installed


def _preflight(reports, *extra):
    proc = subprocess.run(
        ["ansible-playbook", "-i", "localhost,", "-c", "local", "playbooks/preflight.yml",
         "-e", "dlbox_report_dir=%s" % reports, "-e", "ansible_python_interpreter=%s" % sys.executable, *extra],
        cwd=ROOT, env=ansible_env(), capture_output=True, text=True, check=False, timeout=300,
    )
    return proc


def _verdict(report):
    return report["ok"], report["problems"], {c["id"]: c["status"] for c in report["checks"]}


def test_a_tarball_gets_the_live_runs_verdict(tmp_path):
    tarball = tmp_path / "this-machine.tar.gz"
    collect = subprocess.run(["sh", str(COLLECT), "-o", str(tarball)], capture_output=True, text=True, check=False,
                             timeout=300)
    assert collect.returncode == 0 and tarball.exists(), collect.stdout + collect.stderr
    reports = tmp_path / "reports"
    live = _preflight(reports)
    assert live.returncode == 0, live.stdout[-3000:]
    bundle = _preflight(reports, "-e", "dlbox_fitness_captures=%s" % tarball)
    assert bundle.returncode == 0, bundle.stdout[-3000:]
    live_report = json.loads((reports / "fitness" / "localhost.json").read_text())
    bundle_report = json.loads((reports / "fitness" / "this-machine.json").read_text())
    print("\nlive:   %s\nbundle: %s" % (_verdict(live_report), _verdict(bundle_report)))
    assert _verdict(bundle_report) == _verdict(live_report)
    for key in ("cpu", "ram_gib", "disks", "root_disk"):
        assert bundle_report[key] == live_report[key], key
    assert "Fitness of this-machine as a workstation" in bundle.stdout


def test_neutrally_named_pastes_are_judged_and_nothing_readable_is_refused(tmp_path):
    pastes = tmp_path / "gpu07"
    pastes.mkdir()
    for index, source in enumerate([FIXTURES / "fitness" / "lscpu-2x-xeon-platinum-8380.txt",
                                    FIXTURES / "fitness" / "lsblk-nvme-477g-root.txt",
                                    FIXTURES / "doctor" / "smi-q-a10-550-idle.txt"], start=1):
        (pastes / ("out%d.txt" % index)).write_text(source.read_text())
    reports = tmp_path / "reports"
    proc = _preflight(reports, "-e", "dlbox_fitness_captures=%s" % pastes, "-e", "dlbox_fitness_profile=server")
    assert proc.returncode == 0, proc.stdout[-3000:]
    report = json.loads((reports / "fitness" / "gpu07.json").read_text())
    status = {c["id"]: c["status"] for c in report["checks"]}
    assert status["cpu_threads"] == "ok" and status["cpu_l3"] == "ok"        # 160 threads, 2x 60 MiB
    assert status["system_disk_size"] == "problem"                           # / on a 477 GiB (512 GB) NVMe
    assert report["gpus"][0]["name"] == "NVIDIA A10" and status["gpu_memory"] == "problem"   # 22.5 GiB < 40
    empty = tmp_path / "empty.txt"
    empty.write_text("nothing the fitness report reads\n")
    refused = _preflight(reports, "-e", "dlbox_fitness_captures=%s" % empty)
    assert refused.returncode != 0
    assert "dlbox_fitness_captures: %s holds none of the outputs the fitness report reads" % empty in refused.stdout
