# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The message when the NVLink fabric did not come up is the nvidia_driver role's own entry (issue 47, rt47c M3:
``'nvidia_driver' | dlbox.stack.role_module('fabric_not_ready_hint', ...)``; the filter dlbox.stack.fabric_not_ready_hint
is deprecated and calls it). Both call sites, taken from their task files as they are (fabric_wait.yml's report on an
HGX board, fabric_blackwell_start.yml's on a GB200 NVL tray), are rendered by real Ansible (one ansible-playbook run,
local host) on the recorded In Progress block (tests/fixtures/fabric, NVIDIA/gpu-operator#2511) and give what the pure
function (plugin_utils.fabric_state.not_ready_hint) gives on the same inputs."""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import yaml

from ansible_collections.dlbox.stack.plugins.filter import fabric as fabric_filter
from ansible_collections.dlbox.stack.plugins.filter.role_module import role_module
from ansible_collections.dlbox.stack.plugins.filter.stack import resolve_stack
from ansible_collections.dlbox.stack.plugins.plugin_utils import fabric_state as fs
from ansible_collections.dlbox.stack.plugins.plugin_utils import nvlink5_fabric as nf
from ansible_collections.dlbox.stack.plugins.plugin_utils.compat_data import load_compat

from play_runner import run_play  # tests/unit/roles/play_runner.py, beside this file

ROOT = Path(__file__).resolve().parents[3]
TASKS = ROOT / "roles" / "nvidia_driver" / "tasks"
FABRIC = ROOT / "tests" / "fixtures" / "fabric"
DRIVER = "580.95.05"
NVLSM_BANNER = "nvlsm: OpenSM 2025.06.5_eb3b4ba_df9bb3c_ae214d2"   # siderolabs/extensions#893, as logged
BLOCK = (FABRIC / "smi-q-fabric-in-progress-health-gpuop2511.txt").read_text(encoding="utf-8")
SMI = "".join("GPU 00000000:%02X:00.0\n%s" % (bus, BLOCK) for bus in (0x18, 0x2A, 0x3A, 0x5D))
FM = "Report that Fabric Manager did not bring the NVLink fabric up"
NVL = "Report that the NVLink fabric did not come up, so IMEX was not started"


def _find(tasks, name):
    for task in tasks or []:
        if task.get("name") == name:
            return task
        for key in ("block", "rescue", "always"):
            found = _find(task.get(key), name)
            if found:
                return found
    return None


def _as_debug(path, name):
    task = copy.deepcopy(_find(yaml.safe_load((TASKS / path).read_text(encoding="utf-8")), name))
    assert task and "role_module('fabric_not_ready_hint'" in task["ansible.builtin.fail"]["msg"], (path, name)
    return {"name": name, "ansible.builtin.debug": {"msg": task["ansible.builtin.fail"]["msg"]}, "vars": task.get("vars") or {}}


def _hgx():
    nvl5 = load_compat()["fabric_manager"]["nvlink5"]
    entry = next(p for p in nvl5["hgx"]["packages"] if p["branch_min"] == 580)
    return nf.fabric_set({"package": "nvidia-fabricmanager", "nvlink5": {
        "same_version": entry["same_version"], "own_version": entry["own_version"],
        "kernel_modules": nvl5["hgx"]["kernel_modules"]}}, {})


def _nvl():
    plan = resolve_stack({}, {}, {"gpus": ["NVIDIA GB200"] * 4, "os": "ubuntu-24.04", "arch": "aarch64"})
    return nf.fabric_set(plan["stack"]["fabric_manager"], plan["stack"]["driver"])


def _render():
    hgx, nvl = _hgx(), _nvl()
    installed = dict(("%s" % n, "%s-1" % DRIVER) for n in ["nvidia-fabricmanager"] + hgx["same_version"])
    installed["nvlsm"] = "2025.03.2-1"         # NVLSM's log says 2025.06.5: a cause the message names
    journal = ["Starting NVIDIA fabric manager service...", "fabric manager NVLink SM start failed"]
    common = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable, "__nvidia_driver_fabric_timeout": 600,
              "__nvidia_driver_version": DRIVER, "__nvidia_driver_nvlsm_log": "/var/log/nvlsm.log"}
    hosts = {
        "hgx": dict(common, __nvidia_driver_decided={
            "fabric": hgx, "after": {"fabric_versions": installed},
            "fabric_manager": {"package": "nvidia-fabricmanager-580", "service": "nvidia-fabricmanager.service"}},
            __nvidia_driver_fm_service="nvidia-fabricmanager.service", __nvidia_driver_fabric_smi={"stdout": SMI, "rc": 0},
            __nvidia_driver_fm_active={"stdout": "active"}, __nvidia_driver_nvlink5_missing=["ib_umad"],
            __nvidia_driver_fm_journal={"stdout_lines": journal}, __nvidia_driver_nvlsm_tail={"stdout_lines": [NVLSM_BANNER]}),
        "tray": dict(common, __nvidia_driver_decided={"fabric": nvl, "after": {}},
                     __nvidia_driver_nvl_imex=nvl["imex"]["service"].replace(".service", ""),
                     __nvidia_driver_nvl_fabric_smi={"stdout": SMI, "rc": 0}),
    }
    play = {"hosts": "all", "gather_facts": False, "tasks": [
        dict(_as_debug("fabric_wait.yml", FM), when="inventory_hostname == 'hgx'"),
        dict(_as_debug("fabric_blackwell_start.yml", NVL), when="inventory_hostname == 'tray'")]}
    return hosts, play, hgx, nvl, installed, journal


def test_both_call_sites_render_what_the_pure_function_gives(tmp_path):
    hosts, play, hgx, nvl, installed, journal = _render()
    proc, out = run_play(tmp_path, play, hosts)
    assert out is not None, proc.stderr[-3000:]
    got = {t["task"]["name"]: t["hosts"] for t in out["plays"][0]["tasks"]}
    assert not any(h.get("failed") for hs in got.values() for h in hs.values()), proc.stdout[-3000:]
    fm_want = fs.not_ready_hint(fs.verdict(SMI, "active", 0), 600, hgx, installed, DRIVER, ["ib_umad"],
                                "\n".join(journal + [NVLSM_BANNER]), "nvidia-fabricmanager", "nvidia-fabricmanager-580")
    nvl_service = nvl["imex"]["service"].replace(".service", "")
    nvl_want = fs.not_ready_hint(fs.verdict(SMI, "active", 0, nvl_service), 600, nvl, {}, DRIVER, [], "", nvl_service,
                                 "nvidia-fabricmanager")
    fm_msg, nvl_msg = got[FM]["hgx"]["msg"], got[NVL]["tray"]["msg"]
    assert fm_want in fm_msg, (fm_want, fm_msg)
    assert nvl_want in nvl_msg, (nvl_want, nvl_msg)
    # the inputs that matter reached the entry: the NVLSM version from its log, the missing module, the plan's package
    assert "2025.06.5" in fm_want and "ib_umad" in fm_want and "nvidia-fabricmanager-580" in fm_want
    assert "NVLink switch trays" in nvl_want and "nvidia-fabricmanager" not in nvl_want


def test_the_deprecated_filter_calls_the_entry():
    hgx = _hgx()
    result = fs.verdict(SMI, "active", 0)
    args = (600, hgx, {"nvidia-fabricmanager": "580.82.07-1"}, DRIVER, ["ib_umad"], ["a", "b"], "nvidia-fabricmanager")
    entry = role_module("nvidia_driver", "fabric_not_ready_hint", result=result, timeout_s=600, fabric=hgx,
                        installed=args[2], driver_version=DRIVER, missing_modules=["ib_umad"], logs=["a", "b"],
                        service="nvidia-fabricmanager", fm_package="nvidia-fabricmanager-580")
    assert fabric_filter.fabric_not_ready_hint(result, *args, fm_package="nvidia-fabricmanager-580") == entry
    assert "Found: nvlsm is not installed. ib_umad not loaded" in entry and "Check: nvidia-fabricmanager-580, " in entry


def test_no_task_calls_the_deprecated_filter():
    calls = [str(p.relative_to(ROOT)) for p in sorted((ROOT / "roles").rglob("*.yml"))
             if "dlbox.stack.fabric_not_ready_hint(" in p.read_text(encoding="utf-8")]
    assert calls == []
