# -*- coding: utf-8 -*-
# Copyright: dlbox.stack contributors
# Apache License 2.0 (see galaxy.yml)
"""Filter ``dlbox.stack.headers_meta_candidates``: headers meta packages that follow a kernel flavour."""

from __future__ import annotations

from ansible_collections.dlbox.stack.plugins.module_utils.kernel import headers_meta_candidates


class FilterModule(object):
    """dlbox.stack kernel filters."""

    def filters(self):
        return {"headers_meta_candidates": headers_meta_candidates}
