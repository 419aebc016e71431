"""Issue 49 on recorded real outputs of NVLink5 systems (sources in tests/fixtures/SOURCES.md): the parsers of
dlbox.stack.gpu_facts and of the fitness captures, and the plan they lead to.

- ``nvidia-smi/topo-8x-b200-nv18-simllm.txt``: ``nvidia-smi topo -m`` of a rented 8x B200 HGX host, driver 595.91.07
  (openfabric-systems/simllm): tabs, an empty cell between ``NUMA Affinity`` and ``GPU NUMA ID``.
- ``nvidia-smi/topo-4x-gb200-nv18-k8stestinfra371.txt``: a GB200 compute tray's matrix (NVIDIA/k8s-test-infra#371),
  columns padded with spaces.
- ``nvidia-smi/topo-4x-gb200-single-spaces-opennebula.txt``: a GB200 matrix with one space between some columns
  (OpenNebula's NVIDIA GPU passthrough guide): the parser raised "no topology matrix header" on it.
- ``nvidia-smi/topo-8x-b200-nics-run-together-vllm31594-excerpt.txt`` and
  ``topo-8x-b200-nic-cpu-run-together-vllm20862-excerpt.txt``: B200 HGX matrices with their ConnectX NICs as vLLM's
  collect_env pasted them into vllm-project/vllm#31594 and #20862, two header labels run together (``NIC11NIC12``,
  ``NIC11CPU Affinity``): the parser took a link type ("NODE", "SYS") for the CPU affinity.
- ``lspci/gb200-grace-vfio.lspci-nnkk.txt``: ``lspci -nnkk`` of a GB200 host (OpenNebula's Grace platform guide), PCI
  domains 0008/0009 of a Grace system, the name ``Device`` of a pci.ids that does not know 10de:2941.
- ``doctor/smi-table-8x-b200-595-simllm.txt``: the same B200 host's ``nvidia-smi`` table, for the doctor: on an NVLink5
  HGX board Fabric Manager's NV_WARN_NOTHING_TO_DO is an error, not a PCIe machine's "not needed".
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.dlbox.stack.plugins.module_utils import _gpu_facts as hf
from ansible_collections.dlbox.stack.plugins.plugin_utils import doctor, fitness_captures, stack_resolver
from ansible_collections.dlbox.stack.plugins.plugin_utils.compat_data import load_compat, load_gpu_index
from ansible_collections.dlbox.stack.plugins.plugin_utils.doctor_data import load_doctor_data

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"
B200_TOPO = "nvidia-smi/topo-8x-b200-nv18-simllm.txt"
GB200_TOPO = "nvidia-smi/topo-4x-gb200-nv18-k8stestinfra371.txt"
GB200_TOPO_SINGLE = "nvidia-smi/topo-4x-gb200-single-spaces-opennebula.txt"
B200_NICS_RUN_TOGETHER = "nvidia-smi/topo-8x-b200-nics-run-together-vllm31594-excerpt.txt"
B200_NIC_CPU_RUN_TOGETHER = "nvidia-smi/topo-8x-b200-nic-cpu-run-together-vllm20862-excerpt.txt"
GB200_LSPCI = "lspci/gb200-grace-vfio.lspci-nnkk.txt"
# os-release(5) of Ubuntu 24.04.3 on the GB200 tray of vllm-project/vllm#33543 (tests/fixtures/fabric)
UBUNTU_2404 = 'NAME="Ubuntu"\nVERSION_ID="24.04"\nID=ubuntu\nVERSION_CODENAME=noble\nPRETTY_NAME="Ubuntu 24.04.3 LTS"\n'


def fixture(name):
    return (FIXTURES / name).read_text(encoding="utf-8")


def test_b200_hgx_matrix_with_tab_separated_cells_every_pair_nv18():
    topo = hf.parse_nvidia_smi_topo(fixture(B200_TOPO))
    assert topo["gpus"] == ["GPU%d" % i for i in range(8)] and topo["nvlink"] is True
    assert len(topo["links"]) == 28 and {(link["type"], link["nvlinks"]) for link in topo["links"]} == {("NV18", 18)}
    assert topo["cpu_affinity"]["GPU3"] == "0-47,96-143" and topo["cpu_affinity"]["GPU4"] == "48-95,144-191"
    assert [topo["numa_affinity"]["GPU%d" % i] for i in range(8)] == ["0"] * 4 + ["1"] * 4


@pytest.mark.parametrize("name", [GB200_TOPO, GB200_TOPO_SINGLE])
def test_gb200_tray_matrix_four_gpus_nv18(name):
    topo = hf.parse_nvidia_smi_topo(fixture(name))
    assert topo["gpus"] == topo["devices"] == ["GPU0", "GPU1", "GPU2", "GPU3"]
    assert len(topo["links"]) == 6 and {link["type"] for link in topo["links"]} == {"NV18"}
    assert topo["matrix"]["GPU2"] == {"GPU0": "NV18", "GPU1": "NV18", "GPU2": "X", "GPU3": "NV18"}
    assert topo["cpu_affinity"] == {"GPU0": "0-71", "GPU1": "0-71", "GPU2": "72-143", "GPU3": "72-143"}
    assert topo["numa_affinity"] == {"GPU0": "0", "GPU1": "0", "GPU2": "1", "GPU3": "1"}


@pytest.mark.parametrize(("name", "nics", "affinity", "numa"), [
    (B200_NICS_RUN_TOGETHER, 13, ["0-15"] * 4, ["0"] * 4),
    (B200_NIC_CPU_RUN_TOGETHER, 12, ["0-27,112-139"] * 2 + ["28-55,140-167"] * 2, ["0", "0", "1", "1"]),
])
def test_b200_matrix_with_header_labels_run_together(name, nics, affinity, numa):
    topo = hf.parse_nvidia_smi_topo(fixture(name))
    assert topo["devices"] == ["GPU%d" % i for i in range(8)] + ["NIC%d" % i for i in range(nics)]
    assert [topo["cpu_affinity"]["GPU%d" % i] for i in range(4)] == affinity
    assert [topo["numa_affinity"]["GPU%d" % i] for i in range(4)] == numa
    assert topo["nvlink"] is True and {link["type"] for link in topo["links"]} == {"NV18"}
    last = "NIC%d" % (nics - 1)
    assert [topo["matrix"]["GPU%d" % i][last] for i in range(4)] == (
        ["NODE"] * 4 if nics == 13 else ["SYS"] * 4)


@pytest.mark.parametrize("name", [B200_TOPO, GB200_TOPO, GB200_TOPO_SINGLE, B200_NICS_RUN_TOGETHER])
def test_a_pasted_matrix_is_recognised_as_topo_with_or_without_its_legend(name):
    assert "nvidia-smi-topo" in fitness_captures.recognize(fixture(name))
    host = fitness_captures.host_from_captures([(name, fixture(name))])
    assert host["nvlink"] is True and host["topology"]["gpus"][:4] == ["GPU0", "GPU1", "GPU2", "GPU3"]


def test_gb200_lspci_nnkk_lists_the_two_gpus_not_their_subsystem():
    gpus = hf.parse_lspci_nn(fixture(GB200_LSPCI))
    assert [(g["pci_bus_id"], g["pci_device_id"], g["kind"], g["class_id"]) for g in gpus] == [
        ("0008:01:00.0", "2941", "gpu", "0302"), ("0009:01:00.0", "2941", "gpu", "0302")]
    classified = load_gpu_index().classify(gpus)
    assert {(g["catalog_name"], g["arch"], g["cc"], g["known"]) for g in classified} == {
        ("NVIDIA GB200", "blackwell", "10.0", True)}


@pytest.fixture(scope="module")
def gb200_fresh_tray():
    """A GB200 compute tray before the driver: gpu_facts reads lspci (no nvidia-smi) and the topology it was given."""
    raw = {"machine": "aarch64", "os_release": UBUNTU_2404, "lspci": fixture(GB200_LSPCI),
           "nvidia_smi_topo": fixture(GB200_TOPO)}
    return hf.build_host_facts(raw)


def test_gb200_tray_facts_show_no_nvswitch_device(gb200_fresh_tray):
    facts = gb200_fresh_tray
    assert (facts["arch"], facts["os"]["key"]) == ("aarch64", "ubuntu-24.04")
    assert [g["pci_device_id"] for g in facts["gpus"]] == ["2941", "2941"]
    assert facts["nvswitches"] == [] and facts["nvlink"] is True


def test_gb200_tray_from_its_facts_is_planned_with_imex_and_without_fabric_manager(gb200_fresh_tray):
    index = load_gpu_index()
    host = dict(gb200_fresh_tray, gpus=index.classify(gb200_fresh_tray["gpus"]))
    plan = stack_resolver.resolve(load_compat(), host, {}, gpu_index=index)
    assert plan["ok"], plan["errors"]
    driver = plan["stack"]["driver"]
    assert (driver["method"], driver["profile"], driver["kernel_modules"]) == ("nvidia_repo", "server", "open")
    assert plan["stack"]["fabric_manager"] is None and plan["host"]["nvswitch"] is False
    imex = driver["imex"]
    assert imex["service"] == "nvidia-imex.service" and imex["version"] == "%d.*" % driver["branch"]
    assert any("NVL compute tray" in n and "this host runs IMEX" in n for n in plan["notes"])


# ------------------------------------------------------------------------------------------------ the doctor
DOCTOR_DATA = load_doctor_data(Path(__file__).resolve().parents[2] / "data" / "doctor-frozen.yml")
B200_SMI = "doctor/smi-table-8x-b200-595-simllm.txt"
NOTHING_TO_DO = "doctor/corpus/fm-nothing-to-do-2x4090.txt"  # "Detected Pre-NVL5 system" ... NV_WARN_NOTHING_TO_DO
CUDA_802 = "doctor/torch-error-802-fabricmanager.txt"


def diagnose(*names):
    return doctor.diagnose([(Path(n).name, fixture(n)) for n in names], host="h", data=DOCTOR_DATA)


@pytest.mark.parametrize("other", [NOTHING_TO_DO, CUDA_802])
def test_doctor_on_a_b200_board_calls_fabric_manager_down_with_the_nvlink5_fix(other):
    """Two real captures of different machines read together: an 8x B200 HGX's nvidia-smi, and Fabric Manager's
    NV_WARN_NOTHING_TO_DO (or CUDA error 802). NVIDIA's Fabric Manager user guide: on NVLink5 boards without NVLSM
    Fabric Manager fails exactly so; the doctor told the user to disable it ("fabricmanager-not-needed")."""
    report = diagnose(B200_SMI, other)
    ids = {f["id"] for f in report["findings"]}
    assert "fabricmanager-down" in ids and "fabricmanager-not-needed" not in ids
    found = next(f for f in report["findings"] if f["id"] == "fabricmanager-down")
    assert found["severity"] == "error" and "NVLink5 HGX board" in found["title"]
    assert found["evidence"][0].startswith("NVIDIA B200: an HGX board")
    assert "mlx5_ib, ib_umad" in found["fix"] and "nvlsm" in found["fix"] and "do not disable it" in found["fix"]


def test_doctor_on_a_healthy_b200_table_reports_no_fabric_manager_finding():
    ids = {f["id"] for f in diagnose(B200_SMI)["findings"]}
    assert not ids & {"fabricmanager-down", "fabricmanager-not-needed"}


@pytest.mark.parametrize("names", [[NOTHING_TO_DO], ["doctor/corpus/fm-failed-geforce-rocky8.txt"]])
def test_doctor_on_a_pcie_machine_still_says_not_needed(names):
    """GeForce hosts (NVIDIA/gpu-operator#356 with its nvidia-smi table; data-infra/cube-studio#29): unchanged."""
    ids = {f["id"] for f in diagnose(*names)["findings"]}
    assert "fabricmanager-not-needed" in ids and "fabricmanager-down" not in ids
