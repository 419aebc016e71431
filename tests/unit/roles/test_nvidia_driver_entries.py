# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The nvidia_driver role's later steps as entries of its module (issue 47), reached by
``'nvidia_driver' | dlbox.stack.role_module('<entry>', ...)`` where eleven filters of their own were before (now
tombstoned in meta/runtime.yml). These paths run only in long Molecule scenarios (update, rollback, unattended,
persistence), so here:

- every call of the role's tasks (and of the persistence scenario) is parsed with Jinja and its keyword names bound to
  the entry's signature; every entry is called, no task names an old filter;
- each entry returns what the old filter (as of 209af21, read from git) returned for the same inputs, its refusals with
  the same words;
- the tasks that call them, taken from the role's files by name, run in real Ansible with fixture facts and keep what
  the entry gives for the same inputs.
"""

from __future__ import annotations

import base64
import importlib.util
import inspect
import json
import subprocess
import sys
import types
from pathlib import Path

import jinja2
import pytest
import yaml
from jinja2 import nodes

from ansible.errors import AnsibleFilterError

from ansible_collections.dlbox.stack.plugins.filter.role_module import role_module
from ansible_collections.dlbox.stack.plugins.plugin_utils import roles
from ansible_collections.dlbox.stack.plugins.plugin_utils.roles import nvidia_driver as module

ROOT = Path(__file__).resolve().parents[3]
TASKS = ROOT / "roles" / "nvidia_driver" / "tasks"
FIXTURES = ROOT / "tests" / "fixtures"
BEFORE = "209af21a8d19ab27a8b2a7238c4cb0276aed5250"  # the last commit with the eleven filters
# entry -> (its old filter's file, the old filter's name, the keyword its piped input became)
OLD = {"hold_changes": ("nvidia_driver_holds", "wanted"), "kernel_without_module": ("nvidia_driver_holds", "simulation"),
       "unattended": ("nvidia_driver_holds", "simulation"), "boot_without_module": ("nvidia_driver_holds", "kernel_packages"),
       "update_plan": ("nvidia_driver_update", "decision"), "rollback_request": ("nvidia_driver_update", "records"),
       "rollback_hint": ("nvidia_driver_update", "records"), "kept_holds": ("nvidia_driver_update", "held"),
       "persistence": ("nvidia_driver_kernel", "unit_text"), "failure_logs": ("nvidia_driver_kernel", "result"),
       "install_failure": ("nvidia_driver_kernel", "result")}
# entry -> the deprecated filter's input (the filter still exists and calls the entry: test_nvidia_driver_fabric_hint_entry)
DEPRECATED = {"fabric_not_ready_hint": "result"}


# --- every call site against its entry's signature ---------------------------------------------------------------

def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def call_sites(paths):
    """(file, entry, positional arguments after the entry, keyword names) of each ``'nvidia_driver' |
    dlbox.stack.role_module(...)`` in the YAML files ``paths`` (templates, and bare conditions)."""
    env = jinja2.Environment()
    found = []
    for path in paths:
        for text in _strings(yaml.safe_load(path.read_text(encoding="utf-8"))):
            if "role_module" not in text:
                continue
            tree = env.parse(text if "{{" in text or "{%" in text else "{{ %s }}" % text)
            for node in tree.find_all(nodes.Filter):
                if node.name == "dlbox.stack.role_module" and isinstance(node.node, nodes.Const) \
                        and node.node.value == "nvidia_driver":
                    entry = node.args[0].value if node.args and isinstance(node.args[0], nodes.Const) else None
                    found.append((path.name, entry, len(node.args) - 1, sorted(k.key for k in node.kwargs)))
    return found


def _task_files():
    return sorted(TASKS.glob("*.yml")) + sorted((ROOT / "molecule" / "nvidia_driver_persistence").rglob("*.yml"))


def test_every_call_names_a_declared_entry_with_keywords_its_signature_takes():
    sites = [s for s in call_sites(_task_files()) if s[1] not in ("decide", "module_check")]
    # install 6, kernel 2, update 3, rollback 1, rollback_request 3, hint, keep, persistence; fabric_wait and
    # fabric_blackwell_start's fabric_not_ready_hint (rt47c M3)
    assert len(sites) == 20, sites
    assert [s[0] for s in sites if s[1] == "fabric_not_ready_hint"] == ["fabric_blackwell_start.yml", "fabric_wait.yml"]
    for name, entry, positional, keywords in sites:
        where = "%s: role_module(%r, %s)" % (name, entry, ", ".join(keywords))
        assert entry in roles.ROLES["nvidia_driver"] and entry in roles.entries("nvidia_driver"), where
        assert positional == 0, where  # role_module passes keywords only
        signature = inspect.signature(getattr(module, entry))
        signature.bind(**dict.fromkeys(keywords))  # TypeError: a keyword the entry does not take, or a required one missing
        assert (OLD[entry][1] if entry in OLD else DEPRECATED[entry]) in keywords, where  # the old filter's input is given
    assert {s[1] for s in sites} == set(OLD) | set(DEPRECATED)  # every entry is used by the role


def test_the_check_names_a_misspelt_keyword(tmp_path):
    text = (TASKS / "keep.yml").read_text(encoding="utf-8")
    assert "kept=__nvidia_driver_kept" in text
    (tmp_path / "keep.yml").write_text(text.replace("kept=__nvidia_driver_kept", "keep=__nvidia_driver_kept"), encoding="utf-8")
    ((_name, entry, _positional, keywords),) = call_sites([tmp_path / "keep.yml"])
    with pytest.raises(TypeError, match="keep"):
        inspect.signature(getattr(module, entry)).bind(**dict.fromkeys(keywords))


def test_no_role_playbook_or_scenario_names_an_old_filter():
    runtime = yaml.safe_load((ROOT / "meta" / "runtime.yml").read_text(encoding="utf-8"))["plugin_routing"]["filter"]
    for entry in OLD:
        route = runtime["nvidia_driver_" + entry]
        assert "tombstone" in route and "role_module('%s', %s=" % (entry, OLD[entry][1]) in route["tombstone"]["warning_text"]
    files = [p for top in ("roles", "playbooks", "molecule", "docs") for p in (ROOT / top).rglob("*") if p.suffix in (".yml", ".md")]
    named = [(str(p.relative_to(ROOT)), e) for p in files for e in OLD
             if "dlbox.stack.nvidia_driver_%s" % e in p.read_text(encoding="utf-8")]
    assert named == []
    filters = [p.stem for p in (ROOT / "plugins" / "filter").glob("*.yml")]
    assert not {"nvidia_driver_" + e for e in OLD} & set(filters)  # no sidecar of a removed filter


# --- the same answers as the old filters -----------------------------------------------------------------------------

def _old_filters():
    """The three filter files as of BEFORE (git show), loaded as modules: {filter name: function}."""
    got = {}
    for stem in sorted({stem for stem, _keyword in OLD.values()}):
        try:
            source = subprocess.run(["git", "-C", str(ROOT), "show", "%s:plugins/filter/%s.py" % (BEFORE, stem)],
                                    capture_output=True, text=True, check=True).stdout
        except (OSError, subprocess.CalledProcessError):
            pytest.skip("needs the git history (commit %s)" % BEFORE)
        mod = types.ModuleType("old_" + stem)
        exec(compile(source, stem, "exec"), mod.__dict__)  # pylint: disable=exec-used
        got.update(mod.FilterModule().filters())
    return got


# the kept R570 copy and the R580 now installed: the rollback tests' own (one fixture for both files)
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "plugins" / "plugin_utils"))
from test_nvidia_driver_rollback import FAMILY, KEEP, KEPT, NOW, RECORD  # noqa: E402  pylint: disable=wrong-import-position,import-error,wrong-import-order
SLURPED = [{"item": {"path": KEEP + "/R570-570.195.03/dlbox-kept.json", "mtime": 5.0},
            "content": base64.b64encode(json.dumps(RECORD).encode()).decode()}]
PRESENT = [KEEP + "/R570-570.195.03/" + k["file"] for k in KEPT]
DEPENDS = "linux-image-6.8.0-149-generic | linux-image-unsigned-6.8.0-149-generic, nvidia-kernel-common-580 (<= 580.178.04-1), " \
          "nvidia-kernel-common-580 (>= 580.178.04)"
KERNEL_PACKAGES = [
    {"name": "linux-image-6.8.0-149-generic", "version": "6.8.0-149.149", "installed": True, "depends": ""},
    {"name": "linux-image-6.8.0-151-generic", "version": "6.8.0-151.151", "installed": True, "depends": ""},
    {"name": "linux-modules-nvidia-580-open-6.8.0-149-generic", "version": "6.8.0-149.149", "installed": True, "depends": DEPENDS},
    {"name": "linux-modules-nvidia-580-open-6.8.0-151-generic", "version": "6.8.0-151.151", "installed": True,
     "depends": DEPENDS.replace("149", "151")}]
KERNEL_TEXT = "".join("%s\t%s\tii \t%s\n" % (p["name"], p["version"], p["depends"]) for p in KERNEL_PACKAGES)
UPDATE_SIM = ("Remv linux-modules-nvidia-580-open-6.8.0-149-generic [6.8.0-149.149]\n"
              "Inst linux-modules-nvidia-580-open-6.8.0-151-generic [6.8.0-151.151] (6.8.0-151.151+1 Ubuntu:24.04/noble-updates [amd64])\n")
# a kernel apt would install without its signed module (test_nvidia_driver_holds.py's case)
ALONE_SIM = ("Inst linux-image-6.8.0-1003-generic (6.8.0-1003.1003 x [amd64])\n"
             "Inst linux-modules-6.8.0-1003-generic (6.8.0-1003.1003 x [amd64])\n"
             "Inst linux-image-generic-hwe-24.04 [6.8.0-1002.1002] (6.8.0-1003.1003 x [amd64])\n")
# RECORDED (tests/fixtures/unattended), with one line in apt-get -s's format added: the driver's point release from the
# same origin, which unattended-upgrades takes unless the package is held
UU_SIM = (FIXTURES / "unattended" / "debian12-apt-get-s-upgrade.txt").read_text(encoding="utf-8") \
    + "Inst nvidia-driver [535.216.01-1~deb12u1] (535.247.01-1~deb12u1 Debian:12.15/oldstable [amd64])\n"
UU_POLICY = (FIXTURES / "unattended" / "debian12-apt-cache-policy.txt").read_text(encoding="utf-8")
UU_CONFIG = (FIXTURES / "unattended" / "apt-config-dump-Debian-2.9.1.txt").read_text(encoding="utf-8")
UNIT = (FIXTURES / "persistenced" / "ubuntu-580-server-jammy.nvidia-persistenced.service").read_text(encoding="utf-8")
DECISION = {"driver": {"branch": 580}, "family": FAMILY, "fabric_manager": {"package": None}, "signing": {"path": "precompiled"}}
UPDATE_INSTALLED = [{"name": "nvidia-utils-580", "version": "580.95.05-0ubuntu1", "arch": "amd64"},
                    {"name": "nvidia-driver-580-open", "version": "580.95.05-0ubuntu1", "arch": "amd64"}]
DKMS_FAILED = {"failed": True, "rc": 100, "msg": "'/usr/bin/apt-get -y install nvidia-driver-580-open' failed",
               "stdout": (FIXTURES / "gpu_host" / "recorded" / "pop-nvidia-dkms-580-open-build-failed.txt").read_text(encoding="utf-8"),
               "stderr": "E: Sub-process /usr/bin/dpkg returned an error code (1)\n"}
TAILS = [{"item": "/var/lib/dkms/nvidia/580.95.05/build/make.log", "rc": 0,
          "stdout_lines": ["make[1]: *** [Makefile:1234: modules] Error 2"]}]

# entry -> the old filter's input and its other arguments (the same values through both)
CASES = {
    "hold_changes": [(["nvidia-utils-580", "nvidia-driver-580-open"], {"held": ["nvidia-utils-570", "docker-ce"],
                                                                       "recorded": ["nvidia-utils-570"]}),
                     ("nvidia-utils-580", {"held": "nvidia-utils-580\nnvidia-utils-570", "installed": ["nvidia-utils-580"]})],
    "kernel_without_module": [(ALONE_SIM, {"installed": ["linux-modules-nvidia-580-open-6.8.0-1002-generic"]}),
                              ({"stdout": ALONE_SIM, "rc": 0}, {"installed": "linux-modules-nvidia-580-open-6.8.0-1002-generic"})],
    "unattended": [(UU_SIM, {"policy": UU_POLICY, "config": {"stdout": UU_CONFIG}, "distro_id": "Debian",
                             "codename": "bookworm", "installed": ["nvidia-driver"], "held": [], "blacklist": ["nvidia-*"]}),
                   ({"stdout": UU_SIM}, {"policy": {"stdout": UU_POLICY}, "config": UU_CONFIG, "distro_id": "Debian",
                                         "codename": "bookworm", "installed": "nvidia-driver", "held": "nvidia-driver"})],
    "boot_without_module": [(KERNEL_PACKAGES, {"boot": ["6.8.0-149-generic", "6.8.0-151-generic"], "new_version": "580.196.07",
                                               "simulation": {"stdout": UPDATE_SIM, "rc": 0}}),
                            (KERNEL_TEXT, {"boot": ["6.8.0-149-generic"], "running": "6.8.0-151-generic"})],
    "update_plan": [(DECISION, {"installed": UPDATE_INSTALLED}),
                    (DECISION, {"installed": UPDATE_INSTALLED, "simulation": {"stdout": UPDATE_SIM, "stderr": "", "rc": 0},
                                "apps": {"stdout": "", "rc": 0}, "check_mode": True})],
    "rollback_request": [(SLURPED, {"installed": NOW, "family": FAMILY, "keep_dir": KEEP, "present_files": PRESENT}),
                         (SLURPED, {"installed": NOW, "family": FAMILY, "keep_dir": KEEP, "present_files": PRESENT[:1]}),
                         (SLURPED, {"installed": NOW, "family": FAMILY, "keep_dir": KEEP, "present_files": PRESENT,
                                    "simulation": {"rc": 100, "stdout": "", "stderr": "E: Unable to correct problems"}})],
    "rollback_hint": [(SLURPED, {"branch": 580, "changed_now": True}), (SLURPED, {"branch": 580}), ([], {"branch": 580})],
    "kept_holds": [("nvidia-utils-570-server\nlibnvidia-compute-570-server:i386\ndocker-ce", {"kept": KEPT})],
    "persistence": [(UNIT, {"manage": True, "installed": "580.95.05", "persistence_mode": True,
                            "state": {"state": "pending_reboot", "loaded_version": "575.57.08", "installed_version": "580.95.05"},
                            "unit_path": "/lib/systemd/system/nvidia-persistenced.service"}),
                    (UNIT, {"manage": True, "installed": "580.95.05", "sys_version": "580.95.05\n", "check_mode": True})],
    "failure_logs": [(DKMS_FAILED, {}), ("not a result", {})],
    "install_failure": [(DKMS_FAILED, {"tails": TAILS}), (DKMS_FAILED, {})],
}
# entry -> the old filter's input and arguments it refused (the same words)
REFUSED = {"hold_changes": ("x", {"held": 5}), "kernel_without_module": (5, {}), "unattended": (5, {}),
           "boot_without_module": (5, {}), "update_plan": ({"no": "driver"}, {}), "rollback_request": ("x", {}),
           "rollback_hint": ({}, {}), "kept_holds": (5, {}), "persistence": (UNIT, {"state": "loaded"})}


def _entry_words(entry, words):
    """The old filter's refusal as the entry says it: prefixed ``role_module(nvidia_driver, <entry>)``, and the
    decision it expects named as the role keeps it."""
    assert words.startswith("nvidia_driver_%s: " % entry), words
    words = "role_module(nvidia_driver, %s): " % entry + words[len("nvidia_driver_%s: " % entry):]
    return words.replace("expected the nvidia_driver plan (nvidia_driver_plan's result)",
                         "expected the nvidia_driver decision (__nvidia_driver_decided, the role's kept decision)")


@pytest.mark.parametrize("entry", sorted(OLD))
def test_each_entry_answers_as_its_old_filter(entry):
    old = _old_filters()["nvidia_driver_" + entry]
    for value, kwargs in CASES[entry]:
        want = old(value, **kwargs)
        assert role_module("nvidia_driver", entry, **{OLD[entry][1]: value}, **kwargs) == want, (entry, kwargs)
        assert want not in (None, "", [], {}) or entry in ("rollback_hint", "failure_logs")  # a case that says something
    if entry in REFUSED:
        value, kwargs = REFUSED[entry]
        with pytest.raises(AnsibleFilterError) as before:
            old(value, **kwargs)
        with pytest.raises(AnsibleFilterError) as now:
            role_module("nvidia_driver", entry, **{OLD[entry][1]: value}, **kwargs)
        # the old filter's words, naming the entry instead of the removed filter (rt47c L2)
        assert str(now.value) == _entry_words(entry, str(before.value))


def test_the_cases_are_not_empty_answers():
    # the fixtures reach the decisions, not only their defaults
    assert role_module("nvidia_driver", "failure_logs", result=DKMS_FAILED)
    assert role_module("nvidia_driver", "rollback_hint", records=SLURPED, branch=580, changed_now=True)
    assert role_module("nvidia_driver", "rollback_request", records=SLURPED, installed=NOW, family=FAMILY, keep_dir=KEEP,
                       present_files=PRESENT)["action"] == "rollback"
    assert role_module("nvidia_driver", "boot_without_module", kernel_packages=KERNEL_PACKAGES,
                       boot=["6.8.0-149-generic", "6.8.0-151-generic"], new_version="580.196.07",
                       simulation={"stdout": UPDATE_SIM})["kernels"]


# --- the role's own tasks in real Ansible ----------------------------------------------------------------------------

def _task(path, name):
    found = [t for t in yaml.safe_load((TASKS / path).read_text(encoding="utf-8")) if t.get("name") == name]
    assert len(found) == 1, (path, name)
    return found[0]


def _rescue_task(path, name):
    for task in yaml.safe_load((TASKS / path).read_text(encoding="utf-8")):
        for item in task.get("rescue") or []:
            if item.get("name") == name:
                return item
    raise AssertionError((path, name))


def _show(*names):
    return {"name": "Show", "ansible.builtin.debug": {"msg": "{{ {%s} }}" % ", ".join("'%s': %s" % (n, n) for n in names)}}


def _run_all(tmp_path, tasks, variables):
    """The tasks' results on one local host, in order (a name may repeat)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from play_runner import run_play  # pylint: disable=import-outside-toplevel,import-error

    hostvars = {"host": dict(variables, ansible_connection="local", ansible_python_interpreter=sys.executable)}
    proc, out = run_play(tmp_path, {"hosts": "all", "gather_facts": False, "tasks": tasks}, hostvars)
    assert proc.returncode == 0 and out is not None, proc.stdout[-4000:] + proc.stderr[-2000:]
    return [(t["task"]["name"], t["hosts"]["host"]) for t in out["plays"][0]["tasks"]]


def _run(tmp_path, tasks, variables):
    return dict(_run_all(tmp_path, tasks, variables))


REFUSED_ROLLBACK = "E: Unable to correct problems, you have held broken packages.\n"


def test_the_holds_rollback_and_keep_tasks_keep_what_the_entries_give(tmp_path):
    record = {"holds": ["nvidia-utils-570"]}
    variables = {
        "nvidia_driver_hold": True, "nvidia_driver_keep_dir": KEEP,
        "__nvidia_driver_decided": dict(DECISION, holds=["nvidia-utils-580", "nvidia-driver-580-open"], change={"action": "change"}),
        "__nvidia_driver_showhold": {"stdout_lines": ["nvidia-utils-570", "docker-ce"]},
        "__nvidia_driver_holds_record_stat": {"stat": {"exists": True}},
        "__nvidia_driver_holds_recorded": {"content": base64.b64encode(json.dumps(record).encode()).decode()},
        "__nvidia_driver_showhold_before": {"stdout_lines": ["nvidia-utils-570-server", "docker-ce"]},
        "__nvidia_driver_kept": KEPT,
        "__nvidia_driver_kept_texts": {"results": SLURPED}, "__nvidia_driver_facts": {"installed": NOW},
        "__nvidia_driver_kept_debs": {"files": [{"path": p} for p in PRESENT]},
        "__nvidia_driver_rollback_sim": {"rc": 100, "stdout": "", "stderr": REFUSED_ROLLBACK},
        "__nvidia_driver_primary_list": {"files": [{"mtime": 10.0}]},
        "__nvidia_driver_showhold_request": {"stdout_lines": ["nvidia-utils-580-server"]}}
    tasks = [_task("install.yml", "Work out which holds to set and which to release"), _show("__nvidia_driver_hold_changes"),
             _task("keep.yml", "Keep the holds of the old branch"), _show("__nvidia_driver_holds_before"),
             _task("rollback_request.yml", "Work out the rollback"), _show("__nvidia_driver_rollback_request"),
             _task("rollback_request.yml", "Judge the simulated rollback"), _show("__nvidia_driver_rollback_request"),
             _task("rollback_request.yml", "Work out the holds of the previous branch"), _show("__nvidia_driver_hold_changes"),
             _task("rollback_hint.yml", "Work out how a failed check could be undone"), _show("__nvidia_driver_rollback_hint")]
    shown = [h["msg"] for name, h in _run_all(tmp_path, tasks, variables) if name == "Show"]
    holds, kept, request, judged, back, hint = (next(iter(m.values())) for m in shown)
    assert holds == module.hold_changes(wanted=["nvidia-utils-580", "nvidia-driver-580-open"], held=["nvidia-utils-570", "docker-ce"],
                                        recorded=["nvidia-utils-570"])
    assert holds["hold"] and holds["release"] == ["nvidia-utils-570"]
    assert kept == module.kept_holds(held=["nvidia-utils-570-server", "docker-ce"], kept=KEPT) == ["nvidia-utils-570-server"]
    expect = module.rollback_request(records=SLURPED, installed=NOW, family=FAMILY, keep_dir=KEEP, present_files=PRESENT)
    assert request == expect and request["action"] == "rollback"
    assert judged == module.rollback_request(records=SLURPED, installed=NOW, family=FAMILY, keep_dir=KEEP, present_files=PRESENT,
                                             simulation={"rc": 100, "stdout": "", "stderr": REFUSED_ROLLBACK})
    assert not judged["ok"] and judged != request  # apt's refusal reached the verdict
    assert back == module.hold_changes(wanted=judged["holds"], held=["nvidia-utils-580-server"], recorded=judged["purge"])
    assert back["release"] == ["nvidia-utils-580-server"] and back["hold"] == judged["holds"] != []
    assert hint == module.rollback_hint(records=SLURPED, branch=580, changed_now=True, installed_at=10.0) != ""


def test_the_rollback_holds_task_keeps_what_the_entry_gives(tmp_path):
    variables = {"__nvidia_driver_holds_before": ["nvidia-utils-570-server"],
                 "__nvidia_driver_showhold_rollback": {"stdout_lines": ["nvidia-utils-580-server", "docker-ce"]},
                 "__nvidia_driver_decided": {"holds": ["nvidia-utils-580-server"]},
                 "__nvidia_driver_rollback": {"purge": ["nvidia-driver-580-server-open"]}}
    ran = _run(tmp_path, [_task("rollback.yml", "Work out the holds of the previous branch"),
                          _show("__nvidia_driver_hold_changes")], variables)
    got = ran["Show"]["msg"]["__nvidia_driver_hold_changes"]
    assert got == module.hold_changes(wanted=["nvidia-utils-570-server"], held=["nvidia-utils-580-server", "docker-ce"],
                                      recorded=["nvidia-utils-580-server", "nvidia-driver-580-server-open"])
    assert got["release"] == ["nvidia-utils-580-server"] and got["hold"] == ["nvidia-utils-570-server"]


def test_the_update_tasks_keep_what_the_entry_gives(tmp_path):
    variables = {"__nvidia_driver_decided": DECISION, "nvidia_driver_update_force": False,
                 "__nvidia_driver_facts": {"installed": UPDATE_INSTALLED,
                                           "kernel": {"packages": KERNEL_PACKAGES, "boot": ["6.8.0-149-generic", "6.8.0-151-generic"]}},
                 "__nvidia_driver_update_sim": {"stdout": UPDATE_SIM, "stderr": "", "rc": 0},
                 "__nvidia_driver_update_apps": {"stdout": "", "rc": 0}}
    boot = _task("update.yml", "Say which kernels in /boot the update leaves without the NVIDIA module")
    boot = dict(boot, when=["__nvidia_driver_update_boot.kernels | length > 0"])  # whatever the verdict's action
    tasks = [_task("update.yml", "List the installed packages of the branch"), _task("update.yml", "Judge the update"),
             _show("__nvidia_driver_update_names", "__nvidia_driver_update"), boot]
    ran = _run(tmp_path, tasks, variables)
    shown = ran["Show"]["msg"]
    assert shown["__nvidia_driver_update_names"] == module.update_plan(decision=DECISION, installed=UPDATE_INSTALLED)["names"]
    assert shown["__nvidia_driver_update_names"]
    assert shown["__nvidia_driver_update"] == module.update_plan(decision=DECISION, installed=UPDATE_INSTALLED,
                                                                 simulation={"stdout": UPDATE_SIM, "stderr": "", "rc": 0},
                                                                 apps={"stdout": "", "rc": 0}, force=False, check_mode=False)
    assert shown["__nvidia_driver_update"]["available_version"]
    want = module.boot_without_module(kernel_packages=KERNEL_PACKAGES, boot=["6.8.0-149-generic", "6.8.0-151-generic"],
                                      signing="precompiled", new_version=shown["__nvidia_driver_update"]["available_version"],
                                      simulation={"stdout": UPDATE_SIM, "stderr": "", "rc": 0})
    assert ran[boot["name"]]["msg"] == "NOTE: " + want["message"] and want["kernels"]


def test_the_unattended_tasks_keep_what_the_entries_give(tmp_path):
    variables = {"nvidia_driver_unattended_blacklist": True,
                 "__facts": {"distribution": "Debian", "distribution_release": "bookworm", "kernel": "6.1.0-26-amd64"},
                 "__nvidia_driver_upgrade_sim": {"stdout": UU_SIM, "rc": 0},
                 "__nvidia_driver_uu_read": {"results": [{"stdout": UU_CONFIG}, {"stdout": UU_POLICY}, {"stdout": KERNEL_TEXT}]},
                 "__nvidia_driver_hold_changes": {"keep_user": ["docker-ce"], "wanted": ["nvidia-driver"]},  # held: stays
                 "__nvidia_driver_decided": {"signing": {"path": "precompiled"}, "packages_only": False, "build_only": False,
                                             "blacklist": ["nvidia-*"]},
                 "__nvidia_driver_facts": {"installed": [{"name": "nvidia-driver"}, {"name": "unattended-upgrades"}],
                                           "kernel": {"boot": ["6.8.0-149-generic"]}}}
    decide = _task("install.yml", "Decide what unattended-upgrades takes, and which kernels in /boot the next point release "
                                  "leaves without the module")
    warn = _task("install.yml", "Say which kernel an upgrade would bring without its signed module")
    probe = {"name": "Probe", "ansible.builtin.debug": {"msg": "{{ __nvidia_driver_without_module }}"}, "vars": warn["vars"]}
    facts = {"name": "The host's facts", "ansible.builtin.set_fact": {"ansible_facts": "{{ __facts }}"}}
    ran = _run(tmp_path, [facts, decide, _show("__nvidia_driver_unattended", "__nvidia_driver_next_release"), probe], variables)
    shown = ran["Show"]["msg"]
    installed = ["nvidia-driver", "unattended-upgrades"]
    assert shown["__nvidia_driver_unattended"]["driver"]["why"] == ["held: nvidia-driver 535.247.01-1~deb12u1"]
    assert shown["__nvidia_driver_unattended"] == module.unattended(
        simulation={"stdout": UU_SIM, "rc": 0}, policy={"stdout": UU_POLICY}, config={"stdout": UU_CONFIG}, distro_id="Debian",
        codename="bookworm", installed=installed, held=["docker-ce", "nvidia-driver"], blacklist=["nvidia-*"], program=True)
    assert shown["__nvidia_driver_next_release"] == module.boot_without_module(
        kernel_packages={"stdout": KERNEL_TEXT}, boot=["6.8.0-149-generic"], signing="precompiled", running="6.1.0-26-amd64")
    assert ran["Probe"]["msg"] == module.kernel_without_module(simulation={"stdout": UU_SIM, "rc": 0})


def test_the_persistence_task_keeps_what_the_entry_gives(tmp_path):
    variables = {"nvidia_driver_persistence_mode": True, "__nvidia_driver_persistenced_manage": True,
                 "__nvidia_driver_decided": {"build_only": False}, "__nvidia_driver_version": "580.95.05",
                 "__nvidia_driver_pd_unit": {"content": base64.b64encode(UNIT.encode()).decode()},
                 "__nvidia_driver_sys_version": {"content": base64.b64encode(b"575.57.08\n").decode()},
                 "__nvidia_driver_pd_path": {"stdout": "/lib/systemd/system/nvidia-persistenced.service\n"},
                 "__nvidia_driver_pd_dropin_texts": {"results": []},
                 "__nvidia_driver_persistenced_dropin": "/etc/systemd/system/nvidia-persistenced.service.d/dlbox.conf",
                 "__nvidia_driver_pd_dropins": {"stdout": "/etc/systemd/system/nvidia-persistenced.service.d/other.conf\n"}}
    task = _task("persistence.yml", "Decide the drop-in and whether the daemon starts now")
    ran = _run(tmp_path, [task, _show("__nvidia_driver_persistence")], variables)
    got = ran["Show"]["msg"]["__nvidia_driver_persistence"]
    assert got["manage"] and got["start"] is False and "575.57.08" in got["message"]
    assert got == module.persistence(unit_text=UNIT, manage=True, build_only=False, installed="580.95.05",
                                     sys_version="575.57.08\n", persistence_mode=True,
                                     unit_path="/lib/systemd/system/nvidia-persistenced.service", check_mode=False, dropins={},
                                     dropin_path=variables["__nvidia_driver_persistenced_dropin"],
                                     dropin_present=False)


@pytest.mark.parametrize(("path", "read", "report", "logs"),
                         [("install.yml", "Read the end of the DKMS build logs the failure names", "Report the failed install",
                           "__nvidia_driver_make_logs"),
                          ("kernel.yml", "Read the end of the DKMS build logs the failed builds name",
                           "Report the kernels DKMS could not build the module for", "__nvidia_driver_kernel_make_logs")])
def test_the_rescue_reads_the_logs_the_entry_names_and_reports_its_words(tmp_path, path, read, report, logs):
    # DKMS's words name its make.log (absent on this machine: tail fails, the rescue reads on)
    log = "/var/lib/dkms/nvidia/580.95.05/build/make.log"
    failed = dict(DKMS_FAILED, stdout="Consult %s for more information.\n" % log)
    assert module.failure_logs(result=failed) == [log]
    variables = {"ansible_failed_result": failed, "ansible_failed_task": {"name": "Install"},
                 "__nvidia_driver_decided": {"driver": {"branch": 580}, "change": {"action": "none"}, "pin": None,
                                             "set": {"dkms_module": "nvidia"}},
                 "__nvidia_driver_version": "580.95.05", "__nvidia_driver_failed_kernels": ["6.8.0-151-generic"]}
    fail = dict(_rescue_task(path, report), ignore_errors=True)
    facts = {"name": "The host's facts", "ansible.builtin.set_fact": {"ansible_facts": {"kernel": "6.8.0-149-generic"}}}
    ran = _run(tmp_path, [facts, _rescue_task(path, read), fail, {"name": "Logs", "ansible.builtin.debug": {"var": logs}}],
               variables)
    results = ran["Logs"][logs]["results"]
    assert [r["item"] for r in results] == [log]
    words = module.install_failure(result=failed, tails=results)
    assert words and "failed" in words and words in ran[report]["msg"]


def test_the_old_filters_are_gone_from_the_filter_plugins():
    for stem in ("nvidia_driver_holds", "nvidia_driver_update"):
        assert not (ROOT / "plugins" / "filter" / (stem + ".py")).exists()
    spec = importlib.util.spec_from_file_location("_ndk", ROOT / "plugins" / "filter" / "nvidia_driver_kernel.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert set(mod.FilterModule().filters()) == {"nvidia_driver_module_check"}
