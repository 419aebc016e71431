# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""roles/jetpack/tasks/power.yml with jetpack_power_mode_reboot never, run by Ansible (connection local) against the
molecule/edge nvpmodel stub in a temporary folder (issue 52, third red team MEDIUM 4). A mode that needs a reboot
makes nvpmodel ask; the answer no cancels nvpmodel's change, so without more the mode was never applied, not even by
a later reboot. The role now writes it to nvpmodel's status (/var/lib/nvpmodel/status, "pmode:0000 ...", the mode
every boot applies) and reports a pending reboot: run green; a second run finds the mode waiting and changes nothing
(nvpmodel not asked again); after a reboot (the stub's boot applies the status, as nvpmodel.service does) the mode is
in effect and the pending record goes. The if_needed reboot is molecule/edge's (a local connection cannot reboot)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ansible_collections.dlbox.stack.plugins.plugin_utils.compat_data import load_compat
from ansible_collections.dlbox.stack.plugins.plugin_utils.jetpack_plan import decide, load_jetson_data

from play_runner import run_play  # tests/unit/roles/play_runner.py, beside this file

ROOT = Path(__file__).resolve().parents[3]
ROLE = ROOT / "roles" / "jetpack"
TASKS = yaml.safe_load((ROLE / "tasks" / "power.yml").read_text(encoding="utf-8"))
VARS = yaml.safe_load((ROLE / "vars" / "main.yml").read_text(encoding="utf-8"))
STUB = ROOT / "molecule" / "edge" / "files" / "nvpmodel"
FIXTURES = ROOT / "tests" / "fixtures" / "jetson"
WRITE = "Write the power mode to nvpmodel's status, which the next boot applies (jetpack_power_mode_reboot is never)"
RECORD = "Record the power mode that waits for a reboot (jetpack_power_mode_reboot is never)"

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="the tasks write root-owned files (owner: root)")


class Module:
    """The stub with its paths in ``tmp_path``: the AGX Orin's nvpmodel.conf (default MODE_30W), MAXN needing a reboot."""

    def __init__(self, tmp_path: Path):
        self.dir = tmp_path
        (tmp_path / "state").mkdir(parents=True)
        self.conf = tmp_path / "nvpmodel.conf"
        self.conf.write_text((FIXTURES / "nvpmodel" / "nvpmodel_p3701_0000.conf").read_text(encoding="utf-8"), encoding="utf-8")
        (tmp_path / "reboot-modes").write_text("0\n", encoding="utf-8")
        self.status = tmp_path / "var-lib-nvpmodel" / "status"
        self.pending = tmp_path / "var-lib-dlbox-jetpack" / "power-mode-pending"
        self.nvpmodel = tmp_path / "nvpmodel"
        text = STUB.read_text(encoding="utf-8")
        for key, value in (("conf", self.conf), ("status", self.status), ("state", tmp_path / "state"),
                           ("reboot_modes", tmp_path / "reboot-modes")):
            text = "\n".join("%s=%s" % (key, value) if line.startswith(key + "=") else line for line in text.split("\n"))
        self.nvpmodel.write_text(text, encoding="utf-8")
        self.nvpmodel.chmod(0o755)

    def sh(self, *args, answer=None):
        return subprocess.run([str(self.nvpmodel), *args], input=answer, capture_output=True, text=True, check=False)

    def events(self):
        return (self.dir / "state" / "events.log").read_text(encoding="utf-8").splitlines()

    def reboot(self):
        """The stub's FIXTURE reboot: the status's mode comes into effect (nvpmodel.service at boot)."""
        subprocess.run(["bash", "-c", 'source <(sed -n "/^[a-z_]*=/p;/^boot()/,/^}/p" "$0"); boot', str(self.nvpmodel)],
                       check=True)

    def decided(self, reboot="never"):
        """jetpack_plan on what the host shows now (the preflight's reads)."""
        data, compat = load_jetson_data(), load_compat()
        return decide({"stack": {"jetpack": {"version": "6.2", "l4t": "36.4.3", "family": "orin"}}},
                      {"components": ["all"], "power_mode": "MAXN", "power_mode_reboot": reboot, "clocks": None},
                      release_text=(FIXTURES / "nv_tegra_release" / "agx-orin-r36.4.3.txt").read_text(encoding="utf-8"),
                      model_text="NVIDIA Jetson AGX Orin Developer Kit", nvpmodel_conf=self.conf.read_text(encoding="utf-8"),
                      nvpmodel_query=self.sh("-q").stdout,
                      nvpmodel_status=self.status.read_text(encoding="utf-8") if self.status.exists() else None,
                      data=data, compat=compat)


def _run(tmp_path, modules, name):
    """power.yml once, one host per module (name -> Module); -> rc, {host: changed}, {host: failed}."""
    hostvars = {}
    for host, module in modules.items():
        decided = module.decided()
        assert decided["ok"], decided["errors"]
        hostvars[host] = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                          "__jetpack_nvpmodel": str(module.nvpmodel), "__jetpack_nvpmodel_status": str(module.status),
                          "__jetpack_power_pending": str(module.pending), "__jetpack_decided": decided}
    first = next(iter(hostvars.values()))
    play = {"hosts": "all", "gather_facts": False, "vars": {k: v for k, v in VARS.items() if k not in first}, "tasks": TASKS}
    folder = tmp_path / name
    folder.mkdir()
    proc, out = run_play(folder, play, hostvars)
    assert out is not None, proc.stderr
    tasks = out["plays"][0]["tasks"]
    changed = {h: [t["task"]["name"] for t in tasks if t["hosts"].get(h, {}).get("changed")] for h in modules}
    failed = {h: [t["task"]["name"] for t in tasks if t["hosts"].get(h, {}).get("failed")] for h in modules}
    return proc.returncode, changed, failed


@pytest.fixture(scope="module")
def first_run(tmp_path_factory):
    """Run 1 of both tests below, one ansible-playbook run: fresh: no status yet; fan: a status with nvpmodel's fan
    mode, which the role keeps (test 1); m: no status yet (test 2). -> ({host: Module}, rc, changed, failed)."""
    base = tmp_path_factory.mktemp("power-pending")
    modules = {"fresh": Module(base / "fresh"), "fan": Module(base / "fan"), "m": Module(base / "m")}
    modules["fan"].status.parent.mkdir(parents=True)
    modules["fan"].status.write_text("pmode:0002 fmode:quiet\n", encoding="utf-8")
    return (modules,) + _run(base, modules, "run1")


@needs_root
def test_never_writes_the_status_reports_pending_then_changes_nothing_and_the_reboot_applies_it(tmp_path, first_run):  # pylint: disable=redefined-outer-name
    """fresh: no status yet; fan: a status with nvpmodel's fan mode, which the role keeps."""
    modules, rc, changed, failed = first_run
    fresh, fan = modules["fresh"], modules["fan"]
    # run 1: nvpmodel asks, the answer no cancels its change; the role writes MAXN to the status and notes the reboot
    assert rc == 0 and failed == {"fresh": [], "fan": [], "m": []}, failed
    assert WRITE in changed["fresh"] and RECORD in changed["fresh"], changed
    assert fresh.status.read_text(encoding="utf-8") == "pmode:0000\n"
    assert fan.status.read_text(encoding="utf-8") == "pmode:0000 fmode:quiet\n"
    assert fresh.sh("-q").stdout.splitlines() == ["NV Power Mode: MODE_30W", "2"]       # not in effect before a boot
    assert "the next reboot sets it (pending reboot)" in fresh.pending.read_text(encoding="utf-8")
    assert fresh.events().count("nvpmodel -m 0") == 1
    # run 2: the mode waits in the status; nothing changes and nvpmodel is not asked again
    rc, changed, failed = _run(tmp_path, {"fresh": fresh}, "run2")
    assert (rc, changed, failed) == (0, {"fresh": []}, {"fresh": []})
    assert fresh.events().count("nvpmodel -m 0") == 1 and fresh.pending.exists()
    # an ordinary reboot applies it (the stub's boot, as nvpmodel.service); run 3 sees it in effect, forgets the record
    fresh.reboot()
    assert fresh.sh("-q").stdout.splitlines() == ["NV Power Mode: MAXN", "0"]
    rc, changed, failed = _run(tmp_path, {"fresh": fresh}, "run3")
    assert rc == 0 and changed == {"fresh": ["Forget a pending power mode once it is set"]}, (changed, failed)
    assert not fresh.pending.exists()


@needs_root
def test_back_to_the_mode_in_effect_disarms_the_mode_left_pending(tmp_path, first_run):  # pylint: disable=redefined-outer-name
    """Issue 52, red team HIGH 2: a run with never left MAXN (pmode:0000) in nvpmodel's status while MODE_30W is in
    effect; the user then asks for MODE_30W. The mode in effect matches (no nvpmodel -m), but the status must go back to
    pmode:0002, or the next boot brings MAXN; the pending record goes too."""
    modules, rc, changed, failed = first_run                   # run 1 (m's host of it)
    module = modules["m"]
    assert rc == 0 and WRITE in changed["m"], (changed, failed)
    assert module.status.read_text(encoding="utf-8") == "pmode:0000\n" and module.pending.exists()
    decided = module.decided()
    decided_back = decide({"stack": {"jetpack": {"version": "6.2", "l4t": "36.4.3", "family": "orin"}}},
                          {"components": ["all"], "power_mode": "MODE_30W", "power_mode_reboot": "never", "clocks": None},
                          release_text=(FIXTURES / "nv_tegra_release" / "agx-orin-r36.4.3.txt").read_text(encoding="utf-8"),
                          model_text="NVIDIA Jetson AGX Orin Developer Kit", nvpmodel_conf=module.conf.read_text(encoding="utf-8"),
                          nvpmodel_query=module.sh("-q").stdout, nvpmodel_status=module.status.read_text(encoding="utf-8"),
                          data=load_jetson_data(), compat=load_compat())
    assert decided["power"]["pending"] and not decided["power"]["stale_status"]
    power = decided_back["power"]
    assert (power["change"], power["stale_status"], power["status_text"]) == (False, True, "pmode:0002\n"), power
    hostvars = {"m": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                      "__jetpack_nvpmodel": str(module.nvpmodel), "__jetpack_nvpmodel_status": str(module.status),
                      "__jetpack_power_pending": str(module.pending), "__jetpack_decided": decided_back}}
    play = {"hosts": "all", "gather_facts": False, "vars": {k: v for k, v in VARS.items() if k not in hostvars["m"]},
            "tasks": TASKS}
    (tmp_path / "run2").mkdir()
    proc, out = run_play(tmp_path / "run2", play, hostvars)
    assert out is not None and proc.returncode == 0, proc.stderr
    assert module.status.read_text(encoding="utf-8") == "pmode:0002\n"
    assert not module.pending.exists()
    assert module.events().count("nvpmodel -m 2") == 0          # the mode in effect: nvpmodel not run
    module.reboot()
    assert module.sh("-q").stdout.splitlines() == ["NV Power Mode: MODE_30W", "2"]
