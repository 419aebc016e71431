# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""NCCL on one host: pure parsers and rules (Python 3.8+). ``dlbox.stack.nccl_facts`` gathers the texts on the host
and parses the header and ``apt-cache madison``; the nccl role decides with the rest on the controller
(``plugins/plugin_utils/roles/nccl.py``, filter ``dlbox.stack.role_decide('nccl', ...)``).

The module (and ``tests/scripts/gpu-nccl-check.sh``) run the commands; everything here takes their
text and returns plain data:

* :func:`parse_topo`: ``nvidia-smi topo -m`` -> GPUs and the link kind of every GPU pair.
* :func:`parse_p2p_matrix`: ``nvidia-smi topo -p2p rw`` -> the driver's P2P status of every pair.
* :func:`parse_acs`: ``lspci -vvv`` (whole, or only its ``ACSCtl`` lines) -> ACS state of the bridges,
  and where the whole output is given, which of them sit above an NVIDIA GPU.
* :func:`parse_ip_link`, :func:`parse_ibdev2netdev`: ``ip -o link`` and ``ibdev2netdev`` -> InfiniBand.
* :func:`parse_gpus_csv`: ``nvidia-smi --query-gpu=name,driver_version --format=csv,noheader``.
* :func:`parse_probe`: the P2P probe's output (``files/nccl-p2p-probe.cu``), and the access lines of
  CUDA's ``p2pBandwidthLatencyTest``.
* :func:`parse_madison`, :func:`pick_build`: the ``libnccl2`` build of the repository that fits the
  installed toolkit (apt versions carry the CUDA minor: ``2.27.7-1+cuda12.9``).
* :func:`refusals`: an NCCL version that does not fit the GPU, the driver or the installed CUDA.
* :func:`decide`: the ``/etc/nccl.conf`` settings, each with its reason; :func:`render_conf` writes them.

Vendor facts (which driver fixed which P2P bug, which CUDA major a GPU architecture ends at) come in as
arguments from ``data/compat.yml``; none is written here.
"""

from __future__ import annotations

import re

from ansible_collections.dlbox.stack.plugins.module_utils._gpu_facts import parse_nvidia_smi_topo
from ansible_collections.dlbox.stack.plugins.module_utils.versions import version_tuple

_NV = re.compile(r"^NV(\d+)$")
_PCIE_KINDS = ("PIX", "PXB", "PHB", "NODE", "SYS", "SOC")
_ACS_FLAGS = ("SrcValid", "TransBlk", "ReqRedir", "CmpltRedir", "UpstreamFwd", "EgressCtrl", "DirectTrans")
_DEVICE_LINE = re.compile(r"^(?P<addr>(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]) (?P<desc>.*)$")
_BUS_LINE = re.compile(r"Bus: primary=(?P<pri>[0-9a-fA-F]+), secondary=(?P<sec>[0-9a-fA-F]+), subordinate=(?P<sub>[0-9a-fA-F]+)")
_VERSION_BUILD = re.compile(r"^(?P<nccl>\d+\.\d+\.\d+)-(?P<rev>[0-9A-Za-z.~]+)\+cuda(?P<major>\d+)\.(?P<minor>\d+)$")
DEBUG_LEVELS = ("VERSION", "WARN", "INFO", "TRACE")
P2P_CHOICES = ("auto", "enabled", "disabled", "nvlink")


# --------------------------------------------------------------------------------------------------
# nvidia-smi topo -m / topo -p2p
# --------------------------------------------------------------------------------------------------
def _pairs(text):
    """GPUs and the cell of every GPU pair of an nvidia-smi matrix, through gpu_facts' parser
    (``_gpu_facts.parse_nvidia_smi_topo``: tabs or spaces, terminal escapes, legends); no matrix -> none."""
    try:
        parsed = parse_nvidia_smi_topo(text or "")
    except ValueError:
        return [], {}, []
    links = {(link["a"], link["b"]): link["type"] for link in parsed["links"]}
    return parsed["gpus"], links, [d for d in parsed["devices"] if d not in parsed["gpus"]]


def parse_topo(text):
    """``nvidia-smi topo -m`` -> ``{"gpus": [...], "links": {("GPU0","GPU1"): "NV12"}, "nics": [...]}``.

    Cells: ``NV#``, ``PIX``, ``PXB``, ``PHB``, ``NODE``, ``SYS`` (``SOC`` in old drivers).
    """
    gpus, links, nics = _pairs(text)
    return {"gpus": gpus, "links": {p: k for p, k in links.items() if _NV.match(k) or k in _PCIE_KINDS}, "nics": nics}


def parse_p2p_matrix(text):
    """``nvidia-smi topo -p2p r|w|rw`` -> ``{"gpus": [...], "status": {("GPU0","GPU1"): "GNS"}}``
    (OK, CNS chipset / GNS GPU / TNS topology not supported, NS, DR disabled by regkey, U)."""
    gpus, links = _pairs(text)[:2]
    return {"gpus": gpus, "status": {p: k for p, k in links.items() if k in ("OK", "CNS", "GNS", "TNS", "NS", "DR", "U")}}


def is_nvlink(kind):
    return bool(_NV.match(kind or ""))


# --------------------------------------------------------------------------------------------------
# lspci -vvv: ACS
# --------------------------------------------------------------------------------------------------
def _acs_flags(line):
    flags = {}
    for flag in _ACS_FLAGS:
        match = re.search(r"\b%s([+-])" % flag, line)
        if match:
            flags[flag] = match.group(1) == "+"
    return flags


def acs_enabled(flags):
    """ACS counts as on when a bridge validates sources or redirects peer requests or completions
    (NCCL's troubleshooting guide: ``SrcValid+`` in ``lspci -vvv | grep ACSCtl`` means ACS is on)."""
    return any(flags.get(f) for f in ("SrcValid", "ReqRedir", "CmpltRedir", "UpstreamFwd"))


def parse_acs(text):
    """``lspci -vvv`` -> ``{"bridges": [...], "gpus": [...], "located": bool}``.

    Each bridge: ``{"address", "secondary", "subordinate", "flags", "enabled"}``; with only the
    ``ACSCtl`` lines (``lspci -vvv | grep ACSCtl``) address and bus range are None and ``located`` is
    False. ``gpus``: the bus numbers of NVIDIA display/3D controllers where whole blocks were given.
    """
    bridges, gpus = [], []
    device = None
    located = False
    for raw in (text or "").splitlines():
        line = raw.rstrip()
        match = _DEVICE_LINE.match(line)
        if match:
            located = True
            device = {"address": match.group("addr"), "desc": match.group("desc"), "bus": None}
            desc = match.group("desc")
            if "NVIDIA" in desc and re.search(r"VGA compatible controller|3D controller", desc):
                gpus.append(_bus_of(match.group("addr")))
            continue
        bus = _BUS_LINE.search(line)
        if bus and device is not None:
            device["bus"] = (int(bus.group("sec"), 16), int(bus.group("sub"), 16))
            continue
        if "ACSCtl:" in line:
            flags = _acs_flags(line.split("ACSCtl:", 1)[1])
            rng = device["bus"] if device else None
            bridges.append({"address": device["address"] if device else None,
                            "secondary": rng[0] if rng else None, "subordinate": rng[1] if rng else None,
                            "flags": flags, "enabled": acs_enabled(flags)})
    return {"bridges": bridges, "gpus": sorted(set(gpus)), "located": located}


def _bus_of(address):
    parts = address.split(":")
    return int(parts[-2], 16)


def acs_above_gpus(acs):
    """The bridges with ACS on that matter for GPU P2P: those whose bus range holds a GPU's bus when
    ``lspci -vvv`` was given whole; every bridge with ACS on when only ``ACSCtl`` lines were given
    (they cannot be placed, so they are assumed to be above the GPUs)."""
    enabled = [b for b in acs["bridges"] if b["enabled"]]
    if not acs["located"]:
        return enabled
    return [b for b in enabled if b["secondary"] is not None
            and any(b["secondary"] <= g <= b["subordinate"] for g in acs["gpus"])]


# --------------------------------------------------------------------------------------------------
# InfiniBand
# --------------------------------------------------------------------------------------------------
def parse_ip_link(text):
    """``ip -o link`` (one line an interface) or ``ip link``/``ip a`` (indented continuation lines) ->
    ``[{"name", "type", "up"}]``; ``type`` from ``link/<type>`` (``infiniband``, ``ether``, ``loopback``...)."""
    records = []
    for line in (text or "").splitlines():
        if re.match(r"^\d+:\s", line):
            records.append(line)
        elif records and line[:1].isspace():
            records[-1] += " " + line.strip()
    out = []
    for record in records:
        match = re.match(r"^\d+:\s+(?P<name>[^:@\s]+)(?:@\S+)?:\s+<(?P<flags>[^>]*)>.*?link/(?P<type>\w+)", record)
        if match:
            flags = match.group("flags").split(",")
            state = re.search(r"\bstate (\w+)", record)
            up = "UP" in flags and "NO-CARRIER" not in flags and (state is None or state.group(1) in ("UP", "UNKNOWN"))
            out.append({"name": match.group("name"), "type": match.group("type"), "up": up})
    return out


def parse_ibdev2netdev(text):
    """``ibdev2netdev`` -> ``[{"hca", "port", "netdev", "up"}]`` from lines ``mlx5_0 port 1 ==> ib0 (Up)``."""
    out = []
    for line in (text or "").splitlines():
        match = re.match(r"^\s*(?P<hca>\S+) port (?P<port>\d+) ==> (?P<netdev>\S+) \((?P<state>\w+)\)", line)
        if match:
            out.append({"hca": match.group("hca"), "port": int(match.group("port")), "netdev": match.group("netdev"),
                        "up": match.group("state").lower() == "up"})
    return out


# --------------------------------------------------------------------------------------------------
# GPUs, the P2P probe
# --------------------------------------------------------------------------------------------------
def parse_gpus_csv(text):
    """``nvidia-smi --query-gpu=name,driver_version --format=csv,noheader`` -> ``[{"name", "driver"}]``."""
    out = []
    for line in (text or "").splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) >= 2 and parts[0] and parts[0] != "name":
            out.append({"name": parts[0], "driver": parts[1]})
    return out


def parse_probe(text):
    """P2P probe output -> ``{("GPU0","GPU1"): {"access": bool, "copy": "ok"|"mismatch"|"timeout"|"error ..."|None}}``.

    The probe prints ``testing 0 1`` and then ``pair 0 1 access=1 copy=ok gbps=21.3``; a pair that was
    started and never finished (the caller's timeout killed a hung copy) counts as ``timeout``, as does a
    ``timeout 0 1`` line. The access lines of CUDA's ``p2pBandwidthLatencyTest``
    (``Device=0 CAN Access Peer Device=1``) are read too.
    """
    pairs = {}
    started = []

    def key(a, b):
        a, b = int(a), int(b)
        return ("GPU%d" % min(a, b), "GPU%d" % max(a, b))

    for line in (text or "").splitlines():
        line = line.strip()
        match = re.match(r"^testing (\d+) (\d+)$", line)
        if match:
            started.append(key(match.group(1), match.group(2)))
            continue
        match = re.match(r"^pair (\d+) (\d+) access=([01])(?: copy=(\S+))?", line)
        if match:
            entry = pairs.setdefault(key(match.group(1), match.group(2)), {"access": True, "copy": None})
            entry["access"] = entry["access"] and match.group(3) == "1"
            if match.group(4):
                entry["copy"] = match.group(4) if entry["copy"] in (None, "ok") else entry["copy"]
            continue
        match = re.match(r"^timeout (\d+) (\d+)", line)
        if match:
            pairs.setdefault(key(match.group(1), match.group(2)), {"access": True, "copy": None})["copy"] = "timeout"
            continue
        match = re.match(r"^Device=(\d+) (CAN|CANNOT) Access Peer Device=(\d+)", line)
        if match and match.group(1) != match.group(3):
            entry = pairs.setdefault(key(match.group(1), match.group(3)), {"access": True, "copy": None})
            entry["access"] = entry["access"] and match.group(2) == "CAN"
    for pair in started:
        if pair not in pairs:
            pairs[pair] = {"access": True, "copy": "timeout"}
    return pairs


def parse_nccl_header(text):
    """``nccl.h`` -> ``"2.27.7"`` from ``#define NCCL_MAJOR 2`` / ``NCCL_MINOR`` / ``NCCL_PATCH``; None without them."""
    parts = []
    for name in ("MAJOR", "MINOR", "PATCH"):
        match = re.search(r"^#define NCCL_%s (\d+)\s*$" % name, text or "", re.M)
        if not match:
            return None
        parts.append(match.group(1))
    return ".".join(parts)


# --------------------------------------------------------------------------------------------------
# apt builds, version refusals
# --------------------------------------------------------------------------------------------------
def parse_madison(text):
    """``apt-cache madison libnccl2`` -> the versions, in the order apt lists them."""
    out = []
    for line in (text or "").splitlines():
        parts = [p.strip() for p in line.split("|")]
        if len(parts) >= 2 and parts[1] and parts[1] not in out:
            out.append(parts[1])
    return out


def pick_build(versions, nccl_version, cuda_version):
    """The apt version of NCCL ``nccl_version`` built for the installed toolkit ``cuda_version`` (X.Y).

    The build for exactly X.Y when the repository has one; else the newest build of the same major
    for an older minor; else the oldest for a newer minor of the same major (CUDA minor-version
    compatibility lets a same-major build run). Returns ``{"version", "cuda", "exact", "why"}`` or
    ``{"error": text, "builds": [...]}``.
    """
    want = version_tuple(cuda_version)[:2]
    builds = []
    for version in versions:
        match = _VERSION_BUILD.match(version)
        if match and match.group("nccl") == nccl_version:
            builds.append(((int(match.group("major")), int(match.group("minor"))), version))
    listed = sorted(build[1] for build in builds)
    same = [(cuda, v) for cuda, v in builds if cuda[0] == (want[0] if want else None)]
    if len(want) != 2 or not same:
        return {"error": "the repository has no NCCL %s build for CUDA %s.x (builds of %s: %s)"
                % (nccl_version, want[0] if want else cuda_version, nccl_version, ", ".join(listed) or "none"),
                "builds": listed}
    exact = [v for cuda, v in same if cuda == want]
    if exact:
        return {"version": max(exact), "cuda": "%d.%d" % want, "exact": True,
                "why": "the build for the installed CUDA %d.%d" % want}
    older = sorted((c, v) for c, v in same if c < want)
    pick = older[-1] if older else sorted(same)[0]
    return {"version": pick[1], "cuda": "%d.%d" % pick[0], "exact": False,
            "why": "no build for CUDA %d.%d; the %s build for CUDA %d.%d runs through CUDA minor-version compatibility"
            % (want + (nccl_version,) + pick[0])}


def refusals(nccl_version, cuda_version, known, minor_compat, driver_version=None, compute_capabilities=(),
             architectures=None, variable="nccl_version"):
    """Why ``nccl_version`` for the installed CUDA ``cuda_version`` cannot work here; ``[]`` when it can.

    ``known``: data/compat.yml ``nccl`` entries (version, cuda_majors); ``minor_compat``: its
    ``cuda.minor_compat`` (major, driver_min); ``architectures``: its ``architectures`` mapping
    (name, cc_min, cc_max, first_cuda, last_cuda). A version the data does not list is not refused here
    (the repository's candidate list decides later); one it lists for other CUDA majors is.
    """
    out = []
    if not re.match(r"^\d+\.\d+\.\d+$", str(nccl_version or "")):
        return ["%s is '%s'; it must be an NCCL release such as 2.27.7." % (variable, nccl_version)]
    cuda = version_tuple(cuda_version)[:2]
    if len(cuda) != 2:
        return ["no CUDA toolkit is installed (%s needs one: run dlbox.stack.cuda first, or set nccl_cuda_version)." % variable]
    major = str(cuda[0])
    entry = next((e for e in known or [] if e.get("version") == nccl_version), None)
    if entry is not None and major not in [str(m) for m in entry.get("cuda_majors") or []]:
        out.append("%s=%s has no build for CUDA %s.x, the installed toolkit (%s); data/compat.yml lists it for CUDA %s (%s)."
                   % (variable, nccl_version, major, cuda_version,
                      ", ".join("%s.x" % m for m in entry.get("cuda_majors") or []), entry.get("source", "")))
    rule = next((r for r in minor_compat or [] if str(r.get("major")) == major), None)
    if rule and driver_version and version_tuple(driver_version) < version_tuple(rule["driver_min"]):
        out.append("%s=%s for CUDA %s needs an NVIDIA driver >= %s (CUDA %s.x minor-version compatibility); "
                   "the loaded driver is %s. Upgrade the driver (dlbox.stack.nvidia_driver) first."
                   % (variable, nccl_version, cuda_version, rule["driver_min"], major, driver_version))
    for cc in compute_capabilities or []:
        arch = _arch_of(cc, architectures)
        if arch is None:
            continue
        last = version_tuple(arch.get("last_cuda"))
        first = version_tuple(arch.get("first_cuda"))
        if (last and cuda[0] > last[0]) or (first and cuda[0] < first[0]):
            out.append("%s=%s is built for CUDA %s, which does not support %s GPUs (compute capability %s; CUDA %s to %s)."
                       % (variable, nccl_version, cuda_version, arch.get("name"), cc, arch.get("first_cuda"),
                          arch.get("last_cuda") or "today"))
    return out


def _arch_of(cc, architectures):
    value = version_tuple(cc)
    for arch in (architectures or {}).values():
        if version_tuple(arch.get("cc_min")) <= value <= version_tuple(arch.get("cc_max")):
            return arch
    return None


# --------------------------------------------------------------------------------------------------
# nccl.conf
# --------------------------------------------------------------------------------------------------
def _pair(a, b):
    return "%s<->%s" % (a, b)


def p2p_assessment(topo, acs=None, probe=None, p2p_matrix=None, gpus=(), issues=()):
    """Is GPU peer-to-peer broken on this host, for which pairs, and why.

    Evidence, strongest first: the probe (it copied between the GPUs: a failed pair is broken, a
    passed pair is not, whatever the bridges say); a known driver bug (``issues``, from data: GPU names
    and the first driver that fixed it); ACS on the PCIe bridges above the GPUs (``lspci -vvv``), which
    routes peer traffic through the root complex/IOMMU and breaks or hangs it. NVLink pairs do not go
    through PCIe bridges, so ACS does not touch them. Returns ``{"verdict", "broken", "reasons",
    "notes"}``; ``verdict``: ``n/a`` (fewer than two GPUs), ``ok``, ``broken``.
    """
    reasons, notes = [], []
    names = topo["gpus"]
    if len(names) < 2:
        return {"verdict": "n/a", "broken": [], "nvlink_only": False, "reasons": [],
                "notes": ["%d GPU in nvidia-smi topo -m: P2P does not apply." % len(names)]}
    pairs = sorted(topo["links"])
    pcie = [p for p in pairs if not is_nvlink(topo["links"][p])]
    broken = set()
    probed = set()
    for pair, result in sorted((probe or {}).items()):
        if pair not in topo["links"]:
            continue
        probed.add(pair)
        if not result["access"]:
            notes.append("probe: %s has no peer access (the driver reports P2P unsupported; NCCL will not use it)." % _pair(*pair))
        elif result["copy"] not in (None, "ok"):
            broken.add(pair)
            reasons.append("probe: the peer copy %s failed (%s)." % (_pair(*pair), result["copy"]))
    for pair, status in sorted(((p2p_matrix or {}).get("status") or {}).items()):
        if status != "OK":
            notes.append("nvidia-smi topo -p2p: %s is %s (the driver does not offer P2P there; NCCL will not use it)."
                         % (_pair(*pair), status))
    for issue in issues or []:
        hit = [g for g in gpus or [] if g.get("name") in (issue.get("gpus") or [])
               and version_tuple(g.get("driver")) and version_tuple(g.get("driver")) < version_tuple(issue.get("driver_fixed"))]
        if hit:
            affected = [p for p in pcie if p not in probed] or ([] if probed else pcie)
            broken.update(affected)
            reasons.append("known driver bug: %s with driver %s: %s Fixed in driver %s (source: %s)."
                           % (hit[0]["name"], hit[0]["driver"], issue.get("effect", "").rstrip("."),
                              issue.get("driver_fixed"), issue.get("source")))
    if acs is not None:
        above = acs_above_gpus(acs)
        if above:
            where = (", ".join(b["address"] for b in above) if acs["located"]
                     else "%d bridge(s) (lspci gave only ACSCtl lines, so they are taken to be above the GPUs)" % len(above))
            unprobed = [p for p in pcie if p not in probed]
            if unprobed:
                broken.update(unprobed)
                reasons.append("ACS is on (ACSCtl %s) on %s: PCIe peer traffic between %s is redirected through the root "
                               "complex/IOMMU, which breaks or hangs P2P. Disable ACS in the BIOS or with setpci, or boot with "
                               "pci=noacs, then rerun the role."
                               % (_flags_text(above[0]["flags"]), where, ", ".join(_pair(*p) for p in unprobed)))
            elif pcie:
                notes.append("ACS is on above the GPUs but the probe copied correctly between every PCIe pair; P2P is kept.")
            else:
                notes.append("ACS is on on %d bridge(s), but every GPU pair is linked by NVLink (%s), which does not cross "
                             "PCIe bridges: P2P is kept." % (len(above), ", ".join(sorted(set(topo["links"].values())))))
    nv = [p for p in pairs if is_nvlink(topo["links"][p])]
    verdict = "broken" if broken else "ok"
    return {"verdict": verdict, "broken": sorted(broken), "nvlink_only": bool(broken) and bool(nv)
            and all(not is_nvlink(topo["links"][p]) for p in broken), "reasons": reasons, "notes": notes}


def _flags_text(flags):
    return " ".join("%s%s" % (f, "+" if flags.get(f) else "-") for f in _ACS_FLAGS if f in flags)


def decide(inputs, options=None, issues=()):
    """The settings of ``/etc/nccl.conf`` for a host, each with its reason.

    ``inputs``: texts of ``topo`` (nvidia-smi topo -m), ``lspci`` (lspci -vvv), ``ip_link``, ``ibdev``
    (ibdev2netdev), ``p2p_matrix`` (topo -p2p rw), ``probe``, ``gpus`` (query CSV); missing ones are
    None. ``options``: ``debug`` (a level or ""), ``socket_ifname``, ``ib_hca`` ("auto", "" for none, or
    a value), ``p2p`` (auto|enabled|disabled|nvlink), ``extra`` (KEY: value; None removes a key).
    Returns ``{"settings": [{"key", "value", "reason"}], "p2p": ..., "ib": ..., "peermem": bool, "notes"}``.
    """
    options = dict(options or {})
    settings = []
    notes = []

    def put(key, value, reason):
        settings[:] = [s for s in settings if s["key"] != key]
        settings.append({"key": key, "value": str(value), "reason": reason})

    debug = options.get("debug", "WARN")
    if debug:
        put("NCCL_DEBUG", debug, "debug level (nccl_debug)")
    ifname = options.get("socket_ifname", "^docker,lo")
    if ifname:
        put("NCCL_SOCKET_IFNAME", ifname, "bootstrap and socket traffic avoid docker bridges and loopback"
            if ifname == "^docker,lo" else "socket interfaces set by nccl_socket_ifname")

    ib_ports = [p for p in parse_ibdev2netdev(inputs.get("ibdev")) if p["up"]]
    ib_links = [link for link in parse_ip_link(inputs.get("ip_link")) if link["type"] == "infiniband"]
    ib_choice = options.get("ib_hca", "auto")
    ib_names = set(link["name"] for link in ib_links)
    # Where ip link tells the link layer, the InfiniBand ports win over RoCE (Ethernet) ones.
    if ib_names and any(p["netdev"] in ib_names for p in ib_ports):
        left_out = [p for p in ib_ports if p["netdev"] not in ib_names]
        ib_ports = [p for p in ib_ports if p["netdev"] in ib_names]
    else:
        left_out = []
    hcas = sorted(set(p["hca"] for p in ib_ports))
    peermem = False
    if ib_choice == "auto":
        if hcas:
            put("NCCL_IB_HCA", ",".join(hcas), "HCA(s) with an active port: %s (ibdev2netdev)%s"
                % (", ".join("%s port %d -> %s" % (p["hca"], p["port"], p["netdev"]) for p in ib_ports),
                   "; RoCE/Ethernet port(s) left out: %s" % ", ".join("%s -> %s" % (p["hca"], p["netdev"]) for p in left_out)
                   if left_out else ""))
            peermem = True
        elif ib_links:
            notes.append("InfiniBand interface(s) %s but no active HCA port in ibdev2netdev: NCCL_IB_HCA left to NCCL."
                         % ", ".join(link["name"] for link in ib_links))
        else:
            notes.append("No InfiniBand interface: NCCL uses its socket transport between hosts.")
    elif ib_choice:
        put("NCCL_IB_HCA", ib_choice, "InfiniBand HCA(s) set by nccl_ib_hca")
        peermem = True
    if peermem:
        notes.append("GPUDirect RDMA over InfiniBand needs the nvidia-peermem module: loaded and listed in modules-load.d.")

    topo = parse_topo(inputs.get("topo"))
    acs = parse_acs(inputs.get("lspci")) if inputs.get("lspci") is not None else None
    p2p = p2p_assessment(topo, acs=acs, probe=parse_probe(inputs.get("probe")) if inputs.get("probe") else None,
                         p2p_matrix=parse_p2p_matrix(inputs.get("p2p_matrix")) if inputs.get("p2p_matrix") else None,
                         gpus=parse_gpus_csv(inputs.get("gpus")), issues=issues)
    choice = options.get("p2p", "auto")
    if choice == "disabled":
        put("NCCL_P2P_DISABLE", "1", "P2P disabled by nccl_p2p: disabled")
    elif choice == "nvlink":
        put("NCCL_P2P_LEVEL", "NVL", "P2P only over NVLink, set by nccl_p2p: nvlink")
    elif choice == "auto" and p2p["verdict"] == "broken":
        if p2p["nvlink_only"]:
            put("NCCL_P2P_LEVEL", "NVL", "fallback: P2P kept on NVLink, off over PCIe, because " + " ".join(p2p["reasons"]))
        else:
            put("NCCL_P2P_DISABLE", "1", "fallback: P2P disabled because " + " ".join(p2p["reasons"]))
    elif choice == "enabled" and p2p["verdict"] == "broken":
        notes.append("nccl_p2p: enabled keeps P2P although: " + " ".join(p2p["reasons"]))

    for key, value in sorted((options.get("extra") or {}).items()):
        if value is None:
            settings[:] = [s for s in settings if s["key"] != key]
        else:
            put(key, value, "set by nccl_conf_extra")
    return {"settings": settings, "p2p": p2p, "topology": {"gpus": topo["gpus"], "links": [
        {"pair": list(p), "kind": k} for p, k in sorted(topo["links"].items())]},
        "ib": {"hcas": hcas, "interfaces": [link["name"] for link in ib_links]}, "peermem": peermem,
        "notes": notes + p2p["notes"]}


MANAGED_KEYS = ("NCCL_DEBUG", "NCCL_SOCKET_IFNAME", "NCCL_IB_HCA", "NCCL_P2P_DISABLE", "NCCL_P2P_LEVEL")
KEPT_REASON = "kept from the nccl.conf that was here (a key this role does not decide)"


def parse_conf(text):
    """``KEY=value`` lines of an ``nccl.conf`` (comments and blank lines skipped) -> ``[(key, value)]``."""
    out = []
    for line in (text or "").splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            key, value = line.split("=", 1)
            out.append((key.strip(), value.strip()))
    return out


def keep_user_settings(existing_text, settings, extra=None):
    """The decided settings plus every key of the existing file that this role does not decide
    (neither one of :data:`MANAGED_KEYS` nor in ``extra``), so nothing a user added is lost."""
    taken = set(MANAGED_KEYS) | set(extra or {}) | set(s["key"] for s in settings)
    kept = []
    for key, value in parse_conf(existing_text):
        if key not in taken:
            taken.add(key)
            kept.append({"key": key, "value": value, "reason": KEPT_REASON})
    return list(settings) + kept


def render_conf(settings, header="Managed by dlbox.stack.nccl"):
    """``/etc/nccl.conf``: one ``KEY=value`` a setting, each after a comment that says why."""
    lines = ["# %s: every value below is decided from this host; override with the role's variables." % header]
    for setting in settings:
        lines.append("")
        for chunk in _wrap(setting["reason"]):
            lines.append("# " + chunk)
        lines.append("%s=%s" % (setting["key"], setting["value"]))
    return "\n".join(lines) + "\n"


def _wrap(text, width=100):
    words, out, line = text.split(), [], ""
    for word in words:
        if line and len(line) + 1 + len(word) > width:
            out.append(line)
            line = word
        else:
            line = (line + " " + word).strip()
    if line:
        out.append(line)
    return out
