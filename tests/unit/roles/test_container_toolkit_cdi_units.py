# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The NVIDIA Container Toolkit's CDI refresh units (nvidia-cdi-refresh.path / .service, from 1.18) are a vendor fact
in one place (issue 47, rt47 L3): data/compat.yml container_toolkit.cdi_refresh_units, with its source, handed to the
role's tasks by its decision (vars/main.yml reads the decision); no YAML of the role names them."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from ansible_collections.dlbox.stack.plugins.plugin_utils.roles import nvidia_container_toolkit as nct

ROOT = Path(__file__).resolve().parents[3]
ROLE = ROOT / "roles" / "nvidia_container_toolkit"
COMPAT = ROOT / "data" / "compat.yml"
PLAN = {"stack": {"container_toolkit": {"version": "1.18.2", "min_version": "1.18.1"}}}
UNIT = re.compile(r"nvidia-cdi-refresh\.(path|service)")


def test_the_units_are_the_datas_with_its_source():
    entry = yaml.safe_load(COMPAT.read_text(encoding="utf-8"))["container_toolkit"]
    assert entry["cdi_refresh_units"] == ["nvidia-cdi-refresh.path", "nvidia-cdi-refresh.service"]
    assert "cdi-support.html" in entry["cdi_refresh_units_source"]
    assert nct.decide(PLAN, nct.options({}), {"host": {}})["cdi_units"] == entry["cdi_refresh_units"]


def test_the_decision_follows_the_data(tmp_path):
    text = COMPAT.read_text(encoding="utf-8").replace(
        "cdi_refresh_units: [nvidia-cdi-refresh.path, nvidia-cdi-refresh.service]",
        "cdi_refresh_units: [nvidia-cdi-refresh.path, nvidia-cdi-refresh-next.service]")
    assert "nvidia-cdi-refresh-next.service" in text
    (tmp_path / "compat.yml").write_text(text, encoding="utf-8")
    got = nct.decide(PLAN, nct.options({}), {"host": {}}, data_path=str(tmp_path / "compat.yml"))
    assert got["cdi_units"] == ["nvidia-cdi-refresh.path", "nvidia-cdi-refresh-next.service"]


def test_no_yaml_of_the_role_names_the_units():
    found = []
    for path in sorted(ROLE.glob("*/*.yml")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if UNIT.search(line.split("#", 1)[0]):
                found.append("%s:%d %s" % (path.relative_to(ROOT), number, line.strip()))
    assert found == []
    assert yaml.safe_load((ROLE / "vars" / "main.yml").read_text(encoding="utf-8"))[
        "__nvidia_container_toolkit_cdi_units"] == "{{ __nvidia_container_toolkit_decision.cdi_units }}"
