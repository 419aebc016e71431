# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""roles/jetpack/tasks/repository.yml: the flashed JetPack's source list stays set aside only when apt has read the new
sources (issue 52's red team). apt refuses one URL under two Signed-By values, so the list must go aside before the
update; when a step up to that update fails (a mirror down, a wrong jetpack_base_url, the key), the rescue removes the
sources the run wrote and puts the list back with dpkg-divert --rename --remove, leaving apt as flashed. The success
path (what molecule/edge asserts: the list diverted, apt-get update clean) is the same tasks in the same order. This
reads the task file; the failure path does not run here (it would change this machine's apt)."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[3]
TASKS = yaml.safe_load((ROOT / "roles" / "jetpack" / "tasks" / "repository.yml").read_text(encoding="utf-8"))
SWITCH = next(task for task in TASKS if "block" in task and any(t["name"] == "Set that list aside" for t in task["block"]))


def names(tasks):
    return [task["name"] for task in tasks]


def test_the_list_goes_aside_in_the_block_whose_last_step_is_the_update():
    body = names(SWITCH["block"])
    assert body.index("Set that list aside") < body.index("Add NVIDIA's Jetson repositories (common and the SoC's)")
    assert body[-1] == "Refresh apt's package lists for the Jetson repositories"
    assert "ansible.builtin.apt" in SWITCH["block"][-1]


def test_a_failure_puts_the_list_back_where_it_was_set_aside():
    aside = next(t for t in SWITCH["block"] if t["name"] == "Set that list aside")["ansible.builtin.command"]["argv"]
    back = next(t for t in SWITCH["rescue"] if t["name"] == "Put the flashed list back")
    argv = back["ansible.builtin.command"]["argv"]
    assert argv[:4] == ["dpkg-divert", "--package", "{{ __jetpack_divert_package }}", "--rename"]
    assert argv[argv.index("--remove") + 1] == "{{ __jetpack_decided.preinstalled_list }}"
    # the same divert path as the task that set it aside
    assert "__jetpack_divert_dir ~ '/' ~ (__jetpack_decided.preinstalled_list | basename)" in aside
    assert "__jetpack_divert_dir ~ '/' ~ (__jetpack_decided.preinstalled_list | basename)" in argv[argv.index("--divert") + 1]
    # only when this run set it aside (a host without the flashed list has nothing to put back)
    assert "__jetpack_diverted is changed and __jetpack_diverted is not failed" in back["when"]


def test_the_rescue_removes_the_new_sources_first_and_then_stops():
    rescue = SWITCH["rescue"]
    assert names(rescue).index("Remove the Jetson sources this run wrote (the flashed list has the same repositories)") \
        < names(rescue).index("Put the flashed list back")
    removed = rescue[0]
    assert removed["ansible.builtin.file"] == {"path": "/etc/apt/sources.list.d/{{ item.name }}.sources", "state": "absent"}
    assert removed["loop"] == "{{ __jetpack_decided.repositories }}"
    assert "ansible.builtin.fail" in rescue[-1]


# issue 52 red team MEDIUM 8: the flashed list's every line is kept. Preflight reads the list, or the copy an earlier
# run set aside (the same path the switch diverts it to), and gives it to the plan, which keeps its other lines
# (JetPack 6's jetson/ffmpeg) as repositories (tests/unit/plugins/plugin_utils/test_jetpack_plan.py).
PREFLIGHT = yaml.safe_load((ROOT / "roles" / "jetpack" / "tasks" / "preflight.yml").read_text(encoding="utf-8"))
VARS = yaml.safe_load((ROOT / "roles" / "jetpack" / "vars" / "main.yml").read_text(encoding="utf-8"))


def test_preflight_reads_the_flashed_list_or_its_copy_set_aside_and_gives_it_to_the_plan():
    read = next(t for t in PREFLIGHT if "ansible.builtin.slurp" in t)
    assert read["loop"][3:5] == ["{{ __jetpack_preinstalled_list }}", "{{ __jetpack_preinstalled_aside }}"]
    decide = next(t for t in PREFLIGHT if t["name"] == "Decide what to install and set")["ansible.builtin.set_fact"]
    # the role's module decides (plugin_utils/roles/jetpack.py): the list is its fact flashed_list
    assert "'flashed_list': __jetpack_flashed" in decide["__jetpack_decided"]
    assert "'jetpack' | dlbox.stack.role_module('decide'" in decide["__jetpack_decided"]
    # the list at its own path, else the one an upgrade wrote again, else the copy: the first with a source (issue 52 M5)
    chosen = next(t for t in PREFLIGHT if t["name"] == "Decide what to install and set")["vars"]["__jetpack_flashed_lists"]
    assert "[__jetpack_text[3], __jetpack_text[6], __jetpack_text[4]]" in chosen
    assert read["loop"][6] == "{{ __jetpack_preinstalled_aside }}.upgraded"
    assert "preinstalled_list" in VARS["__jetpack_preinstalled_list"]             # the data's path, not a copy
    assert VARS["__jetpack_preinstalled_aside"] == "{{ __jetpack_divert_dir }}/{{ __jetpack_preinstalled_list | basename }}"
    aside = next(t for t in SWITCH["block"] if t["name"] == "Set that list aside")["ansible.builtin.command"]["argv"]
    assert "__jetpack_divert_dir ~ '/' ~ (__jetpack_decided.preinstalled_list | basename)" in aside


# issue 52 red team LOW 15: the manual of jetpack_base_url named common/ and t234/ only; a mirror for JetPack 7 needs
# som/ (data/jetson.yml repository.soc_folder) and one for JetPack 6 ffmpeg/ (the flashed list's third line).
def test_the_manual_of_jetpack_base_url_names_every_folder_a_mirror_needs():
    data = yaml.safe_load((ROOT / "data" / "jetson.yml").read_text(encoding="utf-8"))
    folders = {f for f in data["repository"]["soc_folder"].values() if f != "{soc}"} | {"common", "t234", "ffmpeg"}
    defaults = (ROOT / "roles" / "jetpack" / "defaults" / "main.yml").read_text(encoding="utf-8")
    manual = defaults[:defaults.index("jetpack_base_url:")].rsplit("# ---", 1)[-1]
    spec = yaml.safe_load((ROOT / "roles" / "jetpack" / "meta" / "argument_specs.yml").read_text(encoding="utf-8"))
    described = " ".join(spec["argument_specs"]["main"]["options"]["jetpack_base_url"]["description"])
    for folder in sorted(folders):
        assert "<url>/%s" % folder in manual, folder
        assert "C(%s/)" % folder in described or folder == "t234" and "C(t234/)" in described, folder
