"""The run summary's "NVLink fabric" line (issue 49): Fabric Manager and the packages installed beside it (NSCQ,
libnvsdm, NVLSM on HGX B200/B300; IMEX on GB200/GB300 NVL), from the summary role's dpkg probe. The package names are
NVIDIA's (NVIDIA/gpu-driver-container ubuntu22.04/install.sh) and Ubuntu's branch-named Fabric Manager."""

from __future__ import annotations

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
