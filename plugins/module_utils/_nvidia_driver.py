# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Host-side parsers of the nvidia_driver role (pure, Python 3.8+), used by the ``nvidia_driver_facts`` module.

* :func:`parse_apt_simulate`: the Inst lines of ``apt-get -s install``.
* :func:`parse_dkms_status`, :func:`dkms_missing`: the DKMS build state for every kernel.
* :func:`parse_mokutil_test_key`: whether a signing certificate is enrolled.
* :func:`parse_dpkg_query`, :func:`installed_driver`, :func:`member_branch`: which driver branch dpkg has.
* :func:`parse_madison`: the versions ``apt-cache madison`` lists.

The decisions (package sets, signing path, verdicts on apt's simulation, branch changes, pins, rollbacks) are
made on the controller: ``plugins/plugin_utils/nvidia_driver_plan.py``.
"""

from __future__ import annotations

import re

from ansible_collections.dlbox.stack.plugins.module_utils.kernel import dpkg_present, dpkg_unconfigured

# "Inst name [old] (new release [arch])" and "Inst name (new release [arch])" lines of apt-get -s.
_INST = re.compile(r"^Inst (?P<name>\S+) (?:\[(?P<old>[^\]]+)\] )?\((?P<version>\S+)")
# A driver branch in a package name: nvidia-headless-580-server, libnvidia-compute-535, ...-590-open
_NAME_BRANCH = re.compile(r"nvidia[a-z0-9-]*?-(?P<branch>\d{3})(?=-|$)")
# Packages of the driver family whose names carry a branch.
DRIVER_PREFIXES = ("nvidia", "libnvidia", "linux-modules-nvidia", "linux-objects-nvidia", "xserver-xorg-video-nvidia")
# dkms 3.x: "nvidia-current/535.309.01, 6.1.0-57-amd64, x86_64: installed"
# dkms 2.x: "nvidia, 535.183.01, 6.5.0-41-generic, x86_64: installed"
_DKMS3 = re.compile(r"^(?P<module>[^/,\s]+)/(?P<version>[^,\s]+)(?:, (?P<kernel>[^,\s]+), (?P<arch>[^:\s]+))?: (?P<state>.+)$")
_DKMS2 = re.compile(r"^(?P<module>[^/,\s]+), (?P<version>[^,\s]+)(?:, (?P<kernel>[^,\s]+), (?P<arch>[^:\s]+))?: (?P<state>.+)$")


def upstream_version(package_version):
    """Debian package version -> upstream part: "535.309.01-0+deb12u1" -> "535.309.01"; "1:2.3-4" -> "2.3"."""
    text = (package_version or "").strip()
    if ":" in text:
        text = text.split(":", 1)[1]
    return text.rsplit("-", 1)[0] if "-" in text else text


def branch_of_version(version):
    """"535.309.01" -> 535; None for anything that does not start with a number."""
    match = re.match(r"^(\d+)\.", upstream_version(version))
    return int(match.group(1)) if match else None


def branch_in_name(name):
    """The driver branch named in a package name ("nvidia-dkms-580-open" -> 580), else None."""
    match = _NAME_BRANCH.search(name or "")
    return int(match.group("branch")) if match else None


def parse_apt_simulate(text):
    """``apt-get -s install ...`` output -> [{name, version, old}] of the Inst lines, in order."""
    out = []
    for line in (text or "").splitlines():
        match = _INST.match(line.strip())
        if match:
            out.append({"name": match.group("name"), "version": match.group("version"), "old": match.group("old")})
    return out


def parse_dkms_status(text):
    """``dkms status`` (DKMS 2.x or 3.x) -> [{module, version, kernel, arch, state}].

    ``state`` is "installed", "built", "added" (warnings after the state are dropped).
    """
    out = []
    for line in (text or "").splitlines():
        line = line.strip()
        match = _DKMS3.match(line) or _DKMS2.match(line)
        if not match:
            continue
        state = match.group("state").split()[0].rstrip(",") if match.group("state") else ""
        out.append({
            "module": match.group("module"),
            "version": match.group("version"),
            "kernel": match.group("kernel"),
            "arch": match.group("arch"),
            "state": state,
        })
    return out


def dkms_missing(text, module, version, kernels):
    """Kernels of ``kernels`` for which ``module``/``version`` is not "installed" in ``dkms status``."""
    done = set(
        entry["kernel"] for entry in parse_dkms_status(text)
        if entry["module"] == module and upstream_version(entry["version"]) == upstream_version(version)
        and entry["state"] == "installed"
    )
    return [kernel for kernel in kernels if kernel not in done]


def parse_mokutil_test_key(text):
    """``mokutil --test-key CERT`` -> "enrolled", "pending", "blocked", "not-enrolled" or "unknown".

    enrolled: "is already enrolled", "is already in db", "is already in the built-in trusted keyring";
    pending: "is already in the enrollment request" (confirmed at the console on the next boot, not yet
    trusted); blocked: "is blocked in dbx" / "in MokListX"; unknown: no EFI variables, no such file, anything else.
    Older mokutil (0.3) also says "is already enrolled" for a key that is only in the request (MokNew).
    """
    lowered = (text or "").lower()
    if "already in the enrollment request" in lowered:
        return "pending"
    if " is blocked" in lowered:
        return "blocked"
    if "is already enrolled" in lowered or "is already in db" in lowered or "built-in trusted keyring" in lowered:
        return "enrolled"
    if "is not enrolled" in lowered:
        return "not-enrolled"
    return "unknown"


# --- branches, branch changes and rollbacks (both install methods) -------------------------------------

# A driver version: three-digit branch, then at least one more component ("580.95.05", "595.71.05").
DRIVER_VERSION = re.compile(r"^(?P<branch>\d{3})\.\d+")
# " nvidia-open | 595.71.05-1 | http://127.0.0.1:8089/cuda-debian12 ./ Packages"
_MADISON = re.compile(r"^\s*(?P<name>\S+)\s*\|\s*(?P<version>\S+)\s*\|\s*(?P<source>.*?)\s*$")


def _glob_match(name, globs):
    import fnmatch
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in globs or ())


def member_branch(name, version, family):
    """The driver branch a package belongs to, or None when it is not part of a driver.

    A package is part of branch B when its name matches one of the ``family`` globs and either its name
    carries B (``nvidia-dkms-580-open``, ``linux-modules-nvidia-580-generic``) or its upstream version
    starts with B (``nvidia-open 595.71.05-1``; NVIDIA's 590+ Ubuntu names carry no branch).
    ``nvidia-container-toolkit 1.18.2-1`` or Debian's ``nvidia-cuda-toolkit 11.8.89~...`` are not.
    """
    if not _glob_match(name, family):
        return None
    named = branch_in_name(name)
    if named is not None:
        return named
    match = DRIVER_VERSION.match(upstream_version(version))
    return int(match.group("branch")) if match else None


def parse_dpkg_query(text):
    """``dpkg-query -W -f '${Package}\\t${Version}\\t${Architecture}\\t${db:Status-Abbrev}\\n'`` -> [{name, version, arch, status}].

    Half-installed and half-configured packages (a failed postinst: ``iF``, ``iU``) are listed (their files are there:
    a branch change removes them, a rollback keeps them), with their ``status`` so that :func:`installed_driver` reports
    them as not configured; removed ones with configuration files left (``rc``) are not listed.
    """
    out = []
    for line in (text or "").splitlines():
        parts = line.split("\t")
        if len(parts) < 4 or not parts[1]:
            continue
        if not dpkg_present(parts[3]):
            continue
        out.append({"name": parts[0].split(":")[0], "version": parts[1], "arch": parts[2], "status": parts[3].strip()})
    return out


def package_items(packages):
    """ansible's package_facts ``{name: [{version, arch, ...}]}``, a list of {name, version, arch} or
    ``parse_dpkg_query`` text -> [(name, version, arch)]."""
    if isinstance(packages, str):
        packages = parse_dpkg_query(packages)
    if isinstance(packages, dict):
        out = []
        for name, entries in packages.items():
            for entry in entries or []:
                out.append((name, str(entry.get("version") or ""), entry.get("arch") or entry.get("architecture") or ""))
        return out
    return [(p["name"], str(p["version"]), p.get("arch") or "") for p in packages or []]


def unconfigured_packages(packages, family):
    """The driver family's packages dpkg has but did not configure (:func:`kernel.dpkg_unconfigured`: ``iF`` after a failed
    post-installation script such as a DKMS build, ``iU`` for the packages that depend on it): [{name, version, status}].
    ``packages``: :func:`parse_dpkg_query`'s list or its text (other forms carry no status: none)."""
    if isinstance(packages, str):
        packages = parse_dpkg_query(packages)
    if not isinstance(packages, list):
        return []
    return [{"name": p["name"], "version": p.get("version"), "status": p.get("status")} for p in packages
            if isinstance(p, dict) and dpkg_unconfigured(p.get("status")) and _glob_match(p.get("name") or "", family)]


def installed_driver(packages, family):
    """The driver branch installed according to dpkg, and its packages.

    ``packages``: ansible's package_facts (apt). Returns ``{branch, version, packages: [{name, version, arch}],
    other_branches: [..]}``; ``branch`` None when no driver package is installed. The branch is the one
    most packages belong to (ties: the newest); ``version`` the most common upstream version among its
    packages whose version is the driver's.
    """
    by_branch = {}
    for name, version, arch in package_items(packages):
        branch = member_branch(name, version, family)
        if branch is not None:
            by_branch.setdefault(branch, []).append({"name": name, "version": version, "arch": arch})
    if not by_branch:
        return {"branch": None, "version": None, "packages": [], "other_branches": []}
    branch = max(by_branch, key=lambda b: (len(by_branch[b]), b))
    counts = {}
    for item in by_branch[branch]:
        upstream = upstream_version(item["version"])
        if DRIVER_VERSION.match(upstream) and int(DRIVER_VERSION.match(upstream).group("branch")) == branch:
            counts[upstream] = counts.get(upstream, 0) + 1
    version = max(counts, key=lambda v: (counts[v], v)) if counts else None
    return {
        "branch": branch,
        "version": version,
        "packages": sorted(by_branch[branch], key=lambda p: p["name"]),
        "other_branches": sorted(b for b in by_branch if b != branch),
    }


def parse_madison(text):
    """``apt-cache madison NAME...`` -> [{name, version, source}] in apt's order."""
    out = []
    for line in (text or "").splitlines():
        match = _MADISON.match(line)
        if match:
            out.append({"name": match.group("name"), "version": match.group("version"), "source": match.group("source")})
    return out


# --- the kernel GRUB boots next (read on the host, for the signed modules' check after the install) -------------
#
# grub-mkconfig's 00_header writes: load_env; if next_entry (grub-reboot): default=next_entry, once; else
# default=GRUB_DEFAULT, where GRUB_DEFAULT=saved means default=saved_entry (grub-set-default). An entry is a menu
# position ("0", "1>2"), a title ("Advanced options for Ubuntu>Ubuntu, with Linux 6.8.0-31-generic") or an id
# ("gnulinux-advanced-<uuid>>gnulinux-6.8.0-1008-aws-advanced-<uuid>") (grub-reboot(8), grub-set-default(8)). Entry 0
# of Debian's and Ubuntu's menu is the newest kernel (10_linux sorts them newest first); an entry GRUB cannot find
# boots entry 0 too.

_GRUB_DEFAULT = re.compile(r"^\s*(?:export\s+)?GRUB_DEFAULT=(?P<value>.*?)\s*$")
_GRUBENV = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_]*)=(?P<value>.*)$")
# The kernel release in a menu title ("with Linux 6.8.0-31-generic") or id ("gnulinux-6.8.0-1008-aws-advanced-<uuid>").
_ENTRY_RELEASE = re.compile(r"(?:with Linux |gnulinux-)(?P<release>\d+\.\d+[^\s>'\"]*?)(?=-advanced-|-recovery-|\s|>|'|\"|$)")


def _unquote(value):
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def grub_default(texts):
    """GRUB_DEFAULT from ``/etc/default/grub`` then ``/etc/default/grub.d/*.cfg`` (sourced in that order by
    grub-mkconfig, so the last one set wins), quotes removed; "0" when none sets it (GRUB's own default)."""
    value = "0"
    for text in texts or ():
        for line in (text or "").splitlines():
            match = _GRUB_DEFAULT.match(line)
            if match:
                value = _unquote(match.group("value"))
    return value


def parse_grubenv(text):
    """``/boot/grub/grubenv`` ("# GRUB Environment Block", ``name=value`` lines, ``#`` padding to 1024 bytes) -> dict."""
    out = {}
    for line in (text or "").splitlines():
        match = _GRUBENV.match(line)
        if match:
            out[match.group("name")] = match.group("value")
    return out


def entry_release(entry):
    """The kernel release a GRUB menu entry (title or id, submenus joined by ">") boots, else None."""
    found = _ENTRY_RELEASE.findall(entry or "")
    return found[-1] if found else None


def grub_next_boot(default, env, releases, newest):
    """The kernel GRUB boots next: {release, source}.

    ``default``: :func:`grub_default`. ``env``: :func:`parse_grubenv`. ``releases``: the kernels in /boot.
    ``newest``: entry 0 (the newest of them). A one-time ``next_entry`` first, then GRUB_DEFAULT (``saved``: the
    ``saved_entry``); an entry that names an installed kernel boots it; "0", an empty saved entry, or an entry naming
    a kernel that is gone boot entry 0; a menu position other than 0 (or another system's entry) cannot be read
    without grub.cfg: entry 0 is assumed, and ``source`` says so.
    """
    env = env or {}
    if env.get("next_entry"):
        entry, source = env["next_entry"], "grubenv next_entry (grub-reboot, this boot only)"
    elif default == "saved":
        entry, source = env.get("saved_entry") or "0", "GRUB_DEFAULT=saved, grubenv saved_entry"
    else:
        entry, source = default, "GRUB_DEFAULT"
    if entry.strip() in ("", "0"):
        return {"release": newest, "source": "%s: entry 0, the newest kernel" % source}
    release = entry_release(entry)
    if release and release in (releases or ()):
        return {"release": release, "source": "%s: %s" % (source, entry)}
    if release:
        return {"release": newest, "source": "%s: %s names no kernel in /boot, GRUB boots entry 0 (the newest)" % (source, entry)}
    return {"release": newest, "source": "%s: %s is not read (a menu position or another entry); assumed entry 0, the newest kernel"
            % (source, entry)}
