# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/plan.yml planning a machine that is not at hand from real captured outputs (tests/fixtures/SOURCES.md)."""

from __future__ import annotations

import json
import subprocess

import pytest

from conftest import ROOT, ansible_env


@pytest.fixture(autouse=True)
def _collection(collection_installed):
    return collection_installed


def _plan(tmp_path, hardware):
    out = tmp_path / "plan.json"
    proc = subprocess.run(
        ["ansible-playbook", "playbooks/plan.yml", "-e",
         json.dumps({"dlbox_plan_hardware": hardware, "dlbox_plan_output": str(out)})],
        cwd=ROOT, env=ansible_env(), capture_output=True, text=True, check=False, timeout=300,
    )
    return proc, (json.loads(out.read_text()) if out.exists() else None)


def test_plan_from_an_lspci_capture(tmp_path):
    """`lspci -nn | grep -i nvidia` of a 4x H100 SXM5 node (stackhpc/ansible-slurm-appliance capture)."""
    capture = ROOT / "tests" / "fixtures" / "lspci" / "h100-sxm5-4x-grep-nvidia.lspci-nn.txt"
    proc, plan = _plan(tmp_path, {"captures": [str(capture)], "os": "ubuntu-22.04"})
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert plan["ok"] is True
    assert [(g["count"], g["name"], g["cc"]) for g in plan["host"]["gpus"]] == [(4, "NVIDIA H100 80GB HBM3", "9.0")]
    assert "4x NVIDIA H100 80GB HBM3 (Hopper, CC 9.0)" in proc.stdout


def test_a_file_that_is_no_capture_is_refused_before_anything(tmp_path):
    proc, plan = _plan(tmp_path, {"captures": [str(ROOT / "README.md")], "os": "ubuntu-22.04"})
    assert proc.returncode != 0
    assert plan["ok"] is False
    assert "dlbox_plan_hardware.captures: %s: is the output of none of" % (ROOT / "README.md") in plan["errors"][0]
