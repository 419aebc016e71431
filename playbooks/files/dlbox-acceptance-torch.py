# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""dlbox-acceptance-torch: one PyTorch figure of dlbox-acceptance, measured in an environment's own Python.

dlbox-acceptance.py runs this script once per part (``--part``), each in its own process with its own timeout, so a
part that raises, crashes the interpreter or hangs loses only its own figure. It prints one JSON line:
``{"part": P, "figures": {...}}``, ``{"part": P, "skipped": "why"}`` or ``{"part": P, "error": "Type: text"}``
(exit 1).

Parts: matmul_bf16, matmul_fp16, matmul_fp32, matmul_tf32 (dense N x N matmul, TFLOPS), h2d, d2h, d2d (copies of
``--copy-mb``, GB/s; a device copy reads and writes every byte), pcie_under_load (nvidia-smi's link of the GPU while
host-to-device copies run), dataloader (samples/s from a synthetic dataset with worker processes) and allreduce
(bus bandwidth through torch.distributed, ``--ranks`` processes: NCCL on GPUs, gloo on the CPU).

The all-reduce starts its ranks as processes of this same file (``--rank``) that meet through a file store in a
fresh folder, each with torch.distributed's timeout (half of ``--timeout``); the part waits for them until
``--timeout``, kills those still running and names them (the ranks stay in the part's process group, which
dlbox-acceptance.py kills whole past the part's own limit). Its bus bandwidth follows nccl-tests
(NVIDIA/nccl-tests, doc/PERFORMANCE.md): algbw = bytes / time, busbw = algbw * 2 * (n - 1) / n, with the time of
the slowest rank.
``--gpu N`` measures nvidia-smi's GPU N for the parts that belong to one GPU (matmul, copies, the link); the report
names it (``"gpu": N``). dlbox-acceptance.py starts such a part with CUDA_VISIBLE_DEVICES=<that GPU's UUID> and
``--cuda-index 0`` (the only GPU it sees), so neither a user's CUDA_VISIBLE_DEVICES nor CUDA's device order can put
another GPU under its name; without ``--cuda-index`` it is cuda:N (under CUDA_DEVICE_ORDER=PCI_BUS_ID, nvidia-smi's
GPU N). nvidia-smi itself ignores CUDA_VISIBLE_DEVICES: its queries use ``-i N``. ``--cpus LIST`` (sysfs cpulist
format: the GPU's NUMA node's CPUs) binds the part to those CPUs (os.sched_setaffinity) before PyTorch is imported,
so its threads and the pinned host buffers of the copies (placed on the node of the CPU that first touches them)
are on the GPU's own node; the report says where it ran (``"ran"``: CUDA_VISIBLE_DEVICES, the CUDA device, the CPUs).
``--device cpu`` measures on the CPU (matmul, dataloader, allreduce with gloo): how the tests run it without a GPU.

The matmul's measurement window has a floor, ``--min-ms`` (2000 ms of GPU time by default, 50 ms on the CPU): after
the warm-up call, a batch of ``--iterations`` calls is timed, and while a batch takes less than the floor, the next
batch is grown to fill it; only the last batch counts. A power-capped or hot card (an L4 at 72 W) boosts for the first
tens of milliseconds and then settles at its sustained clock, which is what training gets; a 20-call batch of an
8192 x 8192 bf16 matmul lasts about 30 ms on an H100, too short to see that. The figure reports its window
(``matmul_ms``, ``matmul_iterations``). On a GPU, the matmul part also samples nvidia-smi's clock event reasons of its
GPU while the timed batches run and once after them (``throttle_under_load``: the reasons dlbox-acceptance.py reads
at idle, seen under load), since a card that throttles only when busy shows nothing at idle.
"""

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

MATMUL = {"matmul_bf16": "bfloat16", "matmul_fp16": "float16", "matmul_fp32": "float32", "matmul_tf32": "float32"}
PARTS = tuple(MATMUL) + ("h2d", "d2h", "d2d", "pcie_under_load", "dataloader", "allreduce")
GPU_ONLY = ("h2d", "d2h", "d2d", "pcie_under_load", "matmul_tf32")
PER_GPU = tuple(MATMUL) + ("h2d", "d2h", "d2d", "pcie_under_load")   # the parts that measure one GPU (--gpu)


class Skip(Exception):
    """The part cannot run here (no GPU, no bf16 on this GPU): a reason, not a failure."""


def _figure(value):
    """Four significant digits: 789.1 TFLOPS on a GPU, 0.002345 on the CPU's tiny test sizes."""
    return float("%.4g" % value)


def _device(torch, wanted, index=0):
    """The device of a part: the CPU, or cuda:``index`` (the caller passes args.cuda_index, see ``cuda_index``)."""
    if wanted == "cpu":
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise Skip("no GPU visible to PyTorch")
    if index >= torch.cuda.device_count():
        raise RuntimeError("GPU %d is not visible to PyTorch (it sees %d)" % (index, torch.cuda.device_count()))
    return torch.device("cuda", index)


def cuda_index(args):
    """The CUDA device of a per-GPU part: --cuda-index where given (0 when dlbox-acceptance.py selected the GPU by
    UUID), else nvidia-smi's index --gpu."""
    return args.cuda_index if args.cuda_index is not None else args.gpu


def bind_cpus(text, setaffinity=None):
    """Bind this process to the CPUs of ``text`` (sysfs cpulist: ``0-15,32-47``); returns the set bound."""
    cpus = set()
    for item in text.split(","):
        first, _dash, last = item.strip().partition("-")
        cpus.update(range(int(first), int(last or first) + 1))
    (setaffinity or os.sched_setaffinity)(0, cpus)
    return cpus


def where_it_ran(args):
    """What a per-GPU part saw: CUDA_VISIBLE_DEVICES, the CUDA device index, the CPUs it may run on."""
    ran = {"cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"), "cuda_index": cuda_index(args)}
    if hasattr(os, "sched_getaffinity"):
        cpus = sorted(os.sched_getaffinity(0))
        ran["cpus"] = ",".join(str(c) for c in cpus)
    return ran


def _timed(torch, device, func, iterations, warm_up=True):
    """Seconds for ``iterations`` calls of func after one warm-up call (CUDA events on a GPU)."""
    if warm_up:
        func()
    if device.type != "cuda":
        begin = time.perf_counter()
        for _iteration in range(iterations):
            func()
        return time.perf_counter() - begin
    torch.cuda.synchronize()
    begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    begin.record()
    for _iteration in range(iterations):
        func()
    end.record()
    torch.cuda.synchronize()
    return begin.elapsed_time(end) / 1000.0


def timed_window(torch, device, func, iterations, min_seconds, timer=None):
    """``(seconds, iterations)`` of the last timed batch of ``func``, grown until one batch lasts ``min_seconds``:
    one warm-up call, then ``iterations`` calls; while a batch is shorter than the floor, the next one has
    ``iterations * min_seconds / seconds * 1.2`` calls (at least twice as many). ``timer``: _timed's signature."""
    timer = timer or _timed
    seconds = timer(torch, device, func, iterations)
    while seconds < min_seconds:
        iterations = max(2 * iterations, int(iterations * min_seconds / max(seconds, 1e-9) * 1.2) + 1)
        seconds = timer(torch, device, func, iterations, warm_up=False)
    return seconds, iterations


# NVML's clock event (throttle) reasons that say the hardware holds the clocks down (nvml.h nvmlClocksEventReason*:
# HwSlowdown 0x8, SwThermalSlowdown 0x20, HwThermalSlowdown 0x40, HwPowerBrakeSlowdown 0x80), as dlbox-acceptance.py
# reads them at idle. The software power cap (0x4) is left out: a card at full load sits at its power limit by design.
THROTTLE_BITS = ((0x8, "hardware slowdown"), (0x20, "software thermal slowdown"), (0x40, "hardware thermal slowdown"),
                 (0x80, "power brake"))


class ClockWatch:
    """Samples GPU ``index``'s clock event reasons (nvidia-smi) every ``every`` seconds from a thread while the block
    runs, and once after it; ``names()``: the reasons of THROTTLE_BITS seen in any sample. Without nvidia-smi, or
    when it answers neither field name, nothing is seen (``answered`` stays False)."""

    FIELDS = ("clocks_event_reasons.active", "clocks_throttle_reasons.active")

    def __init__(self, index, run=subprocess.run, every=0.5):
        self.index, self.run, self.every = index, run, every
        self.bits, self.answered = 0, False
        self._stop = threading.Event()
        self._thread = None

    def sample(self):
        for field in self.FIELDS:
            try:
                done = self.run(["nvidia-smi", "-i", str(self.index), "--query-gpu=" + field, "--format=csv,noheader"],
                                capture_output=True, text=True, timeout=30, check=False)
            except (OSError, subprocess.SubprocessError):
                return
            if done.returncode == 0:
                try:
                    self.bits |= int((done.stdout or "").strip().splitlines()[0], 16)
                    self.answered = True
                except (ValueError, IndexError):
                    pass
                return

    def _loop(self):
        while not self._stop.wait(self.every):
            self.sample()

    def __enter__(self):
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.sample()
        return False

    def names(self):
        return [name for bit, name in THROTTLE_BITS if self.bits & bit]


def part_matmul(torch, args, name):
    device = _device(torch, args.device, cuda_index(args))
    if device.type == "cuda":
        major, minor = torch.cuda.get_device_capability(device)
        if name in ("matmul_bf16", "matmul_tf32") and major < 8:
            raise Skip("compute capability %d.%d has no %s tensor cores" % (major, minor, name[7:]))
    elif name == "matmul_tf32":
        raise Skip("TF32 is a GPU tensor-core mode")
    dtype = getattr(torch, MATMUL[name])
    if device.type == "cuda":
        # fp32 is the CUDA-core rate, tf32 the tensor-core rate of the same fp32 tensors
        torch.backends.cuda.matmul.allow_tf32 = name == "matmul_tf32"
    n = args.matmul_n or (8192 if device.type == "cuda" else 512)
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    iterations = args.iterations or (20 if device.type == "cuda" else 3)
    min_ms = args.min_ms if args.min_ms is not None else (2000 if device.type == "cuda" else 50)
    if device.type == "cuda" and shutil.which("nvidia-smi"):
        with ClockWatch(args.gpu) as watch:
            seconds, iterations = timed_window(torch, device, lambda: torch.matmul(a, b), iterations, min_ms / 1000.0)
        seen = {"throttle_under_load": watch.names()} if watch.answered else {}
    else:
        seconds, iterations = timed_window(torch, device, lambda: torch.matmul(a, b), iterations, min_ms / 1000.0)
        seen = {}
    return dict({"matmul_tflops": {name[7:]: _figure(2.0 * n ** 3 * iterations / seconds / 1e12)}, "matmul_n": n,
                 "matmul_ms": {name[7:]: round(seconds * 1000.0, 1)},
                 "matmul_iterations": {name[7:]: iterations}}, **seen)


def part_copy(torch, args, name):
    device = _device(torch, args.device, cuda_index(args))
    if device.type != "cuda":
        raise Skip("no GPU: a copy between host and device needs one")
    size = int(args.copy_mb * (1 << 20))
    iterations = args.iterations or 10
    if name == "d2d":
        source = torch.empty(size, dtype=torch.uint8, device=device)
        target = torch.empty_like(source)
        seconds = _timed(torch, device, lambda: target.copy_(source), iterations)
        return {"d2d_gb_s": round(2 * size * iterations / seconds / 1e9, 1)}   # read and write every byte
    host = torch.empty(size, dtype=torch.uint8).pin_memory()
    gpu = torch.empty(size, dtype=torch.uint8, device=device)
    if name == "h2d":
        seconds = _timed(torch, device, lambda: gpu.copy_(host, non_blocking=True), iterations)
    else:
        seconds = _timed(torch, device, lambda: host.copy_(gpu, non_blocking=True), iterations)
    return {"%s_gb_s" % name: round(size * iterations / seconds / 1e9, 1)}


# nvidia-smi's link fields (nvidia-smi --help-query-gpu): .max is the lower of the GPU's and the slot's maximum
# generation; .gpumax and .hostmax (drivers since about R510) each side's own. Width has current and max only; the
# GPU's own width is its LnkCap (lspci -vv), which dlbox-acceptance.py reads.
LINK_FIELDS = ("pcie.link.gen.current", "pcie.link.gen.max", "pcie.link.width.current", "pcie.link.width.max",
               "pcie.link.gen.gpumax", "pcie.link.gen.hostmax")
LINK_KEYS = ("gen_current", "gen_max", "width_current", "width_max", "gen_gpumax", "gen_hostmax")


def link_query(run=subprocess.run, index=0):
    """GPU ``index``'s PCIe link from nvidia-smi; an older driver without gpumax/hostmax answers the first four."""
    last = ""
    for count in (6, 4):
        proc = run(["nvidia-smi", "-i", str(index), "--query-gpu=" + ",".join(LINK_FIELDS[:count]),
                    "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=30, check=False)
        line = proc.stdout.strip()
        if proc.returncode == 0 and line:
            values = [v.strip() for v in line.split(",")]
            return {key: int(v) if v.isdigit() else None for key, v in zip(LINK_KEYS, values)}
        last = (proc.stdout + proc.stderr).strip()
    raise RuntimeError("nvidia-smi's link query failed: %s" % last[-300:])


def part_pcie(torch, args, _name):
    device = _device(torch, args.device, cuda_index(args))
    if device.type != "cuda":
        raise Skip("no GPU")
    if not shutil.which("nvidia-smi"):
        raise Skip("no nvidia-smi")
    size = int(args.copy_mb * (1 << 20))
    host = torch.empty(size, dtype=torch.uint8).pin_memory()
    gpu = torch.empty(size, dtype=torch.uint8, device=device)
    stop, failure = threading.Event(), []

    def load():
        try:
            while not stop.is_set():
                gpu.copy_(host, non_blocking=True)
                torch.cuda.synchronize()
        except Exception as exc:  # pylint: disable=broad-except  # reported as the part's error below
            failure.append(exc)

    worker = threading.Thread(target=load, daemon=True)
    worker.start()
    time.sleep(1.0)
    try:
        link = link_query(index=args.gpu)
    finally:
        stop.set()
        worker.join(60)
    if failure:
        raise failure[0]
    return {"pcie_under_load": link}


class _Synthetic(object):  # a map-style dataset (torch.utils.data.Dataset's protocol), picklable for workers
    def __init__(self, length, side):
        self.length, self.side = length, side

    def __len__(self):
        return self.length

    def __getitem__(self, index):
        import torch  # pylint: disable=import-error,import-outside-toplevel

        return torch.randn(3, self.side, self.side), index % 10


def part_dataloader(torch, args, _name):
    cuda = args.device != "cpu" and torch.cuda.is_available()
    workers = args.workers or max(1, min(4, (os.cpu_count() or 2) - 1))
    loader = torch.utils.data.DataLoader(_Synthetic(args.dataloader_samples, args.dataloader_side),
                                         batch_size=args.dataloader_batch, num_workers=workers, pin_memory=cuda)
    start, seen = None, 0
    for index, (batch, _labels) in enumerate(loader):
        if index == 1:            # the first batch waits for the workers to start
            start, seen = time.perf_counter(), 0
        seen += batch.shape[0]
    if start is None or seen == 0:
        raise RuntimeError("the DataLoader gave fewer than two batches (--dataloader-samples %d, batch %d)"
                           % (args.dataloader_samples, args.dataloader_batch))
    return {"dataloader_samples_s": round(seen / (time.perf_counter() - start), 1), "dataloader_workers": workers}


def bus_bandwidth(size_bytes, seconds, ranks):
    """(algbw, busbw) in GB/s of one all-reduce of size_bytes that took seconds on ranks (nccl-tests' formula)."""
    algbw = size_bytes / seconds / 1e9
    return algbw, algbw * 2 * (ranks - 1) / ranks


def allreduce_rank(args):
    """One rank: meet the others, all-reduce --allreduce-mb of fp32 --iterations times, print its mean seconds."""
    import torch  # pylint: disable=import-error,import-outside-toplevel
    import torch.distributed as dist  # pylint: disable=import-error,import-outside-toplevel

    backend = args.backend
    # a rank gives up at half the part's limit (its start and PyTorch's import come first), so that its own error
    # (a rank that did not join, a collective that did not finish) is reported before the part kills it
    timeout = datetime.timedelta(seconds=max(1.0, args.timeout / 2))
    dist.init_process_group(backend, init_method="file://" + args.store, rank=args.rank, world_size=args.ranks,
                            timeout=timeout)
    try:
        if backend == "nccl":
            torch.cuda.set_device(args.rank)
            device = torch.device("cuda", args.rank)
        else:
            device = torch.device("cpu")
        tensor = torch.ones(max(1, int(args.allreduce_mb * (1 << 20)) // 4), dtype=torch.float32, device=device)
        for _warmup in range(2):
            dist.all_reduce(tensor)
        if tensor[0].item() != float(args.ranks ** 2):   # ones summed twice over the ranks
            raise RuntimeError("all-reduce gave %s, expected %s" % (tensor[0].item(), float(args.ranks ** 2)))
        tensor.zero_()                                       # sums of zeros: no overflow however many runs
        dist.barrier()
        iterations = args.iterations or (20 if device.type == "cuda" else 5)
        begin = time.perf_counter()
        for _iteration in range(iterations):
            dist.all_reduce(tensor)
        if device.type == "cuda":
            torch.cuda.synchronize()
        seconds = (time.perf_counter() - begin) / iterations
        print(json.dumps({"rank": args.rank, "seconds": seconds, "bytes": tensor.numel() * 4}))
    finally:
        dist.destroy_process_group()


def part_allreduce(_torch, args, _name, python=None):
    """Start --ranks processes of this file, wait up to --timeout, judge nothing: the figure and who was slow."""
    if args.ranks < 2:
        raise Skip("one GPU: nothing to all-reduce across" if args.device != "cpu" else "--ranks is below 2")
    backend = args.backend or ("gloo" if args.device == "cpu" else "nccl")
    folder = tempfile.mkdtemp(prefix="dlbox-allreduce-")
    procs = []
    try:
        for rank in range(args.ranks):
            argv = [python or sys.executable, os.path.abspath(__file__), "--rank", str(rank), "--ranks",
                    str(args.ranks), "--store", os.path.join(folder, "store"), "--backend", backend,
                    "--allreduce-mb", str(args.allreduce_mb), "--timeout", str(args.timeout),
                    "--iterations", str(args.iterations)]
            out = open(os.path.join(folder, "rank%d.out" % rank), "w+")
            err = open(os.path.join(folder, "rank%d.err" % rank), "w+")
            procs.append((subprocess.Popen(argv, stdout=out, stderr=err), out, err))
        deadline = time.monotonic() + args.timeout
        for proc, _out, _err in procs:
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                break
        late = [rank for rank, (proc, _out, _err) in enumerate(procs) if proc.poll() is None]
        for proc, _out, _err in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        results, errors = [], []
        for rank, (proc, out, err) in enumerate(procs):
            out.seek(0)
            err.seek(0)
            lines = [line for line in out.read().splitlines() if line.startswith("{")]
            if proc.returncode == 0 and lines:
                results.append(json.loads(lines[-1]))
            elif rank not in late:
                text = [line for line in err.read().splitlines() if line.strip()]
                errors.append("rank %d exited %s: %s" % (rank, proc.returncode, text[-1][:300] if text else "no output"))
        if late:
            raise RuntimeError("all-reduce timed out after %s s (%s backend, %d ranks): rank%s %s had not finished%s"
                               % (args.timeout, backend, args.ranks, "s" if len(late) > 1 else "",
                                  ", ".join(str(r) for r in late), "; " + "; ".join(errors) if errors else ""))
        if errors or len(results) != args.ranks:
            raise RuntimeError("; ".join(errors) or "the ranks printed no result")
        seconds = max(r["seconds"] for r in results)
        algbw, busbw = bus_bandwidth(results[0]["bytes"], seconds, args.ranks)
        return {"allreduce_busbw_gb_s": _figure(busbw), "allreduce_algbw_gb_s": _figure(algbw),
                "allreduce_ranks": args.ranks, "allreduce_backend": backend, "allreduce_bytes": results[0]["bytes"]}
    finally:
        for proc, out, err in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            out.close()
            err.close()
        shutil.rmtree(folder, ignore_errors=True)


RUNNERS = dict([(name, part_matmul) for name in MATMUL] + [(name, part_copy) for name in ("h2d", "d2h", "d2d")]
               + [("pcie_under_load", part_pcie), ("dataloader", part_dataloader), ("allreduce", part_allreduce)])


def parser():
    cli = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    cli.add_argument("--part", choices=PARTS)
    cli.add_argument("--device", choices=("auto", "cpu"), default="auto")
    cli.add_argument("--gpu", type=int, default=0, help="the GPU (nvidia-smi's index) of a per-GPU part")
    cli.add_argument("--cuda-index", type=int, default=None,
                     help="its CUDA device (default: --gpu; 0 when CUDA_VISIBLE_DEVICES holds its UUID alone)")
    cli.add_argument("--cpus", default="", help="bind the part to these CPUs (sysfs cpulist: the GPU's NUMA node's)")
    cli.add_argument("--matmul-n", type=int, default=0, help="matmul size N (default 8192 on a GPU, 512 on the CPU)")
    cli.add_argument("--iterations", type=int, default=0, help="timed iterations (default: per part)")
    cli.add_argument("--min-ms", type=float, default=None,
                     help="the matmul's shortest measurement window in ms (default 2000 on a GPU, 50 on the CPU)")
    cli.add_argument("--copy-mb", type=float, default=1024)
    cli.add_argument("--dataloader-samples", type=int, default=4096)
    cli.add_argument("--dataloader-batch", type=int, default=64)
    cli.add_argument("--dataloader-side", type=int, default=64, help="each sample is 3 x side x side fp32")
    cli.add_argument("--workers", type=int, default=0, help="DataLoader workers (default: CPUs - 1, at most 4)")
    cli.add_argument("--ranks", type=int, default=2, help="all-reduce processes (one per GPU on a GPU host)")
    cli.add_argument("--backend", choices=("nccl", "gloo"), default=None)
    cli.add_argument("--allreduce-mb", type=float, default=256)
    cli.add_argument("--timeout", type=float, default=120, help="seconds the all-reduce may take, ranks' start included")
    cli.add_argument("--rank", type=int, default=None, help=argparse.SUPPRESS)
    cli.add_argument("--store", default=None, help=argparse.SUPPRESS)
    return cli


def main(argv=None):
    args = parser().parse_args(argv)
    if args.rank is not None:
        allreduce_rank(args)
        return 0
    if not args.part:
        parser().error("--part is required")
    result = {"part": args.part}
    try:
        if args.cpus:
            bind_cpus(args.cpus)           # before PyTorch starts its threads and allocates pinned memory
    except (ValueError, OSError) as exc:
        result["error"] = "--cpus %s: %s: %s" % (args.cpus, type(exc).__name__, exc)
        print(json.dumps(result))
        return 1
    if args.part in PER_GPU:
        result["gpu"] = args.gpu
        result["ran"] = where_it_ran(args)
    try:
        torch = None
        if args.part != "allreduce":  # the all-reduce's own process only starts and waits for its ranks
            import torch  # pylint: disable=import-error,import-outside-toplevel,redefined-outer-name

            result["torch"] = torch.__version__
        result["figures"] = RUNNERS[args.part](torch, args, args.part)
    except Skip as exc:
        result["skipped"] = str(exc)
    except Exception as exc:  # pylint: disable=broad-except  # the part's error is its report
        result["error"] = ("%s: %s" % (type(exc).__name__, exc))[:2000]
    print(json.dumps(result))
    return 1 if "error" in result else 0


if __name__ == "__main__":
    sys.exit(main())
