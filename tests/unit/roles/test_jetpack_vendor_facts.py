# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The flashed JetPack's sources list path is a vendor fact of data/jetson.yml, reached through the jetpack role's
vendor entry ('jetpack' | dlbox.stack.role_module('vendor')), as docker's and the container toolkit's are (issue 47 red
team: roles/jetpack/vars/main.yml ran the whole jetpack_plan decision on an empty host to read it). Rendered by real
Ansible from the role's own vars/main.yml."""

from __future__ import annotations

from pathlib import Path

import yaml

from ansible_collections.dlbox.stack.plugins.plugin_utils.roles import call
from play_runner import run_play  # tests/unit/roles/play_runner.py, beside this file

ROOT = Path(__file__).resolve().parents[3]
VARS = yaml.safe_load((ROOT / "roles" / "jetpack" / "vars" / "main.yml").read_text(encoding="utf-8"))
DATA = yaml.safe_load((ROOT / "data" / "jetson.yml").read_text(encoding="utf-8"))["repository"]


def test_vendor_is_the_data():
    assert call("jetpack", "vendor") == {"url": DATA["base_url"], "key_file": DATA["key_file"],
                                         "fingerprint": DATA["key_fingerprint"],
                                         "preinstalled_list": DATA["preinstalled_list"]}
    assert "jetpack_plan" not in VARS["__jetpack_preinstalled_list"]          # no decision run to read a fact


def test_the_role_vars_render_the_data_path_and_its_copy_aside(tmp_path):
    play = {"hosts": "all", "gather_facts": False, "vars": VARS, "tasks": [
        {"name": "paths", "ansible.builtin.debug": {"msg": "{{ [__jetpack_preinstalled_list, __jetpack_preinstalled_aside] }}"}}]}
    proc, out = run_play(tmp_path, play, {"h": {"ansible_connection": "local",
                                                "ansible_python_interpreter": "{{ ansible_playbook_python }}"}})
    assert out is not None, proc.stderr
    got = out["plays"][0]["tasks"][0]["hosts"]["h"]
    assert not got.get("failed"), got
    name = Path(DATA["preinstalled_list"]).name
    assert got["msg"] == [DATA["preinstalled_list"], "%s/%s" % (VARS["__jetpack_divert_dir"], name)]
