# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPU settings and MIG decisions on recorded real ``nvidia-smi -q`` outputs (sources in tests/fixtures/SOURCES.md and
tests/fixtures/server/SOURCES.md): H200 (XML, lent GPU host), A100-SXM4-40GB with MIG (XML, netdata), 8x H100 SXM
and 4x A100-SXM4-80GB (text, thamada/nvidia-smi). Rules run on a frozen copy of data/server.yml."""

from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.dlbox.stack.plugins.plugin_utils import gpu_settings as gs

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"
DATA = gs.load_data(Path(__file__).resolve().parents[3] / "unit" / "data" / "server-frozen.yml")
H200 = (FIXTURES / "nvidia-smi" / "h200-driver-580-device.xml").read_text(encoding="utf-8")
A100_MIG = (FIXTURES / "nvidia-smi" / "a100-sxm4-mig.xml").read_text(encoding="utf-8")
P100 = (FIXTURES / "nvidia-smi" / "tesla-p100-driver-510.xml").read_text(encoding="utf-8")
H100 = (FIXTURES / "server" / "h100-sxm-8x-driver-565-q.txt").read_text(encoding="utf-8")
A100_80 = (FIXTURES / "server" / "a100-sxm4-80gb-4x-driver-555-q.txt").read_text(encoding="utf-8")


def _plan(text, **request):
    return gs.plan(text, {"gpu_settings_" + k: v for k, v in request.items()}, data=DATA)


@pytest.mark.parametrize("text, count, name, low, high, graphics, memory", [
    (H200, 1, "NVIDIA H200", 200.0, 700.0, 1980, 3201),
    (A100_MIG, 1, "NVIDIA A100-SXM4-40GB", 100.0, 400.0, 1410, 1215),
    (P100, 1, "Tesla P100-PCIE-16GB", 125.0, 250.0, 1328, 715),
    (H100, 8, "NVIDIA H100 80GB HBM3", 200.0, 700.0, 1980, 2619),
    (A100_80, 4, "NVIDIA A100-SXM4-80GB", 100.0, 500.0, 1410, 1593),
])
def test_limits_read_from_recorded_outputs(text, count, name, low, high, graphics, memory):
    gpus = gs.parse_smi(text)
    assert len(gpus) == count
    assert [g["index"] for g in gpus] == list(range(count))
    first = gpus[0]
    assert first["name"] == name
    assert (first["power"]["min"], first["power"]["max"]) == (low, high)
    assert (first["max_clocks"]["graphics"], first["max_clocks"]["memory"]) == (graphics, memory)


def test_text_reader_takes_state_fields_and_bus_ids():
    gpus = gs.parse_smi(H100)
    assert [g["pci_bus_id"] for g in gpus][:2] == ["00000000:18:00.0", "00000000:2A:00.0"]
    assert gpus[0]["persistence_mode"] is True
    assert gpus[0]["ecc"] == {"current": True, "pending": True}
    assert gpus[0]["mig"] == {"current": False, "pending": False}
    assert gpus[0]["compute_mode"] == "Default"
    assert gpus[0]["processes"] == 0


def test_xml_reader_takes_supported_clocks_and_mig():
    h200 = gs.parse_smi(H200)[0]
    assert 3201 in h200["supported_clocks"] and 1980 in h200["supported_clocks"][3201]
    assert gs.parse_smi(A100_MIG)[0]["mig"]["current"] is True
    assert gs.parse_smi(P100)[0]["mig"] == {"current": None, "pending": None}


@pytest.mark.parametrize("text, watts", [(H200, 701), (H200, 199), (H100, 750), (A100_80, 501), (A100_MIG, 450)])
def test_power_limit_outside_the_gpus_range_is_refused_naming_the_variable(text, watts):
    out = _plan(text, power_limit_w=watts)
    assert not out["ok"]
    assert out["commands_now"] == [] and out["boot_commands"] == []
    assert all("gpu_settings_power_limit_w" in p for p in out["problems"])
    assert str(watts) in out["problems"][0]


def test_power_limit_in_range_on_every_h100():
    out = _plan(H100, power_limit_w=600)
    assert out["ok"], out["problems"]
    assert out["commands_now"] == [["nvidia-smi", "-i", str(i), "-pl", "600"] for i in range(8)]
    assert out["boot_commands"] == out["commands_now"]


def test_per_gpu_override_wins_and_is_named_in_problems():
    out = _plan(H100, power_limit_w=600, per_gpu={3: {"power_limit_w": 800}})
    assert out["problems"] == [p for p in out["problems"] if "gpu_settings_per_gpu[3].power_limit_w" in p]
    assert len(out["problems"]) == 1
    ok = _plan(H100, power_limit_w=600, per_gpu={3: {"power_limit_w": 650}})
    assert ["nvidia-smi", "-i", "3", "-pl", "650"] in ok["commands_now"]


def test_unknown_gpu_index_refused():
    out = _plan(H200, per_gpu={4: {"persistence_mode": True}})
    assert not out["ok"] and "gpu_settings_per_gpu" in out["problems"][0]


def test_settings_already_in_place_change_nothing_but_stay_in_the_boot_unit():
    out = _plan(H200, persistence_mode=True, power_limit_w=700, ecc=True, compute_mode="DEFAULT",
                applications_clocks={"memory": 3201, "graphics": 1980})
    assert out["ok"], out["problems"]
    assert out["commands_now"] == []
    # ECC survives a reboot by itself (InfoROM): not in the boot unit.
    assert [c[3] for c in out["boot_commands"]] == ["-pm", "-pl", "-ac", "-c"]
    assert out["ecc_reboot"] is False


def test_ecc_change_is_pending_until_reboot():
    out = _plan(H200, ecc=False)
    assert out["ok"]
    assert out["commands_now"] == [["nvidia-smi", "-i", "0", "-e", "0"]]
    assert out["ecc_reboot"] is True and "reboot" in out["ecc_message"]
    assert out["boot_commands"] == []


def test_ecc_already_pending_is_not_set_again_but_still_waits_for_reboot():
    text = H200.replace("<pending_ecc>Enabled</pending_ecc>", "<pending_ecc>Disabled</pending_ecc>")
    out = _plan(text, ecc=False)
    assert out["commands_now"] == [] and out["ecc_reboot"] is True


def test_clock_checks():
    assert not _plan(H200, locked_clocks={"min": 500, "max": 2100})["ok"]
    assert "gpu_settings_locked_clocks" in _plan(H200, locked_clocks={"min": 1500, "max": 1000})["problems"][0]
    locked = _plan(H200, locked_clocks={"min": 1500, "max": 1980})
    assert locked["ok"] and locked["commands_now"] == []
    assert locked["locked_clocks_now"] == [["nvidia-smi", "-i", "0", "-lgc", "1500,1980"]]
    # XML: the supported pairs decide; text: Max Clocks do.
    bad = _plan(H200, applications_clocks={"memory": 2619, "graphics": 1980})
    assert "gpu_settings_applications_clocks" in bad["problems"][0] and "3201" in bad["problems"][0]
    assert not _plan(H100, applications_clocks={"memory": 2619, "graphics": 2000})["ok"]
    assert _plan(H100, applications_clocks={"memory": 2619, "graphics": 1755})["ok"]


@pytest.mark.parametrize("setting, value", [("persistence_mode", "yes"), ("compute_mode", "EXCLUSIVE_THREAD"),
                                            ("power_limit_w", "600W"), ("locked_clocks", [1, 2])])
def test_bad_values_refused_naming_the_variable(setting, value):
    out = _plan(H200, **{setting: value})
    assert not out["ok"] and out["problems"][0].startswith("gpu_settings_" + setting)


def test_unreadable_output_is_a_problem_not_a_crash():
    assert not gs.plan("", {}, data=DATA)["ok"]
    assert not gs.plan("<nvidia_smi_log", {}, data=DATA)["ok"]


# ---------------------------------------------------------------- MIG


@pytest.mark.parametrize("text, family", [(H200, "H200 141GB"), (H100, "H100 80GB"), (A100_80, "A100 80GB"),
                                          (A100_MIG, "A100 40GB"), (P100, None)])
def test_which_gpus_take_mig(text, family):
    known = gs.mig_profiles(gs.parse_smi(text)[0]["name"], DATA)
    assert (known or {}).get("name") == family


def _layout(devices, profiles, enabled=True):
    return {"version": "v1", "mig-configs": {"x": [{"devices": devices, "mig-enabled": enabled,
                                                    "mig-devices": profiles}]}}


def test_mig_layouts_the_gpu_takes():
    assert gs.mig_problems(_layout("all", {"1g.10gb": 7}), "x", H100, DATA) == []
    assert gs.mig_problems(_layout([0, 1], {"3g.40gb": 1, "4g.40gb": 1}), "x", H100, DATA) == []
    assert gs.mig_problems(_layout("all", {"3g.71gb": 2}), "x", H200, DATA) == []


@pytest.mark.parametrize("text, layout, words", [
    (H100, _layout("all", {"1g.18gb": 7}), "no MIG profile 1g.18gb"),      # an H200 profile on an H100
    (H200, _layout("all", {"4g.71gb": 2}), "at most 1 x 4g.71gb"),
    (H100, _layout("all", {"4g.40gb": 1, "3g.40gb": 1, "1g.10gb": 1}), "compute"),
    (P100, _layout("all", {"1g.10gb": 1}), "does not support MIG"),
    (H100, _layout([9], {"1g.10gb": 1}), "do not exist"),
])
def test_mig_layouts_the_gpu_cannot_take_are_refused(text, layout, words):
    problems = gs.mig_problems(layout, "x", text, DATA)
    assert problems and words in problems[0] and problems[0].startswith("gpu_settings_mig_config")


def _busy(text, pid="42"):
    return text.replace("<processes>", "<processes><process_info><pid>%s</pid></process_info>" % pid, 1)


def test_mig_refused_on_a_busy_gpu_and_unknown_layout():
    problem = gs.mig_problems(_layout("all", {"7g.141gb": 1}), "x", _busy(H200), DATA)[0]
    assert "idle GPU" in problem and "PID 42" in problem and "switching MIG mode on" in problem
    # how to drain: the command that lists the jobs and the services that hold the GPU
    assert "nvidia-smi --query-compute-apps" in problem and "nvidia-dcgm" in problem
    assert "no layout" in gs.mig_problems(_layout("all", {}), "other", H200, DATA)[0]


def test_mig_busy_gpu_refused_only_when_the_mode_switches():
    mig_on = _busy(A100_MIG, "7")               # the A100 capture runs with MIG enabled already
    assert gs.parse_smi(A100_MIG)[0]["mig"]["current"] is True
    # new instances on a GPU already in MIG mode: no reset, mig-parted itself handles busy instances
    assert gs.mig_problems(_layout("all", {"3g.20gb": 2}), "x", mig_on, DATA) == []
    # switching MIG off on that busy GPU resets it: refused
    problems = gs.mig_problems(_layout("all", {}, enabled=False), "x", mig_on, DATA)
    assert len(problems) == 1 and "switching MIG mode off" in problems[0] and "PID 7" in problems[0]
    # MIG off on an idle GPU that never had it: nothing to switch, nothing refused
    assert gs.mig_problems(_layout("all", {}, enabled=False), "x", _busy(P100), DATA) == []


def test_busy_gpu_read_from_the_text_output_too():
    assert [g["processes"] for g in gs.parse_smi(H100)] == [0] * 8          # the recording: "Processes : None"
    # GPU 0 running one job, in nvidia-smi -q's layout of a process (nvidia-smi(1), "Processes" section)
    busy = H100.replace("    Processes                             : None\n",
                        "    Processes\n        GPU instance ID                   : N/A\n"
                        "        Compute instance ID               : N/A\n"
                        "        Process ID                        : 4242\n"
                        "            Type                          : C\n"
                        "            Name                          : python3\n"
                        "            Used GPU Memory               : 1024 MiB\n", 1)
    gpus = gs.parse_smi(busy)
    assert (gpus[0]["processes"], gpus[0]["process_ids"]) == (1, ["4242"]) and gpus[1]["processes"] == 0
    problems = gs.mig_problems(_layout([0, 1], {"1g.10gb": 7}), "x", busy, DATA)
    assert len(problems) == 1 and "GPU 0" in problems[0] and "PID 4242" in problems[0]


def test_malformed_layouts_are_problems_not_crashes():
    bad = {"version": "v1", "mig-configs": {"x": "all-1g"}}
    assert "must be a list" in gs.mig_problems(bad, "x", H200, DATA)[0]
    bad = {"version": "v1", "mig-configs": {"x": ["all"]}}
    assert "must be a mapping" in gs.mig_problems(bad, "x", H200, DATA)[0]


SHA = "a" * 64


def test_mig_parted_from_the_release_of_the_data_version():
    install = gs.mig_parted_install(DATA, "x86_64", "", SHA)
    version = DATA["mig_parted"]["version"]
    assert install["problems"] == []
    assert install["deb"] == "nvidia-mig-manager_%s-1_amd64.deb" % version
    assert install["url"] == "https://github.com/NVIDIA/mig-parted/releases/download/v%s/%s" % (version, install["deb"])
    assert install["service"] == "nvidia-mig-manager.service" and install["package"] == "nvidia-mig-manager"
    # the package's own drop-in sorts before ours, so our MIG_PARTED_SELECTED_CONFIG wins (systemd.unit(5))
    assert install["package_dropin"].rsplit("/", 1)[0] == install["dropin"].rsplit("/", 1)[0]
    assert sorted([install["package_dropin"], install["dropin"]])[-1] == install["dropin"]
    assert gs.mig_parted_install(DATA, "aarch64", "", SHA)["deb"].endswith("_arm64.deb")


def test_mig_parted_from_a_mirror_keeps_its_file_name():
    install = gs.mig_parted_install(DATA, "x86_64", "http://mirror.example/mig/nvidia-mig-manager_0.15.0-1_amd64.deb",
                                    SHA.upper())
    assert install["problems"] == [] and install["sha256"] == SHA
    assert install["url"].startswith("http://mirror.example/") and install["deb"] == "nvidia-mig-manager_0.15.0-1_amd64.deb"


@pytest.mark.parametrize("arch, url, sha, words", [
    ("x86_64", "", "", "gpu_settings_mig_parted_sha256 must be"),
    ("x86_64", "", "abc", "gpu_settings_mig_parted_sha256 must be"),
    ("x86_64", "mirror.example/x.deb", SHA, "gpu_settings_mig_parted_url must be"),
    ("ppc64le", "", SHA, "not ppc64le"),
])
def test_mig_parted_install_refused_naming_the_variable(arch, url, sha, words):
    problems = gs.mig_parted_install(DATA, arch, url, sha)["problems"]
    assert len(problems) == 1 and words in problems[0]


def test_frozen_data_matches_shape_of_live_data():
    live = gs.load_data()
    assert set(live) == set(DATA)
    assert set(live["dcgm"]["packages"]) == set(DATA["dcgm"]["packages"])
