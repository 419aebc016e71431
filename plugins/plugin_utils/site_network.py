# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How the site reaches the internet: the checks of ``dlbox_site_proxy`` and ``dlbox_site_mirrors`` (pure).

The site variables are set once (README, "Site network: proxy, CA, mirrors"); every role's own variable defaults
to them. ``problems`` returns one sentence per mistake, each naming the variable and what would work, so a
role's preflight refuses before anything changes.
"""

from __future__ import annotations

import re

# The keys of dlbox_site_proxy and what each one is.
PROXY_KEYS = {
    "http": "proxy for http:// downloads (apt, pip, shells, dockerd, docker build)",
    "https": "proxy for https:// downloads",
    "no_proxy": "comma-separated hosts or domains that bypass the proxy",
    "apt": "proxy for apt's http:// sources only (an apt cache such as apt-cacher-ng)",
}
# The keys of dlbox_site_mirrors. The upstream root each one replaces is a vendor fact: data/repositories.yml
# (data/jetson.yml for jetson), read by site_roots().
MIRROR_KEYS = ("cuda", "container_toolkit", "jetson", "docker", "pytorch_index", "pypi")


def site_roots():
    """{mirror key: the vendor root it replaces}, from data/ (plugin_utils/roles/_vendor.py)."""
    # pylint: disable-next=import-outside-toplevel
    from ansible_collections.dlbox.stack.plugins.plugin_utils.roles import _vendor

    return _vendor.site_roots()


_PROXY_URL = re.compile(r"^https?://[^\s/@]+(@[^\s/@]+)?(:[0-9]{1,5})?/?$")
_MIRROR_URL = re.compile(r"^(https?://[^\s/]+|file://)(/[^\s]*)?$")
_NO_PROXY_ITEM = re.compile(r"^\*?\.?[A-Za-z0-9_.:\-\[\]/]+$")


def _mapping(value, name, keys, out):
    if value is None:
        return {}
    if not isinstance(value, dict):
        out.append("%s must be a mapping with keys %s; got %s." % (name, ", ".join(keys), type(value).__name__))
        return {}
    unknown = sorted(str(k) for k in value if k not in keys)
    if unknown:
        out.append("%s has unknown keys %s; the keys are %s." % (name, ", ".join(unknown), ", ".join(keys)))
    return value


def proxy_problems(proxy, name="dlbox_site_proxy"):
    """Sentences about ``proxy`` ({http, https, no_proxy, apt}); empty when it is fine or None."""
    out = []
    proxy = _mapping(proxy, name, PROXY_KEYS, out)
    for key in ("http", "https", "apt"):
        value = proxy.get(key)
        if value in (None, ""):
            continue
        if not isinstance(value, str) or not _PROXY_URL.match(value):
            out.append("%s.%s must be empty or a proxy URL such as http://proxy.lab.example:3128 (%s); got %r."
                       % (name, key, PROXY_KEYS[key], value))
    no_proxy = proxy.get("no_proxy")
    if no_proxy not in (None, ""):
        items = [i.strip() for i in no_proxy.split(",")] if isinstance(no_proxy, str) else None
        bad = [i for i in items or [] if i and ("://" in i or not _NO_PROXY_ITEM.match(i))]
        if items is None or bad:
            out.append("%s.no_proxy must be comma-separated host names, domains (.lab.example) or addresses, "
                       "without a scheme, such as 'localhost,127.0.0.1,.lab.example'; got %r." % (name, no_proxy))
    return out


def mirror_problems(mirrors, name="dlbox_site_mirrors"):
    """Sentences about ``mirrors`` ({cuda, container_toolkit, jetson, docker, pytorch_index, pypi})."""
    out = []
    mirrors = _mapping(mirrors, name, MIRROR_KEYS, out)
    for key in MIRROR_KEYS:
        value = mirrors.get(key)
        if value in (None, ""):
            continue
        if not isinstance(value, str) or not _MIRROR_URL.match(value):
            out.append("%s.%s must be empty or an http://, https:// or file:/// URL that stands in for %s; got %r."
                       % (name, key, site_roots().get(key, key), value))
    return out


def problems(proxy=None, mirrors=None):
    """All sentences about the site's proxy and mirror variables."""
    return proxy_problems(proxy) + mirror_problems(mirrors)
