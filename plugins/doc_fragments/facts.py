# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ``attributes:`` block every read-only facts module of dlbox.stack shares."""

from __future__ import annotations


class ModuleDocFragment(object):
    """``extends_documentation_fragment: [dlbox.stack.facts]`` in a module that only reads the host."""

    DOCUMENTATION = r"""
attributes:
  check_mode:
    support: full
    description: The module only reads; it behaves the same in check mode.
  diff_mode:
    support: none
    description: Nothing changes, so there is no diff.
"""
