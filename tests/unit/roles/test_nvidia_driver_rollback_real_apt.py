# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rollback after a failed check, end to end with the REAL apt and dpkg of this machine in a throwaway root (issue 48
must-show: "a branch change whose check fails, rolled back, holds as before"). No container: dpkg --root on a folder
of tmp_path (maintainer scripts run unchrooted, --force-script-chrootless: the FIXTURE packages' postinst only echoes),
apt through APT_CONFIG, both put first on PATH by small wrappers, so the role's own task file runs them unchanged.

The archive: the FIXTURE NVIDIA repository for Ubuntu 24.04 (tests/aptrepo/specs/cuda-ubuntu2404.yml: NVIDIA's names,
nvidia-open at 580.95.05-1 and 595.71.05-1). The steps, each with apt-mark showhold and apt-cache policy printed:

1. R580 installed under the role's branch pin (nvidia_driver_plan.branch_pin, origin NVIDIA) and held as the role holds
   NVIDIA's repository's packages (nvidia_driver_holds.hold_list, method nvidia_repo);
2. the branch change to R595 as install.yml and keep.yml do it: the installed .debs kept with dlbox-kept.json (the
   holds as apt-mark printed them, the pin), R580's holds released, the R595 pin, apt-get install, R595 held;
3. the check after the reboot fails: its message ends with rollback_hint's sentence (nvidia_driver_rollback: true, R580);
4. roles/nvidia_driver/tasks/rollback_request.yml run by real Ansible (play_runner) with its apt-get, apt-mark and
   dpkg_selections calls on that root (its last two tasks, the reboot marker in /run and end_host, left out): R595 purged,
   R580 reinstalled from the kept copies, the R580 pin back, the holds as before.

Then apt-mark showhold is exactly what it was before the change, dpkg has R580's packages at their versions, apt-cache
policy's installed version is 580.95.05-1."""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from play_runner import run_play  # tests/unit/roles/play_runner.py, beside this file

from ansible_collections.dlbox.stack.plugins.module_utils import _nvidia_driver as nd
from ansible_collections.dlbox.stack.plugins.plugin_utils import nvidia_driver_holds as nh
from ansible_collections.dlbox.stack.plugins.plugin_utils import nvidia_driver_plan as p
from ansible_collections.dlbox.stack.plugins.plugin_utils import nvidia_driver_rollback as nr

ROOT = Path(__file__).resolve().parents[3]
TASKS = ROOT / "roles" / "nvidia_driver" / "tasks"
FAMILY = ["*nvidia*", "libcuda*", "libnvcuvid*", "libnvoptix*", "libnvidia*", "cuda-drivers*"]
SET = ["nvidia-open"]
OLD, NEW = "580.95.05-1", "595.71.05-1"
POLICY = ["nvidia-open", "nvidia-driver", "nvidia-driver-cuda", "nvidia-kernel-open-dkms"]

pytestmark = pytest.mark.skipif(not (shutil.which("apt-get") and shutil.which("dpkg") and shutil.which("gpg")
                                     and os.geteuid() == 0), reason="needs apt, dpkg and gpg, as root (dpkg --root)")


class Host:
    """A dpkg root and an apt configuration under ``base``; ``bin`` holds apt-get, apt-mark, apt-cache, dpkg and
    dpkg-query wrappers that work on it."""

    def __init__(self, base, repo):
        """``repo``: the archive (built_repo), read only: the two hosts of this file share it."""
        self.base, self.root, self.bin = base, base / "root", base / "bin"
        self.repo = repo
        for sub in ("etc/apt/apt.conf.d", "etc/apt/preferences.d", "etc/apt/sources.list.d", "etc/dpkg/dpkg.cfg.d",
                    "var/lib/apt/lists/partial", "var/cache/apt/archives/partial", "var/lib/dpkg/info", "var/lib/dpkg/updates",
                    "var/lib/dpkg/triggers", "var/log/apt", "keep"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        (self.root / "var/lib/dpkg/status").write_text("", encoding="utf-8")
        (self.root / "var/lib/dpkg/available").write_text("", encoding="utf-8")
        self.bin.mkdir()
        self.apt_conf = self.root / "etc/apt/apt.conf"
        self.apt_conf.write_text(
            'Dir "%s/";\nDir::State::status "%s/var/lib/dpkg/status";\nDir::Bin::dpkg "%s/dpkg";\nDir::Log "%s/var/log/apt";\n'
            'Dir::Etc::Trusted "/nonexistent";\nDir::Etc::TrustedParts "/nonexistent";\nAPT::Architecture "amd64";\n'
            'APT::Architectures { "amd64"; };\nDebug::NoLocking "true";\nAPT::Sandbox::User "root";\n'
            'DPkg::Options { "--force-confdef"; "--force-confold"; };\n' % (self.root, self.root, self.bin, self.root), encoding="utf-8")
        (self.root / "etc/apt/sources.list").write_text("deb [trusted=yes] file:%s ./\n" % self.repo, encoding="utf-8")
        wrappers = {"dpkg": 'exec /usr/bin/dpkg --root="%s" --force-script-chrootless --force-unsafe-io "$@"' % self.root,
                    "dpkg-query": 'exec /usr/bin/dpkg-query --admindir="%s/var/lib/dpkg" "$@"' % self.root}
        for tool in ("apt-get", "apt-mark", "apt-cache"):
            wrappers[tool] = 'APT_CONFIG="%s" exec /usr/bin/%s "$@"' % (self.apt_conf, tool)
        for tool, line in wrappers.items():
            (self.bin / tool).write_text("#!/bin/sh\n" + line + "\n", encoding="utf-8")
            (self.bin / tool).chmod(0o755)
        self.env = dict(os.environ, PATH="%s:%s" % (self.bin, os.environ.get("PATH", "")), LC_ALL="C", DEBIAN_FRONTEND="noninteractive")
        self.pin_file = self.root / "etc/apt/preferences.d/dlbox-00-nvidia-driver-branch.pref"
        self.uu_file = self.root / "etc/apt/apt.conf.d/51dlbox-nvidia-driver"
        self.holds_record = self.root / "var/lib/dlbox/nvidia-driver-holds.json"
        self.log = []
        self.run("apt-get", "update")

    def run(self, *argv):
        proc = subprocess.run(list(argv), capture_output=True, text=True, env=self.env, timeout=300, check=False)
        assert proc.returncode == 0, "%s: exit %s\n%s\n%s" % (" ".join(argv), proc.returncode, proc.stdout[-3000:], proc.stderr[-3000:])
        return proc.stdout

    def showhold(self):
        return self.run("apt-mark", "showhold").split()

    def installed(self):
        return self.run("dpkg-query", "-W", "-f", "${Package}\t${Version}\t${Architecture}\t${db:Status-Abbrev}\n")

    def versions(self):
        return dict(line.split("\t")[:2] for line in self.installed().splitlines() if line.strip())

    def step(self, title):
        text = "===== %s\n$ apt-mark showhold\n%s\n$ apt-cache policy %s\n%s" % (
            title, "\n".join(self.showhold()) or "(none)", " ".join(POLICY), self.run("apt-cache", "policy", *POLICY))
        self.log.append(text)
        print(text)

    def hold_as_the_role(self, branch):
        """install.yml's holds: hold_list of the set on NVIDIA's repository, hold_changes against what is held now."""
        names = [line.split("\t")[0] for line in self.installed().splitlines()]
        versions = self.versions()
        family_installed = [n for n in names if nd.member_branch(n, versions[n], FAMILY) is not None]
        wanted = nh.hold_list(SET, names, "dkms", "nvidia_repo", family_installed)
        record = json.loads(self.holds_record.read_text(encoding="utf-8"))["holds"] if self.holds_record.exists() else []
        changes = nh.hold_changes(wanted, self.showhold(), record, names)
        if changes["release"]:
            self.run("apt-mark", "unhold", *changes["release"])
        if changes["hold"]:
            self.run("apt-mark", "hold", *changes["hold"])
        self.holds_record.parent.mkdir(parents=True, exist_ok=True)
        self.holds_record.write_text(json.dumps({"holds": changes["wanted"]}), encoding="utf-8")
        return branch


def _rollback_tasks(dest):
    """rollback_request.yml and the kept_records.yml it imports, without the reboot marker (/run of this machine) and
    end_host."""
    tasks = yaml.safe_load((TASKS / "rollback_request.yml").read_text(encoding="utf-8"))
    left_out = {"Mark that a reboot is needed (the previous branch's module loads at the next boot)",
                "End the role for this host after the rollback (the plan still names the newer branch)"}
    assert left_out <= set(t.get("name") for t in tasks)
    dest.mkdir()
    shutil.copy(TASKS / "kept_records.yml", dest / "kept_records.yml")
    (dest / "rollback_request.yml").write_text(yaml.safe_dump([t for t in tasks if t.get("name") not in left_out]), encoding="utf-8")
    return dest / "rollback_request.yml"


def _changed_host(base, repo):
    """Steps 1 and 2: R580 installed and held under its pin, kept, then changed to R595 as install.yml does."""
    host = Host(base, repo)
    pin_old = p.branch_pin(580, FAMILY, "test", "NVIDIA")
    # 1. R580 under the role's pin, held as the role holds it
    host.pin_file.write_text(pin_old, encoding="utf-8")
    host.run("apt-get", "install", "-y", "--no-install-recommends", *SET)
    host.hold_as_the_role(580)
    host.step("1. R580 installed and held")
    before = {"holds": host.showhold(), "versions": host.versions(), "pin": host.pin_file.read_text(encoding="utf-8")}
    # 2. the branch change: keep.yml's copies and record, then install.yml
    keep_path = host.root / "keep" / "R580-580.95.05"
    keep_path.mkdir()
    kept = []
    for name, version in sorted(before["versions"].items()):
        if nd.member_branch(name, version, FAMILY) is None:
            continue
        deb = os.path.basename(glob.glob(str(host.repo / ("%s_%s_*.deb" % (name, version.split(":")[-1]))))[0])
        shutil.copy(host.repo / deb, keep_path / deb)
        kept.append({"name": name, "version": version, "arch": "amd64", "file": deb, "source": "archive"})
    (keep_path / "dlbox-kept.json").write_text(json.dumps({
        "branch": 580, "version": "580.95.05", "packages": kept, "holds": nr.kept_holds(host.showhold(), kept),
        "unattended": None, "pin": pin_old}), encoding="utf-8")
    host.run("apt-mark", "unhold", *host.showhold())
    host.pin_file.write_text(p.branch_pin(595, FAMILY, "test", "NVIDIA"), encoding="utf-8")
    # the plan's names at the new branch's version, in one transaction (install.yml's exact install)
    host.run("apt-get", "install", "-y", "--no-install-recommends", *["%s=%s" % (k["name"], NEW) for k in kept])
    host.hold_as_the_role(595)
    host.step("2. branch change to R595 (the R580 packages kept in %s)" % keep_path)
    changed = {"holds": host.showhold(), "versions": host.versions(), "pin": host.pin_file.read_text(encoding="utf-8")}
    return host, before, changed, kept, keep_path


def _roll_back(base, host):
    """Step 4: rollback_request.yml by real Ansible on the host's root: (the process, its JSON output)."""
    link = base / "collections" / "ansible_collections" / "dlbox" / "stack"
    link.parent.mkdir(parents=True)
    link.symlink_to(ROOT, target_is_directory=True)
    play = {"hosts": "all", "gather_facts": False,
            "tasks": [{"name": "Roll back", "ansible.builtin.include_tasks": str(_rollback_tasks(base / "tasks"))}]}
    hostvars = {"gpu": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                        "nvidia_driver_keep_dir": str(host.root / "keep"), "__nvidia_driver_facts": {"installed": host.installed()},
                        "__nvidia_driver_decided": {"family": FAMILY}, "__nvidia_driver_pin_file": str(host.pin_file),
                        "__nvidia_driver_uu_file": str(host.uu_file), "__nvidia_driver_holds_record": str(host.holds_record)}}
    return run_play(base, play, hostvars, env={"ANSIBLE_COLLECTIONS_PATH": str(base / "collections"), "PATH": host.env["PATH"],
                                               "LC_ALL": "C.UTF-8"})


@pytest.fixture(scope="module")
def built_repo(tmp_path_factory):
    """The FIXTURE archive (tests/aptrepo's cuda-ubuntu2404 spec), built once for both hosts."""
    base = tmp_path_factory.mktemp("rollback-real-repo")
    subprocess.run([sys.executable, str(ROOT / "tests" / "aptrepo" / "build_repo.py"),
                    str(ROOT / "tests" / "aptrepo" / "specs" / "cuda-ubuntu2404.yml"), str(base / "repo"), "--key-dir", str(base / "keys")],
                   check=True, capture_output=True)
    return base / "repo"


@pytest.fixture(scope="module")
def journey(tmp_path_factory, built_repo):  # pylint: disable=redefined-outer-name
    base = tmp_path_factory.mktemp("rollback-real")
    host, before, changed, kept, keep_path = _changed_host(base, built_repo)
    # 3. the check after the reboot fails: the hint the role adds
    # (a later run: the record is of the change that installed R595, dpkg's file list written after it)
    found = nr.latest_record([{"path": str(keep_path / "dlbox-kept.json"), "mtime": os.stat(keep_path / "dlbox-kept.json").st_mtime,
                               "content": (keep_path / "dlbox-kept.json").read_text(encoding="utf-8")}])
    hint = nr.rollback_hint(found, 595, installed_at=os.stat(host.root / "var/lib/dpkg/info/nvidia-open.list").st_mtime)
    print("===== 3. the check after the reboot fails; the role's message ends with:\n" + hint)
    # 4. nvidia_driver_rollback: true: rollback_request.yml by real Ansible on that root
    proc, out = _roll_back(base, host)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    host.step("4. rolled back by rollback_request.yml")
    after = {"holds": host.showhold(), "versions": host.versions(), "pin": host.pin_file.read_text(encoding="utf-8")}
    return {"before": before, "changed": changed, "after": after, "hint": hint, "host": host, "out": out, "kept": kept,
            "keep_path": keep_path}


def test_the_branch_change_really_happened(journey):
    assert set(journey["changed"]["versions"][k["name"]] for k in journey["kept"]) == {NEW}
    assert journey["before"]["holds"] and journey["changed"]["holds"]
    assert not [n for n, v in journey["changed"]["versions"].items() if v == OLD]


def test_the_failed_check_names_the_variable_and_the_kept_branch(journey):
    assert journey["hint"].startswith("The branch change from R580 to R595 can be undone: run the role with "
                                      "nvidia_driver_rollback: true")
    assert "reinstalls R580 580.95.05 from the copies kept in %s" % journey["keep_path"] in journey["hint"]


def test_holds_as_before_the_change(journey):
    assert journey["after"]["holds"] == journey["before"]["holds"]
    assert sorted(journey["before"]["holds"]) == sorted(k["name"] for k in journey["kept"])


def test_dpkg_has_the_kept_branch_again_and_nothing_of_the_newer(journey):
    assert journey["after"]["versions"] == journey["before"]["versions"]
    assert "Installed: %s" % OLD in journey["host"].run("apt-cache", "policy", "nvidia-open")


def test_the_kept_branch_pin_is_back(journey):
    assert journey["after"]["pin"] == journey["before"]["pin"]


@pytest.fixture(scope="module")
def failed_switch(tmp_path_factory, built_repo):  # pylint: disable=redefined-outer-name
    """Issue 48 red-team 3: the switch back fails after apt's simulation passed (dpkg refuses to unpack the kept R580
    packages: a full disk, a broken copy): the host keeps R595, its pin and its holds."""
    base = tmp_path_factory.mktemp("rollback-real-fails")
    host, _before, changed, _kept, _keep_path = _changed_host(base, built_repo)
    real = (host.bin / "dpkg").read_text(encoding="utf-8")
    refuse = 'case "$*" in *--unpack*%s*) echo "dpkg: error: no space left on device" >&2; exit 2;; esac\nexec ' % (
        OLD.split("-", maxsplit=1)[0])
    (host.bin / "dpkg").write_text(real.replace("exec ", refuse, 1), encoding="utf-8")
    proc, out = _roll_back(base, host)
    after = {"holds": host.showhold(), "versions": host.versions(), "pin": host.pin_file.read_text(encoding="utf-8")}
    return {"proc": proc, "changed": changed, "after": after}


def test_a_failing_switch_back_keeps_the_current_branch_installed(failed_switch):
    assert failed_switch["proc"].returncode != 0
    assert failed_switch["after"]["versions"] == failed_switch["changed"]["versions"]
    assert set(failed_switch["after"]["versions"].values()) >= {NEW}


def test_a_failing_switch_back_keeps_the_current_pin_and_holds(failed_switch):
    assert failed_switch["after"]["pin"] == failed_switch["changed"]["pin"]
    assert failed_switch["after"]["holds"] == failed_switch["changed"]["holds"]


def test_the_rollback_is_one_apt_transaction():
    tasks = yaml.safe_load((TASKS / "rollback_request.yml").read_text(encoding="utf-8"))
    apt = [t for t in tasks if "apt-get" in str((t.get("ansible.builtin.command") or {}).get("argv")) and "-s" not in str(t)]
    assert len(apt) == 1 and "'-'" in str(apt[0]["ansible.builtin.command"]["argv"]), apt
