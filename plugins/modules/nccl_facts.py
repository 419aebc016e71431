#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: nccl_facts
short_description: Gather what the host shows for NCCL (its topology, the repository's builds, nccl.h, nccl.conf)
version_added: "0.1.0"
description:
  - Gathers facts only; the nccl role decides from them on the controller (C(dlbox.stack.role_decide('nccl', ...)),
    C(plugins/plugin_utils/roles/nccl.py)), with the pure rules of the C(_nccl) module_utils.
  - With O(topology=true), the texts of C(nvidia-smi topo -m), C(nvidia-smi topo -p2p rw), C(nvidia-smi
    --query-gpu), C(lspci -vvv) (ACS on PCIe bridges), C(ip -o link) and C(ibdev2netdev) (or
    C(/sys/class/infiniband)). Each text can be given instead (O(captures)), which is how a host that is not at hand
    is planned and how the tests feed real captures through the same code.
  - With O(madison), the versions C(apt-cache madison) lists for that package; with O(header), the version macros of
    an C(nccl.h); with O(conf_path), the C(nccl.conf) that is there.
  - Read-only; the same in check mode.
author:
  - dlbox.stack developers (@dlbox)
options:
  topology:
    description: Gather the topology texts (RV(inputs), RV(sources)).
    type: bool
    default: false
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
  madison:
    description: A package whose apt candidates (C(apt-cache madison)) are listed in RV(candidates).
    type: str
  header:
    description: Path of an C(nccl.h) whose version macros (C(NCCL_MAJOR), C(NCCL_MINOR), C(NCCL_PATCH)) are read.
    type: path
  conf_path:
    description: An C(nccl.conf) whose text is returned as RV(conf) (V(null) when there is none).
    type: path
extends_documentation_fragment:
  - dlbox.stack.facts
"""

EXAMPLES = r"""
- name: Gather this host's topology and its nccl.conf
  dlbox.stack.nccl_facts:
    topology: true
    conf_path: /etc/nccl.conf
  register: __nccl_gathered

- name: Gather a captured host's topology
  dlbox.stack.nccl_facts:
    topology: true
    read_host: false
    captures:
      topo: "{{ lookup('ansible.builtin.file', 'topo-m.txt') }}"
      lspci: "{{ lookup('ansible.builtin.file', 'lspci-vvv.txt') }}"
"""

RETURN = r"""
inputs:
  description: The topology texts by key (V(null) where missing), for O(topology=true).
  returned: when O(topology=true)
  type: dict
sources:
  description: Where each input came from (C(capture), C(host), C(missing)).
  returned: when O(topology=true)
  type: dict
candidates:
  description: The versions C(apt-cache madison) listed for O(madison).
  returned: when O(madison) is given
  type: list
  elements: str
header_version:
  description: The version in O(header), V(null) when the file or its macros are missing.
  returned: when O(header) is given
  type: str
  sample: "2.27.7"
conf:
  description: The text of O(conf_path), V(null) when there is no such file.
  returned: when O(conf_path) is given
  type: str
"""

import glob
import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dlbox.stack.plugins.module_utils._nccl import parse_madison, parse_nccl_header

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


def _read(path):
    if not path or not os.path.isfile(path):
        return None
    with open(path) as handle:
        return handle.read()


def _topology(module, captures, read_host):
    inputs, sources = {}, {}
    for key in ("topo", "p2p_matrix", "gpus", "lspci", "ip_link", "ibdev", "probe"):
        if key in captures and captures[key] is not None:
            inputs[key], sources[key] = str(captures[key]), "capture"
        elif read_host and key in _COMMANDS:
            text = _run(module, _COMMANDS[key])
            if text is None and key == "ibdev":
                text = _ibdev_from_sysfs() or None
            inputs[key], sources[key] = text, ("host" if text is not None else "missing")
        else:
            inputs[key], sources[key] = None, "missing"
    return inputs, sources


def main():
    module = AnsibleModule(
        argument_spec=dict(
            topology=dict(type="bool", default=False),
            captures=dict(type="dict", default={}),
            read_host=dict(type="bool", default=True),
            madison=dict(type="str"),
            header=dict(type="path"),
            conf_path=dict(type="path"),
        ),
        supports_check_mode=True,
    )
    params = module.params
    result = dict(changed=False)
    if params["madison"]:
        rc, out, err = module.run_command([module.get_bin_path("apt-cache", required=True), "madison", params["madison"]])
        if rc != 0:
            module.fail_json(msg="apt-cache madison %s failed: %s" % (params["madison"], err.strip()))
        result["candidates"] = parse_madison(out)
    if params["header"]:
        result["header_version"] = parse_nccl_header(_read(params["header"]))
    if params["conf_path"]:
        result["conf"] = _read(params["conf_path"])
    if params["topology"]:
        result["inputs"], result["sources"] = _topology(module, params["captures"] or {}, params["read_host"])
    module.exit_json(**result)


if __name__ == "__main__":
    main()
