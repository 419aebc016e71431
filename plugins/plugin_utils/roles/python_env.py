# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The python_env role. needs(given, environments, run) -> {"apt": [...]}: its own apt packages (the planned
Pythons, their venv module, and for PyTorch the headers and a compiler: offline.python_env_apt, the role's rule) for
the environments python_env_plan decided; nothing where the role does not run or its plan is refused."""

from __future__ import annotations

from ansible_collections.dlbox.stack.plugins.plugin_utils import offline
from ansible_collections.dlbox.stack.plugins.plugin_utils.roles import _spec


def needs(given=None, environments=None, run=True):
    if not run or environments is None:
        return {"apt": []}
    opts = _spec.options("python_env", given)
    compilers = opts["python_env_compiler_packages"]
    return {"apt": offline.python_env_apt(environments, opts["python_env_interpreters"] or {},
                                          opts["python_env_install_python"], opts["python_env_install_build_tools"],
                                          ["g++"] if compilers is None else list(compilers))}
