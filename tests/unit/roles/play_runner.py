# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One real ansible-playbook run of a play over an inventory of local hosts, for the tests that run a role's task file
with real Ansible: writes play.yml and hosts.yml under ``tmp_path``, runs the venv's ansible-playbook with the JSON
callback (``--check`` when asked) and returns (the process, its JSON output or None when it printed none)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml


def run_play(tmp_path, play, hostvars, check=False, env=None):
    """``play``: one play (a dict); ``hostvars``: host name -> its variables; ``env``: more environment."""
    (tmp_path / "play.yml").write_text(yaml.safe_dump([play]), encoding="utf-8")
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump({"all": {"hosts": hostvars}}), encoding="utf-8")
    environ = dict(os.environ, ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json", ANSIBLE_NOCOLOR="1",
                   ANSIBLE_HOME=str(tmp_path / "ansible-home"), ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-tmp"), **(env or {}))
    argv = [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(tmp_path / "hosts.yml"), str(tmp_path / "play.yml")]
    proc = subprocess.run(argv + (["--check"] if check else []), capture_output=True, text=True, env=environ, timeout=300,
                          check=False)
    out = json.loads(proc.stdout[proc.stdout.index("{"):]) if "{" in proc.stdout else None
    return proc, out
