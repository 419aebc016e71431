# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The NCCL decisions (plugins/module_utils/_nccl.py) on real captures (tests/fixtures/SOURCES.md).

Rule tests read the frozen data file (tests/unit/data/compat-frozen.yml), never data/compat.yml.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ansible_collections.dlbox.stack.plugins.module_utils import _nccl as nccl

ROOT = Path(__file__).resolve().parents[4]
FIX = ROOT / "tests" / "fixtures"
FROZEN = yaml.safe_load((ROOT / "tests" / "unit" / "data" / "compat-frozen.yml").read_text())


def fixture(name):
    return (FIX / name).read_text()


PCIE_PAIR_ACS = {"topo": fixture("nccl/topo-2x-rtx5880ada-node.txt"), "lspci": fixture("nccl/lspci-vvv-acsctl-on.txt")}
NVLINK_BOX = {"topo": fixture("nccl/topo-3x-h100nvl-nv12.txt"), "lspci": fixture("nccl/lspci-vvv-acsctl-on.txt")}
NVSWITCH_BOX = {"topo": fixture("nvidia-smi/topo-8x-h100-nv18.txt"), "lspci": fixture("nccl/lspci-vvv-acsctl-on.txt")}


def keys(decision):
    return {s["key"]: s["value"] for s in decision["settings"]}


# --- parsers ------------------------------------------------------------------------------------
@pytest.mark.parametrize(("name", "gpus", "kinds"), [
    ("nvidia-smi/topo-1x-h200-device.txt", 1, set()),
    ("nvidia-smi/topo-2x-rtx3090-pcie.txt", 2, {"PHB"}),
    ("nccl/topo-2x-rtx5880ada-node.txt", 2, {"NODE"}),
    ("nccl/topo-2x-rtx5090-phb.txt", 2, {"PHB"}),
    ("nccl/topo-3x-h100nvl-nv12.txt", 3, {"NV12", "SYS"}),
    ("nvidia-smi/topo-8x-h100-nv18.txt", 8, {"NV18"}),
    ("nvidia-smi/topo-5x-geforce-spaces.txt", 5, {"SYS", "PHB", "NODE"}),
])
def test_parse_topo_real_captures(name, gpus, kinds):
    topo = nccl.parse_topo(fixture(name))
    assert len(topo["gpus"]) == gpus
    assert len(topo["links"]) == gpus * (gpus - 1) // 2
    assert set(topo["links"].values()) == kinds


def test_parse_topo_without_a_matrix_is_empty():
    assert nccl.parse_topo("") == {"gpus": [], "links": {}, "nics": []}
    assert nccl.parse_topo("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.")["gpus"] == []


def test_parse_p2p_matrix_gns():
    matrix = nccl.parse_p2p_matrix(fixture("nccl/topo-p2p-rw-2x-rtx5090-gns.txt"))
    assert matrix["status"] == {("GPU0", "GPU1"): "GNS"}


def test_parse_acs_grep_lines_cannot_be_placed():
    acs = nccl.parse_acs(fixture("nccl/lspci-vvv-acsctl-on.txt"))
    assert len(acs["bridges"]) == 12 and not acs["located"]
    # SrcValid+ (7 lines of 12) or a redirect bit: lines 1-3, 9-12
    assert [b["enabled"] for b in acs["bridges"]] == [True, True, True] + [False] * 5 + [True] * 4
    assert acs["bridges"][0]["flags"]["ReqRedir"] and not acs["bridges"][0]["flags"]["TransBlk"]
    assert len(nccl.acs_above_gpus(acs)) == 7


def test_parse_acs_off():
    acs = nccl.parse_acs(fixture("nccl/lspci-vvv-acsctl-off.txt"))
    assert len(acs["bridges"]) == 14 and nccl.acs_above_gpus(acs) == []


def test_parse_acs_whole_blocks_places_the_bridges():
    # lspci -vvv block layout (pciutils ls-caps.c): a device line, then indented "Bus:" and ACSCtl lines.
    text = (
        "00:01.1 PCI bridge: Advanced Micro Devices, Inc. [AMD] Starship/Matisse GPP Bridge (prog-if 00 [Normal decode])\n"
        "\tBus: primary=00, secondary=01, subordinate=01, sec-latency=0\n"
        "\t\tACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-\n"
        "00:03.1 PCI bridge: Advanced Micro Devices, Inc. [AMD] Starship/Matisse GPP Bridge (prog-if 00 [Normal decode])\n"
        "\tBus: primary=00, secondary=21, subordinate=21, sec-latency=0\n"
        "\t\tACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-\n"
        "01:00.0 VGA compatible controller: NVIDIA Corporation AD102 [GeForce RTX 4090] (rev a1) (prog-if 00 [VGA controller])\n"
    )
    acs = nccl.parse_acs(text)
    assert acs["located"] and acs["gpus"] == [1]
    assert [b["address"] for b in nccl.acs_above_gpus(acs)] == ["00:01.1"]


def test_parse_ibdev2netdev_real():
    ports = nccl.parse_ibdev2netdev(fixture("nccl/ibdev2netdev-roce-and-ib.txt"))
    assert len(ports) == 8
    assert [p["hca"] for p in ports if p["up"]] == ["mlx5_2", "mlx5_3", "mlx5_5"]


def test_parse_ip_link_multiline_real():
    links = nccl.parse_ip_link(fixture("nccl/ip-a-ipoib.txt"))
    assert [(link["name"], link["type"], link["up"]) for link in links] == [
        ("lo", "loopback", True), ("eno1", "ether", True), ("eno2", "ether", False), ("ibp3s0", "infiniband", True)]


def test_parse_ip_link_one_line_form():
    line = ("4: ib0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 2044 qdisc mq state UP mode DEFAULT group default qlen 256\\"
            "    link/infiniband 80:00:02:08:fe:80:00:00:00:00:00:00:50:6b:4b:03:00:80:34:41 brd 00:ff:ff:ff:ff:12:40:1b\n")
    assert nccl.parse_ip_link(line) == [{"name": "ib0", "type": "infiniband", "up": True}]


def test_parse_probe_p2pbandwidthlatencytest_real():
    # NVIDIA/nccl#257: p2pBandwidthLatencyTest on 4x GTX 1080 Ti, two PCIe islands
    text = (
        "Device=0 CAN Access Peer Device=1\nDevice=0 CANNOT Access Peer Device=2\nDevice=0 CANNOT Access Peer Device=3\n"
        "Device=1 CAN Access Peer Device=0\nDevice=1 CANNOT Access Peer Device=2\nDevice=1 CANNOT Access Peer Device=3\n"
        "Device=2 CANNOT Access Peer Device=0\nDevice=2 CANNOT Access Peer Device=1\nDevice=2 CAN Access Peer Device=3\n"
        "Device=3 CANNOT Access Peer Device=0\nDevice=3 CANNOT Access Peer Device=1\nDevice=3 CAN Access Peer Device=2\n"
    )
    pairs = nccl.parse_probe(text)
    assert pairs[("GPU0", "GPU1")]["access"] and pairs[("GPU2", "GPU3")]["access"]
    assert not pairs[("GPU0", "GPU2")]["access"]


def test_parse_probe_own_format():
    pairs = nccl.parse_probe("devices 4\ntesting 0 1\npair 0 1 access=1 copy=ok gbps=24.1\npair 1 0 access=1 copy=mismatch\n"
                             "timeout 0 2\ntesting 0 3\npair 0 3 access=0\ntesting 1 2\n")
    assert pairs[("GPU0", "GPU1")] == {"access": True, "copy": "mismatch"}
    assert pairs[("GPU0", "GPU2")]["copy"] == "timeout"
    assert pairs[("GPU0", "GPU3")] == {"access": False, "copy": None}
    assert pairs[("GPU1", "GPU2")] == {"access": True, "copy": "timeout"}  # started, never finished


def test_parse_gpus_csv_real():
    # the device capture has a header and more columns; the role asks for name,driver_version only
    rows = nccl.parse_gpus_csv("NVIDIA H200, 580.159.04\n")
    assert rows == [{"name": "NVIDIA H200", "driver": "580.159.04"}]


# --- builds ---------------------------------------------------------------------------------------
MADISON = (
    "  libnccl2 | 2.27.7-1+cuda13.0 | http://127.0.0.1:8089/cuda-debian12  Packages\n"
    "  libnccl2 | 2.27.7-1+cuda12.9 | http://127.0.0.1:8089/cuda-debian12  Packages\n"
    "  libnccl2 | 2.27.5-1+cuda12.8 | http://127.0.0.1:8089/cuda-debian12  Packages\n"
    "  libnccl2 | 2.27.5-1+cuda12.6 | http://127.0.0.1:8089/cuda-debian12  Packages\n"
)


@pytest.mark.parametrize(("nccl_version", "cuda", "version", "exact"), [
    ("2.27.5", "12.6", "2.27.5-1+cuda12.6", True),
    ("2.27.5", "12.8", "2.27.5-1+cuda12.8", True),
    ("2.27.5", "12.9", "2.27.5-1+cuda12.8", False),  # newest older minor
    ("2.27.7", "12.6", "2.27.7-1+cuda12.9", False),  # only a newer minor: minor-version compatibility
    ("2.27.7", "13.0", "2.27.7-1+cuda13.0", True),
])
def test_pick_build(nccl_version, cuda, version, exact):
    build = nccl.pick_build(nccl.parse_madison(MADISON), nccl_version, cuda)
    assert (build["version"], build["exact"]) == (version, exact)


def test_pick_build_refuses_another_major():
    build = nccl.pick_build(nccl.parse_madison(MADISON), "2.27.5", "13.0")
    assert "no NCCL 2.27.5 build for CUDA 13.x" in build["error"]
    assert build["builds"] == ["2.27.5-1+cuda12.6", "2.27.5-1+cuda12.8"]


# --- refusals (frozen data) -------------------------------------------------------------------------
def refuse(version, cuda, driver=None, ccs=()):
    return nccl.refusals(version, cuda, FROZEN["nccl"], FROZEN["cuda"]["minor_compat"], driver_version=driver,
                         compute_capabilities=ccs, architectures=FROZEN["architectures"])


def test_refusals_fit():
    assert refuse("2.27.7", "12.6", "580.95.05", ["8.9"]) == []


def test_refusal_cuda_major_not_built():
    msg = refuse("2.27.5", "13.0")
    assert len(msg) == 1 and msg[0].startswith("nccl_version=2.27.5 has no build for CUDA 13.x")


def test_refusal_driver_too_old_for_the_cuda_major():
    msg = refuse("2.27.7", "13.0", driver="550.54.14")
    assert any("needs an NVIDIA driver >= 580.65.06" in m and "550.54.14" in m for m in msg)


def test_refusal_gpu_not_supported_by_the_cuda_major():
    msg = refuse("2.27.7", "13.0", driver="580.95.05", ccs=["6.1"])  # Pascal ends at CUDA 12.9
    assert any("does not support Pascal GPUs" in m for m in msg)


@pytest.mark.parametrize(("version", "cuda", "text"), [
    ("2.27", "12.6", "must be an NCCL release"),
    ("2.27.7", "", "no CUDA toolkit is installed"),
])
def test_refusal_bad_input_names_the_variable(version, cuda, text):
    msg = refuse(version, cuda)
    assert len(msg) == 1 and text in msg[0] and "nccl_version" in msg[0]


def test_unknown_version_is_left_to_the_repository():
    assert refuse("2.28.3", "12.9") == []


# --- nccl.conf ------------------------------------------------------------------------------------------
def test_defaults_debug_and_socket_ifname():
    conf = keys(nccl.decide({"topo": fixture("nvidia-smi/topo-1x-h200-device.txt")}))
    assert conf == {"NCCL_DEBUG": "WARN", "NCCL_SOCKET_IFNAME": "^docker,lo"}


def test_pcie_pair_with_acs_on_falls_back_to_p2p_disable_with_the_reason():
    decision = nccl.decide(PCIE_PAIR_ACS)
    assert keys(decision)["NCCL_P2P_DISABLE"] == "1"
    reason = next(s["reason"] for s in decision["settings"] if s["key"] == "NCCL_P2P_DISABLE")
    assert reason.startswith("fallback:") and "ACS is on" in reason and "GPU0<->GPU1" in reason
    conf = nccl.render_conf(decision["settings"])
    assert "\n# fallback: P2P disabled because ACS is on" in conf and conf.endswith("NCCL_P2P_DISABLE=1\n")


def test_pcie_pair_with_acs_off_keeps_p2p():
    decision = nccl.decide({"topo": PCIE_PAIR_ACS["topo"], "lspci": fixture("nccl/lspci-vvv-acsctl-off.txt")})
    assert "NCCL_P2P_DISABLE" not in keys(decision) and decision["p2p"]["verdict"] == "ok"


def test_nvlink_box_keeps_p2p_on_nvlink_only():
    decision = nccl.decide(NVLINK_BOX)
    assert keys(decision).get("NCCL_P2P_LEVEL") == "NVL" and "NCCL_P2P_DISABLE" not in keys(decision)
    assert decision["p2p"]["broken"] == [("GPU0", "GPU2"), ("GPU1", "GPU2")]


def test_nvswitch_box_ignores_acs():
    decision = nccl.decide(NVSWITCH_BOX)
    assert set(keys(decision)) == {"NCCL_DEBUG", "NCCL_SOCKET_IFNAME"}
    assert any("every GPU pair is linked by NVLink (NV18)" in n for n in decision["notes"])


def test_probe_outranks_acs():
    decision = nccl.decide(dict(PCIE_PAIR_ACS, probe="pair 0 1 access=1 copy=ok gbps=12.0\n"))
    assert "NCCL_P2P_DISABLE" not in keys(decision)
    assert any("probe copied correctly" in n for n in decision["notes"])


def test_failed_probe_disables_p2p_without_acs():
    decision = nccl.decide({"topo": fixture("nvidia-smi/topo-2x-rtx3090-pcie.txt"), "probe": "timeout 0 1\n"})
    reason = next(s["reason"] for s in decision["settings"] if s["key"] == "NCCL_P2P_DISABLE")
    assert "probe: the peer copy GPU0<->GPU1 failed (timeout)" in reason


@pytest.mark.parametrize(("driver", "disabled"), [("525.89.02", True), ("535.86.05", False)])
def test_rtx4090_driver_bug_from_data(driver, disabled):
    inputs = {"topo": fixture("nvidia-smi/topo-2x-rtx3090-pcie.txt"),
              "gpus": "NVIDIA GeForce RTX 4090, %s\nNVIDIA GeForce RTX 4090, %s\n" % (driver, driver)}
    decision = nccl.decide(inputs, issues=FROZEN["nccl_p2p_issues"])
    assert ("NCCL_P2P_DISABLE" in keys(decision)) is disabled
    if disabled:
        assert "known driver bug" in decision["p2p"]["reasons"][0] and "525.105.17" in decision["p2p"]["reasons"][0]


def test_p2p_matrix_not_ok_is_a_note_not_a_setting():
    decision = nccl.decide({"topo": fixture("nccl/topo-2x-rtx5090-phb.txt"), "p2p_matrix": fixture("nccl/topo-p2p-rw-2x-rtx5090-gns.txt")})
    assert "NCCL_P2P_DISABLE" not in keys(decision)
    assert any("GPU0<->GPU1 is GNS" in n for n in decision["notes"])


def test_infiniband_hca_prefers_ib_ports_and_needs_peermem():
    # ibdev2netdev of one host; its ib0 is InfiniBand, ens6/ens14f0 RoCE (ip a of that host not published:
    # the link types come from the IPoIB capture's form, renamed ibp3s0 -> ib0 here)
    ip_link = fixture("nccl/ip-a-ipoib.txt").replace("ibp3s0", "ib0")
    decision = nccl.decide({"ibdev": fixture("nccl/ibdev2netdev-roce-and-ib.txt"), "ip_link": ip_link})
    assert keys(decision)["NCCL_IB_HCA"] == "mlx5_5" and decision["peermem"]
    assert "RoCE/Ethernet port(s) left out: mlx5_2 -> ens6, mlx5_3 -> ens14f0" in decision["settings"][-1]["reason"]


def test_infiniband_without_link_types_takes_every_active_port():
    decision = nccl.decide({"ibdev": fixture("nccl/ibdev2netdev-roce-and-ib.txt")})
    assert keys(decision)["NCCL_IB_HCA"] == "mlx5_2,mlx5_3,mlx5_5"


def test_no_infiniband_no_peermem():
    decision = nccl.decide({"ip_link": fixture("nccl/ip-a-ipoib.txt").split("4: ibp3s0")[0]})
    assert "NCCL_IB_HCA" not in keys(decision) and not decision["peermem"]


@pytest.mark.parametrize(("options", "expected"), [
    ({"debug": "INFO"}, {"NCCL_DEBUG": "INFO"}),
    ({"debug": ""}, {"NCCL_DEBUG": None}),
    ({"socket_ifname": "eth0"}, {"NCCL_SOCKET_IFNAME": "eth0"}),
    ({"p2p": "enabled"}, {"NCCL_P2P_DISABLE": None}),
    ({"p2p": "disabled"}, {"NCCL_P2P_DISABLE": "1"}),
    ({"p2p": "nvlink"}, {"NCCL_P2P_LEVEL": "NVL", "NCCL_P2P_DISABLE": None}),
    ({"ib_hca": "mlx5_0:1"}, {"NCCL_IB_HCA": "mlx5_0:1"}),
    ({"extra": {"NCCL_P2P_DISABLE": None, "NCCL_NVLS_ENABLE": "0"}}, {"NCCL_P2P_DISABLE": None, "NCCL_NVLS_ENABLE": "0"}),
])
def test_every_setting_can_be_overridden(options, expected):
    conf = keys(nccl.decide(PCIE_PAIR_ACS, options=options))
    for key, value in expected.items():
        assert conf.get(key) == value, key


def test_render_conf_is_key_value_with_comments():
    text = nccl.render_conf(nccl.decide(PCIE_PAIR_ACS)["settings"])
    for line in text.splitlines():
        assert line == "" or line.startswith("# ") or (line.startswith("NCCL_") and "=" in line)


def test_user_keys_of_an_existing_conf_are_kept():
    existing = "# mine\nNCCL_DEBUG=INFO\nNCCL_NSOCKS_PERTHREAD=4\nNCCL_P2P_DISABLE=1\n"
    settings = nccl.keep_user_settings(existing, nccl.decide(PCIE_PAIR_ACS, options={"p2p": "enabled"})["settings"])
    conf = {s["key"]: s["value"] for s in settings}
    assert conf["NCCL_DEBUG"] == "WARN" and conf["NCCL_NSOCKS_PERTHREAD"] == "4" and "NCCL_P2P_DISABLE" not in conf
    # a second run keeps the same text (idempotent)
    text = nccl.render_conf(settings)
    again = nccl.keep_user_settings(text, nccl.decide(PCIE_PAIR_ACS, options={"p2p": "enabled"})["settings"])
    assert nccl.render_conf(again) == text


def test_parse_nccl_header():
    # the macros as NVIDIA's nccl.h (and the fixture's) define them
    assert nccl.parse_nccl_header("#define NCCL_MAJOR 2\n#define NCCL_MINOR 27\n#define NCCL_PATCH 7\n#define NCCL_SUFFIX \"\"\n") == "2.27.7"
    assert nccl.parse_nccl_header("") is None
