# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which of the packages a role wants installed still need the apt module (pure).

ansible.builtin.apt with ``state: present`` re-reads every apt preferences file once per named package
(``package_best_match`` builds a new ``apt_pkg.Policy`` each time) and runs ``apt-mark manual``, even when
everything is installed. Each read matches every glob of ``/etc/apt/preferences.d`` against every package
name: on a server with the driver's branch pin and NVIDIA's repository (about 14 globs, Ubuntu 24.04's
89,000 packages) a task of 15 installed packages took 13.7 s and changed nothing (molecule/server,
2026-12-03). ``dpkg-query`` and apt's ``extended_states`` answer the same question in milliseconds.

An entry is left to apt (the whole list goes to the module) unless it is a plain package name, or a name with
an exact version (``name=1.2-1``, compared with the installed ``${Version}`` when the probe printed it): a version
glob (``name=1.2*``) or comparison, a name glob, an architecture (``name:i386``) or a ``.deb`` path all go to
apt, which decides as before; a virtual name that dpkg does not know goes to apt too. A package installed but marked automatic
goes to apt too, which marks it manual (as ``state: present`` does), so no ``apt autoremove`` takes it later.
"""

from __future__ import annotations

import re

_ENTRY = re.compile(r"^(?P<name>[a-z0-9][a-z0-9+.-]+)(?:=(?P<version>[A-Za-z0-9.+~:-]+))?$")


def installed_versions(dpkg_query):
    """{name: version or None} of the packages that ``dpkg-query --show`` says are installed.

    The probe's format is ``${Package}\\t${db:Status-Abbrev}\\t${Version}\\n`` (the version field may be left
    out). The status's second letter is the package's state: ``i`` installed (``ii``, and ``hi`` held); ``c``
    config-files, ``U`` unpacked, ``F``/``H`` half-configured or half-installed are not installed.
    """
    names = {}
    for line in (dpkg_query or "").splitlines():
        fields = line.split("\t")
        if len(fields) >= 2 and len(fields[1]) >= 2 and fields[1][1] == "i" and fields[0].strip():
            names[fields[0].strip()] = fields[2].strip() if len(fields) > 2 and fields[2].strip() else None
    return names


def auto_names(extended_states):
    """Names apt marked as installed automatically, from the text of ``/var/lib/apt/extended_states``."""
    names = set()
    for stanza in re.split(r"\n\s*\n", extended_states or ""):
        fields = {}
        for line in stanza.splitlines():
            key, sep, value = line.partition(":")
            if sep:
                fields[key.strip().lower()] = value.strip()
        if fields.get("package") and fields.get("auto-installed") == "1":
            names.add(fields["package"])
    return names


def needed(wanted, dpkg_query, extended_states=""):
    """The entries of ``wanted`` the apt module still has to act on (``[]``: every one is installed, manual).

    Every entry when one of them is not a plain package name (apt alone can judge it).
    """
    wanted = [str(item) for item in (wanted or [])]
    entries = [_ENTRY.match(item) for item in wanted]
    if not all(entries):
        return wanted
    have = installed_versions(dpkg_query)
    auto = auto_names(extended_states)
    out = []
    for item, entry in zip(wanted, entries):
        name, version = entry.group("name"), entry.group("version")
        if name not in have or name in auto or (version is not None and have[name] != version):
            out.append(item)
    return out


STAMP = "/var/lib/apt/periodic/update-success-stamp"
LISTS = "/var/lib/apt/lists"


def lists_age(files, valid_time, now):
    """Whether apt's package lists need a refresh, judged as ``ansible.builtin.apt`` judges ``cache_valid_time``
    (its ``get_cache_mtime``: the mtime of update-success-stamp where apt's hook writes it, else of the lists folder)
    but without opening apt's cache, which the module does first and which costs a policy build.

    ``files``: ``ansible.builtin.find``'s ``files`` of /var/lib/apt (``lists``), /var/lib/apt/lists (``*_Packages*``) and
    /var/lib/apt/periodic (``update-success-stamp``); ``valid_time``: seconds; ``now``: a Unix time. Returns
    ``{fresh, lists, age}``: ``fresh`` False when no Packages list was ever downloaded (a fresh image's empty, newly
    dated folder is no fresh cache), or when the reference time is older than ``valid_time``; ``lists`` the number of
    Packages lists; ``age`` seconds since the reference time (None when there is none)."""
    by_path = {f.get("path"): f for f in files or ()}
    lists = sum(1 for path in by_path if path and path.startswith(LISTS + "/") and "_Packages" in path.rsplit("/", 1)[-1])
    reference = by_path.get(STAMP) or by_path.get(LISTS)
    age = None if reference is None else float(now) - float(reference.get("mtime", 0))
    fresh = bool(lists) and age is not None and age <= int(valid_time)
    return {"fresh": fresh, "lists": lists, "age": age}
