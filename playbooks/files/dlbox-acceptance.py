# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""dlbox-acceptance: prove that a provisioned machine works and measure what it performs (playbooks/acceptance.yml).

Prints one JSON object: ``checks`` (nvidia-smi, a CUDA program, each environment's dlbox-check, docker run --gpus
all, dcgmi diag -r 2, and one ``figure_<part>`` per PyTorch part that failed: each pass/fail/finding/skipped with a
reason), ``figures`` (dense matmul TFLOPS in bf16/fp16/fp32/tf32, host-to-device, device-to-host and
device-to-device GB/s, the PCIe link under load, all-reduce bus bandwidth, fio sequential read MB/s, DataLoader
samples/s), ``skipped`` (why a figure is missing), ``errors`` (each failed part's own error), ``per_gpu`` (each
GPU's own matmul, copy and link figures, by nvidia-smi's index with its PCI bus id: every GPU is measured, so one
slow card among its peers shows; ``figures`` holds GPU 0's, errors of GPU N > 0 are ``<part>@gpuN``) and, for the
controller's judgement, ``topology`` (nvidia-smi topo -m as printed) and ``lspci`` (lspci -vv of the NVIDIA
devices: the GPUs' own LnkCap). Each per-GPU part sees its GPU alone, by UUID (CUDA_VISIBLE_DEVICES=GPU-<uuid>;
an inherited CUDA_VISIBLE_DEVICES is dropped for every part), and runs on the CPUs of the GPU's NUMA node (sysfs
numa_node and local_cpulist), so a host copy is not measured across the socket link; ``gpus[].numa`` and
``per_gpu[].numa`` say where, ``per_gpu[].ran`` what the part saw. The controller compares the figures with
data/acceptance.yml. Standard library
only; each PyTorch figure is measured by dlbox-acceptance-torch.py (beside this file, or --torch-script) in an
environment's own Python, one process per part with its own time limit, so a part that fails, crashes or hangs
loses only its own figure. Leaves nothing behind (fio's file is removed).
"""

import argparse
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SYSFS = os.environ.get("DLBOX_ACCEPTANCE_SYSFS", "/sys")   # the tests point it at a fixture tree
GPU_PARTS = ("matmul_bf16", "matmul_fp16", "matmul_fp32", "matmul_tf32", "h2d", "d2h", "d2d", "pcie_under_load",
             "dataloader", "allreduce")
# --torch-device cpu (a host without a GPU, and the tests): what PyTorch can measure on the CPU
CPU_PARTS = ("matmul_bf16", "matmul_fp16", "matmul_fp32", "dataloader", "allreduce")
# the parts that measure one GPU: run once per GPU (dlbox-acceptance-torch.py --gpu N)
PER_GPU_PARTS = ("matmul_bf16", "matmul_fp16", "matmul_fp32", "matmul_tf32", "h2d", "d2h", "d2d", "pcie_under_load")

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
    # pci.device_id (0x233010DE) finds the GPU's reference in data/acceptance.yml by device id (an H100 NVL is not
    # an H100 SXM); a driver that refuses a field gets the older index,name query
    for fields in ("index,pci.device_id,pci.bus_id,name", "index,name"):
        rc, out, err = run(["nvidia-smi", "--query-gpu=" + fields, "--format=csv,noheader"], 60)
        if rc == 0:
            break
    if rc != 0:
        return None, {"status": "fail", "label": "nvidia-smi", "reason": last_line(out + err)}
    gpus = []
    for line in out.splitlines():
        values = [v.strip() for v in line.split(",", fields.count(","))]
        if len(values) == fields.count(",") + 1 and values[0].isdigit():
            gpu = {"index": int(values[0]), "name": values[-1]}
            if len(values) == 4:
                gpu.update(pci_device_id=values[1], bus_id=values[2])
            gpus.append(gpu)
    if not gpus:
        return [], {"status": "finding", "label": "nvidia-smi", "reason": "no GPU: nvidia-smi lists none"}
    gpu_links(gpus)
    gpu_uuids(gpus)
    gpu_state(gpus)
    for gpu in gpus:
        gpu["numa"] = numa_placement(gpu.get("bus_id"))
    return gpus, {"status": "pass", "label": "nvidia-smi", "value": ", ".join(g["name"] for g in gpus)}


# nvidia-smi --help-query-gpu: pcie.link.gen.max is the lower of the GPU's and the system's maximum generation;
# .gpumax and .hostmax (newer drivers) are each side's own; width has only .max, which is NVML's
# nvmlDeviceGetMaxPcieLinkWidth, "the maximum PCIe link width possible with this device and system" (the lower of
# GPU and slot too): the card's own width is its LnkCap, read from sysfs (width_gpumax).
LINK_FIELDS = ("pci.bus_id", "pcie.link.gen.max", "pcie.link.width.max", "pcie.link.gen.gpumax", "pcie.link.gen.hostmax")


def gpu_links(gpus):
    """Each GPU's PCIe bus id and link maxima from nvidia-smi (an older driver answers without gpumax/hostmax)."""
    for count in (5, 3):
        rc, out, _err = run(["nvidia-smi", "--query-gpu=index," + ",".join(LINK_FIELDS[:count]),
                             "--format=csv,noheader,nounits"], 60)
        if rc == 0 and out.strip():
            break
    else:
        return
    by_index = {gpu["index"]: gpu for gpu in gpus}
    for line in out.splitlines():
        values = [v.strip() for v in line.split(",")]
        if len(values) < 1 + count or not values[0].isdigit() or int(values[0]) not in by_index:
            continue
        gpu = by_index[int(values[0])]
        gpu["bus_id"] = values[1]
        gpu["pcie"] = {key.replace("pcie.link.", "").replace(".", "_"): int(v) if v.isdigit() else None
                       for key, v in zip(LINK_FIELDS[1:count], values[2:1 + count])}
        width = sysfs_max_link_width(values[1])
        if width:
            gpu["pcie"]["width_gpumax"] = width


# NVML's clock event (throttle) reasons that say the hardware holds the clocks down (nvml.h
# nvmlClocksEventReason*: HwSlowdown 0x8, SwThermalSlowdown 0x20, HwThermalSlowdown 0x40, HwPowerBrakeSlowdown 0x80);
# GpuIdle, the applications clocks and the software power cap are ordinary states.
THROTTLE_BITS = ((0x8, "hardware slowdown"), (0x20, "software thermal slowdown"), (0x40, "hardware thermal slowdown"),
                 (0x80, "power brake"))


def gpu_state(gpus):
    """What makes a GPU's figures low without a hardware fault, as each GPU's ``state``: MIG mode on (the benchmark gets
    one instance, or none), compute processes of other users, and throttle reasons. The controller reports them as
    findings beside the figures, not as failures of the card."""
    by_bus = {str(g.get("bus_id") or "").lower(): g for g in gpus}
    for fields in ("index,mig.mode.current,clocks_event_reasons.active",
                   "index,mig.mode.current,clocks_throttle_reasons.active"):
        rc, out, _err = run(["nvidia-smi", "--query-gpu=" + fields, "--format=csv,noheader"], 60)
        if rc == 0:
            break
    else:
        out = ""
    by_index = {g["index"]: g for g in gpus}
    for line in out.splitlines():
        values = [v.strip() for v in line.split(",")]
        if len(values) != 3 or not values[0].isdigit() or int(values[0]) not in by_index:
            continue
        state = by_index[int(values[0])].setdefault("state", {})
        state["mig"] = values[1] == "Enabled"
        try:
            bits = int(values[2], 16)
        except ValueError:
            bits = 0
        state["throttle"] = [name for bit, name in THROTTLE_BITS if bits & bit]
    rc, out, _err = run(["nvidia-smi", "--query-compute-apps=gpu_bus_id,pid,process_name", "--format=csv,noheader"], 60)
    for line in out.splitlines() if rc == 0 else []:
        values = [v.strip() for v in line.split(",", 2)]
        gpu = by_bus.get(values[0].lower()) if len(values) == 3 else None
        if gpu is not None:
            gpu.setdefault("state", {}).setdefault("processes", []).append("%s (pid %s)" % (values[2], values[1]))


def gpu_uuids(gpus):
    """Each GPU's UUID (nvidia-smi's ``GPU-xxxxxxxx-...``): a per-GPU part selects its GPU by it
    (CUDA_VISIBLE_DEVICES=<uuid>), which neither a user's CUDA_VISIBLE_DEVICES nor CUDA's own device order can change.
    A driver that does not answer leaves the GPUs without one (selected by index, see ``part_env``)."""
    rc, out, _err = run(["nvidia-smi", "--query-gpu=index,uuid", "--format=csv,noheader"], 60)
    by_index = {gpu["index"]: gpu for gpu in gpus}
    for line in out.splitlines() if rc == 0 else []:
        values = [v.strip() for v in line.split(",")]
        if len(values) == 2 and values[0].isdigit() and int(values[0]) in by_index and values[1].startswith(("GPU-", "MIG-")):
            by_index[int(values[0])]["uuid"] = values[1]


def pci_address(bus_id):
    """nvidia-smi's ``00000000:21:00.0`` as sysfs names the function (``0000:21:00.0``); None when it is not one."""
    parts = (bus_id or "").lower().split(":")
    if len(parts) != 3:
        return None
    return "%s:%s:%s" % (parts[0][-4:].rjust(4, "0"), parts[1], parts[2])


def parse_cpulist(text):
    """sysfs' cpulist format (``0-15,32-47``, ``3``, empty) as a set of CPU numbers; None when it is not one."""
    cpus = set()
    for item in (text or "").strip().split(","):
        item = item.strip()
        if not item:
            continue
        first, _dash, last = item.partition("-")
        if not first.isdigit() or (last and not last.isdigit()):
            return None
        cpus.update(range(int(first), int(last or first) + 1))
    return cpus


def cpulist_text(cpus):
    """A set of CPU numbers in sysfs' cpulist format (``0-15,32-47``)."""
    runs = []  # [first, last] of each run of consecutive CPUs
    for cpu in sorted(cpus):
        if runs and cpu == runs[-1][1] + 1:
            runs[-1][1] = cpu
        else:
            runs.append([cpu, cpu])
    return ",".join(str(first) if first == last else "%d-%d" % (first, last) for first, last in runs)


def numa_placement(bus_id, allowed=None):
    """Where a GPU's host-to-device and device-to-host copies are measured from: its PCI function's NUMA node
    (sysfs ``numa_node``) and that node's CPUs (``local_cpulist``), within the CPUs this process may use (``allowed``,
    default os.sched_getaffinity). A copy from the far socket of a 2-socket server crosses the socket link (UPI/xGMI)
    and reads about half, so the per-GPU parts run on the GPU's own node's CPUs; pinned host memory is then
    allocated on that node (Linux's default policy places a page on the node of the CPU that first touches it).

    ``{"node": N or None, "cpus": "0-15,32-47" or None, "bound": bool, "why": text}``: ``bound`` when the parts are
    run under that affinity. ``numa_node`` -1 (a single-socket host, or firmware that does not say) is one node:
    nothing to bind, and nothing lost by it."""
    address = pci_address(bus_id)
    if address is None:
        return {"node": None, "cpus": None, "bound": False, "why": "no PCI bus id"}
    folder = os.path.join(SYSFS, "bus", "pci", "devices", address)
    try:
        with open(os.path.join(folder, "numa_node")) as handle:
            node_text = handle.read().strip()
    except (OSError, IOError):
        return {"node": None, "cpus": None, "bound": False, "why": "sysfs has no numa_node for %s" % address}
    try:
        node = int(node_text)
    except ValueError:
        return {"node": None, "cpus": None, "bound": False, "why": "numa_node of %s reads %r" % (address, node_text)}
    if node < 0:
        return {"node": None, "cpus": None, "bound": False,
                "why": "numa_node -1: one NUMA node (or the firmware does not tell), no placement needed"}
    try:
        with open(os.path.join(folder, "local_cpulist")) as handle:
            local = parse_cpulist(handle.read())
    except (OSError, IOError):
        local = None
    if not local:
        return {"node": node, "cpus": None, "bound": False, "why": "no local_cpulist for %s" % address}
    if allowed is None:
        allowed = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else local
    usable = set(local) & set(allowed)
    if not usable:
        return {"node": node, "cpus": cpulist_text(local), "bound": False,
                "why": "none of node %d's CPUs (%s) is allowed to this process (%s)"
                       % (node, cpulist_text(local), cpulist_text(allowed))}
    return {"node": node, "cpus": cpulist_text(usable), "bound": True,
            "why": "measured from NUMA node %d's CPUs %s" % (node, cpulist_text(usable))}


def sysfs_max_link_width(bus_id):
    """The GPU function's own width (its LnkCap: sysfs max_link_width); nvidia-smi's pcie.link.width.max is NVML's
    "maximum possible with this device and system", the lower of GPU and slot. None where sysfs does not tell."""
    address = pci_address(bus_id)
    if address is None:
        return None
    try:
        with open(os.path.join(SYSFS, "bus", "pci", "devices", address, "max_link_width")) as handle:
            text = handle.read().strip()
    except (OSError, IOError):
        return None
    return int(text) if text.isdigit() and int(text) > 0 else None


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


def part_env(gpu=None, environ=None):
    """The environment of a part. CUDA_DEVICE_ORDER=PCI_BUS_ID: CUDA's default order puts the fastest GPU first,
    nvidia-smi's index follows the PCI bus; with it cuda:N is nvidia-smi's GPU N (CUDA C++ Programming Guide, CUDA
    Environment Variables). An inherited CUDA_VISIBLE_DEVICES is dropped: a user's "1,0" or "2" would renumber or
    hide the GPUs the run names. A per-GPU part (``gpu``) sees only its GPU, selected by UUID
    (CUDA_VISIBLE_DEVICES=GPU-<uuid>, as cuda:0); without a UUID (a driver that does not answer), by index."""
    env = dict(os.environ if environ is None else environ, CUDA_DEVICE_ORDER="PCI_BUS_ID")
    env.pop("CUDA_VISIBLE_DEVICES", None)
    if gpu is not None and gpu.get("uuid"):
        env["CUDA_VISIBLE_DEVICES"] = gpu["uuid"]
    return env


def part_argv(python, script, part, gpu, common):
    """The command line of a per-GPU part: nvidia-smi's index (``--gpu``, for nvidia-smi -i and the report), the CUDA
    device it is under part_env (``--cuda-index``: 0 when selected by UUID) and its NUMA node's CPUs (``--cpus``)."""
    argv = [python, script, "--part", part, "--gpu", str(gpu["index"])]
    argv += ["--cuda-index", "0" if gpu.get("uuid") else str(gpu["index"])]
    numa = gpu.get("numa") or {}
    if numa.get("bound") and numa.get("cpus"):
        argv += ["--cpus", numa["cpus"]]
    return argv + common


def run_part(argv, timeout, env=None):
    """Run one part in its own process group (environment ``env``, else part_env()); past ``timeout`` the whole
    group (its DataLoader workers and all-reduce ranks too) is killed. (rc, stdout, stderr, timed_out)."""
    try:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                                start_new_session=True, env=env if env is not None else part_env())
    except OSError as exc:
        return 127, "", str(exc), False
    try:
        out, err = proc.communicate(timeout=timeout)
        return proc.returncode, out, err, False
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        out, err = proc.communicate()
        return proc.returncode, out, err, True


def part_report(part, rc, out, err, timed_out, timeout):
    """The part's JSON line, or its error made from what it left (timeout, signal, traceback)."""
    if timed_out:
        return {"part": part, "error": "timed out after %s s and was killed%s"
                % (timeout, (": " + last_line(err)) if last_line(err) else "")}
    for line in reversed((out or "").splitlines()):
        if line.startswith("{"):
            try:
                report = json.loads(line)
            except ValueError:
                break
            if isinstance(report, dict) and report.get("part") == part:
                return report
            break
    how = "killed by signal %d" % -rc if rc is not None and rc < 0 else "exited %s" % rc
    return {"part": part, "error": "%s without a report: %s" % (how, last_line(err) or last_line(out) or "no output")}


def merge_part(result, report, gpu=None):
    """One part's report into ``result`` (its figures, skipped and errors); ``gpu``: the nvidia-smi index of a per-GPU
    part other than GPU 0, whose error and check are named after it (``matmul_fp16@gpu3``, ``figure_matmul_fp16_gpu3``)."""
    part = report["part"]
    if report.get("torch"):
        result.setdefault("torch", {})["version"] = report["torch"]
    if "error" in report:
        key = part if not gpu else "%s@gpu%d" % (part, gpu)
        result["errors"][key] = report["error"]
        result["skipped"][part] = "failed: %s" % report["error"]
        result.get("checks", {})["figure_" + key.replace("@", "_")] = {
            "status": "fail", "label": "PyTorch figure %s%s" % (part, " of GPU %d" % gpu if gpu else ""),
            "reason": report["error"][:600]}
    elif "skipped" in report:
        result["skipped"][part] = report["skipped"]
    else:
        for key, value in (report.get("figures") or {}).items():
            if key in ("matmul_tflops", "matmul_ms", "matmul_iterations"):
                result["figures"].setdefault(key, {}).update(value)
            elif key == "throttle_under_load":   # the clock event reasons seen while any matmul part ran
                seen = result["figures"].setdefault(key, [])
                seen.extend(name for name in value if name not in seen)
            else:
                result["figures"][key] = value


def per_gpu_entry(gpu):
    """The record of one GPU's own figures: which GPU (index, PCI bus id, UUID, name, device id), its NUMA placement
    (``numa``: node, CPUs, bound) and what it measured; ``ran``: what its parts saw (the CUDA_VISIBLE_DEVICES they
    got, the CPUs they ran on)."""
    entry = {key: gpu[key] for key in ("index", "bus_id", "uuid", "name", "pci_device_id", "numa")
             if gpu.get(key) is not None}
    entry.update(figures={}, skipped={}, errors={})
    return entry


def torch_figures(result, python, gpus, args):
    """Every PyTorch part, one process each, merged into result (figures, skipped, errors, checks): the per-GPU
    parts once for each GPU (``per_gpu``; GPU 0's also in ``figures``), then the host's (DataLoader, all-reduce)."""
    script = args.torch_script or os.path.join(HERE, "dlbox-acceptance-torch.py")
    cpu = args.torch_device == "cpu"
    if cpu:
        parts = CPU_PARTS
    elif gpus:
        parts = GPU_PARTS
    else:
        parts = ("dataloader",)
    if args.parts:
        parts = [p for p in parts if p in args.parts.split(",")]
    for part in GPU_PARTS:
        if part not in parts and not args.parts:
            result["skipped"].setdefault(part, "no GPU")
    common = ["--device", "cpu" if cpu else "auto"]
    for flag, value in (("--matmul-n", args.matmul_n), ("--iterations", args.iterations), ("--copy-mb", args.copy_mb),
                        ("--dataloader-samples", args.dataloader_samples), ("--dataloader-side", args.dataloader_side),
                        ("--workers", args.workers), ("--allreduce-mb", args.allreduce_mb)):
        if value:
            common += [flag, str(value)]
    if args.matmul_min_ms is not None:
        common += ["--min-ms", str(args.matmul_min_ms)]
    started = time.monotonic()
    # each GPU nvidia-smi lists, in its order; on the CPU only with --each-gpu-on-cpu (the tests' way through this path)
    each = [g for g in gpus or [] if isinstance(g.get("index"), int)] if (not cpu or args.each_gpu_on_cpu) else []
    if each:
        result["per_gpu"] = []
        for number, gpu in enumerate(each):
            entry = per_gpu_entry(gpu)
            result["per_gpu"].append(entry)
            for part in [p for p in parts if p in PER_GPU_PARTS]:
                argv = part_argv(python, script, part, gpu, common)
                rc, out, err, timed_out = run_part(argv, args.part_timeout, part_env(gpu))
                report = part_report(part, rc, out, err, timed_out, args.part_timeout)
                if report.get("ran"):
                    entry["ran"] = report["ran"]
                merge_part(entry, report)
                if number == 0:
                    merge_part(result, report)
                elif "error" in report:
                    merge_part(result, report, gpu=gpu["index"])
            entry.pop("torch", None)
        parts = [p for p in parts if p not in PER_GPU_PARTS]
    for part in parts:
        argv = [python, script, "--part", part] + common
        timeout = args.part_timeout
        if part == "allreduce":
            ranks = args.allreduce_ranks or (2 if cpu else len(gpus or []))
            argv += ["--ranks", str(ranks), "--timeout", str(args.allreduce_timeout)]
            timeout = args.allreduce_timeout + 30   # the part's own limit names the late ranks first
        rc, out, err, timed_out = run_part(argv, timeout)
        merge_part(result, part_report(part, rc, out, err, timed_out, timeout))
    result.setdefault("torch", {})["python"] = python
    result["torch"]["seconds"] = round(time.monotonic() - started, 1)


def topology(gpus):
    """nvidia-smi topo -m and lspci -vv of the NVIDIA devices, as printed (the controller parses them)."""
    found = {}
    if gpus and len(gpus) > 1:
        rc, out, err = run(["nvidia-smi", "topo", "-m"], 60)
        found["topology"] = out if rc == 0 else None
        if rc != 0:
            found["topology_error"] = last_line(out + err)
    if gpus and shutil.which("lspci"):
        rc, out, err = run(["lspci", "-vv", "-d", "10de:"], 60)
        found["lspci"] = out if rc == 0 else None
    return found


def torch_python(candidates, explicit):
    for python in ([explicit] if explicit else []) + candidates:
        if python and os.access(python, os.X_OK):
            rc, _out, _err = run([python, "-c", "import torch"], 120)
            if rc == 0:
                return python
    return None


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default=os.uname()[1])
    parser.add_argument("--envs-root", default="/opt/dlbox/envs")
    parser.add_argument("--python", default="", help="a Python with PyTorch (default: the first environment that has it)")
    parser.add_argument("--data-dir", default="/var/tmp")
    parser.add_argument("--fio-size", default="1G")
    parser.add_argument("--docker-image", default="ubuntu:24.04")
    parser.add_argument("--torch-script", default="", help="dlbox-acceptance-torch.py (default: beside this file)")
    parser.add_argument("--torch-device", choices=("auto", "cpu"), default="auto",
                        help="cpu: measure matmul, DataLoader and a gloo all-reduce on the CPU (no GPU needed)")
    parser.add_argument("--parts", default="", help="only these PyTorch parts (comma-separated)")
    parser.add_argument("--each-gpu-on-cpu", action="store_true",
                        help="with --torch-device cpu: run the per-GPU parts once for each GPU nvidia-smi lists, "
                             "measured on the CPU (how the tests run the per-GPU path without a GPU)")
    parser.add_argument("--part-timeout", type=float, default=300, help="seconds each PyTorch part may take")
    parser.add_argument("--matmul-n", type=int, default=0)
    parser.add_argument("--iterations", type=int, default=0)
    parser.add_argument("--matmul-min-ms", type=float, default=None,
                        help="the matmul's shortest measurement window (default: dlbox-acceptance-torch.py's, 2000 ms "
                             "on a GPU)")
    parser.add_argument("--copy-mb", type=float, default=0)
    parser.add_argument("--dataloader-samples", type=int, default=4096)
    parser.add_argument("--dataloader-side", type=int, default=0)
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--allreduce-mb", type=float, default=0)
    parser.add_argument("--allreduce-ranks", type=int, default=0, help="default: one per GPU (2 with --torch-device cpu)")
    parser.add_argument("--allreduce-timeout", type=float, default=180)
    args = parser.parse_args(argv)

    result = {"host": args.host, "checks": {}, "figures": {}, "skipped": {}, "errors": {}, "data_dir": args.data_dir}
    gpus, smi = gpus_from_smi()
    result["gpus"] = gpus or []
    result["checks"]["nvidia_smi"] = smi
    result["checks"]["cuda_program"] = cuda_program(gpus)
    env_checks, pythons = environments(args.envs_root)
    result["checks"].update(env_checks)
    result["checks"]["docker"] = docker_check(gpus, args.docker_image)
    result["checks"]["dcgm"] = dcgm_check(gpus)
    result.update(topology(gpus))

    python = torch_python(pythons, args.python)
    if python is None:
        reason = "no environment with PyTorch under %s (python_env did not run here)" % args.envs_root
        for key in GPU_PARTS:
            result["skipped"][key] = reason if gpus or key == "dataloader" else "no GPU"
    else:
        torch_figures(result, python, gpus, args)

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
