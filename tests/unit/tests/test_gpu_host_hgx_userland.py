# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The FIXTURE HGX overlay reads the user-space driver version from the same package names as the kernel model (issue 44
red team LOW): NVIDIA's Ubuntu repository ships it branchless from R590 (libnvidia-compute, brought by nvidia-driver-open,
nvidia-open or cuda-drivers; see tests/fixtures/gpu_host/bin/fixture-lib.sh userland_version for the sources), which the
overlay's regex did not know: an HGX host on R590 read as "no driver"."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

GPU = Path(__file__).resolve().parents[3] / "tests" / "fixtures" / "gpu_host"


def userland(tmp_path, lines, lib):
    fake = tmp_path / "fakebin"
    fake.mkdir()
    (fake / "dpkg-query").write_text("#!/bin/sh\nprintf '%s'\n" % "".join(line + "\\n" for line in lines))
    (fake / "dpkg-query").chmod(0o755)
    run = subprocess.run(["sh", "-c", '. "%s"; userland_version' % lib], env={"PATH": "%s:/usr/bin:/bin" % fake,
                         "DLBOX_FIXTURE_GPU": str(tmp_path), "DLBOX_FIXTURE_STATE": str(tmp_path)},
                         capture_output=True, text=True, check=False, timeout=30)
    return run.stdout.strip()


@pytest.mark.parametrize("lines, version", [
    (["ii nvidia-driver-open 595.71.05-1ubuntu1", "ii libnvidia-compute:amd64 595.71.05-1ubuntu1"], "595.71.05"),
    (["ii libnvidia-compute-580-server 580.95.05-0ubuntu0.22.04.1"], "580.95.05"),
    (["ii nvidia-driver-cuda 580.95.05-1", "ii bash 5.2"], "580.95.05"),
    (["rc libnvidia-compute 590.44.01-1ubuntu1"], ""),
])
def test_the_hgx_overlay_and_the_kernel_model_read_the_same_user_space(tmp_path, lines, version):
    (tmp_path / "hgx").mkdir()
    (tmp_path / "model").mkdir()
    assert userland(tmp_path / "hgx", lines, GPU / "hgx" / "lib.sh") == version
    assert userland(tmp_path / "model", lines, GPU / "bin" / "fixture-lib.sh") == version
