# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters ``dlbox.stack.package_cache_client_apt`` (the common role's part of the fleet cache) and
``dlbox.stack.package_cache_plan`` (deprecated: the role's module decides, plugin_utils/roles/package_cache.py)."""

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


def package_cache_client_apt(cache_host, inventory_hostname, fqdn="", mode="auto", apt_port=3142,
                             client_direct=("localhost", "127.0.0.1"), pypi_port=3141):
    """The fleet cache's part of this host's apt proxy and pip index, for the common role (their one writer):
    {proxy, direct, pip_index_url, pip_trusted_host} (see plugin_utils.package_cache_plan.client_apt)."""
    try:
        return _plan.client_apt(cache_host, inventory_hostname, fqdn or "", mode, apt_port, client_direct, pypi_port)
    except ValueError as exc:
        raise AnsibleFilterError("package_cache_client_apt: %s" % exc)


class FilterModule(object):
    def filters(self):
        return {"package_cache_plan": package_cache_plan, "package_cache_client_apt": package_cache_client_apt}
