"""A machine's fitness facts from its captures (plugins/plugin_utils/fitness_captures.py), on recorded real outputs.

Sources (tests/fixtures/SOURCES.md, "Fitness captures"):
  fitness/lscpu-2x-xeon-platinum-8380.txt   tile-ai/tilelang#3042: the lscpu block of torch.utils.collect_env,
                                            2x Xeon Platinum 8380 (guide A's server CPU)
  fitness/lscpu-2x-xeon-gold-6126-old.txt   smxi/inxi#144: util-linux 2.2x layout, L3 "19712K" per socket
  fitness/lscpu-i7-10610u.txt               Jay100125/Linux lscpu.md: 4 cores / 8 threads, 1.8 GHz, 8 MiB L3
  fitness/lscpu-2x-xeon-e5-2687w-v4-prompt.txt  Youcheng/CPPFun NumaNode/README.md: with the shell prompt, HT off
  fitness/lsblk-nvme-477g-root.txt          bucardo/boxinfo#6: plain lsblk, / on a 477 GiB (512 GB) NVMe
  fitness/edac-mc-two-controllers.txt       FlorianHeigl/nagios#1: the names of `ls -l /sys/devices/system/edac/mc` on
                                            a 2-controller server, written as dlbox-collect writes `ls` (its $ line, one a line)
  fitness/edac-mc-no-controller.txt         the same folder without mc0/mc1 (the EDAC core, no driver bound): the
                                            format is real, the case is derived from it
  fitness/lscpu-epyc-8434p-old.txt          sustainable-computing-io/kepler#1288: EPYC 8434P, util-linux <= 2.33
                                            layout, "L3 cache: 16384K" is one CCX of its 128 MB
  fitness/collect-dev-vm/                   this project's development VM (KVM, 2 vCPU), dlbox-collect of 2026-12-05:
                                            lscpu, /proc/meminfo, lsblk -J -b (/ on a whole virtio disk), no EDAC
  doctor/smi-q-a10-550-idle.txt             leptonai/gpud test data: nvidia-smi -q of an A10 (Device Max 4)
  doctor/smi-q-width-x8-under-load.txt      fangq/mcx#18: nvidia-smi -q, width x8 of x16
  doctor/lspci-lnksta-gen1-idle-x16.txt     janhq/jan#183: LnkCap Gen4 x16, LnkSta 2.5GT/s x16 at idle
  nvidia-smi/rtx-4090-driver-535.xml        netdata test data: RTX 4090 held at Gen3 by its host
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from ansible_collections.dlbox.stack.plugins.plugin_utils import fitness
from ansible_collections.dlbox.stack.plugins.plugin_utils import fitness_captures as fc

ROOT = Path(__file__).resolve().parents[4]
FIX = ROOT / "tests" / "fixtures"
DATA = fitness.check_fitness_data(yaml.safe_load((ROOT / "tests/unit/data/fitness-frozen.yml").read_text()))
REF = fitness.check_reference_data(yaml.safe_load((ROOT / "tests/unit/data/acceptance-frozen.yml").read_text()))
VM = FIX / "fitness" / "collect-dev-vm"


def caps(*paths):
    return [(str(p), (FIX / p).read_text()) for p in paths]


@pytest.mark.parametrize("path, kinds", [
    ("fitness/lscpu-2x-xeon-platinum-8380.txt", ["lscpu"]),
    ("fitness/collect-dev-vm/16-lscpu.txt", ["lscpu"]),
    ("fitness/collect-dev-vm/17-meminfo.txt", ["meminfo"]),
    ("fitness/collect-dev-vm/18-lsblk.txt", ["lsblk"]),
    ("fitness/collect-dev-vm/19-edac-mc.txt", ["edac"]),
    ("fitness/edac-mc-two-controllers.txt", ["edac"]),
    ("fitness/edac-mc-no-controller.txt", ["edac"]),
    ("fitness/lsblk-nvme-477g-root.txt", ["lsblk"]),
    ("doctor/smi-q-a10-550-idle.txt", ["nvidia-smi-q"]),
    ("doctor/lspci-lnksta-gen1-idle-x16.txt", ["lspci-vv"]),
    ("nvidia-smi/rtx-4090-driver-535.xml", ["nvidia-smi-xml"]),
    ("doctor/dmesg-xid-13-109.txt", []),
])
def test_each_capture_is_recognised_by_its_content(path, kinds):
    assert fc.recognize((FIX / path).read_text()) == kinds


def test_the_guides_server_cpu_from_its_lscpu():
    cpu = fc.host_from_captures(caps("fitness/lscpu-2x-xeon-platinum-8380.txt"))["cpu"]
    assert (cpu["cores"], cpu["threads"], cpu["base_mhz"], cpu["l3_kb"]) == (80, 160, 2300, 120 * 1024)


def test_an_old_lscpu_gives_l3_per_socket_which_counts_twice():
    cpu = fc.host_from_captures(caps("fitness/lscpu-2x-xeon-gold-6126-old.txt"))["cpu"]
    assert (cpu["cores"], cpu["threads"], cpu["l3_kb"]) == (24, 48, 2 * 19712)


def sysfs_l3(sockets, ccx_per_socket, cores_per_ccx, size="16384K"):
    """``grep -H . /sys/devices/system/cpu/cpu*/cache/index3/{size,shared_cpu_list}`` of an AMD Zen 2 host: a TEST
    INPUT in the kernel's format (sizes as util-linux/util-linux#663 shows them), with the CPU numbering Linux gives
    AMD (all first threads, then their SMT siblings) and AMD's topology: 4 cores per CCX, 16 MiB L3 each."""
    cores = sockets * ccx_per_socket * cores_per_ccx
    lines = []
    for cpu in range(2 * cores):
        first = (cpu % cores) // cores_per_ccx * cores_per_ccx
        shared = "%d-%d,%d-%d" % (first, first + cores_per_ccx - 1, first + cores, first + cores + cores_per_ccx - 1)
        lines += ["/sys/devices/system/cpu/cpu%d/cache/index3/size:%s" % (cpu, size),
                  "/sys/devices/system/cpu/cpu%d/cache/index3/shared_cpu_list:%s" % (cpu, shared)]
    return "$ grep -s -H . /sys/devices/system/cpu/cpu*/cache/index3/size ...\n" + "\n".join(lines) + "\n"


def test_an_old_lscpu_of_an_amd_cpu_gives_one_ccx_so_l3_is_unknown():
    # kepler#1288: EPYC 8434P (128 MB L3 in AMD's specifications), util-linux <= 2.33 prints one CCX's "16384K"
    host = fc.host_from_captures(caps("fitness/lscpu-epyc-8434p-old.txt"))
    assert (host["cpu"]["cores"], host["cpu"]["threads"], host["cpu"]["l3_kb"]) == (48, 96, None)
    check = [c for c in fitness.judge_host(host, "h", "workstation", DATA)["checks"] if c["id"] == "cpu_l3"][0]
    assert check["status"] == "unknown"                     # not "16 MB: problem"


@pytest.mark.parametrize("sockets, ccx, mib", [
    (1, 8, 128),     # Threadripper 3970X: 32 cores, 8 CCX x 16 MiB (AMD's product page: 128 MB L3)
    (2, 16, 512),    # 2x EPYC 7742: 64 cores each, 16 CCX x 16 MiB per socket (AMD: 256 MB L3 per socket)
])
def test_the_kernels_cache_folders_give_the_whole_l3_over_an_old_lscpu(sockets, ccx, mib):
    host = fc.host_from_captures(caps("fitness/lscpu-epyc-8434p-old.txt") + [("cpu-l3-sysfs", sysfs_l3(sockets, ccx, 4))])
    assert "cpu-l3-sysfs" in host["captured"] and host["cpu"]["l3_kb"] == mib * 1024


def test_plain_lsblk_finds_the_small_nvme_that_holds_root():
    host = fc.host_from_captures(caps("fitness/lsblk-nvme-477g-root.txt"))
    assert host["root_disk"] == {"name": "nvme0n1", "kind": "nvme", "size_gb": 512, "members": [], "member_kinds": []}
    report = fitness.judge_host(host, "h", "workstation", DATA)
    checks = {c["id"]: c for c in report["checks"]}
    assert (checks["system_disk_nvme"]["status"], checks["system_disk_size"]["status"]) == ("ok", "problem")
    assert checks["system_disk_size"]["value"] == "nvme0n1 512 GB"


def test_a_dlbox_collect_bundle_of_a_vm():
    host = fc.host_from_captures([(p.name, p.read_text()) for p in sorted(VM.iterdir())])
    assert sorted(host["captured"]) == ["edac", "lsblk", "lscpu", "meminfo"]
    assert (host["cpu"]["cores"], host["cpu"]["threads"], host["cpu"]["base_mhz"]) == (2, 2, None)
    assert host["memory"] == {"total_mb": 24105, "ecc": None}          # no EDAC in the VM: unknown, not "no ECC"
    assert host["disks"] == [{"name": "vda", "kind": "hdd", "size_gb": 275}]   # zram0 (size 0) left out
    assert host["root_disk"]["name"] == "vda"                          # / on the whole disk, no partition


@pytest.mark.parametrize("path, ecc", [
    ("fitness/edac-mc-two-controllers.txt", True),     # two memory controllers registered: ECC
    ("fitness/edac-mc-no-controller.txt", None),       # the EDAC core's folder, no driver bound: unknown
    ("fitness/collect-dev-vm/19-edac-mc.txt", None),   # no EDAC at all (the VM): unknown
])
def test_ecc_from_a_bundles_edac_listing(path, ecc):
    # dlbox-collect writes "$ ls /sys/devices/system/edac/mc" above the names: the listing is told by that line
    host = fc.host_from_captures(caps(path))
    assert host["captured"] == {"edac": [path]} and host["memory"]["ecc"] is ecc


def test_a_bare_paste_of_the_edac_folder_is_read_too():
    text = (FIX / "fitness/edac-mc-two-controllers.txt").read_text().split("\n", 1)[1]
    assert fc.edac_from_capture(text) == (True, ["mc0", "mc1"])
    assert fc.edac_from_capture("mc0\npower\nfoo\n") is None      # not the folder's entries


def test_a_server_with_ecc_from_its_bundle_passes_ecc():
    host = fc.host_from_captures(caps("fitness/lscpu-2x-xeon-platinum-8380.txt", "fitness/edac-mc-two-controllers.txt"))
    checks = {c["id"]: c for c in fitness.judge_host(host, "h", "server", DATA)["checks"]}
    assert checks["ecc"]["status"] == "ok"


def test_nvidia_smi_q_text_gives_the_gpu_its_device_id_and_own_link():
    host = fc.host_from_captures(caps("doctor/smi-q-a10-550-idle.txt"))
    gpu = host["gpus"][0]
    assert (gpu["name"], gpu["pci_device_id"], gpu["memory_mb"]) == ("NVIDIA A10", "2236", 23028)
    # idle at Gen1: the generation it got is nvidia-smi's Max (4), not Current; the card's own is Device Max (4);
    # the card's own width is not in nvidia-smi (its width Max is the lower of card and slot): unknown here
    assert gpu["pcie_cap"] == {"gen": 4, "width": None, "link_gen": 4, "link_width": 16, "source": "nvidia-smi"}
    link = [c for c in fitness.judge_host(host, "h", "workstation", DATA, reference=REF)["checks"] if c["id"] == "gpu_pcie"][0]
    assert (link["status"], link["expected"]) == ("ok", "the card's own Gen4 x16")
    assert "width from data/acceptance.yml (NVIDIA A10)" in link["note"]


@pytest.mark.parametrize("name, dev, mib, status", [
    ("NVIDIA A10", "0x223610DE", 23028, "ok"),      # the capture as recorded (leptonai/gpud)
    ("NVIDIA L4", "0x27B810DE", 23034, "ok"),       # modal-labs/modal-client#2797: L4 23034MiB (24.15 GB)
    ("Tesla T4", "0x1EB810DE", 15360, "problem"),   # modal-labs/modal-client#2797: T4 15360MiB (16.11 GB)
])
def test_a_24_gb_datacenter_card_has_the_guides_24_gb(name, dev, mib, status):
    # nvidia-smi shows a "24 GB" A10 or L4 as 23028/23034 MiB (22.5 GiB): GPU memory is sold in decimal GB. The A10
    # capture with the name, device id and total of modal-labs/modal-client#2797's list: format real, values the issue's.
    text = (FIX / "doctor/smi-q-a10-550-idle.txt").read_text().replace("NVIDIA A10", name)
    text = text.replace("0x223610DE", dev).replace("23028 MiB", "%d MiB" % mib)
    host = fc.host_from_captures([("nvidia-smi-q", text)])
    assert host["gpus"][0]["memory_mb"] == mib
    check = [c for c in fitness.judge_host(host, "h", "workstation", DATA, reference=REF)["checks"]
             if c["id"] == "gpu_memory"][0]
    assert check["status"] == status and check["value"] == round(mib * 1048576 / 1e9, 1)


def test_a_card_in_an_x8_slot_is_not_read_as_an_x8_card():
    # the A10 capture above (leptonai/gpud) with its Link Width at 8x / 8x: what nvidia-smi prints for a card in an x8
    # slot ("pcie.link.width.max: the maximum PCI-E link width possible with this GPU and system configuration",
    # nvidia-smi --help-query-gpu as quoted in NVIDIA/gpu-monitoring-tools#215). Format real, the x8 values the case's.
    text = (FIX / "doctor/smi-q-a10-550-idle.txt").read_text()
    text = text.replace("Max                       : 16x\n                Current                   : 16x",
                        "Max                       : 8x\n                Current                   : 8x")
    assert ": 8x" in text
    host = fc.host_from_captures([("nvidia-smi-q", text)])
    link = [c for c in fitness.judge_host(host, "h", "workstation", DATA, reference=REF)["checks"] if c["id"] == "gpu_pcie"][0]
    assert link["status"] == "problem" and "runs at x8 of its Gen4 x16" in link["note"]
    # without a reference for the card, its own width is unknown: not "ok at the card's own x8"
    bare = [c for c in fitness.judge_host(host, "h", "workstation", DATA, reference={"gpus": []})["checks"]
            if c["id"] == "gpu_pcie"][0]
    assert bare["expected"] == "the card's own Gen4 x?" and "width not compared" in bare["note"]


def test_a_paste_cut_before_its_gpu_header_puts_its_link_on_no_gpu():
    # fangq/mcx#18 starts inside the PCIe block (x8 of x16): no GPU header, no name, so no GPU is made up from it
    # (the x8 link itself is judged in test_fitness.py::test_a_gpu_in_an_x8_slot_is_flagged_from_nvidia_smi_and_from_lspci)
    assert fc.host_from_captures(caps("doctor/smi-q-width-x8-under-load.txt"))["gpus"] == []


def test_grepped_lnkcap_lnksta_lines_are_the_one_gpus_link():
    host = fc.host_from_captures(caps("nvidia-smi/rtx-4090-driver-535.xml", "doctor/lspci-lnksta-gen1-idle-x16.txt"))
    cap = host["gpus"][0]["pcie_cap"]
    # LnkCap Gen4 x16 is the card's own; nvidia-smi's Max (3) the generation it got; the Gen1 of idle is not judged
    assert (cap["gen"], cap["width"], cap["link_gen"], cap["link_width"]) == (4, 16, 3, 16)
    report = fitness.judge_host(host, "h", "workstation", DATA)
    link = [c for c in report["checks"] if c["id"] == "gpu_pcie"][0]
    assert link["status"] == "problem" and "Gen3 of its Gen4 x16" in link["note"]


def test_lsblk_json_with_root_on_lvm_over_md_of_nvme():
    # the shape lsblk -J -b -o NAME,KNAME,MAJ:MIN,TYPE,SIZE,ROTA,MOUNTPOINT prints (util-linux lsblk(8)); values here
    # are a test input, not a capture: an md RAID 1 of two NVMe partitions with LVM on it holding /
    member = {"name": "nvme%dn1p2", "kname": "nvme%dn1p2", "maj:min": "259:%d", "type": "part", "size": 1999844147200,
              "rota": False, "mountpoint": None}
    md = {"name": "md0", "kname": "md0", "maj:min": "9:0", "type": "raid1", "size": 1999709929472, "rota": False,
          "mountpoint": None, "children": [{"name": "vg0-root", "kname": "dm-0", "maj:min": "253:0", "type": "lvm",
                                            "size": 1999709929472, "rota": False, "mountpoint": "/"}]}
    devices = []
    for index in range(2):
        part = {k: (v % index if isinstance(v, str) and "%d" in v else v) for k, v in member.items()}
        part["maj:min"] = "259:%d" % (index * 3 + 2)
        part["children"] = [md]
        devices.append({"name": "nvme%dn1" % index, "kname": "nvme%dn1" % index, "maj:min": "259:%d" % (index * 3),
                        "type": "disk", "size": 2000398934016, "rota": False, "mountpoint": None, "children": [part]})
    host = fc.host_from_captures([("lsblk", json.dumps({"blockdevices": devices}))])
    assert host["root_disk"] == {"name": "md0", "kind": "md", "size_gb": 2000, "members": ["nvme0n1", "nvme1n1"],
                                 "member_kinds": ["nvme"]}
    assert [d["name"] for d in host["disks"]] == ["md0", "nvme0n1", "nvme1n1"]


def test_nothing_readable_is_nothing_captured():
    host = fc.host_from_captures(caps("doctor/dmesg-xid-13-109.txt"))
    assert host["captured"] == {} and host["cpu"]["cores"] is None and host["root_disk"] is None


def test_a_paste_with_the_shell_prompt_and_no_hyperthreading():
    # Youcheng/CPPFun NumaNode/README.md: "[12:46 PM root@cr-pvg-krn02 ~ ]# lscpu" above the output, 2x E5-2687W v4
    cpu = fc.host_from_captures(caps("fitness/lscpu-2x-xeon-e5-2687w-v4-prompt.txt"))["cpu"]
    assert (cpu["cores"], cpu["threads"], cpu["base_mhz"], cpu["l3_kb"]) == (24, 24, 3000, 2 * 30720)


def test_a_small_machine_from_real_pastes_is_not_fit_naming_each_threshold():
    """A 4-core / 8-thread 1.8 GHz CPU with 8 MB L3 (Jay100125/Linux lscpu.md), / on a 512 GB NVMe (bucardo/boxinfo#6)
    and an RTX 4090 its host holds at Gen3 (netdata's capture): the issue's 8-thread Xeon, from real outputs."""
    host = fc.host_from_captures(caps("fitness/lscpu-i7-10610u.txt", "fitness/lsblk-nvme-477g-root.txt",
                                      "nvidia-smi/rtx-4090-driver-535.xml"))
    report = fitness.judge_host(host, "pasted", "workstation", DATA)
    assert report["problems"] == ["cpu_cores", "cpu_threads", "cpu_base_clock", "system_disk_size",
                                  "gpu_pcie", "data_disk"]              # L3 is advice (guide B words it so)
    unknown = sorted(c["id"] for c in report["checks"] if c["status"] == "unknown")
    assert unknown == ["ram"]                                           # no /proc/meminfo among the pastes
    text = "\n".join(fitness.report_text(report))
    for words in ("CPU threads: 8 (want >= 16)", "CPU base clock (GHz): 1.8 (want >= 3.0)",
                  "L3 cache (MB, all sockets): 8.0 (want >= 30)", "system disk size (GB): nvme0n1 512 GB (want >= 1000)",
                  "slot-limited: NVIDIA GeForce RTX 4090 runs at Gen3 of its Gen4 x16"):
        assert words in text


def test_lsblk_with_model_and_fstype_tells_a_raid_volume_and_zfs_members():
    # the shape lsblk -J -b -o NAME,KNAME,MAJ:MIN,TYPE,SIZE,ROTA,MOUNTPOINT,MODEL,FSTYPE prints (util-linux lsblk(8));
    # a TEST INPUT: sda a PERC volume (model as canonical/lxd#7096 shows it), sdb and sdc ZFS members in partitions
    def disk(name, minor, model, children=None, fstype=None):
        return {"name": name, "kname": name, "maj:min": "8:%d" % minor, "type": "disk", "size": 3840755982336,
                "rota": True, "mountpoint": None, "model": model, "fstype": fstype, "children": children or []}

    def part(name, minor, fstype):
        return {"name": name, "kname": name, "maj:min": "8:%d" % minor, "type": "part", "size": 3840746545152,
                "rota": True, "mountpoint": None, "model": None, "fstype": fstype}

    devices = [disk("sda", 0, "PERC 6/i"), disk("sdb", 16, "ST4000NM0035-1V4", [part("sdb1", 17, "zfs_member")]),
               disk("sdc", 32, "ST4000NM0035-1V4", [part("sdc1", 33, "zfs_member")])]
    host = fc.host_from_captures([("lsblk", json.dumps({"blockdevices": devices}))])
    assert [(d["name"], d["kind"]) for d in host["disks"]] == [("sda", "hwraid"), ("sdb", "hdd"), ("sdc", "hdd")]
    assert host["zfs"]["members"] == ["sdb", "sdc"]
