# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""plugin_utils/acceptance_allreduce.py: the all-reduce judged against its topology's floor.

Topologies are real `nvidia-smi topo -m` captures (tests/fixtures/SOURCES.md): 8x H100 NV18 (HAMi's test data),
4x H100 NV6 with NICs (NVIDIA/nccl#1617), 2x RTX 3090 over PHB (noonghunna/club-3090#922). Floors are read from the
real data/acceptance.yml; the expected floors are computed from that data here, not typed in, so a data refresh
does not rewrite the tests.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from ansible_collections.dlbox.stack.plugins.plugin_utils import acceptance_allreduce as allreduce

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "nvidia-smi"
DATA = allreduce.load_data()
PER_LINK = DATA["allreduce_floors"]["nvlink"]["gb_s_per_link"]
SHARE = DATA["allreduce_floors"]["pcie"]["share_of_link"]
LANE = DATA["pcie_gb_s_per_lane"]["value"]


def topo(name):
    return (FIXTURES / name).read_text()


def measured(busbw, topology, ranks, gpus=None, backend="nccl", **extra):
    result = {"figures": {"allreduce_busbw_gb_s": busbw, "allreduce_ranks": ranks, "allreduce_backend": backend},
              "topology": topology, "gpus": gpus or [], "skipped": {}, "errors": {}}
    result.update(extra)
    return result


def gen4x16(count):
    # nvidia-smi's maxima (the lower of GPU and slot) and the card's own: gen.gpumax and sysfs max_link_width
    return [{"index": i, "pcie": {"gen_max": 4, "width_max": 16, "gen_gpumax": 4, "width_gpumax": 16}} for i in range(count)]


@pytest.mark.parametrize("fixture, links, ranks", [
    ("topo-8x-h100-nv18.txt", 18, 8),
    ("topo-4x-h100-nv6-nics.txt", 6, 4),
])
def test_nvlink_floor_is_per_link_of_the_narrowest_pair(fixture, links, ranks):
    floor = round(PER_LINK * links, 1)
    good = allreduce.judge(measured(floor * 1.01, topo(fixture), ranks), DATA)
    assert good["status"] == "pass" and good["reference"] == floor
    assert "every GPU pair on NVLink, fewest NV%d" % links in good["reason"]
    assert "busbw = algbw x 2(n-1)/n" in good["reason"] and good["source"]
    bad = allreduce.judge(measured(floor * 0.99, topo(fixture), ranks), DATA)
    assert bad["status"] == "fail"


def test_one_pair_with_fewer_links_sets_the_floor():
    # GPU2-GPU3 with 2 links instead of 6 (both cells of the symmetric matrix)
    text = topo("topo-4x-h100-nv6-nics.txt").replace("GPU3    NV6     NV6     NV6 ", "GPU3    NV6     NV6     NV2 ", 1)
    text = text.replace("GPU2    NV6     NV6      X      NV6 ", "GPU2    NV6     NV6      X      NV2 ", 1)
    row = allreduce.judge(measured(100.0, text, 4), DATA)
    assert row["reference"] == round(PER_LINK * 2, 1) and "fewest NV2 (GPU2-GPU3)" in row["reason"]


def test_pcie_floor_is_a_share_of_the_narrowest_link():
    floor = round(SHARE * LANE[4] * 16, 1)
    row = allreduce.judge(measured(floor + 0.5, topo("topo-2x-rtx3090-pcie.txt"), 2, gen4x16(2)), DATA)
    assert row["status"] == "pass" and row["reference"] == floor
    assert "GPU0-GPU1 over PHB (PCIe)" in row["reason"] and "Gen4 x16" in row["reason"]
    assert allreduce.judge(measured(floor - 0.5, topo("topo-2x-rtx3090-pcie.txt"), 2, gen4x16(2)), DATA)["status"] == "fail"
    narrow = gen4x16(2)
    narrow[1]["pcie"] = {"gen_max": 3, "width_max": 8, "gen_gpumax": 3, "width_gpumax": 8}   # a Gen3 x8 card
    row = allreduce.judge(measured(floor, topo("topo-2x-rtx3090-pcie.txt"), 2, narrow), DATA)
    assert row["reference"] == round(SHARE * LANE[3] * 8, 1) and "Gen3 x8" in row["reason"]


def test_a_card_in_an_x4_slot_fails_against_its_own_link():
    # 4x L40S (10de:26b9, Gen4 x16 cards) over SYS, GPU 3 in an x4 slot (nvidia-smi width.max 4: the lower of card and
    # slot): busbw 1.5 GB/s. The floor comes from the cards' own x16 (their reference), not from GPU 3's x4 slot,
    # which would give 0.15 x 7.9 = 1.2 GB/s and pass the very fault it is there to find (data/acceptance.yml).
    text = "\tGPU0\tGPU1\tGPU2\tGPU3\tCPU Affinity\tNUMA Affinity\n" + "".join(
        "GPU%d\t%s\t0-31\t0\n" % (i, "\t".join(" X " if i == j else "SYS" for j in range(4))) for i in range(4)) + (
        "\nLegend:\n\n  X    = Self\n  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA "
        "nodes (e.g., QPI/UPI)\n")
    gpus = [{"index": i, "name": "NVIDIA L40S", "pci_device_id": "0x26B910DE",
             "pcie": {"gen_max": 4, "width_max": 4 if i == 3 else 16}} for i in range(4)]
    row = allreduce.judge(measured(1.5, text, 4, gpus), DATA)
    assert (row["status"], row["reference"]) == ("fail", round(SHARE * LANE[4] * 16, 1)), row
    # without the device id (and no gpumax/sysfs width) the cards' own link is unknown: no floor, not the slot's
    for gpu in gpus:
        del gpu["pci_device_id"]
        gpu["name"] = "NVIDIA Unknown"
    assert allreduce.judge(measured(1.5, text, 4, gpus), DATA)["status"] == "finding"


def test_a_pcie_pair_among_nvlink_pairs_makes_it_pcie():
    text = topo("topo-4x-h100-nv6-nics.txt").replace("GPU0     X      NV6 ", "GPU0     X      SYS ", 1)
    text = text.replace("GPU1    NV6 ", "GPU1    SYS ", 1)
    row = allreduce.judge(measured(20.0, text, 4, gen4x16(4)), DATA)
    assert row["reference"] == round(SHARE * LANE[4] * 16, 1) and "GPU0-GPU1 over SYS (PCIe)" in row["reason"]


@pytest.mark.parametrize("case, status, words", [
    (measured(None, None, 2, errors={"allreduce": "RuntimeError: all-reduce timed out after 180 s"}), "fail",
     "timed out after 180 s"),
    (measured(None, None, 1, skipped={"allreduce": "one GPU: nothing to all-reduce across"}), "skipped", "one GPU"),
    (measured(0.5, None, 2, backend="gloo"), "finding", "measured on the CPU (gloo)"),
    (measured(50.0, None, 2, topology_error="NVML: Unknown Error"), "finding", "NVML: Unknown Error"),
    (measured(50.0, topo("topo-1x-h200-device.txt"), 2), "finding", "topology is unknown"),
    (measured(50.0, topo("topo-2x-rtx3090-pcie.txt"), 2), "finding", "PCIe link is unknown"),
])
def test_what_cannot_be_judged_says_why(case, status, words):
    row = allreduce.judge(case, DATA)
    assert row["status"] == status and words in row["reason"], row


def test_apply_replaces_the_row_and_recomputes_the_verdict():
    report = {"host": "h", "results": [{"id": "h2d", "status": "pass"},
                                       {"id": "allreduce", "status": "pass", "reason": "measured; no vendor reference"}],
              "failed": [], "ok": True}
    out = allreduce.apply(copy.deepcopy(report), measured(1.0, topo("topo-8x-h100-nv18.txt"), 8), DATA)
    assert out["failed"] == ["allreduce"] and out["ok"] is False
    assert [r["id"] for r in out["results"]] == ["h2d", "allreduce"]
    out = allreduce.apply(copy.deepcopy(report), measured(500.0, topo("topo-8x-h100-nv18.txt"), 8), DATA)
    assert out["ok"] is True and out["results"][1]["status"] == "pass"


@pytest.mark.parametrize("change, words", [
    (lambda d: d.pop("allreduce_floors"), "allreduce_floors is missing"),
    (lambda d: d["allreduce_floors"]["nvlink"].pop("source"), "allreduce_floors.nvlink needs {gb_s_per_link, source}"),
    (lambda d: d["allreduce_floors"]["pcie"].update(share_of_link="0.2"), "allreduce_floors.pcie.share_of_link must be"),
    (lambda d: d["allreduce_floors"]["nvlink"].update(gb_s_per_link=0), "allreduce_floors.nvlink.gb_s_per_link must be"),
])
def test_bad_floors_are_refused_by_name(change, words):
    data = copy.deepcopy(DATA)
    change(data)
    with pytest.raises(allreduce.FloorsError, match=words.replace("{", r"\{").replace("}", r"\}")):
        allreduce.judge(measured(1.0, topo("topo-8x-h100-nv18.txt"), 8), data)


def test_the_filter_reads_the_json_text_and_refuses_what_is_not_a_report():
    import json  # pylint: disable=import-outside-toplevel

    from ansible.errors import AnsibleFilterError  # pylint: disable=import-outside-toplevel
    from ansible_collections.dlbox.stack.plugins.filter.acceptance import acceptance_allreduce

    text = json.dumps(measured(1.0, topo("topo-8x-h100-nv18.txt"), 8))
    out = acceptance_allreduce({"results": [], "failed": [], "ok": True}, text)
    assert out["failed"] == ["allreduce"]
    with pytest.raises(AnsibleFilterError, match="expects the report of dlbox.stack.fitness_acceptance"):
        acceptance_allreduce("not a report", text)


# --- real nccl-tests outputs against the floors (tests/fixtures/SOURCES.md) ---------------------------------------
# all-reduce-perf-2x-h100pcie-nv12.txt: NVIDIA/nccl-tests#194 (description), `all_reduce_perf -b 1G -e 8G -f 2 -g 2`
# on 2x H100 PCIe joined by NVLink bridges (NV12), the 1 GiB and 2 GiB rows verbatim: busbw 115.37-115.93 GB/s.
# all-reduce-perf-2x-t4-sys-nccl28.txt: NVIDIA/nccl#428 (description), 2x Tesla T4 across sockets (SYS), nccl-tests
# of NCCL 2.8 (no root column, an "error" column): the header and the first row verbatim (the table is cut
# after it in the stored copy). The topology matrices are written here from what each issue says (#194 names no
# matrix; #428's is a 4-GPU one whose GPU0-GPU1 cell is SYS).

NCCL = Path(__file__).resolve().parents[3] / "fixtures" / "nccl"
NV12_PAIR = ("\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\nGPU0\t X \tNV12\t0-31\t0\nGPU1\tNV12\t X \t0-31\t0\n\n"
             "Legend:\n\n  X    = Self\n  NV#  = Connection traversing a bonded set of # NVLinks\n")
H100_PCIE = [{"index": i, "name": "NVIDIA H100 PCIe", "pci_device_id": "0x233110DE"} for i in range(2)]


def test_nccl_tests_rows_are_read_in_both_formats():
    run = allreduce.nccl_tests_busbw((NCCL / "all-reduce-perf-2x-h100pcie-nv12.txt").read_text())
    assert run == {"bytes": 2147483648, "busbw_gb_s": 115.93, "ranks": None}
    old = allreduce.nccl_tests_busbw((NCCL / "all-reduce-perf-2x-t4-sys-nccl28.txt").read_text())
    assert old == {"bytes": 8, "busbw_gb_s": 0.0, "ranks": 2}
    assert allreduce.nccl_tests_busbw("# nThread 1 nGpus 2\n#  Rank  0 Group  0\n") is None


def test_a_real_healthy_nvlink_pair_passes_and_the_same_pair_at_a_third_fails():
    real = allreduce.nccl_tests_busbw((NCCL / "all-reduce-perf-2x-h100pcie-nv12.txt").read_text())["busbw_gb_s"]
    floor = round(PER_LINK * 12, 1)
    assert real > floor                                   # the floor stays under what a healthy bridge gives
    row = allreduce.judge(measured(real, NV12_PAIR, 2, H100_PCIE), DATA)
    assert (row["status"], row["reference"]) == ("pass", floor) and "fewest NV12 (GPU0-GPU1)" in row["reason"]
    # one bridge of three seated (NV4's bandwidth, about a third): under the NV12 floor
    row = allreduce.judge(measured(round(real / 3, 2), NV12_PAIR, 2, H100_PCIE), DATA)
    assert row["status"] == "fail" and row["value"] == 38.64 and row["reference"] == floor


def test_the_fitness_row_alone_is_a_finding_never_a_pass():
    # fitness.judge_acceptance without acceptance_allreduce has no floor: it must not call the figure a pass
    from ansible_collections.dlbox.stack.plugins.plugin_utils import fitness  # pylint: disable=import-outside-toplevel

    result = measured(1.0, topo("topo-8x-h100-nv18.txt"), 8)
    result["checks"] = {}
    report = fitness.judge_acceptance(result, fitness.load_reference_data())
    row = [r for r in report["results"] if r["id"] == "allreduce"][0]
    assert row["status"] == "finding" and "acceptance_allreduce" in row["reason"]
    assert allreduce.apply(report, result, DATA)["failed"] == ["allreduce"]
