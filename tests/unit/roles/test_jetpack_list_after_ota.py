# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The flashed list set aside by dpkg-divert, against NVIDIA's OTA update (issue 52 M5), run by Ansible (connection
local) on roles/jetpack/tasks/repository.yml's own tasks and preflight.yml's own choice of the flashed list, with the
real dpkg-divert on a private --admindir (this machine's dpkg database is not touched) and the paths under tmp_path.

An OTA (apt moving the module to a newer L4T release) upgrades nvidia-l4t-apt-source. dpkg unpacks the package's new
list to the diverted path (diversions cover a package's files), with its `<SOC>` placeholder (the file as shipped:
kairos-io/kairos#1659), and the package's postinst edits the list AT ITS OWN PATH in place (`sed -i "s/<SOC>/t234/g"`
on /etc/apt/sources.list.d/nvidia-l4t-apt-source.list, as public rootfs scripts read it back from
/var/lib/dpkg/info/nvidia-l4t-apt-source.postinst; the postinst itself was not read here). Before this change the
role left nothing at that path: the in-place edit of a missing file fails (sed exits 2), which under a postinst's
`set -e` leaves dpkg half-configured mid-OTA. And a list written again at that path (by a maintainer script or by
hand, as NVIDIA's OTA instructions have users edit it) sat beside the role's sources: apt stops on two Signed-By values
for one URL, and `dpkg-divert --add` again leaves the diversion and renames nothing.

Now: run 1 sets the list aside and leaves a list without sources at its path; the postinst's edit succeeds there;
a list written again is moved beside the copy (<copy>.upgraded) by the next run and preflight reads it (its ffmpeg
line kept, a `<SOC>` line left out); a run with nothing to do changes nothing (run 2)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

from play_runner import run_play  # tests/unit/roles/play_runner.py, beside this file

ROOT = Path(__file__).resolve().parents[3]
ROLE = ROOT / "roles" / "jetpack"
REPOSITORY = yaml.safe_load((ROLE / "tasks" / "repository.yml").read_text(encoding="utf-8"))
PREFLIGHT = yaml.safe_load((ROLE / "tasks" / "preflight.yml").read_text(encoding="utf-8"))
SWITCH = next(t for t in REPOSITORY if "block" in t and any(b["name"] == "Set that list aside" for b in t["block"]))
FLASHED_R364 = (ROOT / "tests" / "fixtures" / "jetson" / "apt" / "nvidia-l4t-apt-source-r36.4.list").read_text(encoding="utf-8")
# the same three lines one L4T release later (r36.5: tests/fixtures/jetson/apt's source, a user's diff of that file)
FLASHED_R365 = FLASHED_R364.replace("r36.4", "r36.5")
# the package's own file for r36.5, as dpkg unpacks it (kairos-io/kairos#1659 shows the r35.3 one: common, <SOC>)
SHIPPED_R365 = "deb https://repo.download.nvidia.com/jetson/common r36.5 main\ndeb https://repo.download.nvidia.com/jetson/<SOC> r36.5 main\n"


def _task(tasks, name):
    return next(t for t in tasks if t.get("name") == name)


def _play(tmp_path):
    decide = _task(PREFLIGHT, "Decide what to install and set")["vars"]
    none = str(tmp_path / "none")
    paths = [none, none, none, "{{ __jetpack_decided.preinstalled_list }}", "{{ __jetpack_preinstalled_aside }}", none,
             "{{ __jetpack_preinstalled_aside }}.upgraded"]
    skip = "item != %r" % none
    tasks = [
        # the paths this play leaves out are skipped, not slurped (a missing file's result has no content either):
        # one module run fewer for each, twice a run
        {"name": "read the lists (preflight's slurp)", "ansible.builtin.slurp": {"src": "{{ item }}"}, "loop": paths,
         "register": "__jetpack_files", "failed_when": False, "when": skip},
        _task(REPOSITORY, "Look for the sources list a flashed JetPack has"),
        _task(REPOSITORY, "Look for the copy of the flashed list an earlier run set aside"),
        _task(REPOSITORY, "Move a list written again at its own path beside the copy set aside (an upgrade of nvidia-l4t-apt-source)"),
        _task(SWITCH["block"], "Set that list aside"),
        _task(SWITCH["block"], "Leave a list without sources at its own path (what nvidia-l4t-apt-source's postinst edits in place)"),
        {"name": "read the lists again", "ansible.builtin.slurp": {"src": "{{ item }}"}, "loop": paths,
         "register": "__jetpack_files", "failed_when": False, "when": skip},
        {"name": "the flashed list preflight gives the plan", "ansible.builtin.debug": {"msg": "{{ __jetpack_flashed }}"},
         "vars": {k: decide[k] for k in ("__jetpack_text", "__jetpack_flashed_lists", "__jetpack_flashed")}},
    ]
    return {"hosts": "all", "gather_facts": False, "tasks": tasks}


def _run(tmp_path, name):
    (tmp_path / name).mkdir()
    listed = tmp_path / "etc" / "nvidia-l4t-apt-source.list"
    hostvars = {"box": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                        "__jetpack_decided": {"preinstalled_list": str(listed)},
                        "__jetpack_divert_dir": str(tmp_path / "diverted"), "__jetpack_divert_package": "dlbox-jetpack",
                        "__jetpack_preinstalled_aside": str(tmp_path / "diverted" / "nvidia-l4t-apt-source.list"),
                        "__jetpack_dpkg_divert_argv": ["dpkg-divert", "--admindir", str(tmp_path / "admin")]}}
    proc, out = run_play(tmp_path / name, _play(tmp_path), hostvars)
    assert out is not None, proc.stderr
    tasks = out["plays"][0]["tasks"]
    assert not [t["task"]["name"] for t in tasks if t["hosts"]["box"].get("failed")], proc.stdout[-3000:]
    changed = [t["task"]["name"] for t in tasks if t["hosts"]["box"].get("changed")]
    return changed, tasks[-1]["hosts"]["box"]["msg"]


def test_the_list_set_aside_survives_an_ota_of_nvidia_l4t_apt_source(tmp_path):
    (tmp_path / "etc").mkdir()
    (tmp_path / "diverted").mkdir()
    (tmp_path / "admin").mkdir()
    (tmp_path / "admin" / "diversions").write_text("", encoding="utf-8")
    listed = tmp_path / "etc" / "nvidia-l4t-apt-source.list"
    aside = tmp_path / "diverted" / "nvidia-l4t-apt-source.list"
    listed.write_text(FLASHED_R364, encoding="utf-8")

    # run 1: set aside (a diversion), a list without sources left at its own path
    changed, flashed = _run(tmp_path, "run1")
    assert "Set that list aside" in changed
    assert aside.read_text(encoding="utf-8") == FLASHED_R364
    assert "deb " not in "".join(line for line in listed.read_text(encoding="utf-8").splitlines() if not line.startswith("#"))
    divert = subprocess.run(["dpkg-divert", "--admindir", str(tmp_path / "admin"), "--list"], capture_output=True, text=True,
                            check=True).stdout
    assert "diversion of %s to %s by dlbox-jetpack" % (listed, aside) in divert
    assert flashed.strip() == FLASHED_R364.strip()                  # every line kept (ffmpeg)

    # the OTA: dpkg unpacks the package's new list to the diverted path, then the postinst edits the list at its own
    # path in place: it succeeds on the list the role left there (a missing file: sed exits 2)
    aside.write_text(SHIPPED_R365, encoding="utf-8")
    sed = subprocess.run(["sed", "-i", "s/<SOC>/t234/g", str(listed)], capture_output=True, text=True, check=False)
    assert sed.returncode == 0, sed.stderr
    changed, flashed = _run(tmp_path, "run2")
    assert changed == [], changed                                   # nothing to do; the <SOC> line is left out
    assert flashed.strip() == "deb https://repo.download.nvidia.com/jetson/common r36.5 main"

    # a list written again at its own path (a maintainer script, or by hand as NVIDIA's OTA steps have users do)
    listed.write_text(FLASHED_R365, encoding="utf-8")
    changed, flashed = _run(tmp_path, "run3")
    assert changed == ["Move a list written again at its own path beside the copy set aside (an upgrade of nvidia-l4t-apt-source)",
                       "Leave a list without sources at its own path (what nvidia-l4t-apt-source's postinst edits in place)"]
    assert (tmp_path / "diverted" / "nvidia-l4t-apt-source.list.upgraded").read_text(encoding="utf-8") == FLASHED_R365
    assert "deb " not in "".join(line for line in listed.read_text(encoding="utf-8").splitlines() if not line.startswith("#"))
    assert flashed.strip() == FLASHED_R365.strip()                  # the newest list, ffmpeg r36.5 kept
    assert subprocess.run(["dpkg-divert", "--admindir", str(tmp_path / "admin"), "--list"], capture_output=True, text=True,
                          check=True).stdout == divert             # the one diversion, unchanged
