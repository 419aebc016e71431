# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""After an apt failure the rollback puts the previous branch's pin back wherever the install wrote one (issue 48
red-team 7: it did so only for nvidia_repo, while Ubuntu's signed path writes a pin too, plugin_utils/nvidia_driver_kernel.py
finish(): the failed branch's pin stayed and kept the reinstalled branch's packages out)."""

from __future__ import annotations

import os

import yaml

from ansible_collections.dlbox.stack.plugins.plugin_utils import nvidia_driver_kernel as nk

TASKS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "roles", "nvidia_driver", "tasks")


def _tasks(name):
    with open(os.path.join(TASKS, name), encoding="utf-8") as handle:
        found = []
        for task in yaml.safe_load(handle):
            found.append(task)
            found += task.get("block") or []
        return found


def _task(name, title):
    return next(t for t in _tasks(name) if t.get("name") == title)


def test_the_rollback_puts_the_pin_back_wherever_the_install_wrote_one():
    wrote = _task("install.yml", "Pin the driver to its branch")
    back = _task("rollback.yml", "Put the previous branch's pin back")
    assert back["ansible.builtin.copy"]["content"] == "{{ __nvidia_driver_decided.rollback_pin }}"
    assert back["when"] == wrote["when"] == "__nvidia_driver_decided.pin is not none"


def test_the_signed_path_writes_a_pin():
    # the reason: the distribution's signed path pins too (nothing else writes that file on it)
    out = nk.finish({"set": {"signing": "precompiled", "packages": []}, "pin": None, "driver": {"branch": 580},
                     "family": ["*nvidia*"], "origins": {"ubuntu": "Ubuntu"}})
    assert out["pin"] and "Pin: version 580.*" in out["pin"]
