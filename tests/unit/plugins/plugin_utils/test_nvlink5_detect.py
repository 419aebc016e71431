"""Issue 49 red team M2: the NVLink5 fabric is detected from what the host shows, not from the GPU model only.

Recorded real outputs (tests/fixtures/nvlink5/SOURCES.md): a DGX B200's NVSwitch management port (lspci -vv of its
ConnectX-7 LPF, VPD SMDL=SW_MNG) and a ConnectX-7 network card without it; ``nvidia-smi nvlink -s`` of a GB200 tray
(53.125 GB/s), of 8x H100 (26.562 GB/s) and of a V100 with inactive links; a multi-node NVLink GPU's Fabric section
(fabric/smi-q-fabric-completed-dra626.txt), a real H200 ``-q -x`` whose ``<fabric>`` is N/A, a DGX A100's lspci with
six NVSwitches (class 0680). The decision (plugins/plugin_utils/nvlink5_detect.py) is run alone and through the real
resolver on the shipped data.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.dlbox.stack.plugins.module_utils import _gpu_facts as hf
from ansible_collections.dlbox.stack.plugins.module_utils import _nvlink5_facts as nf
from ansible_collections.dlbox.stack.plugins.plugin_utils import captures, fabric_state, nvlink5_detect, stack_resolver
from ansible_collections.dlbox.stack.plugins.plugin_utils.compat_data import load_compat, load_gpu_index
from ansible_collections.dlbox.stack.plugins.plugin_utils.stack_input import check_hardware

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"
B200_LPF = "nvlink5/lspci-vv-dgxb200-lpf-siderolabs-excerpt.txt"
CX7_NIC = "nvlink5/lspci-vv-cx7-nic-no-smdl-mlx5-vpd-patch-excerpt.txt"
GB200_NVLINK = "nvlink5/nvlink-s-gb200-k8stestinfra371.txt"
H100_NVLINK = "nvlink5/nvlink-s-h100-bottlerocket4418.txt"
V100_NVLINK = "nvlink5/nvlink-s-v100-inactive-azhpcdiag73.txt"
DOMAIN_Q = "fabric/smi-q-fabric-completed-dra626.txt"
H100_Q = "fabric/smi-q-fabric-completed-h100.txt"
H200_XML = "nvidia-smi/h200-driver-580-device.xml"
DGX_A100_LSPCI = "lspci/dgx-a100.lspci-Dnn.txt"


def fixture(name):
    return (FIXTURES / name).read_text(encoding="utf-8")


def vpd_bytes(name):
    """The VPD as sysfs holds it carries the [VA] field's text verbatim; the recorded lspci -vv decodes that field."""
    return fixture(name).encode("utf-8")


# ---------------------------------------------------------------- parsers (module_utils, run on the host)

def test_dgx_b200_management_port_vpd_is_recognised_and_a_cx7_nic_is_not():
    assert nf.is_switch_mgmt_vpd(vpd_bytes(B200_LPF)) is True
    assert nf.is_switch_mgmt_vpd(vpd_bytes(CX7_NIC)) is False
    assert nf.switch_mgmt_ports({"mlx5_0": vpd_bytes(B200_LPF), "mlx5_4": vpd_bytes(CX7_NIC), "mlx5_5": None}) == ["mlx5_0"]
    assert nf.lspci_vv_switch_mgmt_functions(fixture(B200_LPF)) == ["05:00.0"]
    assert nf.lspci_vv_switch_mgmt_functions(fixture(CX7_NIC)) == []


@pytest.mark.parametrize("name, gpus, speeds", [
    (GB200_NVLINK, 2, [53.125, 53.125]),
    (H100_NVLINK, 2, [26.562, 26.562]),
    (V100_NVLINK, 1, [25.781]),
])
def test_nvlink_status_speeds_per_gpu(name, gpus, speeds):
    parsed = nf.parse_nvlink_status(fixture(name))
    assert len(parsed) == gpus and nf.link_speeds(parsed) == speeds


def test_nvlink_status_inactive_links_are_none():
    links = nf.parse_nvlink_status(fixture(V100_NVLINK))[0]["links"]
    assert links == [25.781, 25.781, 25.781, None, 25.781, None]


def test_h200_xml_fabric_na_is_no_evidence():
    smi = hf.parse_nvidia_smi_xml(fixture(H200_XML))
    assert smi["fabric"] == [{"pci_bus_id": "00000000:00:08.0", "state": None, "status": None, "clique_id": None,
                              "cluster_uuid": None}] or all(f["state"] is None for f in smi["fabric"])
    assert not any(nf.in_multinode_domain(f) for f in smi["fabric"])


def test_multinode_domain_from_a_real_fabric_section_and_not_from_h100_or_zero_uuid():
    assert [nf.in_multinode_domain(g) for g in fabric_state.parse_fabric(fixture(DOMAIN_Q))] == [True]
    assert [nf.in_multinode_domain(g) for g in fabric_state.parse_fabric(fixture(H100_Q))] == [False]
    # an H100 that is not multi-node NVLink may report Completed with an all-zero cluster UUID (torchcomms#1385)
    assert nf.in_multinode_domain({"state": "Completed", "cluster_uuid": "00000000-0000-0000-0000-000000000000"}) is False


def test_host_facts_carry_the_evidence():
    facts = hf.build_host_facts({"ib_vpd_read": True, "ib_vpds": {"mlx5_0": vpd_bytes(B200_LPF), "mlx5_4": vpd_bytes(CX7_NIC)},
                                 "nvidia_smi_nvlink": fixture(GB200_NVLINK)})
    assert facts["nvlink_fabric"] == {"switch_mgmt_ports": ["mlx5_0"], "link_speeds_gbps": [53.125, 53.125], "fabric": None}
    assert hf.build_host_facts({})["nvlink_fabric"] == {"switch_mgmt_ports": None, "link_speeds_gbps": None, "fabric": None}


# ---------------------------------------------------------------- the decision (plugin_utils)

def evidence_host(vpd=None, nvlink=None, q=None, lspci=None):
    raw = {"ib_vpd_read": vpd is not None, "ib_vpds": {"mlx5_0": vpd_bytes(vpd)} if vpd else {},
           "nvidia_smi_nvlink": fixture(nvlink) if nvlink else None, "lspci": fixture(lspci) if lspci else None}
    host = hf.build_host_facts(raw)
    if q:
        host["nvlink_fabric"]["fabric"] = fabric_state.parse_fabric(fixture(q))
    return host


def test_b200_management_port_is_detected_hgx():
    decision = nvlink5_detect.decide(evidence_host(vpd=B200_LPF), "hgx")
    assert (decision["kind"], decision["source"], decision["conflicts"]) == ("hgx", "detected", [])
    assert "mlx5_0" in decision["evidence"][0]


def test_model_fallback_when_the_host_shows_nothing():
    decision = nvlink5_detect.decide(evidence_host(), "hgx")
    assert (decision["kind"], decision["source"], decision["evidence"]) == ("hgx", "model", [])
    assert nvlink5_detect.decide(evidence_host(vpd=CX7_NIC), None)["kind"] is None


def test_gb200_tray_detected_from_links_and_domain():
    decision = nvlink5_detect.decide(evidence_host(nvlink=GB200_NVLINK, q=DOMAIN_Q), "nvl")
    assert (decision["kind"], decision["source"], decision["conflicts"]) == ("nvl", "detected", [])
    # the same evidence for a GPU the catalog does not name as NVL (a new part): detected, not from the model
    assert nvlink5_detect.decide(evidence_host(nvlink=GB200_NVLINK, q=DOMAIN_Q), None)["kind"] == "nvl"


def test_nvlink5_links_alone_take_the_system_from_the_model():
    decision = nvlink5_detect.decide(evidence_host(nvlink=GB200_NVLINK), "hgx")
    assert (decision["kind"], decision["source"]) == ("hgx", "detected+model")
    unknown = nvlink5_detect.decide(evidence_host(nvlink=GB200_NVLINK), None)
    assert unknown["kind"] is None and "NVLink5" in unknown["conflicts"][0]


def test_pcie_nvswitches_are_not_nvlink5():
    decision = nvlink5_detect.decide(evidence_host(lspci=DGX_A100_LSPCI, nvlink=H100_NVLINK), None)
    assert (decision["kind"], decision["source"], decision["conflicts"]) == ("pcie", "detected", [])


def test_multinode_h100_domain_is_not_an_nvl_tray():
    decision = nvlink5_detect.decide(evidence_host(nvlink=H100_NVLINK, q=DOMAIN_Q), None)
    assert decision["kind"] is None and decision["conflicts"] == []


@pytest.mark.parametrize("host, model, words", [
    (dict(lspci=DGX_A100_LSPCI), "hgx", "the host shows NVSwitches on PCIe"),
    (dict(nvlink=H100_NVLINK), "hgx", "slower than NVLink5"),
    (dict(vpd=B200_LPF, lspci=DGX_A100_LSPCI), "hgx", "the evidence names"),
    (dict(vpd=B200_LPF, nvlink=H100_NVLINK), "hgx", "slower than NVLink5"),
    (dict(vpd=B200_LPF), "nvl", "the GPU model says"),
])
def test_conflicting_evidence_is_reported_not_guessed(host, model, words):
    decision = nvlink5_detect.decide(evidence_host(**host), model)
    assert decision["kind"] is None and any(words in c for c in decision["conflicts"]), decision
    assert nvlink5_detect.decide(evidence_host(**host), model, asked="hgx")["kind"] == "hgx"


# ---------------------------------------------------------------- through the resolver and the captures

def planned(gpus, **evidence):
    index = load_gpu_index()
    hardware = {"gpus": gpus, "os": "ubuntu-24.04"}
    if evidence.pop("asked", None):
        hardware["fabric"] = "hgx"
    host = index.host_from_hardware(hardware)
    host.update({k: v for k, v in evidence_host(**evidence).items() if k in ("nvlink_fabric", "nvswitches")})
    return stack_resolver.resolve(load_compat(), host, {}, gpu_index=index)


def test_plan_says_the_b200_fabric_was_detected():
    plan = planned(["NVIDIA B200"] * 8, vpd=B200_LPF)
    assert plan["ok"], plan["errors"]
    assert plan["host"]["fabric"]["kind"] == "hgx" and plan["host"]["fabric"]["source"] == "detected"
    assert plan["stack"]["fabric_manager"]["nvlink5"]["own_version"] == ["nvlsm"]


def test_plan_refuses_a_b200_with_pcie_nvswitches_and_names_the_variable():
    plan = planned(["NVIDIA B200"] * 8, lspci=DGX_A100_LSPCI)
    assert not plan["ok"]
    assert any("conflicts" in e and "dlbox_plan_hardware.fabric" in e for e in plan["errors"]), plan["errors"]
    settled = planned(["NVIDIA B200"] * 8, lspci=DGX_A100_LSPCI, asked=True)
    assert settled["ok"], settled["errors"]
    assert settled["host"]["fabric"]["source"] == "asked" and any("settles" in n for n in settled["notes"])


def test_h100_hgx_plan_has_no_nvlink5_and_keeps_fabric_manager():
    plan = planned(["H100 SXM5 80GB"] * 8, lspci=DGX_A100_LSPCI, nvlink=H100_NVLINK)
    assert plan["ok"], plan["errors"]
    assert plan["host"]["fabric"]["kind"] == "pcie" and "nvlink5" not in (plan["stack"]["fabric_manager"] or {})


def test_hardware_fabric_key_is_checked():
    assert check_hardware(load_compat(), {"fabric": "hgx"}) == []
    assert any("fabric" in e for e in check_hardware(load_compat(), {"fabric": "nvlink5"}))


def test_captures_give_the_same_evidence(tmp_path):
    paths = []
    for name in (GB200_NVLINK, B200_LPF, DOMAIN_Q):
        path = tmp_path / Path(name).name
        path.write_text(fixture(name), encoding="utf-8")
        paths.append(str(path))
    hardware = captures.hardware_from_captures({"captures": paths, "gpus": ["NVIDIA GB200"]})
    assert [c["kind"] for c in hardware["captured"]] == ["nvidia-smi-nvlink", "lspci-vv-vpd", "nvidia-smi-q"]
    assert hardware["nvlink_fabric"]["link_speeds_gbps"] == [53.125, 53.125]
    assert hardware["nvlink_fabric"]["switch_mgmt_ports"] == ["05:00.0"]
    assert nf.in_multinode_domain(hardware["nvlink_fabric"]["fabric"][0])


def test_plan_text_says_where_the_fabric_came_from():
    from ansible_collections.dlbox.stack.plugins.filter.stack import plan_text  # pylint: disable=import-outside-toplevel
    detected = "\n".join(plan_text(planned(["NVIDIA B200"] * 8, vpd=B200_LPF)))
    assert "NVLink fabric hgx (from what the host shows)" in detected
    assert "NVLink fabric hgx (from the GPU model)" in "\n".join(plan_text(planned(["NVIDIA B200"] * 8)))


def test_a_part_the_catalog_lacks_is_planned_nvlink5_from_its_management_ports():
    """A Blackwell device id the catalog does not list (lspci names its chip; 10de:29ff is made up for the test): the
    model says nothing of its form, so only the host's management ports make it an NVLink5 HGX board."""
    plan = planned(["GB100 [10de:29ff]"] * 8, vpd=B200_LPF)
    assert plan["ok"], plan["errors"]
    assert (plan["host"]["fabric"]["kind"], plan["host"]["fabric"]["source"]) == ("hgx", "detected")
    assert plan["stack"]["fabric_manager"]["nvlink5"]["own_version"] == ["nvlsm"]
    assert any("the GPU model alone would not have said so" in n for n in plan["notes"])
    assert "nvlink5" not in (planned(["GB100 [10de:29ff]"] * 8)["stack"].get("fabric_manager") or {})
