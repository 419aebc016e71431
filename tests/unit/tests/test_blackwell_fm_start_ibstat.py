# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The FIXTURE HGX B200's Fabric Manager start script (tests/fixtures/gpu_host/blackwell/nvidia-fabricmanager-start)
fails without ibstat, as NVIDIA's does (its nvidia-fabricmanager-start.sh lists the NVSwitch management ports with
ibstat, from infiniband-diags, which NVIDIA/gpu-driver-container's install.sh installs with nvlsm; issue 49 red team
H3), before it looks for NVLSM; with ibstat it goes on to NVLSM (absent here: NV_WARN_NOTHING_TO_DO)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
GPU_HOST = ROOT / "tests" / "fixtures" / "gpu_host"


def _run(tmp_path, with_ibstat):
    sysdir = tmp_path / "sys"
    for module in ("mlx5_core", "mlx5_ib", "ib_umad"):
        (sysdir / "module" / module).mkdir(parents=True, exist_ok=True)
    hgx = tmp_path / "hgx"
    hgx.mkdir(exist_ok=True)
    if not (hgx / "hgx-lib.sh").exists():
        (hgx / "hgx-lib.sh").symlink_to(GPU_HOST / "hgx" / "lib.sh")
    state = tmp_path / "state"
    state.mkdir(exist_ok=True)
    path = tmp_path / "path"
    path.mkdir(exist_ok=True)
    for tool in ("date", "cat", "rm", "sleep"):
        found = next((Path(d) / tool for d in ("/usr/bin", "/bin") if (Path(d) / tool).exists()), None)
        if found and not (path / tool).exists():
            (path / tool).symlink_to(found)
    if with_ibstat:
        (path / "ibstat").write_text("#!/bin/sh\nexit 0\n")
        (path / "ibstat").chmod(0o755)
    env = dict(os.environ, PATH=str(path), DLBOX_FIXTURE_SYS=str(sysdir), DLBOX_FIXTURE_HGX=str(hgx),
               DLBOX_FIXTURE_STATE=str(state))
    proc = subprocess.run(["/bin/sh", str(GPU_HOST / "blackwell" / "nvidia-fabricmanager-start")], capture_output=True,
                          text=True, env=env, timeout=30, check=False)
    events = (state / "events.log").read_text() if (state / "events.log").exists() else ""
    return proc, events


@pytest.mark.skipif(Path("/opt/nvidia/nvlsm/sbin/nvlsm").exists(), reason="a real NVLSM is installed here")
def test_without_ibstat_the_start_fails_before_nvlsm(tmp_path):
    proc, events = _run(tmp_path, with_ibstat=False)
    assert proc.returncode == 1
    assert "ibstat: not found" in proc.stderr and "NV_WARN_NOTHING_TO_DO" not in proc.stderr
    assert "fabricmanager refused: no ibstat" in events
    proc, _events = _run(tmp_path, with_ibstat=True)
    assert proc.returncode == 1 and "ibstat" not in proc.stderr and "NV_WARN_NOTHING_TO_DO" in proc.stderr
