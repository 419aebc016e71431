"""nvidia_driver_kernel after the install (issue 44, defects 1-3): the kernels whose module is checked and the verdict on
modinfo (the signed path defers to the kernel that boots next), and nvidia-persistenced (started only with the
installed module loaded; persistence mode on by a drop-in over the unit as shipped).

Inputs RECORDED where the real tools print them: Ubuntu's and NVIDIA's units (tests/fixtures/persistenced/, byte copies
with commits in its README); `/proc/driver/nvidia/version` of a machine whose loaded module (580.173.02) is older than
its userland (tests/fixtures/doctor/nvml-mismatch-proc-version-580.txt, zzzhouuu/truenas-nvidia-drivers#19); modinfo's
answer for a kernel without the module, "modinfo: ERROR: Module nvidia not found." (RPM Fusion's NVIDIA Howto,
rpmfusion.org/Howto/NVIDIA: "should output the version of the driver such as 440.64 and not modinfo: ERROR: Module
nvidia not found."). Kernel releases are the ones of the recorded Ubuntu 24.04 captures (tests/fixtures/kernel/).
"""

from __future__ import annotations

import configparser
from pathlib import Path

import pytest

from ansible_collections.dlbox.stack.plugins.plugin_utils import driver_state as ds
from ansible_collections.dlbox.stack.plugins.plugin_utils import nvidia_driver_kernel as nk

ROOT = Path(__file__).resolve().parents[4]
UNITS = ROOT / "tests" / "fixtures" / "persistenced"
UBUNTU_UNIT = (UNITS / "ubuntu-580-server-jammy.nvidia-persistenced.service").read_text(encoding="utf-8")
NVIDIA_UNIT = (UNITS / "nvidia-persistenced.service.template").read_text(encoding="utf-8")
NVIDIA_ROLE_DROPIN = (UNITS / "nvidia-role-persistenced-override.conf").read_text(encoding="utf-8")
MISMATCH = (ROOT / "tests" / "fixtures" / "doctor" / "nvml-mismatch-proc-version-580.txt").read_text(encoding="utf-8")
PROC_580_173 = "".join(line for line in MISMATCH.splitlines(True) if line.startswith(("NVRM", "GCC")))
NOT_FOUND = "modinfo: ERROR: Module nvidia not found."
RUNNING, NEXT = "6.8.0-31-generic", "7.0.0-44-generic"   # tests/fixtures/kernel/ubuntu2404: an old GA kernel, the HWE one
VERSION = "580.95.05"
REASON = "The running kernel 6.8.0-31-generic has no signed NVIDIA module in the archive ..."


def ini(text):
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str
    parser.read_string(text)
    return parser


# --- defect 1: the signed path, running kernel without a module --------------------------------------------------------

def test_signed_path_without_a_running_module_checks_the_kernel_that_boots_next_too():
    out = nk.module_check("precompiled", running=RUNNING, next_boot=NEXT, deferred_reason=REASON)
    assert out["kernels"] == [RUNNING, NEXT]


def test_signed_path_checks_the_running_kernel_and_another_that_boots_next():
    out = nk.module_check("precompiled", running=NEXT, next_boot=NEXT)
    assert out["kernels"] == [NEXT]
    # a kernel in /boot that GRUB boots next is asked too, deferred or not (issue 44's red team M2: it was not)
    assert nk.module_check("precompiled", running=RUNNING, next_boot=NEXT)["kernels"] == [RUNNING, NEXT]


def test_signed_path_running_kernel_without_module_is_pending_reboot_not_a_failure():
    out = nk.module_check("precompiled", running=RUNNING, next_boot=NEXT, deferred_reason=REASON,
                          modinfo={RUNNING: NOT_FOUND, NEXT: VERSION}, expected=VERSION)
    assert out["problems"] == []
    assert out["pending_reboot_reason"].startswith("pending reboot: the running kernel %s" % RUNNING)
    assert NEXT in out["pending_reboot_reason"] and NOT_FOUND in out["pending_reboot_reason"]


def test_signed_path_next_kernel_without_module_fails_naming_it():
    out = nk.module_check("precompiled", running=RUNNING, next_boot=NEXT, deferred_reason=REASON,
                          modinfo={RUNNING: NOT_FOUND, NEXT: NOT_FOUND}, expected=VERSION)
    assert len(out["problems"]) == 2
    assert any(p.startswith("modinfo -k %s says '%s'" % (NEXT, NOT_FOUND)) and "boots next" in p for p in out["problems"])
    assert out["pending_reboot_reason"] == ""


def test_signed_path_running_module_missing_without_the_plan_saying_so_fails():
    # the plan installed the running kernel's per-ABI package: its module must be there now
    out = nk.module_check("precompiled", running=RUNNING, next_boot=NEXT, modinfo={RUNNING: NOT_FOUND, NEXT: VERSION},
                          expected=VERSION)
    assert out["problems"] == ["modinfo -k %s says '%s', expected %s." % (RUNNING, NOT_FOUND, VERSION)]


def test_after_the_reboot_the_running_kernel_is_checked():
    # run 2: the machine runs the kernel that had the module; the plan no longer defers
    out = nk.module_check("precompiled", running=NEXT, next_boot=NEXT, modinfo={NEXT: VERSION}, expected=VERSION)
    assert out == {"kernels": [NEXT], "problems": [], "pending_reboot_reason": ""}


def test_dkms_and_build_only_keep_their_kernel_lists_and_never_defer():
    dkms = nk.module_check("dkms", dkms_kernels=[RUNNING, NEXT], running=RUNNING, next_boot=NEXT, deferred_reason=REASON,
                           modinfo={RUNNING: NOT_FOUND, NEXT: VERSION}, expected=VERSION)
    assert dkms["kernels"] == [RUNNING, NEXT] and len(dkms["problems"]) == 1
    built = nk.module_check("dkms", build_only=True, build_kernels=["6.1.0-57-amd64"], modinfo={"6.1.0-57-amd64": VERSION},
                            expected=VERSION)
    assert built["kernels"] == ["6.1.0-57-amd64"] and built["problems"] == []


def test_signed_path_with_the_next_kernel_the_running_one_checks_only_it():
    out = nk.module_check("precompiled", running=RUNNING, next_boot=RUNNING, deferred_reason=REASON,
                          modinfo={RUNNING: NOT_FOUND}, expected=VERSION)
    assert out["kernels"] == [RUNNING] and len(out["problems"]) == 1


# --- defect 2: the persistence daemon against an older loaded module ---------------------------------------------------

def test_recorded_proc_version_of_an_older_loaded_module_is_read():
    state = ds.from_probes(installed="580.178", smi={"rc": 18, "stdout": "Failed to initialize NVML: Driver/library version mismatch"},
                           proc=PROC_580_173)
    assert state["state"] == "pending_reboot"
    assert nk.loaded_module_version("", state) == "580.173.02"


def test_daemon_is_not_started_against_an_older_loaded_module():
    state = ds.from_probes(installed="580.178", smi={"rc": 18}, proc=PROC_580_173)
    out = nk.persistence_daemon(True, False, "580.178", nk.loaded_module_version("", state), True, UBUNTU_UNIT)
    assert out["start"] is False and out["manage"] is True
    assert out["message"].startswith("pending reboot: nvidia-persistenced.service is enabled but not started")
    assert "580.173.02 is loaded" in out["message"]


def test_daemon_is_not_started_without_a_loaded_module():
    out = nk.persistence_daemon(True, False, VERSION, nk.loaded_module_version("", None), True, UBUNTU_UNIT)
    assert out["start"] is False and "no NVIDIA module is loaded" in out["message"]


def test_daemon_starts_when_the_installed_module_is_loaded():
    # /sys/module/nvidia/version holds the bare version and a newline, as the module's MODULE_VERSION
    out = nk.persistence_daemon(True, False, "580.173.02", nk.loaded_module_version("580.173.02\n", None), True, UBUNTU_UNIT)
    assert out["start"] is True and out["message"] == "" and out["problem"] is None


def test_sys_module_version_wins_over_the_state():
    assert nk.loaded_module_version("580.173.02\n", {"loaded_version": "575.57.08"}) == "580.173.02"


def test_build_only_enables_without_starting():
    out = nk.persistence_daemon(True, True, VERSION, VERSION, True, UBUNTU_UNIT)
    assert out["start"] is False and out["dropin_state"] == "present" and out["message"].startswith("Build-only mode")


def test_not_managed_off_the_server_profile():
    out = nk.persistence_daemon(False, False, VERSION, VERSION, True, UBUNTU_UNIT)
    assert out == {"manage": False, "dropin": None, "dropin_state": "absent", "start": False, "enable": False,
                   "disable": False, "restart_on_change": False, "message": "", "problem": None}


def test_no_unit_after_the_install_is_refused_naming_the_variable_but_not_in_check_mode():
    assert "nvidia_driver_persistenced: false" in nk.persistence_daemon(True, False, VERSION, None, True, "")["problem"]
    check = nk.persistence_daemon(True, False, VERSION, None, True, "", check_mode=True)
    assert check["problem"] is None and check["manage"] is False and check["message"].startswith("Check mode")


# --- defect 3: persistence mode on over Ubuntu's unit as shipped -------------------------------------------------------

def test_recorded_ubuntu_unit_runs_without_persistence_and_stops_when_unneeded():
    unit = ini(UBUNTU_UNIT)
    assert "--no-persistence-mode" in unit["Service"]["ExecStart"].split()
    assert unit["Unit"]["StopWhenUnneeded"] == "true"
    assert not unit.has_section("Install")
    rules = (UNITS / "ubuntu-580-server-jammy.71-nvidia.rules").read_text(encoding="utf-8")
    assert 'ENV{SYSTEMD_WANTS}="nvidia-persistenced.service"' in rules


def test_dropin_over_ubuntus_unit_turns_persistence_on_and_keeps_its_command():
    dropin = nk.persistence_dropin(UBUNTU_UNIT, "/lib/systemd/system/nvidia-persistenced.service")
    unit = ini(dropin)
    assert unit["Unit"]["StopWhenUnneeded"] == "false"
    assert unit["Install"]["WantedBy"] == "multi-user.target"
    lines = [line for line in dropin.splitlines() if line.startswith("ExecStart=")]
    assert lines == ["ExecStart=",
                     "ExecStart=/usr/bin/nvidia-persistenced --user nvidia-persistenced --persistence-mode --verbose"]
    assert "/lib/systemd/system/nvidia-persistenced.service" in dropin


def test_dropin_does_what_nvidias_own_role_does():
    ours = [line for line in nk.persistence_dropin(UBUNTU_UNIT).splitlines() if line.startswith("ExecStart")]
    theirs = [line for line in NVIDIA_ROLE_DROPIN.splitlines() if line.startswith("ExecStart")]
    assert ours[0] == theirs[0] == "ExecStart="   # both reset the shipped command
    assert "--persistence-mode" in ours[1].split() and "--persistence-mode" in theirs[1].split()
    assert "--no-persistence-mode" not in ours[1].split()


def test_dropin_over_nvidias_sample_unit_adds_the_option():
    assert nk.unit_exec_start(NVIDIA_UNIT) == "/usr/bin/nvidia-persistenced --user __USER__"
    assert "ExecStart=/usr/bin/nvidia-persistenced --user __USER__ --persistence-mode\n" in nk.persistence_dropin(NVIDIA_UNIT)


def test_dropin_is_the_same_text_every_run():
    assert nk.persistence_dropin(UBUNTU_UNIT, "/x") == nk.persistence_dropin(UBUNTU_UNIT, "/x")


@pytest.mark.parametrize(("text", "command"), [
    ("[Service]\nExecStart=/a --no-persistence-mode\nExecStart=\n", ""),
    ("[Unit]\nExecStart=/not-service\n", ""),
    ("[Service]\nExecStart=/a\nExecStart=/b --verbose\n", "/b --verbose"),
])
def test_exec_start_is_read_as_systemd_reads_it(text, command):
    assert nk.unit_exec_start(text) == command


def test_unit_without_exec_start_is_refused_naming_the_variable():
    out = nk.persistence_daemon(True, False, VERSION, VERSION, True, "[Unit]\nDescription=x\n", "/etc/x.service")
    assert "nvidia_driver_persistence_mode: false" in out["problem"]


def test_persistence_mode_off_on_ubuntus_unit_leaves_it_to_udev_so_a_second_run_changes_nothing():
    """Red team of issue 44: with nvidia_driver_persistence_mode false the role started Ubuntu's unit as shipped
    (StopWhenUnneeded=true, no [Install], recorded) on every run; nothing but udev's SYSTEMD_WANTS
    (ubuntu-580-server-jammy.71-nvidia.rules) wants it, so systemd stopped it at once and the next run's `state: started`
    was a change again. Now the role neither enables nor starts it, and says why."""
    out = nk.persistence_daemon(True, False, VERSION, VERSION, False, UBUNTU_UNIT, "/lib/systemd/system/nvidia-persistenced.service")
    assert out["dropin"] is None and out["dropin_state"] == "absent"
    assert out["start"] is False and out["enable"] is False and out["problem"] is None
    assert out["restart_on_change"] is True   # only when the role removed its own drop-in under it this run
    assert "udev starts it when the NVIDIA driver binds" in out["message"] and "StopWhenUnneeded=true" in out["message"]
    assert not out["message"].startswith("pending reboot")
    # against an older loaded module not even that restart (the new daemon would fail)
    assert nk.persistence_daemon(True, False, VERSION, "580.65.06", False, UBUNTU_UNIT)["restart_on_change"] is False


def test_persistence_mode_off_on_a_unit_that_starts_at_boot_still_enables_and_starts():
    """NVIDIA's sample unit (WantedBy=multi-user.target, no StopWhenUnneeded) and Ubuntu's with a user's drop-in setting
    StopWhenUnneeded=false: the role enables and starts them as before."""
    override = {"/etc/systemd/system/nvidia-persistenced.service.d/override.conf": "[Unit]\nStopWhenUnneeded=false\n"}
    for unit, dropins in ((NVIDIA_UNIT, None), (UBUNTU_UNIT, override)):
        out = nk.persistence_daemon(True, False, VERSION, VERSION, False, unit, dropins=dropins)
        assert out["start"] is True and out["enable"] is True and out["restart_on_change"] is True, unit


def test_started_by_udev_reads_the_unit_as_systemd_merges_it():
    assert nk.started_by_udev(UBUNTU_UNIT) is True
    assert nk.started_by_udev(NVIDIA_UNIT) is False
    # the role's own drop-in (persistence mode on) makes it a boot-started unit
    assert nk.started_by_udev(UBUNTU_UNIT, {"/x/dlbox-persistence-mode.conf": nk.persistence_dropin(UBUNTU_UNIT)}) is False
    # a later drop-in wins (file-name order), whatever folder holds it
    dropins = {"/etc/systemd/system/nvidia-persistenced.service.d/a.conf": "[Unit]\nStopWhenUnneeded=false\n",
               "/run/systemd/system/nvidia-persistenced.service.d/b.conf": "[Unit]\nStopWhenUnneeded=yes\n"}
    assert nk.started_by_udev(UBUNTU_UNIT, dropins) is True
    # an [Install] section makes the unit wanted at boot (multi-user.target needs it, so a start lasts)
    assert nk.started_by_udev(UBUNTU_UNIT, {"/etc/x.d/wanted.conf": "[Install]\nWantedBy=multi-user.target\n"}) is False


def test_server_defaults_turn_persistence_mode_on():
    import yaml
    defaults = yaml.safe_load((ROOT / "roles" / "nvidia_driver" / "defaults" / "main.yml").read_text(encoding="utf-8"))
    assert defaults["nvidia_driver_persistenced"] is True
    assert defaults["nvidia_driver_persistence_mode"] is True


# ---------------------------------------------------------------- a user's drop-in after the role's (issue 44)
# systemd merges drop-ins in file-name order, the later setting wins (systemd.unit(5)): `systemctl edit` writes
# override.conf, which sorts after the role's dlbox-persistence-mode.conf. The defeating drop-in is built from RECORDED
# lines: Ubuntu's unit's own ExecStart (--no-persistence-mode) and StopWhenUnneeded=true; NVIDIA's role's override.conf
# (recorded, --persistence-mode) keeps persistence mode on and is no problem.
OURS = "/etc/systemd/system/nvidia-persistenced.service.d/dlbox-persistence-mode.conf"
USER_OVERRIDE = "/etc/systemd/system/nvidia-persistenced.service.d/override.conf"
UBUNTU_EXEC = [line for line in UBUNTU_UNIT.splitlines() if line.startswith("ExecStart=")][-1]
UBUNTU_STOP = [line for line in UBUNTU_UNIT.splitlines() if line.startswith("StopWhenUnneeded=")][-1]


def _decide(dropins):
    return nk.persistence_daemon(True, False, VERSION, VERSION, True, UBUNTU_UNIT, "/usr/lib/systemd/system/nvidia-persistenced.service",
                                 dropins=dropins, dropin_path=OURS)


def test_a_users_override_conf_that_turns_persistence_off_is_refused_naming_the_file():
    out = _decide({USER_OVERRIDE: "[Service]\nExecStart=\n%s\n" % UBUNTU_EXEC})
    assert out["problem"] and USER_OVERRIDE in out["problem"] and "--no-persistence-mode" in out["problem"]
    assert "nvidia_driver_persistence_mode" in out["problem"] and "file names" in out["problem"]
    assert out["dropin"] is None and out["start"] is False


def test_a_later_stop_when_unneeded_is_refused():
    out = _decide({USER_OVERRIDE: "[Unit]\n%s\n" % UBUNTU_STOP})
    assert out["problem"] and "StopWhenUnneeded=true" in out["problem"]


def test_nvidia_roles_override_conf_keeps_persistence_on_and_passes():
    out = _decide({USER_OVERRIDE: NVIDIA_ROLE_DROPIN})
    assert out["problem"] is None and out["dropin_state"] == "present" and out["start"] is True


def test_a_drop_in_sorting_before_the_roles_is_overridden_by_it():
    out = _decide({"/etc/systemd/system/nvidia-persistenced.service.d/10-local.conf": "[Service]\nExecStart=\n%s\n" % UBUNTU_EXEC})
    assert out["problem"] is None and out["dropin_state"] == "present"


def test_overriding_dropins_order_is_by_file_name_across_folders():
    later = nk.overriding_dropins({"/run/systemd/system/nvidia-persistenced.service.d/zz.conf": "[Unit]\nStopWhenUnneeded=yes\n",
                                   "/usr/lib/systemd/system/nvidia-persistenced.service.d/a.conf": "[Unit]\nStopWhenUnneeded=yes\n"},
                                  OURS)
    assert later == [("/run/systemd/system/nvidia-persistenced.service.d/zz.conf", ["StopWhenUnneeded=yes"])]


def test_the_role_enables_and_starts_only_what_the_decision_says():
    """persistence.yml's systemd task takes enable / start / restart_on_change from the decision: on Ubuntu's unit with
    persistence mode off it is skipped (nothing enabled, nothing started), so a second run reports no change."""
    import yaml
    tasks = yaml.safe_load((ROOT / "roles" / "nvidia_driver" / "tasks" / "persistence.yml").read_text(encoding="utf-8"))
    task = next(t for t in tasks if "ansible.builtin.systemd_service" in t and t["name"].startswith("Enable"))
    args = task["ansible.builtin.systemd_service"]
    assert args["enabled"] == "{{ true if __nvidia_driver_persistence.enable else omit }}"
    assert "__nvidia_driver_persistence.restart_on_change" in args["state"]
    assert "'started' if __nvidia_driver_persistence.start else omit" in args["state"]
    assert task["when"] == ["__nvidia_driver_persistence.manage",
                            "__nvidia_driver_persistence.enable or __nvidia_driver_persistence.start or "
                            "__nvidia_driver_pd_changed | bool"]


def test_persistence_mode_true_then_false_disables_the_unit_while_the_role_drop_in_is_still_there():
    """Issue 44 (left open on 2026-12-06): the role's drop-in carries [Install] WantedBy=multi-user.target, so
    nvidia_driver_persistence_mode true enabled the unit (a multi-user.target.wants link). Set to false, the role removed
    the drop-in and left the link: the daemon still started at every boot, now without persistence mode. The decision
    disables the unit first, while the drop-in is there (systemctl disable reads the [Install] it names)."""
    path = "/lib/systemd/system/nvidia-persistenced.service"
    back = nk.persistence_daemon(True, False, VERSION, VERSION, False, UBUNTU_UNIT, path, dropin_present=True)
    assert back["disable"] is True and back["dropin_state"] == "absent" and back["enable"] is False
    # the second run (the drop-in gone): nothing to disable, nothing changes
    assert nk.persistence_daemon(True, False, VERSION, VERSION, False, UBUNTU_UNIT, path)["disable"] is False
    # persistence mode on: enabled, never disabled; a unit that starts at boot by itself (NVIDIA's sample) stays enabled
    assert nk.persistence_daemon(True, False, VERSION, VERSION, True, UBUNTU_UNIT, path, dropin_present=True)["disable"] is False
    nvidia = nk.persistence_daemon(True, False, VERSION, VERSION, False, NVIDIA_UNIT, path, dropin_present=True)
    assert nvidia["disable"] is False and nvidia["enable"] is True
    # not managed: nothing
    assert nk.persistence_daemon(False, False, VERSION, VERSION, False, UBUNTU_UNIT, path, dropin_present=True)["disable"] is False


def test_the_role_disables_before_it_removes_its_drop_in():
    """persistence.yml: the disable (decision's disable) comes before the drop-in's removal, while its [Install] is there;
    the filter is given whether the role's drop-in is among the unit's DropInPaths."""
    import yaml
    tasks = yaml.safe_load((ROOT / "roles" / "nvidia_driver" / "tasks" / "persistence.yml").read_text(encoding="utf-8"))
    names = [t["name"] for t in tasks]
    disable = next(i for i, t in enumerate(tasks) if t.get("ansible.builtin.systemd_service", {}).get("enabled") is False)
    remove = names.index("Remove the role's drop-in (nvidia_driver_persistence_mode false)")
    assert disable < remove
    assert tasks[disable]["when"] == ["__nvidia_driver_persistence.manage", "__nvidia_driver_persistence.disable"]
    decide = next(t for t in tasks if t["name"] == "Decide the drop-in and whether the daemon starts now")
    assert "dropin_present=__nvidia_driver_persistenced_dropin in (__nvidia_driver_pd_dropins.stdout" in \
        decide["ansible.builtin.set_fact"]["__nvidia_driver_persistence"]
