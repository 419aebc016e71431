#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: nccl_facts
short_description: Decide what NCCL a host needs and the /etc/nccl.conf it should have
version_added: "0.1.0"
description:
  - With O(check), says why an NCCL version cannot work with the installed CUDA, the loaded driver and the
    GPUs (from the data that O(check) carries); with O(pick), picks the C(libnccl2) build of the apt repository
    (C(apt-cache madison)) that fits the installed toolkit; with O(conf=true), decides the settings of
    C(/etc/nccl.conf) from the host, each with its reason.
  - The host is read with C(nvidia-smi topo -m), C(nvidia-smi topo -p2p rw), C(nvidia-smi --query-gpu),
    C(lspci -vvv) (ACS on PCIe bridges), C(ip -o link) and C(ibdev2netdev) (or C(/sys/class/infiniband)).
    Each text can be given instead (O(captures)), which is how a host that is not at hand is planned and how
    the tests feed real captures through the same code.
  - Read-only; the same in check mode. All parsing and deciding lives in the C(_nccl) module_utils, unit-tested.
author:
  - dlbox.stack developers (@dlbox)
options:
  check:
    description:
      - Refusal check. Keys C(nccl_version), C(cuda_version) (installed X.Y), C(variable) (named in the messages),
        C(known) (data C(nccl)), C(minor_compat) (data C(cuda.minor_compat)), C(architectures) (data
        C(architectures)), C(driver_version), C(compute_capabilities).
    type: dict
  pick:
    description: Build choice. Keys C(nccl_version), C(cuda_version), C(package) (default C(libnccl2)).
    type: dict
  conf:
    description: Decide the C(nccl.conf) settings.
    type: bool
    default: false
  header:
    description: Path of an C(nccl.h) whose version macros (C(NCCL_MAJOR), C(NCCL_MINOR), C(NCCL_PATCH)) are read.
    type: path
  captures:
    description:
      - Texts to use instead of running the commands. Keys C(topo), C(lspci), C(ip_link), C(ibdev), C(p2p_matrix),
        C(gpus) (C(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)), C(probe) (the P2P probe's
        output). A key that is absent is read from the host; a key set to an empty text means "nothing there".
    type: dict
    default: {}
  read_host:
    description: Run the commands for the inputs not in O(captures); V(false) treats them as empty.
    type: bool
    default: true
  options:
    description:
      - Keys C(debug), C(socket_ifname), C(ib_hca) (C(auto), empty, or HCA names), C(p2p) (C(auto), C(enabled),
        C(disabled), C(nvlink)), C(extra) (KEY to value; null removes the key).
    type: dict
    default: {}
  keep_from:
    description:
      - An existing C(nccl.conf) whose keys this module does not decide are kept in RV(settings) and RV(conf_text)
        (a missing file is no error). Keys it decides (C(NCCL_DEBUG), C(NCCL_SOCKET_IFNAME), C(NCCL_IB_HCA),
        C(NCCL_P2P_DISABLE), C(NCCL_P2P_LEVEL)) and those in C(options.extra) come from the decision.
    type: path
  known_issues:
    description: Driver bugs that break P2P (data C(nccl_p2p_issues)), each C(gpus), C(driver_fixed), C(effect), C(source).
    type: list
    elements: dict
    default: []
extends_documentation_fragment:
  - dlbox.stack.facts
"""

EXAMPLES = r"""
- name: Decide nccl.conf from this host
  dlbox.stack.nccl_facts:
    conf: true
  register: __nccl_decision

- name: Decide it for a captured host
  dlbox.stack.nccl_facts:
    conf: true
    read_host: false
    captures:
      topo: "{{ lookup('ansible.builtin.file', 'topo-m.txt') }}"
      lspci: "{{ lookup('ansible.builtin.file', 'lspci-vvv.txt') }}"
"""

RETURN = r"""
refusals:
  description: Why the version in O(check) cannot work (empty when it can, or when O(check) is not given).
  returned: always
  type: list
  elements: str
build:
  description: The build picked for O(pick) (C(version), C(cuda), C(exact), C(why)), or C(error) and C(builds).
  returned: when O(pick) is given
  type: dict
candidates:
  description: The versions C(apt-cache madison) listed for O(pick).
  returned: when O(pick) is given
  type: list
  elements: str
settings:
  description: The C(nccl.conf) settings in order, each C(key), C(value) and C(reason).
  returned: when O(conf=true)
  type: list
  elements: dict
header_version:
  description: The version in O(header), V(null) when the file or its macros are missing.
  returned: when O(header) is given
  type: str
  sample: "2.27.7"
conf_text:
  description: The whole C(/etc/nccl.conf), with a comment that says why before each setting.
  returned: when O(conf=true)
  type: str
p2p:
  description: The P2P assessment (C(verdict) n/a, ok or broken; C(broken) pairs; C(reasons); C(notes)).
  returned: when O(conf=true)
  type: dict
peermem:
  description: Whether GPUDirect RDMA over InfiniBand needs the C(nvidia-peermem) module.
  returned: when O(conf=true)
  type: bool
gpu_count:
  description: GPUs in C(nvidia-smi topo -m).
  returned: when O(conf=true)
  type: int
notes:
  description: What the decision saw and did not act on.
  returned: when O(conf=true)
  type: list
  elements: str
inputs:
  description: Where each input came from (C(capture), C(host), C(missing)).
  returned: when O(conf=true)
  type: dict
"""

import glob
import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dlbox.stack.plugins.module_utils._nccl import (
    decide,
    keep_user_settings,
    parse_nccl_header,
    parse_madison,
    parse_topo,
    pick_build,
    refusals,
    render_conf,
)

_COMMANDS = {
    "topo": ["nvidia-smi", "topo", "-m"],
    "p2p_matrix": ["nvidia-smi", "topo", "-p2p", "rw"],
    "gpus": ["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
    "lspci": ["lspci", "-vvv"],
    "ip_link": ["ip", "-o", "link"],
    "ibdev": ["ibdev2netdev"],
}


def _run(module, argv):
    path = module.get_bin_path(argv[0])
    if not path:
        return None
    rc, out = module.run_command([path] + argv[1:])[:2]
    return out if rc == 0 else None


def _ibdev_from_sysfs():
    """The lines ibdev2netdev prints, from /sys/class/infiniband (HCA, port, state, netdev)."""
    lines = []
    for hca_dir in sorted(glob.glob("/sys/class/infiniband/*")):
        hca = os.path.basename(hca_dir)
        netdevs = sorted(os.listdir(os.path.join(hca_dir, "device", "net"))) if os.path.isdir(os.path.join(hca_dir, "device", "net")) else []
        for port_dir in sorted(glob.glob(os.path.join(hca_dir, "ports", "*"))):
            try:
                with open(os.path.join(port_dir, "state")) as handle:
                    state = handle.read()
            except OSError:
                continue
            up = "ACTIVE" in state
            lines.append("%s port %s ==> %s (%s)" % (hca, os.path.basename(port_dir), netdevs[0] if netdevs else "-", "Up" if up else "Down"))
    return "\n".join(lines)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            check=dict(type="dict"),
            pick=dict(type="dict"),
            conf=dict(type="bool", default=False),
            captures=dict(type="dict", default={}),
            read_host=dict(type="bool", default=True),
            options=dict(type="dict", default={}),
            keep_from=dict(type="path"),
            header=dict(type="path"),
            known_issues=dict(type="list", elements="dict", default=[]),
        ),
        supports_check_mode=True,
    )
    params = module.params
    result = dict(changed=False, refusals=[])

    check = params["check"]
    if check:
        result["refusals"] = refusals(
            check.get("nccl_version"), check.get("cuda_version"), check.get("known") or [],
            check.get("minor_compat") or [], driver_version=check.get("driver_version") or None,
            compute_capabilities=check.get("compute_capabilities") or [], architectures=check.get("architectures") or {},
            variable=check.get("variable") or "nccl_version")

    pick = params["pick"]
    if pick:
        package = pick.get("package") or "libnccl2"
        rc, out, err = module.run_command([module.get_bin_path("apt-cache", required=True), "madison", package])
        if rc != 0:
            module.fail_json(msg="apt-cache madison %s failed: %s" % (package, err.strip()))
        result["candidates"] = parse_madison(out)
        result["build"] = pick_build(result["candidates"], str(pick.get("nccl_version") or ""), str(pick.get("cuda_version") or ""))

    if params["header"]:
        text = None
        if os.path.isfile(params["header"]):
            with open(params["header"]) as handle:
                text = handle.read()
        result["header_version"] = parse_nccl_header(text)

    if params["conf"]:
        captures = params["captures"] or {}
        inputs, sources = {}, {}
        for key in ("topo", "p2p_matrix", "gpus", "lspci", "ip_link", "ibdev", "probe"):
            if key in captures and captures[key] is not None:
                inputs[key], sources[key] = str(captures[key]), "capture"
            elif params["read_host"] and key in _COMMANDS:
                text = _run(module, _COMMANDS[key])
                if text is None and key == "ibdev":
                    text = _ibdev_from_sysfs() or None
                inputs[key], sources[key] = text, ("host" if text is not None else "missing")
            else:
                inputs[key], sources[key] = None, "missing"
        decision = decide(inputs, options=params["options"], issues=params["known_issues"])
        settings = decision["settings"]
        if params["keep_from"] and os.path.isfile(params["keep_from"]):
            with open(params["keep_from"]) as handle:
                settings = keep_user_settings(handle.read(), settings, (params["options"] or {}).get("extra"))
        result.update(
            settings=settings,
            conf_text=render_conf(settings),
            p2p=decision["p2p"],
            topology=decision["topology"],
            ib=decision["ib"],
            peermem=decision["peermem"],
            gpu_count=len(parse_topo(inputs.get("topo"))["gpus"]),
            notes=decision["notes"],
            inputs=sources,
        )
    module.exit_json(**result)


if __name__ == "__main__":
    main()
