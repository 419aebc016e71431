# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The common role. needs(given) -> {"apt": common_packages + common_extra_packages} (the role's options
from its argument specs with the inventory's values on top)."""

from __future__ import annotations

from ansible_collections.dlbox.stack.plugins.plugin_utils.roles import _spec


def needs(given=None):
    opts = _spec.options("common", given)
    return {"apt": list(opts["common_packages"] or []) + list(opts["common_extra_packages"] or [])}
