"""playbooks/files/dlbox-acceptance.py on this machine without a GPU, and its reading of fio's JSON.

The `fio` here is a FAKE on PATH (a shell script printing fio's --output-format=json shape: jobs[0].read.bw_bytes,
as fio 3.x documents it); the real fio runs in the Molecule scenario `fitness`.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "playbooks" / "files" / "dlbox-acceptance.py"


def run(tmp_path, path):
    env = dict(os.environ, PATH=path)
    out = subprocess.run([sys.executable, str(SCRIPT), "--host", "t1", "--envs-root", str(tmp_path / "envs"),
                          "--data-dir", str(tmp_path), "--fio-size", "1M"],
                         capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout)


def test_no_gpu_is_a_finding_and_every_skip_has_a_reason(tmp_path):
    result = run(tmp_path, "/nonexistent")
    assert result["checks"]["nvidia_smi"]["status"] == "finding"
    assert result["checks"]["docker"] == {"status": "skipped", "label": "docker run --gpus all", "reason": "no Docker"}
    assert result["checks"]["environments"]["status"] == "skipped"
    assert result["skipped"]["matmul_bf16"] == "no GPU"
    assert result["skipped"]["dataloader"].startswith("no environment with PyTorch")
    assert result["skipped"]["fio"] == "fio is not installed (apt-get install fio)"


def test_fio_json_is_read_and_its_file_removed(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "fio"
    fake.write_text('#!/bin/sh\nfor a in "$@"; do case "$a" in --filename=*) : > "${a#--filename=}";; esac; done\n'
                    'echo "note: a line before the JSON"\necho \'{"jobs": [{"read": {"bw_bytes": 1500000000}}]}\'\n')
    fake.chmod(0o755)
    result = run(tmp_path, "%s:/usr/bin:/bin" % bin_dir)
    assert result["figures"]["fio_seq_read_mb_s"] == 1500.0
    assert "fio_note" not in result                                   # O_DIRECT accepted (the first try)
    assert not (tmp_path / "dlbox-acceptance.fio").exists()


# --- the PyTorch figures, end to end with the real CPU build of PyTorch 2.13.0 (tests/unit/torch_cpu.py) ---------
# Each part runs in its own process (dlbox-acceptance-torch.py); the all-reduce starts its ranks as processes that
# meet through torch.distributed (gloo here, NCCL on GPUs). Failures are injected from OUTSIDE the code under test: a
# sitecustomize.py on PYTHONPATH, loaded by every Python the run starts, that acts only in the process named by its
# command line (a part, or one all-reduce rank). The code under test has no test hooks.

import textwrap  # noqa: E402  pylint: disable=wrong-import-position
import time  # noqa: E402  pylint: disable=wrong-import-position

import pytest  # noqa: E402  pylint: disable=wrong-import-position

from torch_cpu import torch_python  # noqa: E402  pylint: disable=wrong-import-position,import-error

TORCH_SCRIPT = ROOT / "playbooks" / "files" / "dlbox-acceptance-torch.py"
TINY = ["--torch-device", "cpu", "--matmul-n", "64", "--iterations", "2", "--dataloader-samples", "128",
        "--dataloader-side", "4", "--workers", "1", "--allreduce-mb", "0.25"]


@pytest.fixture(scope="module")
def python():
    return torch_python()


def accept(tmp_path, python, *extra, inject=None):
    """dlbox-acceptance.py on the CPU with PyTorch; ``inject``: the body of a sitecustomize.py (argv in ``argv``)."""
    env = dict(os.environ, PATH="/usr/bin:/bin")
    if inject:
        site = tmp_path / "site"
        site.mkdir()
        (site / "sitecustomize.py").write_text("import os, sys, time\nargv = sys.argv\n" + textwrap.dedent(inject))
        env["PYTHONPATH"] = str(site)
    start = time.monotonic()
    out = subprocess.run([sys.executable, str(SCRIPT), "--host", "t1", "--envs-root", str(tmp_path / "envs"),
                          "--data-dir", str(tmp_path), "--python", python] + TINY + list(extra),
                         capture_output=True, text=True, env=env, check=True, timeout=300)
    result = json.loads(out.stdout)
    result["wall_s"] = time.monotonic() - start
    return result


def test_two_gloo_processes_give_an_allreduce_figure_beside_the_other_figures(tmp_path, python):
    result = accept(tmp_path, python, "--allreduce-ranks", "3")
    figures = result["figures"]
    assert result["errors"] == {}
    assert figures["allreduce_backend"] == "gloo" and figures["allreduce_ranks"] == 3
    assert figures["allreduce_bytes"] == 256 * 1024
    # nccl-tests' bus bandwidth: algbw * 2 (n - 1) / n
    assert figures["allreduce_busbw_gb_s"] == pytest.approx(figures["allreduce_algbw_gb_s"] * 4 / 3, rel=0.01)
    assert figures["allreduce_busbw_gb_s"] > 0
    assert set(figures["matmul_tflops"]) == {"bf16", "fp16", "fp32"}
    assert figures["dataloader_samples_s"] > 0 and figures["dataloader_workers"] == 1
    assert result["torch"]["version"] == "2.13.0+cpu"
    for part in ("h2d", "d2h", "d2d", "pcie_under_load", "matmul_tf32"):
        assert result["skipped"][part] == "no GPU"


def test_bus_bandwidth_is_nccl_tests_formula():
    spec = importlib.util.spec_from_file_location("dlbox_acceptance_torch", TORCH_SCRIPT)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    # 1 GB in 0.1 s on 8 ranks: algbw 10 GB/s, busbw 10 * 2 * 7 / 8 = 17.5 (NVIDIA/nccl-tests doc/PERFORMANCE.md)
    assert bench.bus_bandwidth(1e9, 0.1, 8) == pytest.approx((10.0, 17.5))
    assert bench.bus_bandwidth(1e9, 0.1, 2) == pytest.approx((10.0, 10.0))


def test_a_failing_part_leaves_the_other_figures_with_its_own_error(tmp_path, python):
    # matmul_fp32: torch.matmul raises what PyTorch raises after an illegal access; dataloader: the part's process
    # dies of SIGSEGV (a crash that prints no JSON at all)
    result = accept(tmp_path, python, inject="""
        if "matmul_fp32" in argv:
            import torch
            def broken(*args, **kwargs):
                raise RuntimeError("CUDA error: an illegal memory access was encountered")
            torch.matmul = broken
        if "--part" in argv and argv[argv.index("--part") + 1] == "dataloader":
            os.kill(os.getpid(), 11)
    """)
    errors = result["errors"]
    assert errors["matmul_fp32"] == "RuntimeError: CUDA error: an illegal memory access was encountered"
    assert errors["dataloader"].startswith("killed by signal 11 without a report")
    assert set(errors) == {"matmul_fp32", "dataloader"}
    assert set(result["figures"]["matmul_tflops"]) == {"bf16", "fp16"}
    assert result["figures"]["allreduce_busbw_gb_s"] > 0
    assert result["checks"]["figure_matmul_fp32"]["status"] == "fail"
    assert result["checks"]["figure_dataloader"]["status"] == "fail"
    assert result["skipped"]["matmul_fp32"].startswith("failed: RuntimeError")


def test_a_hang_is_cut_by_the_timeout_and_leaves_nothing_running(tmp_path, python):
    # all-reduce rank 1 never arrives (stuck before init_process_group); the dataloader part hangs outright. Each
    # writes its pid so the test can see it was killed. The limits leave room for PyTorch's import on a loaded 2-core
    # machine (rank 0 gives up at half the all-reduce limit, counted from its start: with 8 s it had not yet given up
    # in a clean-clone make test, 2026-12-06, and a 3 s part limit cut matmul_bf16 during its import).
    result = accept(tmp_path, python, "--allreduce-timeout", "30", "--part-timeout", "15", "--parts",
                    "matmul_bf16,dataloader,allreduce", inject="""
        def hang(name):
            open(os.path.join(%r, name + ".pid"), "w").write(str(os.getpid()))
            time.sleep(600)
        if "--rank" in argv and argv[argv.index("--rank") + 1] == "1":
            hang("rank1")
        if "--part" in argv and argv[argv.index("--part") + 1] == "dataloader":
            hang("dataloader")
    """ % str(tmp_path))
    errors = result["errors"]
    assert errors["allreduce"].startswith("RuntimeError: all-reduce timed out after 30.0 s (gloo backend, 2 ranks): "
                                          "rank 1 had not finished; rank 0 exited 1: "), errors
    assert errors["allreduce"].endswith("RuntimeError: Wait timeout"), errors   # gloo's own words, from rank 0
    assert errors["dataloader"].startswith("timed out after 15.0 s and was killed"), errors
    assert result["figures"]["matmul_tflops"]["bf16"] > 0
    assert result["wall_s"] < 120
    for name in ("rank1", "dataloader"):
        pid = int((tmp_path / (name + ".pid")).read_text())
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


# --- what the controller judges the topology and the PCIe links from ----------------------------------------------
# A FAKE nvidia-smi on PATH: it answers --query-gpu=index,pci.device_id,pci.bus_id,name (pci.device_id in nvidia-smi's
# 0xDDDD10DE form, as the GPU catalog's SOURCES show it) or index,name, and the link fields of two GPUs (values
# written for this test), refuses the newer fields as a driver without them does ('Field "..." is not a valid field
# to query.' and exit 2, as quoted in https://github.com/CoHDI/composable-resource-operator/issues/37), and prints the
# real `nvidia-smi topo -m` capture tests/fixtures/nvidia-smi/topo-2x-rtx3090-pcie.txt (noonghunna/club-3090#922).

FAKE_SMI = r'''#!/bin/sh
case "$*" in
  "topo -m") cat "%(topo)s" ;;
  *gpumax*) printf 'Field "pcie.link.gen.gpumax" is not a valid field to query.\n\n'; exit 2 ;;
  *--query-gpu=index,pci.device_id,pci.bus_id,name\ *)
    [ -n "%(old)s" ] && { printf 'Field "pci.device_id" is not a valid field to query.\n\n'; exit 2; }
    printf '0, 0x220410DE, 00000000:01:00.0, NVIDIA GeForce RTX 3090\n1, 0x220410DE, 00000000:21:00.0, NVIDIA GeForce RTX 3090\n' ;;
  *--query-gpu=index,name\ *|*--query-gpu=index,name) printf '0, NVIDIA GeForce RTX 3090\n1, NVIDIA GeForce RTX 3090\n' ;;
  *clocks_event_reasons*) printf 'Field "clocks_event_reasons.active" is not a valid field to query.\n\n'; exit 2 ;;
  *mig.mode.current,clocks_throttle_reasons.active*)
    [ -n "%(clean)s" ] && { printf '0, Disabled, 0x0000000000000001\n1, Disabled, 0x0000000000000001\n'; exit 0; }
    printf '0, [N/A], 0x0000000000000001\n1, Disabled, 0x0000000000000060\n' ;;
  *--query-compute-apps=*) [ -n "%(clean)s" ] || printf '00000000:21:00.0, 4242, /usr/bin/python3\n' ;;
  *--query-gpu=index,uuid\ *) printf '0, %(uuid0)s\n1, %(uuid1)s\n' ;;
  *--query-gpu=index,pci.bus_id,pcie.link.gen.max,pcie.link.width.max*)
    printf '0, 00000000:01:00.0, 4, 16\n1, 00000000:21:00.0, 3, 8\n' ;;
  *) echo "fake nvidia-smi: unexpected $*" >&2; exit 9 ;;
esac
'''


UUIDS = ("GPU-5b1a3c8e-2f4d-4e6a-9b7c-0d1e2f3a4b5c", "GPU-a0b1c2d3-e4f5-4a6b-8c7d-9e0f1a2b3c4d")   # written for the test


def fake_smi(tmp_path, old=False, clean=False):
    """``clean``: GPU 1 holds no other process and no clock slowdown, so its figures are judged, not excused."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    topo = ROOT / "tests" / "fixtures" / "nvidia-smi" / "topo-2x-rtx3090-pcie.txt"
    fake = bin_dir / "nvidia-smi"
    fake.write_text(FAKE_SMI % {"topo": topo, "old": "old" if old else "", "clean": "clean" if clean else "",
                                "uuid0": UUIDS[0], "uuid1": UUIDS[1]})
    fake.chmod(0o755)
    for tool in ("df", "cat"):                          # nothing else of this machine: no docker run, no lspci
        (bin_dir / tool).symlink_to(shutil.which(tool))
    return bin_dir, topo


def test_the_gpus_links_and_topology_travel_to_the_controller(tmp_path):
    bin_dir, topo = fake_smi(tmp_path)
    result = run(tmp_path, str(bin_dir))
    assert result["checks"]["docker"]["reason"] == "no Docker" and "lspci" not in result
    assert [g["name"] for g in result["gpus"]] == ["NVIDIA GeForce RTX 3090"] * 2
    assert [g["pci_device_id"] for g in result["gpus"]] == ["0x220410DE"] * 2   # the reference is found by device id
    assert result["gpus"][1]["bus_id"] == "00000000:21:00.0"
    assert result["gpus"][0]["pcie"] == {"gen_max": 4, "width_max": 16}     # the older query, without gpumax
    assert result["gpus"][1]["pcie"] == {"gen_max": 3, "width_max": 8}
    assert result["topology"] == topo.read_text()


def test_mig_busy_and_throttled_gpus_are_told_before_the_figures(tmp_path):
    # the FAKE answers the older clocks_throttle_reasons name only (drivers before clocks_event_reasons), GPU 1 holds
    # another user's process and thermal slowdowns (0x20 | 0x40, NVML nvmlClocksEventReason*), GPU 0 is only idle
    bin_dir, _topo = fake_smi(tmp_path)
    gpus = run(tmp_path, str(bin_dir))["gpus"]
    assert gpus[0]["state"] == {"mig": False, "throttle": []}
    assert gpus[1]["state"] == {"mig": False, "throttle": ["software thermal slowdown", "hardware thermal slowdown"],
                                "processes": ["/usr/bin/python3 (pid 4242)"]}


def test_a_driver_without_pci_device_id_still_lists_its_gpus(tmp_path):
    bin_dir, _topo = fake_smi(tmp_path, old=True)
    result = run(tmp_path, str(bin_dir))
    assert [(g["index"], g["name"], "pci_device_id" in g) for g in result["gpus"]] == [
        (0, "NVIDIA GeForce RTX 3090", False), (1, "NVIDIA GeForce RTX 3090", False)]


def test_the_cards_own_width_comes_from_sysfs_not_nvmls_maximum(tmp_path):
    # NVML's width.max is the lower of GPU and slot (x8 for GPU 1 here); the function's max_link_width is its LnkCap
    bin_dir, _topo = fake_smi(tmp_path)
    sysfs = tmp_path / "sys"
    for address, width in (("0000:01:00.0", "16"), ("0000:21:00.0", "16")):
        (sysfs / "bus/pci/devices" / address).mkdir(parents=True)
        (sysfs / "bus/pci/devices" / address / "max_link_width").write_text(width + "\n")
    env = dict(os.environ, PATH=str(bin_dir), DLBOX_ACCEPTANCE_SYSFS=str(sysfs))
    out = subprocess.run([sys.executable, str(SCRIPT), "--host", "t1", "--envs-root", str(tmp_path / "envs"),
                          "--data-dir", str(tmp_path), "--fio-size", "1M"], capture_output=True, text=True, env=env,
                         check=True)
    gpus = json.loads(out.stdout)["gpus"]
    assert gpus[1]["pcie"] == {"gen_max": 3, "width_max": 8, "width_gpumax": 16}


def test_each_part_runs_with_cuda_in_nvidia_smis_order(tmp_path):
    # a stand-in Python (a shell script): "import torch" succeeds, each part reports the CUDA_DEVICE_ORDER it got
    fake = tmp_path / "python"
    fake.write_text('#!/bin/sh\n[ "$1" = -c ] && exit 0\n'
                    'echo "{\\"part\\": \\"$3\\", \\"skipped\\": \\"order=$CUDA_DEVICE_ORDER '
                    'visible=${CUDA_VISIBLE_DEVICES-unset}\\"}"\n')
    fake.chmod(0o755)
    env = dict(os.environ, PATH="/nonexistent", CUDA_VISIBLE_DEVICES="1,0")   # a user's, inherited: dropped
    env.pop("CUDA_DEVICE_ORDER", None)
    out = subprocess.run([sys.executable, str(SCRIPT), "--host", "t1", "--envs-root", str(tmp_path / "envs"),
                          "--data-dir", str(tmp_path), "--fio-size", "1M", "--python", str(fake)],
                         capture_output=True, text=True, env=env, check=True)
    assert json.loads(out.stdout)["skipped"]["dataloader"] == "order=PCI_BUS_ID visible=unset"


def test_the_link_under_load_falls_back_to_the_older_fields():
    spec = importlib.util.spec_from_file_location("dlbox_acceptance_torch", TORCH_SCRIPT)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    calls = []

    def fake_run(argv, **_kwargs):
        calls.append(argv[3])
        if "gpumax" in argv[3]:
            return subprocess.CompletedProcess(argv, 2, 'Field "pcie.link.gen.gpumax" is not a valid field to query.\n\n', "")
        return subprocess.CompletedProcess(argv, 0, "3, 4, 8, [N/A]\n", "")

    assert bench.link_query(fake_run) == {"gen_current": 3, "gen_max": 4, "width_current": 8, "width_max": None}
    assert len(calls) == 2

    def newer(argv, **_kwargs):
        return subprocess.CompletedProcess(argv, 0, "4, 4, 8, 16, 5, 4\n", "")

    assert bench.link_query(newer) == {"gen_current": 4, "gen_max": 4, "width_current": 8, "width_max": 16,
                                       "gen_gpumax": 5, "gen_hostmax": 4}
    asked = []

    def gpu3(argv, **_kwargs):
        asked.append(argv[1:3])
        return subprocess.CompletedProcess(argv, 0, "4, 4, 16, 16, 4, 5\n", "")

    bench.link_query(gpu3, index=3)                     # the per-GPU part asks about its own GPU
    assert asked == [["-i", "3"]]


# --- each GPU measured on its own (per_gpu), through the forced CPU path -------------------------------------------
# The FAKE nvidia-smi above lists two RTX 3090s (bus ids 01:00.0 and 21:00.0); --each-gpu-on-cpu runs the per-GPU
# parts once for each with --gpu N, measured on the CPU with the real PyTorch (no GPU here). GPU 1's matmul is slowed
# from OUTSIDE the code under test (a sitecustomize.py that sleeps in torch.matmul in the processes of "--gpu 1"),
# and one of its parts fails; the controller's judge (plugins/plugin_utils/fitness.py) then reads the JSON.

def test_each_gpu_is_measured_by_its_index_and_a_slow_one_is_flagged_against_its_peer(tmp_path, python):
    from ansible_collections.dlbox.stack.plugins.plugin_utils import fitness  # pylint: disable=import-outside-toplevel

    bin_dir, _topo = fake_smi(tmp_path)
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(textwrap.dedent("""
        import sys, time
        argv = sys.argv
        if "--gpu" in argv and argv[argv.index("--gpu") + 1] == "1":
            part = argv[argv.index("--part") + 1]
            import torch
            if part == "matmul_fp16":
                def broken(*args, **kwargs):
                    raise RuntimeError("CUDA error: uncorrectable ECC error encountered")
                torch.matmul = broken
            else:
                plain = torch.matmul
                def slow(*args, **kwargs):
                    time.sleep(0.2)
                    return plain(*args, **kwargs)
                torch.matmul = slow
    """))
    env = dict(os.environ, PATH=str(bin_dir), PYTHONPATH=str(site))
    out = subprocess.run([sys.executable, str(SCRIPT), "--host", "t1", "--envs-root", str(tmp_path / "envs"),
                          "--data-dir", str(tmp_path), "--python", python, "--each-gpu-on-cpu",
                          "--parts", "matmul_bf16,matmul_fp16,matmul_fp32"] + TINY,
                         capture_output=True, text=True, env=env, check=True, timeout=300)
    result = json.loads(out.stdout)
    per_gpu = result["per_gpu"]
    assert [(g["index"], g["bus_id"], g["name"]) for g in per_gpu] == [
        (0, "00000000:01:00.0", "NVIDIA GeForce RTX 3090"), (1, "00000000:21:00.0", "NVIDIA GeForce RTX 3090")]
    assert set(per_gpu[0]["figures"]["matmul_tflops"]) == {"bf16", "fp16", "fp32"} and per_gpu[0]["errors"] == {}
    assert set(per_gpu[1]["figures"]["matmul_tflops"]) == {"bf16", "fp32"}
    assert per_gpu[1]["errors"] == {"matmul_fp16": "RuntimeError: CUDA error: uncorrectable ECC error encountered"}
    # GPU 0's figures are the host's figures, as before; GPU 1's failure is named after it
    assert result["figures"]["matmul_tflops"] == per_gpu[0]["figures"]["matmul_tflops"]
    assert set(result["errors"]) == {"matmul_fp16@gpu1"}
    assert result["checks"]["figure_matmul_fp16_gpu1"]["label"] == "PyTorch figure matmul_fp16 of GPU 1"
    slow, fast = per_gpu[1]["figures"]["matmul_tflops"]["bf16"], per_gpu[0]["figures"]["matmul_tflops"]["bf16"]
    assert slow < 0.5 * fast, (slow, fast)

    report = fitness.judge_acceptance(result, fitness.load_reference_data())
    by_id = {r["id"]: r for r in report["results"]}
    peers = by_id["gpu1_peers"]
    assert peers["label"] == "GPU 1 (00000000:21:00.0) against the other GPUs of its model"
    assert peers["value"].startswith("dense matmul bf16 %s TFLOPS against %s" % (slow, fast))
    # the FAKE's GPU 1 holds another user's process and thermal slowdowns: flagged, as a finding that says why
    assert peers["status"] == "finding" and peers["reason"].startswith("below 85% of the median of GPU 0 ")
    assert "not judged: other compute processes on it: /usr/bin/python3 (pid 4242)" in peers["reason"]
    assert by_id["gpu0_peers"]["status"] == "pass"
    assert by_id["figure_matmul_fp16_gpu1"]["status"] == "fail"
    # each GPU against its own reference, the RTX 3090's by device id (CPU figures: far below it, as they must be):
    # 0.9 (class geforce) of its 71.0 dense bf16 peak
    assert by_id["gpu1_matmul_bf16"]["reference"] == by_id["matmul_bf16"]["reference"] == 63.9


# --- the matmul's measurement window and the clock event reasons under load ---------------------------------------

def load_torch_script():
    spec = importlib.util.spec_from_file_location("dlbox_acceptance_torch", TORCH_SCRIPT)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    return bench


def test_a_short_batch_is_grown_until_it_fills_the_window():
    bench = load_torch_script()
    batches = []

    def timer(_torch, _device, _func, iterations, warm_up=True):
        batches.append((iterations, warm_up))
        return iterations * 0.0015                   # 1.5 ms a call: an 8192^3 bf16 matmul on an H100

    seconds, iterations = bench.timed_window(None, None, None, 20, 2.0, timer=timer)
    assert seconds >= 2.0 and iterations * 0.0015 == seconds
    assert batches[0] == (20, True) and all(not warm for _n, warm in batches[1:])   # one warm-up only
    assert len(batches) <= 3
    # a batch already longer than the window is measured once
    batches.clear()
    assert bench.timed_window(None, None, None, 20, 0.01, timer=timer) == (0.03, 20) and len(batches) == 1


def test_the_cpu_matmul_reports_its_window(tmp_path, python):
    result = accept(tmp_path, python, "--parts", "matmul_fp32", "--matmul-min-ms", "30")
    figures = result["figures"]
    assert figures["matmul_ms"]["fp32"] >= 30 and figures["matmul_iterations"]["fp32"] >= 2
    assert "throttle_under_load" not in figures          # no GPU, no nvidia-smi sampled


def test_the_clock_watch_reads_the_reasons_while_busy_and_after():
    bench = load_torch_script()
    answers = iter(["0x0000000000000004\n", "0x0000000000000040\n", "0x0000000000000000\n"])
    asked = []

    def fake_run(argv, **_kwargs):
        asked.append(argv)
        if "clocks_event_reasons.active" in argv[3]:      # a driver before R535 knows only the older name
            return subprocess.CompletedProcess(argv, 2, 'Field "clocks_event_reasons.active" is not a valid field to '
                                                        'query.\n\n', "")
        return subprocess.CompletedProcess(argv, 0, next(answers, "0x0\n"), "")

    with bench.ClockWatch(3, run=fake_run, every=0.01) as watch:
        time.sleep(0.1)
    # SW power cap (0x4) is a card at its power limit, as designed; HW thermal slowdown (0x40) is named
    assert watch.answered and watch.names() == ["hardware thermal slowdown"]
    assert asked[0][:4] == ["nvidia-smi", "-i", "3", "--query-gpu=clocks_event_reasons.active"]
    assert asked[1][3] == "--query-gpu=clocks_throttle_reasons.active"

    # a block shorter than the sampling period: the sample after it still sees the reasons the card left behind
    late = iter(["0x0000000000000080\n"])
    with bench.ClockWatch(0, run=lambda argv, **_k: subprocess.CompletedProcess(argv, 0, next(late, "0x0\n"), ""),
                          every=60) as watch:
        pass
    assert watch.names() == ["power brake"]

    def absent(argv, **_kwargs):
        raise FileNotFoundError(argv[0])

    with bench.ClockWatch(0, run=absent, every=0.01) as watch:
        time.sleep(0.03)
    assert not watch.answered and watch.names() == []


def test_the_reasons_seen_by_each_matmul_part_are_merged():
    spec = importlib.util.spec_from_file_location("dlbox_acceptance", SCRIPT)
    accept_mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(accept_mod)
    result = {"figures": {}, "skipped": {}, "errors": {}, "checks": {}}
    accept_mod.merge_part(result, {"part": "matmul_bf16", "figures": {
        "matmul_tflops": {"bf16": 500.0}, "matmul_ms": {"bf16": 2100.0}, "throttle_under_load": ["power brake"]}})
    accept_mod.merge_part(result, {"part": "matmul_fp32", "figures": {
        "matmul_tflops": {"fp32": 50.0}, "matmul_ms": {"fp32": 2000.0}, "throttle_under_load": []}})
    accept_mod.merge_part(result, {"part": "matmul_fp16", "figures": {
        "matmul_tflops": {"fp16": 480.0}, "matmul_ms": {"fp16": 2050.0},
        "throttle_under_load": ["hardware slowdown", "power brake"]}})
    assert result["figures"]["matmul_ms"] == {"bf16": 2100.0, "fp32": 2000.0, "fp16": 2050.0}
    assert result["figures"]["throttle_under_load"] == ["power brake", "hardware slowdown"]


# --- each GPU selected by UUID and measured from its own NUMA node ------------------------------------------------
# sysfs values: a 2-socket 8x A100 host as NVIDIA/nccl-tests#178 shows it (nvidia-smi topo -m's "CPU Affinity" and
# "NUMA Affinity" are the GPU function's local_cpulist and numa_node: GPU0-3 "0-31,64-95" on node 0, GPU4-7
# "32-63,96-127" on node 1; the bus ids are written for the test), and a single-socket host whose GPU reads
# numa_node -1 ("-1 if the node is unknown", the kernel's Documentation/ABI/testing/sysfs-bus-pci, numa_node).

def load_accept_module(sysfs):
    spec = importlib.util.spec_from_file_location("dlbox_acceptance", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.SYSFS = str(sysfs)
    return module


def write_sysfs(sysfs, address, node, cpulist):
    folder = sysfs / "bus" / "pci" / "devices" / address
    folder.mkdir(parents=True)
    (folder / "numa_node").write_text("%s\n" % node)
    if cpulist is not None:
        (folder / "local_cpulist").write_text(cpulist + "\n")


def test_each_gpu_is_measured_from_its_own_numa_node(tmp_path):
    sysfs = tmp_path / "sys"
    write_sysfs(sysfs, "0000:07:00.0", 0, "0-31,64-95")
    write_sysfs(sysfs, "0000:87:00.0", 1, "32-63,96-127")
    write_sysfs(sysfs, "0000:01:00.0", -1, "0-15")
    write_sysfs(sysfs, "0000:41:00.0", "", None)
    mod = load_accept_module(sysfs)
    every = set(range(128))
    assert mod.numa_placement("00000000:07:00.0", every) == {
        "node": 0, "cpus": "0-31,64-95", "bound": True, "why": "measured from NUMA node 0's CPUs 0-31,64-95"}
    assert mod.numa_placement("00000000:87:00.0", every)["cpus"] == "32-63,96-127"
    # a cpuset (a container, taskset) that leaves part of the node: its share of it; none of it: not bound, said why
    assert mod.numa_placement("00000000:87:00.0", set(range(48, 100)))["cpus"] == "48-63,96-99"
    far = mod.numa_placement("00000000:87:00.0", set(range(32)))
    assert far["bound"] is False and far["node"] == 1 and "none of node 1's CPUs (32-63,96-127)" in far["why"]
    # single socket: numa_node -1 is one node, nothing to bind and no error
    single = mod.numa_placement("00000000:01:00.0", every)
    assert (single["node"], single["bound"], single["cpus"]) == (None, False, None) and "numa_node -1" in single["why"]
    assert mod.numa_placement("00000000:41:00.0", every)["node"] is None           # unreadable
    assert mod.numa_placement("00000000:99:00.0", every)["why"].startswith("sysfs has no numa_node")
    assert mod.numa_placement(None)["why"] == "no PCI bus id"
    assert mod.cpulist_text(mod.parse_cpulist("0-3,5,7-8")) == "0-3,5,7-8" and mod.parse_cpulist("x-1") is None


def test_a_per_gpu_part_sees_only_its_gpu_by_uuid_whatever_the_user_set():
    mod = load_accept_module("/nonexistent")
    user = {"CUDA_VISIBLE_DEVICES": "1,0", "CUDA_DEVICE_ORDER": "FASTEST_FIRST", "HOME": "/root"}
    gpu = {"index": 1, "uuid": UUIDS[1], "numa": {"node": 1, "cpus": "32-63,96-127", "bound": True}}
    env = mod.part_env(gpu, user)
    assert (env["CUDA_VISIBLE_DEVICES"], env["CUDA_DEVICE_ORDER"], env["HOME"]) == (UUIDS[1], "PCI_BUS_ID", "/root")
    assert "CUDA_VISIBLE_DEVICES" not in mod.part_env(None, user)          # host parts: every GPU, PCI order
    argv = mod.part_argv("py", "t.py", "h2d", gpu, ["--device", "auto"])
    assert argv == ["py", "t.py", "--part", "h2d", "--gpu", "1", "--cuda-index", "0", "--cpus", "32-63,96-127",
                    "--device", "auto"]
    # a driver without UUIDs: the index under PCI_BUS_ID, the user's value still dropped; no node: no --cpus
    old = {"index": 1, "numa": {"node": None, "cpus": None, "bound": False}}
    assert "CUDA_VISIBLE_DEVICES" not in mod.part_env(old, user)
    assert mod.part_argv("py", "t.py", "h2d", old, [])[4:] == ["--gpu", "1", "--cuda-index", "1"]


@pytest.fixture(scope="module")
def slow_gpu_run(tmp_path_factory, python):
    """The two FAKE RTX 3090s, clean (no other process, no slowdown), each on its own NUMA node (sysfs in a fixture
    tree, each node one CPU this process may use); a user's CUDA_VISIBLE_DEVICES=1 inherited; GPU 1's matmul slowed
    from outside the code under test (sitecustomize.py sleeping in torch.matmul in the processes of --gpu 1)."""
    tmp_path = tmp_path_factory.mktemp("slowgpu")
    bin_dir, _topo = fake_smi(tmp_path, clean=True)
    allowed = sorted(os.sched_getaffinity(0))
    cpus = (allowed[0], allowed[-1])
    sysfs = tmp_path / "sys"
    write_sysfs(sysfs, "0000:01:00.0", 0, str(cpus[0]))
    write_sysfs(sysfs, "0000:21:00.0", 1, str(cpus[1]))
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(textwrap.dedent("""
        import sys, time
        argv = sys.argv
        if "--gpu" in argv and argv[argv.index("--gpu") + 1] == "1":
            import torch
            plain = torch.matmul
            def slow(*args, **kwargs):
                time.sleep(0.2)
                return plain(*args, **kwargs)
            torch.matmul = slow
    """))
    env = dict(os.environ, PATH=str(bin_dir), PYTHONPATH=str(site), DLBOX_ACCEPTANCE_SYSFS=str(sysfs),
               CUDA_VISIBLE_DEVICES="1")
    out = subprocess.run([sys.executable, str(SCRIPT), "--host", "t1", "--envs-root", str(tmp_path / "envs"),
                          "--data-dir", str(tmp_path), "--python", python, "--each-gpu-on-cpu",
                          "--parts", "matmul_bf16,matmul_fp32"] + TINY,
                         capture_output=True, text=True, env=env, check=True, timeout=300)
    return json.loads(out.stdout), cpus


def test_each_gpu_part_ran_on_its_uuid_and_its_nodes_cpus(slow_gpu_run):
    result, cpus = slow_gpu_run
    per_gpu = result["per_gpu"]
    for number, entry in enumerate(per_gpu):
        assert entry["uuid"] == UUIDS[number]
        assert entry["numa"]["node"] == number and entry["numa"]["bound"] is True
        # what the part itself saw: its GPU alone by UUID (not the user's "1"), as cuda:0, on its node's CPU
        assert entry["ran"] == {"cuda_visible_devices": UUIDS[number], "cuda_index": 0, "cpus": str(cpus[number])}
    assert [g["numa"]["node"] for g in result["gpus"]] == [0, 1]


def test_a_slow_gpu_fails_acceptance_by_name(slow_gpu_run):
    from ansible_collections.dlbox.stack.plugins.plugin_utils import fitness  # pylint: disable=import-outside-toplevel

    result, _cpus = slow_gpu_run
    report = fitness.judge_acceptance(result, fitness.load_reference_data())
    by_id = {r["id"]: r for r in report["results"]}
    peers = by_id["gpu1_peers"]
    assert peers["status"] == "fail", peers
    assert peers["label"] == "GPU 1 (00000000:21:00.0) against the other GPUs of its model"
    assert peers["value"].startswith("dense matmul bf16 ") and "not judged" not in peers["reason"]
    assert by_id["gpu0_peers"]["status"] == "pass"
    # (the CPU's figures fail the RTX 3090's own reference too; the peers row is the one that names the slow card)
    assert report["ok"] is False and "gpu1_peers" in report["failed"] and "gpu0_peers" not in report["failed"]
    text = "\n".join(fitness.acceptance_text(report))
    assert "GPU 1 (00000000:21:00.0) against the other GPUs of its model" in text
