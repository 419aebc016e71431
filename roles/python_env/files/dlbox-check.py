# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""dlbox-check: does this environment's framework see the GPU, and how fast does it multiply?

Installed by dlbox.stack.python_env as <root>/<name>/bin/dlbox-check (run with the environment's
Python). Prints the framework and CUDA versions, GPU visibility, device names and a short matmul
with its measured TFLOP/s, as text or with --json.

Exit status: 0 fine; 1 a GPU was expected (the plan had one, or --require-gpu) and none is visible;
2 the framework's CUDA needs a newer NVIDIA driver than the installed one; 3 no framework imports.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
import warnings

EXIT_OK, EXIT_NO_GPU, EXIT_OLD_DRIVER, EXIT_NO_FRAMEWORK = 0, 1, 2, 3


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


def probe_torch(size, matmul):
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
    return info


def probe_tensorflow(size, matmul):
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
    return info


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
        need = (floors or {}).get(str(_version_tuple(fw.get("cuda"))[0])) if fw.get("cuda") else None
        if need and driver and _version_tuple(driver) < _version_tuple(need):
            problems.append("%s %s was built with CUDA %s, which needs NVIDIA driver %s or newer (CUDA %s.x minor-version "
                            "compatibility); this machine has driver %s. Install a newer driver, or use a build for an "
                            "older CUDA." % (fw["framework"], fw["version"], fw["cuda"], need,
                                             _version_tuple(fw["cuda"])[0], driver))
            status = EXIT_OLD_DRIVER
    if require_gpu and not any(fw.get("gpu_visible") for fw in frameworks):
        problems.append("no GPU: a GPU was expected but %s sees none (%s)."
                        % (" and ".join(fw["framework"] for fw in frameworks),
                           "driver %s loaded" % driver if driver else "no NVIDIA driver loaded"))
        status = status or EXIT_NO_GPU
    return status, problems


def render_text(report):
    lines = ["Environment: %s (Python %s)" % (report.get("prefix"), report.get("python"))]
    lines.append("Driver:      %s" % (report.get("driver") or "none loaded"))
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
    args = parser.parse_args(argv)

    warnings.filterwarnings("ignore")
    manifest = load_manifest(sys.prefix)
    require_gpu = bool(manifest.get("gpu_expected")) if args.require_gpu is None else args.require_gpu
    report = {"prefix": manifest.get("path") or sys.prefix, "python": "%d.%d.%d" % sys.version_info[:3],
              "driver": installed_driver(), "require_gpu": require_gpu, "frameworks": [], "import_errors": []}
    for module, probe in PROBES:
        try:
            report["frameworks"].append(probe(args.size, not args.no_matmul))
        except ImportError as exc:
            if module in (manifest.get("frameworks_modules") or []):
                report["import_errors"].append("%s: %s" % (module, exc))
    report["status"], report["problems"] = verdict(report, require_gpu, manifest.get("driver_floors") or {},
                                                   manifest.get("frameworks_modules"))
    print(json.dumps(report, indent=2, sort_keys=True) if args.json else render_text(report))
    return report["status"]


if __name__ == "__main__":
    sys.exit(main())
