# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ``jetpack`` role's decisions (controller only, pure apart from reading ``data/``).

:func:`decide` takes the plan, the role's options and what the host showed (its ``/etc/nv_tegra_release``, its
device-tree model, its ``/etc/nvpmodel.conf`` and the output of ``nvpmodel -q``) and returns everything the role's
tasks need: the refusals (each naming the variable or the fact at fault), NVIDIA's Jetson repositories for the
installed L4T, the packages, the power mode to set and whether ``jetson_clocks`` runs at boot.

Parsers, each pure and with its input shown:

- :func:`parse_nvpmodel_conf` (module_utils._gpu_facts, which gpu_facts shares): ``< POWER_MODEL ID=2 NAME=MODE_30W >`` and
  ``< PM_CONFIG DEFAULT=2 >`` lines ->
  ``{"modes": [{"id": 2, "name": "MODE_30W"}, ...], "default": 2}``.
- :func:`parse_nvpmodel_query`: ``NV Power Mode: MODE_30W\\n2`` (``nvpmodel -q``) -> ``{"name": "MODE_30W", "id": 2}``.
- :func:`parse_apt_list`: the flashed ``nvidia-l4t-apt-source.list`` -> its active ``deb`` lines
  (``deb https://repo.download.nvidia.com/jetson/ffmpeg r36.4 main`` ->
  ``{"uri": "https://repo.download.nvidia.com/jetson/ffmpeg", "suite": "r36.4", "components": ["main"]}``).

Vendor facts (repository layout, the module repository's folder per L4T major, SoC per family, package names) come
from ``data/jetson.yml``; the L4T list of each
JetPack from ``data/compat.yml`` (``jetpack``).
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlparse

import yaml

from ansible_collections.dlbox.stack.plugins.module_utils._gpu_facts import parse_nv_tegra_release_line, parse_nvpmodel_conf
from ansible_collections.dlbox.stack.plugins.module_utils.versions import debian_version_compare
from ansible_collections.dlbox.stack.plugins.plugin_utils.jetpack_pytorch import check_sources
from ansible_collections.dlbox.stack.plugins.plugin_utils.roles import _spec

DEFAULT_PATH = Path(__file__).resolve().parents[2] / "data" / "jetson.yml"

OPTION_KEYS = ("base_url", "key_url", "key_fingerprint", "components", "power_mode", "power_mode_reboot", "clocks",
               "container_runtime", "reboot_allowed")
POWER_REBOOT_CHOICES = _spec.choices("jetpack", "jetpack_power_mode_reboot")  # the argument spec's (issue 47)
# The oldest L4T major the role (and edge.yml, "Orin class, JetPack 6 and newer") supports: JetPack 6 is L4T R36
MIN_L4T_MAJOR = 36
# nvpmodel's answer to `-m <id>` when the mode needs a reboot (NVIDIA Jetson Linux Developer Guide, Power Management,
# nvpmodel; outputs posted from modules: boxcutter/kvm docs/NVIDIA_JETPACK_6_JETSON_DEVELOPER_KIT_SETUP.md on an AGX
# Orin, almond-bot/axol#107): "NVPM WARN: Reboot required for changing to this power mode: <id>", then the prompt
# "DO YOU WANT TO REBOOT NOW? enter YES/yes to confirm:"; any other answer cancels the change
# ("NVPM ERROR: optMask is 1, no request for power mode").
_REBOOT_REQUIRED_RE = re.compile(r"Reboot required for changing to this power mode:\s*(\d+)")
_WATTS_RE = re.compile(r"(\d+)W\b")

_QUERY_NAME_RE = re.compile(r"NV Power Mode:\s*(\S+)")
# /var/lib/nvpmodel/status, where nvpmodel keeps the mode every boot applies (nvpmodel.service): "pmode:0002 fmode:quiet"
# (the mode's id, 4 digits; public scripts read it as "what nvpmodel itself writes", and removing it makes the next boot
# take the conf's PM_CONFIG DEFAULT: tests/fixtures/jetson/SOURCES.md)
NVPMODEL_STATUS = "/var/lib/nvpmodel/status"
_STATUS_RE = re.compile(r"pmode:(\d+)")
_FINGERPRINT_RE = re.compile(r"^[0-9A-F]{40}$")
_URL_RE = re.compile(r"^(https?|file)://\S+$")
# a folder of NVIDIA's Jetson repository (t234, som) or "{soc}", the module family's SoC
_FOLDER_RE = re.compile(r"^(\{soc\}|[a-z][a-z0-9-]*)$")


class JetsonDataError(ValueError):
    """data/jetson.yml is missing, unreadable or not in the expected shape."""


def _need(condition, where, what):
    if not condition:
        raise JetsonDataError("data/jetson.yml: %s: %s" % (where, what))


def check_jetson_data(data):
    """Raise JetsonDataError naming the key at fault; return ``data`` when it is well formed."""
    _need(isinstance(data, dict), "top level", "must be a mapping")
    _need(data.get("schema") == 1, "schema", "must be 1")
    _need(isinstance(data.get("date"), str) and re.match(r"^\d{4}-\d{2}-\d{2}$", data["date"]), "date", "must be a quoted date")
    repo = data.get("repository")
    _need(isinstance(repo, dict), "repository", "must be a mapping")
    for key in ("base_url", "suite", "component", "key_file", "key_fingerprint", "preinstalled_list", "source"):
        _need(isinstance(repo.get(key), str) and repo[key].strip(), "repository.%s" % key, "must be text")
    _need(_FINGERPRINT_RE.match(repo["key_fingerprint"]), "repository.key_fingerprint", "must be 40 upper-case hex digits")
    _need(repo.get("repos") == ["common", "soc"], "repository.repos", "must be [common, soc]")
    folders = repo.get("soc_folder")
    _need(isinstance(folders, dict) and folders and all(isinstance(m, int) for m in folders),
          "repository.soc_folder", "must map L4T majors (integers) to the folder of the module's repository")
    for major, folder in folders.items():
        _need(isinstance(folder, str) and _FOLDER_RE.match(folder), "repository.soc_folder.%s" % major,
              "must be a folder name (som) or {soc} (the family's SoC)")
    _need(isinstance(repo.get("soc_folder_source"), str) and repo["soc_folder_source"].strip(),
          "repository.soc_folder_source", "must be text")
    socs = data.get("socs")
    _need(isinstance(socs, dict) and socs, "socs", "must be a non-empty mapping family -> {soc, l4t_majors, source}")
    for family, entry in socs.items():
        where = "socs.%s" % family
        _need(isinstance(entry, dict) and isinstance(entry.get("soc"), str) and re.match(r"^t\d{3}$", entry["soc"]),
              where, "needs 'soc' like t234")
        _need(isinstance(entry.get("l4t_majors"), list) and all(isinstance(m, int) for m in entry["l4t_majors"]),
              where, "needs 'l4t_majors', a list of integers")
        _need(isinstance(entry.get("source"), str), where, "needs a 'source'")
    components = data.get("components")
    _need(isinstance(components, dict) and "all" in components, "components", "must be a mapping with 'all'")
    versions = data.get("components_versions")
    _need(versions is None or (isinstance(versions, dict)
                               and all(isinstance(k, str) and isinstance(v, str) for k, v in versions.items())),
          "components_versions", "must map JetPack versions (quoted) to the nvidia-jetpack version (quoted)")
    for name, packages in components.items():
        _need(isinstance(packages, list) and packages and all(isinstance(p, str) for p in packages),
              "components.%s" % name, "must be a non-empty list of package names")
    chain = data.get("meta_chain")
    _need(chain is None or (isinstance(chain, list) and all(isinstance(p, str) for p in chain)),
          "meta_chain", "must be a list of package names (the metas between nvidia-jetpack and the component metas)")
    runtime = data.get("container_runtime")
    if runtime is not None:
        _need(isinstance(runtime, dict) and isinstance(runtime.get("components"), list) and runtime["components"]
              and all(c in components for c in runtime["components"]) and isinstance(runtime.get("source"), str),
              "container_runtime", "needs 'components' (components that bring nvidia-container) and a 'source'")
    if "pytorch_sources" in data:
        check_sources(data["pytorch_sources"], _need)
    return data


def load_jetson_data(path=None):
    """Read and check ``data/jetson.yml`` (or ``path``)."""
    path = Path(path) if path else DEFAULT_PATH
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise JetsonDataError("cannot read %s: %s" % (path, exc)) from exc
    return check_jetson_data(raw)


def parse_nvpmodel_query(text):
    """``nvpmodel -q`` -> ``{"name", "id"}`` of the current mode; None when the output has none.

    ``NV Fan Mode:quiet\\nNV Power Mode: MAXN\\n0`` -> ``{"name": "MAXN", "id": 0}``; the verbose form
    (``NVPM VERB: Current mode: NV Power Mode: 40W`` then ``4``) reads the same.
    """
    lines = [line.strip() for line in (text or "").splitlines()]
    for index, line in enumerate(lines):
        match = _QUERY_NAME_RE.search(line)
        if match:
            following = next((rest for rest in lines[index + 1:] if rest), "")
            return {"name": match.group(1), "id": int(following) if following.isdigit() else None}
    return None


def parse_apt_list(text):
    """The active one-line ``deb`` entries of an apt sources list, in order; comments, ``deb-src`` and blank lines are
    left out, options in brackets (``[arch=arm64 signed-by=...]``) skipped.

    ``"deb https://repo.download.nvidia.com/jetson/ffmpeg r36.4 main"`` ->
    ``[{"uri": "https://repo.download.nvidia.com/jetson/ffmpeg", "suite": "r36.4", "components": ["main"]}]``
    """
    entries = []
    for line in (text or "").splitlines():
        words = line.split("#", 1)[0].split()
        if not words or words[0] != "deb":
            continue
        words = words[1:]
        if words and words[0].startswith("["):
            while words and not words[0].endswith("]"):
                words = words[1:]
            words = words[1:]
        if len(words) >= 3:
            entries.append({"uri": words[0].rstrip("/"), "suite": words[1], "components": words[2:]})
    return entries


def _flashed_repositories(flashed, bases, base, known, suite=None):
    """The flashed list's lines that the role's two repositories do not cover (JetPack 6's ``jetson/ffmpeg``), kept:
    a folder of NVIDIA's Jetson repository (or of ``jetpack_base_url``) moves to ``base`` as the others do, any other
    URI stays as it is. A folder of NVIDIA's repository takes the host's L4T suite (``suite``) as the others do: the list
    is the one the module was flashed with (or a copy set aside), so after NVIDIA's OTA update to the next L4T release
    of the major its suite is the old one (``jetson/ffmpeg r36.4`` on L4T 36.5; issue 52 M5). Another URI's suite stays."""
    extra = []
    for entry in parse_apt_list(flashed):
        folder = next((entry["uri"][len(b) + 1:] for b in bases if entry["uri"].startswith(b + "/")), None)
        if folder is not None and folder in known:
            continue
        uri = "%s/%s" % (base, folder) if folder is not None else entry["uri"]
        if any(repo["uri"] == uri for repo in extra):
            continue
        name = folder if folder is not None and re.match(r"^[a-z0-9][a-z0-9-]*$", folder) else "flashed-%d" % (len(extra) + 1)
        moved = folder is not None and suite and re.match(r"^r\d+\.\d+$", entry["suite"])
        extra.append({"name": "nvidia-jetson-%s" % name, "uri": uri, "suite": suite if moved else entry["suite"],
                      "components": entry["components"]})
    return extra


def parse_nvpmodel_status(text):
    """``/var/lib/nvpmodel/status`` -> the id of the mode the next boot applies; None when missing or without pmode.

    ``"pmode:0002 fmode:quiet\\n"`` -> ``2``.
    """
    match = _STATUS_RE.search(text or "")
    return int(match.group(1)) if match else None


def nvpmodel_status_text(text, mode_id):
    """The status file with its pmode set to ``mode_id`` and everything else kept (the fan mode, the newline), or
    ``pmode:%04d`` alone when there was none: ``("pmode:0002 fmode:quiet\\n", 0)`` -> ``"pmode:0000 fmode:quiet\\n"``."""
    if text and _STATUS_RE.search(text):
        return _STATUS_RE.sub("pmode:%04d" % mode_id, text, count=1)
    return "pmode:%04d\n" % mode_id


def _padded(version):
    parts = str(version or "").split(".")
    return ".".join((parts + ["0", "0"])[:3])


def _jetpack_entry(compat, version):
    for entry in compat.get("jetpack") or []:
        if str(entry.get("version")) == str(version):
            return entry
    return None


def _check_options(options, errors):
    base_url = options.get("base_url") or ""
    if base_url and not _URL_RE.match(base_url):
        errors.append("jetpack_base_url is '%s'; it must be an http(s):// or file:// URL of NVIDIA's Jetson repository or a "
                      "mirror of it (e.g. https://repo.download.nvidia.com/jetson)." % base_url)
    key_url = options.get("key_url") or ""
    if key_url and not _URL_RE.match(key_url):
        errors.append("jetpack_key_url is '%s'; it must be an http(s):// or file:// URL, or empty for "
                      "<jetpack_base_url>/jetson-ota-public.asc." % key_url)
    fingerprint = (options.get("key_fingerprint") or "").replace(" ", "").upper()
    if fingerprint and not _FINGERPRINT_RE.match(fingerprint):
        errors.append("jetpack_key_fingerprint is '%s'; it must be the 40 hex digits of the signing key's fingerprint, or "
                      "empty for NVIDIA's (data/jetson.yml)." % options.get("key_fingerprint"))
    clocks = options.get("clocks")
    if clocks is not None and not isinstance(clocks, bool):
        errors.append("jetpack_clocks is %r; it must be true (jetson_clocks at every boot), false (not at boot, the "
                      "clocks put back) or null (left as they are)." % (clocks,))
    power_mode = options.get("power_mode")
    if power_mode is not None and not isinstance(power_mode, str):
        errors.append("jetpack_power_mode is %r; it must be the NAME of a mode in /etc/nvpmodel.conf (e.g. MAXN), max, or "
                      "empty to leave the mode as it is." % (power_mode,))
    reboot = options.get("power_mode_reboot", "never")
    if reboot not in POWER_REBOOT_CHOICES:
        errors.append("jetpack_power_mode_reboot is %r; choose never (a mode that needs a reboot is recorded as pending, "
                      "nothing reboots) or if_needed (the play lets nvpmodel reboot the module)." % (reboot,))
    # dlbox_reboot_allowed (the group's word on unattended reboots; None when unset) false forbids the role's reboot
    if reboot == "if_needed" and options.get("reboot_allowed") is False:
        errors.append("jetpack_power_mode_reboot is if_needed, but dlbox_reboot_allowed is false for this host: the role "
                      "would reboot the module through nvpmodel when the power mode needs it. Set "
                      "jetpack_power_mode_reboot: never (a mode that needs a reboot is recorded as pending), or allow "
                      "reboots for the group (dlbox_reboot_allowed: true). Nothing was changed.")
    return fingerprint


def _packages(data, components, errors):
    known = data["components"]
    if not isinstance(components, list) or not components or not all(isinstance(c, str) for c in components):
        errors.append("jetpack_components is %r; it must be a non-empty list of JetPack components from: %s."
                      % (components, ", ".join(sorted(known))))
        return []
    unknown = [c for c in components if c not in known]
    if unknown:
        errors.append("jetpack_components names %s, which data/jetson.yml does not know; choose from: %s."
                      % (", ".join(unknown), ", ".join(sorted(known))))
        return []
    packages = []
    for component in components:
        packages += [p for p in known[component] if p not in packages]
    return packages


def _suite(l4t):
    """L4T release -> its apt suite (``36.5.2`` -> ``r36.5``), None when it has no minor."""
    parts = str(l4t).split(".")
    return "r%s.%s" % (parts[0], parts[1]) if len(parts) >= 2 else None


def _suite_sharers(compat, jetpack, suite):
    """The other JetPacks of data/compat.yml whose L4T releases are in the same apt suite (``r36.5``: 6.2.2 and 6.2.3;
    ``r39.2``: 7.2 and 7.2.1): NVIDIA's suite then holds the metas of both, and apt takes the newest."""
    return [str(entry.get("version")) for entry in compat.get("jetpack") or []
            if str(entry.get("version")) != jetpack and suite in [_suite(x) for x in entry.get("l4t") or []]]


# one line of ``dpkg-query -W -f='${Package} ${db:Status-Abbrev} ${Version}\n' 'nvidia-*'``: the name, dpkg's wanted
# state, its current state and error flag (``ii ``, ``hi ``, ``iU ``, ``iF ``, ``rc ``, ``un ``), the version
_DPKG_LINE_RE = re.compile(r"^(\S+)\s+([uihrp])([ncHUFWti])(\S?)\s*(\S*)\s*$")
# dpkg's current states: installed (triggers awaited or pending count: the files and the version are in place), and
# half-installed, unpacked, half-configured: an interrupted run that apt refuses to go on from
_DPKG_INSTALLED = "iWt"
_DPKG_HALF = "HUF"


def jetpack_metas(data):
    """Every JetPack meta of the data, all at the JetPack's version (components_versions): nvidia-jetpack, the metas
    between it and the component metas (``meta_chain``: nvidia-jetpack-runtime, nvidia-jetpack-dev, each ``(= v)``),
    and every component's meta (nvidia-cuda, nvidia-cudnn, nvidia-tensorrt, nvidia-vpi, nvidia-container, ``(= v)``)."""
    metas = []
    for package in list(data["components"].get("all") or []) + list(data.get("meta_chain") or []) + \
            [p for packages in data["components"].values() for p in packages]:
        if package not in metas:
            metas.append(package)
    return metas


def parse_installed_metas(text):
    """``dpkg-query -W -f='${Package} ${db:Status-Abbrev} ${Version}\\n' 'nvidia-*'`` -> ``{"installed": {name:
    version}, "half": {name: "<status> <version>"}}``: installed (``ii``, ``hi``, triggers pending) and half-installed
    (``iU``, ``iF``, ``iH``: an interrupted apt or dpkg run) packages; ``un``, ``rc`` and unreadable lines are absent.
    ``"nvidia-container ii  6.2.3+b81"`` -> ``{"installed": {"nvidia-container": "6.2.3+b81"}, "half": {}}``."""
    found = {"installed": {}, "half": {}}
    for line in (text or "").splitlines():
        match = _DPKG_LINE_RE.match(line.strip())
        if not match or not match.group(5):
            continue
        name, want, state, flag, version = match.groups()
        if state in _DPKG_HALF or flag:
            found["half"][name] = "%s%s%s %s" % (want, state, flag, version)
        elif state in _DPKG_INSTALLED:
            found["installed"][name] = version
    return found


def _half_installed(data, installed, errors):
    """A JetPack meta that dpkg holds half-installed (an interrupted apt or dpkg run) is not absent: apt refuses every
    install until ``dpkg --configure -a`` finishes it, and the plan cannot tell its version from the one it will have.
    Refused before any change."""
    half = {name: status for name, status in (installed or {}).get("half", {}).items() if name in jetpack_metas(data)}
    if half:
        errors.append("dpkg holds the JetPack meta%s %s half-installed (an interrupted apt or dpkg run): apt installs "
                      "nothing until it is finished. Run sudo dpkg --configure -a (then sudo apt-get -f install) on the "
                      "module, then run again. Nothing was changed."
                      % ("s" if len(half) > 1 else "", ", ".join("%s (%s)" % item for item in sorted(half.items()))))


def _kept_installed(data, compat, result, version, installed, errors):
    """The version to pin when a JetPack meta is already installed NEWER than the plan's JetPack's metas. NVIDIA's
    documented installs take the newest of the suite: `sudo apt install nvidia-jetpack` (6.2.3+b81 on L4T 36.5.0,
    data/jetson.yml components_versions_source), and the dev kits' Docker setup pages' `sudo apt install -y
    nvidia-container curl` (nvidia-container 6.2.3+b81 on 6.2.2, 7.2.1-b49 on 7.2), which leaves nvidia-jetpack absent.
    Every meta of the data is read (jetpack_metas), not only nvidia-jetpack: apt refuses to downgrade any of them
    ("Packages were downgraded and -y was used without --allow-downgrades"; nvidia-jetpack 6.2.2+b24 "Depends:
    nvidia-jetpack-runtime (= 6.2.2+b24) but 6.2.3+b81 is to be installed"), and a downgrade of every JetPack package
    is not this role's to do. The newest installed JetPack of the same suite is kept, planned and held (said in the
    notes); one the data does not know, or of another suite, is refused before any change. None: refused
    (``errors``)."""
    metas = jetpack_metas(data)
    found = {name: v for name, v in ((installed or {}).get("installed") or {}).items() if name in metas}
    newest = None
    for v in found.values():
        if newest is None or debian_version_compare(v, newest) > 0:
            newest = v
    if not newest or debian_version_compare(newest, version) <= 0:
        return version
    names = [name for name in metas if found.get(name) == newest]
    said = "%s %s %s" % (", ".join(names), newest, "is" if len(names) == 1 else "are")
    owners = [str(jp) for jp, v in data["components_versions"].items() if str(v) == newest]
    suite = result["l4t"]["suite"]
    entry = _jetpack_entry(compat or {}, owners[0]) if owners else None
    if entry is None or suite not in [_suite(x) for x in entry.get("l4t") or []]:
        errors.append("%s installed on this module, newer than the plan's JetPack %s metas (%s), and "
                      "data/jetson.yml (components_versions) knows it as no JetPack of NVIDIA's apt suite %s: the install "
                      "would have to downgrade every JetPack package, which apt refuses. Plan the installed JetPack "
                      "(jetpack in dlbox_plan_request), or add its version to components_versions with its source. "
                      "Nothing was changed." % (said, result["jetpack"], version, suite))
        return None
    result["notes"].append("%s installed (JetPack %s), newer than the plan's JetPack %s metas (%s) in the same apt suite "
                           "%s (NVIDIA's apt install nvidia-jetpack or nvidia-container takes the newest): every JetPack "
                           "meta is planned, kept and held at %s rather than downgraded. To make the plan say so, set "
                           "jetpack: '%s' in dlbox_plan_request."
                           % (said, owners[0], result["jetpack"], version, suite, newest, owners[0]))
    result["kept_meta"] = {"jetpack": owners[0], "version": newest, "planned": version, "packages": names}
    return newest


def _pinned(data, packages, result, compat=None, errors=None, installed=None):
    """Every component meta (nvidia-jetpack, nvidia-cuda, nvidia-container, ...) pinned to the plan's JetPack (data
    ``components_versions``): one suite holds the metas of several JetPacks (r36.4: 6.1, 6.2, 6.2.1; r36.5: 6.2.2 and
    6.2.3; r39.2: 7.2 and 7.2.1), apt would take the newest, and the metas depend on each other at exact versions
    (nvidia-jetpack 6.2+b77 -> nvidia-cuda (= 6.2+b77)), so one meta pinned and another not fails apt (``[all, cuda]``),
    and none pinned takes the next JetPack's metas. The install pins them (``<meta>=<version>``) and ``meta_pin`` holds
    them at that version in apt's preferences, so a later ``apt upgrade`` cannot move them to the other JetPack's
    either. A JetPack without a known version whose suite another JetPack shares is refused (apt would install the
    other's); alone in its suite, it is installed unpinned, which the notes say."""
    if not packages or "components_versions" not in data:
        return packages
    version = data["components_versions"].get(result["jetpack"])
    if version is None:
        sharers = _suite_sharers(compat or {}, result["jetpack"], result["l4t"]["suite"])
        # the plan to suggest: only a JetPack this module's L4T can take (another is refused for this L4T: a loop)
        takes = [jp for jp in sharers if _padded(result["l4t"]["version"])
                 in [_padded(x) for x in (_jetpack_entry(compat or {}, jp) or {}).get("l4t") or []]]
        if sharers and errors is not None:
            errors.append("JetPack %s shares NVIDIA's apt suite %s with JetPack %s, and data/jetson.yml "
                          "(components_versions) knows no version of JetPack %s's metas (%s): installed unpinned, or "
                          "upgraded later, apt would take the newest metas in the suite, another JetPack's. Add the "
                          "version (apt-cache madison nvidia-jetpack on the module lists each JetPack's) to "
                          "components_versions with its source%s. Nothing was changed."
                          % (result["jetpack"], result["l4t"]["suite"], ", ".join(sharers), result["jetpack"],
                             ", ".join(packages), ", or plan JetPack %s" % " or ".join(takes) if takes else ""))
            return packages
        result["notes"].append("%s installed unpinned: data/jetson.yml (components_versions) knows no JetPack meta "
                               "version for JetPack %s, so apt takes the newest in the suite %s."
                               % (" and ".join(packages) + (" is" if len(packages) == 1 else " are"), result["jetpack"],
                                  result["l4t"]["suite"]))
        return packages
    version = _kept_installed(data, compat, result, version, installed, errors if errors is not None else [])
    if version is None:
        return packages
    # every meta of the data, not only the components asked: nvidia-jetpack -> nvidia-jetpack-runtime/-dev (=) ->
    # nvidia-cuda, nvidia-container, ... (=); one left free moves to the other JetPack's version on an apt full-upgrade
    # or NVIDIA's `apt install nvidia-container`, and takes the held ones with it (nvidia-jetpack removed)
    result["meta_pin"] = {"packages": jetpack_metas(data), "version": version}
    return ["%s=%s" % (package, version) for package in packages]


def _container_runtime(data, options, errors):
    """Docker with nvidia as its default runtime (``container_runtime``, edge.yml's dlbox_edge_docker) needs a component
    that brings nvidia-container (data/jetson.yml ``container_runtime``); without one every container fails to start."""
    bringing = (data.get("container_runtime") or {}).get("components") or []
    components = options.get("components")
    if not options.get("container_runtime") or not bringing or not isinstance(components, list):
        return
    if not set(components) & set(bringing):
        errors.append("jetpack_components is %s, without %s: nothing installs nvidia-container (Docker's nvidia runtime), "
                      "but Docker is set up with nvidia as its default runtime (dlbox_edge_docker is true), so every "
                      "container would fail to start. Add container to jetpack_components, or set dlbox_edge_docker to "
                      "false. Nothing was changed." % (components, " or ".join(bringing)))


def _left_pending(conf_text, query_text, status_text):
    """jetpack_power_mode cleared after a run with jetpack_power_mode_reboot never: nvpmodel's status still holds the
    mode that run wrote, not the one in effect, and the next boot applies it (issue 52 red team LOW 3). The warning to
    say in the run, or None."""
    status = parse_nvpmodel_status(status_text)
    current = parse_nvpmodel_query(query_text)
    if status is None or current is None or current.get("id") is None or current["id"] == status:
        return None
    names = {mode["id"]: mode["name"] for mode in (parse_nvpmodel_conf(conf_text) or {}).get("modes") or []}
    mode = "%s (id %d)" % (names[status], status) if status in names else "id %d" % status
    return ("Warning: jetpack_power_mode is empty, but nvpmodel's status (%s) holds the power mode %s, not %s: the "
            "next boot applies %s (an earlier run with jetpack_power_mode_reboot never recorded it). To keep %s, set "
            "jetpack_power_mode: %s (the role writes the status back); to apply %s, reboot."
            % (NVPMODEL_STATUS, mode, _current_name({"current": current}), mode,
               current.get("name") or "the mode in effect", current.get("name") or "<its NAME>", mode))


def _power(options, conf_text, query_text, errors, status_text=None, notes=None):
    wanted = options.get("power_mode") or ""
    if not isinstance(wanted, str) or not wanted:
        if wanted in ("", None) and notes is not None:
            warning = _left_pending(conf_text, query_text, status_text)
            if warning:
                notes.append(warning)
        return None
    conf = parse_nvpmodel_conf(conf_text)
    if conf is None or not conf["modes"]:
        errors.append("jetpack_power_mode is '%s', but this host has no power modes in /etc/nvpmodel.conf (nvidia-l4t-nvpmodel "
                      "writes it on a flashed Jetson); leave jetpack_power_mode empty." % wanted)
        return None
    by_name = {mode["name"]: mode for mode in conf["modes"]}
    mode = max_power_mode(conf["modes"]) if wanted == "max" else by_name.get(wanted)
    if mode is None:
        errors.append("jetpack_power_mode is '%s'; /etc/nvpmodel.conf of this module has the modes %s (set one of these NAMEs%s)."
                      % (wanted, ", ".join("%s (id %d)" % (m["name"], m["id"]) for m in conf["modes"]),
                         "; none is MAXN_SUPER, MAXN or named in watts, so max has no meaning here" if wanted == "max" else ""))
        return None
    current = parse_nvpmodel_query(query_text)
    change = current is None or current.get("id") != mode["id"]
    status = parse_nvpmodel_status(status_text)
    # pending: the mode is in nvpmodel's status (the mode the next boot applies: an earlier run with never wrote it)
    # while another is in effect, so it waits for a reboot
    return {"name": mode["name"], "id": mode["id"], "default": conf["default"], "current": current, "asked": wanted,
            "reboot": options.get("power_mode_reboot", "never"), "change": change, "status": status,
            "pending": change and current is not None and status == mode["id"],
            # the mode asked is in effect, but nvpmodel's status holds another (an earlier run with never wrote it): the
            # next boot would apply that one, so the status is written back to the mode asked
            "stale_status": not change and status is not None and status != mode["id"],
            "status_path": NVPMODEL_STATUS, "status_text": nvpmodel_status_text(status_text, mode["id"])}


def max_power_mode(modes):
    """The module's most powerful mode by its conf's names: MAXN_SUPER (Orin Nano/NX Super, JetPack 6.2 and newer),
    else MAXN, else the most watts in a name (``MODE_50W``, ``25W``); None when no name says.

    ``[{"id": 0, "name": "15W"}, {"id": 2, "name": "MAXN_SUPER"}]`` -> ``{"id": 2, "name": "MAXN_SUPER"}``.
    """
    by_name = {mode["name"]: mode for mode in modes}
    for name in ("MAXN_SUPER", "MAXN"):
        if name in by_name:
            return by_name[name]
    watts = [(int(match.group(1)), mode) for mode in modes for match in [_WATTS_RE.search(mode["name"])] if match]
    return max(watts, key=lambda pair: pair[0])[1] if watts else None


def _current_name(power):
    current = power.get("current") or {}
    return "the mode in effect (%s)" % current["name"] if current.get("name") else "the mode in effect"


def _pending_message(power):
    return ("Power mode %s (id %d) needs a reboot: nvpmodel asked, and the answer no left %s as it is. The mode is "
            "recorded in %s, the mode nvpmodel applies at every boot, so the next reboot sets it (pending reboot). To "
            "set it now, run again with jetpack_power_mode_reboot: if_needed (the play reboots the module through "
            "nvpmodel's prompt), or reboot the module (or run sudo nvpmodel -m %d and answer YES)."
            % (power["name"], power["id"], _current_name(power), power.get("status_path") or NVPMODEL_STATUS, power["id"]))


def power_result(power, rc, output):
    """What ``nvpmodel -m <id>``, answered "no", did: ``{"state", "reboot_required", "message"}``.

    ``state``: ``applied`` (the mode switched at once, rc 0), ``pending_reboot`` (nvpmodel asked for a reboot and the
    answer cancelled its change: the mode is not in effect; the role then records it in nvpmodel's status file, which
    the next boot applies, or reboots through the prompt with if_needed), ``failed``, or ``unchanged`` (``rc`` None:
    nvpmodel did not run, the mode was in effect; or, where the power's ``pending`` says the status file already
    holds it, ``pending_reboot`` again, without running nvpmodel).
    ``output``: stdout and stderr together, e.g. ``NVPM WARN: Reboot required for changing to this power mode: 0`` ...
    """
    if rc is None:
        if power.get("pending"):
            return {"state": "pending_reboot", "reboot_required": True, "message": _pending_message(power)}
        return {"state": "unchanged", "reboot_required": False, "message": ""}
    if _REBOOT_REQUIRED_RE.search(output or ""):
        # a declined change is cancelled (almond-bot/axol#107: "the box never reached MAXN on any boot" while nothing
        # recorded it); the role writes the mode to nvpmodel's status file so the next boot applies it
        return {"state": "pending_reboot", "reboot_required": True, "message": _pending_message(power)}
    if rc == 0:
        return {"state": "applied", "reboot_required": False, "message": "Power mode %s set." % power["name"]}
    return {"state": "failed", "reboot_required": False,
            "message": "nvpmodel -m %d (%s) failed (rc %s): %s" % (power["id"], power["name"], rc, (output or "").strip())}


def decide(plan, options, release_text=None, model_text=None, nvpmodel_conf=None, nvpmodel_query=None, data=None, compat=None,
           flashed_list=None, nvpmodel_status=None, installed_meta=None):
    """Everything the jetpack role does, or why it must not.

    ``plan``: ``dlbox_plan``; ``options``: the role's variables (``OPTION_KEYS``); ``release_text``: the host's
    ``/etc/nv_tegra_release`` (None when missing); ``model_text``: its device-tree model; ``nvpmodel_conf``: its
    ``/etc/nvpmodel.conf``; ``nvpmodel_query``: the output of ``nvpmodel -q``; ``data``: ``data/jetson.yml``;
    ``compat``: ``data/compat.yml`` (for the L4T releases of the plan's JetPack); ``flashed_list``: the flashed
    JetPack's ``nvidia-l4t-apt-source.list`` (or the copy set aside by an earlier run), whose every line is kept: the
    role sets the list aside, so a line its own repositories do not cover (``jetson/ffmpeg`` on JetPack 6 and 7.2)
    becomes a repository too. ``nvpmodel_status``: ``/var/lib/nvpmodel/status`` (the mode the next boot applies).
    ``installed_meta``: ``dpkg-query -W -f='${Package} ${db:Status-Abbrev} ${Version}\\n' 'nvidia-*'`` (every
    JetPack meta of the data read: the newest, when newer than the plan's, is kept and held, ``kept_meta``, or refused;
    never downgraded; a half-installed one is refused).

    Returns ``{"ok", "errors", "l4t", "jetpack", "family", "repositories", "pin_origin", "key", "packages",
    "preinstalled_list", "power", "clocks", "notes", "meta_pin"}`` (``notes``: what the run should say, e.g. an
    unpinned meta; ``meta_pin``: ``{"packages", "version"}`` that apt's preferences hold, or None).
    ``errors`` are complete sentences that end in what to do.
    """
    errors = []
    release = parse_nv_tegra_release_line(release_text)
    model = (model_text or "").replace("\0", "").strip() or None
    fingerprint = _check_options(options, errors)
    result = {"ok": False, "errors": errors, "l4t": None, "jetpack": None, "family": None, "repositories": [],
              "key": None, "pin_origin": None, "packages": [], "preinstalled_list": data["repository"]["preinstalled_list"],
              "power": None, "clocks": options.get("clocks"), "notes": [], "meta_pin": None, "kept_meta": None}

    if release is None:
        errors.append("This host is not a Jetson running L4T: /etc/nv_tegra_release is missing or has no '# R<major> "
                      "(release), REVISION: ...' line, and its device-tree model is %s. The jetpack role (and edge.yml) "
                      "applies to Jetson modules flashed with JetPack only; run workstation.yml on other machines. "
                      "Nothing was changed." % ("'%s'" % model if model else "missing"))
        return result
    l4t = release["l4t"]
    major, minor = int(release["release"]), release["revision"].split(".")[0]
    result["l4t"] = {"version": l4t, "major": major, "suite": data["repository"]["suite"].format(major=major, minor=minor)}

    stack = (plan or {}).get("stack") or {}
    jetpack = stack.get("jetpack") or None
    if not isinstance(jetpack, dict) or not jetpack.get("version"):
        errors.append("The plan (dlbox_plan) has no JetPack (stack.jetpack) for this host: run playbooks/plan.yml first "
                      "(edge.yml does) with the Jetson module detected, or name it in dlbox_plan_hardware.gpus. Nothing was changed.")
        return result
    result["jetpack"] = str(jetpack["version"])
    family = jetpack.get("family")
    result["family"] = family
    entry = _jetpack_entry(compat or {}, jetpack["version"])
    releases = [str(x) for x in (entry or {}).get("l4t") or []]
    majors = sorted({int(x.split(".")[0]) for x in releases})
    if majors and major not in majors:
        errors.append("The plan's JetPack %s is for L4T %s, but this module runs L4T %s (R%d). Moving to another L4T major "
                      "release needs a reflash (SDK Manager or flash.sh, with the module in recovery mode); apt cannot do it, so "
                      "nothing was changed. Reflash with JetPack %s, or plan the JetPack of this L4T (drop jetpack from "
                      "dlbox_plan_request)." % (jetpack["version"], " or ".join(releases), l4t, major, jetpack["version"]))
        return result
    if releases and _padded(l4t) not in [_padded(x) for x in releases]:
        errors.append("The plan's JetPack %s is for L4T %s, but this module runs L4T %s. Update L4T within R%d first (NVIDIA's "
                      "over-the-air update), or plan the JetPack of this L4T (drop jetpack from dlbox_plan_request). Nothing "
                      "was changed." % (jetpack["version"], " or ".join(releases), l4t, major))
        return result

    if major < MIN_L4T_MAJOR:
        errors.append("This module runs L4T %s (R%d, JetPack 5 or older); the jetpack role and edge.yml support JetPack 6 "
                      "and newer only (L4T R%d and later: Orin and Thor modules). Reflash an Orin with JetPack 6 or newer "
                      "(SDK Manager or flash.sh, the module in recovery mode); an older module (Xavier, TX2, Nano) cannot "
                      "run it, so leave it out of edge.yml's hosts. Nothing was changed." % (l4t, major, MIN_L4T_MAJOR))
        return result
    soc = (data["socs"].get(family) or {}) if family else {}
    if not soc:
        errors.append("data/jetson.yml knows no SoC repository for the module family '%s' (stack.jetpack.family); known: %s. "
                      "Nothing was changed." % (family, ", ".join(sorted(data["socs"]))))
        return result
    if major not in soc["l4t_majors"]:
        errors.append("L4T R%d does not run on %s modules (data/jetson.yml: R%s); reflash with a JetPack for this module. "
                      "Nothing was changed." % (major, family, ", R".join(str(m) for m in soc["l4t_majors"])))
        return result

    folder = data["repository"]["soc_folder"].get(major)
    if folder is None:
        errors.append("data/jetson.yml (repository.soc_folder) names no folder of NVIDIA's Jetson repository for L4T R%d "
                      "(known: R%s); add it with its source. Nothing was changed."
                      % (major, ", R".join(str(m) for m in sorted(data["repository"]["soc_folder"]))))
        return result
    base = (options.get("base_url") or data["repository"]["base_url"]).rstrip("/")
    suite = result["l4t"]["suite"]
    folders = ("common", folder.replace("{soc}", soc["soc"]))
    result["repositories"] = [
        {"name": "nvidia-jetson-%s" % repo, "uri": "%s/%s" % (base, repo), "suite": suite,
         "components": [data["repository"]["component"]]}
        for repo in folders
    ] + _flashed_repositories(flashed_list, [data["repository"]["base_url"].rstrip("/"), base], base, folders, suite)
    # apt's `Pin: origin` is the host of the sources (empty for file:// ones)
    result["pin_origin"] = urlparse(base).hostname or ""
    result["key"] = {"url": options.get("key_url") or "%s/%s" % (base, data["repository"]["key_file"]),
                     "fingerprint": fingerprint or data["repository"]["key_fingerprint"]}
    metas = parse_installed_metas(installed_meta)
    _half_installed(data, metas, errors)
    result["packages"] = _pinned(data, _packages(data, options.get("components"), errors), result, compat, errors,
                                 metas)
    _container_runtime(data, options, errors)
    result["power"] = _power(options, nvpmodel_conf, nvpmodel_query, errors, nvpmodel_status, result["notes"])
    result["ok"] = not errors
    return result


# --------------------------------------------------------------------------------------------
# Where the NVIDIA Container Toolkit comes from (the nvidia_container_toolkit role)
# --------------------------------------------------------------------------------------------

TOOLKIT_SOURCES = _spec.choices("nvidia_container_toolkit", "nvidia_container_toolkit_source")  # the argument spec's


def is_jetson(plan, host=None):
    """Whether the plan (its ``stack.jetpack`` or ``host.jetson``) or the host's gpu_facts (``jetson``) is a Jetson."""
    plan = plan or {}
    return bool((plan.get("stack") or {}).get("jetpack") or (plan.get("host") or {}).get("jetson")
                or (host or {}).get("jetson"))


def container_toolkit_source(choice, plan, host=None):
    """Where the container toolkit comes from: ``{"source": "nvidia"|"jetpack"|None, "errors": [...]}``.

    On L4T, JetPack installs the toolkit from NVIDIA's Jetson repository (``nvidia-container``, which pulls
    ``nvidia-container-toolkit``: the jetpack role's ``container`` component), and NVIDIA's libnvidia-container
    repository (x86_64/sbsa builds) must not be added. ``choice`` is ``nvidia_container_toolkit_source``:
    ``auto`` (jetpack on a Jetson, else nvidia), ``nvidia`` or ``jetpack``; a choice that does not fit the host is
    refused, naming the variable::

        ("auto", plan with stack.jetpack) -> {"source": "jetpack", "errors": []}
        ("nvidia", plan with stack.jetpack) -> {"source": None, "errors": ["nvidia_container_toolkit_source is ..."]}
    """
    jetson = is_jetson(plan, host)
    if choice not in TOOLKIT_SOURCES:
        return {"source": None, "errors": ["nvidia_container_toolkit_source is %r; choose one of %s." %
                                           (choice, ", ".join(TOOLKIT_SOURCES))]}
    if choice == "auto":
        return {"source": "jetpack" if jetson else "nvidia", "errors": []}
    if choice == "nvidia" and jetson:
        return {"source": None, "errors": [
            "nvidia_container_toolkit_source is 'nvidia' but this host is a Jetson (L4T): NVIDIA's libnvidia-container "
            "repository must not go onto L4T; JetPack ships the toolkit from the Jetson repository (the jetpack role, "
            "jetpack_components all or container). Use 'auto' or 'jetpack'. Nothing was changed."]}
    if choice == "jetpack" and not jetson:
        return {"source": None, "errors": [
            "nvidia_container_toolkit_source is 'jetpack' but this host is not a Jetson (the plan has no JetPack and "
            "gpu_facts saw no L4T): JetPack's toolkit exists on L4T only. Use 'auto' or 'nvidia'. Nothing was changed."]}
    return {"source": choice, "errors": []}
