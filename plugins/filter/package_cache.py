# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``dlbox.stack.package_cache_plan`` (deprecated: the role's module decides, plugin_utils/roles/package_cache.py;
the fleet cache's part that the common role writes is that module's ``client_apt`` entry)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.dlbox.stack.plugins.plugin_utils.lazy_import import LazyModule

_plan = LazyModule("plugin_utils.package_cache_plan")


def package_cache_plan(options):
    """Decide what the package_cache role does on this host (see plugin_utils.package_cache_plan). Deprecated
    (meta/runtime.yml, until 1.0.0): the role decides through ``'package_cache' | role_module('decide', ...)``."""
    if not isinstance(options, dict):
        raise AnsibleFilterError("package_cache_plan: expected the role's options as a mapping")
    return _plan.decide(dict(options))


class FilterModule(object):
    def filters(self):
        return {"package_cache_plan": package_cache_plan}
