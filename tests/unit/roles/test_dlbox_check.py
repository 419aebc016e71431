# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""roles/python_env/files/dlbox-check.py: its verdicts and text, on hand-made reports (no framework needed)."""

from __future__ import annotations

import importlib.util
import re
import sys
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


# --- the guides' steps (no framework here: the verdicts on hand-made steps, the causes on real error texts) ---

OK_STEP = {"name": "compile", "device": "cpu", "ok": True, "seconds": 14.2, "detail": "matches eager mode",
           "cause": None, "fix": None}
BAD_STEP = dict(OK_STEP, ok=False, detail="", cause="the Python headers are missing (x)", fix="install python3.11-dev")


def test_a_failed_step_fails_the_check_with_its_cause_and_fix():
    status, problems = check.verdict({"frameworks": [dict(CPU, steps=[OK_STEP])]}, False, FLOORS)
    assert (status, problems) == (0, [])
    status, problems = check.verdict({"frameworks": [dict(CPU, steps=[OK_STEP, BAD_STEP])]}, False, FLOORS)
    assert status == check.EXIT_STEP_FAILED == 4
    assert problems == ["PyTorch compile on cpu failed: the Python headers are missing (x). Fix: install python3.11-dev."]


def test_no_gpu_and_an_old_driver_outrank_a_failed_step():
    assert check.verdict({"frameworks": [dict(CPU, steps=[BAD_STEP])]}, True, FLOORS)[0] == 1
    old = dict(GPU, steps=[BAD_STEP])
    assert check.verdict({"frameworks": [old], "driver": "575.57.08"}, True, FLOORS)[0] == 2


@pytest.mark.parametrize("text, words", [
    # torch/_inductor's own errors (cpp_builder.py, exc.py), as they read when the headers or compiler are missing
    ("CppCompileError: C++ compile error\n/tmp/torchinductor_root/ab/cab.cpp:1:10: fatal error: Python.h: No such file "
     "or directory", ["the Python headers are missing", "python%d.%d-dev" % sys.version_info[:2]]),
    ("InvalidCxxCompiler: No working C++ compiler found in torch._inductor.config.cpp.cxx: (None, 'g++')",
     ["no C/C++ compiler", "apt-get install g++"]),
    ("RuntimeError: Failed to find C compiler. Please specify via CC environment variable.", ["no C/C++ compiler"]),
    ("RuntimeError: CUDA error: no kernel image is available for execution on the device",
     ["this build has no kernels for this GPU's architecture", "The driver is not the cause"]),
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", ["out of memory on cuda", "nvidia-smi"]),
    ("ValueError: something else\nlast line here", ["ValueError: something else", "run dlbox-check again"]),
    ("BackendCompilerFailed: backend='inductor' raised:\nRuntimeError: boom\n\nSet TORCHDYNAMO_VERBOSE=1 for the internal stack trace",
     ["BackendCompilerFailed: backend='inductor' raised: (RuntimeError: boom)"]),
])
def test_explain_names_the_cause_and_the_fix(monkeypatch, text, words):
    monkeypatch.setattr(check, "python_headers", lambda: ("/usr/include/python3.11/Python.h", True))
    cause, fix = check.explain(text, "cuda")
    for word in words:
        assert word in cause + " " + fix, (cause, fix)


def test_missing_headers_are_named_before_anything_is_compiled(monkeypatch):
    monkeypatch.setattr(check, "python_headers", lambda: ("/usr/include/python3.11/Python.h", False))
    step = check.run_step("compile", "cpu", lambda: check._needs_build_tools("cpu"))
    assert step["ok"] is False and step["seconds"] >= 0
    assert "the Python headers are missing (/usr/include/python3.11/Python.h not found)" in step["cause"]


def test_a_missing_compiler_is_named(monkeypatch):
    monkeypatch.setattr(check, "python_headers", lambda: ("/usr/include/python3.11/Python.h", True))
    monkeypatch.setenv("CXX", "no-such-c++-compiler")
    step = check.run_step("compile", "cpu", lambda: check._needs_build_tools("cpu"))
    assert step["ok"] is False and "no C/C++ compiler" in step["cause"] and "no-such-c++-compiler" in step["cause"]


def test_text_report_lists_each_step_with_its_time():
    report = {"prefix": "/e", "python": "3.11.2", "driver": None, "status": 4, "problems": ["p"],
              "frameworks": [dict(CPU, torchaudio="2.9.1", steps=[OK_STEP, dict(BAD_STEP, name="autocast")])]}
    text = check.render_text(report)
    assert "torchaudio 2.9.1" in text
    assert "compile    on cpu  ok       14.20 s  matches eager mode" in text
    assert "autocast   on cpu  FAILED   14.20 s  the Python headers are missing (x)" in text


def test_steps_are_chosen_on_the_command_line(monkeypatch, capsys, tmp_path):
    seen = []
    monkeypatch.setattr(check, "PROBES", (("torch", lambda size, matmul, steps, workers: seen.append((steps, workers))
                                           or dict(CPU, steps=[])),))
    monkeypatch.setattr(check, "installed_driver", lambda: None)
    monkeypatch.setattr(check.sys, "prefix", str(tmp_path))
    assert check.main(["--json", "--skip", "compile", "--workers", "3"]) == 0
    assert seen[-1] == (("autocast", "conv", "dataloader", "checkpoint", "xla"), 3)
    assert check.main(["--no-steps"]) == 0 and seen[-1][0] == ()
    out = capsys.readouterr().out
    assert '"format": 1' in out


MOUNTS = """/dev/vda / ext4 rw,relatime 0 0
tmpfs /tmp tmpfs rw,nosuid,nodev,noexec,relatime 0 0
tmpfs /tmp/ok\\040dir tmpfs rw,nosuid,nodev,relatime 0 0
"""


def test_noexec_mount_finds_the_mount_holding_a_path(tmp_path):
    mounts = tmp_path / "mounts"
    mounts.write_text(MOUNTS)
    assert check.noexec_mount("/tmp/torchinductor_root", str(mounts)) == "/tmp"
    assert check.noexec_mount("/tmp", str(mounts)) == "/tmp"
    assert check.noexec_mount("/tmp/ok dir/x", str(mounts)) is None
    assert check.noexec_mount("/var/tmp", str(mounts)) is None
    assert check.noexec_mount("/x", str(tmp_path / "none")) is None


def test_a_noexec_kernel_folder_is_named_with_the_fix(monkeypatch):
    # torch 2.9.1's own words (torch/_inductor/codecache.py) when /tmp is a Docker tmpfs (noexec)
    text = ("InductorError: OSError: /tmp/torchinductor_root/2f/c2f.main.so: failed to map segment from shared object."
            "  The most common reason this may occur is if the /tmp folder is mounted with noexec")
    monkeypatch.setattr(check, "noexec_mount", lambda path, mounts=None: "/tmp")
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
    cause, fix = check.explain(text)
    assert "is mounted noexec" in cause and "/torchinductor_" in cause and "on /tmp" in cause
    assert "TORCHINDUCTOR_CACHE_DIR" in fix and "remount /tmp with exec" in fix
    monkeypatch.setattr(check, "python_headers", lambda: ("/usr/include/python3.11/Python.h", True))
    monkeypatch.setattr(check, "compilers", lambda: {"cxx": "/usr/bin/g++", "cxx_name": "g++", "cc": "/usr/bin/cc",
                                                     "cc_name": "cc"})
    step = check.run_step("compile", "cpu", lambda: check._needs_build_tools("cpu"))
    assert step["ok"] is False and "is mounted noexec" in step["cause"], step


def test_a_pre_release_python_is_named(monkeypatch):
    # Ubuntu 22.04's python3.11 (universe) is 3.11.0rc1; torch 2.13's Dynamo calls sys.get_int_max_str_digits (3.11.0+)
    rc1 = type("V", (tuple,), {"releaselevel": "candidate", "serial": 1})((3, 11, 0, "candidate", 1))
    assert check.prerelease_python(rc1) == "3.11.0rc1"
    assert check.prerelease_python(type("V", (tuple,), {"releaselevel": "final", "serial": 0})((3, 11, 2))) is None
    monkeypatch.setattr(check, "prerelease_python", lambda info=None: "3.11.0rc1")
    monkeypatch.setattr(check, "python_headers", lambda: ("/usr/include/python3.11/Python.h", True))
    cause, fix = check.explain("AttributeError: module 'sys' has no attribute 'get_int_max_str_digits'")
    assert "get_int_max_str_digits" in cause and "this Python is a pre-release, 3.11.0rc1" in cause
    assert "released Python" in fix and "python_env_interpreters" in fix


# --- a failure attributed from its own words: real error texts from public issue trackers ----------------------------
# Each text is copied from the issue named beside it (the lines that carry the error; tracebacks left out).

REAL_ERRORS = [
    # https://github.com/huggingface/accelerate/issues/1192
    ("RuntimeError: CUDA error: uncorrectable ECC error encountered\nCUDA kernel errors might be asynchronously reported "
     "at some other API call,so the stacktrace below might be incorrect.\nFor debugging consider passing "
     "CUDA_LAUNCH_BLOCKING=1.", "an uncorrectable ECC error", "nvidia-smi -q -d ECC"),
    # https://github.com/nagadit/DeepFaceLab_Linux/issues/89 (TensorFlow's words for the same fault)
    ("Internal: failed call to cuDevicePrimaryCtxRetain: CUDA_ERROR_ECC_UNCORRECTABLE: uncorrectable ECC error "
     "encountered", "an uncorrectable ECC error", "Xid 48"),
    # https://github.com/VITA-Group/TEGNAS/issues/19
    ("RuntimeError: CUDA error: an illegal memory access was encountered\nCUDA kernel errors might be asynchronously "
     "reported at some other API call,so the stacktrace below might be incorrect.\nFor debugging consider passing "
     "CUDA_LAUNCH_BLOCKING=1.", "a kernel read or wrote outside its memory on cuda", "CUDA_LAUNCH_BLOCKING=1"),
    # https://github.com/shikiw/SI-Adv/issues/3
    ("RuntimeError: CUDA error: no kernel image is available for execution on the device",
     "no kernels for this GPU's architecture", "torch.cuda.get_arch_list()"),
    # https://github.com/jiangyzy/GOAE/issues/16 (PyTorch's warning before the failure)
    ("NVIDIA RTX A6000 with CUDA capability sm_86 is not compatible with the current PyTorch installation.\nThe current "
     "PyTorch install supports CUDA capabilities sm_37 sm_50 sm_60 sm_70.", "no kernels for this GPU's architecture",
     "newer CUDA variant"),
    # https://github.com/lllyasviel/Fooocus/issues/1313
    ("RuntimeError: The NVIDIA driver on your system is too old (found version 11040). Please update your GPU driver by "
     "downloading and installing a new version from the URL: http://www.nvidia.com/Download/index.aspx Alternatively, go "
     "to: https://pytorch.org to install a PyTorch version that has been compiled with your version of the CUDA driver.",
     "the NVIDIA driver is older than the CUDA", "install a newer driver"),
    # https://github.com/C0untFloyd/roop-unleashed/issues/465 (onnxruntime's words)
    ("CUDA failure 35: CUDA driver version is insufficient for CUDA runtime version ; GPU=-2011338632",
     "the NVIDIA driver is older than the CUDA", "install a newer driver"),
    # https://github.com/microsoft/lisa/issues/2823
    ("UserWarning: CUDA initialization: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before "
     "calling NumCudaDevices() that might have already set an error? Error 802: system not yet initialized (Triggered "
     "internally at  ../c10/cuda/CUDAFunctions.cpp:112.)", "Fabric Manager is not running", "nvidia-fabricmanager"),
    # https://github.com/chenfei-wu/TaskMatrix/issues/379
    ("RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before calling "
     "NumCudaDevices() that might have already set an error? Error 804: forward compatibility was attempted on non "
     "supported HW", "forward-compatibility package (cuda-compat)", "remove cuda-compat"),
    # https://github.com/pytorch/pytorch/issues/97847
    ("RuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED", "cuDNN failed on cuda", "nvidia-cudnn-cu12"),
    # https://github.com/pytorch/pytorch/issues/5040 (the DataLoader in a container with Docker's /dev/shm)
    ("RuntimeError: DataLoader worker (pid 13) is killed by signal: Bus error.", "ran out of shared memory",
     "--shm-size=1g"),
    # https://github.com/hkchengrex/STCN/issues/132
    ("RuntimeError: DataLoader worker (pid 46794) is killed by signal: Bus error. It is possible that dataloader's workers "
     "are out of shared memory. Please try to raise your shared memory limit.", "ran out of shared memory", "--ipc=host"),
    # PyTorch 2.13.0+cpu's own words in a 64 MB /dev/shm (captured by test_the_dataloader_step_fails_in_dockers_shm below)
    ("RuntimeError: unable to allocate shared memory(shm) for file </torch_4185_2914517122_0>: No space left on device (28)",
     "ran out of shared memory", "--shm-size=1g"),
]


@pytest.mark.parametrize("text, cause_words, fix_words", REAL_ERRORS)
def test_a_real_error_gets_the_cause_that_fits_it(monkeypatch, text, cause_words, fix_words):
    # the headers missing on this machine must not change the attribution of an error that does not name them
    monkeypatch.setattr(check, "python_headers", lambda: ("/usr/include/python3.11/Python.h", False))
    monkeypatch.setattr(check, "prerelease_python", lambda info=None: None)
    cause, fix = check.explain(text, "cuda")
    assert cause_words in cause and fix_words in fix, (cause, fix)
    assert "Python headers" not in cause
    first = [line for line in text.splitlines() if line.strip()][0]
    if "Bus error" not in first and "unable to allocate" not in first:
        assert first.strip()[:60] in cause          # the error's own line is quoted
    assert "update the NVIDIA driver" not in fix                    # the old blanket advice for any CUDA error
    if not re.search(r"driver|Fabric Manager|cuda-compat", cause):
        assert "driver" not in fix or "not the cause" in fix, fix   # a fault that is not the driver's


def test_the_python_headers_are_blamed_only_when_the_compiler_names_them(monkeypatch):
    monkeypatch.setattr(check, "python_headers", lambda: ("/usr/include/python3.11/Python.h", False))
    monkeypatch.setattr(check, "prerelease_python", lambda info=None: None)
    # torch/_inductor's compile error (cpp_builder) naming the header
    cause, _fix = check.explain("CppCompileError: C++ compile error\n/tmp/torchinductor_root/ab/cab.cpp:1:10: fatal "
                                "error: Python.h: No such file or directory")
    assert cause.startswith("the Python headers are missing (/usr/include/python3.11/Python.h not found)")
    cause, _fix = check.explain("RuntimeError: the autocast loss is not finite (nan)")
    assert "Python headers" not in cause and cause.startswith("RuntimeError: the autocast loss is not finite")


class _Broken(Exception):
    pass


@pytest.mark.parametrize("raised, expected", [
    # https://github.com/fudan-generative-vision/hallo/issues/98: torchvision built for another torch
    (RuntimeError("operator torchvision::nms does not exist"),
     "torchvision: RuntimeError: operator torchvision::nms does not exist"),
    # https://github.com/pytorch/audio/issues/3335: torchaudio's library built against another torch
    (OSError("/home/pi/.pyenv/versions/3.8.16/envs/diart/lib/python3.8/site-packages/torchaudio/lib/libtorchaudio.so: "
             "undefined symbol: _ZNK5torch8autograd4Node4nameB5cxx11Ev"),
     "torchvision: OSError: /home/pi/.pyenv/versions/3.8.16/envs/diart/lib/python3.8/site-packages/torchaudio/lib/"
     "libtorchaudio.so: undefined symbol: _ZNK5torch8autograd4Node4nameB5cxx11Ev"),
    (ModuleNotFoundError("No module named 'torchvision'", name="torchvision"), None),
    (ModuleNotFoundError("No module named 'torch._C._distributed'", name="torch._C._distributed"),
     "torchvision: ModuleNotFoundError: No module named 'torch._C._distributed'"),
])
def test_an_extra_that_is_installed_but_does_not_import_is_reported_with_its_text(raised, expected):
    def importer(name):
        raise raised
    version, error = check.import_extra("torchvision", importer)
    assert version is None and error == expected
    assert check.import_extra("torchvision", lambda name: type("M", (), {"__version__": "0.28.0"})) == ("0.28.0", None)


def test_import_errors_cudnn_and_shm_are_problems():
    broken = dict(CPU, import_errors=["torchvision: RuntimeError: operator torchvision::nms does not exist"])
    status, problems = check.verdict({"frameworks": [broken]}, False, FLOORS)
    assert status == 4 and problems == ["torchvision is installed but does not import: RuntimeError: operator "
                                        "torchvision::nms does not exist"]
    status, problems = check.verdict({"frameworks": [dict(GPU, cudnn=None)], "driver": "580.159.03"}, True, FLOORS)
    assert status == 4 and "is a CUDA 13.2 build but cuDNN is not available" in problems[0]
    assert "nvidia-cudnn-cu13" in problems[0]
    assert check.verdict({"frameworks": [GPU], "driver": "580.159.03"}, True, FLOORS) == (0, [])
    docker = {"path": "/dev/shm", "size_mb": 64.0, "free_mb": 64.0}
    status, problems = check.verdict({"frameworks": [CPU], "shm": docker, "shm_judged": True}, False, FLOORS)
    assert status == 4 and problems[0].startswith("/dev/shm is 64.0 MB (Docker's default)")
    assert "--shm-size=1g" in problems[0]
    assert check.verdict({"frameworks": [CPU], "shm": docker, "shm_judged": False}, False, FLOORS) == (0, [])
    big = dict(docker, size_mb=8192.0)
    assert check.verdict({"frameworks": [CPU], "shm": big, "shm_judged": True}, False, FLOORS) == (0, [])


def test_the_dataloader_step_holds_more_than_dockers_shm_in_flight():
    assert check.dataloader_in_flight_mb(1) > check.DOCKER_DEFAULT_SHM_MB
    assert check.dataloader_in_flight_mb(4) < check.SHM_FLOOR_MB


# --- the real steps with the CPU PyTorch 2.13.0 (tests/unit/torch_cpu.py), in this machine's /dev/shm and in one of
# Docker's default size (a private mount namespace with a 64 MB tmpfs on /dev/shm: `unshare -m`, as root) ------------

def _run_check(python, shm_mb=None):
    import json  # pylint: disable=import-outside-toplevel
    import subprocess  # pylint: disable=import-outside-toplevel

    argv = [python, "-W", "ignore", str(PATH), "--json", "--no-matmul", "--workers", "1"]
    for step in ("compile", "autocast", "checkpoint", "xla"):
        argv += ["--skip", step]
    if shm_mb:
        argv = ["unshare", "-m", "sh", "-c", 'mount -t tmpfs -o size=%dm tmpfs /dev/shm && exec "$0" "$@"' % shm_mb] + argv
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert proc.stdout.startswith("{"), proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def test_the_conv_and_dataloader_steps_pass_with_room_in_shm():
    from torch_cpu import torch_python  # pylint: disable=import-outside-toplevel,import-error

    rc, report = _run_check(torch_python())
    steps = {s["name"]: s for s in report["frameworks"][0]["steps"]}
    assert rc == 0, report["problems"]
    assert steps["conv"]["ok"] and "conv2d" in steps["conv"]["detail"]
    assert steps["dataloader"]["ok"] and "128 samples of 3x224x224" in steps["dataloader"]["detail"]
    assert report["shm"]["size_mb"] >= check.SHM_FLOOR_MB


def test_the_dataloader_step_fails_in_dockers_shm():
    from torch_cpu import torch_python  # pylint: disable=import-outside-toplevel,import-error

    rc, report = _run_check(torch_python(), shm_mb=64)
    steps = {s["name"]: s for s in report["frameworks"][0]["steps"]}
    assert rc == check.EXIT_STEP_FAILED
    assert report["shm"]["size_mb"] == 64.0
    assert not steps["dataloader"]["ok"]
    assert steps["dataloader"]["cause"].startswith("the DataLoader's workers ran out of shared memory (/dev/shm: 64.0 MB, "
                                                   "Docker's default)"), steps["dataloader"]
    assert "--shm-size" in steps["dataloader"]["fix"]
    assert steps["conv"]["ok"]
    assert any(p.startswith("/dev/shm is 64.0 MB (Docker's default)") for p in report["problems"])
