# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""dcgm_plan on a frozen data/server.yml: the DCGM 4 package per CUDA major, the exporter's pairing and listen address."""

from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.dlbox.stack.plugins.plugin_utils import dcgm_plan as dp
from ansible_collections.dlbox.stack.plugins.plugin_utils import gpu_settings as gs

TESTS = Path(__file__).resolve().parents[3]
DATA = gs.load_data(TESTS / "unit" / "data" / "server-frozen.yml")
COLLECTORS = [{"field": "DCGM_FI_DEV_GPU_UTIL", "type": "gauge", "help": "GPU utilization (in %)."}]
BASE = {"dcgm_exporter_listen_address": "127.0.0.1", "dcgm_exporter_port": 9400,
        "dcgm_exporter_collectors": COLLECTORS}


def _plan(cuda, installed=None, **request):
    return dp.plan(cuda, dict(BASE, **request), installed_dcgm=installed, data=DATA)


@pytest.mark.parametrize("cuda, package", [("13.0", "datacenter-gpu-manager-4-cuda13"),
                                           ("12.4", "datacenter-gpu-manager-4-cuda12")])
def test_package_follows_the_drivers_cuda_major(cuda, package):
    out = _plan(cuda)
    assert out["ok"], out["problems"]
    assert out["package"] == package and out["service"] == "nvidia-dcgm"
    assert out["packages"] == ["datacenter-gpu-manager-4-core", package]


def test_cuda_major_read_from_recorded_outputs():
    assert dp.cuda_major((TESTS / "fixtures" / "nvidia-smi" / "h200-driver-580-device.xml").read_text()) == "13"
    assert dp.cuda_major((TESTS / "fixtures" / "server" / "h100-sxm-8x-driver-565-q.txt").read_text()) == "12"


def test_cuda_major_without_package_or_driver_refused():
    assert "CUDA 11" in _plan("11.8")["problems"][0]
    assert "no CUDA version" in _plan("")["problems"][0]


def test_exporter_paired_with_the_installed_dcgm():
    pairs = DATA["dcgm"]["exporter"]["pairs"]
    for dcgm, exporter in pairs.items():
        out = _plan("13.0", installed="1:%s-1" % dcgm)
        assert out["exporter"]["version"] == exporter
        assert out["exporter"]["image"].endswith(":%s-%s-ubuntu22.04" % (dcgm, exporter))


def test_unpaired_dcgm_refused_naming_the_variable_unless_given():
    out = _plan("13.0", installed="4.0.0")
    assert not out["ok"] and "dcgm_exporter_version" in out["problems"][0]
    assert _plan("13.0", installed="4.0.0", dcgm_exporter_version="4.0.1")["ok"]


@pytest.mark.parametrize("address, listen", [("127.0.0.1", "127.0.0.1:9400"), ("::1", "[::1]:9400"),
                                             ("10.1.2.3", "10.1.2.3:9400")])
def test_listen_address(address, listen):
    out = _plan("13.0", dcgm_exporter_listen_address=address)
    assert out["exporter"]["listen"] == listen and out["exporter"]["url"] == "http://%s/metrics" % listen


@pytest.mark.parametrize("request_, variable", [
    ({"dcgm_exporter_listen_address": "localhost"}, "dcgm_exporter_listen_address"),
    ({"dcgm_exporter_listen_address": ""}, "dcgm_exporter_listen_address"),
    ({"dcgm_exporter_port": 70000}, "dcgm_exporter_port"),
    ({"dcgm_exporter_method": "snap"}, "dcgm_exporter_method"),
    ({"dcgm_exporter_collectors": []}, "dcgm_exporter_collectors"),
    ({"dcgm_exporter_collectors": [{"field": "GPU_UTIL", "type": "gauge", "help": "x"}]}, "dcgm_exporter_collectors[0]"),
    ({"dcgm_exporter_collectors": [{"field": "DCGM_FI_DEV_GPU_UTIL", "type": "histogram", "help": "x"}]},
     "dcgm_exporter_collectors[0]"),
])
def test_bad_input_refused_naming_the_variable(request_, variable):
    out = _plan("13.0", **request_)
    assert not out["ok"] and out["problems"][0].startswith(variable)


def test_collectors_csv_in_dcgm_exporters_format():
    out = _plan("13.0")
    assert out["exporter"]["collectors_csv"] == "DCGM_FI_DEV_GPU_UTIL, gauge, GPU utilization (in %).\n"
