# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters ``dlbox.stack.gpu_settings_plan`` (with a MIG layout) and ``dlbox.stack.infiniband_report``: what the
gpu_settings and infiniband roles are given, on the recorded H200 XML and the recorded ibstat."""

from __future__ import annotations

from pathlib import Path

from retired_filters import gpu_settings_plan  # pylint: disable=import-error
from ansible_collections.dlbox.stack.plugins.filter.infiniband import infiniband_report

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"
H200 = (FIXTURES / "nvidia-smi" / "h200-driver-580-device.xml").read_text(encoding="utf-8")
IBSTAT = (FIXTURES / "server" / "ibstat-connectx4-initializing.txt").read_text(encoding="utf-8")
SHA = "b" * 64
LAYOUT = {"version": "v1", "mig-configs": {"two": [{"devices": "all", "mig-enabled": True,
                                                    "mig-devices": {"3g.71gb": 2}}]}}
POWER = {"gpu_settings_power_limit_w": 600}


def test_without_a_layout_no_mig_part():
    assert "mig" not in gpu_settings_plan(H200, POWER)


def test_layout_the_h200_takes_gives_where_mig_parted_comes_from():
    plan = gpu_settings_plan(H200, POWER, LAYOUT, "two", {"arch": "x86_64", "sha256": SHA})
    assert plan["ok"] and plan["commands_now"] == [["nvidia-smi", "-i", "0", "-pl", "600"]]
    assert plan["mig"]["selected"] == "two" and plan["mig"]["sha256"] == SHA
    assert plan["mig"]["url"].startswith("https://github.com/NVIDIA/mig-parted/releases/download/v")


def test_a_mig_problem_stops_the_settings_too():
    busy = H200.replace("<processes>", "<processes><process_info><pid>9</pid></process_info>", 1)
    plan = gpu_settings_plan(busy, POWER, LAYOUT, "two", {"sha256": SHA})
    assert not plan["ok"] and plan["commands_now"] == [] and plan["boot_commands"] == []
    assert len(plan["problems"]) == 1 and "PID 9" in plan["problems"][0]


def test_missing_checksum_is_a_problem():
    plan = gpu_settings_plan(H200, {}, LAYOUT, "two", {})
    assert not plan["ok"] and "gpu_settings_mig_parted_sha256" in plan["problems"][0]


def test_infiniband_report_filter():
    assert infiniband_report(IBSTAT, ["mlx5_0"])["down"] == ["mlx5_0/1"]
    assert infiniband_report(None, [])["present"] is False
