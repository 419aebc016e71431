# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The nccl role's decision module (plugins/plugin_utils/roles/nccl.py: options, decide, needs) through the one filter
dlbox.stack.role_decide (issue 47), on the frozen data file and the real captures of tests/fixtures/nccl (SOURCES.md).

It replaces nccl_facts' decisions on the host (check, pick, conf) and the preflight's YAML (the version from nccl_version
or the plan, the toolkit the build is for, the refusals). The conf rows are the module's old tests (test_nccl_facts.py
at 6799a6b: the same captures, the same asserts) now through the controller's entry point; the offline rows are
offline.nccl_request's, which the decision hands to needs().
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.dlbox.stack.plugins.filter.role_decide import role_decide
from ansible_collections.dlbox.stack.plugins.module_utils import _nccl
from ansible_collections.dlbox.stack.plugins.plugin_utils import role_plan
from ansible_collections.dlbox.stack.plugins.plugin_utils.roles import nccl

ROOT = Path(__file__).resolve().parents[4]
FIX = ROOT / "tests" / "fixtures"
FROZEN = str(ROOT / "tests" / "unit" / "data" / "compat-frozen.yml")
HW = {"gpus": ["RTX 4090", "RTX 4090"], "os": "debian-12"}
CUDA = {"cuda_toolkits": [{"version": "13.0", "nvcc": "/usr/local/cuda-13.0/bin/nvcc"},
                          {"version": "12.9", "nvcc": "/usr/local/cuda-12.9/bin/nvcc"},
                          {"version": "12.8", "nvcc": "/usr/local/cuda-12.8/bin/nvcc"},
                          {"version": "11.8", "nvcc": "/usr/local/cuda-11.8/bin/nvcc"}],
        "cuda_default": {"version": "12.8"}}
MADISON = (  # apt-cache madison libnccl2 of molecule/nccl's repository (test_nccl.py's MADISON)
    "  libnccl2 | 2.27.7-1+cuda13.0 | http://127.0.0.1:8089/cuda-debian12  Packages\n"
    "  libnccl2 | 2.27.7-1+cuda12.9 | http://127.0.0.1:8089/cuda-debian12  Packages\n"
    "  libnccl2 | 2.27.5-1+cuda12.8 | http://127.0.0.1:8089/cuda-debian12  Packages\n"
    "  libnccl2 | 2.27.5-1+cuda12.6 | http://127.0.0.1:8089/cuda-debian12  Packages\n"
)


def fixture(name):
    return (FIX / name).read_text()


@pytest.fixture(scope="module")
def plan():
    got = role_plan.resolve({}, {}, hardware=HW, data_path=FROZEN)
    assert got["ok"] and got["stack"]["nccl"], got["errors"]
    return got


PACKAGES = {"nccl_packages": ["libnccl2", "libnccl-dev"]}  # the frozen data file names none


def _decide(plan, given=None, **facts):
    return nccl.decide(plan, nccl.options(dict(PACKAGES, **(given or {}))), dict({"cuda": CUDA}, **facts),
                       data_path=FROZEN)


def _gathered(**inputs):
    keys = ("topo", "p2p_matrix", "gpus", "lspci", "ip_link", "ibdev", "probe")
    return {"inputs": {k: inputs.get(k) for k in keys},
            "sources": {k: "capture" if k in inputs else "missing" for k in keys}, "conf": inputs.get("conf")}


# --- the version, the toolkit, the refusals (the preflight) ----------------------------------------
def test_the_plans_version_for_a_toolkit_of_its_major(plan):
    assert plan["stack"]["nccl"]["cuda_major"] == 13    # the default toolkit, 12.8, is of another major
    got = _decide(plan)
    assert got["active"] and got["version"] == plan["stack"]["nccl"]["version"]
    assert got["variable"] == nccl.PLAN_VARIABLE and got["toolkit"]["version"] == "13.0"
    assert _decide(plan, cuda=dict(CUDA, cuda_default={"version": "13.0"}))["toolkit"]["version"] == "13.0"
    assert _decide(None, hardware=HW)["toolkit"]["version"] == "13.0"
    assert got["packages"] == ["libnccl2", "libnccl-dev"] and got["refusals"] == [] and got["toolkit_error"] == ""


def test_the_packages_are_nccl_packages_else_the_data_files():
    data = role_plan.role_data("nccl", role_plan.load_data())
    assert data["packages"] and nccl.decide(None, nccl.options({}), {"hardware": HW})["packages"] == data["packages"]
    got = nccl.decide(None, nccl.options({"nccl_packages": ["libnccl2"]}), {"hardware": HW})
    assert got["packages"] == ["libnccl2"]


def test_nccl_cuda_version_picks_the_toolkit_else_refuses_naming_it(plan):
    assert _decide(plan, {"nccl_cuda_version": "12.9"})["toolkit"]["version"] == "12.9"
    got = _decide(plan, {"nccl_cuda_version": "12.4"})
    assert got["toolkit"] is None
    assert got["toolkit_error"].startswith("nccl_cuda_version=12.4 is not an installed CUDA toolkit; installed: "
                                           "13.0, 12.9, 12.8, 11.8.")


def test_no_toolkit_refuses_and_check_mode_only_notes_it(plan):
    got = _decide(plan, cuda={"cuda_toolkits": [], "cuda_default": None})
    assert "No CUDA toolkit of CUDA" in got["toolkit_error"] and "(found: none)" in got["toolkit_error"]
    got = _decide(plan, cuda={"cuda_toolkits": [], "cuda_default": None}, check_mode=True)
    assert got["toolkit_error"] == "" and got["check_mode_note"].startswith("Check mode: no installed CUDA toolkit")
    assert got["active"] is False and got["skip_reason"].startswith("Check mode")


def test_a_version_without_a_build_for_the_cuda_major_is_refused(plan):
    got = _decide(plan, {"nccl_version": "2.27.5", "nccl_cuda_version": "11.8"})
    assert len(got["refusals"]) == 1 and got["refusals"][0].startswith("nccl_version=2.27.5 has no build for CUDA 11.x")


def test_no_plan_no_version_is_skipped_with_the_reason():
    got = nccl.decide(None, nccl.options({}), {"cuda": CUDA, "hardware": {"gpus": ["RTX 4090"], "os": "debian-12"}},
                      data_path=FROZEN)
    assert got["active"] is False and "has no NCCL" in got["skip_reason"] and got["toolkit"] is None
    got = nccl.decide(None, nccl.options({"nccl_install": "false", "nccl_conf": "false"}), {}, data_path=FROZEN)
    assert got["active"] is False and got["skip_reason"] == "nccl_install and nccl_conf are both false: nothing to do."


# --- the build (install.yml) and what is installed (verify.yml) -------------------------------------
def test_the_build_from_the_repository_and_the_outdated_packages(plan):
    got = _decide(plan, {"nccl_version": "2.27.5", "nccl_cuda_version": "12.8"}, candidates=_nccl.parse_madison(MADISON),
                  installed={"libnccl2": [{"version": "2.27.5-1+cuda12.8"}]})
    assert got["build"]["version"] == "2.27.5-1+cuda12.8" and got["build"]["exact"] is True
    assert got["install_error"] == "" and got["outdated"] == ["libnccl-dev"]
    got = _decide(plan, {"nccl_version": "2.27.5", "nccl_cuda_version": "12.8"}, candidates=_nccl.parse_madison(MADISON),
                  installed={"libnccl2": [{"version": "2.27.5-1+cuda12.8"}],
                             "libnccl-dev": [{"version": "2.27.5-1+cuda12.8"}]}, header_version="2.27.5")
    assert got["outdated"] == [] and got["header_error"] == ""
    got = _decide(plan, {"nccl_version": "2.27.5", "nccl_cuda_version": "12.8"}, header_version="2.26.2")
    assert got["header_error"] == "says NCCL 2.26.2; 2.27.5 was installed."


def test_no_build_is_refused_but_not_in_check_mode_without_candidates(plan):
    got = _decide(plan, {"nccl_version": "2.21.5", "nccl_cuda_version": "12.8"}, candidates=_nccl.parse_madison(MADISON))
    assert got["install_error"].startswith("nccl_version=2.21.5 for the installed CUDA 12.8 (nccl_cuda_version): ")
    assert _decide(plan, {"nccl_version": "2.21.5", "nccl_cuda_version": "12.8"}, candidates=[], check_mode=True)["install_error"] == ""
    assert _decide(plan, {"nccl_version": "2.21.5", "nccl_cuda_version": "12.8"}, candidates=[])["install_error"] != ""


# --- nccl.conf (configure.yml): the module's old conf tests, through the controller ------------------
def test_conf_from_captures(plan):
    got = _decide(plan, gathered=_gathered(topo=fixture("nccl/topo-2x-rtx5880ada-node.txt"),
                                           lspci=fixture("nccl/lspci-vvv-acsctl-on.txt")))["conf"]
    assert got["gpu_count"] == 2 and got["p2p"]["verdict"] == "broken"
    assert got["conf_text"].endswith("NCCL_P2P_DISABLE=1\n")
    assert got["inputs"] == {"topo": "capture", "lspci": "capture", "p2p_matrix": "missing", "gpus": "missing",
                             "ip_link": "missing", "ibdev": "missing", "probe": "missing"}
    assert got["lines"][-1] == got["notes"][-1] if got["notes"] else got["lines"][0].startswith("NCCL_DEBUG: ")


def test_options_pass_through(plan):
    got = _decide(plan, {"nccl_debug": "INFO", "nccl_socket_ifname": "eth0"}, gathered=_gathered(topo=""))["conf"]
    assert [(s["key"], s["value"]) for s in got["settings"]] == [("NCCL_DEBUG", "INFO"), ("NCCL_SOCKET_IFNAME", "eth0")]


def test_the_probe_outranks_acs_and_the_users_keys_are_kept(plan):
    gathered = _gathered(topo=fixture("nccl/topo-2x-rtx5880ada-node.txt"),
                         lspci=fixture("nccl/lspci-vvv-acsctl-on.txt"), conf="NCCL_IB_TIMEOUT=22\n")
    got = _decide(plan, gathered=gathered, probe="P2P 0 1 ok\nP2P 1 0 ok\n")["conf"]
    assert got["inputs"]["probe"] == "capture"
    assert got["settings"][-1]["key"] == "NCCL_IB_TIMEOUT" and got["settings"][-1]["reason"] == _nccl.KEPT_REASON
    assert got["p2p"]["verdict"] == _nccl.p2p_assessment(_nccl.parse_topo(gathered["inputs"]["topo"]),
                                                         _nccl.parse_acs(gathered["inputs"]["lspci"]),
                                                         _nccl.parse_probe("P2P 0 1 ok\nP2P 1 0 ok\n"))["verdict"]


def test_infiniband_needs_peermem(plan):
    got = _decide(plan, gathered=_gathered(topo=fixture("nccl/topo-3x-h100nvl-nv12.txt"),
                                           ibdev=fixture("nccl/ibdev2netdev-roce-and-ib.txt"),
                                           ip_link=fixture("nccl/ip-a-ipoib.txt")))["conf"]
    assert got["peermem"] is True and any(s["key"] == "NCCL_IB_HCA" for s in got["settings"])


# --- offline (cuda_repo's needs) and the filter ------------------------------------------------------
def test_needs_hands_on_the_offline_request(plan):
    got = nccl.needs(_decide(plan, {"nccl_version": "2.27.7"}, toolkits=["12.8", "13.0"], default_toolkit="12.8"))
    assert got == {"apt": [], "repositories": ["cuda"],
                   "pick": {"packages": ["libnccl2", "libnccl-dev"], "version": "2.27.7", "cuda": "13.0"}}
    got = nccl.needs(_decide(plan, {"nccl_install": "false"}, toolkits=[]))
    assert got == {"apt": [], "repositories": [], "nothing": "nccl_install is false: the role writes nccl.conf only"}
    assert "error" in nccl.needs(_decide(plan, {"nccl_version": "2.27.7"}, toolkits=["12.8"]))
    assert nccl.needs(_decide(plan)) == {"apt": [], "repositories": []}


def test_the_filter_decides_once_and_a_later_fact_goes_through_the_same_entry(plan):
    first = role_decide("nccl", plan, dict(PACKAGES, nccl_version="2.27.5", nccl_cuda_version="12.8"), {"cuda": CUDA})
    assert first["options"]["nccl_version"] == "2.27.5" and first["needs"] == {"apt": [], "repositories": []}
    later = role_decide("nccl", first["plan"], first["options"],
                        dict(first["facts"], candidates=_nccl.parse_madison(MADISON)))
    assert later["build"]["version"] == "2.27.5-1+cuda12.8" and later["toolkit"] == first["toolkit"]
