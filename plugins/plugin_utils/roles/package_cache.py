# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The package_cache role's module (filter ``dlbox.stack.role_module``; issue 47).

- ``options(given)``: the role's variables, defaults from its argument specs (typed).
- ``decide(plan, options, facts)``: ``facts`` = {"inventory_hostname", "fqdn": ``ansible_facts['fqdn']``} ->
  :func:`package_cache_plan.decide`'s result: this host's part (server, client, none), apt-cacher-ng's and proxpi's
  files on the cache host, the apt proxy and pip index of a client; or the variables that cannot work.
  With ``apt`` (the cache host's packages: apt-cacher-ng, the venv's) and ``pip`` (proxpi's,
  ``package_cache_pypi_packages``), both empty on any other host or for a refused decision.
- ``needs(decision)``: {"apt", "pip"}.
- ``client_apt(cache_host, inventory_hostname, fqdn, mode, apt_port, client_direct, pypi_port)``, the role's own
  entry: the fleet cache's part of a host's apt proxy and pip index ({proxy, direct, pip_index_url, pip_trusted_host},
  :func:`package_cache_plan.client_apt`), which the common role writes (its tasks/proxy.yml, the one writer).

The deprecated filter ``dlbox.stack.package_cache_plan`` reaches the same :func:`package_cache_plan.decide`.
"""

from __future__ import annotations

from ansible_collections.dlbox.stack.plugins.plugin_utils import package_cache_plan
from ansible_collections.dlbox.stack.plugins.plugin_utils.roles import RoleModuleError, _spec

ROLE = "package_cache"
# package_cache_plan's option keys from the role's variables (the host's names are facts)
OPTIONS = {"cache_host": "package_cache_host", "mode": "package_cache_mode", "apt_port": "package_cache_apt_port",
           "pypi_port": "package_cache_pypi_port", "bind_address": "package_cache_bind_address",
           "upstream_proxy": "package_cache_upstream_proxy", "apt_upstream_proxy": "package_cache_apt_upstream_proxy",
           "apt_backends": "package_cache_apt_backends", "apt_remaps": "package_cache_apt_remaps",
           "pypi_upstream": "package_cache_pypi_upstream", "pypi_packages": "package_cache_pypi_packages",
           "venv": "package_cache_pypi_venv", "pypi_cache_size_gb": "package_cache_pypi_cache_size_gb",
           "pypi_index_ttl": "package_cache_pypi_index_ttl", "pypi_log_level": "package_cache_pypi_log_level",
           "client_direct": "package_cache_client_direct"}
# Debian's and Ubuntu's packages the cache host installs: the cache, the venv proxpi lives in, and python3-packaging
# (ansible.builtin.pip needs it on the host's Python)
SERVER_APT = ("apt-cacher-ng", "python3-venv", "python3-packaging")


def options(given=None):
    return _spec.typed(ROLE, given)


def decide(plan, options, facts):  # pylint: disable=unused-argument,redefined-outer-name
    """The plan is not read: the cache's part follows the variables and the host's names."""
    request = {key: options[name] for key, name in OPTIONS.items()}
    request.update(inventory_hostname=facts.get("inventory_hostname"), fqdn=facts.get("fqdn") or "")
    out = package_cache_plan.decide(request)
    # what the cache host installs (its apt packages, proxpi's into the venv)
    served = out["ok"] and out["mode"] == "server"
    out["apt"] = list(SERVER_APT) if served else []
    out["pip"] = list(request["pypi_packages"]) if served else []
    return out


def needs(decision):
    """Nothing for a refused decision or a host that is not the cache."""
    return {"apt": list(decision["apt"]), "pip": list(decision["pip"])}


def client_apt(cache_host, inventory_hostname, fqdn="", mode="auto", apt_port=3142,
               client_direct=("localhost", "127.0.0.1"), pypi_port=3141):
    """The fleet cache's part of this host's apt proxy and pip index: {proxy, direct, pip_index_url,
    pip_trusted_host}."""
    try:
        return package_cache_plan.client_apt(cache_host, inventory_hostname, fqdn or "", mode, apt_port, client_direct,
                                             pypi_port)
    except ValueError as exc:
        raise RoleModuleError("role_module(package_cache, client_apt): %s" % exc) from exc
