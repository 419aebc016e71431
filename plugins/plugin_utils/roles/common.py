# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The common role. needs(given) -> {"apt": common_packages + common_extra_packages} (the role's options
from its argument specs with the inventory's values on top); its own entry proxy(...) -> the proxy's settings, what
its tasks (tasks/proxy.yml) set and clear in apt's proxy file, /etc/environment and /etc/pip.conf."""

from __future__ import annotations

import re

from ansible_collections.dlbox.stack.plugins.plugin_utils.roles import _spec


def needs(given=None):
    opts = _spec.options("common", given)
    return {"apt": list(opts["common_packages"] or []) + list(opts["common_extra_packages"] or [])}


def _configured(before):
    """What an earlier run wrote into the apt proxy file (its text, or None where there is none): its
    "// http_proxy:" records, else (files of earlier versions) its Acquire lines; no_proxy from its record only."""
    text = before or ""

    def first(*patterns):
        found = [value for pattern in patterns for value in re.findall(pattern, text, flags=re.M)]
        return (found + [""])[0]

    return {"http": first(r'^// http_proxy: (.*)$', r'^Acquire::http::Proxy "([^"]+)";$'),
            "https": first(r'^// https_proxy: (.*)$', r'^Acquire::https::Proxy "([^"]+)";$'),
            "no_proxy": first(r'^// no_proxy: (.*)$')}


def proxy(http_proxy, https_proxy, no_proxy, apt_proxy, pip_index_url, cache, before=None):
    """The proxy's settings for one host, what to set and what to clear (roles/common/tasks/proxy.yml wires it).

    ``http_proxy``, ``https_proxy``, ``no_proxy``, ``apt_proxy``, ``pip_index_url``: the role's common_* values
    ("" for none); ``cache``: package_cache's ``client_apt`` for this host ({proxy, pip_index_url, pip_trusted_host,
    ...}); ``before``: the text of the apt proxy file an earlier run wrote (/etc/apt/apt.conf.d/80dlbox-proxy), None
    where there is none. Returns:

    - ``configured``: what the earlier run configured ({http, https, no_proxy}, "" for none);
    - ``apt_file``: ``write`` (any proxy, apt's own or the fleet cache's), ``remove`` (none, and the file is there)
      or ``keep`` (none, and no file);
    - ``environment_set``: /etc/environment's lines to set (name -> value: each proxy set, both spellings; no_proxy
      with either proxy); ``environment_clear``: those to remove (name -> the value an earlier run wrote, for a
      proxy cleared now; no_proxy when both are) - flat keys, as ``clear`` would be a dict's method in Jinja;
    - ``pip_proxy``: pip's proxy, https's where set, else http's ("" for none); ``pip_proxy_clear``: with no proxy
      now, the one an earlier run wrote (https's, else http's), else "";
    - ``pip_index_url``: the fleet cache's index, else ``pip_index_url`` ("" for pip's own);
      ``pip_trusted_host``: the cache's host (its index is plain HTTP), else "".
    """
    old = _configured(before)
    cache = cache or {}
    proxied = http_proxy != "" or https_proxy != ""
    env_set, env_clear = {}, {}
    if http_proxy != "":
        env_set.update(http_proxy=http_proxy, HTTP_PROXY=http_proxy)
    if https_proxy != "":
        env_set.update(https_proxy=https_proxy, HTTPS_PROXY=https_proxy)
    if proxied:
        env_set.update(no_proxy=no_proxy, NO_PROXY=no_proxy)
    if http_proxy == "" and old["http"] != "":
        env_clear.update(http_proxy=old["http"], HTTP_PROXY=old["http"])
    if https_proxy == "" and old["https"] != "":
        env_clear.update(https_proxy=old["https"], HTTPS_PROXY=old["https"])
    if not proxied and old["no_proxy"] != "":
        env_clear.update(no_proxy=old["no_proxy"], NO_PROXY=old["no_proxy"])
    if proxied or apt_proxy != "" or cache.get("proxy", "") != "":
        apt_file = "write"
    else:
        apt_file = "remove" if before is not None else "keep"
    cache_index = cache.get("pip_index_url", "")
    return {
        "configured": old,
        "apt_file": apt_file,
        "environment_set": env_set,
        "environment_clear": env_clear,
        "pip_proxy": (https_proxy if https_proxy != "" else http_proxy) if proxied else "",
        "pip_proxy_clear": "" if proxied else (old["https"] if old["https"] != "" else old["http"]),
        "pip_index_url": cache_index if cache_index != "" else pip_index_url,
        "pip_trusted_host": cache.get("pip_trusted_host", ""),
    }
