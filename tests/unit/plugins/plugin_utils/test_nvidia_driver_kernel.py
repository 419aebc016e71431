"""nvidia_driver_kernel and module_utils.kernel: the kernel flavour, the running kernel's signed module, the kernel that
boots next, and what is never held, on captures RECORDED against Ubuntu's live archive (tests/fixtures/kernel/, dated,
with their commands: real dpkg-query answers over a dpkg status built from the archive's real control data, and real
`apt-cache pkgnames` lists).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.dlbox.stack.plugins.module_utils import kernel as k
from ansible_collections.dlbox.stack.plugins.plugin_utils import nvidia_driver_kernel as nk
from ansible_collections.dlbox.stack.plugins.plugin_utils import nvidia_driver_plan as p
from ansible_collections.dlbox.stack.plugins.plugin_utils.compat_data import load_compat

ROOT = Path(__file__).resolve().parents[4]
FIX = ROOT / "tests" / "fixtures" / "kernel"
DATA = load_compat(str(ROOT / "tests" / "unit" / "data" / "compat-frozen.yml"))
HWE = {"ubuntu2204": "22.04", "ubuntu2404": "24.04"}
# The kernels the archive's metas pointed at when the captures were recorded (see the captures' apt-cache-show-metas.txt).
GA_KERNEL = {"ubuntu2204": "5.15.0-204-generic", "ubuntu2404": "6.8.0-151-generic"}
HWE_KERNEL = {"ubuntu2204": "6.8.0-149-generic", "ubuntu2404": "7.0.0-44-generic"}
OLD_KERNEL = {"ubuntu2204": "5.15.0-25-generic", "ubuntu2404": "6.8.0-31-generic"}


def capture(distro, name):
    return "".join(line for line in (FIX / distro / name).read_text(encoding="utf-8").splitlines(True) if not line.startswith("#"))


def packages(distro, case):
    return k.parse_kernel_packages(capture(distro, "dpkg-query-kernel-%s.txt" % case))


def module_names(distro):
    return capture(distro, "apt-cache-pkgnames-linux-modules-nvidia-580-open.txt").split()


def kernel_facts(distro, case, running, boot=()):
    return {"running": running, "packages": packages(distro, case), "boot": list(boot), "module_names": module_names(distro)}


# --- the flavour, from the installed metas ------------------------------------------------------------------

@pytest.mark.parametrize("distro", ["ubuntu2204", "ubuntu2404"])
@pytest.mark.parametrize(("case", "flavour", "kernel"), [
    ("ga-desktop", "generic", GA_KERNEL),
    ("hwe-desktop", "generic-hwe-{hwe}", HWE_KERNEL),
    ("ga-server", "virtual", GA_KERNEL),
    ("hwe-server", "virtual-hwe-{hwe}", HWE_KERNEL),
    ("ga-and-hwe", "generic-hwe-{hwe}", HWE_KERNEL),   # both metas: the one on the newest kernel
    ("hwe-desktop-with-module", "generic-hwe-{hwe}", HWE_KERNEL),
])
def test_flavour_from_the_recorded_metas(distro, case, flavour, kernel):
    found = k.flavour_from_metas(packages(distro, case))
    assert found["flavour"] == flavour.format(hwe=HWE[distro])
    assert found["kernel"] == kernel[distro]


@pytest.mark.parametrize("distro", ["ubuntu2204", "ubuntu2404"])
def test_release_pocket_ga_and_hwe_on_one_kernel_is_ambiguous(distro):
    # The release pocket's linux-image-generic-hwe-XX.04 is the GA kernel: both metas on one kernel.
    found = k.flavour_from_metas(packages(distro, "release-pocket-ga-and-hwe"))
    assert found["flavour"] is None and found["kernel"] == OLD_KERNEL[distro]
    assert found["candidates"] == ["generic", "generic-hwe-%s" % HWE[distro]]
    out = nk.decide_flavour(kernel_facts(distro, "release-pocket-ga-and-hwe", OLD_KERNEL[distro]), "", OLD_KERNEL[distro], 580, "", "-open")
    assert out["flavour"] is None
    assert "nvidia_driver_kernel_flavour" in out["problem"] and "Nothing was changed" in out["problem"]
    assert "generic-hwe-%s" % HWE[distro] in out["problem"] and OLD_KERNEL[distro] in out["problem"]
    # the variable settles it
    assert nk.decide_flavour(kernel_facts(distro, "release-pocket-ga-and-hwe", OLD_KERNEL[distro]), "generic")["flavour"] == "generic"


@pytest.mark.parametrize("distro", ["ubuntu2204", "ubuntu2404"])
def test_hwe_machine_running_a_generic_release_gets_the_hwe_meta(distro):
    # uname -r ends in -generic on the HWE kernel too: the old rule gave the GA meta.
    running = HWE_KERNEL[distro]
    assert k.kernel_flavour(running) == "generic"
    out = nk.decide_flavour(kernel_facts(distro, "hwe-desktop", running), "", running, 580, "", "-open")
    assert out["flavour"] == "generic-hwe-%s" % HWE[distro] and out["problem"] is None
    assert out["source"] == "installed kernel meta linux-image-generic-hwe-%s" % HWE[distro]


@pytest.mark.parametrize("distro", ["ubuntu2204", "ubuntu2404"])
def test_server_virtual_meta_has_no_module_meta_and_is_refused_naming_the_variable(distro):
    # linux-virtual: the archive has no linux-modules-nvidia-580-open-virtual (recorded pkgnames).
    assert "linux-modules-nvidia-580-open-virtual" not in module_names(distro)
    out = nk.decide_flavour(kernel_facts(distro, "ga-server", GA_KERNEL[distro]), "", GA_KERNEL[distro], 580, "", "-open")
    assert out["flavour"] is None and "nvidia_driver_kernel_flavour" in out["problem"]
    assert "linux-modules-nvidia-580-open-virtual" in out["problem"]


def test_no_meta_and_no_facts_fall_back_to_the_running_release():
    assert nk.decide_flavour(None, "", "6.8.0-1015-nvidia")["flavour"] == "nvidia"
    assert nk.decide_flavour(None, "", "6.18.44-fc-v769")["flavour"] == "generic"
    # the test container: dpkg has no kernel package (dpkg-l-container.txt)
    assert "linux-image" not in capture("ubuntu2404", "dpkg-l-container.txt")
    container = {"running": "6.18.44-fc-v769", "packages": [], "module_names": module_names("ubuntu2404")}
    assert nk.decide_flavour(container, "", "6.18.44-fc-v769", 580, "", "-open")["flavour"] == "generic"


# --- the running kernel's signed module, or the kernel that boots next ------------------------------------------

@pytest.mark.parametrize("distro", ["ubuntu2204", "ubuntu2404"])
def test_running_kernel_with_a_signed_module_gets_its_per_abi_package(distro):
    running = HWE_KERNEL[distro]
    out = nk.signed_module(580, "", "-open", "generic-hwe-%s" % HWE[distro], kernel_facts(distro, "hwe-desktop", running), running)
    assert out["install"] == ["linux-modules-nvidia-580-open-%s" % running]
    assert out["pending_reboot_reason"] == "" and out["problem"] is None


def test_running_kernel_without_a_module_defers_to_the_kernel_that_boots_next():
    # 24.04 HWE desktop still running the release kernel: the archive has no 580 module for 6.8.0-31-generic.
    running = OLD_KERNEL["ubuntu2404"]
    assert "linux-modules-nvidia-580-open-%s" % running not in module_names("ubuntu2404")
    facts = kernel_facts("ubuntu2404", "hwe-desktop", running, boot=[running, "7.0.0-44-generic"])
    out = nk.signed_module(580, "", "-open", "generic-hwe-24.04", facts, running)
    assert out["install"] == [] and out["problem"] is None and out["next_boot"] == "7.0.0-44-generic"
    assert out["pending_reboot_reason"] == (
        "The running kernel 6.8.0-31-generic has no signed NVIDIA module in the archive (no "
        "linux-modules-nvidia-580-open-6.8.0-31-generic); the module is installed for kernel 7.0.0-44-generic, which "
        "boots next: reboot into it to load the driver.")


def test_container_kernel_without_module_and_without_meta_is_refused_naming_the_kernel():
    running = "6.18.44-fc-v769"
    facts = {"running": running, "packages": [], "boot": [], "module_names": module_names("ubuntu2404")}
    out = nk.signed_module(580, "", "-open", "generic", facts, running)
    assert out["pending_reboot_reason"] == ""
    assert "The running kernel 6.18.44-fc-v769 has no signed NVIDIA module" in out["problem"]
    assert "linux-image-generic" in out["problem"] and "Nothing was changed" in out["problem"]


def test_meta_with_a_newer_kernel_than_boot_is_the_next_boot():
    # the HWE meta installed, /boot still only the old kernel: the module meta brings 7.0.0-44's module (and its
    # Depends linux-image-7.0.0-44-generic | linux-image-unsigned-7.0.0-44-generic, recorded).
    running = OLD_KERNEL["ubuntu2404"]
    out = nk.signed_module(580, "", "-open", "generic-hwe-24.04", kernel_facts("ubuntu2404", "hwe-desktop", running, boot=[running]), running)
    assert out["next_boot"] == "7.0.0-44-generic" and "7.0.0-44-generic, which boots next" in out["pending_reboot_reason"]


def test_recorded_module_meta_depends_on_the_per_abi_package_of_the_meta_kernel():
    text = capture("ubuntu2404", "apt-cache-depends-nvidia-metas.txt")
    assert "Depends: linux-modules-nvidia-580-open-7.0.0-44-generic" in text
    assert "Depends: linux-modules-nvidia-580-open-6.8.0-151-generic" in text


# --- the running kernel's module must fit the driver version (red-team: a kernel the archive no longer updates) -----
#
# Real control data, RECORDED from Ubuntu's live archive: tests/fixtures/holds/ubuntu2404-noble-updates-nvidia-580.txt
# (noble-updates' Packages of 2026-12-04, verbatim stanzas): nvidia-kernel-common-580 is at 580.196.07-0ubuntu0.24.04.1,
# the module of kernel 6.8.0-151 was respun against it (6.8.0-151.151+1), and the module of kernel 6.8.0-149 stayed at the
# release it was built with: Depends nvidia-kernel-common-580 (<= 580.178.04-1), nvidia-kernel-common-580 (>= 580.178.04).
# A host still running 6.8.0-149 that asks for the driver gets 580.196.07, with which that module cannot be installed.
# Also tests/fixtures/kernel/ubuntu2404/apt-cache-show-per-abi-module.txt (7.0.0-44's module, 580.178.04, 2026-12-02).
NOBLE_UPDATES = ROOT / "tests" / "fixtures" / "holds" / "ubuntu2404-noble-updates-nvidia-580.txt"
OLD_ABI, NEW_ABI = "6.8.0-149-generic", GA_KERNEL["ubuntu2404"]
OLD_MODULE = "linux-modules-nvidia-580-open-" + OLD_ABI
DRIVER = "580.196.07-0ubuntu0.24.04.1"  # nvidia-kernel-common-580's Version in the same recorded Packages


def recorded(name):
    """The recorded noble-updates stanza of ``name`` (as ``apt-cache show --no-all-versions`` prints it)."""
    text = "".join(line for line in NOBLE_UPDATES.read_text(encoding="utf-8").splitlines(True) if not line.startswith("#"))
    found = [block for block in text.split("\n\n") if block.strip().startswith("Package: %s\n" % name)]
    assert len(found) == 1, name
    return found[0] + "\n"


def _policy(installed, candidate):
    """An ``apt-cache policy nvidia-kernel-common-580`` answer in apt's format (the recorded one:
    tests/fixtures/driver/ubuntu2204-apt-cache-policy-535-server.txt), with the recorded versions."""
    return "nvidia-kernel-common-580:\n  Installed: %s\n  Candidate: %s\n  Version table:\n" % (installed, candidate)


def test_recorded_per_abi_modules_pin_one_driver_point_release():
    common = "nvidia-kernel-common-580"
    assert nk.common_requirement(recorded(OLD_MODULE), common) == [("<=", "580.178.04-1"), (">=", "580.178.04")]
    assert nk.common_requirement(recorded("linux-modules-nvidia-580-open-" + NEW_ABI), common) == [
        ("<=", "580.196.07-1"), (">=", "580.196.07")]
    show = capture("ubuntu2404", "apt-cache-show-per-abi-module.txt")
    assert nk.common_requirement(show, common) == [("<=", "580.178.04-1"), (">=", "580.178.04")]
    assert nk.common_requirement(show, "nvidia-kernel-common-580-server") is None
    assert "Version: %s\n" % DRIVER in recorded(common)


def test_recorded_policy_gives_installed_and_candidate():
    text = (FIX.parent / "driver" / "ubuntu2204-apt-cache-policy-535-server.txt").read_text(encoding="utf-8")
    assert nk.policy_versions(text) == {"installed": None, "candidate": "535.309.01-0ubuntu0.22.04.2"}


@pytest.mark.parametrize(("version", "fits"), [
    ("580.178.04-0ubuntu0.24.04.1", True),              # the build the module was made with (recorded Built-Using)
    ("580.178.04-0ubuntu0.24.04.1+fixture1", True),     # the FIXTURE archive's
    ("580.178.04-1", True), ("580.178.04-2", False),    # the bounds
    (DRIVER, False), ("580.126.09-0ubuntu0.24.04.1", False), ("595.99.02-0ubuntu0.24.04.1", False),
])
def test_the_recorded_relations_take_exactly_one_point_release(version, fits):
    assert nk.satisfies(version, nk.common_requirement(recorded(OLD_MODULE), "nvidia-kernel-common-580")) is fits


def _old_abi_facts():
    """noble, linux-generic installed (its kernel 6.8.0-151-generic, recorded), still running 6.8.0-149-generic; the
    module names apt knew (recorded pkgnames: both per-ABI packages are there)."""
    assert OLD_MODULE in module_names("ubuntu2404") and "linux-modules-nvidia-580-open-" + NEW_ABI in module_names("ubuntu2404")
    return kernel_facts("ubuntu2404", "ga-desktop", OLD_ABI, boot=[OLD_ABI])


def test_running_kernel_module_of_an_older_point_release_is_left_out_and_the_next_kernel_gets_it():
    fit = {"show": recorded(OLD_MODULE), "policy": _policy("(none)", DRIVER)}
    out = nk.signed_module(580, "", "-open", "generic", _old_abi_facts(), OLD_ABI, fit)
    assert out["install"] == [] and out["problem"] is None and out["next_boot"] == NEW_ABI
    assert out["fit"]["fits"] is False and out["fit"]["driver_version"] == DRIVER
    assert out["pending_reboot_reason"] == (
        "The running kernel 6.8.0-149-generic has no signed NVIDIA module in the archive for driver "
        "580.196.07-0ubuntu0.24.04.1 (linux-modules-nvidia-580-open-6.8.0-149-generic was built for another driver point "
        "release: it Depends nvidia-kernel-common-580 <= 580.178.04-1 >= 580.178.04; apt cannot install it with this "
        "driver); the module is installed for kernel 6.8.0-151-generic, which boots next: reboot into it to load the driver.")


def test_running_kernel_module_of_the_installed_point_release_is_added():
    # the driver installed at the module's release stays there (no nvidia_driver_update): the module fits
    fit = {"show": recorded(OLD_MODULE), "policy": _policy("580.178.04-0ubuntu0.24.04.1", DRIVER)}
    out = nk.signed_module(580, "", "-open", "generic", _old_abi_facts(), OLD_ABI, fit)
    assert out["install"] == [OLD_MODULE] and out["pending_reboot_reason"] == "" and out["fit"]["fits"] is True


def test_running_kernel_module_of_the_candidate_is_added():
    fit = {"show": recorded("linux-modules-nvidia-580-open-" + NEW_ABI), "policy": _policy("(none)", DRIVER)}
    out = nk.signed_module(580, "", "-open", "generic", kernel_facts("ubuntu2404", "ga-desktop", NEW_ABI), NEW_ABI, fit)
    assert out["install"] == ["linux-modules-nvidia-580-open-" + NEW_ABI] and out["fit"] == {
        "fits": True, "known": True, "requires": [("<=", "580.196.07-1"), (">=", "580.196.07")],
        "driver_version": DRIVER, "problem": None}


def test_server_series_module_is_judged_against_the_server_userland():
    # recorded: linux-modules-nvidia-580-server-open-6.8.0-151-generic Depends nvidia-kernel-common-580-server 580.196.07;
    # a host whose -server driver stays installed at 580.178.04 (no nvidia_driver_update) cannot take it
    module = "linux-modules-nvidia-580-server-open-" + NEW_ABI
    assert nk.common_name(580, "-server") == "nvidia-kernel-common-580-server" and nk.common_name(580, "") == "nvidia-kernel-common-580"
    facts = kernel_facts("ubuntu2404", "ga-desktop", NEW_ABI)
    facts["module_names"] = facts["module_names"] + [module, "linux-modules-nvidia-580-server-open-generic"]
    fit = {"show": recorded(module), "policy": _policy("580.178.04-0ubuntu0.24.04.1", DRIVER)}
    out = nk.signed_module(580, "-server", "-open", "generic", facts, NEW_ABI, fit)
    assert out["install"] == [] and out["fit"]["requires"] == [("<=", "580.196.07-1"), (">=", "580.196.07")]
    assert "nvidia-kernel-common-580-server <= 580.196.07-1" in (out["problem"] or out["pending_reboot_reason"])


def test_running_kernel_module_already_installed_stays_whatever_apt_says():
    facts = _old_abi_facts()
    facts["packages"] = facts["packages"] + [{"name": OLD_MODULE, "version": "6.8.0-149.149", "installed": True, "depends": ""}]
    fit = {"show": recorded(OLD_MODULE), "policy": _policy("(none)", DRIVER)}
    out = nk.signed_module(580, "", "-open", "generic", facts, OLD_ABI, fit)
    assert out["install"] == [OLD_MODULE] and out["fit"]["known"] is False


def test_running_kernel_module_of_another_release_without_a_next_kernel_is_refused():
    # no kernel meta installed: the running kernel's module is the only one, and it is of another point release
    facts = _old_abi_facts()
    facts["packages"] = [q for q in facts["packages"] if not q["name"].startswith(("linux-image-generic", "linux-generic"))]
    fit = {"show": recorded(OLD_MODULE), "policy": _policy("(none)", DRIVER)}
    out = nk.signed_module(580, "", "-open", "generic", facts, OLD_ABI, fit)
    assert out["install"] == [] and out["pending_reboot_reason"] == ""
    assert "built for another driver point release" in out["problem"] and "Nothing was changed" in out["problem"]


# --- through the role's decision (nvidia_driver_plan.decide) ---------------------------------------------------------

def _ubuntu_plan():
    return {"ok": True, "errors": [], "host": {"nvswitch": False},
            "stack": {"driver": {"branch": 580, "kernel_modules": "open", "method": "distro", "packages": ["nvidia-driver-580-open"],
                                 "repo": None, "family": DATA["driver_package_names"]["family"], "min_version": "580.0",
                                 "version_available": None}, "fabric_manager": None}}


def _options(running, **over):
    base = dict(method="distro", branch="", kernel_modules="", profile="desktop", other_branch="refuse", change_branch=False,
                keep_dir="/var/backups/dlbox-nvidia-driver", in_container="skip", build_kernels=[], kernel_flavour="",
                secure_boot="auto", secure_boot_signing="auto", mok_key="", mok_certificate="",
                shim_mok_dir="/var/lib/shim-signed/mok", pin_name="dlbox-00-nvidia-driver-branch.pref", hostname="gpu1",
                distribution="Ubuntu", distribution_version="24.04", kernel=running, check_mode=False, request_text="{}")
    base.update(over)
    return base


def test_decide_hwe_running_kernel_installs_the_hwe_meta_and_the_per_abi_package():
    running = HWE_KERNEL["ubuntu2404"]
    out = p.decide(DATA, _options(running), _ubuntu_plan(), host={"secure_boot": True},
                   facts={"kernel": kernel_facts("ubuntu2404", "hwe-desktop", running)})
    assert out["ok"] and out["signing"]["path"] == "precompiled"
    assert "linux-modules-nvidia-580-open-generic-hwe-24.04" in out["set"]["packages"]
    assert out["set"]["packages"][-1] == "linux-modules-nvidia-580-open-7.0.0-44-generic"
    assert out["kernel"]["flavour"] == "generic-hwe-24.04" and out["pending_reboot_reason"] == ""
    # the branch is kept by name (the pin), not by holds; never a package of the branch from NVIDIA's repository (issue 48)
    assert "Pin: version 580.*" in out["pin"]
    assert "Pin: release o=Ubuntu\nPin-Priority: 1000" in out["pin"] and "Pin: release *\nPin-Priority: -1" in out["pin"]


def test_decide_ambiguous_is_refused_before_any_change():
    running = OLD_KERNEL["ubuntu2404"]
    out = p.decide(DATA, _options(running), _ubuntu_plan(), host={"secure_boot": True},
                   facts={"installed": [], "kernel": kernel_facts("ubuntu2404", "release-pocket-ga-and-hwe", running)})
    assert not out["ok"] and "nvidia_driver_kernel_flavour" in out["errors"][0]
    assert out["set"] is None and out["simulate"] is None


def test_decide_ambiguous_on_the_dkms_path_is_no_refusal():
    running = OLD_KERNEL["ubuntu2404"]
    out = p.decide(DATA, _options(running), _ubuntu_plan(), host={"secure_boot": False},
                   facts={"installed": [], "kernel": kernel_facts("ubuntu2404", "release-pocket-ga-and-hwe", running)})
    assert out["ok"] and out["signing"]["path"] == "dkms" and out["set"]["packages"] == ["nvidia-driver-580-open"]


def test_decide_defers_to_the_next_boot_before_any_change():
    running = OLD_KERNEL["ubuntu2404"]
    out = p.decide(DATA, _options(running), _ubuntu_plan(), host={"secure_boot": True},
                   facts={"kernel": kernel_facts("ubuntu2404", "hwe-desktop", running, boot=[running, "7.0.0-44-generic"])})
    assert out["ok"] and "6.8.0-31-generic" in out["pending_reboot_reason"] and "7.0.0-44-generic" in out["pending_reboot_reason"]
    assert not any(n.endswith(running) for n in out["set"]["packages"])


def test_decide_dkms_path_keeps_the_flavour_but_adds_no_module_package():
    running = HWE_KERNEL["ubuntu2404"]
    out = p.decide(DATA, _options(running), _ubuntu_plan(), host={"secure_boot": False},
                   facts={"kernel": kernel_facts("ubuntu2404", "hwe-desktop", running)})
    assert out["ok"] and out["signing"]["path"] == "dkms" and out["pending_reboot_reason"] == ""
    assert not any(n.startswith("linux-modules-nvidia") for n in out["set"]["packages"])


def test_decide_leaves_out_a_running_kernel_module_of_another_driver_release():
    # the recorded 6.8.0-149 module (580.178.04) against the recorded driver 580.196.07: the module meta brings 6.8.0-151's
    facts = {"kernel": _old_abi_facts(), "running_module": {"show": recorded(OLD_MODULE), "policy": _policy("(none)", DRIVER)}}
    out = p.decide(DATA, _options(OLD_ABI), _ubuntu_plan(), host={"secure_boot": True}, facts=facts)
    assert out["ok"] and OLD_MODULE not in out["set"]["packages"]
    assert "linux-modules-nvidia-580-open-generic" in out["set"]["packages"]
    assert out["kernel"]["common"] == "nvidia-kernel-common-580" and out["kernel"]["fit"]["fits"] is False
    assert "built for another driver point release" in out["pending_reboot_reason"]
    assert NEW_ABI + ", which boots next" in out["pending_reboot_reason"]
    # the same read with the driver installed at the module's release: the module joins the set, nothing pending
    facts["running_module"]["policy"] = _policy("580.178.04-0ubuntu0.24.04.1", DRIVER)
    out = p.decide(DATA, _options(OLD_ABI), _ubuntu_plan(), host={"secure_boot": True}, facts=facts)
    assert out["set"]["packages"][-1] == OLD_MODULE and out["pending_reboot_reason"] == ""


# --- never held, never blacklisted ------------------------------------------------------------------------------

def test_after_install_on_the_signed_path_holds_nothing_that_follows_the_kernel():
    running = HWE_KERNEL["ubuntu2404"]
    after = [{"name": n, "version": v, "arch": "amd64"} for n, v in [
        ("nvidia-headless-no-dkms-580-open", "580.178.04-0ubuntu0.24.04.1"), ("nvidia-utils-580", "580.178.04-0ubuntu0.24.04.1"),
        ("nvidia-kernel-common-580", "580.178.04-0ubuntu0.24.04.1"), ("libnvidia-gl-580", "580.178.04-0ubuntu0.24.04.1"),
        ("xserver-xorg-video-nvidia-580", "580.178.04-0ubuntu0.24.04.1"),
        ("linux-modules-nvidia-580-open-generic-hwe-24.04", "7.0.0-44.44~24.04.1"),
        ("linux-modules-nvidia-580-open-7.0.0-44-generic", "7.0.0-44.44~24.04.1"),
        ("linux-objects-nvidia-580-open-7.0.0-44-generic", "7.0.0-44.44~24.04.1"),
        ("linux-signatures-nvidia-7.0.0-44-generic", "7.0.0-44.44~24.04.1")]]
    out = p.decide(DATA, _options(running), _ubuntu_plan(), host={"secure_boot": True},
                   facts={"kernel": kernel_facts("ubuntu2404", "hwe-desktop", running), "installed": [], "after": after})
    assert out["holds"] == []
    # issue 48 (red-team): Ubuntu's design: kernel meta, module meta, nvidia-kernel-common and user space move together
    # in unattended-upgrades (security kernels included): nothing of them is blacklisted on the signed path
    assert out["blacklist"] == []


def test_keep_lists_on_the_dkms_path_keeps_the_userland_holds():
    held, blacklist = nk.keep_lists(["nvidia-driver-580-open", "linux-modules-nvidia-580-open-generic"],
                                    ["nvidia-driver-580-open", "linux-objects-nvidia-580-open-6.8.0-90-generic",
                                     "linux-signatures-nvidia-6.8.0-90-generic", "nvidia-kernel-common-580"], "dkms", 580)
    assert held == ["nvidia-driver-580-open"]
    assert blacklist == ["nvidia-driver-580-open"]  # issue 48: nvidia-kernel-common follows the kernel


def test_the_data_blacklist_keeps_no_kernel_follower():
    live = load_compat(str(ROOT / "data" / "compat.yml"))
    assert not [r for r in live["driver_package_names"]["upgrade_blacklist"] if "linux-" in r]


def test_recorded_per_abi_module_requires_the_exact_userland_version():
    # why nothing is held on the signed path: the module requires nvidia-kernel-common-580 at exactly its version
    text = capture("ubuntu2404", "apt-cache-show-per-abi-module.txt")
    assert "nvidia-kernel-common-580 (<= 580.178.04-1), nvidia-kernel-common-580 (>= 580.178.04)" in text


# --- the kernel that boots next; DKMS; headers ------------------------------------------------------------------------

def test_next_boot_kernel_is_the_newest_in_boot():
    assert k.next_boot_kernel(["6.8.0-31-generic", "7.0.0-44-generic", "6.8.0-151-generic"], "6.8.0-31-generic") == "7.0.0-44-generic"
    assert k.next_boot_kernel([], "6.18.44-fc-v769") == "6.18.44-fc-v769"
    assert k.release_key("6.8.0-151-generic") > k.release_key("6.8.0-31-generic")


def test_installed_kernels_from_the_recorded_status():
    assert k.installed_kernels(packages("ubuntu2404", "ga-and-hwe")) == ["7.0.0-44-generic", "6.8.0-151-generic"]


@pytest.mark.parametrize("distro", ["ubuntu2204", "ubuntu2404"])
@pytest.mark.parametrize(("case", "first"), [
    ("hwe-desktop", "linux-headers-generic-hwe-{hwe}"),
    ("ga-desktop", "linux-headers-generic"),
    ("hwe-server", "linux-headers-virtual-hwe-{hwe}"),
])
def test_common_headers_meta_follows_the_installed_metas(distro, case, first):
    text = capture(distro, "dpkg-query-kernel-%s.txt" % case)
    got = k.headers_meta_candidates(HWE_KERNEL[distro], "Ubuntu", "x86_64", text)
    assert got[0] == first.format(hwe=HWE[distro])
    assert "linux-headers-generic" in got


def test_module_names_for_keeps_the_kernels_and_the_metas():
    names = module_names("ubuntu2404")
    kept = k.module_names_for(names, ["7.0.0-44-generic", "6.18.44-fc-v769"])
    assert "linux-modules-nvidia-580-open-7.0.0-44-generic" in kept
    assert "linux-modules-nvidia-580-open-generic-hwe-24.04" in kept
    assert "linux-modules-nvidia-580-open-6.8.0-151-generic" not in kept
