# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which NVLink fabric a host has, from what it shows, before the GPU model (issue 49 "Detection"; pure, no I/O).

The plan used to know an HGX B200/B300 or a GB200/GB300 NVL tray from the GPU model only (``stack_resolver``'s
catalog rule, kept here as the fallback: a fresh host without a driver, a cloud instance without the VPD file, a
plan from GPU names). :func:`decide` takes the host's evidence (``dlbox_host.nvlink_fabric`` from
``plugins/module_utils/_nvlink5_facts.py``, the PCI NVSwitches, or the same from captured outputs) and:

- prefers detected evidence over the model and says which it used (``source``: ``detected``, ``detected+model``
  (the evidence says NVLink5, the model which system), ``model``, ``asked`` (``dlbox_plan_hardware.fabric``) or
  ``none``);
- reports conflicting evidence (``conflicts``) instead of guessing: the plan refuses then, naming the evidence and
  ``dlbox_plan_hardware.fabric``, which settles it.

Evidence and what it says (sources in tests/fixtures/nvlink5/SOURCES.md):

=============================================  ==========  ===================================================
evidence                                        says        why
=============================================  ==========  ===================================================
a ConnectX-7 management port (VPD SW_MNG)       ``hgx``     NVLink5 HGX boards manage their NVSwitches so
an NVIDIA PCI bridge of class 0680              ``pcie``    NVSwitches on PCIe: HGX A100/H100/H200 (NVLink <= 4)
links at >= 50 GB/s (``nvidia-smi nvlink -s``)  NVLink5     53.125 GB/s on GB200; 26.562 on H100, 25.781 on V100
links below 50 GB/s                             not NVLink5
fabric Completed with a cluster UUID            ``nvl``     a multi-node NVLink domain (GB200/GB300 NVL rack;
                                                            see :func:`decide` for when it counts)
=============================================  ==========  ===================================================

Absence proves nothing: no management port is read without root, on a cloud instance, or before mlx5_core binds.
"""

from __future__ import annotations

from ansible_collections.dlbox.stack.plugins.module_utils import _nvlink5_facts as facts

__all__ = ["KINDS", "evidence", "decide", "refusal"]

# What dlbox_plan_hardware.fabric may say: an NVLink5 HGX board, an NVL compute tray, NVSwitches on PCIe, none.
KINDS = ("hgx", "nvl", "pcie", "none")
NVLINK5_MIN_GBPS = 50.0
_LABEL = {"hgx": "an NVLink5 HGX board (B200/B300: NVSwitches behind ConnectX-7 management ports, Fabric Manager with "
                 "NVLSM)",
          "nvl": "an NVL compute tray (GB200/GB300: the rack's switch trays run the fabric; IMEX on the tray)",
          "pcie": "NVSwitches on PCIe (HGX A100/H100/H200: Fabric Manager, no NVLSM)",
          "none": "no NVSwitch fabric"}


def evidence(host):
    """The host's fabric evidence as ``[{says, what}]`` (``says``: hgx, pcie, domain, nvlink5, older)."""
    host = host or {}
    found = []
    fabric = host.get("nvlink_fabric") or {}
    ports = fabric.get("switch_mgmt_ports") or []
    if ports:
        found.append({"says": "hgx", "what": "NVSwitch management port(s) %s (VPD SMDL=SW_MNG)" % ", ".join(ports)})
    switches = [s for s in host.get("nvswitches") or [] if s.get("pci_bus_id") or s.get("pci_device_id")]
    if switches:
        found.append({"says": "pcie", "what": "%d NVSwitch(es) on the PCI bus (class 0680%s)" % (
            len(switches), ", " + ", ".join(sorted(set(s["pci_device_id"] for s in switches if s.get("pci_device_id"))))
            if any(s.get("pci_device_id") for s in switches) else "")})
    speeds = [s for s in fabric.get("link_speeds_gbps") or [] if s]
    if speeds:
        fast = max(speeds)
        found.append({"says": "nvlink5" if fast >= NVLINK5_MIN_GBPS else "older",
                      "what": "NVLink links at %s GB/s (nvidia-smi nvlink -s; NVLink5 links run at %s GB/s or more)" % (
                          ("%g" % fast), ("%g" % NVLINK5_MIN_GBPS))})
    domain = [g for g in fabric.get("fabric") or [] if facts.in_multinode_domain(g)]
    if domain:
        what = "%d GPU(s) in a multi-node NVLink domain (fabric Completed, cluster %s, clique %s)" % (
            len(domain), domain[0].get("cluster_uuid"), domain[0].get("clique_id"))
        found.append({"says": "domain", "what": what})
    return found


def decide(host, model_kind=None, asked=None):
    """``{kind, source, evidence, conflicts, model}``: ``kind`` hgx, nvl, pcie or None (no NVSwitch fabric known).

    ``model_kind``: what the GPU model says (``stack_resolver.nvlink5_model_system``: hgx, nvl or None);
    ``asked``: ``dlbox_plan_hardware.fabric`` (one of :data:`KINDS`), which wins and turns conflicts into notes.

    A multi-node domain (a cluster UUID) names an NVL tray only beside NVLink5 links or an NVL GPU model, and never
    beside management ports: H100/GH200 systems can be multi-node NVLink too, and whether an HGX B200's GPUs report a
    cluster UUID is not recorded (no B200 ``nvidia-smi -q`` was found), so neither is called a conflict.

    >>> decide({"nvlink_fabric": {"switch_mgmt_ports": ["mlx5_0"]}}, None)["kind"]
    'hgx'
    >>> decide({}, "nvl")["source"]
    'model'
    """
    found = evidence(host)
    says = set(item["says"] for item in found)
    if "domain" in says and "hgx" not in says and model_kind != "hgx" and (model_kind == "nvl" or "nvlink5" in says):
        says.add("nvl")
    conflicts = []
    systems = says & {"hgx", "nvl", "pcie"}
    if len(systems) > 1:
        conflicts.append("the evidence names %s" % " and ".join(_LABEL[k] for k in sorted(systems)))
    if "pcie" in systems and "nvlink5" in says:
        conflicts.append("NVSwitches on PCIe belong to NVLink 4 or older, but the links are NVLink5")
    if systems & {"hgx", "nvl"} and "older" in says:
        conflicts.append("%s, but the links are slower than NVLink5" % _LABEL[sorted(systems & {"hgx", "nvl"})[0]])
    kind, source = None, "none"
    if len(systems) == 1:
        kind, source = next(iter(systems)), "detected"
    elif "nvlink5" in says:
        if model_kind in ("hgx", "nvl"):
            kind, source = model_kind, "detected+model"
        else:
            conflicts.append("the links are NVLink5, but neither a management port nor a multi-node domain is seen and "
                             "the GPU model names no NVLink5 system")
    elif "older" in says:
        source = "detected"
        if model_kind in ("hgx", "nvl"):
            conflicts.append("the GPU model is %s, but the links are slower than NVLink5" % _LABEL[model_kind])
    elif model_kind in ("hgx", "nvl"):
        kind, source = model_kind, "model"
    if source == "detected" and kind is not None and model_kind in ("hgx", "nvl") and kind != model_kind:
        conflicts.append("the host shows %s, the GPU model says %s" % (_LABEL[kind], _LABEL[model_kind]))
    out = {"kind": kind, "source": source, "evidence": [item["what"] for item in found], "conflicts": conflicts,
           "model": model_kind}
    if asked:
        out["kind"] = None if asked == "none" else asked
        out["source"] = "asked"
    elif conflicts:
        out["kind"] = None
    return out


def refusal(decision, label):
    """The plan's refusal for conflicting evidence: what was seen, what each says, and the variable that settles it."""
    return ("The host's NVLink fabric evidence conflicts for %s: %s. Seen: %s. GPU model: %s. dlbox.stack does not "
            "guess which fabric this is: check the host (nvidia-smi nvlink -s, nvidia-smi -q's Fabric section, lspci -vv "
            "of the ConnectX-7 functions) and set dlbox_plan_hardware.fabric to one of %s (hgx: %s; nvl: %s; pcie: %s)."
            % (label, "; ".join(decision["conflicts"]), "; ".join(decision["evidence"]) or "nothing",
               _LABEL.get(decision["model"], "no NVLink5 system"), ", ".join(KINDS), _LABEL["hgx"], _LABEL["nvl"],
               _LABEL["pcie"]))
