# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which DCGM 4 package and which dcgm-exporter go with a host, and how the exporter listens (pure).

NVIDIA builds DCGM 4 once per CUDA major (``datacenter-gpu-manager-4-cuda12``, ``-cuda13``) and its installation
guide picks the one for the CUDA major that ``nvidia-smi -q`` prints for the installed driver. dcgm-exporter is
built against one DCGM release and tagged ``<DCGM version>-<exporter version>`` (``4.2.3-4.1.3``); data/server.yml
holds the pairs. :func:`plan` turns the driver's CUDA version, the role's variables and (after installation) the
installed DCGM version into everything the ``dcgm`` role wires; problems name the variable at fault.
"""

from __future__ import annotations

import ipaddress
import re

from ansible_collections.dlbox.stack.plugins.plugin_utils import gpu_settings
from ansible_collections.dlbox.stack.plugins.plugin_utils.roles import _spec

METHODS = _spec.choices("dcgm", "dcgm_exporter_method")  # the argument spec's (issue 47)
COLLECTOR_TYPES = ("gauge", "counter", "label")
_FIELD_RE = re.compile(r"^DCGM_(FI|EXP)_[A-Z0-9_]+$")
_CUDA_RE = re.compile(r"^\s*([0-9]+)\.[0-9]+")
_DCGM_RE = re.compile(r"^(?:[0-9]+:)?([0-9]+\.[0-9]+\.[0-9]+)")


def cuda_major(text):
    """'13.0' -> '13'; the CUDA Version line of ``nvidia-smi -q`` or ``<cuda_version>`` of the XML works too."""
    match = re.search(r"CUDA Version\s*:\s*([0-9]+)\.", text or "") or re.search(
        r"<cuda_version>\s*([0-9]+)\.", text or "") or _CUDA_RE.match(text or "")
    return match.group(1) if match else None


def dcgm_upstream(version):
    """A Debian version of DCGM ('1:4.3.1-1') or dcgmi's ('4.3.1') -> '4.3.1', else None."""
    match = _DCGM_RE.match(str(version or "").strip())
    return match.group(1) if match else None


def plan(cuda_version, request, installed_dcgm=None, data=None):
    """-> {ok, problems, cuda_major, package, packages, service, dcgm_version, exporter: {...}}.

    ``request``: ``dcgm_exporter_enabled``, ``dcgm_exporter_method`` (package | container),
    ``dcgm_exporter_listen_address`` (an IP literal), ``dcgm_exporter_port``, ``dcgm_exporter_collectors``
    (list of {field, type, help}), ``dcgm_exporter_version`` (empty: the one paired with DCGM).
    ``installed_dcgm``: the installed DCGM's version, once there is one; before that the data's version is assumed.
    """
    data = data or gpu_settings.load_data()
    dcgm = data["dcgm"]
    problems = []
    major = cuda_major(cuda_version)
    package = dcgm["packages"].get(major) if major else None
    if major is None:
        problems.append("the installed driver reports no CUDA version (nvidia-smi -q: CUDA Version), so no DCGM 4"
                        " package can be chosen; install the driver first (dlbox.stack.nvidia_driver)")
    elif package is None:
        problems.append("the driver supports CUDA %s, for which DCGM 4 has no package (it has: %s); pick another"
                        " driver branch" % (major, ", ".join("CUDA %s" % k for k in sorted(dcgm["packages"]))))
    version = dcgm_upstream(installed_dcgm) or dcgm["version"]
    exporter = dcgm["exporter"]
    method = request.get("dcgm_exporter_method", "package")
    if method not in METHODS:
        problems.append("dcgm_exporter_method must be one of %s, not %r" % (", ".join(METHODS), method))
    asked = str(request.get("dcgm_exporter_version") or "").strip()
    paired = exporter["pairs"].get(version)
    exporter_version = asked or paired
    if request.get("dcgm_exporter_enabled", True) and not exporter_version:
        problems.append("no dcgm-exporter is paired with DCGM %s in data/server.yml (pairs: %s); set"
                        " dcgm_exporter_version to a release built for it" % (
                            version, ", ".join("%s-%s" % p for p in sorted(exporter["pairs"].items()))))
    address = str(request.get("dcgm_exporter_listen_address") or "").strip()
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        ip = None
        problems.append("dcgm_exporter_listen_address must be one IP address of this host (127.0.0.1, 10.0.0.5,"
                        " ::1), not %r: the exporter binds to exactly that address" % address)
    port = request.get("dcgm_exporter_port", exporter["default_port"])
    if not isinstance(port, int) or isinstance(port, bool) or not 1 <= port <= 65535:
        problems.append("dcgm_exporter_port must be a TCP port (1-65535), not %r" % (port,))
        port = exporter["default_port"]
    collectors = request.get("dcgm_exporter_collectors") or []
    lines = []
    if not isinstance(collectors, list) or not collectors:
        problems.append("dcgm_exporter_collectors must be a non-empty list of {field, type, help}")
        collectors = []
    for number, entry in enumerate(collectors):
        entry = entry if isinstance(entry, dict) else {}
        field, kind, text = entry.get("field", ""), entry.get("type", ""), str(entry.get("help", ""))
        if not _FIELD_RE.match(str(field)) or kind not in COLLECTOR_TYPES or "," in text or "\n" in text:
            problems.append("dcgm_exporter_collectors[%d] must be {field: DCGM_FI_..., type: %s, help: text without"
                            " commas}, not %r" % (number, " | ".join(COLLECTOR_TYPES), entry))
            continue
        lines.append("%s, %s, %s" % (field, kind, text))
    host = ("[%s]" % address) if ip is not None and ip.version == 6 else address
    tag = "%s-%s%s" % (version, exporter_version, exporter["image_suffix"]) if exporter_version else ""
    return {
        "ok": not problems,
        "problems": problems,
        "cuda_major": major,
        "package": package,
        "packages": [dcgm["core_package"], package] if package else [],
        "service": dcgm["service"],
        "dcgm_version": version,
        "exporter": {
            "method": method,
            "version": exporter_version,
            "package": exporter["package"],
            "service": exporter["service"],
            "image": "%s:%s" % (exporter["image"], tag) if tag else "",
            "listen": "%s:%s" % (host, port),
            "address": address,
            "port": port,
            "url": "http://%s:%s/metrics" % (host, port),
            "collectors_csv": "".join(line + "\n" for line in lines),
        },
    }
