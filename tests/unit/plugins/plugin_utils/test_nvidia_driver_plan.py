"""nvidia_driver_plan: the nvidia_driver role's one decision, on the FROZEN data (tests/unit/data/compat-frozen.yml).

Plans are written out here (the driver part of resolve_stack's shape) so each rule is seen on its own; the filter
tests at the end resolve real plans. apt's outputs are the captures of tests/fixtures/driver (real output of the
Debian 12 and Ubuntu 22.04 test containers) or the fixture repository's names (tests/aptrepo).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.dlbox.stack.plugins.filter.nvidia_driver import FilterModule, nvidia_driver_plan
from ansible_collections.dlbox.stack.plugins.module_utils import _nvidia_driver as nd
from ansible_collections.dlbox.stack.plugins.plugin_utils import nvidia_driver_plan as p
from ansible_collections.dlbox.stack.plugins.plugin_utils.compat_data import load_compat

ROOT = Path(__file__).resolve().parents[4]
FROZEN = str(ROOT / "tests" / "unit" / "data" / "compat-frozen.yml")
FIX = ROOT / "tests" / "fixtures" / "driver"
DATA = load_compat(FROZEN)
FAMILY = DATA["driver_package_names"]["family"]


def fixture(name):
    return (FIX / name).read_text(encoding="utf-8")


def options(**over):
    base = dict(method="distro", branch="", kernel_modules="", profile="server", other_branch="refuse", change_branch=False,
                keep_dir="/var/backups/dlbox-nvidia-driver", in_container="skip", build_kernels=[], kernel_flavour="",
                secure_boot="auto", secure_boot_signing="auto", mok_key="", mok_certificate="",
                shim_mok_dir="/var/lib/shim-signed/mok", pin_name="dlbox-00-nvidia-driver-branch.pref", hostname="gpu1",
                distribution="Debian", distribution_version="12", kernel="6.1.0-57-amd64", check_mode=False, request_text="{}")
    base.update(over)
    return base


def debian_plan(branch=535, modules="proprietary", packages=("nvidia-driver",), nvswitch=False, fm=None):
    return {"ok": True, "errors": [], "host": {"nvswitch": nvswitch},
            "stack": {"driver": {"branch": branch, "kernel_modules": modules, "method": "distro", "packages": list(packages),
                                 "repo": None, "family": FAMILY, "min_version": "%s.0" % branch, "version_available": None},
                      "fabric_manager": fm}}


def repo_plan(branch=580, fm=True):
    return {"ok": True, "errors": [], "host": {"nvswitch": fm},
            "stack": {"driver": {"branch": branch, "kernel_modules": "open", "method": "nvidia_repo",
                                 "packages": ["nvidia-open-%s" % branch, "nvidia-driver-pinning-%s" % branch] if branch >= 590
                                 else ["nvidia-open-%s" % branch],
                                 "repo": {"kernel_package": "nvidia-kernel-open-dkms", "same_version": ["nvidia-driver-cuda"],
                                          "dkms_module": "nvidia", "lock": None},
                                 "family": FAMILY, "min_version": "%s.0" % branch, "version_available": "%s.95.05" % branch},
                      "fabric_manager": {"package": "nvidia-fabricmanager", "service": "nvidia-fabricmanager"} if fm else None}}


def installed(*items):
    return [{"name": n, "version": v, "arch": "amd64"} for n, v in items]


R580 = installed(("nvidia-open-580", "580.95.05-1"), ("nvidia-open", "580.95.05-1"), ("nvidia-driver", "580.95.05-1"),
                 ("nvidia-driver-cuda", "580.95.05-1"), ("nvidia-kernel-open-dkms", "580.95.05-1"),
                 ("nvidia-fabricmanager", "580.95.05-1"), ("bash", "5.2.15-2+b7"))
SIM_595 = """Inst nvidia-driver (595.71.05-1 cuda-debian12:/ [amd64])
Inst nvidia-driver-cuda (595.71.05-1 cuda-debian12:/ [amd64])
Inst nvidia-kernel-open-dkms (595.71.05-1 cuda-debian12:/ [amd64])
Inst nvidia-open-595 (595.71.05-1 cuda-debian12:/ [amd64])
Inst nvidia-driver-pinning-595 (595.71.05-1 cuda-debian12:/ [all])
"""
MADISON = """nvidia-fabricmanager | 595.71.05-1 | http://127.0.0.1:8089/cuda-debian12 ./ Packages
nvidia-fabricmanager | 580.95.05-1 | http://127.0.0.1:8089/cuda-debian12 ./ Packages
"""


# --- the filter ------------------------------------------------------------------------------------

def test_the_one_filter_is_documented():
    filters = FilterModule().filters()
    assert list(filters) == ["nvidia_driver_plan"]
    for name in filters:
        assert (ROOT / "plugins" / "filter" / ("%s.yml" % name)).is_file(), name


def test_bad_input_is_a_filter_error():
    with pytest.raises(AnsibleFilterError, match="nvidia_driver_plan"):
        nvidia_driver_plan("server", None)
    with pytest.raises(AnsibleFilterError, match="nvidia_driver_plan"):
        nvidia_driver_plan(options(), {"no": "stack"})


A100 = {"gpus": ["NVIDIA A100-SXM4-80GB"], "os": "debian-12"}


def test_dlbox_plan_is_used_when_it_fits_and_resolved_once_when_not():
    first = nvidia_driver_plan(options(), None, hardware=A100, facts={"installed": []}, data_path=FROZEN)
    assert first["ok"] and first["plan"]["source"] == "resolved"
    branch = first["plan"]["stack"]["driver"]["branch"]
    # the plan of an earlier call (or dlbox_plan) is taken as it is when it says the method and branch
    again = nvidia_driver_plan(options(branch=str(branch)), first["plan"], hardware=A100, facts={"installed": []}, data_path=FROZEN)
    assert again["plan"]["source"] == "dlbox_plan"
    # another method than the plan's: resolved again with the role's variables as overrides
    other = nvidia_driver_plan(options(method="nvidia_repo"), first["plan"], hardware=A100, facts={"installed": []}, data_path=FROZEN)
    assert other["plan"]["source"] == "resolved" and other["driver"]["method"] == "nvidia_repo"


@pytest.mark.parametrize(("over", "expect"), [
    ({"branch": "999"}, ["nvidia_driver_branch=999", "not a known branch"]),
    ({"method": "runfile"}, ["nvidia_driver_method", "distro, nvidia_repo"]),
])
def test_a_refused_plan_names_the_variables(over, expect):
    out = nvidia_driver_plan(options(**over), None, hardware=A100, facts={"installed": []}, data_path=FROZEN)
    assert not out["ok"]
    for text in expect:
        assert text in out["errors"][0], (text, out["errors"])


@pytest.mark.parametrize(("release", "flavour", "meta"), [
    ("5.15.0-204-generic", "", "linux-modules-nvidia-580-server-open-generic"),
    ("6.8.0-1015-nvidia", "", "linux-modules-nvidia-580-server-open-nvidia"),
    ("6.18.44-fc-v669", "", "linux-modules-nvidia-580-server-open-generic"),
    ("5.15.0-204-generic", "generic-hwe-22.04", "linux-modules-nvidia-580-server-open-generic-hwe-22.04"),
])
def test_packages_follow_the_kernel_flavour(release, flavour, meta):
    plan = debian_plan(580, "open", ["nvidia-driver-580-server-open"])
    out = p.decide(DATA, options(distribution="Ubuntu", distribution_version="22.04", kernel=release, kernel_flavour=flavour),
                   plan, host={"secure_boot": True})
    assert out["ok"] and out["signing"]["path"] == "precompiled"
    assert out["set"]["packages"][2] == meta


# --- refusals before anything changes ----------------------------------------------------------------

def test_unsupported_os_refused():
    out = p.decide(DATA, options(distribution="Fedora"), debian_plan())
    assert not out["ok"] and "this host runs Fedora" in out["errors"][0]


def test_debian_tesla_and_legacy_packages_refused():
    out = p.decide(DATA, options(branch="535"), debian_plan(packages=["nvidia-tesla-535-driver"]))
    assert not out["ok"] and "nvidia-tesla-535-driver" in out["errors"][0] and "nvidia_driver_branch" in out["errors"][0]
    assert p.decide(DATA, options(), debian_plan(packages=["nvidia-open-kernel-dkms"], modules="open"))["ok"]


def test_debian_nvswitch_host_refused_with_the_distribution():
    out = p.decide(DATA, options(), debian_plan(nvswitch=True))
    assert not out["ok"] and "Fabric Manager" in out["errors"][0] and "nvidia_repo" in out["errors"][0]
    # Ubuntu's archive ships Fabric Manager
    assert p.decide(DATA, options(distribution="Ubuntu", distribution_version="24.04"),
                    debian_plan(580, "open", ["nvidia-driver-580-server-open"], nvswitch=True))["ok"]


def test_nvidia_repo_without_names_refused():
    plan = repo_plan()
    plan["stack"]["driver"]["repo"] = None
    out = p.decide(DATA, options(method="nvidia_repo"), plan)
    assert not out["ok"] and "driver_package_names.nvidia_repo" in out["errors"][0]


def test_nvidia_repo_refuses_the_precompiled_path():
    out = p.decide(DATA, options(method="nvidia_repo", distribution="Ubuntu", distribution_version="24.04"), repo_plan(),
                   host={"secure_boot": True})
    assert not out["ok"] and "nvidia_driver_secure_boot_signing: mok" in out["errors"][0]


def test_secure_boot_without_a_key_refused():
    out = p.decide(DATA, options(secure_boot=True), debian_plan())
    assert not out["ok"] and "nvidia_driver_mok_key" in out["errors"][0] and "Secure Boot is on" in out["errors"][0]


def test_mok_key_must_exist_and_be_enrolled():
    o = options(secure_boot="true", mok_key="/root/MOK.priv", mok_certificate="/root/MOK.der")
    missing = p.decide(DATA, o, debian_plan(), facts={"mok": {"key_exists": True, "certificate_exists": False}})
    assert not missing["ok"] and "must exist on the host" in missing["errors"][0]
    pending = p.decide(DATA, o, debian_plan(), facts={"mok": {"key_exists": True, "certificate_exists": True,
                                                              "state": "pending", "text": "is already in the enrollment request"}})
    assert not pending["ok"] and "is pending" in pending["errors"][0] and "mokutil --import /root/MOK.der" in pending["errors"][0]
    enrolled = p.decide(DATA, o, debian_plan(), facts={"mok": {"key_exists": True, "certificate_exists": True, "state": "enrolled"}})
    assert enrolled["ok"] and enrolled["signing"] == {"path": "dkms", "problem": None, "dkms_config": "framework"}


def test_dkms_2_on_ubuntu_2204_needs_the_shim_signed_paths():
    o = options(distribution="Ubuntu", distribution_version="22.04", secure_boot="true", secure_boot_signing="mok",
                mok_key="/root/MOK.priv", mok_certificate="/root/MOK.der")
    mok = {"mok": {"key_exists": True, "certificate_exists": True, "state": "enrolled"}}
    out = p.decide(DATA, o, debian_plan(580, "open", ["nvidia-driver-580-server-open"]), facts=mok)
    assert not out["ok"] and "/var/lib/shim-signed/mok/MOK.priv" in out["errors"][0]
    o.update(mok_key="/var/lib/shim-signed/mok/MOK.priv", mok_certificate="/var/lib/shim-signed/mok/MOK.der")
    out = p.decide(DATA, o, debian_plan(580, "open", ["nvidia-driver-580-server-open"]), facts=mok)
    assert out["ok"] and out["signing"]["dkms_config"] == "shim-signed"


# --- what is installed, and where not ----------------------------------------------------------------

def test_no_gpu_in_the_plan_skips():
    plan = debian_plan()
    plan["stack"]["driver"] = None
    out = p.decide(DATA, options(), plan)
    assert out["ok"] and out["skip_reason"] == "No NVIDIA GPU in the plan for gpu1: no driver installed."


@pytest.mark.parametrize(("virt", "mode", "builds", "skip", "packages_only"), [
    ({"container": True, "container_type": "docker"}, "skip", [], "This host is a docker container", False),
    ({"wsl": True, "wsl_version": 2}, "skip", [], "This host is a WSL2 instance", False),
    ({"container": True}, "packages", [], "", True),
    ({"container": True}, "skip", ["6.1.0-57-amd64"], "", False),
    ({}, "skip", [], "", False),
])
def test_containers_and_wsl(virt, mode, builds, skip, packages_only):
    out = p.decide(DATA, options(in_container=mode, build_kernels=builds), debian_plan(), host={"virtualization": virt})
    assert out["ok"] and out["skip_reason"].startswith(skip) and (skip or out["skip_reason"] == "")
    assert out["packages_only"] is packages_only
    assert out["build_only"] is bool(builds)


def test_debian_set_and_components_from_the_data():
    facts = {"sources": [{"path": "/etc/apt/sources.list", "content": "# kept\ndeb http://deb.debian.org/debian bookworm main\n"},
                         {"path": "/etc/apt/sources.list.d/debian.sources",
                          "content": "Types: deb\nComponents: main contrib non-free non-free-firmware\n"}]}
    out = p.decide(DATA, options(), debian_plan(), facts=facts)
    assert out["set"]["packages"] == ["nvidia-kernel-dkms", "nvidia-smi", "libcuda1", "nvidia-persistenced", "firmware-nvidia-gsp"]
    assert out["set"]["dkms_module"] == "nvidia-current"
    assert out["components"] == ["contrib", "non-free", "non-free-firmware"]
    # only the file that lacks components is rewritten
    assert out["sources"] == [{"path": "/etc/apt/sources.list",
                               "content": "# kept\ndeb http://deb.debian.org/debian bookworm main contrib non-free non-free-firmware\n"}]


def test_ubuntu_needs_no_components():
    out = p.decide(DATA, options(distribution="Ubuntu", distribution_version="24.04"),
                   debian_plan(580, "open", ["nvidia-driver-580-server-open"]), facts={"sources": [{"path": "/x.list", "content": "deb u j main\n"}]})
    assert out["components"] == [] and out["sources"] == []
    assert out["set"]["packages"] == ["nvidia-headless-580-server-open", "nvidia-utils-580-server"]


# --- the branch change, decided once ------------------------------------------------------------------

def test_another_installed_branch_is_refused_unless_asked():
    out = p.decide(DATA, options(method="nvidia_repo", branch="595"), repo_plan(595), facts={"installed": R580})
    assert not out["ok"] and out["change"]["action"] == "refuse"
    assert "R580 is installed" in out["errors"][0] and "nvidia_driver_change_branch: true" in out["errors"][0]


def test_a_change_asked_for_simulates_without_the_old_branch():
    out = p.decide(DATA, options(method="nvidia_repo", branch="595", change_branch=True), repo_plan(595), facts={"installed": R580})
    assert out["ok"] and out["change"]["action"] == "change"
    assert out["simulate"]["sandbox"] and out["simulate"]["remove"] == [
        "nvidia-driver", "nvidia-driver-cuda", "nvidia-fabricmanager", "nvidia-kernel-open-dkms", "nvidia-open", "nvidia-open-580"]
    assert "Pin: version 595.*" in out["simulate"]["pin_text"]
    assert out["keep_path"] == "/var/backups/dlbox-nvidia-driver/R580-580.95.05"
    assert "Pin: version 580.*" in out["rollback_pin"]
    # issue 48: NVIDIA's repository on Debian takes the branch's packages from Origin NVIDIA only (any other release -1),
    # before and after a rollback (red-team: a positive pin, a third archive never wins)
    for text in (out["rollback_pin"], out["pin"]):
        assert "Pin: release o=NVIDIA\nPin-Priority: 1000" in text and "Pin: release *\nPin-Priority: -1" in text
    assert "o=Debian" not in out["pin"]
    assert "from R580 (580.95.05) to R595" in out["announce"]


def test_same_branch_is_a_plain_install():
    out = p.decide(DATA, options(method="nvidia_repo", branch="580"), repo_plan(580), facts={"installed": R580})
    assert out["ok"] and out["change"]["action"] == "install" and out["simulate"]["remove"] == []
    out = p.decide(DATA, options(), debian_plan(), facts={"installed": []})
    assert out["simulate"] == {"packages": out["set"]["packages"], "fabric_manager": [], "recommends": False, "sandbox": False,
                               "remove": [], "pin_name": "none", "pin_text": ""}


# --- apt's verdict ------------------------------------------------------------------------------------

def test_distro_verdict_on_the_debian_capture():
    facts = {"installed": [], "simulation": {"rc": 0, "stdout": fixture("debian12-apt-get-s-install-compute-set.txt"), "stderr": ""}}
    out = p.decide(DATA, options(), debian_plan(), facts=facts)
    assert out["ok"] and out["target_version"] == "535.309.01" and out["expect_branch"] == 535
    assert out["install_names"] == out["set"]["packages"]


def test_distro_apt_error_refused():
    facts = {"installed": [], "simulation": {"rc": 100, "stdout": "", "stderr": "E: Unable to locate package nvidia-kernel-dkms\n"}}
    out = p.decide(DATA, options(), debian_plan(), facts=facts)
    assert not out["ok"] and "apt cannot install nvidia-kernel-dkms" in out["errors"][0]
    assert "E: Unable to locate package" in out["errors"][0]


def test_transitional_package_refused_or_warned():
    plan = debian_plan(535, "proprietary", ["nvidia-headless-535-server"])
    facts = {"installed": [], "simulation": {"rc": 0, "stdout": fixture("ubuntu2204-apt-get-s-install-535-server.txt"), "stderr": ""}}
    o = options(distribution="Ubuntu", distribution_version="22.04")
    out = p.decide(DATA, o, plan, facts=facts)
    assert not out["ok"] and "nvidia-headless-580-server (R580)" in out["errors"][0] and 'nvidia_driver_branch: "580"' in out["errors"][0]
    warned = p.decide(DATA, dict(o, other_branch="warn"), plan, facts=facts)
    assert warned["ok"] and warned["expect_branch"] == 580 and "apt installs branch 580" in warned["warnings"][0]


def test_precompiled_path_refuses_a_dkms_package():
    plan = debian_plan(580, "open", ["nvidia-driver-580-open"])
    o = options(distribution="Ubuntu", distribution_version="22.04", profile="desktop", kernel="5.15.0-204-generic")
    # the signed modules' capture (headless no-DKMS set + linux-modules-nvidia-580-open-generic) with the desktop set's
    # primary nvidia-driver-580-open (issue 44), taken from the plain nvidia-driver-580-open capture, as is the DKMS package
    # that one brings: lines of two real captures put together, no recording of the combined command
    plain = fixture("ubuntu2204-apt-get-s-install-nvidia-driver-580-open.txt").splitlines()
    driver_line = [line for line in plain if line.startswith("Inst nvidia-driver-580-open ")]
    dkms_line = [line for line in plain if line.startswith("Inst nvidia-dkms-580-open ")]
    assert dkms_line and driver_line
    signed = fixture("ubuntu2204-apt-get-s-install-580-open-signed.txt") + "\n" + driver_line[0]
    facts = {"installed": [], "simulation": {"rc": 0, "stdout": signed + "\n" + dkms_line[0] + "\n"}}
    out = p.decide(DATA, o, plan, host={"secure_boot": True}, facts=facts)
    assert not out["ok"] and "nvidia-dkms-580-open" in out["errors"][0] and "Secure Boot rejects" in out["errors"][0]
    facts["simulation"]["stdout"] = signed
    assert p.decide(DATA, o, plan, host={"secure_boot": True}, facts=facts)["ok"]


def test_repo_verdict_exact_names_and_fabric_manager():
    facts = {"installed": R580, "simulation": {"rc": 0, "stdout": SIM_595}, "madison": MADISON}
    out = p.decide(DATA, options(method="nvidia_repo", branch="595", change_branch=True), repo_plan(595), facts=facts)
    assert out["ok"], out["errors"]
    assert out["target_version"] == "595.71.05"
    assert out["install_names"] == ["nvidia-open-595=595.71.05-1", "nvidia-driver-pinning-595=595.71.05-1"]
    assert out["fm"] == {"ok": True, "version": "595.71.05-1", "available": ["595.71.05", "580.95.05"]}


def test_repo_fabric_manager_missing_refused():
    sim = SIM_595.replace("595.71.05", "590.48.01").replace("595", "590")
    facts = {"installed": R580, "simulation": {"rc": 0, "stdout": sim}, "madison": MADISON}
    out = p.decide(DATA, options(method="nvidia_repo", branch="590", change_branch=True), repo_plan(590), facts=facts)
    assert not out["ok"]
    assert "Fabric Manager (nvidia-fabricmanager)" in out["errors"][0] and "590.48.01" in out["errors"][0]
    assert "595.71.05, 580.95.05" in out["errors"][0]


def test_repo_branch_that_slides_or_is_missing_refused():
    slides = SIM_595.replace("nvidia-driver (595", "nvidia-driver (620").replace("nvidia-driver-cuda (595", "nvidia-driver-cuda (620")
    out = p.decide(DATA, options(method="nvidia_repo", branch="595", change_branch=True), repo_plan(595),
                   facts={"installed": R580, "simulation": {"rc": 0, "stdout": slides}, "madison": MADISON})
    assert not out["ok"] and "does not give driver branch 595 as a whole" in out["errors"][0] and "nvidia-driver 620" in out["errors"][0]
    missing = p.decide(DATA, options(method="nvidia_repo", branch="595", change_branch=True), repo_plan(595),
                       facts={"installed": R580, "simulation": {"rc": 100, "stdout": "", "stderr": "E: no nvidia-open-595\n"}})
    assert not missing["ok"] and missing["errors"][0].startswith("apt cannot install nvidia-open-595 nvidia-driver-pinning-595")


def test_repo_version_below_the_plan_refused():
    plan = repo_plan(595)
    plan["stack"]["driver"]["min_version"] = "595.80.01"
    out = p.decide(DATA, options(method="nvidia_repo", branch="595", change_branch=True), plan,
                   facts={"installed": R580, "simulation": {"rc": 0, "stdout": SIM_595}, "madison": MADISON})
    assert not out["ok"] and "the plan needs 595.80.01 or newer" in out["errors"][0]


def test_repo_pending_in_check_mode_reports_the_plans_version():
    out = p.decide(DATA, options(method="nvidia_repo", branch="580", check_mode=True), repo_plan(580),
                   facts={"installed": [], "pending": True})
    assert out["ok"] and out["target_version"] == "580.95.05" and out["install_names"] == ["nvidia-open-580"]
    assert out["fm"] == {"ok": True, "version": "580.95.05-*", "available": []}


# --- after the install, copies and rollback -----------------------------------------------------------

def test_after_the_install_checks_holds_and_blacklist():
    facts = {"installed": [], "simulation": {"rc": 0, "stdout": fixture("debian12-apt-get-s-install-compute-set.txt")}}
    good = installed(("nvidia-kernel-dkms", "535.309.01-0+deb12u1"), ("nvidia-smi", "535.309.01-0+deb12u1"),
                     ("libcuda1", "535.309.01-0+deb12u1"), ("nvidia-persistenced", "535.171.04-1"),
                     ("firmware-nvidia-gsp", "535.309.01-0+deb12u1"), ("libnvidia-ml1", "535.309.01-0+deb12u1"), ("bash", "5.2"))
    out = p.decide(DATA, options(), debian_plan(), facts=dict(facts, after=good))
    assert out["after"] == {"version": "535.309.01", "branch": 535, "problems": [], "fm_installed": False}
    assert out["holds"] == ["nvidia-kernel-dkms", "nvidia-smi", "libcuda1", "nvidia-persistenced", "firmware-nvidia-gsp"]
    assert "libnvidia-ml1" in out["blacklist"] and "bash" not in out["blacklist"]
    bad = [dict(i, version="535.261.03-1") if i["name"] == "firmware-nvidia-gsp" else i for i in good]
    out = p.decide(DATA, options(), debian_plan(), facts=dict(facts, after=bad))
    assert "with firmware-nvidia-gsp at the same version" in out["after"]["problems"][0]


def test_after_in_check_mode_without_the_packages_checks_nothing():
    facts = {"installed": [], "pending": True, "after": []}
    out = p.decide(DATA, options(method="nvidia_repo", branch="580", check_mode=True), repo_plan(580), facts=facts)
    assert out["after"] is None and out["holds"] == []


def test_kept_copies_and_rollback():
    o = options(method="nvidia_repo", branch="595", change_branch=True)
    out = p.decide(DATA, o, repo_plan(595), facts={"installed": R580, "archives": ["nvidia-open_580.95.05-1_amd64.deb"]})
    kept = out["kept"]
    assert [k["source"] for k in kept if k["name"] == "nvidia-open"] == ["archive"]
    assert [k["source"] for k in kept if k["name"] == "nvidia-driver"] == ["repack"]
    failed = "nvidia-open-595\t595.71.05-1\tamd64\tiF\n" + "".join(
        "%s\t%s\tamd64\tii\n" % (i["name"], i["version"]) for i in R580 if i["name"] != "nvidia-open")
    back = p.decide(DATA, o, repo_plan(595), facts={"installed": R580, "failed": nd.parse_dpkg_query(failed), "kept": kept})
    assert back["rollback"]["purge"] == ["nvidia-open-595"] and back["rollback"]["branch"] == 580
    assert len(back["rollback"]["install"]) == len(kept)


def test_signing_and_mok_state():
    # ported from the former filters' test (nvidia_driver_signing, nvidia_driver_mok_state)
    assert p.signing_path("Ubuntu", True)["path"] == "precompiled"
    assert nd.parse_mokutil_test_key("x is not enrolled\n") == "not-enrolled"
    out = p.decide(DATA, options(distribution="Ubuntu", distribution_version="24.04"), debian_plan(580, "open", ["nvidia-driver-580-open"]),
                   host={"secure_boot": True})
    assert out["secure_boot"] and out["signing"]["path"] == "precompiled" and out["set"]["dkms_module"] is None


def test_a_given_set_is_judged_instead_of_the_datas():
    # the live-archive scenario (molecule/nvidia_driver_ubuntu) judges the plain driver on the Secure Boot path
    o = options(distribution="Ubuntu", distribution_version="22.04", profile="desktop", packages=["nvidia-driver-580-open"],
                same_version=["nvidia-utils-580", "not-in-the-set"])
    facts = {"installed": [], "simulation": {"rc": 0, "stdout": fixture("ubuntu2204-apt-get-s-install-nvidia-driver-580-open.txt")}}
    out = p.decide(DATA, o, debian_plan(580, "open", ["nvidia-driver-580-open"]), host={"secure_boot": True}, facts=facts)
    assert out["set"]["packages"] == ["nvidia-driver-580-open"] and out["set"]["same_version"] == []
    assert not out["ok"] and "nvidia-dkms-580-open" in out["errors"][0] and "unsigned module" in out["errors"][0]
