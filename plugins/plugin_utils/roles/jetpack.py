# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The jetpack role's vendor facts, from data/jetson.yml ``repository``: ``'jetpack' | dlbox.stack.role_module('vendor')``
-> ``{"url", "key_file", "fingerprint", "preinstalled_list"}`` (``preinstalled_list``: the sources list a flashed
JetPack has, written by nvidia-l4t-apt-source, which the role's preflight reads before it decides). The role's
decision is plugin_utils/jetpack_plan.py (``dlbox.stack.jetpack_plan``)."""

from __future__ import annotations

from ansible_collections.dlbox.stack.plugins.plugin_utils import jetpack_plan


def vendor(data_path=None):
    repo = jetpack_plan.load_jetson_data(data_path)["repository"]
    return {"url": repo["base_url"], "key_file": repo["key_file"], "fingerprint": repo["key_fingerprint"],
            "preinstalled_list": repo["preinstalled_list"]}
