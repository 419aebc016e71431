# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""dlbox-check: does this environment's framework see the GPU, and does what the guides do work?

Installed by dlbox.stack.python_env as <root>/<name>/bin/dlbox-check (run with the environment's
Python). Prints the framework and CUDA versions, GPU visibility, device names and a short matmul
with its measured TFLOP/s, then the first-day steps of the PyTorch and TensorFlow guides, each timed:
PyTorch's torch.compile (CPU always, GPU where one is seen), an autocast training step (bf16, or fp16
with a gradient scaler), a convolution (through cuDNN on a GPU, checked against the CPU), a DataLoader
with worker processes that holds more than Docker's 64 MB default /dev/shm in flight (pin_memory on a
GPU) and a checkpoint saved and loaded back; TensorFlow's GPU list and a small tf.function compiled
with XLA. /dev/shm's size is reported and judged; a CUDA build without cuDNN and a torchvision or
torchaudio that is installed but fails to import are problems with their own text. A failed step
names its cause, attributed from its own error text, and what to do. As text, or with --json (its
shape: the role's README).

Exit status: 0 fine; 1 a GPU was expected (the plan had one, or --require-gpu) and none is visible;
2 the framework's CUDA needs a newer NVIDIA driver than the installed one; 3 no framework imports;
4 a step failed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
import warnings

EXIT_OK, EXIT_NO_GPU, EXIT_OLD_DRIVER, EXIT_NO_FRAMEWORK, EXIT_STEP_FAILED = 0, 1, 2, 3, 4
TORCH_STEPS = ("compile", "autocast", "conv", "dataloader", "checkpoint")
TF_STEPS = ("xla",)
STEPS = TORCH_STEPS + TF_STEPS
# PyTorch's DataLoader workers hand each batch to the main process through shared memory (/dev/shm). Docker gives a
# container 64 MB unless run with --shm-size or --ipc=host (docker run reference, --shm-size); PyTorch's README asks
# for one of them. A batch that does not fit kills the worker with SIGBUS: "DataLoader worker (pid N) is killed by
# signal: Bus error. It is possible that dataloader's workers are out of shared memory" (pytorch/pytorch#5040).
DOCKER_DEFAULT_SHM_MB = 64
# The dataloader step's batch: 128 samples of 3 x 224 x 224 fp32 (ImageNet-sized images), 77 MB: one batch alone is
# more than Docker's 64 MB, so a container left at the default fails the step the way users' training does. Each
# worker makes one batch: workers x 77 MB in flight (308 MB with the default 4 workers).
DATALOADER_BATCH, DATALOADER_SHAPE = 128, (3, 224, 224)
# /dev/shm below this is a problem where the DataLoader step runs: the project's floor, the step's 308 MB with its
# default 4 workers and room beside it.
SHM_FLOOR_MB = 512


def _version_tuple(text):
    return tuple(int(p) for p in re.findall(r"\d+", str(text or ""))[:3])


def load_manifest(prefix):
    path = os.path.join(prefix, "dlbox", "manifest.json")
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return {}


def installed_driver():
    """The NVIDIA driver version from /proc or nvidia-smi; None when no driver is loaded."""
    try:
        with open("/proc/driver/nvidia/version", encoding="utf-8") as handle:
            match = re.search(r"Kernel Module(?: for [\w-]+)?\s+(\d+\.\d+(?:\.\d+)?)", handle.read())
            if match:
                return match.group(1)
    except OSError:
        pass
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30, check=False)
        first = out.stdout.strip().splitlines()
        return first[0].strip() if out.returncode == 0 and first else None
    except (OSError, subprocess.SubprocessError):
        return None


def _tflops(n, seconds, iterations):
    return 2.0 * n ** 3 * iterations / seconds / 1e12 if seconds > 0 else 0.0


def probe_torch(size, matmul, steps=(), workers=2):
    import torch  # pylint: disable=import-error,import-outside-toplevel

    info = {"framework": "PyTorch", "version": torch.__version__, "cuda": torch.version.cuda, "cudnn": None,
            "gpu_visible": False, "devices": []}
    try:
        info["cudnn"] = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    except Exception:  # pylint: disable=broad-except  # a broken cuDNN must not hide the rest
        info["cudnn"] = None
    if torch.cuda.is_available():
        info["gpu_visible"] = True
        info["devices"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    info["import_errors"] = []
    for extra in ("torchvision", "torchaudio"):
        info[extra], error = import_extra(extra)
        if error:
            info["import_errors"].append(error)
    if matmul:
        device = "cuda" if info["gpu_visible"] else "cpu"
        dtype = torch.bfloat16 if device == "cuda" else torch.float32
        n = size or (8192 if device == "cuda" else 1024)
        a = torch.randn(n, n, device=device, dtype=dtype)
        b = torch.randn(n, n, device=device, dtype=dtype)
        (a @ b).sum().item()
        iterations = 20 if device == "cuda" else 5
        start = time.perf_counter()
        for _iteration in range(iterations):
            c = a @ b
        c.sum().item()
        seconds = time.perf_counter() - start
        info["matmul"] = {"device": device, "dtype": str(dtype).replace("torch.", ""), "n": n,
                          "iterations": iterations, "seconds": round(seconds, 4),
                          "tflops": round(_tflops(n, seconds, iterations), 4)}
    info["steps"] = torch_steps(torch, ["cpu"] + (["cuda"] if info["gpu_visible"] else []), steps, workers) \
        if steps else []
    return info


def import_extra(name, importer=__import__):
    """(version, None) when ``name`` imports; (None, None) when it is not installed; (None, "name: its error") when it
    is installed but fails to import (a build for another torch: "operator torchvision::nms does not exist", an
    undefined symbol in libtorchaudio.so)."""
    try:
        return getattr(importer(name), "__version__", "unknown"), None
    except ModuleNotFoundError as exc:
        if exc.name == name:
            return None, None
        return None, "%s: %s: %s" % (name, type(exc).__name__, exc)
    except Exception as exc:  # pylint: disable=broad-except  # any error of an installed package is its problem
        return None, "%s: %s: %s" % (name, type(exc).__name__, str(exc).strip().splitlines()[-1][:500] if str(exc).strip() else "")


def shm_size(path="/dev/shm"):
    """{path, size_mb, free_mb} of the shared memory folder; None when it is missing."""
    try:
        stat = os.statvfs(path)
    except OSError:
        return None
    return {"path": path, "size_mb": round(stat.f_blocks * stat.f_frsize / 2 ** 20, 1),
            "free_mb": round(stat.f_bavail * stat.f_frsize / 2 ** 20, 1)}


def dataloader_in_flight_mb(workers):
    """MB the dataloader step holds in shared memory at once: one batch per worker."""
    batch = DATALOADER_BATCH * 4
    for side in DATALOADER_SHAPE:
        batch *= side
    return round(max(1, workers) * batch / 2 ** 20, 1)


def probe_tensorflow(size, matmul, steps=(), workers=2):  # pylint: disable=unused-argument
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf  # pylint: disable=import-error,import-outside-toplevel

    build = {}
    try:
        build = dict(tf.sysconfig.get_build_info())
    except Exception:  # pylint: disable=broad-except  # older builds lack it
        build = {}
    gpus = tf.config.list_physical_devices("GPU")
    info = {"framework": "TensorFlow", "version": tf.__version__, "cuda": build.get("cuda_version"),
            "cudnn": build.get("cudnn_version"), "gpu_visible": bool(gpus), "devices": []}
    for gpu in gpus:
        details = tf.config.experimental.get_device_details(gpu) or {}
        info["devices"].append(details.get("device_name") or gpu.name)
    if matmul:
        device = "/GPU:0" if gpus else "/CPU:0"
        n = size or (8192 if gpus else 1024)
        with tf.device(device):
            a = tf.random.normal((n, n))
            b = tf.random.normal((n, n))
            float(tf.reduce_sum(tf.matmul(a, b)))
            iterations = 20 if gpus else 5
            start = time.perf_counter()
            for _iteration in range(iterations):
                c = tf.matmul(a, b)
            float(tf.reduce_sum(c))
            seconds = time.perf_counter() - start
        info["matmul"] = {"device": "cuda" if gpus else "cpu", "dtype": "float32", "n": n, "iterations": iterations,
                          "seconds": round(seconds, 4), "tflops": round(_tflops(n, seconds, iterations), 4)}
    info["steps"] = []
    if "xla" in steps:
        for device in ["cpu"] + (["cuda"] if gpus else []):
            info["steps"].append(run_step("xla", device, lambda d=device: tf_xla_step(tf, d)))
    return info


# --------------------------------------------------------------------------------------------
# The guides' first-day steps. Each returns a dict: name, device, ok, seconds, detail; a failed one
# also cause and fix (plain words). explain() turns an exception into that cause and fix.
# --------------------------------------------------------------------------------------------


def python_headers():
    """Path of this Python's Python.h, and whether it is there."""
    include = sysconfig.get_paths().get("include") or ""
    path = os.path.join(include, "Python.h")
    return path, os.path.isfile(path)


def _apt_python_dev():
    return "python%d.%d-dev" % sys.version_info[:2]


def compilers():
    """The C++ compiler Inductor calls on the CPU (CXX, else g++) and the C compiler Triton calls (CC, else cc/gcc)."""
    cxx = os.environ.get("CXX") or "g++"
    cc_names = [os.environ["CC"]] if os.environ.get("CC") else ["cc", "gcc", "clang"]
    return {"cxx": shutil.which(cxx), "cxx_name": cxx,
            "cc": next((shutil.which(n) for n in cc_names if shutil.which(n)), None), "cc_name": cc_names[0]}


def inductor_cache_dir():
    """Where Inductor writes and loads its compiled kernels: TORCHINDUCTOR_CACHE_DIR, else <tmp>/torchinductor_<user>."""
    if os.environ.get("TORCHINDUCTOR_CACHE_DIR"):
        return os.environ["TORCHINDUCTOR_CACHE_DIR"]
    try:
        import getpass  # pylint: disable=import-outside-toplevel

        user = getpass.getuser()
    except Exception:  # pylint: disable=broad-except  # no name for this uid
        user = "unknown"
    return os.path.join(tempfile.gettempdir(), "torchinductor_" + re.sub(r"[\\/:]", "_", user))


def noexec_mount(path, mounts="/proc/self/mounts"):
    """The mount point holding ``path`` when it is mounted noexec, else None."""
    path = os.path.realpath(path)
    best, options = "", ""
    try:
        with open(mounts, encoding="utf-8") as handle:
            for line in handle:
                fields = line.split()
                if len(fields) < 4:
                    continue
                point = fields[1].replace("\\040", " ")
                if (path == point or path.startswith(point.rstrip("/") + "/")) and len(point) >= len(best):
                    best, options = point, fields[3]
    except OSError:
        return None
    return best if "noexec" in options.split(",") else None


def _noexec_cause(where):
    return ("the folder torch.compile loads its compiled kernels from (%s, on %s) is mounted noexec"
            % (inductor_cache_dir(), where),
            "set TORCHINDUCTOR_CACHE_DIR to a folder on a filesystem mounted without noexec (such as "
            "~/.cache/torchinductor), or remount %s with exec" % where)


def prerelease_python(info=None):
    """'3.11.0rc1' when this Python is a pre-release (Ubuntu 22.04's python3.11 from universe is one), else None."""
    info = info or sys.version_info
    if info.releaselevel == "final":
        return None
    return "%d.%d.%d%s%d" % (info[0], info[1], info[2], {"alpha": "a", "beta": "b", "candidate": "rc"}.get(
        info.releaselevel, info.releaselevel), info.serial)


def explain(text, device="cpu"):
    """(cause, fix) for a failed step's error text."""
    cause, fix = _explain(str(text), device)
    pre = prerelease_python()
    if pre:
        cause = "%s; this Python is a pre-release, %s, which the framework may not support" % (cause, pre)
        fix = ("%s; or build the environment on a released Python (python_env_interpreters, e.g. from "
               "`uv python install X.Y`)" % fix)
    return cause, fix


# CUDA's and the frameworks' own error words -> (cause, fix). The first that matches wins; each cause quotes the line of
# the error that matched. Sources of the words: the CUDA Runtime API's error list (cudaErrorECCUncorrectable,
# cudaErrorIllegalAddress, cudaErrorNoKernelImageForDevice, cudaErrorInsufficientDriver, cudaErrorSystemNotReady,
# cudaErrorCompatNotSupportedOnDevice, cudaErrorAssert, cudaErrorDevicesUnavailable) and PyTorch's messages; the
# real texts the unit tests use, with their issues, are in tests/unit/roles/test_dlbox_check.py.
CUDA_CAUSES = (
    (r"uncorrectable ECC error|ECC_UNCORRECTABLE|cudaErrorECCUncorrectable",
     "an uncorrectable ECC error in the GPU's memory (a hardware fault, not a software version)",
     "read nvidia-smi -q -d ECC,PAGE_RETIREMENT and the kernel log (Xid 48, 63, 64, 94, 95); reset the GPU "
     "(nvidia-smi -r) or reboot, which retires or remaps the bad rows; if it comes back, the GPU needs service"),
    (r"out of memory|CUDA_ERROR_OUT_OF_MEMORY|cudaErrorMemoryAllocation",
     "out of memory on %(device)s",
     "free the GPU (nvidia-smi shows which processes hold memory) or use smaller batches, and run dlbox-check again"),
    (r"illegal memory access|illegal address|CUDA_ERROR_ILLEGAL_ADDRESS|cudaErrorIllegalAddress",
     "a kernel read or wrote outside its memory on %(device)s (a bug in a kernel or library, or a faulty GPU)",
     "run again with CUDA_LAUNCH_BLOCKING=1 to see which operation; look for Xid 13, 31 or 43 in the kernel log; if it "
     "repeats with every framework, test the GPU (dcgmi diag -r 2)"),
    (r"no kernel image is available|is not compatible with the current PyTorch installation|sm_\d+ is not compatible|"
     r"CUDA_ERROR_NO_BINARY_FOR_GPU|cudaErrorNoKernelImageForDevice|unsupported gpu architecture",
     "this build has no kernels for this GPU's architecture",
     "install a build whose CUDA variant lists this GPU's compute capability (torch.cuda.get_arch_list(); the plan's "
     "variant); a newer GPU needs a newer CUDA variant, an older one an older variant. The driver is not the cause"),
    (r"driver version is insufficient|cudaErrorInsufficientDriver|CUDA_ERROR_INSUFFICIENT_DRIVER|"
     r"NVIDIA driver on your system is too old",
     "the NVIDIA driver is older than the CUDA this build was made with",
     "install a newer driver (dlbox-check's driver line and the plan's driver branch), or use a build for an older CUDA"),
    (r"Error 802|system not yet initialized|cudaErrorSystemNotReady",
     "CUDA reports the system not yet initialized (error 802): on an NVSwitch system (HGX/DGX) the Fabric Manager is "
     "not running",
     "start nvidia-fabricmanager (the same version as the driver: systemctl status nvidia-fabricmanager), or let "
     "dlbox.stack.nvidia_driver install it"),
    (r"Error 804|forward compatibility was attempted on non supported HW|cudaErrorCompatNotSupportedOnDevice",
     "the CUDA forward-compatibility package (cuda-compat) is in use on a GPU that does not support it",
     "remove cuda-compat from LD_LIBRARY_PATH or the image (it is for datacenter GPUs only), or install a driver new "
     "enough for this CUDA"),
    (r"device-side assert",
     "a device-side assertion failed on %(device)s (an index out of range in the code being run)",
     "run again with CUDA_LAUNCH_BLOCKING=1 to see the operation; the cause is in the code or data, not the install"),
    (r"busy or unavailable|cudaErrorDevicesUnavailable",
     "the GPU is busy or unavailable (exclusive compute mode with another process on it, or the GPU is lost)",
     "nvidia-smi -q -d COMPUTE shows the compute mode and who holds the GPU"),
    (r"CUDNN_STATUS_\w+|cuDNN error",
     "cuDNN failed on %(device)s",
     "check that the cuDNN the framework loads matches its CUDA (pip show nvidia-cudnn-cu12 / -cu13 in this "
     "environment, torch.backends.cudnn.version()); CUDNN_STATUS_NOT_INITIALIZED also comes when GPU memory runs out"),
    (r"ptxas",
     "the CUDA compiler Triton calls (ptxas) failed, often because it does not know this GPU's architecture",
     "use a PyTorch/Triton release that supports this GPU; the driver is not the cause"),
    (r"CUDA error|CUDA_ERROR|cudaError",
     "a CUDA error on %(device)s",
     "read the error's own text; run again with CUDA_LAUNCH_BLOCKING=1, and look at the kernel log (Xid) and nvidia-smi"),
)

# older PyTorch: the worker dies of SIGBUS ("killed by signal: Bus error ... out of shared memory"); 2.x reserves the
# segment first and says "unable to allocate shared memory(shm) for file </torch_...>: No space left on device (28)"
_SHM_RE = re.compile(r"unable to allocate shared memory|out of shared memory|killed by signal: Bus error|"
                     r"bus error.{0,40}shared memory|"
                     r"insufficient shared memory|No space left on device.{0,80}/dev/shm|/dev/shm.{0,80}No space left",
                     re.I | re.S)


def _matched_line(text, match):
    """The line of ``text`` that holds the match, trimmed."""
    start = text.rfind("\n", 0, match.start()) + 1
    end = text.find("\n", match.end())
    return text[start:end if end >= 0 else len(text)].strip()[:300]


def _explain(text, device):
    if re.search(r"failed to map segment from shared object|mounted with noexec", text):
        where = noexec_mount(os.path.dirname(inductor_cache_dir().rstrip("/")) or "/") or "its filesystem"
        return _noexec_cause(where)
    if "Python.h" in text:   # only when the compiler names them: a missing header is not every failure's cause
        headers, present = python_headers()
        return ("the Python headers are missing (%s %s), which torch.compile needs to build its kernels"
                % (headers, "not found" if not present else "not found by the compiler"),
                "install %s (apt-get install %s), or rerun dlbox.stack.python_env, which installs it"
                % (_apt_python_dev(), _apt_python_dev()))
    if re.search(r"InvalidCxxCompiler|No working C compiler|Failed to find C compiler|[gc]\+\+: not found|"
                 r"No such file or directory: '(g\+\+|gcc|cc|clang\+\+)'|compiler.*not found", text, re.I):
        return ("no C/C++ compiler (torch.compile calls %s on the CPU and Triton calls a C compiler on the GPU)"
                % compilers()["cxx_name"],
                "install g++ (apt-get install g++), or set CXX/CC to a compiler; dlbox.stack.python_env installs g++")
    match = _SHM_RE.search(text)
    if match:
        shm = shm_size() or {}
        return ("the DataLoader's workers ran out of shared memory (%s: %s MB%s): %s"
                % (shm.get("path", "/dev/shm"), shm.get("size_mb", "?"),
                   ", Docker's default" if shm.get("size_mb") and shm["size_mb"] <= DOCKER_DEFAULT_SHM_MB else "",
                   _matched_line(text, match)),
                "give /dev/shm more room: docker run --shm-size=1g (or more) or --ipc=host; in Kubernetes an emptyDir "
                "with medium: Memory on /dev/shm; fewer workers or smaller batches only hide it")
    for pattern, cause, fix in CUDA_CAUSES:
        match = re.search(pattern, text, re.I)
        if match:
            return ("%s: %s" % (cause % {"device": device}, _matched_line(text, match)), fix)
    return (key_line(text)[:400],
            "see the step's error (dlbox-check --json) and the framework's documentation; "
            "run dlbox-check again to see whether it repeats")


# Lines of PyTorch's errors that say how to get more detail, not what went wrong.
_NOISE_RE = re.compile(r"TORCHDYNAMO_VERBOSE|TORCH_LOGS|developer context|suppress_errors|You can suppress|"
                       r"import torch\._dynamo|^\s*$|^-+$|^Traceback|^\s+File \"")


def key_line(text):
    """The line of an error text that says what went wrong: the first naming an error, else the first."""
    lines = [line.strip() for line in str(text).splitlines() if not _NOISE_RE.search(line)]
    if not lines:
        return "unknown error"
    named = [line for line in lines[1:] if re.search(r"error|Error|Exception|failed|not found|No such", line)]
    return "%s (%s)" % (lines[0], named[0]) if named and len(lines[0]) < 120 else lines[0]


def run_step(name, device, func):
    """Run one step, timed; an exception becomes a failed step with its cause and fix."""
    start = time.perf_counter()
    step = {"name": name, "device": device, "ok": False, "seconds": 0.0, "detail": "", "cause": None, "fix": None,
            "error": None}
    try:
        step["detail"] = func() or ""
        step["ok"] = True
    except Exception as exc:  # pylint: disable=broad-except  # every failure is reported, with its cause
        text = "%s: %s" % (type(exc).__name__, exc)
        step["cause"], step["fix"] = explain(text, device)
        step["error"] = text[:4000]
    step["seconds"] = round(time.perf_counter() - start, 3)
    return step


def _needs_build_tools(device):
    headers, present = python_headers()
    if not present:
        raise RuntimeError("Python.h not found at %s" % headers)
    found = compilers()
    if device == "cpu" and not found["cxx"]:
        raise RuntimeError("InvalidCxxCompiler: %s not found" % found["cxx_name"])
    if device == "cuda" and not found["cc"]:
        raise RuntimeError("Failed to find C compiler: %s not found" % found["cc_name"])
    cache = inductor_cache_dir()
    parent = cache if os.path.isdir(cache) else os.path.dirname(cache.rstrip("/")) or "/"
    where = noexec_mount(parent)
    if where:
        raise RuntimeError("%s: failed to map segment from shared object (mounted with noexec)" % where)


def torch_compile_step(torch, device):
    _needs_build_tools(device)
    torch._dynamo.reset()  # pylint: disable=protected-access
    model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4)).to(device)
    compiled = torch.compile(model)
    x = torch.randn(8, 16, device=device)
    with torch.no_grad():
        got, want = compiled(x), model(x)
    if not torch.allclose(got, want, atol=1e-4, rtol=1e-4):
        raise RuntimeError("the compiled model's output differs from eager mode (max %g)" % (got - want).abs().max())
    return "a 2-layer model compiled by Inductor matches eager mode"


def torch_autocast_step(torch, device):
    model = torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    if device == "cuda" and not torch.cuda.is_bf16_supported():
        dtype = torch.float16
        scaler = torch.amp.GradScaler("cuda") if hasattr(torch, "amp") and hasattr(torch.amp, "GradScaler") \
            else torch.cuda.amp.GradScaler()
    else:
        dtype, scaler = torch.bfloat16, None
    x, y = torch.randn(64, 32, device=device), torch.randn(64, 1, device=device)
    with torch.autocast(device_type=device, dtype=dtype):
        out = model(x)
        loss = torch.nn.functional.mse_loss(out, y)
    if out.dtype != dtype:
        raise RuntimeError("autocast did not run the model in %s (got %s)" % (dtype, out.dtype))
    optimizer.zero_grad()
    if scaler is not None:
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    else:
        loss.backward()
        optimizer.step()
    if not torch.isfinite(loss).item():
        raise RuntimeError("the autocast loss is not finite (%s)" % loss.item())
    scaled = " with a GradScaler" if scaler is not None else ""
    return "%s training step%s, loss %.4f" % (str(dtype).replace("torch.", ""), scaled, loss.item())


class _Synthetic(object):  # a map-style dataset (torch.utils.data.Dataset's protocol), picklable for spawned workers
    def __init__(self, length, shape=DATALOADER_SHAPE):
        self.length, self.shape = length, shape

    def __len__(self):
        return self.length

    def __getitem__(self, index):
        import torch  # pylint: disable=import-error,import-outside-toplevel

        return torch.full(self.shape, float(index)), index


def torch_dataloader_step(torch, device, workers):
    """ImageNet-sized batches from worker processes: more than Docker's 64 MB /dev/shm in flight at once."""
    pin = device == "cuda"
    workers = max(1, workers)
    samples = DATALOADER_BATCH * workers
    loader = torch.utils.data.DataLoader(_Synthetic(samples), batch_size=DATALOADER_BATCH, num_workers=workers,
                                         pin_memory=pin, shuffle=False)
    seen = 0
    pinned = True
    for batch, index in loader:
        if not bool((batch[:, 0, 0, 0] == index.to(batch.dtype)).all()):
            raise RuntimeError("a DataLoader batch does not match its indices")
        pinned = pinned and (not pin or batch.is_pinned())
        seen += batch.shape[0]
        if device == "cuda":
            batch.to(device, non_blocking=True)
    if seen != samples:
        raise RuntimeError("the DataLoader gave %d samples of %d" % (seen, samples))
    if not pinned:
        raise RuntimeError("pin_memory=True gave batches that are not pinned")
    return ("%d samples of %s in batches of %d from %d worker processes, %.0f MB in flight through shared memory%s"
            % (samples, "x".join(str(n) for n in DATALOADER_SHAPE), DATALOADER_BATCH, workers,
               dataloader_in_flight_mb(workers), ", pinned" if pin else ""))


def torch_conv_step(torch, device):
    """A 2-D convolution, through cuDNN on a GPU and checked against the CPU's result."""
    inputs = torch.randn(8, 3, 32, 32)
    weight = torch.randn(16, 3, 3, 3)
    want = torch.nn.functional.conv2d(inputs, weight, padding=1)
    if device != "cuda":
        return "conv2d 8x3x32x32 -> 16 channels on the CPU (cuDNN is for the GPU)"
    if not torch.backends.cudnn.is_available():
        raise RuntimeError("cuDNN is not available to PyTorch (torch.backends.cudnn.is_available() is False): "
                           "the convolution cannot go through cuDNN")
    torch.backends.cudnn.enabled = True
    got = torch.nn.functional.conv2d(inputs.to(device), weight.to(device), padding=1).cpu()
    # cuDNN may use TF32 for fp32 convolutions (torch.backends.cudnn.allow_tf32 is True by default): 1e-2 relative
    if not torch.allclose(got, want, rtol=1e-2, atol=1e-2):
        raise RuntimeError("the cuDNN convolution differs from the CPU's (max %g)" % (got - want).abs().max())
    return "conv2d 8x3x32x32 -> 16 channels through cuDNN %s matches the CPU" % torch.backends.cudnn.version()


def torch_checkpoint_step(torch, device):
    model = torch.nn.Linear(8, 4).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    model(torch.randn(2, 8, device=device)).sum().backward()
    optimizer.step()
    with tempfile.TemporaryDirectory(prefix="dlbox-check-") as folder:
        path = os.path.join(folder, "checkpoint.pt")
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": 1}, path)
        size = os.path.getsize(path)
        try:
            loaded = torch.load(path, map_location=device, weights_only=True)
        except TypeError:  # torch before 1.13 has no weights_only
            loaded = torch.load(path, map_location=device)
    again = torch.nn.Linear(8, 4).to(device)
    again.load_state_dict(loaded["model"])
    resumed = torch.optim.Adam(again.parameters(), lr=0.01)
    resumed.load_state_dict(loaded["optimizer"])
    for key, value in model.state_dict().items():
        if not torch.equal(value, again.state_dict()[key]):
            raise RuntimeError("the loaded %s differs from the saved one" % key)
    again(torch.randn(2, 8, device=device)).sum().backward()
    resumed.step()
    return "model and optimizer state saved (%d bytes), loaded and resumed for one step" % size


def torch_steps(torch, devices, only, workers):
    steps = []
    for device in devices:
        if "compile" in only:
            steps.append(run_step("compile", device, lambda d=device: torch_compile_step(torch, d)))
        if "autocast" in only:
            steps.append(run_step("autocast", device, lambda d=device: torch_autocast_step(torch, d)))
        if "conv" in only:
            steps.append(run_step("conv", device, lambda d=device: torch_conv_step(torch, d)))
    if "dataloader" in only:
        device = devices[-1]
        steps.append(run_step("dataloader", device, lambda: torch_dataloader_step(torch, device, workers)))
    if "checkpoint" in only:
        device = devices[-1]
        steps.append(run_step("checkpoint", device, lambda: torch_checkpoint_step(torch, device)))
    return steps


def tf_xla_step(tf, device):
    @tf.function(jit_compile=True)
    def step(a, b):
        return tf.nn.relu(tf.matmul(a, b)) + 1.0

    with tf.device("/GPU:0" if device == "cuda" else "/CPU:0"):
        a, b = tf.random.normal((64, 64)), tf.random.normal((64, 64))
        got = step(a, b)
        want = tf.nn.relu(tf.matmul(a, b)) + 1.0
    if float(tf.reduce_max(tf.abs(got - want))) > 1e-3:
        raise RuntimeError("the XLA-compiled function differs from eager mode")
    return "a tf.function compiled with XLA (jit_compile=True) matches eager mode"


PROBES = (("torch", probe_torch), ("tensorflow", probe_tensorflow))


def verdict(report, require_gpu, floors, expected=None):
    """Exit status and plain-words problems for a report ({frameworks, driver}).

    ``expected``: the modules the environment was built with (its manifest); ``[]`` for an environment
    without a framework, which is fine; None (no manifest) expects one.
    """
    problems = []
    status = EXIT_OK
    frameworks = report.get("frameworks") or []
    if not frameworks:
        if expected == [] and not report.get("import_errors"):
            return EXIT_OK, []
        return EXIT_NO_FRAMEWORK, ["no framework (torch, tensorflow) imports in this environment: %s"
                                   % "; ".join(report.get("import_errors") or ["none installed"])]
    driver = report.get("driver")
    for fw in frameworks:
        for error in fw.get("import_errors") or []:
            problems.append("%s is installed but does not import: %s" % (error.split(":", 1)[0], error.split(":", 1)[1].strip()))
            status = status or EXIT_STEP_FAILED
        if fw.get("framework") == "PyTorch" and fw.get("cuda") and fw.get("cudnn") is None:
            problems.append("%s %s is a CUDA %s build but cuDNN is not available to it (torch.backends.cudnn.version() "
                            "is None): convolutions cannot use cuDNN. Reinstall the nvidia-cudnn wheel this build "
                            "depends on (pip check; pip show nvidia-cudnn-cu%s)."
                            % (fw["framework"], fw["version"], fw["cuda"], _version_tuple(fw["cuda"])[0]))
            status = status or EXIT_STEP_FAILED
    shm = report.get("shm") if report.get("shm_judged") else None   # judged where the DataLoader step runs
    if shm and shm.get("size_mb") is not None and shm["size_mb"] < SHM_FLOOR_MB and any(
            fw.get("framework") == "PyTorch" for fw in frameworks):
        problems.append("%s is %s MB%s: PyTorch's DataLoader workers pass batches through it and fail when it is full "
                        "(\"DataLoader worker ... killed by signal: Bus error\", \"unable to allocate shared memory\"); "
                        "give it %d MB or more (docker run "
                        "--shm-size=1g or --ipc=host)."
                        % (shm["path"], shm["size_mb"], " (Docker's default)" if shm["size_mb"] <= DOCKER_DEFAULT_SHM_MB
                           else "", SHM_FLOOR_MB))
        status = status or EXIT_STEP_FAILED
    for fw in frameworks:
        need = (floors or {}).get(str(_version_tuple(fw.get("cuda"))[0])) if fw.get("cuda") else None
        if need and driver and _version_tuple(driver) < _version_tuple(need):
            problems.append("%s %s was built with CUDA %s, which needs NVIDIA driver %s or newer (CUDA %s.x minor-version "
                            "compatibility); this machine has driver %s. Install a newer driver, or use a build for an "
                            "older CUDA." % (fw["framework"], fw["version"], fw["cuda"], need,
                                             _version_tuple(fw["cuda"])[0], driver))
            status = EXIT_OLD_DRIVER
    for fw in frameworks:
        for step in fw.get("steps") or []:
            if not step.get("ok"):
                problems.append("%s %s on %s failed: %s. Fix: %s."
                                % (fw["framework"], step["name"], step["device"], step.get("cause"), step.get("fix")))
                status = status or EXIT_STEP_FAILED
    if require_gpu and not any(fw.get("gpu_visible") for fw in frameworks):
        problems.append("no GPU: a GPU was expected but %s sees none (%s)."
                        % (" and ".join(fw["framework"] for fw in frameworks),
                           "driver %s loaded" % driver if driver else "no NVIDIA driver loaded"))
        status = EXIT_NO_GPU if status in (EXIT_OK, EXIT_STEP_FAILED) else status
    return status, problems


def render_text(report):
    lines = ["Environment: %s (Python %s)" % (report.get("prefix"), report.get("python"))]
    lines.append("Driver:      %s" % (report.get("driver") or "none loaded"))
    if report.get("shm"):
        lines.append("Shared mem:  %(path)s %(size_mb)s MB (%(free_mb)s MB free)" % report["shm"])
    if not report.get("frameworks") and not report.get("problems"):
        lines.append("No framework in this environment (none was asked for).")
    for fw in report.get("frameworks") or []:
        lines.append("%s %s: CUDA %s, cuDNN %s" % (fw["framework"], fw["version"], fw.get("cuda") or "none (CPU build)",
                                                   fw.get("cudnn") or "none"))
        if fw.get("gpu_visible"):
            lines.append("  GPU: %d visible: %s" % (len(fw["devices"]), ", ".join(fw["devices"])))
        else:
            lines.append("  no GPU visible")
        mm = fw.get("matmul")
        if mm:
            lines.append("  matmul %dx%d %s on %s: %.4f TFLOP/s (%d in %.3f s)"
                         % (mm["n"], mm["n"], mm["dtype"], mm["device"], mm["tflops"], mm["iterations"], mm["seconds"]))
        for extra in ("torchvision", "torchaudio"):
            if fw.get(extra):
                lines.append("  %s %s" % (extra, fw[extra]))
        for error in fw.get("import_errors") or []:
            lines.append("  import failed: %s" % error)
        for step in fw.get("steps") or []:
            outcome = step["detail"] if step["ok"] else step["cause"]
            lines.append("  %-10s on %-4s %-6s %7.2f s  %s"
                         % (step["name"], step["device"], "ok" if step["ok"] else "FAILED", step["seconds"], outcome))
    for error in report.get("import_errors") or []:
        lines.append("import failed: %s" % error)
    for problem in report.get("problems") or []:
        lines.append("PROBLEM: %s" % problem)
    lines.append("Result: %s" % ("OK" if report.get("status") == 0 else "FAILED (exit %s)" % report.get("status")))
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="dlbox-check", description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    gpu = parser.add_mutually_exclusive_group()
    gpu.add_argument("--require-gpu", dest="require_gpu", action="store_true", default=None,
                     help="fail when no GPU is visible (default: when the plan of this environment had one)")
    gpu.add_argument("--no-require-gpu", dest="require_gpu", action="store_false")
    parser.add_argument("--no-matmul", action="store_true", help="skip the matmul")
    parser.add_argument("--size", type=int, default=0, help="matmul size N (default 8192 on GPU, 1024 on CPU)")
    parser.add_argument("--no-steps", action="store_true", help="skip the guides' steps (compile, autocast, ...)")
    parser.add_argument("--skip", action="append", default=[], choices=STEPS, metavar="STEP",
                        help="skip one step (%s); may be repeated" % ", ".join(STEPS))
    parser.add_argument("--workers", type=int, default=min(4, os.cpu_count() or 1),
                        help="DataLoader worker processes (default: 4, or fewer CPUs)")
    args = parser.parse_args(argv)
    steps = () if args.no_steps else tuple(s for s in STEPS if s not in args.skip)

    warnings.filterwarnings("ignore")
    manifest = load_manifest(sys.prefix)
    require_gpu = bool(manifest.get("gpu_expected")) if args.require_gpu is None else args.require_gpu
    report = {"format": 1, "prefix": manifest.get("path") or sys.prefix, "python": "%d.%d.%d" % sys.version_info[:3],
              "driver": installed_driver(), "require_gpu": require_gpu, "frameworks": [], "import_errors": [],
              "shm": shm_size(), "shm_judged": "dataloader" in steps}
    for module, probe in PROBES:
        try:
            report["frameworks"].append(probe(args.size, not args.no_matmul, steps, args.workers))
        except ImportError as exc:
            if module in (manifest.get("frameworks_modules") or []):
                report["import_errors"].append("%s: %s" % (module, exc))
    report["status"], report["problems"] = verdict(report, require_gpu, manifest.get("driver_floors") or {},
                                                   manifest.get("frameworks_modules"))
    print(json.dumps(report, indent=2, sort_keys=True) if args.json else render_text(report))
    return report["status"]


if __name__ == "__main__":
    sys.exit(main())
