"""Benchmark the stack resolver: plans per second and mean / p95 milliseconds per plan.

Loads data/compat.yml once, then resolves a mix of the unit-test scenarios N times.

    python tests/benchmarks/bench_resolver.py [N]      (default N = 200 rounds of the mix)
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "unit"))
# conftest makes ansible_collections.dlbox.stack importable from the checkout.
import conftest  # noqa: E402,F401  pylint: disable=unused-import

from ansible_collections.dlbox.stack.plugins.plugin_utils.stack_resolver import resolve  # noqa: E402
from ansible_collections.dlbox.stack.plugins.plugin_utils import compat_data  # noqa: E402
from ansible_collections.dlbox.stack.plugins.plugin_utils.compat_data import load_compat, load_compat_index, load_gpu_index  # noqa: E402

SCENARIOS = [
    ("8x H100 SXM + NVSwitch", {"gpus": ["H100 SXM"] * 8, "nvswitch": True, "os": "ubuntu-22.04"}, {}),
    ("RTX 4090 workstation", {"gpus": ["RTX 4090"], "os": "ubuntu-22.04"}, {}),
    ("GTX 1080 Ti + PyTorch 2.9", {"gpus": ["GTX 1080 Ti"], "os": "ubuntu-22.04"}, {"pytorch": "2.9"}),
    ("Jetson AGX Orin", {"gpus": ["Jetson AGX Orin"]}, {}),
    ("K80 + CUDA 12 (refused)", {"gpus": ["Tesla K80"], "os": "ubuntu-22.04"}, {"cuda": "12.4"}),
    ("RTX 5090 proprietary (refused)", {"gpus": ["RTX 5090"], "os": "ubuntu-24.04"}, {"kernel_modules": "proprietary"}),
    ("cu130 on driver 550 (refused)", {"gpus": ["RTX 4090"], "os": "ubuntu-22.04", "driver_version": "550.54.14"}, {"pytorch_variant": "cu130"}),
    ("PyTorch 2.6 on RTX 5090 (refused)", {"gpus": ["RTX 5090"], "os": "ubuntu-24.04"}, {"pytorch": "2.6"}),
    ("TensorFlow + CUDA 13 (refused)", {"gpus": ["RTX 4090"], "os": "ubuntu-22.04"}, {"tensorflow": "2.21", "cuda": "13.0"}),
    ("CPU only", {"gpus": [], "os": "debian-12"}, {}),
]


def main(argv):
    rounds = int(argv[1]) if len(argv) > 1 else 200
    # an empty disk cache (plugin_utils.data_cache): the first load builds, as each Ansible worker did before
    cache = tempfile.mkdtemp(prefix="dlbox-bench-cache-")
    os.environ["DLBOX_STACK_CACHE_DIR"] = cache
    t0 = time.perf_counter()
    data = load_compat()
    load_ms = (time.perf_counter() - t0) * 1000
    t0 = time.perf_counter()
    index = load_gpu_index()
    index_ms = (time.perf_counter() - t0) * 1000
    compat_data._CACHE.clear()  # what the next worker process sees: only the disk cache
    t0 = time.perf_counter()
    load_compat()
    load_gpu_index()
    cached_ms = (time.perf_counter() - t0) * 1000
    shutil.rmtree(cache, ignore_errors=True)
    hosts = [(name, index.host_from_hardware(hw), req) for name, hw, req in SCENARIOS]
    compat_index = load_compat_index()  # indexed once, outside the timing, and passed in
    resolve(compat_index, hosts[0][1], hosts[0][2], gpu_index=index)
    samples = []
    per_scenario = {name: [] for name, _host, _req in hosts}
    start = time.perf_counter()
    for _round in range(rounds):
        for name, host, req in hosts:
            t = time.perf_counter()
            resolve(compat_index, host, req, gpu_index=index)
            ms = (time.perf_counter() - t) * 1000
            samples.append(ms)
            per_scenario[name].append(ms)
    total = time.perf_counter() - start
    samples.sort()
    p95 = samples[int(len(samples) * 0.95) - 1]
    print("data/compat.yml load: %.1f ms" % load_ms)
    print("GPU index (data/gpu_catalog.yml load + build): %.1f ms" % index_ms)
    print("data/compat.yml + GPU index from the disk cache (each later worker process): %.1f ms" % cached_ms)
    print("plans: %d (%d rounds x %d scenarios) in %.2f s" % (len(samples), rounds, len(hosts), total))
    print("plans per second: %.0f" % (len(samples) / total))
    print("mean: %.3f ms   p95: %.3f ms   max: %.3f ms" % (statistics.mean(samples), p95, samples[-1]))
    for name, values in per_scenario.items():
        print("  %-36s mean %.3f ms" % (name, statistics.mean(values)))
    return 0  # figures only: a benchmark never fails on a slow or busy machine


if __name__ == "__main__":
    sys.exit(main(sys.argv))
