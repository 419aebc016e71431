# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``dlbox.stack.role_decide``: ``dlbox.stack.role_module``'s ``decide`` entry under the name the roles' tasks use
(``'cuda' | role_decide(plan, options, facts)`` is ``'cuda' | role_module('decide', plan=..., given=..., facts=...)``)."""

from __future__ import annotations

from ansible_collections.dlbox.stack.plugins.filter.role_module import role_module


def role_decide(role, plan=None, options=None, facts=None):
    """``'docker' | dlbox.stack.role_decide(dlbox_plan | default(none), options, facts)`` -> the decision."""
    return role_module(role, "decide", plan=plan, given=options, facts=facts)


class FilterModule(object):
    """dlbox.stack role_decide filter (an alias)."""

    def filters(self):
        return {"role_decide": role_decide}
