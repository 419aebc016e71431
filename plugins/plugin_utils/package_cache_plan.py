# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the ``package_cache`` role does on one host, decided on the controller (pure).

One group variable, ``dlbox_package_cache_host`` (the cache host's name or address as the other hosts reach it),
says where the fleet's cache is. :func:`decide` turns it and the role's variables into one result for this host:

- ``mode``: ``server`` (this host runs the cache: Debian's ``apt-cacher-ng`` and proxpi in a venv), ``client``
  (apt's HTTP proxy and pip's index point at the cache host) or ``none`` (no cache named: the role does nothing);
- for a server, the whole text of apt-cacher-ng's extra configuration file, of its backend files and of proxpi's
  systemd unit;
- for a client, apt's HTTP proxy and the hosts apt reaches directly, and pip's ``index-url``/``trusted-host``
  (:func:`client_apt`: the common role is their one writer, in its apt proxy file
  /etc/apt/apt.conf.d/80dlbox-proxy and in /etc/pip.conf, README "Site network");
- ``mirrors``: for each HTTPS vendor repository remapped by the cache, the plain-HTTP base URL a client's
  repository (mirror) variable takes instead of the vendor's URL. apt still checks the vendor's signature with
  the key the vendor role pins by fingerprint: the cache only stores what the vendor signed.

Every refusal names the variable and says what would work.
"""

from __future__ import annotations

import re

from ansible_collections.dlbox.stack.plugins.plugin_utils.roles import _spec

# The argument spec's choices, the one place they live (issue 47).
MODES = _spec.choices("package_cache", "package_cache_mode")
LOG_LEVELS = _spec.choices("package_cache", "package_cache_pypi_log_level")
_HOST = re.compile(r"^(?:[A-Za-z0-9](?:[A-Za-z0-9_.-]*[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\])$")
_URL = re.compile(r"^(https?)://[^\s/;]+(/[^\s;]*)?$")
_NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,30}$")
_REQUIREMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(\[[A-Za-z0-9_,.-]+\])?(==|>=|<=|~=|!=|<|>)?[A-Za-z0-9.*+!_-]*$")
UNIT_NAME = "dlbox-proxpi.service"
# gunicorn's access log: client, end time, request, status, bytes, duration in microseconds (systemd needs %% for %)
ACCESS_LOG_FORMAT = "'%%(h)s %%(t)s \"%%(r)s\" %%(s)s %%(B)s %%(D)s'"
# Where the clients' apt proxy was written before the common role became its one writer (removed there on its run).
OLD_APT_CLIENT_FILE = "/etc/apt/apt.conf.d/90dlbox-package-cache"
ACNG_CONF_FILE = "/etc/apt-cacher-ng/zz_dlbox.conf"
# Larger than any start time to come (a 32-bit int, the option's type): freeze detection off (acng_conf).
ACNG_FREEZE_DETECT_OFF = 2147483647


def _url(value, schemes=("http", "https")):
    match = _URL.match(value) if isinstance(value, str) else None
    return bool(match) and match.group(1) in schemes


def _int(value, low, high):
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def _host_url(host, port, path=""):
    return "http://%s:%d%s" % (host, port, path)


def _check(opts):
    """The refusals, one sentence each naming the variable."""
    errors = []
    host = opts.get("cache_host", "")
    if not isinstance(host, str) or (host and not _HOST.match(host)):
        errors.append("package_cache_host (dlbox_package_cache_host) must be the cache host's name or address as the other hosts reach it "
                      "(cache1.lab, 10.0.0.5, [fd00::5]) or '' for no cache; got %r" % (host,))
    mode = opts.get("mode", "auto")
    if mode not in MODES:
        errors.append("package_cache_mode must be one of %s; got %r" % (", ".join(MODES), mode))
    elif mode in ("server", "client") and not host:
        errors.append("package_cache_mode %s needs package_cache_host (dlbox_package_cache_host: the cache host's name or address as the "
                      "other hosts reach it)" % mode)
    ports = {}
    for key, var in (("apt_port", "package_cache_apt_port"), ("pypi_port", "package_cache_pypi_port")):
        if not _int(opts.get(key), 1, 65535):
            errors.append("%s must be a TCP port number (1-65535); got %r" % (var, opts.get(key)))
        else:
            ports[key] = opts[key]
    if len(ports) == 2 and ports["apt_port"] == ports["pypi_port"]:
        errors.append("package_cache_apt_port and package_cache_pypi_port must differ; both are %d" % ports["apt_port"])
    bind = opts.get("bind_address", "0.0.0.0")
    if not isinstance(bind, str) or not re.match(r"^[0-9A-Fa-f:.]+$", bind):
        errors.append("package_cache_bind_address must be an IP address to listen on (0.0.0.0 for every one); got %r"
                      % (bind,))
    proxy = opts.get("upstream_proxy", "")
    if proxy and not _url(proxy, ("http",)):
        errors.append("package_cache_upstream_proxy must be '' (direct) or an http:// proxy URL such as "
                      "http://proxy.lab:3128; got %r" % (proxy,))
    apt_proxy = opts.get("apt_upstream_proxy", "")
    if apt_proxy and not _url(apt_proxy, ("http",)):
        errors.append("package_cache_apt_upstream_proxy must be '' (package_cache_upstream_proxy) or an http:// proxy "
                      "URL such as http://apt-cache.site:3142; got %r" % (apt_proxy,))
    own = [_host_url(host, opts[key]) for key in ("apt_port", "pypi_port") if key in ports] if host else []
    for var, value in (("package_cache_upstream_proxy", proxy), ("package_cache_apt_upstream_proxy", apt_proxy),
                       ("package_cache_pypi_upstream", opts.get("pypi_upstream", ""))):
        if isinstance(value, str) and any(value.rstrip("/").startswith(url) for url in own):
            errors.append("%s points at the cache itself (%s): the cache would ask itself; name the site's proxy, "
                          "mirror or PyPI instead" % (var, value))
    if not _url(opts.get("pypi_upstream", ""), ("http", "https")) or not str(opts.get("pypi_upstream")).endswith("/"):
        errors.append("package_cache_pypi_upstream must be a simple-index URL ending in '/' such as "
                      "https://pypi.org/simple/; got %r" % (opts.get("pypi_upstream"),))
    if not _int(opts.get("pypi_cache_size_gb"), 1, 100000):
        errors.append("package_cache_pypi_cache_size_gb must be a whole number of GB (at least 1); got %r"
                      % (opts.get("pypi_cache_size_gb"),))
    if not _int(opts.get("pypi_index_ttl"), 0, 10 ** 7):
        errors.append("package_cache_pypi_index_ttl must be seconds (0 or more); got %r" % (opts.get("pypi_index_ttl"),))
    if opts.get("pypi_log_level") not in LOG_LEVELS:
        errors.append("package_cache_pypi_log_level must be one of %s; got %r"
                      % (", ".join(LOG_LEVELS), opts.get("pypi_log_level")))
    packages = opts.get("pypi_packages")
    if not isinstance(packages, list) or not packages or not all(
            isinstance(p, str) and _REQUIREMENT.match(p) for p in packages):
        errors.append("package_cache_pypi_packages must be a list of pip requirements such as "
                      "['proxpi==1.3.1', 'gunicorn==23.0.0']; got %r" % (packages,))
    backends = opts.get("apt_backends")
    if not isinstance(backends, dict) or not all(
            isinstance(k, str) and re.match(r"^[a-z][a-z0-9]*$", k) and isinstance(v, list) and v
            and all(_url(u) and u.endswith("/") for u in v) for k, v in backends.items()):
        errors.append("package_cache_apt_backends must map a distribution backend name (debian, ubuntu) to a list of "
                      "mirror URLs ending in '/', e.g. {debian: ['http://deb.debian.org/debian/']}; got %r" % (backends,))
    remaps = opts.get("apt_remaps")
    names = set()
    if not isinstance(remaps, list):
        errors.append("package_cache_apt_remaps must be a list of {name, url}; got %r" % (remaps,))
        remaps = []
    for index, item in enumerate(remaps):
        ok = isinstance(item, dict) and set(item) == {"name", "url"} and isinstance(item["name"], str) \
            and _NAME.match(item["name"]) and _url(item["url"]) and item["url"].endswith("/")
        if not ok:
            errors.append("package_cache_apt_remaps[%d] must be {name: <lowercase letters, digits, '-'>, url: <the "
                          "repository's base URL ending in '/'>}, e.g. {name: nvidia-cuda, url: "
                          "'https://developer.download.nvidia.com/compute/cuda/repos/'}; got %r" % (index, item))
        elif item["name"] in names:
            errors.append("package_cache_apt_remaps: the name %r is given twice" % item["name"])
        else:
            names.add(item["name"])
    direct = opts.get("client_direct")
    if not isinstance(direct, list) or not all(isinstance(h, str) and _HOST.match(h) for h in direct):
        errors.append("package_cache_client_direct must be a list of host names or addresses apt fetches from "
                      "directly (e.g. ['localhost', '127.0.0.1']); got %r" % (direct,))
    return errors


def _mode(opts):
    mode = opts.get("mode", "auto")
    host = opts.get("cache_host", "")
    if mode != "auto":
        return mode
    if not host:
        return "none"
    return "server" if host in (opts.get("inventory_hostname"), opts.get("fqdn")) else "client"


def acng_conf(opts):
    """apt-cacher-ng's extra configuration file (read after the package's acng.conf: the later value wins)."""
    lines = [
        "# Written by dlbox.stack.package_cache: apt-cacher-ng for the fleet (clients set dlbox_package_cache_host).",
        "Port: %d" % opts["apt_port"],
        "BindAddress: %s" % opts["bind_address"],
        # one line a transfer in apt-cacher.log: |I| bytes fetched upstream, |O| bytes served, with the client
        "VerboseLog: 1",
        # Concurrent requests for the same index (a batch of hosts refreshing their lists at once) must share one
        # download. apt-cacher-ng 3.7.4 (Debian 12) moves a volatile file's item "out of the way" when
        # now > its download's start + ResponseFreezeDetectTime, and an item whose download has not started yet has
        # start 0: each concurrent request for an InRelease displaced the one before, to <path>.<seconds>; two in the
        # same second collide (link: errno File exists, "Failure to move file ... out of the way"), answered 503 "Error
        # creating file item", and the displaced transfers were cut. Source: apt-cacher-ng's own code (upstream, as
        # mirrored in shramov/apt-cacher-ng): src/acregistry.cc TFileItemRegistry::Create, "makeWay = now >
        # (fi->m_nTimeDlStarted + cfg::stucksecs)", the new name fi->m_sPathRel + "." + ltos(now), link() failing with
        # the USRERR above; src/fileitem.h "time_t m_nTimeDlStarted = 0"; the option ResponseFreezeDetectTime is
        # cfg::stucksecs (its configuration table).
        # 12 clients x 6 rounds at one InRelease (2026-12-06, tests: docs/fleet.md): 19 of 72 answered 503 and 4 cut
        # with the package's setting, 72 of 72 whole with this one. The cost: an item held by a client for more than
        # this time is never re-downloaded under it (upstream transfers are still bounded by NetworkTimeout).
        "ResponseFreezeDetectTime: %d" % ACNG_FREEZE_DETECT_OFF,
    ]
    if opts.get("apt_upstream_proxy") or opts.get("upstream_proxy"):
        lines.append("Proxy: %s" % (opts.get("apt_upstream_proxy") or opts["upstream_proxy"]))
        # no HTTP pipelining through a proxy: behind another apt-cacher-ng, pipelined downloads failed with
        # "503 Connection closed, check DlMaxRetries" after the first few files; one request at a time did not
        lines.append("PipelineDepth: 1")
    for item in opts["apt_remaps"]:
        # /<name> on the cache is the HTTPS repository: clients use http://<cache>:<port>/<name>/ as its base URL
        lines.append("Remap-dlbox%s: /%s ; %s" % (item["name"].replace("-", ""), item["name"], item["url"]))
    return "\n".join(lines) + "\n"


def proxpi_unit(opts, venv):
    """proxpi's systemd unit: gunicorn in the venv, the cache in /var/cache/dlbox-proxpi, its log in the journal,
    the access log in /var/log/dlbox-package-cache."""
    env = {
        "PROXPI_INDEX_URL": opts["pypi_upstream"],
        "PROXPI_CACHE_DIR": "/var/cache/dlbox-proxpi",
        "PROXPI_CACHE_SIZE": str(opts["pypi_cache_size_gb"] * 10 ** 9),
        "PROXPI_INDEX_TTL": str(opts["pypi_index_ttl"]),
        "PROXPI_DOWNLOAD_TIMEOUT": "1800",
        "PROXPI_LOGGING_LEVEL": opts["pypi_log_level"],
        "REQUESTS_CA_BUNDLE": "/etc/ssl/certs/ca-certificates.crt",
    }
    if opts.get("upstream_proxy"):
        env.update({"HTTP_PROXY": opts["upstream_proxy"], "HTTPS_PROXY": opts["upstream_proxy"],
                    "NO_PROXY": "localhost,127.0.0.1"})
    bind = opts["bind_address"]
    bind = "[%s]" % bind if ":" in bind else bind
    lines = [
        "# Written by dlbox.stack.package_cache: proxpi, the fleet's PyPI cache.",
        "[Unit]",
        "Description=proxpi PyPI cache (dlbox.stack.package_cache)",
        "After=network-online.target",
        "Wants=network-online.target",
        "",
        "[Service]",
        "DynamicUser=yes",
        "CacheDirectory=dlbox-proxpi",
        "LogsDirectory=dlbox-package-cache",
    ]
    lines += ['Environment="%s=%s"' % (key, env[key]) for key in sorted(env)]
    lines += [
        "ExecStart=%s/bin/gunicorn --workers 1 --threads 32 --timeout 1800 --bind %s:%d "
        "--access-logfile /var/log/dlbox-package-cache/proxpi-access.log --access-logformat %s proxpi.server:app"
        % (venv, bind, opts["pypi_port"], ACCESS_LOG_FORMAT),
        "Restart=on-failure",
        "",
        "[Install]",
        "WantedBy=multi-user.target",
    ]
    return "\n".join(lines) + "\n"


def apt_client(opts):
    """apt on a client: HTTP repositories through the cache (``proxy``), the ``direct`` hosts not."""
    return {"proxy": _host_url(opts["cache_host"], opts["apt_port"]), "direct": list(opts["client_direct"])}


def client_apt(cache_host, inventory_hostname, fqdn="", mode="auto", apt_port=3142, client_direct=("localhost", "127.0.0.1"),
               pypi_port=3141):
    """What the common role takes from the fleet's cache on this host, for its one apt proxy file and its one writer
    of pip's index (/etc/pip.conf): {proxy, direct, pip_index_url, pip_trusted_host}, all empty where this host is
    no client (no cache named, the cache host itself, package_cache_mode server or none).
    Raises ValueError naming the variable for a value package_cache's own preflight refuses."""
    opts = {"cache_host": cache_host, "inventory_hostname": inventory_hostname, "fqdn": fqdn, "mode": mode,
            "apt_port": apt_port, "pypi_port": pypi_port,
            "client_direct": list(client_direct) if isinstance(client_direct, (list, tuple)) else client_direct}
    # the client's options checked as the role checks them; the server's filled with values that pass
    errors = _check(dict(opts, pypi_upstream="https://pypi.org/simple/",
                         pypi_cache_size_gb=1, pypi_index_ttl=0, pypi_log_level="INFO", pypi_packages=["proxpi"],
                         apt_backends={}, apt_remaps=[]))
    if errors:
        raise ValueError("; ".join(errors))
    if _mode(opts) != "client":
        return {"proxy": "", "direct": [], "pip_index_url": "", "pip_trusted_host": ""}
    return dict(apt_client(opts), **pip_client(opts))


def pip_client(opts):
    """pip on a client: the cache's index (proxpi serves plain HTTP, hence trusted-host)."""
    return {"pip_index_url": _host_url(opts["cache_host"], opts["pypi_port"], "/index/"),
            "pip_trusted_host": opts["cache_host"].strip("[]")}


def decide(opts):
    """Everything the role does on this host: ``{ok, errors, mode, server, client, mirrors}``."""
    errors = _check(opts)
    if errors:
        return {"ok": False, "errors": errors, "mode": None, "server": None, "client": None, "mirrors": {}}
    mode = _mode(opts)
    host = opts["cache_host"]
    mirrors = {item["name"]: _host_url(host, opts["apt_port"], "/%s/" % item["name"]) for item in opts["apt_remaps"]} \
        if host else {}
    server = client = None
    if mode == "server":
        venv = opts.get("venv", "/opt/dlbox-proxpi")
        server = {
            "acng_conf": acng_conf(opts),
            "acng_conf_path": ACNG_CONF_FILE,
            "backends": {name: "\n".join(urls) + "\n" for name, urls in sorted(opts["apt_backends"].items())},
            "venv": venv,
            "unit_name": UNIT_NAME,
            "unit": proxpi_unit(opts, venv),
            "apt_url": _host_url(host, opts["apt_port"]),
            "pypi_url": _host_url(host, opts["pypi_port"], "/index/"),
        }
    elif mode == "client":
        client = dict(pip_client(opts), apt=apt_client(opts))
    return {"ok": True, "errors": [], "mode": mode, "server": server, "client": client, "mirrors": mirrors}
