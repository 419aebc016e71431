# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""dlbox-acceptance: prove that a provisioned machine works and measure what it performs (playbooks/acceptance.yml).

Prints one JSON object: ``checks`` (nvidia-smi, a CUDA program, each environment's dlbox-check, docker run --gpus
all, dcgmi diag -r 2: each pass/fail/finding/skipped with a reason), ``figures`` (dense matmul TFLOPS in bf16/fp16/
fp32, host-to-device and device-to-device GB/s, the PCIe link under load, all-reduce bus bandwidth, fio sequential
read MB/s, DataLoader samples/s) and ``skipped`` (why a figure is missing). The controller compares the figures
with data/acceptance.yml. Standard library only; PyTorch figures run in an environment's own Python. Leaves
nothing behind (fio's file is removed).
"""

import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

TORCH_BENCH = r'''
import json, os, subprocess, sys, threading, time
import torch
cfg = json.loads(os.environ["DLBOX_ACCEPTANCE"])
out = {"figures": {}, "skipped": {}, "torch": torch.__version__}

class Synthetic(torch.utils.data.Dataset):
    def __len__(self):
        return cfg["dataloader_samples"]
    def __getitem__(self, i):
        return torch.randn(3, 64, 64), i % 10

cuda = torch.cuda.is_available()
workers = max(1, min(4, (os.cpu_count() or 2) - 1))
loader = torch.utils.data.DataLoader(Synthetic(), batch_size=64, num_workers=workers, pin_memory=cuda)
start, seen = None, 0
for index, (x, _y) in enumerate(loader):
    if index == 1:
        start, seen = time.perf_counter(), 0
    seen += x.shape[0]
if start is not None:
    out["figures"]["dataloader_samples_s"] = round(seen / (time.perf_counter() - start), 1)
    out["figures"]["dataloader_workers"] = workers

def timed(fn, iters):
    fn(); torch.cuda.synchronize()
    begin = torch.cuda.Event(enable_timing=True); end = torch.cuda.Event(enable_timing=True)
    begin.record()
    for _ in range(iters):
        fn()
    end.record(); torch.cuda.synchronize()
    return begin.elapsed_time(end) / 1000.0

if not cuda:
    for key in ("matmul", "h2d", "d2d", "pcie_under_load", "allreduce"):
        out["skipped"][key] = "no GPU visible to PyTorch"
else:
    dev = torch.device("cuda:0")
    major, minor = torch.cuda.get_device_capability(0)
    tflops = {}
    for name, dtype in (("bf16", torch.bfloat16), ("fp16", torch.float16), ("fp32", torch.float32)):
        if name == "bf16" and major < 8:
            out["skipped"]["matmul_bf16"] = "compute capability %d.%d has no bf16 tensor cores" % (major, minor)
            continue
        n = 8192
        a = torch.randn(n, n, device=dev, dtype=dtype); b = torch.randn(n, n, device=dev, dtype=dtype)
        seconds = timed(lambda: torch.matmul(a, b), 20)
        tflops[name] = round(2.0 * n ** 3 * 20 / seconds / 1e12, 1)
        del a, b
    out["figures"]["matmul_tflops"] = tflops
    size = 1 << 30
    host = torch.empty(size, dtype=torch.uint8).pin_memory()
    devbuf = torch.empty(size, dtype=torch.uint8, device=dev)
    out["figures"]["h2d_gb_s"] = round(size * 10 / timed(lambda: devbuf.copy_(host, non_blocking=True), 10) / 1e9, 1)
    other = torch.empty_like(devbuf)
    # a device copy reads and writes every byte
    out["figures"]["d2d_gb_s"] = round(2 * size * 20 / timed(lambda: other.copy_(devbuf), 20) / 1e9, 1)
    stop = threading.Event()
    def load():
        while not stop.is_set():
            devbuf.copy_(host, non_blocking=True); torch.cuda.synchronize()
    worker = threading.Thread(target=load); worker.start(); time.sleep(1.0)
    try:
        line = subprocess.run(["nvidia-smi", "-i", "0", "--query-gpu=pcie.link.gen.current,pcie.link.gen.max,"
                               "pcie.link.width.current,pcie.link.width.max", "--format=csv,noheader,nounits"],
                              capture_output=True, text=True, timeout=30).stdout.strip()
        gen_c, gen_m, width_c, width_m = [int(v) for v in line.split(",")]
        out["figures"]["pcie_under_load"] = {"gen_current": gen_c, "gen_max": gen_m, "width_current": width_c,
                                             "width_max": width_m}
    except (OSError, ValueError, subprocess.SubprocessError) as exc:
        out["skipped"]["pcie_under_load"] = "nvidia-smi's link query failed: %s" % exc
    finally:
        stop.set(); worker.join()
    del host, devbuf, other
    count = torch.cuda.device_count()
    if count < 2:
        out["skipped"]["allreduce"] = "one GPU: nothing to all-reduce across"
    else:
        import torch.distributed as dist
        import torch.multiprocessing as mp
        def run(rank, world, result):
            dist.init_process_group("nccl", init_method="tcp://127.0.0.1:29531", rank=rank, world_size=world)
            torch.cuda.set_device(rank)
            t = torch.ones(64 << 20, device="cuda")       # 256 MiB of fp32
            for _ in range(3):
                dist.all_reduce(t)
            torch.cuda.synchronize(); begin = time.perf_counter()
            for _ in range(10):
                dist.all_reduce(t)
            torch.cuda.synchronize(); seconds = (time.perf_counter() - begin) / 10
            if rank == 0:
                algbw = t.numel() * 4 / seconds / 1e9
                result.put(round(algbw * 2 * (world - 1) / world, 1))
            dist.destroy_process_group()
        queue = mp.get_context("spawn").SimpleQueue()
        mp.spawn(run, args=(count, queue), nprocs=count, join=True)
        out["figures"]["allreduce_busbw_gb_s"] = queue.get()
        out["figures"]["allreduce_gpus"] = count
print(json.dumps(out))
'''

CUDA_PROGRAM = r'''
#include <cstdio>
__global__ void add(int n, const float *x, float *y) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] += x[i]; }
int main() {
  const int n = 1 << 20; float *x, *y;
  if (cudaMallocManaged(&x, n * sizeof(float)) != cudaSuccess || cudaMallocManaged(&y, n * sizeof(float)) != cudaSuccess) {
    printf("cudaMallocManaged failed\n"); return 1;
  }
  for (int i = 0; i < n; i++) { x[i] = 1.0f; y[i] = 2.0f; }
  add<<<(n + 255) / 256, 256>>>(n, x, y);
  cudaError_t err = cudaDeviceSynchronize();
  if (err != cudaSuccess) { printf("%s\n", cudaGetErrorString(err)); return 1; }
  for (int i = 0; i < n; i++) if (y[i] != 3.0f) { printf("wrong result at %d\n", i); return 1; }
  printf("ok\n"); return 0;
}
'''


def run(argv, timeout=300, env=None):
    try:
        proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout,
                              universal_newlines=True, env=env, check=False)
        return proc.returncode, proc.stdout, proc.stderr
    except (OSError, subprocess.SubprocessError) as exc:
        return 127, "", str(exc)


def last_line(text):
    lines = [line for line in (text or "").strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


def gpus_from_smi():
    if not shutil.which("nvidia-smi"):
        return None, {"status": "finding", "label": "nvidia-smi", "reason": "no GPU: nvidia-smi is not installed"}
    rc, out, err = run(["nvidia-smi", "--query-gpu=index,name", "--format=csv,noheader"], 60)
    if rc != 0:
        return None, {"status": "fail", "label": "nvidia-smi", "reason": last_line(out + err)}
    gpus = []
    for line in out.splitlines():
        if "," in line:
            index, name = line.split(",", 1)
            gpus.append({"index": int(index.strip()), "name": name.strip()})
    if not gpus:
        return [], {"status": "finding", "label": "nvidia-smi", "reason": "no GPU: nvidia-smi lists none"}
    return gpus, {"status": "pass", "label": "nvidia-smi", "value": ", ".join(g["name"] for g in gpus)}


def cuda_program(gpus):
    label = "a CUDA program (nvcc, vector add)"
    if not gpus:
        return {"status": "finding", "label": label, "reason": "no GPU"}
    nvcc = shutil.which("nvcc") or next((p for p in sorted(glob.glob("/usr/local/cuda*/bin/nvcc"))), None)
    if not nvcc:
        return {"status": "skipped", "label": label, "reason": "no nvcc (the cuda role did not run here)"}
    work = tempfile.mkdtemp(prefix="dlbox-acceptance-")
    try:
        with open(os.path.join(work, "add.cu"), "w") as handle:
            handle.write(CUDA_PROGRAM)
        rc, out, err = run([nvcc, "-o", os.path.join(work, "add"), os.path.join(work, "add.cu")], 300)
        if rc != 0:
            return {"status": "fail", "label": label, "reason": "nvcc: " + last_line(out + err)}
        rc, out, err = run([os.path.join(work, "add")], 120)
        return {"status": "pass" if rc == 0 else "fail", "label": label, "value": last_line(out + err)}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def environments(root):
    checks, pythons = {}, []
    for check in sorted(glob.glob(os.path.join(root, "*", "bin", "dlbox-check"))):
        name = check.split(os.sep)[-3]
        rc, out, err = run([check, "--json"], 600)
        entry = {"label": "dlbox-check --json in %s" % name, "status": "pass" if rc == 0 else "fail"}
        try:
            report = json.loads(out)
            entry["value"] = "%s, exit %d" % (", ".join("%s %s" % (fw.get("framework"), fw.get("version"))
                                                        for fw in report.get("frameworks") or []) or "no framework", rc)
            problems = report.get("problems") or []
            if problems:
                entry["reason"] = "; ".join(str(p.get("message", p)) if isinstance(p, dict) else str(p)
                                            for p in problems)[:400]
        except ValueError:
            entry["reason"] = last_line(out + err) or "rc=%d" % rc
        checks["env_" + name] = entry
        pythons.append(os.path.join(root, name, "bin", "python"))
    if not checks:
        checks["environments"] = {"status": "skipped", "label": "environments' dlbox-check",
                                  "reason": "no environment under %s (python_env did not run here)" % root}
    return checks, pythons


def docker_check(gpus, image):
    label = "docker run --gpus all"
    if not shutil.which("docker"):
        return {"status": "skipped", "label": label, "reason": "no Docker"}
    if not gpus:
        return {"status": "finding", "label": label, "reason": "no GPU"}
    rc, out, err = run(["docker", "run", "--rm", "--gpus", "all", image, "nvidia-smi", "-L"], 600)
    return {"status": "pass" if rc == 0 else "fail", "label": label, "value": last_line(out + err)}


def dcgm_check(gpus):
    label = "dcgmi diag -r 2"
    if not shutil.which("dcgmi"):
        return {"status": "skipped", "label": label, "reason": "DCGM is not installed"}
    if not gpus:
        return {"status": "finding", "label": label, "reason": "no GPU"}
    rc, out, err = run(["dcgmi", "diag", "-r", "2"], 900)
    failed = re.findall(r"^\|\s*([^|]+?)\s*\|\s*Fail", out, re.MULTILINE)
    return {"status": "pass" if rc == 0 and not failed else "fail", "label": label,
            "reason": ("failed: " + ", ".join(failed)) if failed else last_line(err) or None}


def disk_kind(directory):
    rc, out, _err = run(["df", "--output=source", directory], 30)
    source = out.strip().splitlines()[-1] if rc == 0 and out.strip() else ""
    name = os.path.basename(os.path.realpath(source)) if source.startswith("/dev/") else None
    if not name:
        return None, source or None
    base = re.sub(r"p?\d+$", "", name) if not name.startswith("md") else re.sub(r"p\d+$", "", name)
    if base.startswith("nvme"):
        return "nvme", name
    if base.startswith("md"):
        return "md", name
    try:
        with open("/sys/block/%s/queue/rotational" % base) as handle:
            return ("hdd" if handle.read().strip() == "1" else "ssd"), name
    except OSError:
        return None, name


def fio_read(directory, size):
    if not shutil.which("fio"):
        return None, "fio is not installed (apt-get install fio)"
    target = os.path.join(directory, "dlbox-acceptance.fio")
    note = None
    try:
        for direct in ("1", "0"):
            rc, out, err = run(["fio", "--name=dlbox-seqread", "--filename=" + target, "--rw=read", "--bs=1M",
                                "--size=" + size, "--ioengine=psync", "--direct=" + direct, "--invalidate=1",
                                "--output-format=json"], 600)
            if rc == 0:
                job = json.loads(out[out.index("{"):])["jobs"][0]
                if direct == "0":
                    note = "buffered read: the filesystem refused O_DIRECT"
                return round(job["read"]["bw_bytes"] / 1e6, 1), note
            note = last_line(out + err)
        return None, "fio failed: %s" % note
    except (ValueError, KeyError, IndexError) as exc:
        return None, "fio's JSON could not be read: %s" % exc
    finally:
        if os.path.exists(target):
            os.unlink(target)


def torch_python(candidates, explicit):
    for python in ([explicit] if explicit else []) + candidates:
        if python and os.access(python, os.X_OK):
            rc, _out, _err = run([python, "-c", "import torch"], 120)
            if rc == 0:
                return python
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default=os.uname()[1])
    parser.add_argument("--envs-root", default="/opt/dlbox/envs")
    parser.add_argument("--python", default="", help="a Python with PyTorch (default: the first environment that has it)")
    parser.add_argument("--data-dir", default="/var/tmp")
    parser.add_argument("--fio-size", default="1G")
    parser.add_argument("--docker-image", default="ubuntu:24.04")
    parser.add_argument("--dataloader-samples", type=int, default=4096)
    args = parser.parse_args()

    result = {"host": args.host, "checks": {}, "figures": {}, "skipped": {}, "data_dir": args.data_dir}
    gpus, smi = gpus_from_smi()
    result["gpus"] = gpus or []
    result["checks"]["nvidia_smi"] = smi
    result["checks"]["cuda_program"] = cuda_program(gpus)
    env_checks, pythons = environments(args.envs_root)
    result["checks"].update(env_checks)
    result["checks"]["docker"] = docker_check(gpus, args.docker_image)
    result["checks"]["dcgm"] = dcgm_check(gpus)

    python = torch_python(pythons, args.python)
    if python is None:
        reason = "no environment with PyTorch under %s (python_env did not run here)" % args.envs_root
        for key in ("matmul", "h2d", "d2d", "pcie_under_load", "allreduce", "dataloader"):
            result["skipped"][key] = reason if gpus or key == "dataloader" else "no GPU"
    else:
        env = dict(os.environ, DLBOX_ACCEPTANCE=json.dumps({"dataloader_samples": args.dataloader_samples}))
        rc, out, err = run([python, "-c", TORCH_BENCH], 900, env=env)
        try:
            bench = json.loads(out.strip().splitlines()[-1])
            result["figures"].update(bench["figures"])
            result["skipped"].update(bench["skipped"])
            result["torch"] = {"python": python, "version": bench.get("torch")}
        except (ValueError, IndexError, KeyError):
            for key in ("matmul", "dataloader"):
                result["skipped"][key] = "the PyTorch benchmark failed (rc=%d): %s" % (rc, last_line(err or out))
        if not gpus:
            for key in ("matmul", "h2d", "d2d", "pcie_under_load", "allreduce"):
                result["skipped"][key] = "no GPU"

    kind, device = disk_kind(args.data_dir)
    result["data_disk_kind"], result["data_disk_device"] = kind, device
    figure, note = fio_read(args.data_dir, args.fio_size)
    if figure is None:
        result["skipped"]["fio"] = note
    else:
        result["figures"]["fio_seq_read_mb_s"] = figure
        if note:
            result["figures"]["fio_note"] = note
    print(json.dumps(result, indent=2, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
