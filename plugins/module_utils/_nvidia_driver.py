# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Decisions and parsers of the nvidia_driver role (pure, Python 3.8+).

* :func:`driver_packages`: the apt packages for a driver branch, module flavour, profile and signing
  path, from the per-OS name templates the role keeps in ``vars/`` (no package name is written here).
* :func:`signing_path`: how a module gets loaded under Secure Boot, or why the run must stop.
* :func:`parse_apt_simulate` / :func:`check_simulation`: what ``apt-get -s install`` would really
  bring, and whether that is the branch that was asked for (transitional packages pull newer ones).
* :func:`parse_dkms_status`, :func:`dkms_missing`: the DKMS build state for every kernel.
* :func:`parse_mokutil_test_key`: whether a signing certificate is enrolled.
"""

from __future__ import annotations

import re

# "Inst name [old] (new release [arch])" and "Inst name (new release [arch])" lines of apt-get -s.
_INST = re.compile(r"^Inst (?P<name>\S+) (?:\[(?P<old>[^\]]+)\] )?\((?P<version>\S+)")
# A driver branch in a package name: nvidia-headless-580-server, libnvidia-compute-535, ...-590-open
_NAME_BRANCH = re.compile(r"nvidia[a-z0-9-]*?-(?P<branch>\d{3})(?=-|$)")
# Packages of the driver family whose names carry a branch.
_DRIVER_PREFIXES = ("nvidia", "libnvidia", "linux-modules-nvidia", "linux-objects-nvidia", "xserver-xorg-video-nvidia")
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


def _fill(template, fields):
    try:
        return template.format(**fields)
    except KeyError as exc:
        raise ValueError("package name template %r uses an unknown field %s" % (template, exc))


def driver_packages(names, branch, kernel_modules, profile="desktop", signing="dkms", kernel_flavour="generic"):
    """The packages to install, the one whose version is the driver's, and the DKMS module name.

    ``names`` is the role's per-OS table (``vars/<Distribution>.yml``): for each profile
    (``desktop``/``server``) and signing path (``dkms``/``precompiled``) a list of name templates with
    the fields ``{branch}``, ``{server}`` ("-server" for the server profile where the OS has that
    flavour, else ""), ``{open}`` ("-open" for open modules, else ""), ``{flavour}`` (kernel flavour),
    ``{kernel_pkg}`` (the kernel module package of the flavour: ``kernel_package``), and
    ``dkms_module`` per flavour.

    >>> names = {"server_suffix": "-server", "packages": {"server": {"dkms": ["nvidia-headless-{branch}{server}{open}",
    ...          "nvidia-utils-{branch}{server}"]}}, "dkms_module": {"open": "nvidia", "proprietary": "nvidia"}}
    >>> driver_packages(names, 580, "open", "server")["packages"]
    ['nvidia-headless-580-server-open', 'nvidia-utils-580-server']
    """
    if kernel_modules not in ("open", "proprietary"):
        raise ValueError("kernel_modules must be open or proprietary, got %r" % (kernel_modules,))
    if profile not in ("desktop", "server"):
        raise ValueError("profile must be desktop or server, got %r" % (profile,))
    by_profile = (names.get("packages") or {}).get(profile) or {}
    templates = by_profile.get(signing)
    if not templates:
        raise ValueError("no %s package set for the %s profile on this OS (signing %s)" % (signing, profile, signing))
    fields = {
        "branch": branch,
        "server": names.get("server_suffix", "") if profile == "server" else "",
        "open": "-open" if kernel_modules == "open" else "",
        "flavour": kernel_flavour or "generic",
    }
    fields["kernel_pkg"] = _fill((names.get("kernel_package") or {}).get(kernel_modules, ""), fields)
    packages = []
    for template in templates:
        name = _fill(template, fields)
        if name and name not in packages:
            packages.append(name)
    same_version = [_fill(template, fields) for template in names.get("same_version") or []]
    return {
        "packages": packages,
        "primary": packages[0],
        "same_version": [name for name in same_version if name in packages],
        "dkms_module": None if signing == "precompiled" else _fill((names.get("dkms_module") or {}).get(kernel_modules, ""), fields),
        "signing": signing,
    }


def signing_path(distribution, secure_boot, choice="auto", mok_key="", mok_certificate="", dkms_major=None):
    """How the kernel module will load under Secure Boot: {path, problem, dkms_config}.

    path: ``dkms`` (no Secure Boot, or a DKMS build signed with an enrolled key), ``precompiled``
    (Canonical's signed modules, Ubuntu only) or None with ``problem`` saying why and the ways out.
    ``choice`` is the role's ``nvidia_driver_secure_boot_signing`` (auto, precompiled, mok).
    ``dkms_config``: ``framework`` (DKMS 3: mok_signing_key/mok_certificate in framework.conf) or
    ``shim-signed`` (DKMS 2: the key must be /var/lib/shim-signed/mok/MOK.priv and MOK.der).
    """
    ubuntu = (distribution or "").lower() == "ubuntu"
    out = {"path": None, "problem": None, "dkms_config": None}
    if choice not in ("auto", "precompiled", "mok"):
        out["problem"] = "nvidia_driver_secure_boot_signing must be auto, precompiled or mok; got %r." % (choice,)
        return out
    if choice == "precompiled" and not ubuntu:
        out["problem"] = ("nvidia_driver_secure_boot_signing: precompiled needs Ubuntu's signed modules "
                          "(linux-modules-nvidia-*); %s has none. Use mok with an enrolled key." % distribution)
        return out
    if choice == "mok" or (secure_boot and not ubuntu and choice == "auto"):
        if not (mok_key and mok_certificate):
            if secure_boot:
                out["problem"] = (
                    "Secure Boot is on and there is no way to sign the module: set nvidia_driver_mok_key and "
                    "nvidia_driver_mok_certificate to a key pair whose certificate is already enrolled "
                    "(mokutil --import CERT, then confirm at the console on the next boot)%s, or turn Secure "
                    "Boot off in the firmware. Nothing was changed."
                    % ("; or use nvidia_driver_secure_boot_signing: precompiled (Canonical's signed modules)" if ubuntu else ""))
            else:
                out["problem"] = ("nvidia_driver_secure_boot_signing: mok needs nvidia_driver_mok_key and "
                                  "nvidia_driver_mok_certificate. Nothing was changed.")
            return out
        out["path"] = "dkms"
        out["dkms_config"] = "shim-signed" if (dkms_major is not None and int(dkms_major) < 3) else "framework"
        return out
    if choice == "precompiled" or (secure_boot and ubuntu):
        out["path"] = "precompiled"
        return out
    out["path"] = "dkms"
    return out


def parse_apt_simulate(text):
    """``apt-get -s install ...`` output -> [{name, version, old}] of the Inst lines, in order."""
    out = []
    for line in (text or "").splitlines():
        match = _INST.match(line.strip())
        if match:
            out.append({"name": match.group("name"), "version": match.group("version"), "old": match.group("old")})
    return out


def check_simulation(text, primary, branch, same_version=(), installed=None):
    """Would ``apt-get install <requested>`` install the branch that was asked for?

    Returns {ok, branch_found, version, pulled: [{name, branch}], mismatched: [{name, version}],
    dkms: [names], installs: [names]}.
    ``pulled`` lists packages apt would bring whose name carries another branch (a transitional
    package such as nvidia-headless-535-server pulling nvidia-headless-580-server), and the primary
    package when its version is of another branch. ``version``: the primary package's upstream
    version (from the simulation, or from ``installed`` {name: version} when it is already there).
    """
    installs = parse_apt_simulate(text)
    versions = dict((item["name"], item["version"]) for item in installs)
    versions_installed = dict(installed or {})
    pulled = []
    for item in installs:
        found = branch_in_name(item["name"])
        if found is not None and found != int(branch) and item["name"].startswith(_DRIVER_PREFIXES):
            pulled.append({"name": item["name"], "branch": found})
    primary_version = versions.get(primary) or versions_installed.get(primary)
    primary_branch = branch_of_version(primary_version) if primary_version else None
    if primary_branch is not None and primary_branch != int(branch):
        pulled.insert(0, {"name": primary, "branch": primary_branch})
    mismatched = []
    for name in same_version or ():
        version = versions.get(name) or versions_installed.get(name)
        if primary_version and version and upstream_version(version) != upstream_version(primary_version):
            mismatched.append({"name": name, "version": upstream_version(version)})
    dkms = [item["name"] for item in installs if re.match(r"^nvidia-(dkms|kernel-dkms|open-kernel-dkms)\b", item["name"])]
    branches = sorted(set(p["branch"] for p in pulled))
    return {
        "ok": not pulled and not mismatched and primary_version is not None,
        "branch_found": branches[-1] if branches else primary_branch,
        "version": upstream_version(primary_version) if primary_version else None,
        "pulled": pulled,
        "mismatched": mismatched,
        "dkms": dkms,
        "installs": [item["name"] for item in installs],
    }


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


def _deb_line_components(line, wanted):
    """One-line ``deb URI suite comp...`` -> the same line with ``wanted`` added (None when not a main line)."""
    stripped = line.strip()
    if not stripped.startswith(("deb ", "deb-src ")):
        return None
    parts = stripped.split()
    index = 1
    if parts[index].startswith("["):
        while not parts[index].endswith("]"):
            index += 1
        index += 1
    components = parts[index + 2:]
    if "main" not in components:
        return None
    missing = [c for c in wanted if c not in components]
    return " ".join(parts + missing) if missing else line


def apt_sources_with_components(text, wanted, deb822=False):
    """Add the ``wanted`` components to every entry of an apt sources file that has ``main``.

    One-line format (``/etc/apt/sources.list``): ``deb http://deb.debian.org/debian bookworm main``
    -> ``... bookworm main contrib non-free non-free-firmware``; comments and other lines are kept,
    components already there are not repeated. deb822 (``*.sources``): the ``Components:`` field of
    each stanza. Returns the new text (equal to ``text`` when nothing is missing).
    """
    out = []
    for line in (text or "").splitlines(True):
        ending = "\n" if line.endswith("\n") else ""
        body = line[:-1] if ending else line
        if deb822:
            match = re.match(r"^(Components:\s*)(.*)$", body)
            if match and "main" in match.group(2).split():
                have = match.group(2).split()
                missing = [c for c in wanted if c not in have]
                if missing:
                    body = match.group(1) + " ".join(have + missing)
        else:
            new = _deb_line_components(body, wanted)
            if new is not None:
                body = new
        out.append(body + ending)
    return "".join(out)


# --- branches, branch changes and rollbacks (both install methods) -------------------------------------

# A driver version: three-digit branch, then at least one more component ("580.95.05", "595.71.05").
_DRIVER_VERSION = re.compile(r"^(?P<branch>\d{3})\.\d+")
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
    match = _DRIVER_VERSION.match(upstream_version(version))
    return int(match.group("branch")) if match else None


def parse_dpkg_query(text):
    """``dpkg-query -W -f '${Package}\\t${Version}\\t${Architecture}\\t${db:Status-Abbrev}\\n'`` -> [{name, version, arch}].

    Half-installed and half-configured packages (a failed postinst: ``iF``, ``iU``) count as installed,
    which ansible's package_facts may not show; removed ones with configuration files left (``rc``) do not.
    """
    out = []
    for line in (text or "").splitlines():
        parts = line.split("\t")
        if len(parts) < 4 or not parts[1]:
            continue
        status = parts[3].strip()
        if len(status) >= 2 and status[1] in "nc":
            continue
        out.append({"name": parts[0].split(":")[0], "version": parts[1], "arch": parts[2]})
    return out


def _facts_items(packages):
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


def installed_driver(packages, family):
    """The driver branch installed according to dpkg, and its packages.

    ``packages``: ansible's package_facts (apt). Returns ``{branch, version, packages: [{name, version, arch}],
    other_branches: [..]}``; ``branch`` None when no driver package is installed. The branch is the one
    most packages belong to (ties: the newest); ``version`` the most common upstream version among its
    packages whose version is the driver's.
    """
    by_branch = {}
    for name, version, arch in _facts_items(packages):
        branch = member_branch(name, version, family)
        if branch is not None:
            by_branch.setdefault(branch, []).append({"name": name, "version": version, "arch": arch})
    if not by_branch:
        return {"branch": None, "version": None, "packages": [], "other_branches": []}
    branch = max(by_branch, key=lambda b: (len(by_branch[b]), b))
    counts = {}
    for item in by_branch[branch]:
        upstream = upstream_version(item["version"])
        if _DRIVER_VERSION.match(upstream) and int(_DRIVER_VERSION.match(upstream).group("branch")) == branch:
            counts[upstream] = counts.get(upstream, 0) + 1
    version = max(counts, key=lambda v: (counts[v], v)) if counts else None
    return {
        "branch": branch,
        "version": version,
        "packages": sorted(by_branch[branch], key=lambda p: p["name"]),
        "other_branches": sorted(b for b in by_branch if b != branch),
    }


def branch_change(installed_branch, target_branch, allowed):
    """What to do with the driver: ``{action, from_branch, to_branch, problem}``.

    action: ``install`` (no driver yet, or the target branch is the installed one), ``change`` (another
    branch is installed and a change was asked for), ``refuse`` (another branch is installed and no
    change was asked for: ``problem`` says how to ask).
    """
    target = int(target_branch)
    out = {"action": "install", "from_branch": installed_branch, "to_branch": target, "problem": None}
    if installed_branch is None or int(installed_branch) == target:
        return out
    if allowed:
        out["action"] = "change"
        return out
    out["action"] = "refuse"
    out["problem"] = (
        "Driver branch R%s is installed and the plan asks for R%s. Branches change only when asked: set "
        "nvidia_driver_change_branch: true to remove R%s and install R%s (its packages are kept first and "
        "reinstalled if R%s fails to install), or ask for driver branch %s (nvidia_driver_branch: \"%s\"). "
        "Nothing was changed." % (installed_branch, target, installed_branch, target, target, installed_branch, installed_branch))
    return out


def deb_file_name(name, version, arch):
    """The file name apt gives a downloaded package: ``nvidia-open_580.95.05-1_amd64.deb`` (epoch ':' as %3a)."""
    return "%s_%s_%s.deb" % (name, str(version).replace(":", "%3a"), arch or "all")


def keep_plan(packages, archive_files):
    """How to keep each installed package before a branch change.

    ``packages``: [{name, version, arch}] (``installed_driver``'s); ``archive_files``: the .deb file names
    in apt's archive cache. A package whose exact .deb is there is copied, the others are rebuilt from
    the installed files with dpkg-repack. Returns [{name, version, arch, file, source: archive|repack}].
    """
    have = set(archive_files or ())
    out = []
    for item in packages:
        file_name = deb_file_name(item["name"], item["version"], item.get("arch"))
        out.append(dict(item, file=file_name, source="archive" if file_name in have else "repack"))
    return out


def branch_pin(branch, family, reason=""):
    """apt preferences that keep every driver package of the family on ``branch`` (priority 1000).

    Without it apt takes the newest branch: NVIDIA's versioned metas before 590 (``cuda-drivers-580``)
    depend on ``nvidia-driver (>= 580.65.06)`` and so pull 590 or later.
    """
    text = "# dlbox.stack.nvidia_driver: keeps the NVIDIA driver on branch %s%s.\n" % (int(branch), reason and " (%s)" % reason)
    text += "# Changed by the role when the branch changes (nvidia_driver_change_branch); do not edit.\n"
    text += "Package: %s\nPin: version %s.*\nPin-Priority: 1000\n" % (" ".join(family), int(branch))
    return text


def parse_madison(text):
    """``apt-cache madison NAME...`` -> [{name, version, source}] in apt's order."""
    out = []
    for line in (text or "").splitlines():
        match = _MADISON.match(line)
        if match:
            out.append({"name": match.group("name"), "version": match.group("version"), "source": match.group("source")})
    return out


def check_branch_simulation(text, branch, family, same_version=(), kernel_package=None, requested=()):
    """Would ``apt-get -s install`` keep every driver package on ``branch``, at one driver version?

    Returns ``{ok, version, wrong: [{name, version}], mismatched: [{name, version}], installs, exact}``:
    ``wrong`` lists driver packages apt would install from another branch (a slide to a newer branch),
    ``mismatched`` the ``same_version`` packages (and the kernel package) not at the driver's version
    ``version`` (the kernel package's, else the most common one of the branch); ``exact``: the
    ``requested`` names as ``name=version`` where apt would install them (as they are otherwise).
    """
    installs = parse_apt_simulate(text)
    wrong, versions = [], {}
    for item in installs:
        found = member_branch(item["name"], item["version"], family)
        if found is None:
            continue
        if found != int(branch):
            wrong.append({"name": item["name"], "version": upstream_version(item["version"])})
        else:
            upstream = upstream_version(item["version"])
            if _DRIVER_VERSION.match(upstream):
                versions[upstream] = versions.get(upstream, 0) + 1
    by_name = dict((item["name"], upstream_version(item["version"])) for item in installs)
    version = by_name.get(kernel_package) if kernel_package else None
    if version is None and versions:
        version = max(versions, key=lambda v: (versions[v], v))
    mismatched = [{"name": name, "version": by_name[name]} for name in list(same_version or ()) + ([kernel_package] if kernel_package else [])
                  if name in by_name and version and by_name[name] != version]
    full = dict((item["name"], item["version"]) for item in installs)
    exact = ["%s=%s" % (name, full[name]) if name in full else name for name in requested or ()]
    return {"ok": not wrong and not mismatched, "version": version, "wrong": wrong, "mismatched": mismatched,
            "installs": [item["name"] for item in installs], "exact": exact}


def fabric_manager_version(madison_text, package, driver_version):
    """The package version of Fabric Manager at exactly ``driver_version``: ``{ok, version, available}``.

    ``available``: the upstream versions the repositories have (for the refusal message).
    """
    entries = [e for e in parse_madison(madison_text) if e["name"] == package]
    available = []
    for entry in entries:
        upstream = upstream_version(entry["version"])
        if upstream not in available:
            available.append(upstream)
    match = next((e["version"] for e in entries if upstream_version(e["version"]) == upstream_version(driver_version)), None)
    return {"ok": match is not None, "version": match, "available": available}


def rollback_plan(packages, kept, family):
    """After a failed branch change: what to purge and what to reinstall from the kept copies.

    ``packages``: what dpkg has now (``parse_dpkg_query`` text: half-configured packages count);
    ``kept``: the ``keep_plan`` entries of the previous branch. Every
    installed driver package (any branch, half-configured ones included) that is not exactly a kept
    (name, version) is purged; the kept .debs are installed (apt resolves them together).
    Returns ``{purge: [names], install: [file names], branch}``.
    """
    keep = set((k["name"], k["version"]) for k in kept)
    purge = sorted(set(name for name, version, _arch in _facts_items(packages)
                       if member_branch(name, version, family) is not None and (name, version) not in keep))
    branches = set(member_branch(k["name"], k["version"], family) for k in kept)
    branches.discard(None)
    return {"purge": purge, "install": [k["file"] for k in kept], "branch": max(branches) if branches else None}
