# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rollback after a failed check (issue 48), wired: roles/nvidia_driver/tasks/rollback_hint.yml run by Ansible
(connection local) on laid-out keep folders, then the checks after the install as the role has them (kernel.yml's DKMS
and module-version asserts, fabric_wait.yml's Fabric Manager failure), made to fail. After a branch change their
failure names nvidia_driver_rollback and the kept branch; on the kept branch or with nothing kept it says nothing more."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from play_runner import run_play  # tests/unit/roles/play_runner.py, beside this file

ROOT = Path(__file__).resolve().parents[3]
TASKS = ROOT / "roles" / "nvidia_driver" / "tasks"
RECORD = {"branch": 570, "version": "570.195.03",
          "packages": [{"name": "nvidia-utils-570-server", "version": "570.195.03-0ubuntu0.24.04.1", "arch": "amd64",
                        "file": "nvidia-utils-570-server_570.195.03-0ubuntu0.24.04.1_amd64.deb", "source": "archive"}],
          "holds": ["nvidia-utils-570-server"], "pin": None}
# Fabric Manager's first: its message quotes the failure before it (none here)
CHECKS = [("fabric_wait.yml", "Report that Fabric Manager did not bring the NVLink fabric up"),
          ("kernel.yml", "Check that DKMS installed the module for every kernel"),
          ("kernel.yml", "Check the module version for every kernel"),
          ("reboot.yml", "Check that nvidia-smi reports the installed driver after the reboot")]
# What nvidia-smi prints when no module answers (NVIDIA's own text, exit status 9), as reboot.yml's check reads it
SMI_NO_DRIVER = {"rc": 9, "stdout_lines": [
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is "
    "installed and running."], "stderr_lines": []}


def _task(name, title):
    def walk(tasks):
        for task in tasks:
            yield task
            for key in ("block", "rescue", "always"):
                yield from walk(task.get(key) or [])
    return next(t for t in walk(yaml.safe_load((TASKS / name).read_text(encoding="utf-8"))) if t.get("name") == title)


def run(tmp_path, hosts, extra=None):
    link = tmp_path / "collections" / "ansible_collections" / "dlbox" / "stack"
    link.parent.mkdir(parents=True)
    link.symlink_to(ROOT, target_is_directory=True)
    checks = []
    for number, (name, title) in enumerate(CHECKS):
        check = dict(_task(name, title))
        check.pop("when", None)  # made to fail here whatever its condition
        checks.append({"name": "Check %d" % number, "block": [check], "rescue": [{
            "name": "Keep the failure %d" % number,
            "ansible.builtin.copy": {"content": "{{ ansible_failed_result.msg }}", "dest": "{{ out_dir }}/%d.txt" % number,
                                     "mode": "0644"}}]})
    play = {"hosts": "all", "gather_facts": False,
            "tasks": [{"name": "Hint", "ansible.builtin.include_tasks": str(TASKS / "rollback_hint.yml")}] + checks}
    hostvars = {}
    for host, (keep_dir, branch) in hosts.items():
        out_dir = tmp_path / ("out-" + host)
        out_dir.mkdir()
        hostvars[host] = {
            "ansible_connection": "local", "ansible_python_interpreter": sys.executable, "out_dir": str(out_dir),
            "nvidia_driver_keep_dir": str(keep_dir), "__nvidia_driver_version": "%s.95.05" % branch,
            # this run changed the branch (issue 48 red-team 10: the hint is for that change only)
            "__nvidia_driver_decided": {"driver": {"branch": branch}, "set": {"dkms_module": "nvidia"}, "signing": {"path": "dkms"},
                                        "change": {"action": "change"}},
            "__nvidia_driver_dkms_after": {"dkms_missing": ["6.8.0-151-generic"], "dkms_text": "nvidia/%s.95.05: added" % branch},
            "__nvidia_driver_module_verdict": {"problems": ["Kernel 6.8.0-151-generic has no nvidia module."],
                                               "kernels": ["6.8.0-151-generic"]},
            "__nvidia_driver_fm_service": "nvidia-fabricmanager.service", "__nvidia_driver_fabric_timeout": 60,
            "__nvidia_driver_smi": SMI_NO_DRIVER}
        hostvars[host].update((extra or {}).get(host) or {})
    proc, _out = run_play(tmp_path, play, hostvars, env={"ANSIBLE_COLLECTIONS_PATH": str(tmp_path / "collections")})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    return dict((host, [(tmp_path / ("out-" + host) / ("%d.txt" % n)).read_text(encoding="utf-8")
                        if (tmp_path / ("out-" + host) / ("%d.txt" % n)).exists() else None for n in range(len(CHECKS))])
                for host in hosts)


@pytest.fixture(scope="module")
def failures(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("hint")
    kept = tmp_path / "keep" / "R570-570.195.03"
    kept.mkdir(parents=True)
    (kept / "dlbox-kept.json").write_text(json.dumps(RECORD), encoding="utf-8")
    return run(tmp_path, {"changed": (tmp_path / "keep", 580), "back": (tmp_path / "keep", 570),
                          "nothing-kept": (tmp_path / "no-such-folder", 580),
                          "stuck": (tmp_path / "no-such-folder", 580),
                          "answers": (tmp_path / "keep", 580)},
               {"stuck": _stuck_fabric(),
                "answers": {"__nvidia_driver_smi": {"rc": 0, "stdout_lines": ["580.95.05"] * 8, "stderr_lines": []}}}), kept


# Issue 49: an HGX B200 whose fabric stayed In Progress through the wait (the recorded block of NVIDIA/gpu-operator#2511
# on eight GPUs, what nvidia-smi -q answered last), with the plan's NVLink5 set, the versions its check after the install
# kept (libnvsdm of another release, nvlsm 2025.03.2-1), ib_umad not loaded, and NVLSM's log (its banner as
# siderolabs/extensions#893 logged it, its ib_umad error of siderolabs/docs#581): the failure gives
# fabric_not_ready_hint's causes (tests/fixtures/fabric, SOURCES.md there).
FABRIC = ROOT / "tests" / "fixtures" / "fabric"


def _stuck_fabric():
    block = (FABRIC / "smi-q-fabric-in-progress-health-gpuop2511.txt").read_text(encoding="utf-8")
    smi = "".join("GPU 00000000:%02X:00.0\n%s" % (bus, block) for bus in (0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB))
    nvlsm_log = ["nvlsm: OpenSM 2025.06.5_eb3b4ba_df9bb3c_ae214d2"] + \
        (FABRIC / "nvlsm-no-ib-umad-siderolabs-docs581.txt").read_text(encoding="utf-8").splitlines()
    return {"__nvidia_driver_version": "580.95.05",
            "__nvidia_driver_decided": {
                "driver": {"branch": 580}, "set": {"dkms_module": "nvidia"}, "signing": {"path": "dkms"},
                "fabric": {"kind": "hgx", "same_version": ["libnvidia-nscq", "libnvsdm"], "own_version": ["nvlsm"],
                           "kernel_modules": ["mlx5_core", "mlx5_ib", "ib_umad"], "imex": None},
                "after": {"fabric_versions": {"libnvidia-nscq": "580.95.05-1", "libnvsdm": "580.82.07-1",
                                              "nvlsm": "2025.03.2-1"}}},
            "__nvidia_driver_fm_active": {"stdout": "active"},
            "__nvidia_driver_fabric_smi": {"stdout": smi, "rc": 0},
            "__nvidia_driver_nvlink5_missing": ["ib_umad"], "__nvidia_driver_nvlsm_log": "/var/log/nvlsm.log",
            "__nvidia_driver_fm_journal": {"stdout_lines": ["Started NVIDIA fabric manager service."]},
            "__nvidia_driver_nvlsm_tail": {"stdout_lines": nvlsm_log}}


def test_a_fabric_that_stays_in_progress_fails_with_the_causes_found(failures):
    got, _kept = failures
    msg = got["stuck"][0]
    assert msg.startswith("NVIDIA Fabric Manager (nvidia-fabricmanager.service) did not bring the NVLink fabric up within 60 s")
    assert ("The NVLink fabric stayed In Progress for 60 s (8 GPU(s): 00000000:18:00.0, 00000000:2A:00.0, 00000000:3A:00.0, "
            "00000000:5D:00.0 ...): Fabric Manager did not register the GPUs") in msg
    found = msg[msg.index("Found: "):msg.index("Check: ")]
    assert "libnvsdm is 580.82.07-1, the driver 580.95.05: it must be exactly the driver's version." in found
    assert "The NVLSM that ran is OpenSM 2025.06.5, the nvlsm package 2025.03.2-1" in found
    assert "ib_umad not loaded (NVLSM: 'umad_init: can't read ABI version" in found
    assert "systemctl status nvidia-fabricmanager and journalctl -u nvidia-fabricmanager" in msg
    assert "journalctl -u nvidia-fabricmanager.service: Started NVIDIA fabric manager service." in msg
    assert "nvidia_driver_rollback" not in msg


def test_a_check_that_fails_after_a_branch_change_names_the_variable_and_the_kept_branch(failures):
    got, kept = failures
    sentence = ("The branch change from R570 to R580 can be undone: run the role with nvidia_driver_rollback: true (it purges "
                "R580, reinstalls R570 570.195.03 from the copies kept in %s and puts back its pin and its holds as they were: "
                "nvidia-utils-570-server)." % kept)
    for msg in got["changed"]:
        assert msg.endswith(sentence) and msg[-len(sentence) - 1].isspace(), msg


@pytest.mark.parametrize("host", ["back", "nothing-kept"])
def test_no_rollback_offered_on_the_kept_branch_or_without_one(failures, host):
    got, _kept = failures
    for msg, changed in zip(got[host], got["changed"]):
        assert "nvidia_driver_rollback" not in msg
        assert changed.startswith(msg.replace("570", "580").rstrip()), (msg, changed)  # the check's own words unchanged


@pytest.mark.parametrize("title", ["Simulate the rollback in one apt transaction",
                                   "Switch to the previous branch in one apt transaction (its kept packages in, the newer branch's out)",
                                   "Mark that a reboot is needed (the previous branch's module loads at the next boot)",
                                   "Say that the rollback waits for a reboot, and end the role for this host (the plan still names "
                                   "the newer branch)",
                                   "End the role for this host after the rollback (the plan still names the newer branch)"])
def test_a_rollback_done_before_purges_reinstalls_and_marks_nothing(title):
    # nvidia_driver_rollback still true on the next run: plugin_utils.nvidia_driver_rollback says action none
    when = _task("rollback_request.yml", title)["when"]
    assert "__nvidia_driver_rollback_request.action == 'rollback'" in ([when] if isinstance(when, str) else when)


@pytest.mark.parametrize("title", ["Put the previous branch's pin back", "Release the newer branch's holds",
                                   "Hold the previous branch again, as it was held"])
def test_the_pin_and_the_holds_come_back_either_way(title):
    assert "action" not in str(_task("rollback_request.yml", title).get("when", ""))


def test_a_later_run_goes_on_to_the_checks_or_fails_saying_why():
    # issue 48 red-team 3: meta end_host on every run with the variable still true kept kernel.yml's checks from running
    task = _task("rollback_request.yml", "Refuse to check a driver the plan does not name (the host is back on the kept branch)")
    assert task["when"] == "__nvidia_driver_rollback_request.action == 'none'"
    assert "__nvidia_driver_decided.driver" in task["ansible.builtin.assert"]["that"]


def test_the_driver_check_after_the_reboot_says_what_nvidia_smi_answered(failures):
    got, _kept = failures
    msg = got["changed"][-1]
    assert msg.startswith("After the reboot nvidia-smi does not report the installed driver 580.95.05 (exit status 9): "
                          "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."), msg
    assert got["answers"][-1] is None  # eight GPUs at the installed version: the check passes


def test_the_driver_check_after_the_reboot_asks_without_failing_and_then_judges():
    ask = _task("reboot.yml", "Ask nvidia-smi which driver is loaded after the reboot")
    check = _task("reboot.yml", "Check that nvidia-smi reports the installed driver after the reboot")
    assert ask["failed_when"] is False and ask["register"] == "__nvidia_driver_smi"
    assert ask["when"] == check["when"] and "not ansible_check_mode" in check["when"]
    assert check["ansible.builtin.assert"]["fail_msg"].rstrip().endswith("{{ __nvidia_driver_rollback_hint | default('') }}")


def test_main_reads_the_hint_before_the_checks_that_use_it():
    main = yaml.safe_load((TASKS / "main.yml").read_text(encoding="utf-8"))
    block = next(t for t in main if "block" in t)["block"]
    files = [t.get("ansible.builtin.import_tasks") for t in block]
    hint = files.index("rollback_hint.yml")
    assert hint > files.index("install.yml")  # the plan's branch after the install
    assert hint < files.index("kernel.yml") and hint < files.index("fabric_wait.yml") and "when" not in block[hint]
    assert hint < files.index("reboot.yml")
    # a run limited to the tags of the checks still reads it
    for name in ("kernel.yml", "fabric_wait.yml", "reboot.yml"):
        assert set(block[files.index(name)]["tags"]) - {"nvidia_driver"} <= set(block[hint]["tags"]), name


# keep.yml records the role's unattended-upgrades file as it was before the change (its text, or null when there was
# none); the rollback puts it back (plugin_utils.nvidia_driver_rollback.unattended_file): it names the old branch's
# packages, the newer branch's file named packages the rollback purges. Run by Ansible: keep.yml's own two tasks.
UU_BEFORE = {"write": 'Unattended-Upgrade::Package-Blacklist {\n    "^nvidia-utils-570-server$";\n};\n',  # the DKMS path's file
             "remove": None}                                                                      # no file before


@pytest.fixture(scope="module")
def keep_records(tmp_path_factory):
    """keep.yml's two tasks, one ansible-playbook run, one host per case: {case: the record written}."""
    tmp_path = tmp_path_factory.mktemp("keep")
    link = tmp_path / "collections" / "ansible_collections" / "dlbox" / "stack"
    link.parent.mkdir(parents=True)
    link.symlink_to(ROOT, target_is_directory=True)
    hosts = {}
    for case, text in UU_BEFORE.items():
        (tmp_path / case).mkdir()
        uu_file = tmp_path / case / "51dlbox-nvidia-driver"
        if text is not None:
            uu_file.write_text(text, encoding="utf-8")
        hosts[case] = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                       "__nvidia_driver_uu_file": str(uu_file), "__nvidia_driver_decided": {
                           "keep_path": str(tmp_path / case), "installed": {"branch": 570, "version": "570.195.03"}, "pin": None,
                           "rollback_pin": None}}
    tasks = [_task("keep.yml", "Read the unattended-upgrades file of the old branch"), _task("keep.yml", "Record what was kept")]
    play = {"hosts": "all", "gather_facts": False, "tasks": tasks,
            "vars": {"__nvidia_driver_kept": RECORD["packages"], "__nvidia_driver_holds_before": RECORD["holds"]}}
    (tmp_path / "play.yml").write_text(yaml.safe_dump([play]), encoding="utf-8")
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump({"all": {"hosts": hosts}}), encoding="utf-8")
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(tmp_path / "collections"), ANSIBLE_HOME=str(tmp_path / "ansible-home"),
               ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-tmp"), ANSIBLE_NOCOLOR="1")
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(tmp_path / "hosts.yml"),
                           str(tmp_path / "play.yml")], capture_output=True, text=True, env=env, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    return dict((case, json.loads((tmp_path / case / "dlbox-kept.json").read_text(encoding="utf-8"))) for case in UU_BEFORE)


@pytest.mark.parametrize("action", sorted(UU_BEFORE))
def test_the_unattended_upgrades_file_comes_back_as_it_was(keep_records, action):
    from ansible_collections.dlbox.stack.plugins.plugin_utils import nvidia_driver_rollback as nr
    record, before = keep_records[action], UU_BEFORE[action]
    assert record["unattended"] == before and record["holds"] == RECORD["holds"]
    assert nr.unattended_file(record) == {"action": action, "content": before}
    put_back = [_task("rollback_request.yml", "Put the previous branch's unattended-upgrades file back"),
                _task("rollback_request.yml", "Remove the newer branch's unattended-upgrades file (the previous branch had none)")]
    assert [t["when"] for t in put_back] == ["__nvidia_driver_rollback_request.unattended.action == 'write'",
                                             "__nvidia_driver_rollback_request.unattended.action == 'remove'"]
    assert put_back[0]["ansible.builtin.copy"]["content"] == "{{ __nvidia_driver_rollback_request.unattended.content }}"


def test_a_record_of_an_older_role_leaves_the_unattended_upgrades_file():
    from ansible_collections.dlbox.stack.plugins.plugin_utils import nvidia_driver_rollback as nr
    assert nr.unattended_file(RECORD) == {"action": "keep", "content": None}
