# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A role's own version variable is part of the ONE plan (rt47b H1).

``plan.yml -e nvidia_driver_branch=570`` printed R580, CUDA 13.0 and cu132 wheels while the driver role resolved again
with its pin and installed R570, and the cuda role kept CUDA 13.0 from the shared plan: R570 beside CUDA 13.0, which
needs >= 580.65.06, and nothing refused it. Now plan.yml reads the roles' pinning variables with the rest of a host's
planning variables (plan_fleet.PINS), adds them to its request (plan_fleet.apply_pins), and the plan shows what the roles
install; the roles find that the plan fits and do not resolve again; the cuda role refuses a toolkit the plan's driver
cannot run.

Figures are the real data/compat.yml's (the golden plans rtx4090-debian12-driver570/-cuda128): CUDA 12.8's GA driver
570.26 and the CUDA 13.x floor 580.65.06 (cuda.minor_compat; NVIDIA's "Supported Drivers and CUDA Toolkit Versions",
docs.nvidia.com/datacenter/tesla/drivers: R570 supports CUDA 12.x, R580 CUDA 13.x, through minor-version compatibility).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ansible_collections.dlbox.stack.plugins.filter.role_decide import role_decide
from ansible_collections.dlbox.stack.plugins.filter.stack import plan_fleet, plan_inputs, resolve_stack
from ansible_collections.dlbox.stack.plugins.plugin_utils import cuda_plan, nvidia_driver_plan
from ansible_collections.dlbox.stack.plugins.plugin_utils import plan_fleet as fleet
from ansible_collections.dlbox.stack.plugins.plugin_utils.compat_data import load_compat

ROOT = Path(__file__).resolve().parents[4]
GOLDEN = ROOT / "tests" / "unit" / "golden"
BIN = Path(sys.executable).parent
HW = {"gpus": ["RTX 4090"], "os": "debian-12"}   # the FIXTURE RTX 4090 host of rt47b


def _golden(name):
    return json.loads((GOLDEN / ("%s.json" % name)).read_text(encoding="utf-8"))


def _plan(host_vars, context=None):
    hostvars = {"a": dict({"dlbox_plan_hardware": HW}, **host_vars)}
    got = plan_fleet(plan_inputs(hostvars, ["a"], context or {}), hostvars, ["a"])
    return got["plans"]["a"], got["text"], got["refused"]


def test_the_driver_branch_pin_is_the_plan():
    """-e nvidia_driver_branch=570: R570, the CUDA R570 runs (12.8) and wheels it runs (cu126), as the golden plan."""
    plan, text, refused = _plan({"nvidia_driver_branch": "570"})
    assert plan == _golden("rtx4090-debian12-driver570")
    stack = plan["stack"]
    assert (stack["driver"]["branch"], stack["cuda"]["version"], stack["pytorch"]["variant"]) == (570, "12.8", "cu126")
    assert "Driver:     R570 PB" in text and "CUDA:       12.8 (cuda-toolkit-12-8)" in text and refused == []
    # an int from the inventory is the same pin
    assert _plan({"nvidia_driver_branch": 570})[0] == plan


def test_the_cuda_versions_pin_is_the_plan_and_shows_the_toolkits():
    plan, text, _refused = _plan({"cuda_versions": ["12.8"]})
    assert plan["stack"]["cuda"]["toolkits"] == ["12.8"]
    shown = dict(plan, stack=dict(plan["stack"], cuda={k: v for k, v in plan["stack"]["cuda"].items() if k != "toolkits"}))
    assert shown == _golden("rtx4090-debian12-cuda128")
    assert "CUDA:       12.8 (cuda-toolkit-12-8); cuda_versions: 12.8" in text


def test_the_plan_takes_the_highest_toolkit_and_checks_the_others_with_its_driver():
    plan, text, _refused = _plan({"cuda_versions": ["12.8", "12.6"], "nvidia_driver_branch": "570"})
    assert plan["ok"], plan["errors"]
    assert (plan["stack"]["driver"]["branch"], plan["stack"]["cuda"]["version"]) == (570, "12.8")
    assert plan["stack"]["cuda"]["toolkits"] == ["12.6", "12.8"]
    assert "cuda_versions: 12.6, 12.8" in text
    # the driver must run the highest toolkit: R570 cannot run CUDA 13.0 (>= 580.65.06)
    plan, _text, refused = _plan({"cuda_versions": ["12.8", "13.0"], "nvidia_driver_branch": "570"})
    assert not plan["ok"] and refused == ["a"]
    assert any("CUDA 13.0 needs driver >= 580.65.06" in e for e in plan["errors"]), plan["errors"]
    # without a driver pin the plan picks a driver for the highest toolkit
    plan = _plan({"cuda_versions": ["12.8", "13.0"]})[0]
    assert plan["ok"] and plan["stack"]["driver"]["branch"] >= 580 and plan["stack"]["cuda"]["version"] == "13.0"


def test_a_lower_toolkit_the_gpus_cannot_use_is_refused_naming_it():
    """RTX 5090 (Blackwell, CC 12.0) needs CUDA >= 12.8: cuda_versions[0] 12.6 is refused though the plan's 12.8 fits."""
    hostvars = {"a": {"dlbox_plan_hardware": {"gpus": ["RTX 5090"], "os": "ubuntu-24.04"}, "cuda_versions": ["12.6", "12.8"]}}
    plan = plan_fleet(plan_inputs(hostvars, ["a"], {}), hostvars, ["a"])["plans"]["a"]
    assert not plan["ok"]
    assert plan["errors"] == ["cuda_versions[0] ('12.6'): CUDA 12.6 does not support NVIDIA GeForce RTX 5090 (Blackwell, "
                              "CC 12.0): it needs CUDA >= 12.8; use cuda: '12.8' or newer."]


@pytest.mark.parametrize("var, value, key, asked", [
    ("nvidia_driver_branch", "570", "driver_branch", "580"),
    ("nvidia_driver_method", "distro", "driver_method", "nvidia_repo"),
    ("nvidia_driver_kernel_modules", "proprietary", "kernel_modules", "open"),
    ("nvidia_driver_profile", "server", "driver_profile", "desktop"),
    ("cudnn_version", "9.10", "cudnn", "9.17"),
    ("cuda_versions", ["12.8"], "cuda", "13.0"),
])
def test_a_pin_that_contradicts_dlbox_plan_request_is_refused_naming_both(var, value, key, asked):
    plan, text, refused = _plan({var: value, "dlbox_plan_request": {key: asked}})
    assert not plan["ok"] and refused == ["a"]
    assert len(plan["errors"]) == 1 and plan["stack"]["driver"] is None and plan["stack"]["cuda"] is None
    assert var in plan["errors"][0] and "dlbox_plan_request.%s '%s'" % (key, asked) in plan["errors"][0]
    assert "Refused because:" in text


def test_the_same_value_twice_is_no_contradiction():
    assert _plan({"nvidia_driver_branch": "570", "dlbox_plan_request": {"driver_branch": "570"}})[0] == \
        _golden("rtx4090-debian12-driver570")
    plan = _plan({"cuda_versions": ["12.8", "13.0"], "dlbox_plan_request": {"cuda": "12.8"}})[0]
    assert plan["stack"]["cuda"]["version"] == "12.8" and plan["stack"]["cuda"]["toolkits"] == ["12.8", "13.0"]


@pytest.mark.parametrize("var, value, words", [
    ("nvidia_driver_branch", "abc", "nvidia_driver_branch"),
    ("nvidia_driver_kernel_modules", "closed", "nvidia_driver_kernel_modules"),
    ("cuda_versions", "['12.8']", "cuda_versions must be a list"),
    ("cuda_versions", [12.8], "cuda_versions must be a list"),
])
def test_a_bad_pin_is_refused_naming_its_variable(var, value, words):
    plan = _plan({var: value})[0]
    assert not plan["ok"] and words in " ".join(plan["errors"]), plan["errors"]


def test_the_roles_defaults_leave_the_plan_alone():
    """The roles' defaults ("" and []) pin nothing: the plan is dlbox_plan_request's alone."""
    defaults = {"nvidia_driver_branch": "", "nvidia_driver_method": "", "nvidia_driver_kernel_modules": "",
                "nvidia_driver_profile": "", "cuda_versions": [], "cudnn_version": ""}
    assert _plan(defaults)[0] == resolve_stack({}, {}, hardware=HW)


def test_a_pin_the_play_sets_counts_for_every_host():
    hostvars = {"a": {"dlbox_plan_hardware": HW}, "b": {"dlbox_plan_hardware": HW}}
    inputs = plan_inputs(hostvars, ["a", "b"], {"nvidia_driver_branch": "570"})
    assert [inputs["hosts"][h]["pins"] for h in ("a", "b")] == [{"nvidia_driver_branch": "570"}] * 2


def test_plan_yml_looks_up_every_pin():
    assert all(var in fleet.NAMES for var, _key in fleet.PINS)
    assert sorted(key for _var, key in fleet.PINS) == sorted(
        ["driver_branch", "driver_method", "kernel_modules", "driver_profile", "cuda", "cudnn"])


def test_the_driver_role_finds_the_plan_fits_and_does_not_resolve_again():
    plan = _golden("rtx4090-debian12-driver570")
    assert nvidia_driver_plan.plan_fits(plan, "", "570", "", "")
    got = role_decide("nvidia_driver", plan, {"nvidia_driver_branch": "570"}, {"hardware": HW})
    assert got["plan"]["source"] == "dlbox_plan"
    # a bare roles: [dlbox.stack.nvidia_driver] without plan.yml still resolves its own plan with its pin
    got = role_decide("nvidia_driver", None, {"nvidia_driver_branch": "570"}, {"hardware": HW})
    assert got["plan"]["source"] == "resolved" and got["plan"]["stack"]["driver"]["branch"] == 570


def test_the_cuda_role_refuses_a_toolkit_the_plans_driver_cannot_run():
    """The plan says R570: cuda_versions ['13.0'] (>= 580.65.06) is refused before any change, naming the variable."""
    plan = _golden("rtx4090-debian12-driver570")
    got = role_decide("cuda", plan, {"cuda_versions": ["13.0"]}, {"hardware": HW})
    assert not got["ok"] and got["toolkits"] == []
    assert got["errors"] == [
        "cuda_versions[0] ('13.0'): CUDA 13.x needs driver >= 580.65.06 (data/compat.yml cuda.minor_compat, NVIDIA "
        "minor-version-compatibility Table 1 (P); 580.65.06 = CUDA 13.0 GA driver (Pc)), but the plan's driver is R570 "
        "(570.172.08); use a toolkit R570 runs, or plan a newer driver (nvidia_driver_branch or "
        "dlbox_plan_request.driver_branch: 580 or newer, in plan.yml). Nothing was changed."]
    ok = role_decide("cuda", plan, {"cuda_versions": ["12.6", "12.8"]}, {"hardware": HW})
    assert ok["ok"] and [t["version"] for t in ok["toolkits"]] == ["12.6", "12.8"]


def test_the_toolkits_plan_yml_checked_are_not_resolved_again():
    plan = _plan({"cuda_versions": ["12.6", "12.8"], "nvidia_driver_branch": "570"})[0]

    def resolve(version):
        raise AssertionError("CUDA %s was resolved again" % version)

    options = {"method": "nvidia_repo", "versions": ["12.6", "12.8"], "verify": False}
    got = cuda_plan.decide(load_compat(), plan, options, resolve=resolve)
    assert got["ok"], got["errors"]
    # a toolkit plan.yml did not check still goes through the resolver
    with pytest.raises(AssertionError, match="CUDA 12.5 was resolved again"):
        cuda_plan.decide(load_compat(), plan, dict(options, versions=["12.5", "12.8"]), resolve=resolve)


def test_driver_problems_reads_the_plans_driver_and_the_datas_floor():
    data = load_compat()
    r580 = {"stack": {"driver": {"branch": 580, "version_available": "580.65.06"}}}
    early = {"stack": {"driver": {"branch": 580, "version_available": "580.60.01"}}}
    assert cuda_plan.driver_problems(data, r580, ["13.0", "12.8"]) == []
    assert [p.split(":")[0] for p in cuda_plan.driver_problems(data, early, ["12.8", "13.0"])] == ["cuda_versions[1] ('13.0')"]
    assert cuda_plan.driver_problems(data, {"stack": {"driver": None}}, ["13.0"]) == []   # Jetson, no GPU: not here


def _playbook(tmp_path, inventory_vars, *extra):
    inventory = {"all": {"hosts": {"fixture": {}}, "vars": dict({
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable,
        "dlbox_plan_hardware": HW}, **inventory_vars)}}
    (tmp_path / "hosts.yml").write_text(json.dumps(inventory))
    base = next(p for p in sys.path if (Path(p) / "ansible_collections" / "dlbox" / "stack").resolve() == ROOT)
    env = {"PATH": "%s:/usr/bin:/bin" % BIN, "ANSIBLE_CONFIG": str(tmp_path / "none.cfg"), "ANSIBLE_NOCOLOR": "1",
           "HOME": str(tmp_path), "ANSIBLE_LOCAL_TEMP": str(tmp_path / "tmp"), "ANSIBLE_COLLECTIONS_PATH": base,
           "LC_ALL": "C.UTF-8"}
    proc = subprocess.run([str(BIN / "ansible-playbook"), "--check", "-i", str(tmp_path / "hosts.yml"),
                           str(ROOT / "playbooks" / "plan.yml"), "-e", "dlbox_plan_output=%s" % (tmp_path / "plan.json")]
                          + list(extra), capture_output=True, text=True, check=False, env=env, timeout=300, cwd=tmp_path)
    return proc.returncode, proc.stdout + proc.stderr


def test_plan_yml_plans_the_roles_pin(tmp_path):
    """Real ansible-playbook, check mode, a local FIXTURE host: -e nvidia_driver_branch=570 is the plan printed and
    written; a pin that contradicts the inventory's dlbox_plan_request stops the run, naming both."""
    rc, out = _playbook(tmp_path, {}, "-e", "nvidia_driver_branch=570")
    assert rc == 0, out[-4000:]
    # check mode writes no dlbox_plan_output; the plan printed is the golden plan's
    assert "Driver:     R570 PB, open kernel modules, >= 570.26" in out, out[-4000:]
    assert "CUDA:       12.8 (cuda-toolkit-12-8)" in out and "PyTorch:    2.14.1 cu126" in out, out[-4000:]
    assert not (tmp_path / "plan.json").exists()
    rc, out = _playbook(tmp_path, {}, "-e", '{"cuda_versions": ["12.8"]}')
    assert rc == 0 and "CUDA:       12.8 (cuda-toolkit-12-8); cuda_versions: 12.8" in out, out[-4000:]
    rc, out = _playbook(tmp_path, {"dlbox_plan_request": {"driver_branch": "580"}}, "-e", "nvidia_driver_branch=570")
    assert rc == 2, out[-4000:]
    assert "nvidia_driver_branch '570' contradicts dlbox_plan_request.driver_branch '580'" in out, out[-4000:]
    assert "Nothing was changed." in out


def test_the_cudnn_role_refuses_a_toolkit_the_plans_driver_cannot_run():
    """cuDNN for the installed CUDA 13.0 under the plan's R570: refused before any change (its own recheck resolved a
    plan without the driver pin, R580, and passed)."""
    plan = _golden("rtx4090-debian12-driver570")
    toolkit = {"version": "13.0", "path": "/usr/local/cuda-13.0"}
    got = role_decide("cudnn", plan, {}, {"hardware": HW, "toolkits": [toolkit]})
    assert len(got["errors"]) == 1 and got["check"] is None
    assert got["errors"][0].startswith("the CUDA toolkit cuDNN is for ('13.0'): CUDA 13.x needs driver >= 580.65.06")
    fits = role_decide("cudnn", plan, {}, {"hardware": HW, "toolkits": [dict(toolkit, version="12.8", path="/usr/local/cuda-12.8")]})
    assert fits["errors"] == [] and fits["check"]["ok"], fits["check"]
