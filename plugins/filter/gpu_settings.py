# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gpu_settings role's decision is ``dlbox.stack.role_decide('gpu_settings', ...)`` (plugin_utils/roles/gpu_settings.py).

``gpu_settings_plan`` is no longer a public filter (issue 47: one filter reaches every role's decision); the function
stays for the tests written against it, and runs the same code as the role (``settings_plan``).
"""

from __future__ import annotations

from ansible_collections.dlbox.stack.plugins.plugin_utils.lazy_import import LazyModule

_role = LazyModule("plugin_utils.roles.gpu_settings")


def gpu_settings_plan(smi_text, request, mig_config=None, mig_selected="", mig_parted=None):
    """``nvidia-smi -q -x`` (or ``-q``) and the role's variables -> the plan (roles.gpu_settings.settings_plan)."""
    return _role.settings_plan(smi_text or "", dict(request or {}), mig_config=mig_config, mig_selected=mig_selected,
                               mig_parted=mig_parted)


class FilterModule(object):
    """No public filter: see dlbox.stack.role_decide."""

    def filters(self):
        return {}
