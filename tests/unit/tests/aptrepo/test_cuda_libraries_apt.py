# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The FIXTURE CUDA repository's runtime set (tests/aptrepo/specs/_cuda-common.yml, cuda-libraries-13-0) through this
machine's REAL apt: `apt-get -s install cuda-libraries-13-0` pulls NVIDIA's 13 runtime components of CUDA 13.0.2 and
nothing of the toolkit (compiler, headers, stubs), as the CI image's runtime flavour relies on (issue 51)."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[4]
sys.path.insert(0, str(ROOT / "tests" / "aptrepo"))
import apt_root  # noqa: E402  pylint: disable=wrong-import-position,import-error

needs_apt = pytest.mark.skipif(not (shutil.which("apt-get") and shutil.which("dpkg-deb")), reason="needs apt and dpkg-deb")

# NVIDIA's cuda-libraries 13.0.2 on x86_64 (conda-forge/cuda-libraries-feedstock recipe/meta.yaml at 32d07634, the
# CUDA team's "Update for CUDA 13.0.2"; cuda-opencl is linux64-only there), by their apt names <component>-13-0
COMPONENTS_13_0_2 = {
    "cuda-cudart-13-0": "13.0.96-1", "cuda-nvrtc-13-0": "13.0.88-1", "cuda-opencl-13-0": "13.0.85-1",
    "libcublas-13-0": "13.1.0.3-1", "libcufft-13-0": "12.0.0.61-1", "libcufile-13-0": "1.15.1.6-1",
    "libcurand-13-0": "10.4.0.35-1", "libcusolver-13-0": "12.0.4.66-1", "libcusparse-13-0": "12.6.3.3-1",
    "libnpp-13-0": "13.0.1.2-1", "libnvfatbin-13-0": "13.0.85-1", "libnvjitlink-13-0": "13.0.88-1",
    "libnvjpeg-13-0": "13.0.1.86-1",
}


def _simulated(opts, *packages):
    proc = apt_root.run(opts, "apt-get", "-s", "install", "--no-install-recommends", *packages)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return dict(re.findall(r"^Inst (\S+) \((\S+)", proc.stdout, re.M))


@pytest.fixture(scope="module")
def opts(tmp_path_factory):
    return apt_root.make_root(str(tmp_path_factory.mktemp("cuda-debian12")), "cuda-debian12.yml")[0]


@needs_apt
def test_cuda_libraries_pulls_nvidias_runtime_components_and_nothing_of_the_toolkit(opts):
    got = _simulated(opts, "cuda-libraries-13-0")
    assert {name: got.get(name) for name in COMPONENTS_13_0_2} == COMPONENTS_13_0_2
    assert set(got) == set(COMPONENTS_13_0_2) | {"cuda-libraries-13-0", "cuda-toolkit-13-0-config-common"}, sorted(got)


@needs_apt
def test_the_toolkit_still_pulls_the_runtime_set_and_the_development_part(opts):
    got = _simulated(opts, "cuda-toolkit-13-0")
    assert set(COMPONENTS_13_0_2) <= set(got)
    assert {"cuda-nvcc-13-0", "cuda-driver-dev-13-0", "cuda-nvml-dev-13-0", "libcublas-dev-13-0"} <= set(got)
