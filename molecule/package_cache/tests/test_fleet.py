# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A fleet behind one package cache: the bytes the cache host fetched upstream for each client.

Measured at the cache host from the caches' own logs (the suite's test cache, the cache host's upstream here, is
not looked at):
- apt-cacher-ng, /var/log/apt-cacher-ng/apt-cacher.log: one line a transfer, ``time|I|bytes|client|path`` for bytes
  fetched upstream on behalf of ``client``, ``time|O|bytes|client|path`` for bytes served to it;
- proxpi (log level DEBUG), its journal (``journalctl -u dlbox-proxpi -o cat``): each upstream request with the size of its
  answer, in time order; gunicorn's access log (proxpi-access.log) says which client asked for what and when
  (end time and duration), so each upstream request is given to the client whose requests were in flight then.
  The converge installs the clients one after another, so at most one client asks at any time.
"""

from __future__ import annotations

import datetime
import json
import os
import re

DISTRO = os.environ.get("MOLECULE_DISTRO", "debian12")
CACHE = "dlbox-pcache-%s" % DISTRO
CLIENTS = ["dlbox-pcache-client%d-%s" % (n, DISTRO) for n in (1, 2, 3)]
testinfra_hosts = [CACHE]

# proxpi's upstream requests: urllib3's debug line, e.g.
# 2026-12-02 00:56:44,168 [   DEBUG] urllib3.connectionpool: https://pypi.org:443 "GET /simple/idna/ HTTP/1.1" 200 77782
_UPSTREAM = re.compile(r'^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3}) \[\s*DEBUG\] urllib3\.connectionpool: \S+ '
                       r'"GET (\S+) HTTP/[\d.]+" (\d{3}) (\d+|None)$')
# gunicorn's access log as the role writes it: client [time] "request" status bytes microseconds
_ACCESS = re.compile(r'^(\S+) \[([^\]]+)\] "(\S+) (\S+) [^"]*" (\d{3}) (\d+|-) (\d+)$')


def _ips(host):
    ips = {}
    for client in CLIENTS:
        out = host.check_output("getent hosts %s", client)
        ips[out.split()[0]] = client
    return ips


def _apt_figures(host):
    ips = _ips(host)
    figures = {client: {"upstream": 0, "served": 0, "upstream_debs": 0, "upstream_indexes": 0, "deb_paths": {}}
               for client in CLIENTS}
    for line in host.file("/var/log/apt-cacher-ng/apt-cacher.log").content_string.splitlines():
        parts = line.split("|")
        if len(parts) < 5 or parts[1] not in ("I", "O") or parts[3] not in ips:
            continue
        figures[ips[parts[3]]]["upstream" if parts[1] == "I" else "served"] += int(parts[2])
        if parts[1] == "I":
            kind = "upstream_debs" if parts[4].split("?")[0].endswith(".deb") else "upstream_indexes"
            figures[ips[parts[3]]][kind] += int(parts[2])
            if kind == "upstream_debs":
                paths = figures[ips[parts[3]]]["deb_paths"]
                paths[parts[4]] = paths.get(parts[4], 0) + int(parts[2])
    return figures


def _deb_name_version(path):
    """``.../pool/main/o/openssl/libssl3_3.0.15-1~deb12u1_amd64.deb`` -> ("libssl3", "3.0.15-1~deb12u1")."""
    parts = path.split("?")[0].rsplit("/", 1)[-1].split("_")
    return parts[0], parts[1] if len(parts) > 2 else ""


def _debs_again(first_paths, paths):
    """Split the bytes of .debs the cache fetched upstream for a later client: ``again``, files the first client's
    fetch had already brought into the cache (a cache that does not keep what it fetched); ``other_version``,
    another version of a package the first client got (the mirror published one in between: a file the cache
    never had); ``other``, files of packages the first client never got. ``files``: path -> (bytes, kind)."""
    first_versions = {}
    for path in first_paths:
        name, version = _deb_name_version(path)
        first_versions.setdefault(name, set()).add(version)
    figures = {"again": 0, "other_version": 0, "other": 0, "files": {}}
    for path, size in paths.items():
        name, version = _deb_name_version(path)
        if path in first_paths:
            kind = "again"
        elif version not in first_versions.get(name, {version}):
            kind = "other_version"
        else:
            kind = "other"
        figures[kind] += size
        figures["files"][path] = (size, kind)
    return figures


def _pip_figures(host):
    ips = _ips(host)
    windows = {}
    served = {client: 0 for client in CLIENTS}
    for line in host.file("/var/log/dlbox-package-cache/proxpi-access.log").content_string.splitlines():
        match = _ACCESS.match(line)
        if not match or match.group(1) not in ips:
            continue
        client = ips[match.group(1)]
        end = datetime.datetime.strptime(match.group(2), "%d/%b/%Y:%H:%M:%S %z").timestamp()
        start = end - int(match.group(7)) / 1e6
        low, high = windows.get(client, (start, end))
        windows[client] = (min(low, start), max(high, end))
        size = 0 if match.group(6) == "-" else int(match.group(6))
        if match.group(5) == "200" and size == 0 and not match.group(4).endswith("/"):
            # gunicorn counts no bytes for a file proxpi hands over whole: its size in proxpi's cache instead
            name = match.group(4).rsplit("/", 1)[-1]
            size = int(host.check_output("find /var/cache/dlbox-proxpi/ -name %s -printf '%%s\\n' | head -n 1", name) or 0)
        served[client] += size
    upstream = {client: 0 for client in CLIENTS}
    upstream["nobody"] = 0
    for line in host.check_output("journalctl -u dlbox-proxpi -o cat --no-pager").splitlines():
        match = _UPSTREAM.match(line)
        if not match:
            continue
        when = datetime.datetime.strptime(match.group(1) + " +0000", "%Y-%m-%d %H:%M:%S %z").timestamp() \
            + int(match.group(2)) / 1000
        size = 0 if match.group(5) == "None" else int(match.group(5))
        owner = next((c for c, (low, high) in windows.items() if low - 1.5 <= when <= high + 1.5), "nobody")
        upstream[owner] += size
    return {client: {"upstream": upstream[client], "served": served[client]} for client in CLIENTS}, upstream["nobody"]


def test_fleet_fetches_upstream_once(host):
    apt = _apt_figures(host)
    pip, unattributed = _pip_figures(host)
    print("\n[package_cache] bytes the cache host fetched upstream / served, per client (from its own logs):")
    for client in CLIENTS:
        print("[package_cache] %-28s apt %10d / %10d (upstream: .debs %d, indexes %d)   pip %9d / %9d"
              % (client, apt[client]["upstream"], apt[client]["served"], apt[client]["upstream_debs"],
                 apt[client]["upstream_indexes"], pip[client]["upstream"], pip[client]["served"]))
    for client in CLIENTS[1:]:
        print("[package_cache] %-28s upstream as a share of the first client's: apt %.2f%%, pip %.2f%%"
              % (client, 100.0 * apt[client]["upstream"] / max(apt[CLIENTS[0]]["upstream"], 1),
                 100.0 * pip[client]["upstream"] / max(pip[CLIENTS[0]]["upstream"], 1)))
    print("[package_cache] pip upstream bytes outside every client's requests: %d" % unattributed)
    # the .debs a later client made the cache fetch upstream, the largest first, and what kind of file each was
    first, later = CLIENTS[0], CLIENTS[1:]
    debs = {client: _debs_again(apt[first]["deb_paths"], apt[client]["deb_paths"]) for client in later}
    for client in later:
        print("[package_cache] %-28s .debs fetched upstream: %d bytes of files the first client's fetch had cached, "
              "%d of other versions of its packages (published in between), %d of other files"
              % (client, debs[client]["again"], debs[client]["other_version"], debs[client]["other"]))
        for path, (size, kind) in sorted(debs[client]["files"].items(), key=lambda item: -item[1][0])[:15]:
            print("[package_cache] %-28s   %s: %s (%d bytes)" % (client, kind, path, size))
    apt = {client: {k: v for k, v in figures.items() if k != "deb_paths"} for client, figures in apt.items()}
    # the first client really went through the cache: the packages and the indexes came from upstream
    assert apt[first]["upstream"] > 1000000 and apt[first]["upstream_debs"] > 100000, apt
    assert pip[first]["upstream"] > 50000, pip
    for client in later:
        # every client got as much as the first one from the cache ...
        assert apt[client]["served"] > 0.5 * apt[first]["served"], apt
        assert pip[client]["served"] > 0.5 * pip[first]["served"], pip
        # ... and the cache fetched almost nothing upstream for it: at most 2% of the first client's packages, counting
        # every file the first client's fetch had put in the cache and every file it never needed. When Debian's
        # mirror publishes between two clients (four times a day), a later client rightly gets the newer version of
        # a package the first one got, a file the cache never had: those files are printed above and not counted (one
        # CI run failed on 5.66 MB of the first client's 33.4 MB of .debs counted whole; its per-file lines were not
        # kept, so that this was the cause is likely, not shown). The indexes are the same story: the
        # cache rightly fetches the changed suites' indexes again (5.96 MB of the first client's 50.8 MB in one
        # CI-way run, 2026-12-03, where the next client took 0.3 MB); a cache that kept none would fetch them all.
        assert debs[client]["again"] + debs[client]["other"] <= 0.02 * apt[first]["upstream_debs"], (debs, apt)
        assert apt[client]["upstream_indexes"] <= 0.5 * apt[first]["upstream_indexes"], apt
        assert pip[client]["upstream"] <= 0.02 * pip[first]["upstream"], pip


# --- check mode on the fresh cache host (prepare.yml) ---------------------------------------------------------
def test_check_mode_on_a_fresh_cache_host_changes_nothing(host):
    run = json.loads(host.file("/root/dlbox-check-fresh.json").content_string)
    assert run["rc"] == 0, "\n".join(run["tail"])
    assert run["unchanged"] is True
    # it says what a real run would do
    assert "Install apt-cacher-ng, python3-venv and python3-packaging" in run["changed"], run["changed"]
    assert "Write proxpi's systemd unit" in run["changed"], run["changed"]


# --- one writer of apt's proxy ----------------------------------------------------------------------------------
def test_each_client_has_one_apt_proxy_file_naming_the_cache():
    """The common role's site-network file carries the cache (whichever role ran); the earlier version's file that
    prepare.yml left on the first client is gone."""
    import testinfra  # pylint: disable=import-outside-toplevel

    for client in CLIENTS:
        remote = testinfra.get_host("docker://%s" % client)
        conf = remote.file("/etc/apt/apt.conf.d/80dlbox-proxy").content_string
        assert 'Acquire::http::Proxy "http://%s:3142";' % CACHE in conf.splitlines(), conf
        assert 'Acquire::http::Proxy::127.0.0.1 "DIRECT";' in conf.splitlines(), conf
        assert not remote.file("/etc/apt/apt.conf.d/90dlbox-package-cache").exists, client
        # apt reads exactly that proxy
        dump = remote.check_output("apt-config dump Acquire::http::Proxy")
        assert 'Acquire::http::Proxy "http://%s:3142";' % CACHE in dump, dump
