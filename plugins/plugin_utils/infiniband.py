# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""InfiniBand/RDMA link state from ``ibstat`` (pure; the port states that carry traffic come from data/server.yml).

:func:`parse_ibstat` reads ibstat(8)'s output (infiniband-diags)::

    CA 'mlx5_0'
            CA type: MT4129
            Number of ports: 1
            Port 1:
                    State: Active
                    Physical state: LinkUp
                    Rate: 400
                    Link layer: InfiniBand

into ``[{"ca": "mlx5_0", "type": "MT4129", "firmware": "28.40.1000", "ports": [{"port": 1, "state": "Active",
"physical_state": "LinkUp", "rate_gbps": 400.0, "link_layer": "InfiniBand"}]}]``. :func:`report` says per port
whether it is up (State Active and Physical state LinkUp: a port that is LinkUp but Initializing waits for a
subnet manager) and gives one line per port for the run's summary.

:func:`doca_install` checks the variables that install DOCA-OFED from NVIDIA's DOCA-Host apt repository (optional,
``infiniband_doca_*``; the repository layout, key and meta package are data/server.yml ``infiniband.doca``).
"""

from __future__ import annotations

import re

_CA = re.compile(r"^CA '([^']+)'\s*$")
_PORT = re.compile(r"^\s+Port\s+([0-9]+):\s*$")
_FIELD = re.compile(r"^\s+([^:]+?):\s*(.*?)\s*$")
_CA_FIELDS = {"CA type": "type", "Firmware version": "firmware", "Number of ports": "port_count"}
_PORT_FIELDS = {"State": "state", "Physical state": "physical_state", "Rate": "rate", "Link layer": "link_layer",
                "Base lid": "lid", "SM lid": "sm_lid"}


_URL = re.compile(r"^(https?://[^/\s]+/|file:///)\S*$")
_FINGERPRINT = re.compile(r"^([0-9A-F]{40}|[0-9A-F]{64})$")
_PACKAGE = re.compile(r"^[a-z0-9][a-z0-9+.-]+$")


class InfinibandError(ValueError):
    """ibstat output that is not ibstat's."""


def parse_ibstat(text):
    """ibstat's text -> list of CA dicts (see the module's docstring). Empty text: no CA."""
    cas = []
    port = None
    for line in (text or "").splitlines():
        if not line.strip():
            continue
        match = _CA.match(line)
        if match:
            cas.append({"ca": match.group(1), "type": None, "firmware": None, "port_count": None, "ports": []})
            port = None
            continue
        if not cas:
            raise InfinibandError("ibstat output must start with a CA line (CA 'mlx5_0'), not %r" % line[:80])
        match = _PORT.match(line)
        if match:
            port = {"port": int(match.group(1)), "state": None, "physical_state": None, "rate_gbps": None,
                    "link_layer": None, "lid": None, "sm_lid": None}
            cas[-1]["ports"].append(port)
            continue
        match = _FIELD.match(line)
        if not match:
            continue
        label, value = match.group(1), match.group(2) or None
        if port is not None and label in _PORT_FIELDS:
            key = _PORT_FIELDS[label]
            if key == "rate":
                rate = re.match(r"([0-9]+(?:\.[0-9]+)?)", value or "")
                port["rate_gbps"] = float(rate.group(1)) if rate else None
            else:
                port[key] = value
        elif port is None and label in _CA_FIELDS:
            key = _CA_FIELDS[label]
            cas[-1][key] = int(value) if key == "port_count" and value and value.isdigit() else value
    return cas


def _rate(value):
    return "?" if value is None else ("%g Gb/s" % value)


def report(text, data, devices=()):
    """ibstat's text (None: ibstat is not installed), data/server.yml and the RDMA devices of /sys/class/infiniband
    -> ``{"present", "ports", "down", "lines", "ok"}``: each port with ``up``; ``down`` the ports that carry no
    traffic; one line per port (with what to check for a port that is down) for the run's summary."""
    facts = data["infiniband"]
    devices = sorted(devices or [])
    if text is None:
        lines = ["RDMA devices %s, but ibstat is not installed: install %s to see their link state" % (
            ", ".join(devices), facts["diags_package"])] if devices else []
        return {"present": bool(devices), "ports": [], "down": [], "lines": lines, "ok": False}
    ports, lines, down = [], [], []
    for ca in parse_ibstat(text):
        for port in ca["ports"]:
            name = "%s/%d" % (ca["ca"], port["port"])
            up = port["state"] == facts["up_state"] and port["physical_state"] == facts["up_physical_state"]
            ports.append(dict(port, name=name, ca=ca["ca"], up=up))
            line = "%s: %s, %s, %s, %s" % (name, port["state"] or "?", port["physical_state"] or "?",
                                           _rate(port["rate_gbps"]), port["link_layer"] or "?")
            if not up:
                if port["physical_state"] == facts["up_physical_state"]:
                    why = ("the link is up but no subnet manager has made the port %s (run opensm, or check the "
                           "switch's subnet manager)" % facts["up_state"])
                else:
                    why = "no link (check the cable, the transceiver and the switch port)"
                line += " -- NOT %s: %s" % (facts["up_state"], why)
                down.append(name)
            lines.append(line)
    return {"present": bool(ports or devices), "ports": ports, "down": down, "lines": lines,
            "ok": bool(ports) and not down}


def doca_install(data, install=False, repo_url="", key_url="", fingerprint="", packages=None, arch="x86_64"):
    """The infiniband_doca_* variables and the host's architecture -> what to install, checked.

    Returns ``{"install", "problems", "url", "key_url", "fingerprint", "packages"}``. With ``install`` false nothing
    else is looked at (no problems). With it true, the repository URL and the key's full fingerprint are required
    (no default exists for them: the URL names a DOCA release, the pin is the user's), the key URL defaults to the
    key at the root of NVIDIA's DOCA repositories and the packages to the DOCA-OFED meta package; a URL in NVIDIA's
    layout (``<root>/<version>/<distro>/<arch>/``) for another architecture than the host's is refused.
    ``arch`` empty (not known yet): the architecture is not checked. Every problem names the variable and says
    what would work.
    """
    facts = data["infiniband"]["doca"]
    result = {"install": False, "problems": [], "url": "", "key_url": "", "fingerprint": "", "packages": []}
    if not isinstance(install, bool):
        result["problems"].append("infiniband_doca_install must be true or false, not %r" % (install,))
        return result
    if not install:
        return result
    problems = result["problems"]
    arch_dir = facts["arch_dirs"].get(arch) if arch else "<arch>"
    if arch_dir is None:
        problems.append("infiniband_doca_install: NVIDIA's DOCA-Host repositories exist for %s, not %s "
                        "(data/server.yml infiniband.doca.arch_dirs)" % (", ".join(sorted(facts["arch_dirs"])), arch))
        arch_dir = "<arch>"
    example = "%s/<version>/<distro>/%s/ (e.g. %s/3.1.0/ubuntu24.04/%s/)" % (
        facts["repo_root"], arch_dir, facts["repo_root"], arch_dir)

    url = str(repo_url or "").strip()
    if not url:
        problems.append("infiniband_doca_repo_url is empty: with infiniband_doca_install true it must name the "
                        "DOCA-Host repository of one DOCA release for this host, %s, or your mirror of it" % example)
    elif not _URL.match(url):
        problems.append("infiniband_doca_repo_url must be an http://, https:// or file:/// URL of the DOCA-Host "
                        "repository, %s, not %r" % (example, url))
    else:
        url = url.rstrip("/") + "/"
        parts = url.split("/")
        others = [d for d in facts["arch_dirs"].values() if d != arch_dir and d in parts]
        if arch and others and arch_dir not in parts:
            problems.append("infiniband_doca_repo_url (%s) is DOCA's repository for %s, and this host is %s: use "
                            "the %s directory, %s" % (url, others[0], arch, arch_dir, example))

    key = str(key_url or "").strip() or facts["key_url"]
    if not _URL.match(key):
        problems.append("infiniband_doca_key_url must be an http://, https:// or file:/// URL of the repository's "
                        "signing key (NVIDIA's: %s), not %r" % (facts["key_url"], key))

    pin = re.sub(r"\s", "", str(fingerprint or "")).upper()
    if not _FINGERPRINT.match(pin):
        problems.append("infiniband_doca_key_fingerprint must be the full fingerprint of the repository's signing key "
                        "(40 hex digits, spaces allowed; no default: run `gpg --show-keys` on %s after checking it; "
                        "NVIDIA's key has the long id %s), not %r" % (key, facts["key_id"], fingerprint or ""))

    if packages in (None, "", []):
        wanted = list(facts["packages"])
    elif isinstance(packages, (list, tuple)) and all(isinstance(p, str) and _PACKAGE.match(p) for p in packages):
        wanted = list(packages)
    else:
        wanted = []
        problems.append("infiniband_doca_packages must be a list of DOCA package names (empty: %s, the DOCA-OFED "
                        "profile), not %r" % (", ".join(facts["packages"]), packages))

    result.update(install=True, url=url, key_url=key, fingerprint=pin, packages=wanted)
    return result
