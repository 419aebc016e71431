# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 53 red team, on FROZEN data (tests/unit/data/compat-frozen.yml):

- MEDIUM: a plan for Ubuntu 26.04 with CUDA 13.3 (the first CUDA of NVIDIA's ubuntu2604) resolves a cuDNN; a CUDA with no
  cuDNN row (13.5) says so naming the request variables and the newest CUDA that has one.
- LOW: the archive's CUDA 13.1 needs cuda-crt-13-1 >= 13.1.115-0ubuntu1.1 (glibc 2.43): the plan carries the minimum in
  stack.cuda.minimum and warns naming dlbox_plan_request.cuda; a plan from NVIDIA's repository has no minimum.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from ansible_collections.dlbox.stack.plugins.plugin_utils import stack_resolver
from ansible_collections.dlbox.stack.plugins.plugin_utils.compat_data import load_compat
from ansible_collections.dlbox.stack.plugins.plugin_utils.gpu_catalog import GpuIndex

FROZEN = Path(__file__).resolve().parents[2] / "data" / "compat-frozen.yml"
OS = "ubuntu-26.04"
CRT = {"package": "cuda-crt-13-1", "version": "13.1.115-0ubuntu1.1", "suite": "resolute-updates"}


@pytest.fixture(scope="module")
def frozen():
    return load_compat(FROZEN)


@pytest.fixture(scope="module")
def with_archive(frozen):
    """The frozen data plus 26.04's archive toolkit (Canonical's cuda-toolkit-13-1) and its cuda-crt minimum, as
    data/compat.yml records them (distro_drivers.distros.ubuntu-26.04, os.distros.ubuntu-26.04.distro_cuda_minimum)."""
    data = copy.deepcopy(frozen)
    archive = copy.deepcopy(data["distro_drivers"]["distros"]["ubuntu-22.04"])
    archive["distro"]["cuda_toolkit"] = {"package": "cuda-toolkit-13-1", "package_version": "13.1.1-0ubuntu1", "suite": "resolute",
                                         "version": "13.1.1", "home": "/usr/local/cuda-13.1"}
    data["distro_drivers"]["distros"][OS] = archive
    data["os"]["distros"][OS]["distro_cuda_minimum"] = [dict(CRT, reason="the release pocket's one does not compile on glibc 2.43")]
    return data


def plan_for(data, request, gpus=("RTX 4090",)):
    index = GpuIndex(data)
    return stack_resolver.resolve(data, index.host_from_hardware({"gpus": list(gpus), "os": OS}), request, gpu_index=index)


@pytest.mark.parametrize("gpus", [("RTX 4090",), ("H100 PCIe",)])
def test_cuda_13_3_on_2604_resolves_a_cudnn(frozen, gpus):
    plan = plan_for(frozen, {"cuda": "13.3"}, gpus)
    assert plan["ok"], plan["errors"]
    assert plan["stack"]["cuda"]["version"] == "13.3" and plan["stack"]["cuda"]["repository"] == "ubuntu2604/x86_64"
    # the newest cuDNN whose CUDA 13 build covers 13.3 (9.26.0.51: 13.0 to 13.4)
    assert plan["stack"]["cudnn"] == {"version": "9.26.0.51"}
    assert not any("no cuDNN" in w for w in plan["warnings"])


def test_a_cudnn_asked_for_cuda_13_3_is_accepted_when_its_row_covers_it(frozen):
    """9.24.0.43 (NVIDIA's cudnn9-cuda-13-3) covers 13.3; 9.20.0.48 stops at 13.2 and is refused naming cudnn."""
    plan = plan_for(frozen, {"cuda": "13.3", "cudnn": "9.24.0.43"})
    assert plan["ok"] and plan["stack"]["cudnn"] == {"version": "9.24.0.43"}
    refused = plan_for(frozen, {"cuda": "13.3", "cudnn": "9.20.0.48"})
    assert not refused["ok"]
    assert any("cuDNN 9.20.0.48's CUDA 13 build covers CUDA 13.0 to 13.2, not 13.3" in e and "cudnn: '9.26.0.51'" in e
               for e in refused["errors"])


def test_a_cuda_without_a_cudnn_row_names_the_variables(frozen):
    plan = plan_for(frozen, {"cuda": "13.5"})
    assert plan["ok"] and plan["stack"]["cudnn"] is None
    message = [w for w in plan["warnings"] if "no cuDNN" in w]
    assert message == ["dlbox_plan_request.cudnn: no cuDNN in data/compat.yml has a build for CUDA 13.5 that supports these "
                       "GPUs, so the plan has no system cuDNN (stack.cudnn is null); request dlbox_plan_request.cuda: '13.4' "
                       "(cuDNN 9.26.0.51 has a build for it), or set cudnn: 'none' to plan without one."]


def test_cudnn_none_is_quiet(frozen):
    plan = plan_for(frozen, {"cuda": "13.5", "cudnn": "none"})
    assert plan["ok"] and plan["stack"]["cudnn"] is None
    assert not any("cuDNN" in w for w in plan["warnings"])


def test_the_archive_toolkit_carries_its_cuda_crt_minimum(with_archive):
    plan = plan_for(with_archive, {"cuda": "13.1", "driver_method": "distro"})
    assert plan["ok"], plan["errors"]
    cuda = plan["stack"]["cuda"]
    assert cuda["package"] == "cuda-toolkit-13-1" and cuda["repository"] is None
    assert cuda["minimum"] == [CRT]
    warned = [w for w in plan["warnings"] if "cuda-crt-13-1" in w]
    assert len(warned) == 1
    assert warned[0].startswith("dlbox_plan_request.cuda '13.1' (cuda_method: distro) needs cuda-crt-13-1 "
                                "13.1.115-0ubuntu1.1 or newer from resolute-updates")
    assert "os.distros.ubuntu-26.04.distro_cuda_minimum" in warned[0]


def test_nvidia_repository_toolkit_has_no_minimum_but_names_it_for_the_archive_alternative(with_archive):
    plan = plan_for(with_archive, {"cuda": "13.3"})
    assert plan["ok"], plan["errors"]
    assert "minimum" not in plan["stack"]["cuda"]
    assert not any("cuda-crt" in w for w in plan["warnings"])
    assert any("cuda_method: distro installs instead (it needs cuda-crt-13-1 13.1.115-0ubuntu1.1 or newer from "
               "resolute-updates)" in n for n in plan["notes"])


def test_no_minimum_in_the_data_no_minimum_in_the_plan(with_archive):
    data = copy.deepcopy(with_archive)
    del data["os"]["distros"][OS]["distro_cuda_minimum"]
    plan = plan_for(data, {"cuda": "13.1", "driver_method": "distro"})
    assert plan["ok"] and "minimum" not in plan["stack"]["cuda"]
    assert not any("cuda-crt" in w for w in plan["warnings"])
