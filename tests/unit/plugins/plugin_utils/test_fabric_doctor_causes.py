# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The doctor on what users paste when Fabric Manager, NVLSM or IMEX fail on Blackwell systems (issue 49). Real
outputs, sources in tests/fixtures/fabric/SOURCES.md and tests/fixtures/imex/SOURCES.md:

- Fabric Manager of another version than the driver (NVIDIA/gpu-driver-container#735, and a journal as
  akash-network/website#632 quotes it): the doctor said "not needed, disable it" for the journal.
- NVLSM without ib_umad (siderolabs/docs#581): nothing was found.
- IMEX not ready (linux-system-roles/hpc#85, NVIDIA/aicr#2641, nvidia-imex-ctl -N): nothing was found.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.dlbox.stack.plugins.plugin_utils import doctor
from ansible_collections.dlbox.stack.plugins.plugin_utils.compat_data import load_compat
from ansible_collections.dlbox.stack.plugins.plugin_utils.doctor_data import load_doctor_data

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"
DATA = load_doctor_data(Path(__file__).resolve().parents[2] / "data" / "doctor-frozen.yml")
B200_SMI = "doctor/smi-table-8x-b200-595-simllm.txt"
FM_735 = "fabric/fm-version-mismatch-gpudrivercontainer735.txt"
FM_JOURNAL = "fabric/fm-version-mismatch-journal-akash.txt"
UMAD = "fabric/nvlsm-no-ib-umad-siderolabs-docs581.txt"
IMEX_AGENT = "imex/healthagent-imex-degraded-lsr-hpc85.txt"
IMEX_DCGM = "imex/dcgm-imex-not-ready-aicr2641.txt"
IMEX_UP = "imex/imex-ctl-N-18-nodes-up-aws-parallelcluster.txt"
IMEX_DEGRADED = "imex/EDITED-imex-ctl-q-N-s-2-nodes-one-unavailable.txt"


def diagnose(*names):
    return doctor.diagnose([(Path(n).name, (FIXTURES / n).read_text(encoding="utf-8")) for n in names], host="h",
                           data=DATA)


def findings(report, rule_id):
    return [f for f in report["findings"] if f["id"] == rule_id]


@pytest.mark.parametrize(("names", "fm", "driver"), [([FM_735], "590.48.01", "580.126.09"),
                                                     ([FM_JOURNAL], "550.127.05", "550.120"),
                                                     ([B200_SMI, FM_735], "590.48.01", "580.126.09")])
def test_fabric_manager_of_another_version_is_named_never_not_needed(names, fm, driver):
    report = diagnose(*names)
    ids = {f["id"] for f in report["findings"]}
    assert "fabricmanager-not-needed" not in ids and "fabricmanager-down" not in ids
    found = findings(report, "fabricmanager-version-mismatch")
    assert len(found) == 1 and found[0]["severity"] == "error"
    assert found[0]["title"].startswith("Fabric Manager %s refuses the loaded driver %s" % (fm, driver))
    assert "nvidia-fabricmanager=%s-1" % driver in found[0]["fix"] and "apt-mark hold" in found[0]["fix"]
    assert "don't match with driver version %s" % driver in found[0]["evidence"][0]


@pytest.mark.parametrize("names", [[UMAD], [B200_SMI, UMAD]])
def test_nvlsm_without_ib_umad_names_the_modules_from_the_data(names):
    found = findings(diagnose(*names), "nvlsm-ib-umad-missing")
    modules = load_compat()["fabric_manager"]["nvlink5"]["hgx"]["kernel_modules"]
    assert len(found) == 1 and found[0]["severity"] == "error"
    assert "modprobe -a %s" % " ".join(modules) in found[0]["fix"] and "In Progress" in found[0]["fix"]
    assert found[0]["evidence"][0].endswith("is ib_umad module loaded?")


@pytest.mark.parametrize(("name", "words"), [(IMEX_AGENT, "IMEX domain status is DEGRADED"),
                                             (IMEX_DCGM, "IMEX daemon status is -3 (not READY)"),
                                             (IMEX_DEGRADED, "Domain State: DEGRADED")])
def test_imex_not_ready_as_users_paste_it(name, words):
    """The third is the EDITED degraded nvidia-imex-ctl output (tests/fixtures/imex/SOURCES.md)."""
    found = findings(diagnose(name), "imex-not-ready")
    assert len(found) == 1 and any(words in line for line in found[0]["evidence"])
    assert "nvidia-imex-ctl -q" in found[0]["fix"] and "exactly the driver's version" in found[0]["fix"]
    assert "aicr#2641" in found[0]["fix"]


def test_a_wrong_node_list_is_said_first():
    """IMEX's own log line (kubernetes-sigs/dra-driver-nvidia-gpu#289, as its description quotes it)."""
    text = ("[Mar 21 2025 20:45:38] [ERROR] [tid 39] No matching network interface found for any IP addresses in the "
            "node configuration file ...")
    found = [f for f in doctor.diagnose([("imex.log", text)], host="h", data=DATA)["findings"] if f["id"] == "imex-not-ready"]
    assert found and found[0]["fix"].startswith("IMEX's node list is wrong")


def test_a_healthy_imex_domain_is_checked_and_quiet():
    """Real: 18 GB200 trays, every node READY, Domain State UP."""
    report = diagnose(IMEX_UP)
    assert not findings(report, "imex-not-ready") and "imex-not-ready" in report["checked"]
    assert not [c for c in report["contradicted"] if c["id"] == "imex-not-ready"]
