# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""GB200/GB300 NVL compute trays: what ``nvidia-imex-ctl`` says of IMEX (pure, no I/O).

``nvidia-imex-ctl -q`` prints the local daemon's status, one word (``READY``); ``-N`` the whole IMEX domain::

    Connectivity Table Legend:
    ...
    !V! - Version mismatch, communication disabled.
    !M! - Node map mismatch, communication disabled.
    C - Connected - Ready for operation

    5/12/2025 06:08:10.580
    Nodes:
    Node #0   - 172.31.48.81    - READY                - Version: 570.172
    Node #1   - 172.31.48.98    - READY                - Version: 570.172

     Nodes From\\To  0   1
           0        C   C
           1        C   C

    Domain State: UP

(recorded outputs in tests/fixtures/imex, sources in its SOURCES.md: 18 GB200 trays of an AWS P6e UltraServer, driver
570.172, with the ``Version`` column and the ``!V!``/``!M!`` legend; one and two GH200 nodes under NVIDIA's DRA driver,
IMEX 570.00, without them). The words are NVIDIA's: the daemon states ``INITIALIZING``, ``STARTING_AUTH_SERVER``,
``WAITING_FOR_PEERS``, ``WAITING_FOR_RECOVERY``, ``INIT_GPU``, ``READY``, ``SHUTTING_DOWN``, ``UNAVAILABLE`` and the
domain states ``UP``, ``DOWN``, ``DEGRADED`` (NVIDIA/DCGM ``dcgm_fields.h``, ``DCGM_FI_IMEX_DAEMON_STATUS`` "from
nvidia-imex-ctl -q" and ``DCGM_FI_IMEX_DOMAIN_STATUS`` "from nvidia-imex-ctl -N -j"); the connection codes are the
legend's. ``nvidia-imex-ctl`` talks to IMEX's command service (NVIDIA IMEX guide, "IMEX Service Command Service"):
where it is not enabled the tool prints an error, which :func:`verdict` reports as "not judged", never as ready.
"""

from __future__ import annotations

import re

DAEMON_STATES = ("INITIALIZING", "STARTING_AUTH_SERVER", "WAITING_FOR_PEERS", "WAITING_FOR_RECOVERY", "INIT_GPU",
                 "READY", "SHUTTING_DOWN", "UNAVAILABLE")
# the daemon is on its way to READY: polling again may help
STARTING_STATES = ("INITIALIZING", "STARTING_AUTH_SERVER", "WAITING_FOR_PEERS", "WAITING_FOR_RECOVERY", "INIT_GPU")
DOMAIN_STATES = ("UP", "DOWN", "DEGRADED")
# the connectivity table's codes (the legend nvidia-imex-ctl -N prints)
CONNECTIONS = {"I": "Invalid (node not reachable)", "N": "Never Connected", "R": "Recovering", "D": "Disconnected",
               "A": "Authenticating", "!V!": "Version mismatch, communication disabled",
               "!M!": "Node map mismatch, communication disabled", "C": "Connected"}

_NODE_RE = re.compile(r"^Node #(?P<index>\d+)\s+-\s+(?P<address>\S+)\s+-\s+(?P<status>[A-Z_]+)"
                      r"(?:\s+-\s+Version:\s*(?P<version>\S+))?\s*$")
_DOMAIN_RE = re.compile(r"^Domain State:\s*(?P<state>[A-Z_]+)\s*$", re.M)
_TABLE_RE = re.compile(r"^\s*Nodes From\\To((?:\s+\d+)+)\s*$")
_ROW_RE = re.compile(r"^\s*(?P<index>\d+)\s+(?P<codes>(?:(?:!?[A-Z]!?)\s*)+)$")


def parse_query(text):
    """``nvidia-imex-ctl -q`` -> the daemon's state (one of :data:`DAEMON_STATES`), or None when the text holds none
    (the tool could not reach IMEX's command service, or a paste without it).

    >>> parse_query("READY\\n")
    'READY'
    >>> parse_query("IMEX daemon status:\\nREADY\\nConnectivity Table Legend:\\n") == 'READY'
    True
    """
    for line in (text or "").splitlines():
        word = line.strip()
        if word in DAEMON_STATES:
            return word
    return None


def parse_domain(text):
    """``nvidia-imex-ctl -N`` -> ``{state, nodes, links}`` or None when the text has no ``Nodes:`` list.

    ``state``: ``Domain State`` (``UP``/``DOWN``/``DEGRADED``, None when not printed); ``nodes``: ``[{index, address,
    status, version}]`` (``version`` None where the tool prints no ``Version`` column, as IMEX 570.00 did);
    ``links``: ``[{from, to, code}]`` for every cell of the connectivity table.
    """
    text = text or ""
    nodes, links, columns, seen = [], [], None, False
    for line in text.splitlines():
        if line.strip() == "Nodes:":
            seen = True
            continue
        match = _NODE_RE.match(line.strip())
        if match:
            nodes.append({"index": int(match.group("index")), "address": match.group("address"),
                          "status": match.group("status"),
                          "version": match.group("version")})
            continue
        match = _TABLE_RE.match(line)
        if match:
            columns = [int(n) for n in match.group(1).split()]
            continue
        match = _ROW_RE.match(line) if columns else None
        if match:
            codes = match.group("codes").split()
            links.extend({"from": int(match.group("index")), "to": to, "code": code} for to, code in zip(columns, codes))
    if not seen and not nodes:
        return None
    domain = _DOMAIN_RE.search(text)
    return {"state": domain.group("state") if domain else None, "nodes": nodes, "links": links}


def _domain_problems(domain):
    """Sentences on what keeps a domain from ``UP``: nodes not ``READY``, connections not ``C``, versions that differ."""
    problems = []
    down = [n for n in domain["nodes"] if n["status"] != "READY"]
    if down:
        problems.append("node(s) not READY: %s" % ", ".join(
            "#%d %s %s" % (n["index"], n["address"], n["status"]) for n in down))
    bad = [link for link in domain["links"] if link["code"] != "C"]
    for code in ("!V!", "!M!", "I", "D", "R", "N", "A"):
        pairs = ["%d->%d" % (link["from"], link["to"]) for link in bad if link["code"] == code]
        if pairs:
            problems.append("%s %s (%s)" % (CONNECTIONS[code], ", ".join(pairs[:6]) + (" ..." if len(pairs) > 6 else ""),
                                            code))
    versions = sorted({n["version"] for n in domain["nodes"] if n["version"]})
    if len(versions) > 1:
        problems.append("IMEX versions differ across the domain: %s" % ", ".join(versions))
    return problems


def verdict(query_text, domain_text="", service_state="active", driver_version=None, service="nvidia-imex"):
    """Is IMEX ready on this tray? ``{ready, waiting, failed, judged, daemon, domain, reason, warnings}``.

    ``failed`` when the service failed or the daemon is ``SHUTTING_DOWN``/``UNAVAILABLE``, or the domain shows a
    version or node-map mismatch (``!V!``/``!M!``: communication disabled until the configuration is fixed);
    ``waiting`` while the service is not active yet or the daemon is starting (:data:`STARTING_STATES`); ``ready``
    when the daemon is ``READY``. A domain ``DEGRADED`` or ``DOWN`` while this daemon is ``READY`` is a warning, not a
    failure: the other trays may be set up after this one (IMEX's default ``IMEX_WAIT_FOR_QUORUM=RECOVERY`` goes on
    without them). ``judged`` False: ``nvidia-imex-ctl`` gave no state (its command service not reachable).
    """
    state = (service_state or "").strip() or "unknown"
    daemon = parse_query(query_text)
    domain = parse_domain(domain_text)
    out = {"ready": False, "waiting": False, "failed": False, "judged": daemon is not None, "daemon": daemon,
           "domain": domain, "reason": "", "warnings": []}
    if state == "failed":
        out.update(failed=True, judged=True, reason="%s.service failed (systemctl is-active: failed)." % service)
        return out
    if state != "active":
        out.update(waiting=True, reason="%s.service is %s, not active." % (service, state))
        return out
    problems = _domain_problems(domain) if domain else []
    if domain and domain["state"] and domain["state"] != "UP":
        out["warnings"].append("IMEX domain %s: %s." % (domain["state"], "; ".join(problems) or "no node listed"))
    mine = [n for n in (domain or {}).get("nodes", []) if n["version"] and driver_version
            and not driver_version.startswith(n["version"]) and not n["version"].startswith(driver_version)]
    if mine:
        out["warnings"].append("IMEX on %s reports version %s, the driver here is %s." % (
            ", ".join(n["address"] for n in mine), ", ".join(sorted({n["version"] for n in mine})), driver_version))
    mismatch = [p for p in problems if p.endswith("(!V!)") or p.endswith("(!M!)")]
    if daemon is None:
        out["reason"] = ("nvidia-imex-ctl -q gave no IMEX state (is IMEX's command service enabled in "
                         "/etc/nvidia-imex/config.cfg?); %s.service is active." % service)
        return out
    if daemon in ("SHUTTING_DOWN", "UNAVAILABLE") or mismatch:
        out.update(failed=True, reason="IMEX is %s%s." % (daemon, ("; " + "; ".join(mismatch)) if mismatch else ""))
        if mismatch:
            out["reason"] += (" Every tray must list the same nodes in the same order in its nodes_config.cfg (!M!) "
                              "and run IMEX of the same driver version (!V!)")
        return out
    if daemon in STARTING_STATES:
        out.update(waiting=True, reason="IMEX is %s, not READY yet." % daemon)
        return out
    out.update(ready=True, reason="IMEX is READY%s." % (
        "; domain %s with %d node(s)" % (domain["state"], len(domain["nodes"])) if domain and domain["state"] else ""))
    return out
