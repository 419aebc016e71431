# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the ``nvidia_driver`` role does on a host, decided on the controller (pure).

:func:`decide` turns the role's options, the plan's driver (``stack.driver``, ``stack.fabric_manager``, ``host``),
the package names of ``data/compat.yml`` (``driver_package_names``) and what ``nvidia_driver_facts`` found into
one result the tasks only wire: why nothing is installed (skip reason), the package set and how the module gets
signed, the archive components to add, whether the branch changes (decided here only), the branch pin, the
verdict on apt's simulation, the driver version to install and Fabric Manager's, the checks after the install,
and the rollback of a failed branch change. Every refusal names the variable and says what would work.

The helpers below it are the single decisions, each unit-tested: :func:`driver_packages`, :func:`signing_path`,
:func:`check_simulation`, :func:`check_branch_simulation`, :func:`branch_change`, :func:`keep_plan`,
:func:`branch_pin`, :func:`fabric_manager_version`, :func:`rollback_plan`, :func:`apt_sources_with_components`.
Parsing of host output lives in ``module_utils._nvidia_driver`` (run by the facts module on the host).
"""

from __future__ import annotations

import copy
import re

from ansible_collections.dlbox.stack.plugins.module_utils import _nvidia_driver as nd
from ansible_collections.dlbox.stack.plugins.plugin_utils import compat_data
from ansible_collections.dlbox.stack.plugins.plugin_utils import nvidia_driver_holds as nh
from ansible_collections.dlbox.stack.plugins.plugin_utils import nvidia_driver_kernel as nk
from ansible_collections.dlbox.stack.plugins.plugin_utils import nvlink5_fabric as nf
from ansible_collections.dlbox.stack.plugins.plugin_utils.versions import compare_versions
from ansible_collections.dlbox.stack.plugins.plugin_utils.roles import _spec


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
    if choice not in _spec.choices("nvidia_driver", "nvidia_driver_secure_boot_signing"):
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


def check_simulation(text, primary, branch, same_version=(), installed=None):
    """Would ``apt-get install <requested>`` install the branch that was asked for?

    Returns {ok, branch_found, version, pulled: [{name, branch}], mismatched: [{name, version}],
    dkms: [names], installs: [names]}.
    ``pulled`` lists packages apt would bring whose name carries another branch (a transitional
    package such as nvidia-headless-535-server pulling nvidia-headless-580-server), and the primary
    package when its version is of another branch. ``version``: the primary package's upstream
    version (from the simulation, or from ``installed`` {name: version} when it is already there).
    """
    installs = nd.parse_apt_simulate(text)
    versions = dict((item["name"], item["version"]) for item in installs)
    versions_installed = dict(installed or {})
    pulled = []
    for item in installs:
        found = nd.branch_in_name(item["name"])
        if found is not None and found != int(branch) and item["name"].startswith(nd.DRIVER_PREFIXES):
            pulled.append({"name": item["name"], "branch": found})
    primary_version = versions.get(primary) or versions_installed.get(primary)
    primary_branch = nd.branch_of_version(primary_version) if primary_version else None
    if primary_branch is not None and primary_branch != int(branch):
        pulled.insert(0, {"name": primary, "branch": primary_branch})
    mismatched = []
    for name in same_version or ():
        version = versions.get(name) or versions_installed.get(name)
        if primary_version and version and nd.upstream_version(version) != nd.upstream_version(primary_version):
            mismatched.append({"name": name, "version": nd.upstream_version(version)})
    dkms = [item["name"] for item in installs if re.match(r"^nvidia-(dkms|kernel-dkms|open-kernel-dkms)\b", item["name"])]
    branches = sorted(set(p["branch"] for p in pulled))
    return {
        "ok": not pulled and not mismatched and primary_version is not None,
        "branch_found": branches[-1] if branches else primary_branch,
        "version": nd.upstream_version(primary_version) if primary_version else None,
        "pulled": pulled,
        "mismatched": mismatched,
        "dkms": dkms,
        "installs": [item["name"] for item in installs],
    }


def branch_component(names, distribution_version, branch):
    """The archive component that carries driver ``branch`` on this release where the data names one
    (driver_package_names.distro.<family>.branch_components: Ubuntu 26.04's R620 is in multiverse only), else None."""
    found = None
    for row in names.get("branch_components") or []:
        if str(distribution_version) in [str(v) for v in row.get("versions") or []] and int(branch) >= int(row["branch_min"]):
            found = row["component"]
    return found


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


# apt preferences name their packages with globs (fnmatch), never /regular expressions/: apt matches every pattern of a
# preferences file against every package of its cache each time it builds its policy (every apt-get, apt-cache, apt
# module run), and glibc's regexec is slow at it. On Ubuntu 24.04 with the archive's main, restricted, universe and
# multiverse lists (about 100,000 packages), the regular-expression form of this pin (2026-12-05) made one `apt-cache
# policy nvidia-utils-580` take 30 CPU-s (56 s wall beside other work; 0.08 s without the file); one regular expression
# of it alone took 3.8-13.6 s, two globs 0.15 s (measured in molecule/nvidia_driver_signed's container, 2026-12-06).
# A real host paid that on every apt command after the role ran, and the FIXTURE GPU host scenarios spent most of their
# CPU in it (the role's driver install: 261 s, its upgrade simulation: 65 s). tests/benchmarks/bench_apt_pin.py prints
# the figures on a synthetic archive of that size. Globs cost too, about 0.06 CPU-s each on 170,908 names (Ubuntu 22.04's
# full archive): the pin's 53 globs took 3.0-3.2 CPU-s an apt command, its 23 now (any_branch_pattern, linux-[mos]*,
# _unsubsumed) 1.6-1.7 (molecule/server_hgx_default's container, 2026-12-06; 0.01 s without the file).


def branch_names_pattern(branch):
    """apt preferences' globs of the package names that carry ``branch`` (Ubuntu's names, which NVIDIA's Ubuntu repository
    shares before 590): ``libnvidia-compute-580``, ``nvidia-kernel-common-580-server``, ``nvidia-firmware-580-580.196.07``,
    ``linux-modules-nvidia-580-open-generic``, ``cuda-drivers-580``; names without a glob character are exact names."""
    return " ".join(_numbered(str(int(branch))))


# The shapes of a driver package name with its branch number as a whole name token. ``linux-[mos]*`` is Ubuntu's
# linux-modules-, linux-objects- and linux-signatures-nvidia-<branch>-* in one glob: apt matches each glob of a
# preferences file against every package name of its cache (below), so every glob less is a pass less.
_SHAPES = ("nvidia*-{n}", "nvidia*-{n}-*", "libnvidia*-{n}", "libnvidia*-{n}-*", "linux-[mos]*-nvidia-{n}-*",
           "xserver-xorg-video-nvidia-{n}", "cuda-drivers-{n}", "cuda-drivers-fabricmanager-{n}")


def _numbered(number):
    """The driver name globs (:data:`_SHAPES`) with ``number`` (a branch, or a glob class of three digits)."""
    return [shape.format(n=number) for shape in _SHAPES]


def pin_names(names=None):
    """NVIDIA's exact package names without a branch number that :func:`branch_pin` names, as apt preferences' text.

    ``names``: ``driver_package_names`` of data/compat.yml (the collection's own data when None), where these vendor facts
    live with their sources: ``branchless`` (Fabric Manager, NSCQ, IMEX, the persistence daemon, nvidia-settings and
    nvidia-modprobe with their -dev packages: from the driver's archive only, issue 48 red-team 5) and
    ``nvidia_repo_branchless`` (NVIDIA's repository from its ``branch_min`` on: the branch left out of every driver
    package name, NVIDIA Driver Installation Guide r590 Table 4; its Debian compute-only names). Returns ``{branchless,
    nvidia_repo, branch_min}``; ``nvidia_repo`` ends with the branchless names (every branch of the repository shares
    them, so only their version tells the branch); ``origins_also``: {origin: [the same distribution's other Release
    Origins]} (Ubuntu Pro's ESM archives)."""
    if names is None:
        names = compat_data.load_compat()["driver_package_names"]
    try:
        branchless = list(names["branchless"]["names"])
        repo = names["nvidia_repo_branchless"]
        return {"branchless": " ".join(branchless), "nvidia_repo": " ".join(list(repo["names"]) + branchless),
                "branch_min": int(repo["branch_min"]),
                "origins_also": dict((k, list(v or ())) for k, v in (names.get("origins_also") or {}).items())}
    except (KeyError, TypeError) as exc:
        raise ValueError("driver_package_names of data/compat.yml has no branchless / nvidia_repo_branchless names (%s)" % exc)


def _not_number(branch):
    """Glob classes that together match every three-digit decimal number but ``branch`` (NVIDIA's branches are three
    digits, R304 to R620 in data/compat.yml; a glob has no alternation, so each class is its own pattern)."""
    digits = "%03d" % int(branch)
    if len(digits) != 3:
        raise ValueError("driver branch %r: NVIDIA's branches have three digits" % (branch,))
    classes = []
    for i, digit in enumerate(digits):
        others = "".join(d for d in "0123456789" if d != digit)
        classes.append(digits[:i] + "[" + others + "]" + "[0-9]" * (len(digits) - i - 1))
    return classes


def other_branches_pattern(branch):
    """apt preferences' globs of the driver package names of every (three-digit) branch but ``branch``
    (``nvidia-driver-595``, ``libnvidia-compute-570-server``, ``linux-modules-nvidia-595-open-generic``,
    ``cuda-drivers-595``, ``cuda-drivers-fabricmanager-595``): the branch number is a whole name token."""
    return " ".join(name for n in _not_number(branch) for name in _numbered(n))


def any_branch_pattern():
    """The driver name globs of every three-digit branch, this one included: 8 globs where :func:`other_branches_pattern`
    has 24. Only after stanzas that already pin every version of the branch's own names (``Pin: release *`` matches the
    dpkg status too, and apt takes a version's first matching pin), so they catch the other branches only."""
    return " ".join(_numbered("[0-9][0-9][0-9]"))


def other_versions(branch):
    """apt preferences' version globs of every version but ``<branch>.*``: another three-digit branch
    (``595.71.05-1ubuntu1``), and a first number of one, two, four or more digits. Each ends in ``?``: apt reads a version
    pin ending in ``*`` as a prefix and drops the star (apt-pkg/versionmatch.cc), which would make the classes literal."""
    return ["%s.*?" % digits for digits in _not_number(branch)] + ["[0-9].*?", "[0-9][0-9].*?", "[0-9][0-9][0-9][0-9]*?"]


def branch_pin(branch, family, reason="", origin=None, names=None):
    """apt preferences that keep every driver package of the family on ``branch`` (priority 1000) and, with ``origin``
    (the Release ``Origin`` of the driver's archive: ``Ubuntu`` or ``Debian`` for the distribution's driver, ``NVIDIA`` for
    NVIDIA's repository), from that archive only. ``names``: ``driver_package_names`` of data/compat.yml, whose exact names
    without a branch the stanzas name (:func:`pin_names`; the collection's own data when None).

    Stanzas, in order (for a package version apt takes the first matching specific pin):

    1. the branch's names and NVIDIA's branch-less names (:func:`pin_names` ``branchless``) from ``origin``: 1000; then the same
       names from any other release: -1. A positive pin: a PPA, a mirror rewriting ``Origin`` or a third archive never
       wins (a pin against one named origin let them through). Without it the 580.* pin admits both archives under the
       same names (NVIDIA's Ubuntu repository uses Ubuntu's names before 590): one driver from two archives, e.g.
       ``nvidia-dkms-575 : Depends: nvidia-kernel-common-575 (= 575.57.08-0ubuntu1) but 575.64.03-0ubuntu0.24.04.1 is to
       be installed`` (a user's apt with NVIDIA's repository beside Ubuntu's, tests/fixtures/SOURCES.md);
   1b. (NVIDIA's repository, branch 590 on) NVIDIA's names without a branch (:func:`pin_names` ``nvidia_repo``): every other
       branch's versions -1 (:func:`other_versions`), this branch's from o=NVIDIA 1000, from elsewhere -1;
    2. the driver names of every other branch: -1. When Ubuntu retires a branch its metas become transitional packages
       of the next one (packages.ubuntu.com: nvidia-driver-590 590.48.01-0ubuntu0.25.10.5 Depends nvidia-driver-595;
       linux-modules-nvidia-590-generic a dummy transitional package): the version pin alone lets them pull the next
       branch and remove this one. With ``origin``, stanza 1 already pinned every version of the branch's own names
       (archives and dpkg status alike), so the globs of every branch (:func:`any_branch_pattern`, 8) stand for the other
       branches' (:func:`other_branches_pattern`, 24); without it the other branches' digit classes are written;
    3. the family at ``<branch>.*``: 1000. Without it apt takes the newest branch: NVIDIA's versioned metas before 590
       (``cuda-drivers-580``) depend on ``nvidia-driver (>= 580.65.06)`` and so pull 590 or later.
    """
    b = int(branch)
    unbranched = pin_names(names)
    text = "# dlbox.stack.nvidia_driver: keeps the NVIDIA driver on branch %s%s.\n" % (b, reason and " (%s)" % reason)
    text += "# Changed by the role when the branch changes (nvidia_driver_change_branch); do not edit.\n"
    if origin:
        # NVIDIA's repository carries the branch-less names of every branch (nvidia-fabricmanager 580.95.05, 595.71.05,
        # ...): at 1000 from o=NVIDIA whatever the version they outranked the family's <branch>.* pin below and apt took
        # the newest branch's Fabric Manager (found by the clean-clone make test, molecule server and
        # nvidia_driver_repo). There they stay with the family's version pin; the distributions ship none of them, so
        # from Ubuntu's or Debian's origin only (none) keeps NVIDIA's out (issue 48 red-team 5).
        pinned = branch_names_pattern(b) if origin == "NVIDIA" else "%s %s" % (branch_names_pattern(b), unbranched["branchless"])
        # the same distribution's other archives (Ubuntu Pro's ESM: Origin UbuntuESM / UbuntuESMApps, data's
        # origins_also): a 20.04 host past standard support gets its kernels AND their signed modules from there only,
        # so a pin against o=Ubuntu alone let the kernel through and kept its module out (issue 48 red-team 1)
        also = [o for o in unbranched["origins_also"].get(origin, []) if o != origin]
        text += "# One driver from one archive: branch %s and NVIDIA's branch-less packages from Origin %s only.\n" % (
            b, " or ".join([origin] + also))
        for each in [origin] + also:
            text += "Package: %s\nPin: release o=%s\nPin-Priority: 1000\n\n" % (pinned, each)
        text += "Package: %s\nPin: release *\nPin-Priority: -1\n\n" % pinned
    if origin == "NVIDIA" and b >= unbranched["branch_min"]:
        # From 590 NVIDIA's names carry no branch (pin_names' nvidia_repo): the family's <branch>.* pin below would take them
        # from any archive. Another branch's versions first (apt takes a version's first matching pin), then this branch's
        # from o=NVIDIA at 1000, and from anywhere else -1: one origin AND one branch.
        text += "# NVIDIA's names without a branch (590 on): branch %s's versions from Origin NVIDIA only.\n" % b
        for version in other_versions(b):
            text += "Package: %s\nPin: version %s\nPin-Priority: -1\n\n" % (unbranched["nvidia_repo"], version)
        text += "Package: %s\nPin: release o=NVIDIA\nPin-Priority: 1000\n\n" % unbranched["nvidia_repo"]
        text += "Package: %s\nPin: release *\nPin-Priority: -1\n\n" % unbranched["nvidia_repo"]
    text += "# Never a driver package of another branch (a retired branch's transitional metas depend on the next one).\n"
    text += "Package: %s\nPin: release *\nPin-Priority: -1\n\n" % (any_branch_pattern() if origin else other_branches_pattern(b))
    text += "Package: %s\nPin: version %s.*\nPin-Priority: 1000\n" % (" ".join(_unsubsumed(family)), b)
    return text


def _unsubsumed(globs):
    """``globs`` without those ``*nvidia*`` (when listed) already matches: a glob that holds ``nvidia`` literally
    (``libnvidia*``) only names packages with ``nvidia`` in the name. One pass less of apt over every package name."""
    if "*nvidia*" not in globs:
        return list(globs)
    return [g for g in globs if g == "*nvidia*" or "nvidia" not in re.sub(r"\[[^]]*\]", "?", g)]


def check_branch_simulation(text, branch, family, same_version=(), kernel_package=None, requested=()):
    """Would ``apt-get -s install`` keep every driver package on ``branch``, at one driver version?

    Returns ``{ok, version, wrong: [{name, version}], mismatched: [{name, version}], installs, exact}``:
    ``wrong`` lists driver packages apt would install from another branch (a slide to a newer branch),
    ``mismatched`` the ``same_version`` packages (and the kernel package) not at the driver's version
    ``version`` (the kernel package's, else the most common one of the branch); ``exact``: the
    ``requested`` names as ``name=version`` where apt would install them (as they are otherwise).
    """
    installs = nd.parse_apt_simulate(text)
    wrong, versions = [], {}
    for item in installs:
        found = nd.member_branch(item["name"], item["version"], family)
        if found is None:
            continue
        if found != int(branch):
            wrong.append({"name": item["name"], "version": nd.upstream_version(item["version"])})
        else:
            upstream = nd.upstream_version(item["version"])
            if nd.DRIVER_VERSION.match(upstream):
                versions[upstream] = versions.get(upstream, 0) + 1
    by_name = dict((item["name"], nd.upstream_version(item["version"])) for item in installs)
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
    entries = [e for e in nd.parse_madison(madison_text) if e["name"] == package]
    available = []
    for entry in entries:
        upstream = nd.upstream_version(entry["version"])
        if upstream not in available:
            available.append(upstream)
    match = next((e["version"] for e in entries if nd.upstream_version(e["version"]) == nd.upstream_version(driver_version)), None)
    return {"ok": match is not None, "version": match, "available": available}


_UNMET = re.compile(r"^\s*(?P<name>\S+)\s*:\s*(?:PreDepends|Depends|Conflicts|Breaks):\s*(?P<what>.+?)\s*$")
# apt's errors for a package it cannot take at all (apt-pkg's cachefile/algorithms; seen for real in molecule
# nvidia_driver_repo on Debian 12's apt 2.6: NVIDIA's nvidia-driver-pinning-590 pins nvidia-fabricmanager to 590.*,
# the repository has 580.95.05 of it: "E: Package 'nvidia-fabricmanager' has no installation candidate")
_NO_CANDIDATE = (
    (re.compile(r"^E: Package '(?P<name>[^']+)' has no installation candidate"), "has no installation candidate"),
    (re.compile(r"^E: Unable to locate package (?P<name>\S+)"), "is in none of the apt sources"),
    (re.compile(r"^E: Version '(?P<version>[^']+)' for '(?P<name>[^']+)' was not found"), "has no version %(version)s"),
)


def _series(name, branch):
    """The driver series a package name of ``branch`` belongs to: "-server" or "" (None when it names no branch)."""
    match = re.search(r"-%d(?P<server>-server)?(?=$|-)" % int(branch), name)
    if match is None:
        return None
    return match.group("server") or ""


def check_fabric_manager_simulation(text, package, driver_version, branch, rc=0, stderr=""):
    """Does Fabric Manager resolve to the same driver series, at the driver's exact version, in one ``apt-get -s``?

    ``text``: the simulation of the driver set together with ``package`` (Fabric Manager); ``rc``/``stderr``: apt's exit
    status and errors (an unmet dependency of Fabric Manager, e.g. Ubuntu's nvidia-fabricmanager-580 on
    nvidia-kernel-common-580-server-<version> next to the desktop set, ends "held broken packages"). Returns ``{ok, simulated, version, package_version,
    driver_version, series: [...], problems: [...]}``; ``series`` lists the driver series apt would install
    ("-server", ""); ``simulated``: Fabric Manager was part of the simulation (else its version is judged from
    ``apt-cache madison`` by :func:`fabric_manager_version`).
    """
    problems = []
    unmet = []
    for line in ((text or "") + "\n" + (stderr or "")).splitlines():
        match = _UNMET.match(line)
        if match and match.group("name") == package:
            unmet.append("%s %s" % (package, line.split(":", 1)[1].strip()))
        for pattern, words in _NO_CANDIDATE:
            match = pattern.match(line.strip())
            if match and match.group("name") == package:
                unmet.append("%s %s" % (package, words % match.groupdict()))
    if unmet or rc not in (0, None):
        errors = " ".join(line.strip() for line in ((text or "") + "\n" + (stderr or "")).splitlines() if line.startswith("E:"))
        problems.append("apt cannot install it together with the driver: %s%s." % (
            "; ".join(unmet) if unmet else "exit status %s" % rc, (" (%s)" % errors) if errors else ""))
    installs = nd.parse_apt_simulate(text)
    full = dict((item["name"], item["version"]) for item in installs)
    fm_version = full.get(package)  # one already installed is replaced or kept as the driver is: madison judges it
    upstream = nd.upstream_version(fm_version) if fm_version else None
    if upstream and driver_version and upstream != nd.upstream_version(driver_version):
        problems.append("apt would install %s %s, the driver %s: Fabric Manager must have exactly the driver's version."
                        % (package, upstream, nd.upstream_version(driver_version)))
    series = sorted(set(found for found in (_series(item["name"], branch) for item in installs
                                            if item["name"] != package and item["name"].startswith(nd.DRIVER_PREFIXES))
                        if found is not None))
    if len(series) > 1:
        problems.append("apt would install two driver series of R%s at once (%s)." % (
            branch, ", ".join(sorted(item["name"] for item in installs if _series(item["name"], branch) is not None
                                     and item["name"] != package))))
    return {"ok": not problems, "simulated": package in full, "version": upstream, "package_version": fm_version,
            "driver_version": nd.upstream_version(driver_version) if driver_version else None,
            "series": series, "problems": problems}


def rollback_plan(packages, kept, family):
    """After a failed branch change: what to purge and what to reinstall from the kept copies.

    ``packages``: what dpkg has now (``parse_dpkg_query`` text: half-configured packages count);
    ``kept``: the ``keep_plan`` entries of the previous branch. Every
    installed driver package (any branch, half-configured ones included) that is not exactly a kept
    (name, version) is purged; the kept .debs are installed (apt resolves them together).
    Returns ``{purge: [names], install: [file names], branch}``.
    """
    keep = set((k["name"], k["version"]) for k in kept)
    purge = sorted(set(name for name, version, _arch in nd.package_items(packages)
                       if nd.member_branch(name, version, family) is not None and (name, version) not in keep))
    branches = set(nd.member_branch(k["name"], k["version"], family) for k in kept)
    branches.discard(None)
    return {"purge": purge, "install": [k["file"] for k in kept], "branch": max(branches) if branches else None}


# --- the role's whole decision ---------------------------------------------------------------------------

SUPPORTED = ("Debian", "Ubuntu")
_TRUE = ("true", "yes", "on", "1")


def _bool(value):
    return value if isinstance(value, bool) else str(value).strip().lower() in _TRUE


def plan_fits(plan, method, branch, kernel_modules, profile=""):
    """Whether ``dlbox_plan`` already says this method, branch, module flavour and profile (else the role resolves
    again); an empty value is the plan's choice."""
    driver = ((plan or {}).get("stack") or {}).get("driver") if isinstance(plan, dict) else None
    if driver is None:
        return False
    if method and (driver.get("method") or "") != method:
        return False
    if profile and driver.get("profile") and driver["profile"] != profile:
        return False  # a plan that names no profile (made before plans had one, or by hand) leaves the role's
    if branch and str(driver.get("branch")) != str(branch):
        return False
    return not (kernel_modules and driver.get("kernel_modules") != kernel_modules)


def overrides(options):
    """The role's variables that pin a part of the plan, as request overrides: {key: (variable, value)}."""
    return {"driver_method": ("nvidia_driver_method", options.get("method") or ""),
            "driver_profile": ("nvidia_driver_profile", options.get("profile") or ""),
            "driver_branch": ("nvidia_driver_branch", str(options.get("branch") or "")),
            "kernel_modules": ("nvidia_driver_kernel_modules", options.get("kernel_modules") or "")}


def _names(data, distribution):
    return ((data.get("driver_package_names") or {}).get("distro") or {}).get((distribution or "").lower()) or {}


def _dkms_major(names, version):
    return int((names.get("dkms_major") or {}).get(str(version), 3))


def _refused(out, message):
    out["ok"] = False
    out["errors"].append(message)
    return out


def _pulled_text(check):
    if check["pulled"]:
        return ", ".join("%s (R%s)" % (p["name"], p["branch"]) for p in check["pulled"])
    mismatched = ", ".join("%s at %s" % (m["name"], m["version"]) for m in check["mismatched"])
    return "%s (not at the driver version %s)" % (mismatched, check["version"])


def decide(data, options, plan, host=None, facts=None):
    """Everything the ``nvidia_driver`` tasks need, from what is known so far.

    ``options``: the role's variables (``method``, ``branch``, ``kernel_modules``, ``profile``, ``secure_boot``,
    ``secure_boot_signing``, ``mok_key``, ``mok_certificate``, ``kernel_flavour``, ``build_kernels``,
    ``in_container``, ``change_branch``, ``other_branch``, ``keep_dir``, ``request_text``; ``packages`` and
    ``same_version``: a distribution package set to judge instead of the data's, which the role never sets) and the host's
    ``distribution``, ``distribution_version``, ``kernel``, ``hostname``. ``plan``: the plan the role works from
    (``role_plan``'s). ``host``: ``ansible_facts['dlbox_host']``. ``facts``: ``nvidia_driver_facts`` results, each
    read when present: ``installed`` (dpkg's packages), ``mok``, ``sources``; ``simulation``, ``madison`` and
    ``pending`` (after the archive is set up); ``after`` (dpkg after the install); ``failed`` (dpkg after a failed
    install), with ``kept`` (the copies kept before the change); ``archives`` (the .deb files in apt's cache before a
    branch change). Returns ``{ok, errors, warnings, ...}``; ``errors`` stops at the first refusal, as the run does.
    """
    o = options
    facts = facts or {}
    host = host or {}
    planned = ((plan or {}).get("stack") or {}).get("driver") or {}
    # the plan's method and profile: the role's variables reached the plan as request overrides (empty: the plan chose)
    method = planned.get("method") or o.get("method") or "distro"
    profile = planned.get("profile") or o.get("profile") or "desktop"
    o = dict(o, method=method, profile=profile)
    distribution = o.get("distribution") or ""
    out = {"ok": True, "errors": [], "warnings": [], "skip_reason": "", "packages_only": False,
           "build_only": bool(o.get("build_kernels")), "driver": None, "fabric_manager": None, "set": None,
           "signing": None, "components": [], "sources": [], "change": None, "pin": None, "simulate": None,
           "method": method, "method_reason": planned.get("method_reason"), "profile": profile,
           "profile_reason": planned.get("profile_reason"), "fm_check": None, "fm_install_names": [],
           "family": list((data.get("driver_package_names") or {}).get("family") or []),
           "upgrade_blacklist": list((data.get("driver_package_names") or {}).get("upgrade_blacklist") or []),
           "origins": dict((data.get("driver_package_names") or {}).get("origins") or {}),
           "unattended_signed": o.get("unattended_signed") or "together"}
    if out["unattended_signed"] not in nh.SIGNED_CHOICES:
        return _refused(out, "nvidia_driver_unattended_signed is %r: it takes %s. Nothing was changed."
                        % (out["unattended_signed"], " or ".join(nh.SIGNED_CHOICES)))
    if distribution not in SUPPORTED:
        return _refused(out, "dlbox.stack.nvidia_driver installs the drivers of Debian's and Ubuntu's own archives; this host runs "
                             "%s. Nothing was changed." % distribution)
    names = _names(data, distribution)
    out["dkms_packages"] = names.get("dkms_packages")
    if not plan.get("ok"):
        return _refused(out, " ".join(
            ["The driver request (nvidia_driver_method=%s, nvidia_driver_branch=%s, nvidia_driver_kernel_modules=%s, "
             "dlbox_plan_request=%s) was refused; nothing was changed:" % (
                 method, o.get("branch") or "the plan's", o.get("kernel_modules") or "the plan's", o.get("request_text") or "{}")]
            + list(plan.get("errors") or [])))
    stack = plan.get("stack") or {}
    driver = stack.get("driver")
    fm = stack.get("fabric_manager") if driver is not None else None
    out["driver"], out["fabric_manager"] = driver, fm
    if driver is not None and driver.get("family"):
        out["family"] = list(driver["family"])
    # NVLink5 hosts (issue 49): NSCQ, libnvsdm, NVLSM (HGX B200/B300) or IMEX (GB200/GB300 NVL) beside the driver
    out["fabric"] = nf.fabric_set(fm, driver)
    out["fabric_install_names"] = []
    out["madison"] = ([fm["package"]] if fm is not None else []) + nf.names(out["fabric"])
    out["repo_packages"] = out["family"] + nf.names(out["fabric"])
    if driver is not None and method == "distro" and names.get("handled"):
        primary = driver.get("archive_package") or (driver.get("packages") or [names["handled"][0]])[0]
        if primary not in names["handled"]:
            return _refused(out, "Driver branch %s (nvidia_driver_branch) comes from %s's archive only as %s (the tesla / legacy "
                                 "packages), which this role does not install yet; leave nvidia_driver_branch empty for %s's %s "
                                 "branch. Nothing was changed." % (driver.get("branch"), distribution,
                                                                   primary, distribution,
                                                                   names["handled"][0]))
    if method == "distro" and not names.get("fabric_manager", True) and (plan.get("host") or {}).get("nvswitch"):
        return _refused(out, "nvidia_driver_method: distro cannot drive this NVSwitch host: %s's archive has no NVIDIA Fabric "
                             "Manager, without which NVSwitch systems run no CUDA work. Use NVIDIA's repository "
                             "(nvidia_driver_method: nvidia_repo) or Ubuntu, whose archive ships nvidia-fabricmanager. "
                             "Nothing was changed." % distribution)
    repo = (driver or {}).get("repo") or {}
    if driver is not None and method == "nvidia_repo" and not (driver.get("packages") and repo.get("kernel_package")):
        return _refused(out, "nvidia_driver_method: nvidia_repo: data/compat.yml names no package of NVIDIA's repository for "
                             "driver branch %s (%s modules) on %s %s (driver_package_names.nvidia_repo). Ask for another "
                             "nvidia_driver_branch, or nvidia_driver_method: distro. Nothing was changed." % (
                                 driver.get("branch", "?"), driver.get("kernel_modules", "?"), distribution,
                                 o.get("distribution_version")))
    virt = host.get("virtualization") or {}
    boxed = bool(virt.get("container") or virt.get("wsl"))
    if driver is None:
        out["skip_reason"] = "No NVIDIA GPU in the plan for %s: no driver installed." % o.get("hostname")
    elif boxed and not out["build_only"] and o.get("in_container") == "skip":
        what = ("WSL%s instance" % (virt.get("wsl_version") or "")) if virt.get("wsl") else \
            "%s container" % (virt.get("container_type") or "container")
        out["skip_reason"] = ("This host is a %s: the NVIDIA kernel driver comes from the host, so none is installed here (set "
                              "nvidia_driver_build_kernels to build the module for given kernels, e.g. in an image build)." % what)
    out["packages_only"] = boxed and not out["build_only"] and o.get("in_container") == "packages"
    secure_boot = bool(host.get("secure_boot")) if str(o.get("secure_boot")) == "auto" else _bool(o.get("secure_boot"))
    signing = signing_path(distribution, secure_boot, o.get("secure_boot_signing", "auto"), o.get("mok_key") or "",
                           o.get("mok_certificate") or "", _dkms_major(names, o.get("distribution_version")))
    out["signing"] = signing
    out["secure_boot"] = secure_boot
    if out["skip_reason"]:
        return out
    if signing["path"] is None:
        return _refused(out, signing["problem"] or "no signing path")
    if signing["dkms_config"] is not None:
        problem = _mok_problem(o, signing, facts.get("mok") or {})
        if problem:
            return _refused(out, problem)
    branch = int(driver["branch"])
    kept = _installed_series(options, driver, fm, names, facts, out["family"], branch)
    if kept is not None and kept != profile:
        profile = kept
        o = dict(o, profile=profile)
        out["profile"] = profile
        out["profile_reason"] = ("kept: the installed R%s packages are the %s set (nvidia_driver_profile: %s changes it)"
                                 % (branch, kept, "server" if kept == "desktop" else "desktop"))
    if method == "distro":
        flavour = nk.apply(out, o, facts, names, branch, driver["kernel_modules"])  # kernel flavour, signed module (issue 25)
        if flavour is None:
            return out
        try:
            out["set"] = driver_packages(names, branch, driver["kernel_modules"], profile, signing["path"], flavour)
            nk.finish(out, data.get("driver_package_names"))
        except ValueError as exc:
            return _refused(out, "nvidia_driver_profile / nvidia_driver_secure_boot_signing: %s. Nothing was changed." % exc)
        if o.get("packages"):
            # a set to judge instead of the data's (the role never sets it; the live-archive tests of apt's verdict do)
            given = list(o["packages"])
            out["set"] = dict(out["set"], packages=given, primary=given[0],
                              same_version=[n for n in o.get("same_version") or [] if n in given])
        out["components"] = list(names.get("components") or [])
        out["branch_component"] = branch_component(names, o.get("distribution_version"), branch)
        out["sources"] = [{"path": f["path"], "content": new} for f in facts.get("sources") or []
                          for new in [apt_sources_with_components(f["content"], out["components"], f["path"].endswith(".sources"))]
                          if new != f["content"]] if out["components"] else []
    else:
        if signing["path"] != "dkms":
            return _refused(out, "Secure Boot is on and the signing path is Canonical's precompiled modules, which come from "
                                 "Ubuntu's archive only; with nvidia_driver_method: nvidia_repo set "
                                 "nvidia_driver_secure_boot_signing: mok (and an enrolled nvidia_driver_mok_key / "
                                 "nvidia_driver_mok_certificate). Nothing was changed.")
        out["set"] = {"packages": list(driver["packages"]), "primary": driver["packages"][0],
                      "same_version": list(repo.get("same_version") or []) + [repo["kernel_package"]],
                      "kernel_package": repo["kernel_package"], "dkms_module": repo.get("dkms_module"), "signing": signing["path"]}
        # NVLink5 companions at the driver's version (libnvsdm matches no driver glob) stay on the branch with it
        pinned = out["family"] + [n for n in (out["fabric"] or {}).get("same_version", []) if n not in out["family"]]
        out["pin"] = branch_pin(branch, pinned, "nvidia_driver_method: nvidia_repo", out["origins"].get("nvidia_repo"),
                                data.get("driver_package_names"))
    if "installed" not in facts:
        return out
    installed = nd.installed_driver(facts["installed"], out["family"])
    # dpkg has them, not configured (a failed DKMS build in a postinst: iF, its dependents iU): the role configures them
    # first (install.yml, dpkg --configure -a), and the check after the install refuses them (unconfigured_problem)
    installed["unconfigured"] = nd.unconfigured_packages(facts["installed"], out["family"])
    out["installed"] = installed
    change = branch_change(installed["branch"], branch, _bool(o.get("change_branch", False)))
    out["change"] = change
    if change["action"] == "refuse":
        return _refused(out, change["problem"])
    changing = change["action"] == "change"
    fm_names = [fm["package"]] if fm is not None else []
    out["simulate"] = {"packages": out["set"]["packages"] + [n for n in fm_names if n not in out["set"]["packages"]],
                       "fabric_manager": fm_names, "recommends": profile == "desktop",
                       "sandbox": method == "nvidia_repo" or changing,
                       "remove": [p["name"] for p in installed["packages"]] if changing else [],
                       "pin_name": o.get("pin_name") if method == "nvidia_repo" else "none",
                       "pin_text": out["pin"] or ""}
    if changing:
        out["keep_path"] = "%s/R%s-%s" % (o.get("keep_dir"), installed["branch"], installed["version"] or "unknown")
        out["rollback_pin"] = branch_pin(installed["branch"], out["family"], "nvidia_driver_method: %s" % method,
                                         out["origins"].get("nvidia_repo" if method == "nvidia_repo" else distribution.lower()),
                                         data.get("driver_package_names"))
        out["announce"] = ("Changing the NVIDIA driver from R%s (%s) to R%s: its %d packages are kept in %s first and reinstalled "
                           "if the new branch fails to install." % (change["from_branch"], installed["version"], change["to_branch"],
                                                                    len(installed["packages"]), o.get("keep_dir")))
    return _later_steps(out, o, driver, facts, installed, changing, data)


def _later_steps(out, o, driver, facts, installed, changing, data):
    """The steps :func:`decide` ends with and :func:`update` runs alone: apt's verdict (``simulation``/``pending``),
    the checks after the install (``after``), the copies before a branch change (``archives``), the rollback."""
    if "simulation" in facts or facts.get("pending"):
        _judge(out, o, driver, facts, installed)
        if not out["ok"]:
            return out
    if "after" in facts:
        _after(out, o, driver, facts, data.get("driver_package_names"))
    if "archives" in facts and changing:
        out["kept"] = keep_plan(installed["packages"], facts["archives"])
    if "failed" in facts and changing:
        out["rollback"] = rollback_plan(facts["failed"], facts.get("kept") or [], out["family"])
    return out


# The facts :func:`decide` reads only in its last steps (after the change is decided): a result decided without them is
# updated with them by :func:`update`, which runs those steps alone.
LATER_FACTS = ("simulation", "madison", "pending", "after", "archives", "failed", "kept")


def update(data, options, decided, facts):
    """:func:`decide`'s last steps on an earlier result ``decided`` (a copy), with the later facts of ``facts`` (the
    facts ``decided`` was decided with, plus new ones of :data:`LATER_FACTS`): the verdict on apt's simulation
    (``simulation`` or ``pending``), the checks after the install (``after``), the copies before a branch change
    (``archives``), the rollback (``failed``, ``kept``). The same result as :func:`decide` with all of them when
    ``facts`` brings each step's facts once, in the run's order (the role's tasks do); a refused ``decided``, or one
    decided before ``installed`` was read, comes back as it is."""
    out = copy.deepcopy(decided)
    facts = facts or {}
    if not out.get("ok") or out.get("skip_reason") or out.get("installed") is None or out.get("change") is None:
        return out
    o = dict(options, method=out["method"], profile=out["profile"])
    driver, installed = out["driver"], out["installed"]
    changing = out["change"]["action"] == "change"
    return _later_steps(out, o, driver, facts, installed, changing, data)


def _installed_series(options, driver, fm, names, facts, family, branch):
    """The profile of the installed set of ``branch`` when the archive names its series apart (Ubuntu's -server) and
    nothing asked for another: "server", "desktop" or None. Keeps a machine on the set it has instead of switching the
    series under it (the plan's default is server for GPUs without a display); Fabric Manager's need wins."""
    if options.get("profile") or driver.get("method") != "distro" or not names.get("server_suffix") or "installed" not in facts:
        return None
    if fm is not None and fm.get("driver_profile"):
        return None
    series = set(_series(p["name"], branch) for p in nd.installed_driver(facts["installed"], family)["packages"])
    series.discard(None)
    if series == {names["server_suffix"]}:
        return "server"
    if series == {""}:
        return "desktop"
    return None


def _mok_problem(o, signing, mok):
    shim = (o.get("shim_mok_dir") or "/var/lib/shim-signed/mok").rstrip("/")
    key, cert = o.get("mok_key"), o.get("mok_certificate")
    wrong_paths = signing["dkms_config"] == "shim-signed" and not (key == shim + "/MOK.priv" and cert == shim + "/MOK.der")
    if not (mok.get("key_exists") and mok.get("certificate_exists")) or wrong_paths:
        return ("nvidia_driver_mok_key (%s) and nvidia_driver_mok_certificate (%s) must exist on the host%s. Nothing was changed."
                % (key, cert, (" and, with DKMS 2 on this OS, be %s/MOK.priv and MOK.der (the only key DKMS 2 signs with)" % shim)
                   if signing["dkms_config"] == "shim-signed" else ""))
    if mok.get("state") != "enrolled":
        return ("The certificate nvidia_driver_mok_certificate (%s) is %s (mokutil --test-key said: %s). A module signed with it "
                "would not load (or mokutil is missing: apt install mokutil). Enrol it first (mokutil --import %s, then confirm "
                "at the console on the next boot), or use Ubuntu's signed precompiled modules, or turn Secure Boot off. "
                "Nothing was changed." % (cert, mok.get("state") or "unknown", (mok.get("text") or "").strip(), cert))
    return None


def _judge(out, o, driver, facts, installed):
    """The verdict on apt's simulation: the version to install, the names to give apt, Fabric Manager's version."""
    branch = int(driver["branch"])
    the_set = out["set"]
    profile = o.get("profile")
    sim = facts.get("simulation") or {}
    pending = bool(facts.get("pending"))
    errors_text = " ".join(line for line in (sim.get("stderr") or "").splitlines() if line.startswith("E:"))
    fm = out["fabric_manager"]
    if fm is not None and not pending and sim.get("rc") not in (0, None):
        # Fabric Manager was simulated with the driver: say when it is what apt cannot resolve
        fm_check = check_fabric_manager_simulation(sim.get("stdout") or "", fm["package"], driver.get("version_available"),
                                                   branch, rc=sim.get("rc"), stderr=sim.get("stderr") or "")
        if any(fm["package"] + " " in p for p in fm_check["problems"]):
            out["fm_check"] = fm_check
            return _fm_refused(out, fm, fm_check, the_set, profile, facts)
    if o.get("method") == "distro":
        if sim.get("rc") != 0:
            where = out.get("branch_component")
            sources = ("enable the %s component in the apt sources (%s %s ships driver branch %s there only; data/compat.yml "
                       "driver_package_names.distro.*.branch_components), or choose another nvidia_driver_branch / "
                       "nvidia_driver_profile" % (where, o.get("distribution"), o.get("distribution_version"), branch)
                       if where else "Choose another nvidia_driver_branch / nvidia_driver_profile, or check the apt sources")
            return _refused(out, "apt cannot install %s for driver branch %s (%s modules, nvidia_driver_profile=%s, signing=%s): %s "
                                 "%s%s. Nothing was changed." % (
                                     " ".join(the_set["packages"]), branch, driver["kernel_modules"], o.get("profile"),
                                     out["signing"]["path"], errors_text, "If apt has no candidate for them, " if where else "",
                                     sources))
        present = dict((n, v) for n, v, _a in nd.package_items(facts["installed"]) if n in the_set["packages"])
        check = check_simulation(_without(sim.get("stdout") or "", fm), the_set["primary"], branch, the_set["same_version"], present)
        out["check"] = check
        if not (check["ok"] or (o.get("other_branch") == "warn" and check["version"] is not None)):
            return _refused(out, "Asked for driver branch %s (%s), but apt would install %s. Ubuntu keeps retired branches as "
                                 "transitional packages that pull a newer one. Ask for that branch (nvidia_driver_branch: \"%s\"), or "
                                 "set nvidia_driver_other_branch: warn to take it anyway. Nothing was changed." % (
                                     branch, " ".join(the_set["packages"]), _pulled_text(check), check["branch_found"]))
        if not check["ok"]:
            out["warnings"].append("WARNING: asked for driver branch %s, apt installs branch %s (%s); nvidia_driver_other_branch=warn "
                                   "lets it." % (branch, check["branch_found"], ", ".join(p["name"] for p in check["pulled"])))
        if the_set["signing"] == "precompiled" and check["dkms"]:
            return _refused(out, "The signed precompiled set (%s) would also install %s, which builds an unsigned module that Secure "
                                 "Boot rejects. Nothing was changed." % (" ".join(the_set["packages"]), ", ".join(check["dkms"])))
        out["target_version"] = check["version"]
        out["install_names"] = list(the_set["packages"])
        out["expect_branch"] = check["branch_found"] if not check["ok"] else branch
    else:
        if pending:
            out["target_version"] = driver.get("version_available")
            out["install_names"] = list(the_set["packages"])
        else:
            if sim.get("rc") != 0:
                return _refused(out, "apt cannot install %s (driver branch %s, %s modules) from NVIDIA's repository: %s Is branch %s "
                                     "in the repository (cuda_repo_base_url)? Choose another nvidia_driver_branch. Nothing was "
                                     "changed." % (" ".join(the_set["packages"]), branch, driver["kernel_modules"], errors_text, branch))
            check = check_branch_simulation(_without(sim.get("stdout") or "", fm), branch, out["family"],
                                            (driver.get("repo") or {}).get("same_version"),
                                            the_set["kernel_package"], the_set["packages"])
            out["repo_check"] = check
            if not check["ok"]:
                wrong = ", ".join("%s %s" % (w["name"], w["version"]) for w in check["wrong"]) or "nothing of another branch"
                mixed = (" and %s (not at the driver version %s)" % (", ".join("%s %s" % (m["name"], m["version"]) for m in check["mismatched"]),
                                                                     check["version"])) if check["mismatched"] else ""
                return _refused(out, "NVIDIA's repository does not give driver branch %s as a whole: apt would install %s%s. Choose a "
                                     "branch the repository has (nvidia_driver_branch), or check cuda_repo_base_url. Nothing was "
                                     "changed." % (branch, wrong, mixed))
            out["target_version"] = check["version"] or (installed["version"] if installed["branch"] == branch else None)
            out["install_names"] = check["exact"]
        target = out["target_version"]
        if target is None or compare_versions(target, driver.get("min_version")) < 0:
            return _refused(out, "NVIDIA's repository gives driver %s for branch %s; the plan needs %s or newer. Nothing was "
                                 "changed." % (target, branch, driver.get("min_version")))
        out["expect_branch"] = branch
    fm = out["fabric_manager"]
    if fm is not None and not pending:
        fm_check = check_fabric_manager_simulation(sim.get("stdout") or "", fm["package"], out["target_version"], branch,
                                                   rc=sim.get("rc", 0), stderr=sim.get("stderr") or "")
        out["fm_check"] = fm_check
        if not fm_check["ok"]:
            return _fm_refused(out, fm, fm_check, the_set, profile, facts)
    if fm is not None:
        if pending:
            out["fm"] = {"ok": True, "version": "%s-*" % out["target_version"], "available": []}
        elif (out.get("fm_check") or {}).get("simulated"):
            out["fm"] = {"ok": True, "version": out["fm_check"]["package_version"], "available": [out["fm_check"]["version"]]}
        else:
            out["fm"] = fabric_manager_version(facts.get("madison") or "", fm["package"], out["target_version"])
        # the one place Fabric Manager's name for the driver's apt transaction is decided (rt47 L1): pending (check
        # mode before NVIDIA's repository is set up) names the driver's version with apt's wildcard, "<driver>-*"
        if out["fm"]["ok"] and out["fm"]["version"]:
            out["fm_install_names"] = ["%s=%s" % (fm["package"], out["fm"]["version"])]
        if not out["fm"]["ok"]:
            return _refused(out, "This NVSwitch host needs NVIDIA Fabric Manager (%s) at exactly the driver's version %s (driver branch "
                                 "%s), and the repositories have %s. Without it nvidia-fabricmanager.service does not start and the "
                                 "GPUs run no CUDA work. Ask for a driver branch whose version has a Fabric Manager build "
                                 "(nvidia_driver_branch). Nothing was changed." % (
                                     fm["package"], out["target_version"], branch, ", ".join(out["fm"]["available"]) or "no version of it"))
    if out.get("fabric"):
        before = dict((n, v) for n, v, _a in nd.package_items(facts.get("installed") or []) if n in nf.names(out["fabric"]))
        extra = nf.versions(out["fabric"], facts.get("madison") or "", out["target_version"], pending=pending, installed=before)
        out["fabric_versions"] = extra
        if extra["problems"]:
            return _refused(out, nf.refusal(out["fabric"], extra["problems"], out["target_version"], branch))
        if extra["foreign"]:
            return _refused(out, nf.foreign_refusal(extra["foreign"], out["target_version"]))
        out["fabric_install_names"] = extra["install_names"]
    return out


def _without(text, fm):
    """apt's simulation without Fabric Manager's own lines (the driver's checks judge the driver; FM is judged apart)."""
    if fm is None:
        return text
    return "\n".join(line for line in (text or "").splitlines()
                     if not re.match(r"^(Inst|Conf|Remv)\s+%s\s" % re.escape(fm["package"]), line.strip()))


def _fm_refused(out, fm, fm_check, the_set, profile, facts):
    available = fabric_manager_version(facts.get("madison") or "", fm["package"], "")["available"]
    if fm_check.get("driver_version") and not any("exactly the driver's version" in p for p in fm_check["problems"]):
        fm_check = dict(fm_check, problems=list(fm_check["problems"]) + [
            "It must have exactly the driver's version, %s." % fm_check["driver_version"]])
    return _refused(out, "Fabric Manager (%s) does not resolve to the driver's series on this NVSwitch host: %s%s Without it "
                         "nvidia-fabricmanager.service does not start and the GPUs run no CUDA work. The driver set is %s "
                         "(nvidia_driver_profile=%s); leave nvidia_driver_profile empty for the plan's profile, or ask for "
                         "a driver branch whose version has a Fabric Manager build (nvidia_driver_branch). Nothing was "
                         "changed." % (fm["package"], " ".join(fm_check["problems"]),
                                       " The repositories have %s of it." % ", ".join(available) if available else "",
                                       " ".join(the_set["packages"]), profile))


_STATE_WORDS = {"H": "half-installed", "U": "unpacked, not configured", "F": "half-configured: its post-installation script failed"}


def unconfigured_problem(unconfigured, dkms_module=None, version=None):
    """The check after the install on what dpkg did not configure (``nvidia_driver_holds``' family packages, from
    :func:`module_utils._nvidia_driver.unconfigured_packages`): "" when none, else one sentence naming each package and its
    dpkg state, the make.log of a DKMS build (DKMS 3.0.11 dkms.in: /var/lib/dkms/<module>/<version>/build/make.log) and
    ``dpkg --configure -a``. Such a package is not installed, whatever its files say: dpkg -l shows ``iF``/``iU``."""
    if not unconfigured:
        return ""

    def words(status):
        if len(status) >= 3 and status[2] == "R":
            return "reinst-required"
        return _STATE_WORDS.get((status or "  ")[1], "not configured")
    named = ", ".join("%s %s (dpkg %s: %s)" % (p["name"], p.get("version") or "?", p.get("status") or "?", words(p.get("status") or ""))
                      for p in unconfigured)
    log = (" The DKMS build's log: /var/lib/dkms/%s/%s/build/make.log." % (dkms_module, version)) if dkms_module and version else ""
    return ("dpkg has not configured %s: they are not installed.%s Fix the cause (for a failed module build: a compiler or kernel "
            "the driver supports, the kernel's headers), then run dpkg --configure -a (or run the role again: it re-runs the "
            "configure first)." % (named, log))


def _after(out, o, driver, facts, package_names=None):
    """The checks after the install: branch, version, same-version packages, no DKMS on the signed path, holds.
    ``package_names``: ``driver_package_names`` of the data (for the branch pin's names)."""
    the_set = out["set"]
    now = dict((n, v) for n, v, _a in nd.package_items(facts["after"]))
    names = sorted(now)
    nk.finish(out, package_names)  # the running kernel's module package joins the set (issue 25)
    nh.apply(out, o.get("method"), names, [p["name"] for p in nd.installed_driver(facts["after"], out["family"])["packages"]],
             facts.get("kernel"))  # holds and the unattended-upgrades blacklist: one rule (issue 48)
    if _bool(o.get("check_mode", False)) and (the_set["primary"] not in now or (out["change"] or {}).get("action") == "change"):
        out["after"] = None
        return
    if the_set["primary"] not in now:
        out["after"] = {"version": None, "branch": None, "fm_installed": False,
                        "problems": ["After installing, %s is not installed." % the_set["primary"]]}
        return
    version = nd.upstream_version(now[the_set["primary"]])
    expect = int(out.get("expect_branch") or driver["branch"])
    dpkg_branch = nd.installed_driver(facts["after"], out["family"])["branch"]
    wrong = [n for n in the_set["same_version"] if n in now and nd.upstream_version(now[n]) != version]
    if o.get("method") == "nvidia_repo":
        wrong += [n for n in the_set["same_version"] if n not in now]
    dkms_re = re.compile(out["dkms_packages"]) if out.get("dkms_packages") else None
    dkms = [n for n in names if dkms_re and dkms_re.search(n)] if the_set["signing"] == "precompiled" else []
    problems = []
    if (nd.branch_of_version(version) != expect or compare_versions(version, driver.get("min_version")) < 0 or wrong or dkms
            or dpkg_branch != expect):
        problems.append("After installing, %s is %s: expected branch %s at %s or newer%s%s; dpkg's driver packages are of branch %s."
                        % (the_set["primary"], version, expect, driver.get("min_version"),
                           (", with %s at the same version" % ", ".join(wrong)) if wrong else "",
                           (", and no DKMS package on the signed path (found %s)" % ", ".join(dkms)) if dkms else "", dpkg_branch))
    unconfigured = unconfigured_problem(nd.unconfigured_packages(facts["after"], out["family"]), out["set"].get("dkms_module"), version)
    if unconfigured:
        problems.append(unconfigured)
    fm = out["fabric_manager"]
    if fm is not None and fm["package"] in now and nd.upstream_version(now[fm["package"]]) != version:
        problems.append("%s is %s, the driver %s: Fabric Manager must have exactly the driver's version."
                        % (fm["package"], now[fm["package"]], version))
    fabric = nf.after(out.get("fabric"), now, version)
    problems += fabric["problems"]
    if the_set["signing"] != "precompiled":
        # held with the driver where the driver is held (DKMS, NVIDIA's repository); on the signed path nothing is held:
        # libnvidia-nscq-<b> depends on the exact nvidia-kernel-common-<b>-server-<version>, so a hold on it freezes the
        # whole driver group while the kernel meta moves, and the next kernel comes without its module (issue 44's red
        # team H1; the month archive's control case in test_nvidia_driver_month_hgx_apt shows it with the real apt)
        out["holds"] += [n for n in fabric["holds"] if n not in out["holds"]]
    out["after"] = {"version": version, "branch": dpkg_branch, "problems": problems,
                    "fm_installed": fm is not None and fm["package"] in now}
    if out.get("fabric"):
        out["after"].update(fabric_installed=fabric["installed"], fabric_versions=fabric["versions"],
                            fabric_summary=nf.summary(out["fabric"], fabric))
