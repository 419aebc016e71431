# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kernel release helpers (pure, Python 3.8+): which headers meta package follows a kernel flavour."""

from __future__ import annotations

import re

# Distribution -> architecture -> the headers meta package of the distribution's default kernel.
DEFAULT_HEADERS_META = {
    "debian": {"x86_64": "linux-headers-amd64", "aarch64": "linux-headers-arm64"},
    "ubuntu": {"x86_64": "linux-headers-generic", "aarch64": "linux-headers-generic"},
}

# <upstream version>-<ABI number>-<flavour>: 6.1.0-18-cloud-amd64, 5.15.0-1050-aws, 6.8.0-45-generic
_RELEASE = re.compile(r"^\d+\.\d+(?:\.\d+)?-\d+(?:\.\d+)?-(?P<flavour>[a-z0-9][a-z0-9-]*)$")


def kernel_flavour(release):
    """The flavour of a distribution kernel release ("cloud-amd64", "aws"), or None for other kernels."""
    match = _RELEASE.match((release or "").strip())
    return match.group("flavour") if match else None


def headers_meta_candidates(release, distribution, architecture, packages=None):
    """Headers meta packages to try, best first: the flavour of the installed kernel metas, the running kernel's
    flavour, then the default kernel's.

    ``packages``: dpkg's kernel packages (``dpkg-query -W -f KERNEL_DPKG_FORMAT`` text, or its parsed list): the
    flavour of the installed linux-image-<flavour> metas that follow the newest kernel comes first
    (linux-headers-generic-hwe-24.04 on an HWE machine, whose running release ends in "-generic" too; several
    flavours on that kernel: each, sorted). A custom or foreign kernel (no distribution flavour) gets only the
    distribution default; an unknown distribution or architecture gets only the flavour package, if any.
    """
    out = []
    if isinstance(packages, str):
        packages = parse_kernel_packages(packages)
    for meta_flavour in flavour_from_metas(packages or [])["candidates"]:
        out.append("linux-headers-%s" % meta_flavour)
    flavour = kernel_flavour(release)
    if flavour and "linux-headers-%s" % flavour not in out:
        out.append("linux-headers-%s" % flavour)
    default = DEFAULT_HEADERS_META.get((distribution or "").lower(), {}).get(architecture or "")
    if default and default not in out:
        out.append(default)
    return out


def policy_candidates(text):
    """``apt-cache policy NAME ...`` (one command for several names) -> {name: candidate version, or None where apt
    has the name but nothing it would install: "Candidate: (none)", a purely virtual name, every version pinned -1}.
    Names apt does not know at all are not in its output (it says so on stderr and exits 0): not in the result.

    One command for the running kernel's headers and every headers meta candidate: each apt command builds apt's
    policy again (the driver's branch pin: about 1.6 CPU-s on Ubuntu's full archive), and ``apt-cache show`` answered
    0 for a name whose every version is pinned out, which then failed to install."""
    out = {}
    name = None
    for line in (text or "").splitlines():
        if line and not line[0].isspace() and line.rstrip().endswith(":"):
            name = line.rstrip()[:-1]
            out[name] = None
        elif name is not None and line.strip().startswith("Candidate:"):
            value = line.split(":", 1)[1].strip()
            out[name] = None if not value or value == "(none)" else value
    return out


# --- installed kernel packages (Ubuntu and Debian), read the way ubuntu-drivers does ---------------------------
#
# The flavour of the kernel the machine keeps getting is the installed linux-image-<flavour> meta package
# (linux-image-generic-hwe-24.04 Depends linux-image-7.0.0-44-generic, ...), not the running release: the HWE
# kernel 7.0.0-44-generic and the GA kernel 6.8.0-151-generic both end in "-generic".

# dpkg-query format the facts module uses for the kernel packages (Depends last: it may hold tabs? never, but spaces).
KERNEL_DPKG_FORMAT = "${Package}\t${Version}\t${db:Status-Abbrev}\t${Depends}\n"
# The package names dpkg-query is asked about (patterns).
KERNEL_PACKAGE_PATTERNS = ["linux-image-*", "linux-headers-*", "linux-generic*", "linux-virtual*", "linux-modules-nvidia-*"]

_PER_ABI = re.compile(r"^linux-(?:image|headers)-(?:unsigned-)?\d")
_IMAGE_RELEASE = re.compile(r"^linux-image-(?:unsigned-)?(?P<release>\d+\.\d+(?:\.\d+)?-\d+[^\s,(|]*)$")
_DEPENDS_IMAGE = re.compile(r"(?:^|[,|]\s*)linux-image-(?:unsigned-)?(?P<release>\d+\.\d+(?:\.\d+)?-\d+[^\s,(|]*)")


def dpkg_present(status):
    """Whether dpkg's ``${db:Status-Abbrev}`` (``ii``, ``hi``, ``iF``, ``rc`` ...) says the package's files are on disk.

    The one reading of it in the collection (``parse_kernel_packages`` here and ``_nvidia_driver.parse_dpkg_query``):
    its second letter is the package's state; every state but not-installed (``n``) and config-files (``c``) counts,
    so a half-installed (``H``), unpacked (``U``) or half-configured (``F``, a failed postinst) package is present,
    to be repaired rather than ignored. A line without a status (older captures) counts as present.
    """
    status = (status or "").strip()
    return len(status) < 2 or status[1] not in "nc"


def dpkg_unconfigured(status):
    """Whether dpkg's ``${db:Status-Abbrev}`` says the package's files are there but it is not configured: state
    half-installed (``H``), unpacked (``U``) or half-configured (``F``: its post-installation script failed, e.g. a DKMS
    build), or the error flag reinst-required (``R``, third letter). dpkg(1) "INFORMATION ABOUT PACKAGES" (package states
    not-installed, config-files, half-installed, unpacked, half-configured, triggers-awaiting, triggers-pending,
    installed; flag reinst-required) and dpkg-query(1) ``db:Status-Abbrev`` (one letter each: n c H U F W t i; R). Such
    a package is present (:func:`dpkg_present`) but not installed: apt re-runs its configure ("1 not fully installed or
    removed"), and ``dpkg --configure -a`` configures every unpacked or half-configured package."""
    status = (status or "").strip()
    return (len(status) >= 2 and status[1] in "HUF") or (len(status) >= 3 and status[2] == "R")


def parse_kernel_packages(text):
    """``dpkg-query -W -f KERNEL_DPKG_FORMAT`` output -> [{name, version, installed, depends}].

    ``installed``: :func:`dpkg_present` of dpkg's status abbreviation (``ii``, ``hi``, ``iF``, ``iU``, ``iH``: yes;
    ``rc``, ``un``: no).
    """
    out = []
    for line in (text or "").splitlines():
        parts = line.split("\t")
        if len(parts) < 3 or not parts[0]:
            continue
        out.append({"name": parts[0], "version": parts[1], "installed": dpkg_present(parts[2]),
                    "depends": parts[3].strip() if len(parts) > 3 else ""})
    return out


def release_key(release):
    """Order kernel releases as grub does for its default entry: 7.0.0-44-generic > 6.8.0-151-generic > 6.8.0-31-generic."""
    numbers = re.findall(r"\d+", (release or "").split("-", 2)[0] + " " + ("-".join((release or "").split("-")[1:2])))
    return tuple(int(n) for n in numbers)


def image_metas(packages):
    """The installed linux-image-<flavour> meta packages: [{name, flavour, kernel}] (``kernel``: the release it depends on).

    Per-ABI images (linux-image-6.8.0-31-generic) and linux-image-unsigned-* are not metas; a meta whose Depends names
    no kernel image (linux-image-extra-virtual) is left out.
    """
    out = []
    for item in packages or ():
        name = item.get("name") or ""
        if not item.get("installed") or not name.startswith("linux-image-") or _PER_ABI.match(name) or "extra" in name:
            continue
        match = _DEPENDS_IMAGE.search(item.get("depends") or "")
        if match:
            out.append({"name": name, "flavour": name[len("linux-image-"):], "kernel": match.group("release")})
    return out


def installed_kernels(packages):
    """The kernel releases whose linux-image-<release> (or -unsigned-) package is installed, newest first."""
    found = set()
    for item in packages or ():
        match = _IMAGE_RELEASE.match(item.get("name") or "")
        if item.get("installed") and match:
            found.add(match.group("release"))
    return sorted(found, key=release_key, reverse=True)


def next_boot_kernel(boot_releases, running):
    """The kernel that boots next: the newest of /boot/vmlinuz-* (grub's default), else the running one."""
    releases = [r for r in boot_releases or () if r]
    return max(releases, key=release_key) if releases else running


def module_names_for(names, releases):
    """Of the linux-modules-nvidia-* names apt knows, those for the given kernel releases and the flavour metas
    (names that end in no kernel release): what the facts module returns instead of all of them (thousands)."""
    ends = tuple("-" + r for r in releases if r)
    out = []
    for name in names or ():
        name = name.strip()
        if not name.startswith("linux-modules-nvidia-"):
            continue
        if (ends and name.endswith(ends)) or not re.search(r"-\d+\.\d+(?:\.\d+)?-\d+-[a-z]", name):
            out.append(name)
    return sorted(set(out))


def flavour_from_metas(packages):
    """The kernel flavour the installed meta packages follow (ubuntu-drivers' way): {flavour, kernel, candidates}.

    The metas that depend on the newest kernel win (an HWE meta next to an older GA one: the HWE one). ``flavour`` is
    None when no meta is installed, or when metas of different flavours depend on that same newest kernel (ambiguous;
    ``candidates`` lists them).
    """
    metas = image_metas(packages)
    if not metas:
        return {"flavour": None, "kernel": None, "candidates": []}
    newest = max((m["kernel"] for m in metas), key=release_key)
    top = sorted(set(m["flavour"] for m in metas if release_key(m["kernel"]) == release_key(newest)))
    return {"flavour": top[0] if len(top) == 1 else None, "kernel": newest, "candidates": top}
