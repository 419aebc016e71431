"""The run summary's "NVLink fabric" line (issue 49): Fabric Manager and the packages installed beside it (NSCQ,
libnvsdm, NVLSM on HGX B200/B300; IMEX on GB200/GB300 NVL), from the summary role's dpkg probe. The package names are
NVIDIA's (NVIDIA/gpu-driver-container ubuntu22.04/install.sh) and Ubuntu's branch-named Fabric Manager."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ansible_collections.dlbox.stack.plugins.filter import summary as summary_filter
from ansible_collections.dlbox.stack.plugins.plugin_utils import fabric_state as fs
from ansible_collections.dlbox.stack.plugins.plugin_utils import fleet_summary as fleet
from ansible_collections.dlbox.stack.plugins.plugin_utils import imex_ctl
from ansible_collections.dlbox.stack.plugins.plugin_utils import workstation_summary as ws


def probe(*packages):
    lines = ["## packages"] + ["hi\t%s\t%s" % p for p in packages] + ["## cuda", "## envs", "## driver_loaded", "## reboot_required"]
    return "\n".join(lines) + "\n"


def test_hgx_b200_fabric_line_lists_every_companion():
    text = probe(("nvidia-open-580", "580.95.05-1"), ("nvidia-fabricmanager", "580.95.05-1"), ("libnvidia-nscq", "580.95.05-1"),
                 ("libnvsdm", "580.95.05-1"), ("nvlsm", "2025.06.5-1"), ("libnvidia-compute-580", "580.95.05-1"))
    summary = ws.summarize(probe(), text)
    assert summary["installed"]["fabric"] == ("libnvidia-nscq 580.95.05-1, libnvsdm 580.95.05-1, "
                                              "nvidia-fabricmanager 580.95.05-1, nvlsm 2025.06.5-1")
    assert {"component": "fabric", "before": None, "after": summary["installed"]["fabric"]} in summary["changed"]
    assert any(line.startswith("  NVLink fabric:") and "nvlsm 2025.06.5-1" in line for line in ws.summary_text(summary))


def test_gb200_imex_and_ubuntus_branch_named_fabric_manager():
    assert ws.installed(ws.parse_probe(probe(("nvidia-imex", "580.95.05-1"))))["fabric"] == "nvidia-imex 580.95.05-1"
    ubuntu = ws.parse_probe(probe(("nvidia-fabricmanager-580", "580.95.05-0ubuntu1"), ("libnvidia-common-580", "580.95.05-0ubuntu1")))
    assert ws.installed(ubuntu)["fabric"] == "nvidia-fabricmanager-580 580.95.05-0ubuntu1"


def test_a_host_without_a_fabric_shows_none():
    assert ws.installed(ws.parse_probe(probe(("nvidia-open-580", "580.95.05-1"))))["fabric"] is None


# The fabric's state and IMEX's status (issue 49, "the summary and the fleet summary show the fabric state and IMEX
# status"): what nvidia_driver kept this run (nvidia_driver_fabric: fabric_state.verdict of the wait's last nvidia-smi -q;
# nvidia_driver_imex: imex_ctl.verdict), read from recorded outputs (tests/fixtures/fabric and tests/fixtures/imex,
# SOURCES.md there): eight GPUs of the H100 Completed block, of NVIDIA/gpu-operator#2511's In Progress block; the
# 18-tray nvidia-imex-ctl -N of aws-parallelcluster; the EDITED two-node domain with one tray UNAVAILABLE.
FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"


def _fabric(block):
    text = (FIXTURES / "fabric" / block).read_text(encoding="utf-8")
    return fs.verdict("".join("GPU 00000000:%02X:00.0\n%s" % (bus, text) for bus in (0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB)),
                      "active")


def _imex(word, domain):
    # the recorded domains run 570.172
    return imex_ctl.verdict(word, (FIXTURES / "imex" / domain).read_text(encoding="utf-8") if domain else "", "active", "570.172.08")


def test_a_completed_fabric_is_counted_per_state_and_status():
    assert ws.fabric_line(_fabric("smi-q-fabric-completed-h100.txt")) == "fabric Completed/Success on 8 GPUs"


def test_a_fabric_not_ready_says_so_with_the_reason():
    line = ws.fabric_line(_fabric("smi-q-fabric-in-progress-health-gpuop2511.txt"))
    assert line.startswith("fabric In Progress/N/A on 8 GPUs (not ready: the NVLink fabric is not trained yet: "
                           "GPU 00000000:18:00.0 In Progress")


@pytest.mark.parametrize(("word", "domain", "line"), [
    ("READY", "imex-ctl-N-18-nodes-up-aws-parallelcluster.txt", "IMEX READY, domain UP with 18 node(s)"),
    ("READY", "EDITED-imex-ctl-q-N-s-2-nodes-one-unavailable.txt",
     "IMEX READY, domain DEGRADED with 2 node(s) (IMEX domain DEGRADED: node(s) not READY: #1 10.136.206.48 UNAVAILABLE"),
    ("INITIALIZING", None, "IMEX INITIALIZING: IMEX is INITIALIZING, not READY yet"),
    ("", None, "IMEX without a state: nvidia-imex-ctl -q gave no IMEX state")])
def test_imex_says_ready_and_its_domain_or_the_problem(word, domain, line):
    assert ws.fabric_line(None, _imex(word, domain)).startswith(line)


def test_no_fabric_and_no_imex_no_line():
    summary = ws.summarize(probe(), probe())
    assert summary["fabric"] is None and not any(line.startswith("  fabric / IMEX:") for line in ws.summary_text(summary))


def test_the_summary_and_the_fleet_summary_show_them():
    fabric, imex = _fabric("smi-q-fabric-completed-h100.txt"), _imex("READY", "imex-ctl-N-18-nodes-up-aws-parallelcluster.txt")
    report = summary_filter.workstation_summary(probe(), probe(), host_name="b200-1", fabric=fabric, imex=imex)
    want = "fabric Completed/Success on 8 GPUs; IMEX READY, domain UP with 18 node(s)"
    assert report["fabric"] == want and "  fabric / IMEX:     " + want in report["text"]
    out = fleet.fleet_summary(["b200-1", "ws-1"], {"b200-1": {"summary_report": report},
                                                   "ws-1": {"summary_report": ws.summarize(probe(), probe())}})
    header = out["text"][0].split("  ")
    assert "NVLink fabric / IMEX" in header and header.index("NCCL") < header.index("NVLink fabric / IMEX")
    assert want in out["text"][2] and "| %s |" % want in out["markdown"]
    plain = fleet.fleet_summary(["ws-1"], {"ws-1": {"summary_report": ws.summarize(probe(), probe())}})
    assert "NVLink fabric / IMEX" not in plain["text"][0] and plain["markdown"].count("---|") == len(fleet.COLUMNS)


def test_the_summary_role_hands_the_kept_facts_to_the_summary():
    report = yaml.safe_load((FIXTURES.parents[1] / "roles" / "summary" / "tasks" / "report.yml").read_text(encoding="utf-8"))
    tasks = [t for top in report for t in [top] + list(top.get("block") or [])]
    together = next(t for t in tasks if t.get("name") == "Put the summary together")["ansible.builtin.set_fact"]["summary_report"]
    assert "fabric=nvidia_driver_fabric | default(none)" in together and "imex=nvidia_driver_imex | default(none)" in together
