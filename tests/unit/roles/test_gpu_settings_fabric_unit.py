# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fabric Manager's unit name in one place (issue 47, rt47 L3): data/compat.yml fabric_manager.service. The
gpu_settings boot unit is ordered after it; gpu_settings_after_units stays a user variable whose default takes the
name from the data (``('gpu_settings' | dlbox.stack.role_module('vendor')).fabric_manager_service``), rendered here by
Ansible's own templating."""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

from ansible_collections.dlbox.stack.plugins.plugin_utils.roles import gpu_settings
from play_runner import run_play  # tests/unit/roles/play_runner.py, beside this file

ROOT = Path(__file__).resolve().parents[3]
ROLE = ROOT / "roles" / "gpu_settings"
COMPAT = yaml.safe_load((ROOT / "data" / "compat.yml").read_text(encoding="utf-8"))


def test_the_vendor_entry_is_the_datas_unit():
    assert gpu_settings.vendor() == {"fabric_manager_service": COMPAT["fabric_manager"]["service"]}


def test_the_after_units_default_takes_fabric_managers_unit_from_the_data(tmp_path):
    default = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text(encoding="utf-8"))["gpu_settings_after_units"]
    spec = yaml.safe_load((ROLE / "meta" / "argument_specs.yml").read_text(encoding="utf-8"))
    assert spec["argument_specs"]["main"]["options"]["gpu_settings_after_units"]["default"] == default
    assert "nvidia-fabricmanager" not in default and "role_module('vendor')).fabric_manager_service" in default
    play = {"hosts": "all", "gather_facts": False, "vars": {"gpu_settings_after_units": default},
            "tasks": [{"name": "say", "ansible.builtin.debug": {"var": "gpu_settings_after_units"}}]}
    # the collection as this test imports it (a checkout or a copy: tools/dlboxdata's importable folder)
    base = next(p for p in sys.path if (Path(p) / "ansible_collections" / "dlbox" / "stack").resolve() == ROOT)
    proc, out = run_play(tmp_path, play, {"h1": {"ansible_connection": "local"}}, env={"ANSIBLE_COLLECTIONS_PATH": base})
    assert out is not None, proc.stderr
    rendered = out["plays"][0]["tasks"][0]["hosts"]["h1"]["gpu_settings_after_units"]
    assert rendered == ["systemd-modules-load.service", "nvidia-persistenced.service",
                        COMPAT["fabric_manager"]["service"], "nvidia-mig-manager.service"]
