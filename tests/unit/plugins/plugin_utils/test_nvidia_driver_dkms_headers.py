"""nvidia_driver_kernel.module_check on the DKMS path where the running kernel has no headers (issue 44 red team H1).

The case as users reported it: GoogleCloudPlatform/compute-gpu-installation#28 and GoogleCloudDataproc/initialization-
actions#1084 (Debian 11 on GCE, running 5.10.0-24-cloud-amd64: "E: Unable to locate package
linux-headers-5.10.0-24-cloud-amd64" once 5.10.0-25 came; the headers meta then brings 5.10.0-25's headers only). DKMS
builds for kernels with a build tree only (DKMS 3.0.11 dkms.in: "Your kernel headers for kernel K cannot be found at
/lib/modules/K/build or /lib/modules/K/source."), so "every kernel with headers has the module" passed and the role said
"pending reboot" while GRUB kept booting 5.10.0-24: pending forever. modinfo's answer for a kernel without the module:
kmod's "modinfo: ERROR: Module nvidia not found." (RPM Fusion's NVIDIA Howto quotes it).
"""

from __future__ import annotations

from ansible_collections.dlbox.stack.plugins.plugin_utils import nvidia_driver_kernel as nk

OLD, NEW = "5.10.0-24-cloud-amd64", "5.10.0-25-cloud-amd64"  # compute-gpu-installation#28's kernels
VERSION = "535.216.03"
NOT_FOUND = "modinfo: ERROR: Module nvidia not found."


def check(next_boot, modinfo, headers=None, boot=None, dkms=(NEW,)):
    return nk.module_check("dkms", dkms_kernels=list(dkms), running=OLD, next_boot=next_boot, modinfo=modinfo,
                           expected=VERSION, headers=headers, boot_kernels=boot)


def test_the_kernel_that_boots_next_is_asked_too_when_the_running_one_has_no_headers():
    assert nk.module_check("dkms", dkms_kernels=[NEW], running=OLD, next_boot=OLD)["kernels"] == [NEW, OLD]
    # headers for the running kernel: as before, every kernel with headers, nothing more
    assert nk.module_check("dkms", dkms_kernels=[OLD], running=OLD, next_boot=NEW)["kernels"] == [OLD]


def test_gce_28_the_running_kernel_boots_again_so_no_pending_reboot_but_a_failure_naming_its_headers():
    out = check(OLD, {NEW: VERSION, OLD: NOT_FOUND}, headers={OLD: False}, boot=[OLD])
    assert out["pending_reboot_reason"] == ""
    assert len(out["problems"]) == 1
    problem = out["problems"][0]
    assert "linux-headers-%s" % OLD in problem and "no longer has it" in problem
    assert "a reboot would not load the driver" in problem and "does not say \"pending reboot\"" in problem
    # the kernel that has the module is named, and that only its headers are installed, not the kernel
    assert "%s has the module but is not installed" % NEW in problem and "apt install linux-image-%s" % NEW in problem


def test_pending_reboot_only_when_the_kernel_that_boots_next_has_the_module():
    out = check(NEW, {NEW: VERSION, OLD: NOT_FOUND}, headers={OLD: False, NEW: True}, boot=[OLD, NEW])
    assert out["problems"] == []
    reason = out["pending_reboot_reason"]
    assert reason.startswith("pending reboot: the running kernel %s has no headers (linux-headers-%s" % (OLD, OLD))
    assert "for kernel(s) %s" % NEW in reason and "Kernel %s boots next and has the module" % NEW in reason


def test_the_next_kernel_without_headers_either_fails_naming_its_headers_package():
    newer = "5.10.0-26-cloud-amd64"
    out = check(newer, {NEW: VERSION, OLD: NOT_FOUND, newer: NOT_FOUND}, headers={OLD: False, newer: True}, boot=[OLD, NEW, newer])
    assert out["pending_reboot_reason"] == ""
    problem = out["problems"][0]
    assert "the kernel that boots next, %s, has no NVIDIA %s module either" % (newer, VERSION) in problem
    assert "install linux-headers-%s (apt install linux-headers-%s" % (newer, newer) in problem
    assert "%s has the module (boot it once: grub-reboot" % NEW in problem


def test_no_kernel_with_headers_at_all_is_a_failure_not_an_empty_pass():
    out = check(OLD, {OLD: NOT_FOUND}, dkms=())
    assert out["kernels"] == [OLD] and len(out["problems"]) == 1
    assert "for no kernel" in out["problems"][0] and "linux-headers-%s is not installed" % OLD in out["problems"][0]


def test_the_filter_reads_apt_caches_exit_status_and_the_boot_list():
    from ansible_collections.dlbox.stack.plugins.filter.nvidia_driver_kernel import nvidia_driver_module_check
    decided = {"signing": {"path": "dkms"}, "build_only": False, "pending_reboot_reason": ""}
    out = nvidia_driver_module_check(decided, running=OLD, boot={"running": OLD, "next_boot": OLD, "boot": [OLD]},
                                     dkms_kernels=[NEW], modinfo={NEW: VERSION, OLD: NOT_FOUND}, expected=VERSION,
                                     headers={OLD: 100, NEW: 0})
    assert "no longer has it" in out["problems"][0] and "is not installed (only its headers are" in out["problems"][0]


# --- the signed path: the kernel that boots next is checked on every run (issue 44's red team M2) ------------------

def test_signed_path_a_kernel_in_boot_without_its_module_is_a_problem_on_a_green_run():
    """A -security kernel that an unattended run installed without its linux-modules-nvidia-* package: GRUB boots it
    next; the running kernel has the module. The role must not end green (the red team's reproduction: problems were [])."""
    out = nk.module_check("precompiled", running="5.15.0-1002-generic", next_boot="5.15.0-1003-generic",
                          modinfo={"5.15.0-1002-generic": "580.95.05", "5.15.0-1003-generic": "modinfo: ERROR: Module nvidia not found."},
                          expected="580.95.05")
    assert out["kernels"] == ["5.15.0-1002-generic", "5.15.0-1003-generic"]
    assert len(out["problems"]) == 1 and "kernel 5.15.0-1003-generic, which GRUB boots next, has no signed NVIDIA module" in out["problems"][0]
    assert "make GRUB boot 5.15.0-1002-generic" in out["problems"][0] and out["pending_reboot_reason"] == ""


def test_signed_path_both_kernels_with_the_module_pass_and_the_same_kernel_is_asked_once():
    ok = nk.module_check("precompiled", running="5.15.0-1002-generic", next_boot="5.15.0-1003-generic",
                         modinfo={"5.15.0-1002-generic": "580.95.05", "5.15.0-1003-generic": "580.95.05"}, expected="580.95.05")
    assert ok["problems"] == [] and ok["pending_reboot_reason"] == ""
    same = nk.module_check("precompiled", running="5.15.0-1002-generic", next_boot="5.15.0-1002-generic",
                           modinfo={"5.15.0-1002-generic": "580.95.05"}, expected="580.95.05")
    assert same["kernels"] == ["5.15.0-1002-generic"] and same["problems"] == []
