# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GPU catalog: NVIDIA's own device list, pci.ids chips and the hand-kept names, looked up and planned.

The coverage tests run on the recorded copies under tests/fixtures/catalog/ (NVIDIA's supported-gpus.json of
595.99.02 and 580.178.04 from Ubuntu's archive, the 10de section of pci.ids 2026.10.24), built into a catalog
by tools/gpu_catalog.py, with the chip table of data/compat.yml. The plan tests use the shipped data.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
import yaml

from ansible_collections.dlbox.stack.plugins.filter.stack import resolve_stack
from ansible_collections.dlbox.stack.plugins.plugin_utils import stack_resolver
from ansible_collections.dlbox.stack.plugins.plugin_utils.compat_data import load_compat, load_gpu_index
from ansible_collections.dlbox.stack.plugins.plugin_utils.gpu_catalog import GpuIndex, base_chip, chip_table, chip_word, pci_id, tokens

ROOT = Path(__file__).resolve().parents[4]
# data/*.yml read as the collection reads them (plugin_utils.compat_data, fitness): libyaml where PyYAML has it
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
FIXTURES = ROOT / "tests" / "fixtures" / "catalog"
LIST_595 = FIXTURES / "supported-gpus-595.99.02.json"
LIST_580 = FIXTURES / "supported-gpus-580.178.04.json"
MODERN = ("maxwell", "pascal", "volta", "turing", "ampere", "ada", "hopper", "blackwell")


def _tool():
    spec = importlib.util.spec_from_file_location("gpu_catalog_tool", ROOT / "tools" / "gpu_catalog.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def recorded_index():
    """A GpuIndex over a catalog built from the recorded copies only (no network, no shipped catalog)."""
    tool = _tool()
    lists = {595: tool.parse_supported_gpus(LIST_595.read_text()), 580: tool.parse_supported_gpus(LIST_580.read_text())}
    _version, _date, section = tool.nvidia_pci_section((FIXTURES / "pci-ids-10de.txt").read_text())
    data = load_compat()
    catalog, _summary = tool.build_catalog(lists, tool.parse_pci_devices(section), data["gpu_chips"], {}, "2026-11-30")
    return GpuIndex(data, catalog)


@pytest.fixture(scope="module")
def nvidia_595():
    return json.loads(LIST_595.read_text())["chips"]


# ---------------------------------------------------------------- NVIDIA's whole list


def test_every_maxwell_or_newer_entry_of_nvidias_595_list_gets_an_architecture_and_cc(recorded_index, nvidia_595):
    """Every entry 595 supports (no legacy branch) or leaves to the 580 legacy branch: Maxwell to Blackwell."""
    modern = [e for e in nvidia_595 if e.get("legacybranch") in (None, "580.xx")]
    assert len(modern) == 1136  # 831 current + 305 "580.xx" entries of the recorded 595.99.02 list
    unplaced = []
    for entry in modern:
        dev = entry["devid"][2:].lower()
        found = recorded_index.lookup(dev)
        if not found or found["arch"] not in MODERN or not found["cc"]:
            unplaced.append((dev, entry["name"], found and found["arch"]))
            continue
        # the name nvidia-smi prints is found too (exactly; a name shared by ids of different CC lists them all)
        by_name = recorded_index.candidates(entry["name"])
        assert any(c["arch"] == found["arch"] and c["cc"] == found["cc"] for c in by_name), entry
    assert not unplaced
    # the 580.xx entries are exactly Maxwell, Pascal and Volta; the current ones Turing and newer
    legacy = {recorded_index.lookup(e["devid"][2:].lower())["arch"] for e in modern if e.get("legacybranch")}
    current = {recorded_index.lookup(e["devid"][2:].lower())["arch"] for e in modern if not e.get("legacybranch")}
    assert legacy == {"maxwell", "pascal", "volta"}
    assert current == {"turing", "ampere", "ada", "hopper", "blackwell"}


def test_every_kepler_entry_is_kepler(recorded_index, nvidia_595):
    kepler = [e for e in nvidia_595 if e.get("legacybranch") == "470.xx"]
    assert len(kepler) == 151
    archs = {(e["devid"], recorded_index.lookup(e["devid"][2:].lower())["arch"]) for e in kepler}
    assert {arch for _dev, arch in archs} == {"kepler"}


def test_the_kernelopen_quirk_of_595_is_recorded_but_the_architecture_rules_decide(recorded_index):
    """595's list marks Maxwell..Volta (legacy 580.xx) with kernelopen; 580's list does not. Open modules
    need Turing or newer, so a V100 is still planned with the proprietary modules."""
    v100 = recorded_index.lookup("1db1")
    assert v100["legacy"] == "580.xx" and v100["kernelopen"] is True
    list_580 = {e["devid"]: e for e in json.loads(LIST_580.read_text())["chips"] if not e.get("subdevid")}
    assert "kernelopen" not in list_580["0x1DB1"]["features"]
    plan = resolve_stack({}, {}, hardware={"gpus": ["1db1"], "os": "ubuntu-22.04"})
    assert plan["ok"] and plan["stack"]["driver"]["kernel_modules"] == "proprietary"


def test_the_shipped_catalog_holds_what_the_recorded_lists_give():
    index = load_gpu_index()
    for entry in json.loads(LIST_595.read_text())["chips"]:
        if entry.get("legacybranch") in (None, "580.xx", "470.xx"):
            assert index.lookup(entry["devid"][2:].lower())["arch"], entry


# ---------------------------------------------------------------- lookups


@pytest.mark.parametrize("query", ["2330", "0x2330", "10de:2330", "10DE:2330", "0X2330", "[10de:2330]"])
def test_pci_id_forms(query):
    assert load_gpu_index().lookup(query)["name"] == "NVIDIA H100 80GB HBM3"


@pytest.mark.parametrize(
    "query, name, pci, cc",
    [
        ("NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3", "2330", "9.0"),
        ("NVIDIA H100 80GB HBM3 MIG 1g.10gb", "NVIDIA H100 80GB HBM3", "2330", "9.0"),
        ("NVIDIA A100-SXM4-40GB MIG 1g.5gb", "NVIDIA A100-SXM4-40GB", "20b0", "8.0"),
        ("Tesla V100-SXM2-16GB", "Tesla V100-SXM2-16GB", "1db1", "7.0"),  # older drivers: no NVIDIA prefix
        ("NVIDIA Tesla V100-SXM2-16GB", "Tesla V100-SXM2-16GB", "1db1", "7.0"),
        ("Quadro RTX 6000", "Quadro RTX 6000", "1e30", "7.5"),
        ("NVIDIA A2", "NVIDIA A2", "25b6", "8.6"),  # a sub-system name of 25b6 (A2 and A16 share the device id)
        ("H100 SXM", "NVIDIA H100 80GB HBM3", "2330", "9.0"),  # hand-kept short name
        ("RTX 4090", "NVIDIA GeForce RTX 4090", "2684", "8.9"),
        ("AD102 [GeForce RTX 4090]", "NVIDIA GeForce RTX 4090", "2684", "8.9"),  # lspci label
    ],
)
def test_names(query, name, pci, cc):
    found = load_gpu_index().lookup(query)
    assert (found["name"], found["pci_id"], found["cc"]) == (name, pci, cc)


def test_hand_kept_facts_join_the_catalog_record():
    found = load_gpu_index().lookup("2330")
    assert (found["memory_gb"], found["form"], found["chip"]) == (80, "sxm", "GH100")
    assert "H100 SXM" in found["aliases"]


def test_ambiguous_short_name_lists_the_choices():
    index = load_gpu_index()
    found = index.candidates("4090")
    assert sorted(e["name"] for e in found) == [
        "NVIDIA GeForce RTX 4090", "NVIDIA GeForce RTX 4090 D", "NVIDIA GeForce RTX 4090 Laptop GPU"]
    message = index.unknown_message("4090", found)
    assert "ambiguous" in message and "NVIDIA GeForce RTX 4090 Laptop GPU (10de:2717)" in message


def test_one_name_on_chips_of_different_cc_is_ambiguous():
    found = load_gpu_index().candidates("GeForce GT 730")  # Fermi GF108 (0f02) and Kepler GK208 (1287)
    assert {e["pci_id"] for e in found} >= {"0f02", "1287"}


def test_unknown_name_suggests_close_ones():
    index = load_gpu_index()
    assert index.candidates("RTX 9999") == []
    assert "Unknown GPU 'RTX 9999'" in index.unknown_message("RTX 9999", [])


def test_text_helpers():
    assert tokens("NVIDIA GeForce RTX 4090") == ["rtx", "4090"]
    assert tokens("NVIDIA H100 80GB HBM3 MIG 1g.10gb") == ["h100", "80gb", "hbm3"]
    assert pci_id("10de:2B85") == "2b85" and pci_id("RTX 4090") is None
    assert chip_word("AD102GL [RTX 6000 Ada Generation]") == "AD102GL"
    assert chip_word("GB6-256(N22W-ES-A1)") is None
    table = chip_table(load_compat()["gpu_chips"])
    assert base_chip("GK110BGL", table) == "GK110B"
    assert base_chip("GA107BM", table) == "GA107"
    assert base_chip("GB20B", table) == "GB20B"
    assert base_chip("GB299", table) is None


# ---------------------------------------------------------------- unknown device ids


def test_unknown_device_id_whose_chip_pci_ids_names_gets_its_architecture_with_a_warning():
    index = load_gpu_index()
    (gpu,) = index.classify([{"pci_device_id": "2fff", "name": "GB203 [GeForce RTX 5099]", "pci_name": "GB203 [GeForce RTX 5099]"}])
    assert (gpu["known"], gpu["arch"], gpu["cc"]) == (False, "blackwell", "12.0")
    plan = resolve_stack({"os": {"key": "ubuntu-24.04"}, "arch": "x86_64", "gpus": [
        {"pci_device_id": "2fff", "name": "GB203 [GeForce RTX 5099]", "pci_name": "GB203 [GeForce RTX 5099]"}]})
    assert plan["ok"], plan["errors"]
    assert plan["stack"]["driver"]["kernel_modules"] == "open"  # Blackwell: open modules required
    assert any("its chip GB203 (named by pci.ids) makes it Blackwell, CC 12.0" in w for w in plan["warnings"])


def test_unknown_device_id_with_an_unknown_chip_is_refused():
    plan = resolve_stack({"os": {"key": "ubuntu-24.04"}, "arch": "x86_64", "gpus": [
        {"pci_device_id": "3fff", "name": "Device 3fff", "pci_name": "Device 3fff"}]})
    assert not plan["ok"]
    assert "compute capability is unknown" in plan["errors"][0]


def test_pre_kepler_gpu_is_refused_naming_its_legacy_driver():
    plan = resolve_stack({}, {}, hardware={"gpus": ["06c0"], "os": "ubuntu-22.04"})  # GeForce GTX 480, Fermi
    assert not plan["ok"]
    assert "legacy 390.xx drivers" in " ".join(plan["errors"])


def test_without_a_catalog_the_hand_kept_entries_still_plan():
    data = load_compat()
    index = GpuIndex(data)  # e.g. a frozen test data file: no generated catalog
    host = index.host_from_hardware({"gpus": ["Jetson AGX Orin"], "l4t": "36.4.3"})
    assert host["jetson"]["model"] == "Jetson AGX Orin"
    assert index.lookup("20b1")["arch"] == "ampere"  # an id NVIDIA's list lacks keeps its hand-kept arch/cc
    assert index.lookup("2330")["arch"] is None  # arch/cc of listed ids come from the catalog's chips only


# ---------------------------------------------------------------- plans, Kepler to Blackwell

# (query, expected: "ok" with architecture/CC/driver branch/PyTorch, or "refused" with a phrase of the rule)
GENERATIONS = [
    # Kepler: planned on R470 with no framework build, or refused where its CC is below CUDA 11's floor
    ("Tesla K80", "Kepler", "3.7", 470, None),
    ("102d", "Kepler", "3.7", 470, None),
    ("Quadro K6000", "Kepler", "3.5", 470, None),
    ("GeForce GTX 680", "Kepler", "3.0", "its last CUDA is 10.2", None),
    ("1180", "Kepler", "3.0", "its last CUDA is 10.2", None),
    # Maxwell / Pascal / Volta: legacy R580, proprietary modules, CUDA 12.x
    ("NVIDIA GeForce GTX 980", "Maxwell", "5.2", 580, "cu126"),
    ("13c0", "Maxwell", "5.2", 580, "cu126"),
    ("NVIDIA GeForce GTX 960M", "Maxwell", "5.0", 580, "cu126"),  # laptop
    ("Quadro M4000", "Maxwell", "5.2", 580, "cu126"),  # workstation
    ("NVIDIA GeForce GTX 1070", "Pascal", "6.1", 580, "cu126"),
    ("1b81", "Pascal", "6.1", 580, "cu126"),
    ("Quadro P4000", "Pascal", "6.1", 580, "cu126"),
    ("Tesla V100-SXM2-16GB", "Volta", "7.0", 580, "cu126"),
    ("1db1", "Volta", "7.0", 580, "cu126"),
    ("Quadro GV100", "Volta", "7.0", 580, "cu126"),
    # Turing and newer: current branch, open modules
    ("Quadro RTX 6000", "Turing", "7.5", "current", "cu1"),
    ("1e07", "Turing", "7.5", "current", "cu1"),
    ("1f11", "Turing", "7.5", "current", "cu1"),  # RTX 2060 mobile
    ("NVIDIA GeForce RTX 3080", "Ampere", "8.6", "current", "cu1"),
    ("2206", "Ampere", "8.6", "current", "cu1"),
    ("NVIDIA A2", "Ampere", "8.6", "current", "cu1"),
    ("NVIDIA A100-SXM4-40GB MIG 1g.5gb", "Ampere", "8.0", "current", "cu1"),
    ("NVIDIA GeForce RTX 3070 Laptop GPU", "Ampere", "8.6", "current", "cu1"),
    ("NVIDIA RTX A6000", "Ampere", "8.6", "current", "cu1"),
    ("NVIDIA GeForce RTX 4070", "Ada Lovelace", "8.9", "current", "cu1"),
    ("2786", "Ada Lovelace", "8.9", "current", "cu1"),
    ("NVIDIA GeForce RTX 4090 Laptop GPU", "Ada Lovelace", "8.9", "current", "cu1"),
    ("NVIDIA RTX 6000 Ada Generation", "Ada Lovelace", "8.9", "current", "cu1"),
    ("NVIDIA H100 80GB HBM3", "Hopper", "9.0", "current", "cu1"),
    ("NVIDIA H100 80GB HBM3 MIG 1g.10gb", "Hopper", "9.0", "current", "cu1"),
    ("2324", "Hopper", "9.0", "current", "cu1"),  # H800
    ("2941", "Blackwell", "10.0", "current", "cu1"),  # GB200
    ("NVIDIA GeForce RTX 5090", "Blackwell", "12.0", "current", "cu1"),
    ("NVIDIA GeForce RTX 5080 Laptop GPU", "Blackwell", "12.0", "current", "cu1"),
    ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "Blackwell", "12.0", "current", "cu1"),
]


@pytest.mark.parametrize("query, architecture, cc, driver, pytorch", GENERATIONS)
def test_plan_by_name_and_pci_id_for_each_generation(query, architecture, cc, driver, pytorch):
    plan = resolve_stack({}, {}, hardware={"gpus": [query], "os": "ubuntu-22.04"})
    (gpu,) = plan["host"]["gpus"]
    assert (gpu["architecture"], gpu["cc"]) == (architecture, cc)
    if not query[0].isdigit():  # asked by name: the plan shows NVIDIA's name for it (MIG suffix dropped)
        assert gpu["name"] == query.split(" MIG ")[0] or query.replace("NVIDIA ", "") in gpu["name"], gpu["name"]
    if isinstance(driver, str) and driver != "current":  # refused by a rule, which the error names
        assert not plan["ok"] and any(driver in e for e in plan["errors"]), plan["errors"]
        return
    assert plan["ok"], plan["errors"]
    stack = plan["stack"]
    if driver == "current":  # any branch the resolver prefers (not capped by the GPU), open modules
        assert stack["driver"]["branch"] >= 580 and stack["driver"]["kernel_modules"] == "open"
    else:  # capped at the GPU's last branch, proprietary modules only
        assert (stack["driver"]["branch"], stack["driver"]["kernel_modules"]) == (driver, "proprietary")
    if pytorch is None:  # Kepler: no framework build fits
        assert stack["pytorch"] is None and stack["tensorflow"] is None
        assert any("No PyTorch CUDA build" in w for w in plan["warnings"])
    else:
        assert stack["pytorch"]["variant"].startswith(pytorch)


def test_ambiguous_4090_is_refused_listing_the_choices():
    plan = resolve_stack({}, {}, hardware={"gpus": ["4090"], "os": "ubuntu-22.04"})
    assert not plan["ok"]
    assert plan["errors"] == [
        "GPU '4090' is ambiguous: it matches NVIDIA GeForce RTX 4090 (10de:2684), NVIDIA GeForce RTX 4090 D (10de:2685), "
        "NVIDIA GeForce RTX 4090 Laptop GPU (10de:2717); name one of them or give its PCI device id."]


def test_resolve_takes_the_index_explicitly():
    data = load_compat()
    index = load_gpu_index()
    host = index.host_from_hardware({"gpus": ["NVIDIA GeForce RTX 3080"], "os": "ubuntu-22.04"})
    with_index = stack_resolver.resolve(data, host, {}, gpu_index=index)
    without = stack_resolver.resolve(data, host, {})  # host_from_hardware's GPUs come classified
    assert with_index["stack"] == without["stack"]
    assert with_index["host"]["gpus"][0]["name"] == "NVIDIA GeForce RTX 3080"


def test_catalog_file_is_dated_and_sourced():
    catalog = yaml.load((ROOT / "data" / "gpu_catalog.yml").read_text(), Loader=LOADER)  # noqa: S506 - a SafeLoader
    assert catalog["date"]
    (newest, legacy) = catalog["sources"]["supported_gpus"]
    assert newest["package"].startswith("nvidia-kernel-common-") and newest["sha256"] and newest["entries"] > 2000
    assert int(newest["branch"]) > int(legacy["branch"])
    assert catalog["sources"]["pci_ids"]["database_version"]
