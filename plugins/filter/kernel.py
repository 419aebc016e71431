# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters ``dlbox.stack.headers_meta_candidates`` (headers meta packages that follow a kernel flavour) and
``dlbox.stack.apt_policy_candidates`` (``apt-cache policy`` of several names: what apt would install of each)."""

from __future__ import annotations

from ansible_collections.dlbox.stack.plugins.module_utils.kernel import headers_meta_candidates, policy_candidates


class FilterModule(object):
    """dlbox.stack kernel filters."""

    def filters(self):
        return {"headers_meta_candidates": headers_meta_candidates, "apt_policy_candidates": policy_candidates}
