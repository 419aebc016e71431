"""NSCQ (libnvidia-nscq) on NVSwitch hosts whose switches are PCI devices (HGX A100/H100/H200), red team of issue 44.

NVIDIA's NVSwitch Configuration and Query library is what DCGM and nvidia-smi read the NVSwitches through, and must have
exactly the driver's version (NVIDIA/yum-packaging-libnvidia-nscq README). Ubuntu ships it beside Fabric Manager from
the same -server series (noble-updates multiverse, RECORDED: tests/fixtures/holds/ubuntu2404-noble-updates-nvidia-580.txt:
libnvidia-nscq-580 580.196.07-0ubuntu0.24.04.1, Depends nvidia-kernel-common-580-server-580.196.07, as
nvidia-fabricmanager-580), NVIDIA's repository as ``libnvidia-nscq`` from R580 (data/compat.yml fabric_manager.nscq).

Plans on the SHIPPED data/compat.yml. apt's simulation is the recorded 22.04 capture of tests/fixtures/driver; the
``apt-cache madison`` lines are CONSTRUCTED in apt's format at the version of that capture's Fabric Manager.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from ansible_collections.dlbox.stack.plugins.plugin_utils import nvidia_driver_plan as ndp
from ansible_collections.dlbox.stack.plugins.plugin_utils.roles import nvidia_driver as rnd
from ansible_collections.dlbox.stack.plugins.plugin_utils import nvlink5_fabric as nf
from ansible_collections.dlbox.stack.plugins.plugin_utils import stack_resolver
from ansible_collections.dlbox.stack.plugins.plugin_utils.compat_data import load_compat, load_gpu_index

ROOT = Path(__file__).resolve().parents[4]
HOLDS = ROOT / "tests" / "fixtures" / "holds" / "ubuntu2404-noble-updates-nvidia-580.txt"
SIM_2204 = (ROOT / "tests" / "fixtures" / "driver" / "ubuntu2204-apt-get-s-install-580-server-open-fabricmanager.txt")
HGX_H100 = {"gpus": ["H100 SXM5 80GB"] * 8, "nvswitch": True, "os": "ubuntu-22.04"}
VERSION = "580.178.04-0ubuntu0.22.04.1"   # the capture's nvidia-fabricmanager-580 (and driver) version
ARCHIVE = "http://archive.ubuntu.com/ubuntu jammy-updates/multiverse amd64 Packages"


@pytest.fixture(scope="module")
def data():
    return load_compat()


def plan_for(data, hardware, request=None):
    index = load_gpu_index()
    return stack_resolver.resolve(data, index.host_from_hardware(hardware), request or {}, gpu_index=index)


def options(**over):
    base = dict(method="", branch="", kernel_modules="", profile="", other_branch="refuse", change_branch=False,
                keep_dir="/var/backups/dlbox-nvidia-driver", in_container="skip", build_kernels=[], kernel_flavour="",
                secure_boot="auto", secure_boot_signing="auto", mok_key="", mok_certificate="",
                shim_mok_dir="/var/lib/shim-signed/mok", pin_name="dlbox-00-nvidia-driver-branch.pref", hostname="hgx1",
                distribution="Ubuntu", distribution_version="22.04", kernel="5.15.0-204-generic", check_mode=False,
                request_text="{}")
    base.update(over)
    return base


def madison(*lines):
    return "".join("%s | %s | %s\n" % (name, version, ARCHIVE) for name, version in lines)


def decide(data, facts):
    plan = plan_for(data, HGX_H100)
    full = {"installed": [], "simulation": {"rc": 0, "stderr": "", "stdout": SIM_2204.read_text(encoding="utf-8")}}
    full.update(facts)
    return ndp.decide(data, options(), plan, host={}, facts=full)


# --- the plan: which NSCQ package, by method and branch ------------------------------------------------------------

def test_the_recorded_ubuntu_archive_ships_nscq_beside_fabric_manager_from_the_same_series():
    """The data's distro row rests on this: both packages of the -server series, in multiverse, same Depends."""
    text = HOLDS.read_text(encoding="utf-8")
    stanzas = {m.group(1): m.group(0) for m in re.finditer(r"^Package: (\S+)\n(?:.+\n)+", text, re.MULTILINE)}
    nscq, fm = stanzas["libnvidia-nscq-580"], stanzas["nvidia-fabricmanager-580"]
    assert "Section: multiverse/libs" in nscq and "Description: NVSwitch Configuration and Query library" in nscq
    depends = re.compile(r"^Depends: (.+)$", re.MULTILINE)
    assert depends.search(nscq).group(1) == depends.search(fm).group(1) == "nvidia-kernel-common-580-server-580.196.07"


def test_ubuntu_hgx_h100_default_plan_names_nscq_of_the_branch_with_fabric_manager(data):
    plan = plan_for(data, HGX_H100)
    assert plan["ok"], plan["errors"]
    fm = plan["stack"]["fabric_manager"]
    assert (fm["method"], fm["branch"]) == ("distro", 580)
    assert fm["nscq"] == {"package": "libnvidia-nscq-580"}
    assert fm["packages"] == ["nvidia-fabricmanager-580", "libnvidia-nscq-580"]
    assert any(n.startswith("NVSwitch host: libnvidia-nscq-580 (NSCQ") for n in plan["notes"])


@pytest.mark.parametrize("hardware, asked, package", [
    # Debian's archive ships no Fabric Manager: NVIDIA's repository, branch-less name from R580
    ({"gpus": ["NVIDIA H100 80GB HBM3"] * 2, "nvswitch": True, "os": "debian-12"}, {}, "libnvidia-nscq"),
    (dict(HGX_H100, os="ubuntu-24.04"), {"driver_method": "nvidia_repo", "driver_branch": "580"}, "libnvidia-nscq"),
    (dict(HGX_H100, os="ubuntu-24.04"), {"driver_method": "nvidia_repo", "driver_branch": "570"}, "libnvidia-nscq-570"),
])
def test_nscq_name_follows_the_method_and_branch(data, hardware, asked, package):
    plan = plan_for(data, hardware, asked)
    assert plan["ok"], plan["errors"]
    assert plan["stack"]["fabric_manager"]["nscq"] == {"package": package}
    assert plan["stack"]["fabric_manager"]["packages"][-1] == package


def test_ubuntu_2604_r620_gets_the_archives_nscq(data):
    """Ubuntu 26.04's default R620: resolute-updates multiverse has libnvidia-nscq-620 620.70.06 beside
    nvidia-fabricmanager-620 (tests/fixtures/kernel/ubuntu2604; issue 53 red team), so the plan names it."""
    plan = plan_for(data, dict(HGX_H100, os="ubuntu-26.04"))
    assert plan["ok"], plan["errors"]
    fm = plan["stack"]["fabric_manager"]
    assert (fm["method"], fm["branch"]) == ("distro", 620)
    assert fm["nscq"] == {"package": "libnvidia-nscq-620"}
    assert fm["packages"] == ["nvidia-fabricmanager-620", "libnvidia-nscq-620"]


def test_no_nscq_without_nvswitch_and_none_twice_on_nvlink5_boards(data):
    pcie = plan_for(data, {"gpus": ["H100 PCIe"] * 2, "os": "ubuntu-22.04"})
    assert pcie["ok"] and pcie["stack"]["fabric_manager"] is None
    b200 = plan_for(data, {"gpus": ["NVIDIA B200"] * 8, "nvswitch": False, "os": "ubuntu-24.04"})
    assert b200["ok"], b200["errors"]
    fm = b200["stack"]["fabric_manager"]
    assert "nscq" not in fm and fm["packages"].count("libnvidia-nscq") == 1   # the NVLink5 set carries it


# --- the role's decision: NSCQ in the driver's apt transaction, held and checked with it -------------------------

def test_nscq_joins_the_apt_transaction_at_exactly_the_driver_version(data):
    out = decide(data, {"madison": madison(("nvidia-fabricmanager-580", VERSION), ("libnvidia-nscq-580", VERSION),
                                           ("libnvidia-nscq-580", "580.95.05-0ubuntu0.22.04.1"))})
    assert out["ok"], out["errors"]
    assert out["fabric"]["kind"] == "nvswitch" and out["madison"] == ["nvidia-fabricmanager-580", "libnvidia-nscq-580"]
    assert out["fm_install_names"] == ["nvidia-fabricmanager-580=%s" % VERSION]
    assert out["fabric_install_names"] == ["libnvidia-nscq-580=%s" % VERSION]
    assert out["fabric_versions"]["warning"] == ""


def test_the_role_gives_apt_nscq_in_the_drivers_transaction_and_imports_no_nvlink5_tasks_for_it():
    """The decision's FM names (what install.yml hands apt with the driver set; decided in plugin_utils/roles/
    nvidia_driver.py since issue 47, before in vars/main.yml) carry fabric_install_names; the NVLink5 task files (NVLSM's
    modules, IMEX) are imported for the hgx/nvl kinds only, not for NSCQ's nvswitch kind."""
    role = ROOT / "roles" / "nvidia_driver"
    install = yaml.safe_load((role / "tasks" / "install.yml").read_text(encoding="utf-8"))
    apt = [t["dlbox.stack.apt_present"]["name"] for b in install if "block" in b for t in b["block"] if "dlbox.stack.apt_present" in t]
    assert "__nvidia_driver_decided.fm_names" in " ".join(apt)
    names = rnd.fm_names({"fm_install_names": ["nvidia-fabricmanager-580=%s" % VERSION],
                          "fabric_install_names": ["libnvidia-nscq-580=%s" % VERSION]})
    assert "libnvidia-nscq-580=%s" % VERSION in names
    tasks = yaml.safe_load((role / "tasks" / "main.yml").read_text(encoding="utf-8"))
    block = next(t for t in tasks if "block" in t)["block"]
    for name in ("fabric_blackwell.yml", "fabric_blackwell_start.yml"):
        task = next(t for t in block if t.get("ansible.builtin.import_tasks") == name)
        when = task["when"] if isinstance(task["when"], list) else [task["when"]]
        assert "(__nvidia_driver_decided.fabric.kind | default('')) in ['hgx', 'nvl']" in when, name


def test_nscq_apt_lacks_at_the_driver_version_is_left_out_with_a_warning_not_a_refusal(data):
    out = decide(data, {"madison": madison(("nvidia-fabricmanager-580", VERSION),
                                           ("libnvidia-nscq-580", "580.95.05-0ubuntu0.22.04.1"))})
    assert out["ok"], out["errors"]
    assert out["fm_install_names"] == ["nvidia-fabricmanager-580=%s" % VERSION]
    assert out["fabric_install_names"] == []
    warning = out["fabric_versions"]["warning"]
    assert "libnvidia-nscq-580 at exactly the driver's version 580.178.04 (the repositories have 580.95.05)" in warning
    assert "Fabric Manager trains the NVSwitch fabric without it" in warning


def test_after_the_install_nscq_is_checked_and_held_with_the_driver(data):
    fabric = nf.fabric_set({"package": "nvidia-fabricmanager-580", "nscq": {"package": "libnvidia-nscq-580"}}, {})
    ok = nf.after(fabric, {"libnvidia-nscq-580": VERSION}, "580.178.04")
    assert ok["problems"] == [] and ok["holds"] == ["libnvidia-nscq-580"] and ok["installed"] is True
    stale = nf.after(fabric, {"libnvidia-nscq-580": "580.95.05-0ubuntu0.22.04.1"}, "580.178.04")
    assert stale["problems"] == ["libnvidia-nscq-580 is 580.95.05-0ubuntu0.22.04.1, the driver 580.178.04: it must have "
                                 "exactly the driver's version."]
    absent = nf.after(fabric, {}, "580.178.04")   # left out (versions() said so): no failure, nothing to hold
    assert absent["problems"] == [] and absent["holds"] == [] and absent["installed"] is False
    assert nf.summary(fabric, ok) == "NVSwitch fabric: libnvidia-nscq-580 %s" % VERSION


def test_on_the_signed_path_the_decision_after_the_install_holds_no_nscq(data):
    """Issue 44's red team H1: the role's decision after the install on Ubuntu's signed server set holds nothing, NSCQ
    included. libnvidia-nscq-580 depends on the exact nvidia-kernel-common-580-server-<version>, so a hold on it froze
    the driver group while the kernel meta moved: apt then installed the next kernel without its module (the month
    archive's control case, test_nvidia_driver_month_hgx_apt, with the real apt)."""
    after = [{"name": n, "version": VERSION, "arch": "amd64"} for n in (
        "nvidia-headless-no-dkms-580-server-open", "nvidia-utils-580-server", "libnvidia-compute-580-server",
        "nvidia-compute-utils-580-server", "nvidia-kernel-common-580-server", "linux-modules-nvidia-580-server-open-generic",
        "nvidia-fabricmanager-580", "libnvidia-nscq-580")]
    signed = ROOT / "tests" / "fixtures" / "driver" / "ubuntu2204-apt-get-s-install-580-server-open-signed.txt"  # RECORDED
    facts = {"installed": [], "simulation": {"rc": 0, "stderr": "", "stdout": signed.read_text(encoding="utf-8")},
             "madison": madison(("nvidia-fabricmanager-580", VERSION), ("libnvidia-nscq-580", VERSION)), "after": after}
    out = ndp.decide(data, options(), plan_for(data, HGX_H100), host={"secure_boot": True}, facts=facts)
    assert out["ok"], out["errors"]
    assert out["set"]["signing"] == "precompiled" and out["signing"]["path"] == "precompiled"
    assert out["after"]["fabric_summary"] == "NVSwitch fabric: libnvidia-nscq-580 %s" % VERSION
    assert out["holds"] == [], out["holds"]


def test_the_signed_keep_out_choice_reaches_the_decision_and_a_bad_value_is_refused(data):
    """nvidia_driver_unattended_signed through the role's decision (issue 48's red team HIGH 2): keep_out lists the
    user space with the kernel and module metas; still no hold; an unknown value is refused naming the variable."""
    signed = ROOT / "tests" / "fixtures" / "driver" / "ubuntu2204-apt-get-s-install-580-server-open-signed.txt"  # RECORDED
    after = [{"name": n, "version": VERSION, "arch": "amd64"} for n in (
        "nvidia-headless-no-dkms-580-server-open", "nvidia-utils-580-server", "libnvidia-compute-580-server",
        "nvidia-kernel-common-580-server", "linux-modules-nvidia-580-server-open-generic", "nvidia-fabricmanager-580",
        "libnvidia-nscq-580")]
    facts = {"installed": [], "simulation": {"rc": 0, "stderr": "", "stdout": signed.read_text(encoding="utf-8")},
             "madison": madison(("nvidia-fabricmanager-580", VERSION), ("libnvidia-nscq-580", VERSION)), "after": after}
    out = ndp.decide(data, options(unattended_signed="keep_out"), plan_for(data, HGX_H100), host={"secure_boot": True}, facts=facts)
    assert out["ok"], out["errors"]
    assert out["holds"] == []
    for name in ("linux-generic", "linux-image-generic", "linux-modules-nvidia-580-server-open-generic",
                 "nvidia-kernel-common-580-server", "libnvidia-compute-580-server", "nvidia-fabricmanager-580"):
        assert name in out["blacklist"], (name, out["blacklist"])
    default = ndp.decide(data, options(), plan_for(data, HGX_H100), host={"secure_boot": True}, facts=facts)
    assert default["ok"] and default["blacklist"] == []
    bad = ndp.decide(data, options(unattended_signed="never"), plan_for(data, HGX_H100), host={"secure_boot": True}, facts=facts)
    assert not bad["ok"] and "nvidia_driver_unattended_signed is 'never': it takes together or keep_out" in bad["errors"][0]


def test_nvlink5_sets_stay_refused_when_apt_lacks_them():
    fabric = {"kind": "hgx", "same_version": ["libnvsdm"], "own_version": [], "kernel_modules": [], "imex": None}
    got = nf.versions(fabric, "", "580.95.05")
    assert not got["ok"] and got["problems"] and got["warning"] == ""
    assert nf.after(fabric, {}, "580.95.05")["problems"] == ["After installing, libnvsdm is not installed."]


def test_fabric_managers_unit_is_named_by_the_data_only():
    """Red team of issue 44: the role carries no Fabric Manager unit of its own (the package ships it: from R570
    ExecStartPre=/usr/bin/nvidia-fabricmanager-start.sh --mode precheck, ExecStart=... --mode start, Type=forking) and no
    fallback name: data/compat.yml fabric_manager.service is the one place, reached through the plan."""
    role = ROOT / "roles" / "nvidia_driver"
    assert load_compat()["fabric_manager"]["service"] == "nvidia-fabricmanager.service"
    var = yaml.safe_load((role / "vars" / "main.yml").read_text(encoding="utf-8"))["__nvidia_driver_fm_service"]
    assert var == "{{ __nvidia_driver_decided.fabric_manager.service }}"
    code = [line for path in sorted(role.rglob("*")) if path.is_file() and path.suffix in (".yml", ".j2", ".service", ".conf")
            for line in path.read_text(encoding="utf-8").splitlines()
            if "fabricmanager" in line and not line.lstrip().startswith("#") and "meta/" not in str(path)]
    assert code == [], code
