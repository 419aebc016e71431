# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The jetpack role's decisions (plugin_utils.jetpack_plan) on REAL Jetson files: /etc/nv_tegra_release of an AGX Orin
(L4T R36.4.3, R36.4.4), of a TX2 (R32.5.1) and a Nano (R32.7.6), and excerpts (the section headers) of NVIDIA's
nvpmodel.conf of the AGX Orin (p3701-0000) and the Orin Nano (p3767-0003); sources in tests/fixtures/jetson/SOURCES.md
and tests/fixtures/SOURCES.md.
The rules run on frozen data: tests/unit/data/compat-frozen.yml and the Jetson data below."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest
import yaml

from ansible_collections.dlbox.stack.plugins.plugin_utils.compat_data import load_compat
from ansible_collections.dlbox.stack.plugins.plugin_utils.jetpack_plan import (
    JetsonDataError, check_jetson_data, container_toolkit_source, decide, load_jetson_data, max_power_mode,
    nvpmodel_status_text, parse_nvpmodel_conf, parse_nvpmodel_query, parse_nvpmodel_status, power_result)

ROOT = Path(__file__).resolve().parents[4]
FIXTURES = ROOT / "tests" / "fixtures"
COMPAT = load_compat(ROOT / "tests" / "unit" / "data" / "compat-frozen.yml")

# data/jetson.yml as it was when these rules were written (a refresh of the file never rewrites the tests)
JETSON = {
    "schema": 1, "date": "2026-12-02",
    "repository": {"base_url": "https://repo.download.nvidia.com/jetson", "repos": ["common", "soc"],
                   "suite": "r{major}.{minor}", "component": "main", "key_file": "jetson-ota-public.asc",
                   "key_fingerprint": "3C6D1FF3100C8C3ABB0869C0E6543461A9996195",
                   "preinstalled_list": "/etc/apt/sources.list.d/nvidia-l4t-apt-source.list", "source": "frozen",
                   "soc_folder": {32: "{soc}", 35: "{soc}", 36: "{soc}"}, "soc_folder_source": "frozen"},
    "socs": {"orin": {"soc": "t234", "l4t_majors": [35, 36], "source": "frozen"},
             "xavier": {"soc": "t194", "l4t_majors": [32, 35], "source": "frozen"}},
    "components": {"all": ["nvidia-jetpack"], "cuda": ["nvidia-cuda"], "container": ["nvidia-container"]},
    "components_source": "frozen",
    "container_runtime": {"components": ["all", "container"], "source": "frozen"},
}


def read(relative):
    return (FIXTURES / relative).read_text(encoding="utf-8")


AGX_R3643 = read("jetson/nv_tegra_release/agx-orin-r36.4.3.txt")
AGX_R3644 = read("jetson/nv_tegra_release/agx-orin-r36.4.4.txt")
TX2_R3251 = read("nv_tegra_release/tx2-r32.5.1.txt")
AGX_CONF = read("jetson/nvpmodel/nvpmodel_p3701_0000.conf")
NANO_CONF = read("jetson/nvpmodel/nvpmodel_p3767_0003.conf")
NANO_SUPER_CONF = read("jetson/nvpmodel/nvpmodel_p3767_0003_super.conf")
THOR_R3820 = read("jetson/nv_tegra_release/agx-thor-r38.2.0.txt")
MODEL = "NVIDIA Jetson AGX Orin Developer Kit\0"


def plan(version="6.2", l4t="36.4.3", family="orin"):
    return {"ok": True, "stack": {"jetpack": {"version": version, "l4t": l4t, "family": family, "device": "Jetson AGX Orin"}}}


def options(**changes):
    base = {"base_url": "", "key_url": "", "key_fingerprint": "", "components": ["all"], "power_mode": "",
            "power_mode_reboot": "never", "clocks": None}
    base.update(changes)
    return base


def run(the_plan=None, opts=None, release=AGX_R3643, model=MODEL, conf=AGX_CONF, query="NV Power Mode: MODE_30W\n2\n"):
    return decide(the_plan if the_plan is not None else plan(), opts or options(), release_text=release, model_text=model,
                  nvpmodel_conf=conf, nvpmodel_query=query, data=JETSON, compat=COMPAT)


# --- parsers on the real files -----------------------------------------------------------------------------------

def test_agx_orin_nvpmodel_conf_has_its_four_modes_and_30w_as_default():
    assert parse_nvpmodel_conf(AGX_CONF) == {
        "modes": [{"id": 0, "name": "MAXN"}, {"id": 1, "name": "MODE_15W"}, {"id": 2, "name": "MODE_30W"},
                  {"id": 3, "name": "MODE_50W"}],
        "default": 2}


def test_orin_nano_nvpmodel_conf_and_the_commented_format_line_is_not_a_mode():
    # NVIDIA's header documents the syntax in a comment: "# < POWER_MODEL ID=id_num NAME=mode_name >"
    assert parse_nvpmodel_conf(NANO_CONF) == {"modes": [{"id": 0, "name": "15W"}, {"id": 1, "name": "7W"}], "default": 0}


@pytest.mark.parametrize("text, expected", [
    ("NV Fan Mode:quiet\nNV Power Mode: MAXN\n0\n", {"name": "MAXN", "id": 0}),
    ("NV Power Mode: MODE_30W\n2", {"name": "MODE_30W", "id": 2}),
    ("NVPM VERB: Config file: /etc/nvpmodel.conf\nNVPM VERB: Current mode: NV Power Mode: 40W\n4\n", {"name": "40W", "id": 4}),
    ("", None),
    ("nvpmodel: command not found", None),
])
def test_nvpmodel_query(text, expected):
    assert parse_nvpmodel_query(text) == expected


def test_attribute_order_does_not_matter():
    assert parse_nvpmodel_conf("< POWER_MODEL NAME=MAXN ID=3 >\n")["modes"] == [{"id": 3, "name": "MAXN"}]


# --- the decision ------------------------------------------------------------------------------------------------

def test_orin_on_r36_4_3_gets_the_common_and_t234_repositories_of_r36_4():
    got = run()
    assert got["ok"], got["errors"]
    assert got["l4t"] == {"version": "36.4.3", "major": 36, "suite": "r36.4"}
    assert [(r["uri"], r["suite"], r["components"]) for r in got["repositories"]] == [
        ("https://repo.download.nvidia.com/jetson/common", "r36.4", ["main"]),
        ("https://repo.download.nvidia.com/jetson/t234", "r36.4", ["main"])]
    assert got["key"] == {"url": "https://repo.download.nvidia.com/jetson/jetson-ota-public.asc",
                          "fingerprint": "3C6D1FF3100C8C3ABB0869C0E6543461A9996195"}
    assert got["packages"] == ["nvidia-jetpack"]
    assert got["pin_origin"] == "repo.download.nvidia.com"
    assert got["power"] is None


def test_a_mirror_and_another_key_replace_nvidias():
    got = run(opts=options(base_url="http://127.0.0.1:8089/jetson/", key_fingerprint="aaaa bbbb " * 4 + "cccc dddd"))
    assert got["repositories"][1]["uri"] == "http://127.0.0.1:8089/jetson/t234"
    assert got["key"]["url"] == "http://127.0.0.1:8089/jetson/jetson-ota-public.asc"
    assert got["key"]["fingerprint"] == "AAAABBBB" * 4 + "CCCCDDDD"
    assert got["pin_origin"] == "127.0.0.1"
    assert run(opts=options(base_url="file:///srv/jetson"))["pin_origin"] == ""


def test_components_are_joined_in_order_and_an_unknown_one_is_refused_with_the_choices():
    assert run(opts=options(components=["cuda", "container", "cuda"]))["packages"] == ["nvidia-cuda", "nvidia-container"]
    got = run(opts=options(components=["cuda", "deepstream"]))
    assert not got["ok"]
    assert "jetpack_components names deepstream" in got["errors"][0] and "all, container, cuda" in got["errors"][0]


def test_a_non_jetson_host_is_refused_before_anything_else():
    got = run(release=None, model=None)
    assert not got["ok"] and got["repositories"] == []
    assert "not a Jetson running L4T" in got["errors"][0] and "device-tree model is missing" in got["errors"][0]


def test_an_x86_board_model_is_named_in_the_refusal():
    got = run(release="", model="ASUS System Product Name")
    assert "device-tree model is 'ASUS System Product Name'" in got["errors"][0]


def test_an_l4t_major_change_needs_a_reflash():
    got = run(release=TX2_R3251)          # a real R32.5.1 host, a plan for JetPack 6.2 (L4T 36.4.3)
    assert not got["ok"] and got["repositories"] == [] and got["packages"] == []
    message = got["errors"][0]
    assert "runs L4T 32.5.1 (R32)" in message and "needs a reflash" in message and "apt cannot do it" in message


def test_another_release_of_the_same_major_is_refused_with_the_ota_route():
    got = run(release=AGX_R3644)          # JetPack 6.2 is L4T 36.4.3; this AGX Orin runs 36.4.4 (JetPack 6.2.1)
    assert not got["ok"]
    assert "runs L4T 36.4.4" in got["errors"][0] and "over-the-air" in got["errors"][0]
    assert run(the_plan=plan("6.2.1", "36.4.4"), release=AGX_R3644)["ok"]


def test_a_plan_without_jetpack_is_refused_naming_the_plan():
    got = run(the_plan={"ok": True, "stack": {"jetpack": None}})
    assert "has no JetPack (stack.jetpack)" in got["errors"][0]


def test_a_family_without_a_soc_repository_is_refused():
    got = run(the_plan=plan(family="nano"))
    assert "no SoC repository for the module family 'nano'" in got["errors"][0]


# --- JetPack 7 on the shipped data (Thor on R38, Orin on R39); an L4T major change is still a reflash ------------
SHIPPED = load_jetson_data()
REAL_COMPAT = load_compat()


def run_shipped(the_plan, release, model="NVIDIA Jetson AGX Thor Developer Kit"):
    return decide(the_plan, options(), release_text=release, model_text=model, nvpmodel_conf=None, nvpmodel_query=None,
                  data=SHIPPED, compat=REAL_COMPAT)


def folders(got):
    return [r["uri"].rsplit("/", 1)[1] for r in got["repositories"]]


def deb_lines(got):
    return ["deb %s %s %s" % (r["uri"], r["suite"], " ".join(r["components"])) for r in got["repositories"]]


def test_agx_thor_on_r38_2_0_jetpack_7_gets_the_som_repository_of_r38_2():
    got = run_shipped(plan("7.0", "38.2.0", "thor"), THOR_R3820)      # a REAL nv_tegra_release of an AGX Thor
    assert got["ok"], got["errors"]
    assert folders(got) == ["common", "som"]          # from R38 one folder for every module; no t264 folder exists
    assert {r["suite"] for r in got["repositories"]} == {"r38.2"}


def test_agx_orin_on_r36_keeps_its_soc_folder_t234():
    got = run_shipped(plan("6.2", "36.4.3", "orin"), AGX_R3643, MODEL)
    assert got["ok"], got["errors"]
    assert folders(got) == ["common", "t234"]


# NVIDIA's own lines for R38.4 and R39.2 (tests/fixtures/jetson/SOURCES.md): the plan's sources, written as apt's
# one-line form, are those lines. The Thor release is the REAL R38.2.0 file at REVISION 4.0; the Orin's is the R39
# header line public notes quote for JetPack 7.2.1 ("# R39 (release), REVISION: 2.1").
@pytest.mark.parametrize("the_plan, release, model, listed", [
    (plan("7.1", "38.4", "thor"), THOR_R3820.replace("REVISION: 2.0", "REVISION: 4.0"),
     "NVIDIA Jetson AGX Thor Developer Kit", "jetpack-7.1-r38.4.list"),
    (plan("7.2.1", "39.2.1", "orin"), "# R39 (release), REVISION: 2.1, GCID: 0, BOARD: generic, EABI: aarch64\n",
     "NVIDIA Jetson Orin Nano Engineering Reference Developer Kit Super", "jetpack-7.2-r39.2.list"),
])
def test_jetpack_7_sources_are_nvidias_own_lines(the_plan, release, model, listed):
    got = run_shipped(the_plan, release, model)
    assert got["ok"], got["errors"]
    assert deb_lines(got) == read("jetson/apt/" + listed).splitlines()


def test_orin_on_r39_gets_the_som_folder():
    got = run_shipped(plan("7.2", "39.2.0", "orin"), "# R39 (release), REVISION: 2.0, GCID: 0, BOARD: generic\n", MODEL)
    assert got["ok"], got["errors"]
    assert folders(got) == ["common", "som"]


def test_an_l4t_major_without_a_folder_in_data_is_refused_naming_the_data():
    data = copy.deepcopy(SHIPPED)
    del data["repository"]["soc_folder"][38]
    got = decide(plan("7.0", "38.2.0", "thor"), options(), release_text=THOR_R3820, model_text="x", data=data,
                 compat=REAL_COMPAT)
    assert not got["ok"] and got["repositories"] == []
    assert "repository.soc_folder) names no folder" in got["errors"][0] and "R38" in got["errors"][0]


def test_a_thor_plan_on_an_orin_r36_module_is_still_a_reflash():
    got = run_shipped(plan("7.0", "38.2.0", "thor"), AGX_R3643, MODEL)
    assert not got["ok"] and "needs a reflash" in got["errors"][0] and "runs L4T 36.4.3 (R36)" in got["errors"][0]


def test_an_orin_r36_module_with_a_jetpack_7_plan_is_still_a_reflash():
    got = run_shipped(plan("7.2", "39.2.0", "orin"), AGX_R3643, MODEL)
    assert not got["ok"] and "needs a reflash" in got["errors"][0]


# --- power modes as the tools behave -----------------------------------------------------------------------------
@pytest.mark.parametrize("conf, expected", [
    (NANO_SUPER_CONF, {"id": 2, "name": "MAXN_SUPER"}),     # Orin Nano Super: MAXN_SUPER (id 2), not id 0
    (AGX_CONF, {"id": 0, "name": "MAXN"}),
    (NANO_CONF, {"id": 0, "name": "15W"}),                  # the Orin Nano before Super: the most watts
    # a made-up conf naming both (the rule's order; no module file here has both)
    ("< POWER_MODEL ID=0 NAME=MAXN >\n< POWER_MODEL ID=1 NAME=MAXN_SUPER >\n", {"id": 1, "name": "MAXN_SUPER"}),
])
def test_max_is_the_modules_own_top_mode(conf, expected):
    assert max_power_mode(parse_nvpmodel_conf(conf)["modes"]) == expected


def test_max_on_an_orin_nano_super_sets_maxn_super():
    got = run(opts=options(power_mode="max", power_mode_reboot="if_needed"), conf=NANO_SUPER_CONF,
              query="NV Power Mode: 15W\n0\n")
    assert got["ok"], got["errors"]
    assert {k: got["power"][k] for k in ("name", "id", "asked", "reboot", "change")} == \
        {"name": "MAXN_SUPER", "id": 2, "asked": "max", "reboot": "if_needed", "change": True}


def test_max_without_a_top_mode_name_is_refused():
    got = run(opts=options(power_mode="max"), conf="< POWER_MODEL ID=0 NAME=MODE_A >\n< PM_CONFIG DEFAULT=0 >\n")
    assert "none is MAXN_SUPER, MAXN or named in watts" in got["errors"][0]


def test_a_bad_reboot_choice_is_named():
    got = run(opts=options(power_mode="MAXN", power_mode_reboot="always"))
    assert not got["ok"] and got["errors"][0].startswith("jetpack_power_mode_reboot is 'always'")


# nvpmodel -m answered "no": outputs posted from modules (tests/fixtures/jetson/SOURCES.md)
DECLINED = ("NVPM WARN: Golden image context is already created\n"
            "NVPM WARN: Reboot required for changing to this power mode: 0\n"
            "NVPM WARN: DO YOU WANT TO REBOOT NOW? enter YES/yes to confirm:\n"
            "NVPM ERROR: optMask is 1, no request for power mode")
NO_ANSWER = ("NVPM WARN: Reboot required for changing to this power mode: 2\n"
             "NVPM WARN: DO YOU WANT TO REBOOT NOW? enter YES/yes to confirm:\n"
             "NVPM ERROR: bad input!\nNVPM ERROR: optMask is 1, no request for power mode")
MAXN = {"name": "MAXN", "id": 0}


@pytest.mark.parametrize("rc, output, state", [
    (1, DECLINED, "pending_reboot"),
    (0, DECLINED, "pending_reboot"),         # whatever the exit status: the prompt means the mode was not set
    (1, NO_ANSWER, "pending_reboot"),
    (0, "", "applied"),
    (1, "NVPM ERROR: Invalid power mode: 9", "failed"),
])
def test_what_nvpmodel_did(rc, output, state):
    assert power_result(MAXN, rc, output)["state"] == state


def test_a_pending_reboot_says_how_to_finish():
    message = power_result(MAXN, 1, DECLINED)["message"]
    assert "needs a reboot" in message and "jetpack_power_mode_reboot: if_needed" in message
    assert "sudo nvpmodel -m 0 and answer YES" in message


def test_a_declined_mode_is_said_to_wait_for_the_next_boot_in_nvpmodels_status():
    # issue 52 red team (third) MEDIUM 4: nvpmodel cancels a declined change (almond-bot/axol#107: "the box never
    # reached MAXN on any boot" while nothing recorded it); the role writes the mode to /var/lib/nvpmodel/status, the
    # mode every boot applies, so the record, the manual and the spec say the next reboot sets it
    message = power_result(dict(MAXN, current={"name": "MODE_30W", "id": 2}), 1, DECLINED)["message"]
    assert "left the mode in effect (MODE_30W) as it is" in message
    assert "recorded in /var/lib/nvpmodel/status, the mode nvpmodel applies at every boot, so the next reboot sets it" in message
    root = Path(__file__).resolve().parents[4] / "roles" / "jetpack"
    manual = " ".join((root / "defaults" / "main.yml").read_text(encoding="utf-8").split())
    spec = " ".join((root / "meta" / "argument_specs.yml").read_text(encoding="utf-8").split())
    for text in (manual, spec):
        assert "/var/lib/nvpmodel/status" in text and "so the next reboot sets it" in text
        assert "NOT set, now or after any later reboot" not in text


# /var/lib/nvpmodel/status as public scripts read it ("pmode:0000", "what nvpmodel itself writes"; a Makefile's
# `eval $(cat /var/lib/nvpmodel/status | tr : =)`; tests/fixtures/jetson/SOURCES.md)
@pytest.mark.parametrize("text, expected", [
    ("pmode:0002 fmode:quiet\n", 2), ("pmode:0000\n", 0), ("pmode:0010", 10), ("", None), (None, None), ("fmode:quiet\n", None),
])
def test_nvpmodel_status_is_read(text, expected):
    assert parse_nvpmodel_status(text) == expected


@pytest.mark.parametrize("text, mode, expected", [
    ("pmode:0002 fmode:quiet\n", 0, "pmode:0000 fmode:quiet\n"),      # the fan mode and the newline kept
    ("pmode:0002", 0, "pmode:0000"),
    (None, 3, "pmode:0003\n"),
    ("garbage\n", 1, "pmode:0001\n"),
])
def test_the_status_written_for_the_next_boot_keeps_the_rest(text, mode, expected):
    assert nvpmodel_status_text(text, mode) == expected


def run_status(status, query="NV Power Mode: MODE_30W\n2\n", reboot="never"):
    return decide(plan(), options(power_mode="MAXN", power_mode_reboot=reboot), release_text=AGX_R3643, model_text=MODEL,
                  nvpmodel_conf=AGX_CONF, nvpmodel_query=query, data=JETSON, compat=COMPAT, nvpmodel_status=status)["power"]


@pytest.mark.parametrize("status, query, warned", [
    ("pmode:0000 fmode:quiet\n", "NV Power Mode: MODE_30W\n2\n", True),   # an earlier never run wrote MAXN: the boot applies it
    ("pmode:0002 fmode:quiet\n", "NV Power Mode: MODE_30W\n2\n", False),  # the status is the mode in effect
    (None, "NV Power Mode: MODE_30W\n2\n", False),                         # no status: nothing waits
    ("pmode:0000\n", None, False),                                         # nvpmodel not asked: nothing known
])
def test_a_mode_left_pending_after_jetpack_power_mode_is_cleared_is_said(status, query, warned):
    """Issue 52 red team LOW 3: jetpack_power_mode cleared after a run with never: nvpmodel's status still holds MAXN
    and the next boot applies it; the run says so (a warning in the notes, naming the mode), changing nothing."""
    got = decide(plan(), options(power_mode=""), release_text=AGX_R3643, model_text=MODEL, nvpmodel_conf=AGX_CONF,
                 nvpmodel_query=query, data=JETSON, compat=COMPAT, nvpmodel_status=status)
    assert got["ok"] and got["power"] is None
    warnings = [note for note in got["notes"] if note.startswith("Warning: jetpack_power_mode is empty")]
    assert bool(warnings) == warned, got["notes"]
    if warned:
        assert ("holds the power mode MAXN (id 0), not the mode in effect (MODE_30W): the next boot applies MAXN (id 0)"
                in warnings[0]) and "/var/lib/nvpmodel/status" in warnings[0] and "jetpack_power_mode: MODE_30W" in warnings[0]


def test_the_preflight_asks_nvpmodel_when_its_status_holds_a_mode_even_without_a_power_mode():
    """The wiring of LOW 3: nvpmodel -q (read-only) runs when the status file was read, and fails the run only when a
    power mode is asked."""
    preflight = yaml.safe_load((ROOT / "roles" / "jetpack" / "tasks" / "preflight.yml").read_text(encoding="utf-8"))
    ask = next(t for t in preflight if t.get("name") == "Ask nvpmodel for the current power mode")
    slurp = next(t for t in preflight if "ansible.builtin.slurp" in t)
    assert slurp["loop"][5] == "{{ __jetpack_nvpmodel_status }}"
    assert "__jetpack_files.results[5].content is defined" in ask["when"][0]
    assert "jetpack_power_mode" in ask["failed_when"]


@pytest.mark.parametrize("status, query, pending, change", [
    ("pmode:0000 fmode:quiet\n", "NV Power Mode: MODE_30W\n2\n", True, True),    # written, not in effect: waits
    ("pmode:0002 fmode:quiet\n", "NV Power Mode: MODE_30W\n2\n", False, True),   # not written yet
    (None, "NV Power Mode: MODE_30W\n2\n", False, True),
    ("pmode:0000\n", "NV Power Mode: MAXN\n0\n", False, False),                  # in effect: nothing to do
    ("pmode:0000\n", "", False, True),                                             # no answer from -q: ask nvpmodel
])
def test_a_mode_in_nvpmodels_status_but_not_in_effect_is_pending(status, query, pending, change):
    power = run_status(status, query)
    assert (power["pending"], power["change"], power["status_path"]) == (pending, change, "/var/lib/nvpmodel/status")


def test_a_pending_mode_is_reported_without_running_nvpmodel_and_the_status_stays_as_it_is():
    power = run_status("pmode:0000 fmode:quiet\n")
    got = power_result(power, None, None)
    assert got["state"] == "pending_reboot" and got["reboot_required"]
    # the same words as the run that wrote it (the role's record is then unchanged) and the same status text
    assert got["message"] == power_result(power, 1, DECLINED)["message"]
    assert power["status_text"] == "pmode:0000 fmode:quiet\n"
    assert power_result(run_status("pmode:0000\n", "NV Power Mode: MAXN\n0\n"), None, None)["state"] == "unchanged"


@pytest.mark.parametrize("conf, query, wanted, expected", [
    (AGX_CONF, "NV Power Mode: MODE_30W\n2\n", "MAXN", {"name": "MAXN", "id": 0, "change": True}),
    (AGX_CONF, "NV Power Mode: MAXN\n0\n", "MAXN", {"name": "MAXN", "id": 0, "change": False}),
    (AGX_CONF, "", "MODE_15W", {"name": "MODE_15W", "id": 1, "change": True}),
    (NANO_CONF, "NV Power Mode: 15W\n0\n", "7W", {"name": "7W", "id": 1, "change": True}),
])
def test_power_mode_by_name(conf, query, wanted, expected):
    got = run(opts=options(power_mode=wanted), conf=conf, query=query)
    assert got["ok"], got["errors"]
    assert {k: got["power"][k] for k in expected} == expected


def test_a_power_mode_the_module_lacks_is_refused_with_its_modes():
    got = run(opts=options(power_mode="MAXN_SUPER"))   # an Orin Nano Super mode, not on the AGX Orin
    assert "jetpack_power_mode is 'MAXN_SUPER'" in got["errors"][0]
    assert "MAXN (id 0), MODE_15W (id 1), MODE_30W (id 2), MODE_50W (id 3)" in got["errors"][0]


def test_a_power_mode_without_nvpmodel_conf_is_refused():
    assert "no power modes in /etc/nvpmodel.conf" in run(opts=options(power_mode="MAXN"), conf=None)["errors"][0]


@pytest.mark.parametrize("changes, variable", [
    ({"base_url": "repo.download.nvidia.com/jetson"}, "jetpack_base_url"),
    ({"key_url": "ftp://x/key"}, "jetpack_key_url"),
    ({"key_fingerprint": "3C6D1FF3"}, "jetpack_key_fingerprint"),
    ({"clocks": "yes"}, "jetpack_clocks"),
    ({"power_mode": 0}, "jetpack_power_mode"),
    ({"components": []}, "jetpack_components"),
])
def test_bad_variables_are_named(changes, variable):
    got = run(opts=options(**changes))
    assert not got["ok"]
    assert any(error.startswith(variable) for error in got["errors"]), got["errors"]


# --- data/jetson.yml -----------------------------------------------------------------------------------------------

def test_shipped_data_is_well_formed_and_sourced():
    data = load_jetson_data()
    assert data["repository"]["source"] and all(entry["source"] for entry in data["socs"].values())


@pytest.mark.parametrize("change, message", [
    (lambda d: d["repository"].update(key_fingerprint="3c6d"), r"repository.key_fingerprint: must be 40"),
    (lambda d: d["socs"]["orin"].update(soc="T234"), r"socs.orin: needs 'soc'"),
    (lambda d: d["components"].pop("all"), r"components: must be a mapping with 'all'"),
    (lambda d: d["repository"].update(repos=["common"]), r"repository.repos: must be \[common, soc\]"),
    (lambda d: d["repository"].pop("soc_folder"), r"repository.soc_folder: must map L4T majors"),
    (lambda d: d["repository"]["soc_folder"].update({38: "So M"}), r"repository.soc_folder.38: must be a folder"),
    (lambda d: d["repository"].pop("soc_folder_source"), r"repository.soc_folder_source: must be text"),
])
def test_a_bad_entry_is_named(change, message):
    data = copy.deepcopy(JETSON)
    change(data)
    with pytest.raises(JetsonDataError, match=message):
        check_jetson_data(data)


# --- where the container toolkit comes from (nvidia_container_toolkit_source) -------------------------------------

JETSON_PLAN = {"host": {"jetson": {"model": "Jetson AGX Orin"}}, "stack": {"jetpack": {"version": "6.2"}}}
PC_PLAN = {"host": {"jetson": None, "gpu_count": 1}, "stack": {"jetpack": None}}


@pytest.mark.parametrize("choice, the_plan, host, source", [
    ("auto", JETSON_PLAN, None, "jetpack"),
    ("auto", PC_PLAN, None, "nvidia"),
    ("auto", None, {"jetson": {"l4t": "36.4.3"}}, "jetpack"),   # no plan: the host's gpu_facts
    ("auto", None, {"jetson": None}, "nvidia"),
    ("jetpack", JETSON_PLAN, None, "jetpack"),
    ("nvidia", PC_PLAN, None, "nvidia"),
])
def test_container_toolkit_source(choice, the_plan, host, source):
    assert container_toolkit_source(choice, the_plan, host) == {"source": source, "errors": []}


@pytest.mark.parametrize("choice, the_plan, words", [
    ("nvidia", JETSON_PLAN, "libnvidia-container repository must not go onto L4T"),
    ("jetpack", PC_PLAN, "is not a Jetson"),
    ("apt", PC_PLAN, "choose one of auto, nvidia, jetpack"),
])
def test_container_toolkit_source_refused_naming_the_variable(choice, the_plan, words):
    out = container_toolkit_source(choice, the_plan)
    assert out["source"] is None and words in out["errors"][0] and "nvidia_container_toolkit_source" in out["errors"][0]


# --- every line of the flashed list is kept (issue 52 red team MEDIUM 8) -----------------------------------------
# The role sets nvidia-l4t-apt-source.list aside; JetPack 6's has a third line, jetson/ffmpeg (REAL lines,
# tests/fixtures/jetson/SOURCES.md), whose packages apt lost with it.
FLASHED_R364 = read("jetson/apt/nvidia-l4t-apt-source-r36.4.list")


def test_the_flashed_ffmpeg_line_is_kept_as_a_repository_beside_common_and_t234():
    got = decide(plan(), options(), release_text=AGX_R3643, model_text=MODEL, data=JETSON, compat=COMPAT,
                 flashed_list=FLASHED_R364)
    assert got["ok"], got["errors"]
    assert ["deb %s %s %s" % (r["uri"], r["suite"], " ".join(r["components"])) for r in got["repositories"]] == \
        FLASHED_R364.splitlines()
    assert [r["name"] for r in got["repositories"]] == ["nvidia-jetson-common", "nvidia-jetson-t234", "nvidia-jetson-ffmpeg"]


def test_with_a_mirror_the_ffmpeg_folder_moves_to_it_and_lines_elsewhere_stay_as_they_are():
    flashed = (FLASHED_R364 + "# deb https://repo.download.nvidia.com/jetson/extra r36.4 main\n"
               "deb-src https://repo.download.nvidia.com/jetson/src r36.4 main\n"
               "deb [arch=arm64] https://apt.lab.example/jetson-extra r36.4 main restricted\n")
    got = decide(plan(), options(base_url="http://127.0.0.1:8089/jetson"), release_text=AGX_R3643, model_text=MODEL,
                 data=JETSON, compat=COMPAT, flashed_list=flashed)
    assert [(r["uri"], r["components"]) for r in got["repositories"][2:]] == [
        ("http://127.0.0.1:8089/jetson/ffmpeg", ["main"]), ("https://apt.lab.example/jetson-extra", ["main", "restricted"])]
    assert got["repositories"][3]["name"] == "nvidia-jetson-flashed-2"


def test_a_list_of_the_two_repositories_a_mirrors_list_or_none_adds_nothing():
    two = "".join(FLASHED_R364.splitlines(True)[:2])
    mirror_list = "deb http://127.0.0.1:8089/jetson/common r36.4 main\ndeb http://127.0.0.1:8089/jetson/t234 r36.4 main\n"
    for flashed, base in ((two, ""), (mirror_list, "http://127.0.0.1:8089/jetson"), (None, "")):
        got = decide(plan(), options(base_url=base), release_text=AGX_R3643, model_text=MODEL, data=JETSON,
                     compat=COMPAT, flashed_list=flashed)
        assert [r["name"] for r in got["repositories"]] == ["nvidia-jetson-common", "nvidia-jetson-t234"]


# --- Docker's nvidia runtime needs nvidia-container (issue 52 red team MEDIUM 10) --------------------------------
@pytest.mark.parametrize("components, runtime, refused", [
    (["cuda"], True, True),                 # Docker defaults to nvidia, nothing installs nvidia-container-runtime
    (["cuda", "container"], True, False),
    (["all"], True, False),                 # nvidia-jetpack -> nvidia-jetpack-runtime -> nvidia-container
    (["cuda"], False, False),               # no Docker (dlbox_edge_docker false): any component list
])
def test_a_component_list_without_nvidia_container_is_refused_when_dockers_default_runtime_is_nvidia(
        components, runtime, refused):
    got = run(opts=options(components=components, container_runtime=runtime))
    assert got["ok"] is not refused
    if refused:
        assert got["errors"] == [
            "jetpack_components is ['cuda'], without all or container: nothing installs nvidia-container (Docker's nvidia "
            "runtime), but Docker is set up with nvidia as its default runtime (dlbox_edge_docker is true), so every "
            "container would fail to start. Add container to jetpack_components, or set dlbox_edge_docker to false. "
            "Nothing was changed."]


def test_container_runtime_components_must_be_known_components():
    data = copy.deepcopy(JETSON)
    data["container_runtime"]["components"] = ["docker"]
    with pytest.raises(JetsonDataError, match="container_runtime: needs 'components'"):
        check_jetson_data(data)


# --- the meta package is pinned to the plan's JetPack (issue 52 red team LOW 14) ---------------------------------
# One suite (r36.4) holds nvidia-jetpack 6.2.1+b38, 6.2+b77 and 6.1+b123 (apt-cache show on an AGX Orin, SOURCES.md):
# unpinned, a module flashed with 6.2 would get 6.2.1's metas and, through their Depends, the next L4T's packages.
def _with_versions():
    return dict(JETSON, components_versions={"6.1": "6.1+b123", "6.2": "6.2+b77", "6.2.1": "6.2.1+b38"})


def test_every_component_meta_is_pinned_to_the_plans_jetpack():
    # the metas depend on each other at exact versions (nvidia-jetpack 6.2+b77 Depends nvidia-cuda (= 6.2+b77)):
    # [all, cuda] with nvidia-cuda unpinned fails apt ("nvidia-cuda (= 6.2+b77) but 6.2.1+b38 is to be installed"),
    # [cuda, container] unpinned takes 6.2.1's metas onto a 6.2 module (second red team, HIGH 1)
    got = decide(plan(), options(components=["all", "cuda"]), release_text=AGX_R3643, model_text=MODEL,
                 data=_with_versions(), compat=COMPAT)
    assert got["ok"], got["errors"]
    assert got["packages"] == ["nvidia-jetpack=6.2+b77", "nvidia-cuda=6.2+b77"] and got["notes"] == []
    got = decide(plan(), options(components=["cuda", "container"]), release_text=AGX_R3643, model_text=MODEL,
                 data=_with_versions(), compat=COMPAT)
    assert got["packages"] == ["nvidia-cuda=6.2+b77", "nvidia-container=6.2+b77"]
    got = decide(plan("6.2.1", "36.4.4"), options(), release_text=AGX_R3644, model_text=MODEL, data=_with_versions(),
                 compat=COMPAT)
    assert got["packages"] == ["nvidia-jetpack=6.2.1+b38"]


def test_a_jetpack_alone_in_its_suite_without_a_known_meta_version_is_installed_unpinned_and_said():
    # JetPack 6.0 (L4T 36.3.0) is the only JetPack of r36.3: unpinned, apt can only take its own metas
    data = _with_versions()
    got = decide(plan("6.0", "36.3.0"), options(), release_text=AGX_R3643.replace("REVISION: 4.3", "REVISION: 3.0"),
                 model_text=MODEL, data=data, compat=COMPAT)
    assert got["ok"] and got["packages"] == ["nvidia-jetpack"] and got["meta_pin"] is None
    assert got["notes"] == ["nvidia-jetpack is installed unpinned: data/jetson.yml (components_versions) knows no "
                            "JetPack meta version for JetPack 6.0, so apt takes the newest in the suite r36.3."]


# --- suites shared by two JetPacks are pinned to the plan's (issue 52, third red team MEDIUM 3) ------------------------
# r36.5 holds 6.2.2+b24 (L4T 36.5.0) and 6.2.3+b81 (L4T 36.5.2), r39.2 7.2-b187 and 7.2.1-b49 (data/jetson.yml
# components_versions_source): a 6.2.2 module took 6.2.3's metas from a plain `apt install nvidia-jetpack`
R3650 = AGX_R3643.replace("REVISION: 4.3", "REVISION: 5.0")
R3652 = AGX_R3643.replace("REVISION: 4.3", "REVISION: 5.2")
R3920 = "# R39 (release), REVISION: 2.0, GCID: 0, BOARD: generic, EABI: aarch64\n"
R3921 = "# R39 (release), REVISION: 2.1, GCID: 0, BOARD: generic, EABI: aarch64\n"


@pytest.mark.parametrize("version, l4t, release, meta", [
    ("6.2.2", "36.5.0", R3650, "6.2.2+b24"), ("6.2.3", "36.5.2", R3652, "6.2.3+b81"),
    ("7.2", "39.2.0", R3920, "7.2-b187"), ("7.2.1", "39.2.1", R3921, "7.2.1-b49"),
])
def test_the_shipped_data_pins_both_jetpacks_of_a_shared_suite(version, l4t, release, meta):
    got = decide(plan(version, l4t), options(components=["all", "cuda"]), release_text=release, model_text=MODEL,
                 data=load_jetson_data(), compat=COMPAT)
    assert got["ok"], got["errors"]
    assert got["packages"] == ["nvidia-jetpack=" + meta, "nvidia-cuda=" + meta] and got["notes"] == []
    # held there in apt's preferences, so a later apt upgrade keeps them (repository.yml writes the stanza): every meta
    # of the chain, not only those of jetpack_components (issue 52 red team HIGH B)
    assert got["meta_pin"] == {"packages": ["nvidia-jetpack", "nvidia-jetpack-runtime", "nvidia-jetpack-dev", "nvidia-cuda",
                                            "nvidia-cudnn", "nvidia-tensorrt", "nvidia-vpi", "nvidia-container"],
                               "version": meta}


@pytest.mark.parametrize("version, l4t, release, suite, other", [
    ("6.2.2", "36.5.0", R3650, "r36.5", "6.2.3"), ("7.2.1", "39.2.1", R3921, "r39.2", "7.2"),
])
def test_a_shared_suite_without_the_plans_meta_version_is_refused(version, l4t, release, suite, other):
    data = load_jetson_data()
    del data["components_versions"][version]
    got = decide(plan(version, l4t), options(), release_text=release, model_text=MODEL, data=data, compat=COMPAT)
    assert not got["ok"] and got["meta_pin"] is None
    assert got["errors"] == [
        "JetPack %s shares NVIDIA's apt suite %s with JetPack %s, and data/jetson.yml (components_versions) knows no "
        "version of JetPack %s's metas (nvidia-jetpack): installed unpinned, or upgraded later, apt would take the newest "
        "metas in the suite, another JetPack's. Add the version (apt-cache madison nvidia-jetpack on the module lists "
        "each JetPack's) to components_versions with its source. Nothing was changed."
        % (version, suite, other, version)]
    # the other JetPack is for another L4T of the suite (6.2.3: 36.5.2), which this module does not run: planning it
    # would be refused in turn, so the refusal does not suggest it (issue 52 red team MEDIUM 4)
    assert "or plan JetPack" not in got["errors"][0]


# --- JetPack 6.1.1 (L4T 36.4.2, jetson_stats' "6.1 (rev1)") takes 6.1's metas (issue 52 red team MEDIUM 4) ---------
R3642 = AGX_R3643.replace("REVISION: 4.3", "REVISION: 4.2")


def test_jetpack_6_1_1_on_l4t_36_4_2_is_pinned_to_6_1s_metas_not_refused_in_a_loop():
    got = decide(plan("6.1.1", "36.4.2"), options(components=["all", "cuda"]), release_text=R3642, model_text=MODEL,
                 data=load_jetson_data(), compat=COMPAT)
    assert got["ok"], got["errors"]
    assert got["packages"] == ["nvidia-jetpack=6.1+b123", "nvidia-cuda=6.1+b123"]
    # without the data (the red team's loop): refused, and the refusal names no JetPack that L4T 36.4.2 cannot take
    data = load_jetson_data()
    del data["components_versions"]["6.1.1"]
    got = decide(plan("6.1.1", "36.4.2"), options(), release_text=R3642, model_text=MODEL, data=data, compat=COMPAT)
    assert not got["ok"] and "or plan JetPack" not in got["errors"][0], got["errors"]
    for other in ("6.2.1", "6.2", "6.1"):
        again = decide(plan(other, "36.4.2"), options(), release_text=R3642, model_text=MODEL, data=data, compat=COMPAT)
        assert not again["ok"]      # each would be refused for L4T 36.4.2: the old suggestion was a loop


def test_the_shipped_data_pins_jetpack_6_2():
    got = decide(plan(), options(), release_text=AGX_R3643, model_text=MODEL, data=load_jetson_data(), compat=COMPAT)
    assert got["packages"] == ["nvidia-jetpack=6.2+b77"]


# --- JetPack 5 and older (L4T < R36) are refused: edge.yml is for JetPack 6 and newer (second red team MEDIUM 6) -------
# the line in the shape of a real R35 module's /etc/nv_tegra_release (the R36 fixtures' layout, SOURCES.md)
R35_RELEASE = "# R35 (release), REVISION: 6.1, GCID: 38127932, BOARD: t186ref, EABI: aarch64, DATE: Tue Jan 28 00:00:00 UTC 2025\n"


@pytest.mark.parametrize("the_plan", [plan("5.1.5", "35.6.1"), plan("5.1.5", "35.6.1", family="xavier")])
def test_l4t_before_r36_is_refused_naming_jetpack_6(the_plan):
    got = run(the_plan=the_plan, release=R35_RELEASE)
    assert not got["ok"] and got["repositories"] == [] and got["packages"] == []
    assert got["errors"] == [
        "This module runs L4T 35.6.1 (R35, JetPack 5 or older); the jetpack role and edge.yml support JetPack 6 and newer "
        "only (L4T R36 and later: Orin and Thor modules). Reflash an Orin with JetPack 6 or newer (SDK Manager or "
        "flash.sh, the module in recovery mode); an older module (Xavier, TX2, Nano) cannot run it, so leave it out of "
        "edge.yml's hosts. Nothing was changed."]


# --- jetpack_power_mode_reboot if_needed respects dlbox_reboot_allowed (second red team LOW 8) ------------------------
@pytest.mark.parametrize("reboot, allowed, refused", [
    ("if_needed", False, True), ("if_needed", True, False), ("if_needed", None, False), ("never", False, False)])
def test_if_needed_is_refused_where_the_group_forbids_reboots(reboot, allowed, refused):
    got = run(opts=options(power_mode="MAXN", power_mode_reboot=reboot, reboot_allowed=allowed))
    assert got["ok"] is not refused, got["errors"]
    if refused:
        assert got["errors"] == [
            "jetpack_power_mode_reboot is if_needed, but dlbox_reboot_allowed is false for this host: the role would "
            "reboot the module through nvpmodel when the power mode needs it. Set jetpack_power_mode_reboot: never (a "
            "mode that needs a reboot is recorded as pending), or allow reboots for the group (dlbox_reboot_allowed: "
            "true). Nothing was changed."]


# --- data/jetson.yml cites public addresses, not a private library's file ids (issue 52, third red team LOW 9) ----------
def test_the_jetson_data_cites_no_library_file_ids():
    text = (ROOT / "data" / "jetson.yml").read_text(encoding="utf-8")
    assert not re.findall(r"(?i)library file ids?|\bids? \d{8,}", text)
    # the sources that replaced them are public URLs
    for url in ("https://github.com/spack/spack-packages/blob/c99ed68e99ba28575e39eae20c9f2f7a9df095f1/",
                "https://github.com/anduril/jetpack-nixos/blob/4d857d6da48c420da39964b6fb7ba23a958abad3/sourceinfo/debs-update.py",
                "https://repo.download.nvidia.com/jetson/common/dists/r36.5/main/binary-arm64/Packages"):
        assert url in text


# --- a plan for a named Jetson is for an aarch64 machine (issue 52 red team LOW 12) ----------------------------------
def test_a_jetson_named_in_the_hardware_is_an_aarch64_host():
    from ansible_collections.dlbox.stack.plugins.plugin_utils.compat_data import load_gpu_index
    index = load_gpu_index()
    assert index.host_from_hardware({"gpus": ["Jetson AGX Orin"], "l4t": "36.4.3"})["arch"] == "aarch64"
    assert index.host_from_hardware({"gpus": ["Jetson AGX Thor"]})["arch"] == "aarch64"
    assert index.host_from_hardware({"l4t": "36.4.3"})["arch"] == "aarch64"        # a captured nv_tegra_release alone
    assert index.host_from_hardware({"gpus": ["RTX 4090"]})["arch"] == "x86_64"
    assert index.host_from_hardware({"gpus": ["NVIDIA GB200"], "arch": "aarch64"})["arch"] == "aarch64"


# issue 52 M5: after NVIDIA's OTA update (L4T 36.4 -> 36.5) the flashed list (or the copy set aside) still names the old
# suite; its NVIDIA folders take the host's suite as common and t234 do (an Orin NX on 6.2.2 reads "the r36.5 common,
# t234 and ffmpeg sources": data/jetson.yml components_versions_source), another URI's suite stays as listed.
def test_after_an_ota_the_flashed_lists_nvidia_folders_take_the_hosts_suite():
    flashed = FLASHED_R364 + "deb https://apt.lab.example/jetson-extra r36.4 main\n"
    got = decide(plan("6.2.2", "36.5.0"), options(), release_text=R3650, model_text=MODEL, data=JETSON, compat=COMPAT,
                 flashed_list=flashed)
    assert got["ok"], got["errors"]
    assert [(r["uri"].rsplit("/", 1)[-1], r["suite"]) for r in got["repositories"]] == [
        ("common", "r36.5"), ("t234", "r36.5"), ("ffmpeg", "r36.5"), ("jetson-extra", "r36.4")]
