"""gpu_facts' loaded ConnectX/InfiniBand modules (``modules.infiniband_modules``), which NVLSM needs on NVLink5 HGX
boards (mlx5_core, mlx5_ib, ib_umad: NVIDIA/gpu-operator#2781), on a recorded real ``lsmod``
(tests/fixtures/fabric/lsmod-connectx-ib-umad-mesa-mofed.txt, jgh-10050/mesa-mofed-utils; see SOURCES.md there) and on
the recorded NVIDIA-only module list the other parser tests use."""

from __future__ import annotations

from pathlib import Path

from ansible_collections.dlbox.stack.plugins.module_utils import _gpu_facts as hf

FABRIC = Path(__file__).resolve().parents[3] / "fixtures" / "fabric"


def test_connectx_host_lists_the_modules_nvlsm_needs():
    text = (FABRIC / "lsmod-connectx-ib-umad-mesa-mofed.txt").read_text(encoding="utf-8")
    found = hf.parse_proc_modules(text)["infiniband_modules"]
    assert {"mlx5_core", "mlx5_ib", "ib_umad"} <= set(found)
    assert "rdma_ucm" not in found and "mlxfw" not in found


def test_host_without_connectx_lists_none():
    text = ("nvidia_uvm 1540096 0 - Live 0x0000000000000000 (POE)\n"
            "nvidia 56778752 45 nvidia_uvm, Live 0x0000000000000000 (POE)\n")
    assert hf.parse_proc_modules(text)["infiniband_modules"] == []
    assert hf.parse_proc_modules("")["infiniband_modules"] == []
