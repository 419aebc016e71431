# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What unattended-upgrades would do with the driver and the kernel on THIS host, read from its own configuration
(pure; issue 48 red team M7, M9).

unattended-upgrades takes a package only from the origins the host allows (``Unattended-Upgrade::Allowed-Origins``
``"origin:archive"`` and ``Unattended-Upgrade::Origins-Pattern`` ``"o=..,a=..,n=..,l=..,c=..,site=.."``, with
``${distro_id}`` and ``${distro_codename}`` substituted; each value is an fnmatch pattern), and its sanity check refuses a
whole change when one package of it comes from another origin, is blacklisted or held, or would be REMOVED
(unattended-upgrades 2.9.1 ``check_changes_for_sanity``: "pkg %s is marked to be deleted", "pkg %s is not in an allowed
origin"). The packages' default files (tests/fixtures/unattended/, from mvo5/unattended-upgrades at the shipped release):

- Ubuntu 22.04 (2.8ubuntu1) and 24.04 (2.9.1+nmu4ubuntu1), data/50unattended-upgrades.Ubuntu: ``${distro_id}:
  ${distro_codename}``, ``-security``, ``${distro_id}ESMApps:${distro_codename}-apps-security``,
  ``${distro_id}ESM:${distro_codename}-infra-security``; ``-updates`` is commented out. A driver point release or a
  kernel published to -updates only is never taken unattended; a kernel in -security whose signed module needs a driver
  version found in -updates only comes ALONE.
- Debian 12 (2.9.1+nmu3), data/50unattended-upgrades.Debian: ``origin=Debian,codename=${distro_codename},label=Debian``
  (the point releases), ``...,label=Debian-Security`` and ``codename=${distro_codename}-security,label=Debian-Security``;
  bookworm-updates is not taken.
- NVIDIA's CUDA repository (Origin NVIDIA) is in no default: its driver is never upgraded unattended unless a site adds it.

The decision reads three outputs of the host: ``apt-config dump`` (the configuration as apt merged it), ``apt-cache
policy`` (every package file's release fields) and ``apt-get -s upgrade --with-new-pkgs`` (the versions an upgrade
would install, each with the ``Label:Version/Archive`` of the releases that carry it, as apt prints them).

Older kernels (M9): Ubuntu's signed module of a kernel requires exactly the driver version it was built against
(``linux-modules-nvidia-580-open-6.8.0-149-generic`` Depends ``nvidia-kernel-common-580 (<= 580.178.04-1),
nvidia-kernel-common-580 (>= 580.178.04)``, RECORDED tests/fixtures/holds/ubuntu2404-noble-updates-nvidia-580.txt;
Ubuntu respins only the current kernel's module, ``6.8.0-151.151+1``). A point release therefore removes the module of
every older kernel in /boot (apt's ``Remv``; unattended-upgrades refuses the removal and with it the whole driver
change). On the DKMS path the new version is built for the kernels with headers only; the old version's modules go
with the old package (``dkms remove``), so a kernel in /boot without headers boots without a module.
"""

from __future__ import annotations

import fnmatch
import re
import string

# apt-config dump: `Key "value";` and list items `Key:: "value";`
_DUMP = re.compile(r'^(?P<key>\S+?)(?P<item>::)?\s+"(?P<value>.*)";\s*$')
# apt-cache policy: the package file line, then ` release v=..,o=..,a=..,n=..,l=..,c=..,b=..` and ` origin SITE`
# (a flat archive: `500 URI ./ Packages`; NVIDIA's: `500 https://developer.download.nvidia.com/.../x86_64  Packages`)
_POLICY_FILE = re.compile(r"^\s*(?P<priority>-?\d+)\s+(?P<uri>\S+)\s+(?:(?P<dist>\S+)\s+)?(?:(?P<arch>\S+)\s+)?Packages\s*$")
_POLICY_RELEASE = re.compile(r"^\s+release\s+(?P<fields>.*)$")
_POLICY_ORIGIN = re.compile(r"^\s+origin\s+(?P<site>\S+)\s*$")
# apt-get -s: `Inst NAME [OLD] (NEW Label:Version/Archive, Label2:Version2/Archive2 [arch])`
_INST = re.compile(r"^Inst\s+(?P<name>\S+)\s+(?:\[(?P<old>[^\]]*)\]\s+)?\((?P<version>\S+)(?P<sources>.*?)\s*\[[^\]]*\]\)")
_REMV = re.compile(r"^Remv\s+(?P<name>\S+)")
_NEW_IMAGE = re.compile(r"^linux-image-(?:unsigned-)?(?P<abi>\d+\.\d+(?:\.\d+)?-\d+-[a-z][a-z0-9-]*)$")
_ABI_MODULE = re.compile(r"^linux-modules-nvidia-\d+(?:-server)?(?:-open)?-(?P<abi>\d+\.\d+(?:\.\d+)?-\d+-[a-z][a-z0-9-]*)$")
# The driver's own packages (data/compat.yml upgrade_blacklist, and the versioned firmware): the user space, Fabric
# Manager, NSCQ, nvidia-kernel-common. The per-ABI module packages are kernel followers, judged per kernel.
_DRIVER = re.compile(r"^(?:(?:lib)?nvidia(?!-mig-manager$)|libcuda|firmware-nvidia|xserver-xorg-video-nvidia)")
# The kernel metas an upgrade follows to a new kernel (linux-generic-hwe-24.04, linux-image-generic, linux-headers-amd64);
# not the per-ABI packages (a release 6.8.0-1003 in the name), nor linux-firmware, linux-base or linux-libc-dev.
_KERNEL_META = re.compile(r"^linux-(?:image-|headers-)?(?:generic|lowlatency|virtual|server|aws|azure|gcp|gke|oracle|kvm|ibm|oem|"
                          r"nvidia|amd64|cloud-amd64|rt-amd64|arm64|cloud-arm64|rt-arm64)(?:[a-z0-9.+-]*)$")
_ABI_IN_NAME = re.compile(r"\d+\.\d+(?:\.\d+)?-\d+")
_KEPT_BACK = re.compile(r"^The following packages have been kept back:\s*$")
_FIELD_KEYS = {"o": "o", "origin": "o", "l": "l", "label": "l", "a": "a", "archive": "a", "suite": "a", "c": "c",
               "component": "c", "n": "n", "codename": "n", "site": "site"}


def read_config(dump):
    """unattended-upgrades' settings from ``apt-config dump``: {allowed_origins, origins_pattern, blacklist, periodic}.
    ``periodic``: ``APT::Periodic::Unattended-Upgrade`` (None when unset: apt.systemd.daily then never runs it)."""
    out = {"allowed_origins": [], "origins_pattern": [], "blacklist": [], "periodic": None}
    lists = {"Unattended-Upgrade::Allowed-Origins": "allowed_origins", "Unattended-Upgrade::Origins-Pattern": "origins_pattern",
             "Unattended-Upgrade::Package-Blacklist": "blacklist"}
    for line in (dump or "").splitlines():
        match = _DUMP.match(line.strip())
        if not match:
            continue
        key, value = match.group("key"), match.group("value")
        if match.group("item") and key in lists:
            out[lists[key]].append(value)
        elif not match.group("item") and key == "APT::Periodic::Unattended-Upgrade":
            out["periodic"] = value
    return out


def substitute(line, distro_id, codename):
    """u-u's ``substitute``: ``${distro_id}`` and ``${distro_codename}``."""
    return string.Template(line).safe_substitute({"distro_id": distro_id or "", "distro_codename": codename or ""})


def origin_patterns(config, distro_id, codename):
    """u-u's ``get_allowed_origins``: each ``Allowed-Origins`` ``"origin:archive"`` (or ``"origin archive"``) as
    ``o=origin,a=archive``, then each ``Origins-Pattern`` as written; substituted."""
    out = []
    for item in (config or {}).get("allowed_origins") or ():
        parts = re.split(r"(?<!\\):", item) if re.findall(r"(?<!\\):", item) else item.split()
        if len(parts) != 2:
            continue  # u-u itself stops with "Unable to parse"
        origin = re.sub(r"([^\\]),", r"\1\\,", re.sub(r"\\:", ":", parts[0]))
        archive = re.sub(r"([^\\]),", r"\1\\,", parts[1])
        out.append("o=%s,a=%s" % (substitute(origin, distro_id, codename), substitute(archive, distro_id, codename)))
    return out + [substitute(p, distro_id, codename) for p in (config or {}).get("origins_pattern") or ()]


def matches(pattern, release, distro_id="", codename=""):
    """u-u's ``match_whitelist_string``: every ``key=value`` of ``pattern`` fnmatches the release's field; an empty pattern
    or an unknown key matches nothing."""
    pattern = (pattern or "").strip()
    if not pattern:
        return False
    for token in pattern.replace("\\,", "%2C").split(","):
        if "=" not in token:
            return False
        what, value = [s.strip().replace("%2C", ",") for s in token.split("=", 1)]
        key = _FIELD_KEYS.get(what)
        if key is None or not fnmatch.fnmatch(release.get(key) or "", substitute(value, distro_id, codename)):
            return False
    return True


def allowed(release, patterns):
    """u-u's ``is_allowed_origin`` (the status file's ``now`` is allowed)."""
    if release.get("a") == "now" and release.get("c", "now") == "now" and not release.get("l") and not release.get("site"):
        return True
    return any(matches(p, release) for p in patterns or ())


def policy_releases(text):
    """The package files of ``apt-cache policy`` (no argument): [{priority, uri, o, a, n, l, c, v, b, site}]."""
    out = []
    current = None
    for line in (text or "").splitlines():
        if line.startswith("Pinned packages:"):
            break
        match = _POLICY_FILE.match(line)
        if match:
            current = {"priority": int(match.group("priority")), "uri": match.group("uri"), "site": ""}
            out.append(current)
            continue
        if current is None:
            continue
        match = _POLICY_RELEASE.match(line)
        if match:
            for field in match.group("fields").split(","):
                if "=" in field:
                    key, value = field.split("=", 1)
                    current[key.strip()] = value.strip()
            continue
        match = _POLICY_ORIGIN.match(line)
        if match:
            current["site"] = match.group("site")
    return out


def simulated(simulation):
    """The ``Inst`` and ``Remv`` lines of ``apt-get -s``: {installs: [{name, old, version, sources: [(label, version,
    archive)]}], removes: [name], kept_back: [name] (apt's "The following packages have been kept back:")}."""
    installs, removes, kept = [], [], []
    in_kept = False
    for line in (simulation or "").splitlines():
        if _KEPT_BACK.match(line):
            in_kept = True
            continue
        if in_kept and line.startswith("  "):
            kept.extend(line.split())
            continue
        in_kept = False
        line = line.strip()
        match = _INST.match(line)
        if match:
            sources = []
            for item in match.group("sources").split(","):
                item = item.strip()
                if not item:
                    continue
                # apt's RelStr: Label:Version/Archive; Label:Archive when the Release has no Version (a flat archive)
                label, _sep, rest = item.rpartition(":")
                version, _sep, archive = rest.rpartition("/")
                sources.append((label, version, archive))
            installs.append({"name": match.group("name"), "old": match.group("old"), "version": match.group("version"),
                             "sources": sources})
            continue
        match = _REMV.match(line)
        if match:
            removes.append(match.group("name"))
    return {"installs": installs, "removes": removes, "kept_back": kept}


def _releases_of(source, releases):
    label, version, archive = source
    # without a Suite apt names the site instead of the archive
    return [r for r in releases if (r.get("l") or "") == label and archive in ((r.get("a") or ""), (r.get("site") or "-"))
            and (not version or (r.get("v") or "") == version)]


def from_allowed_origin(install, releases, patterns):
    """True when one release that carries the version (as the simulation names it) is allowed. A source the policy does
    not list counts as not allowed (unattended-upgrades would not take what it cannot place)."""
    return any(allowed(r, patterns) for s in install["sources"] for r in _releases_of(s, releases))


def _some(names, limit=4):
    return ", ".join(names[:limit]) + (" and %d more" % (len(names) - limit) if len(names) > limit else "")


def _blacklisted(name, regexps):
    for regexp in regexps or ():
        try:
            if re.match(regexp, name):
                return True
        except re.error:
            continue
    return False


def decide(simulation, policy, dump, distro_id, codename, installed=(), held=(), role_blacklist=(), program=True):
    """What an unattended run would do with the kernels and the driver: {enabled, patterns, driver, kernels_alone,
    kernels_with_module, kernels_not_taken, why, message}.

    ``simulation``: ``apt-get -s upgrade --with-new-pkgs`` (all origins, the host's pins); ``policy``: ``apt-cache
    policy``; ``dump``: ``apt-config dump``; ``distro_id``/``codename``: what u-u substitutes (``lsb_release -is/-cs``,
    Ansible's distribution and distribution_release); ``installed``: dpkg's package names; ``held``: ``apt-mark
    showhold``; ``role_blacklist``: the role's blacklist names (the file it writes; the host's dump may already hold
    it); ``program``: whether unattended-upgrade is installed.

    The driver moves unattended only when every one of its new versions comes from an allowed origin, none is
    blacklisted or held, and the upgrade removes nothing (u-u refuses a change that removes a package: an older kernel's
    signed module built against the old point release). A new kernel is taken when its image comes from an allowed
    origin and no kernel meta the upgrade moves is blacklisted, held or from another origin; it has its module when its
    ``linux-modules-nvidia-*-<abi>`` is installed already, or comes from an allowed origin while the driver moves too.
    """
    config = read_config(dump)
    patterns = origin_patterns(config, distro_id, codename)
    enabled = bool(program) and (config["periodic"] or "0").strip() not in ("0", "", "false")
    releases = policy_releases(policy)
    sim = simulated(simulation)
    blacklist = list(config["blacklist"]) + ["^%s$" % re.escape(n) for n in role_blacklist or ()]
    held = set(h.split(":", 1)[0].strip() for h in held or ())
    have = set(installed or ())

    def refused(item):
        name = item["name"]
        if name in held:
            return "held"
        if _blacklisted(name, blacklist):
            return "blacklisted"
        if not from_allowed_origin(item, releases, patterns):
            return "only in %s, which unattended-upgrades does not take" % (
                ", ".join(s[2] or s[0] for s in item["sources"]) or "no archive apt-cache policy lists")
        return ""

    driver = [i for i in sim["installs"] if _DRIVER.match(i["name"]) and i["old"]]
    grouped = {}
    for item in driver:
        reason = refused(item)
        if reason:
            grouped.setdefault(reason, []).append("%s %s" % (item["name"], item["version"]) if not grouped.get(reason) else item["name"])
    why = ["%s: %s" % (reason, _some(names)) for reason, names in grouped.items()]
    removed = list(sim["removes"])
    if removed and driver:
        why.append("the upgrade would remove %s (unattended-upgrades removes nothing)" % ", ".join(removed))
    kept = [n for n in sim["kept_back"] if _DRIVER.match(n)]
    if kept:
        # apt cannot upgrade them without removing a package (an older kernel's signed module built against the
        # installed point release) or installing one the upgrade may not; unattended-upgrades, which never removes, keeps
        # them too
        why.append("apt keeps back %s (the point release cannot come without removing a package, such as an older "
                   "kernel's signed module built against the installed release)" % _some(kept))
    driver_moves = bool(driver or kept) and not why
    metas = [i for i in sim["installs"] if i["old"] and _KERNEL_META.match(i["name"]) and not _ABI_IN_NAME.search(i["name"])
             and not _ABI_MODULE.match(i["name"]) and not i["name"].startswith("linux-modules-nvidia-")]
    meta_refused = [(i["name"], refused(i)) for i in metas if refused(i)]
    modules = dict((m.group("abi"), i) for i, m in ((i, _ABI_MODULE.match(i["name"])) for i in sim["installs"]) if m)
    modules_have = set(m.group("abi") for m in (_ABI_MODULE.match(n) for n in have) if m)
    alone, with_module, not_taken = [], [], []
    for item in sim["installs"]:
        match = _NEW_IMAGE.match(item["name"])
        if not match or item["old"] or item["name"] in have:
            continue
        abi = match.group("abi")
        reason = refused(item) or ("; ".join("%s %s" % pair for pair in meta_refused) if meta_refused else "")
        if reason:
            not_taken.append({"kernel": abi, "why": reason})
            continue
        module = modules.get(abi)
        if abi in modules_have or (module is not None and not refused(module) and (driver_moves or not driver)):
            with_module.append(abi)
        else:
            if module is None:
                why_alone = "its signed module comes from no archive the upgrade reaches"
            else:
                why_alone = "its signed module %s %s" % (module["name"], refused(module) or "needs the driver's point release, which stays")
            alone.append({"kernel": abi, "why": why_alone})
    out = {"enabled": enabled, "program": bool(program), "periodic": config["periodic"], "patterns": patterns,
           "driver": {"moves": driver_moves, "packages": [i["name"] for i in driver] + kept, "why": why},
           "kernels_alone": alone, "kernels_with_module": with_module, "kernels_not_taken": not_taken}
    out["message"] = message(out)
    return out


def message(out):
    """The decision in words (one line)."""
    if not out["program"]:
        head = "unattended-upgrades is not installed: no kernel and no driver moves unattended."
    elif not out["enabled"]:
        head = ("unattended-upgrades is installed but not enabled (APT::Periodic::Unattended-Upgrade is %s): nothing moves "
                "unattended." % (out["periodic"] if out["periodic"] is not None else "unset"))
    else:
        head = "unattended-upgrades takes from: %s." % ("; ".join(out["patterns"]) or "no origin")
    parts = [head]
    if out["driver"]["packages"]:
        parts.append("Driver point release: %s." % (
            "moves unattended with its module" if out["driver"]["moves"] else "stays (%s)" % "; ".join(out["driver"]["why"])))
    for item in out["kernels_alone"]:
        parts.append("Kernel %s: %s WITHOUT its NVIDIA module (%s)." % (
            item["kernel"], "would come unattended" if out["enabled"] else "would come, were unattended-upgrades on,",
            item["why"]))
    for abi in out["kernels_with_module"]:
        parts.append("Kernel %s: comes with its NVIDIA module." % abi)
    for item in out["kernels_not_taken"]:
        parts.append("Kernel %s: not taken unattended (%s)." % (item["kernel"], item["why"]))
    return " ".join(parts)


def _version_key(text):
    return [int(x) for x in re.findall(r"\d+", text or "")]


def _accepts(depends, version):
    """Whether ``nvidia-kernel-common-<b>`` relations of a module's Depends (``(<= 580.178.04-1)``, ``(>= 580.178.04)``)
    admit driver ``version`` (upstream, ``580.196.07``). No such relation: True."""
    ok = True
    for op, bound in re.findall(r"nvidia-kernel-common-\d+(?:-server)?\s*\(\s*(<=|>=|=|<<|>>)\s*([^)\s]+)\s*\)", depends or ""):
        upstream = bound.split("-", 1)[0]
        have, want = _version_key(version), _version_key(upstream)
        if op == ">=":
            ok = ok and have >= want
        elif op == "<=":
            # (<= 580.178.04-1): every Ubuntu revision of 580.178.04 and nothing newer
            ok = ok and have <= want
        elif op in ("=",):
            ok = ok and have == want
        elif op == "<<":
            ok = ok and have < want
        elif op == ">>":
            ok = ok and have > want
    return ok


def boot_without_module(boot_kernels, signing, new_version, modules=None, candidates=None, simulation="",
                        dkms_kernels=()):
    """The kernels in /boot that will boot without the NVIDIA module once the driver is at ``new_version`` (a point
    release), each with why: [{kernel, why}].

    ``boot_kernels``: the releases of /boot/vmlinuz-*. Signed path (``precompiled``): ``modules``: {abi: the installed
    ``linux-modules-nvidia-*-<abi>``'s Depends}; ``candidates``: {abi: the Depends of the archive's newest module for that
    kernel} (a respin against the new release keeps the kernel); ``simulation``: the upgrade's ``apt-get -s`` (a
    ``Remv`` of a kernel's module, an ``Inst`` of its respin). A kernel keeps its module when its installed module, or
    the archive's, admits the new version. DKMS path: ``dkms_kernels`` (the kernels with headers: DKMS builds for those
    only; the old version's modules are removed from every kernel with the old package)."""
    out = []
    sim = simulated(simulation)
    removed = set(m.group("abi") for m in (_ABI_MODULE.match(n) for n in sim["removes"]) if m)
    respun = set(m.group("abi") for m in (_ABI_MODULE.match(i["name"]) for i in sim["installs"]) if m)
    for kernel in boot_kernels or ():
        if signing != "precompiled":
            if kernel not in (dkms_kernels or ()):
                out.append({"kernel": kernel, "why": "no headers (linux-headers-%s): DKMS builds %s only for kernels with "
                                                     "headers, and the old version's module goes with the old package"
                                                     % (kernel, new_version)})
            continue
        have = (modules or {}).get(kernel)
        archive = (candidates or {}).get(kernel)
        if kernel in respun or (have is not None and _accepts(have, new_version) and kernel not in removed):
            continue
        if archive is not None and _accepts(archive, new_version):
            continue
        if have is None and archive is None:
            why = "no signed NVIDIA module for it is installed or in the archive"
        else:
            why = ("its signed module requires the older driver (%s) and the archive has no respin for %s: the point release "
                   "removes it" % (", ".join(re.findall(r"nvidia-kernel-common-\d+(?:-server)?\s*\([^)]*\)", have or archive or ""))
                                   or "another version", new_version))
        out.append({"kernel": kernel, "why": why})
    return out


def modules_by_kernel(kernel_packages):
    """{kernel release: Depends} of the installed ``linux-modules-nvidia-*-<release>`` among nvidia_driver_facts'
    ``kernel.packages`` ([{name, version, installed, depends}])."""
    out = {}
    for pkg in kernel_packages or ():
        match = _ABI_MODULE.match(pkg.get("name") or "")
        if match and pkg.get("installed", True):
            out[match.group("abi")] = pkg.get("depends") or ""
    return out


def headers_kernels(kernel_packages):
    """The releases whose ``linux-headers-<release>`` is installed (DKMS builds for those)."""
    out = []
    for pkg in kernel_packages or ():
        match = re.match(r"^linux-headers-(?P<abi>\d+\.\d+(?:\.\d+)?-\d+[^\s]*)$", pkg.get("name") or "")
        if match and pkg.get("installed", True) and match.group("abi") not in out:
            out.append(match.group("abi"))
    return out


def next_release_forecast(boot_kernels, signing, modules=None, dkms_kernels=(), running=""):
    """Before any point release is published: the kernels in /boot that the NEXT one leaves without the NVIDIA module,
    [{kernel, why}]. Signed path: a kernel whose installed module admits only the installed driver version, other than
    the newest kernel in /boot (Ubuntu respins the newest kernel's module against a point release, not the older ones':
    RECORDED noble-updates, 6.8.0-151.151+1 respun, 6.8.0-149.149 left at 580.178.04), and a kernel with no module at
    all. DKMS path: a kernel without headers."""
    boot = list(boot_kernels or ())
    newest = max(boot, key=_version_key) if boot else ""
    out = []
    for kernel in boot:
        if signing != "precompiled":
            if kernel not in (dkms_kernels or ()):
                out.append({"kernel": kernel, "why": "no headers (linux-headers-%s): DKMS builds only for kernels with headers, "
                                                     "so it has no module now either" % kernel})
            continue
        depends = (modules or {}).get(kernel)
        if depends is None:
            out.append({"kernel": kernel, "why": "no signed NVIDIA module is installed for it: it has none now either"})
        elif kernel != newest and not _accepts(depends, "99999.0.0"):
            out.append({"kernel": kernel, "why": "its signed module requires exactly the installed driver (%s); a point release "
                                                 "removes it, and Ubuntu respins only the newest kernel's module%s" % (
                                                     ", ".join(re.findall(r"nvidia-kernel-common-\d+(?:-server)?\s*\([^)]*\)", depends)),
                                                     " (it is the running kernel)" if kernel == running else "")})
    return out


def boot_message(items, when):
    """``items`` of :func:`boot_without_module` or :func:`next_release_forecast` in words ('' when none)."""
    if not items:
        return ""
    return "%s, these kernels in /boot boot WITHOUT the NVIDIA module: %s. Keep GRUB's default on a kernel that has it." % (
        when, "; ".join("%s (%s)" % (i["kernel"], i["why"]) for i in items))
