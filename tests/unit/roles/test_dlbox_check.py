# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""roles/python_env/files/dlbox-check.py: its verdicts and text, on hand-made reports (no framework needed)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

PATH = Path(__file__).resolve().parents[3] / "roles" / "python_env" / "files" / "dlbox-check.py"
SPEC = importlib.util.spec_from_file_location("dlbox_check", PATH)
check = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(check)

FLOORS = {"12": "525.60.13", "13": "580.65.06"}
CPU = {"framework": "PyTorch", "version": "2.13.0+cpu", "cuda": None, "cudnn": None, "gpu_visible": False, "devices": [],
       "matmul": {"device": "cpu", "dtype": "float32", "n": 1024, "iterations": 5, "seconds": 0.5, "tflops": 0.0215}}
GPU = {"framework": "PyTorch", "version": "2.14.1+cu132", "cuda": "13.2", "cudnn": 92400, "gpu_visible": True,
       "devices": ["NVIDIA H200"]}


@pytest.mark.parametrize("frameworks, driver, require_gpu, status, words", [
    ([CPU], None, False, 0, []),
    ([CPU], None, True, 1, ["no GPU: a GPU was expected but PyTorch sees none", "no NVIDIA driver loaded"]),
    ([GPU], "580.159.03", True, 0, []),
    ([GPU], "575.57.08", True, 2, ["PyTorch 2.14.1+cu132 was built with CUDA 13.2", "driver 580.65.06 or newer",
                                   "CUDA 13.x minor-version compatibility", "this machine has driver 575.57.08"]),
    ([dict(GPU, gpu_visible=False, devices=[])], "570.86.10", True, 2, ["needs NVIDIA driver 580.65.06", "no GPU"]),
    ([], None, False, 3, ["no framework"]),
])
def test_verdict(frameworks, driver, require_gpu, status, words):
    got, problems = check.verdict({"frameworks": frameworks, "driver": driver}, require_gpu, FLOORS)
    assert got == status
    text = " ".join(problems)
    for word in words:
        assert word in text, text
    assert bool(problems) == bool(words)


def test_an_environment_without_a_framework_is_fine_when_none_was_asked_for():
    assert check.verdict({"frameworks": [], "driver": None}, False, FLOORS, expected=[]) == (0, [])
    assert check.verdict({"frameworks": [], "driver": None}, False, FLOORS, expected=["torch"])[0] == 3
    status, problems = check.verdict({"frameworks": [], "import_errors": ["torch: libfoo.so"]}, False, FLOORS, expected=[])
    assert status == 3 and "torch: libfoo.so" in problems[0]


def test_an_unknown_cuda_major_needs_no_floor():
    assert check.verdict({"frameworks": [dict(GPU, cuda="14.0")], "driver": "580.1"}, True, FLOORS) == (0, [])


def test_text_report():
    report = {"prefix": "/opt/dlbox/envs/torch", "python": "3.11.2", "driver": None, "frameworks": [CPU],
              "problems": [], "status": 0}
    text = check.render_text(report)
    assert "PyTorch 2.13.0+cpu: CUDA none (CPU build), cuDNN none" in text
    assert "no GPU visible" in text and "0.0215 TFLOP/s" in text and text.endswith("Result: OK")
    gpu = check.render_text(dict(report, frameworks=[GPU], driver="580.159.03", status=1, problems=["x"]))
    assert "GPU: 1 visible: NVIDIA H200" in gpu and "PROBLEM: x" in gpu and "FAILED (exit 1)" in gpu


def test_main_without_any_framework(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(check, "PROBES", ())
    monkeypatch.setattr(check, "installed_driver", lambda: None)
    monkeypatch.setattr(check.sys, "prefix", str(tmp_path))
    assert check.main(["--json"]) == 3
    assert '"status": 3' in capsys.readouterr().out
