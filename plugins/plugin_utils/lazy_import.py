# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Modules the filter plugins import on first use, not when Ansible loads the filter file.

To find ``dlbox.stack.<name>``, Ansible imports every file of ``plugins/filter/`` in turn until one defines the
filter, and it does so again in every worker process (each task of each host). A filter file that imported the
resolver, the data loader and the role decisions at load time made every host pay for all of them in every
task that used any dlbox.stack filter. With ``LazyModule`` a filter file costs almost nothing to load; the
filter that runs imports what it needs.
"""

from __future__ import annotations

import importlib

PACKAGE = "ansible_collections.dlbox.stack.plugins."


class LazyModule(object):
    """``LazyModule("plugin_utils.role_plan")``: that module of this collection, imported on first attribute use."""

    def __init__(self, name):
        object.__setattr__(self, "_lazy_name", PACKAGE + name)

    def __getattr__(self, attr):
        return getattr(importlib.import_module(object.__getattribute__(self, "_lazy_name")), attr)

    def __repr__(self):
        return "<lazy module %s>" % object.__getattribute__(self, "_lazy_name")
