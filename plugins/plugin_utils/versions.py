# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The resolver's name for the collection's one version helper, ``module_utils/versions.py`` (re-exported)."""

from __future__ import annotations

from ansible_collections.dlbox.stack.plugins.module_utils.versions import (
    at_least,
    at_most,
    compare_versions,
    driver_branch_of,
    major_minor,
    major_of,
    parse_version,
    version_matches,
    version_tuple,
    year_month,
)

__all__ = ["parse_version", "version_tuple", "compare_versions", "at_least", "at_most", "version_matches",
           "driver_branch_of", "major_minor", "major_of", "year_month"]
