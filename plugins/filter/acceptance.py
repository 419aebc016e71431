# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The all-reduce of an acceptance run judged against its topology's floor (playbooks/acceptance.yml)."""

from __future__ import annotations

import json

from ansible.errors import AnsibleFilterError

from ansible_collections.dlbox.stack.plugins.plugin_utils.lazy_import import LazyModule

allreduce = LazyModule("plugin_utils.acceptance_allreduce")


def acceptance_allreduce(report, measured, data_path=None):
    """``report`` of dlbox.stack.fitness_acceptance with the all-reduce judged against data/acceptance.yml's floors."""
    try:
        if isinstance(measured, str):
            measured = json.loads(measured)
        if not isinstance(report, dict) or not isinstance(measured, dict):
            raise ValueError("acceptance_allreduce expects the report of dlbox.stack.fitness_acceptance and the JSON of "
                             "dlbox-acceptance")
        return allreduce.apply(report, measured, allreduce.load_data(data_path))
    except ValueError as exc:
        raise AnsibleFilterError(str(exc)) from exc


class FilterModule(object):
    """dlbox.stack acceptance filters."""

    def filters(self):
        return {"acceptance_allreduce": acceptance_allreduce}
