#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: gpu_facts
short_description: Gather the host and NVIDIA GPU facts that dlbox.stack decides versions from
version_added: "0.1.0"
description:
  - Reads the operating system, CPU, memory, disks, Secure Boot state, container/WSL/Jetson markers,
    loaded kernel modules, NVIDIA GPUs, NVSwitches, the NVIDIA driver and the GPU interconnect topology,
    and returns them as the C(dlbox_host) fact.
  - Read-only. Works on a fresh machine without a driver. When C(nvidia-smi) is missing or fails,
    GPUs come from C(lspci -Dnn); when C(lspci) is missing too, from C(/sys/bus/pci/devices).
  - A missing executable is not an error. Which probes ran, and how they ended, is recorded in
    C(dlbox_host.probes).
  - All parsing lives in the C(_gpu_facts) module_utils and is unit-tested against recorded outputs.
author:
  - dlbox.stack developers (@dlbox)
options:
  nvidia_smi_path:
    description:
      - Name or absolute path of the C(nvidia-smi) executable. A bare name is looked up in E(PATH).
    type: str
    default: nvidia-smi
  lspci_path:
    description:
      - Name or absolute path of the C(lspci) executable (package C(pciutils)).
    type: str
    default: lspci
  mokutil_path:
    description:
      - Name or absolute path of the C(mokutil) executable, used for C(mokutil --sb-state).
      - Without it the Secure Boot state is read from the C(SecureBoot) EFI variable.
    type: str
    default: mokutil
  root:
    description:
      - Prefix for every file the module reads (C(/proc), C(/sys), C(/etc), marker files).
      - Meant for tests and for inspecting a mounted image. Executables are still run on the host,
        and C(lscpu) and C(uname) are only used when O(root=/).
    type: path
    default: /
  timeout:
    description:
      - Seconds each external command may run (through C(timeout) from coreutils when it is installed).
        A wedged GPU can make C(nvidia-smi) hang.
    type: int
    default: 60
extends_documentation_fragment:
  - dlbox.stack.facts
notes:
  - PCI ids in the result are lowercase 4-digit hex strings without C(0x); PCI addresses are C(dddd:bb:dd.f).
  - C(memory.ecc) is V(null) when the kernel exposes no EDAC memory controller information (unknown),
    which is common in VMs and containers.
"""

EXAMPLES = r"""
- name: Gather host and GPU facts
  dlbox.stack.gpu_facts:

- name: Show the GPUs
  ansible.builtin.debug:
    msg: "{{ ansible_facts['dlbox_host']['gpus'] | map(attribute='pci_device_id') | list }}"

- name: Fail early on a host whose driver does not answer although a GPU is on the bus
  ansible.builtin.assert:
    that:
      - ansible_facts['dlbox_host']['gpus'] | length == 0 or ansible_facts['dlbox_host']['driver']['present']
    fail_msg: "An NVIDIA GPU is present but nvidia-smi does not answer"

- name: Use an nvidia-smi outside PATH
  dlbox.stack.gpu_facts:
    nvidia_smi_path: /usr/local/nvidia/bin/nvidia-smi
"""

RETURN = r"""
ansible_facts:
  description: Facts added to the host.
  returned: always
  type: dict
  contains:
    dlbox_host:
      description: Host and GPU facts in the shape the dlbox.stack resolver consumes.
      returned: always
      type: dict
      contains:
        arch:
          description: CPU architecture, C(x86_64) or C(aarch64).
          type: str
          sample: x86_64
        os:
          description: From C(/etc/os-release). C(key) is C(<id>-<version_id>).
          type: dict
          sample: {id: ubuntu, version_id: "22.04", codename: jammy, pretty_name: "Ubuntu 22.04.4 LTS", key: ubuntu-22.04}
        kernel:
          description: Kernel release (C(uname -r)).
          type: str
          sample: 6.1.0-18-amd64
        cpu:
          description: CPU model and counts. C(base_mhz) is the nominal clock from the model name, V(null) when it has none.
          type: dict
          sample: {model: "AMD Ryzen 9 5950X 16-Core Processor", sockets: 1, cores: 16, threads: 32, base_mhz: null, max_mhz: 5083, l3_kb: 65536}
        memory:
          description: C(total_mb) from C(/proc/meminfo) (MiB); C(ecc) V(true) when EDAC registers a memory controller, V(null) when unknown.
          type: dict
          sample: {total_mb: 64000, ecc: null}
        disks:
          description:
            - >-
              Physical block devices; C(kind) is C(nvme), C(ssd), C(hdd), C(md) (a software RAID array) or C(hwraid) (a
              RAID controller's volume - PERC, MegaRAID, Smart Array - by C(device/model)); C(size_gb) in decimal GB.
          type: list
          elements: dict
          sample: [{name: nvme0n1, kind: nvme, size_gb: 1000}]
        zfs:
          description: ZFS pools with a mounted dataset (C(/proc/self/mountinfo)); C(members) are the disks of a pool where known.
          type: dict
          sample: {pools: [tank], members: []}
        root_disk:
          description:
            - The disk that holds C(/), from C(/proc/self/mountinfo) and C(/sys/block). A partition counts as its disk,
              LVM or LUKS as the disks under it, an md array as itself with its C(members) and their C(member_kinds).
            - V(null) when C(/) is not on a block device (a container's overlay).
          type: dict
          sample: {name: nvme0n1, kind: nvme, size_gb: 2000, members: [], member_kinds: []}
        secure_boot:
          description: V(true)/V(false), V(null) when unknown.
          type: bool
        virtualization:
          description: Container and WSL markers.
          type: dict
          sample: {container: false, container_type: null, wsl: false, wsl_version: null}
        jetson:
          description:
            - V(null), or the L4T release and device-tree model of a Jetson; C(l4t_release) is the whole first line
              of C(/etc/nv_tegra_release) (C(release), C(revision), C(gcid), C(board), C(eabi), C(date),
              C(kernel_variant)).
            - The action adds C(jetpack), the JetPack release of that L4T from C(data/compat.yml) on the controller
              (V(null) when the data has none).
            - C(power_mode) is the power mode in force, from nvpmodel's C(/var/lib/nvpmodel/status) (C(set) V(true)) or
              else the default of C(/etc/nvpmodel.conf) (C(set) V(false)); C(name) from that file; V(null) when neither
              says.
          type: dict
          sample: {l4t: "36.4.3", model: "NVIDIA Jetson AGX Orin Developer Kit", jetpack: "6.2",
                   l4t_release: {release: "36", revision: "4.3", board: generic, gcid: "38968081"},
                   power_mode: {id: 0, name: MAXN, set: true}}
        modules:
          description: >-
            Kernel modules. C(nvidia_version) from C(/proc/driver/nvidia/version), V(null) when not loaded.
            C(infiniband_modules) the loaded C(mlx5_*) and C(ib_*) modules (NVLSM on NVLink5 HGX boards needs
            C(mlx5_core), C(mlx5_ib) and C(ib_umad)).
          type: dict
          sample: {nouveau_loaded: false, nvidia_loaded: true, nvidia_version: "550.54.14", infiniband_modules: [ib_umad, mlx5_core, mlx5_ib]}
        gpus:
          description:
            - One item per NVIDIA display/3D controller. Keys from C(nvidia-smi) when the driver answers
              (C(uuid), C(memory_mb), C(compute_capability), C(mig_mode_current), C(ecc_mode_current)...),
              else from C(lspci)/sysfs (C(name) is V(null) from sysfs).
            - C(driver_visible) is V(false) for a GPU on the bus that C(nvidia-smi) does not list.
            - C(pcie_cap) is the GPU's own PCIe capability against the link it got - C(gen), C(width) (its LnkCap from
              sysfs C(max_link_speed)/C(max_link_width), and C(nvidia-smi)'s C(max_device_link_gen)), C(link_gen)
              (C(nvidia-smi)'s C(max_link_gen), the lower of the GPU's and the slot's) and C(link_width) (sysfs
              C(current_link_width)) - absent when nothing tells.
            - The action adds C(catalog) from the GPU catalog on the controller (NVIDIA's device list,
              C(data/gpu_catalog.yml)) with C(name), C(architecture), C(arch), C(cc), C(chip), C(memory_gb), C(form),
              C(legacy_branch), C(known); a device id the catalog lacks whose chip C(lspci) names gets its
              architecture from the chip and a C(warning).
          type: list
          elements: dict
          sample:
            - {pci_bus_id: "0000:01:00.0", vendor_id: "10de", pci_device_id: "2684", name: "NVIDIA GeForce RTX 4090",
               pci_name: "AD102 [GeForce RTX 4090]", memory_mb: 24564, uuid: "GPU-71d1acc2-662d-2166-bf9f-65272d2fc437",
               driver_visible: true, source: nvidia-smi}
        nvswitches:
          description: NVSwitch bridges seen on the PCI bus.
          type: list
          elements: dict
          sample: [{pci_bus_id: "0000:54:00.0", pci_device_id: "1af1", name: "GA100 [A100 NVSwitch]"}]
        driver:
          description: C(present) is V(true) when C(nvidia-smi) answered.
          type: dict
          sample: {present: true, version: "550.54.14", cuda_version: "12.4", kernel_module_flavour: open}
        nvlink:
          description: V(true) when C(nvidia-smi topo -m) shows an C(NV#) link between two GPUs; V(null) when the matrix was not read.
          type: bool
        topology:
          description: The parsed C(nvidia-smi topo -m) matrix (C(gpus), C(matrix), C(links), C(nvlink)...), or V(null).
          type: dict
        nvlink_fabric:
          description:
            - What the host shows of its NVLink fabric, for the NVLink5 detection (issue 49); each key V(null) when not read.
            - C(switch_mgmt_ports) the InfiniBand devices of C(/sys/class/infiniband) whose VPD carries C(SMDL=SW_MNG)
              (the NVSwitch management ports of an HGX B200/B300 board).
            - C(link_speeds_gbps) each GPU's fastest active link from C(nvidia-smi nvlink -s) (53.125 on NVLink5).
            - C(fabric) each GPU's C(nvidia-smi -q -x) C(<fabric>) (C(state), C(status), C(clique_id), C(cluster_uuid)).
          type: dict
          sample: {switch_mgmt_ports: [mlx5_0, mlx5_1], link_speeds_gbps: [53.125], fabric: []}
        probes:
          description: How each probe ended (C(ok), C(missing), C(failed rc=N), C(skipped)).
          type: dict
          sample: {nvidia_smi: missing, nvidia_smi_topo: skipped, lspci: ok, mokutil: ok, sysfs_pci: skipped, lscpu: ok}
        files_root:
          description:
            - The O(root) these facts were read under, V(/) on a host. Roles that read more of the same files later in a
              run (the loaded module's C(/proc/driver/nvidia/version), C(/sys/module/nvidia/version)) read them under it,
              so that they and these facts describe one machine.
          type: str
          sample: /
"""

import os
import platform
import re

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dlbox.stack.plugins.module_utils._gpu_facts import (
    build_host_facts, normalize_pci_bus_id, sysfs_link_gen,
)

_SECURE_BOOT_VAR = "sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c"


class HostReader:
    """File and command access for :func:`gather`, relative to ``root``."""

    def __init__(self, module, root="/", timeout=60):
        self.module = module
        self.root = root or "/"
        self.timeout = timeout
        self._timeout_bin = module.get_bin_path("timeout", required=False) if timeout else None

    def path(self, relative):
        return os.path.join(self.root, relative.lstrip("/"))

    def exists(self, relative):
        return os.path.exists(self.path(relative))

    def read(self, relative, binary=False):
        try:
            with open(self.path(relative), "rb") as handle:
                data = handle.read()
        except (IOError, OSError):
            return None
        if binary:
            return data
        return data.decode("utf-8", "replace")

    def listdir(self, relative):
        try:
            return sorted(os.listdir(self.path(relative)))
        except (IOError, OSError):
            return None

    def find_executable(self, name):
        if not name:
            return None
        if os.path.isabs(name):
            return name if os.path.isfile(name) and os.access(name, os.X_OK) else None
        return self.module.get_bin_path(name, required=False)

    def run(self, name, args):
        """Return (status, stdout+stderr text or None)."""
        exe = self.find_executable(name)
        if exe is None:
            return "missing", None
        cmd = [exe] + list(args)
        if self._timeout_bin:
            cmd = [self._timeout_bin, str(self.timeout)] + cmd
        rc, out, err = self.module.run_command(
            cmd, check_rc=False, environ_update={"LC_ALL": "C", "LANG": "C"}
        )
        if rc != 0:
            return "failed rc=%d" % rc, (out or "") + (err or "")
        return "ok", out


def _read_first(reader, *paths):
    for candidate in paths:
        value = reader.read(candidate)
        if value is not None:
            return value
    return None


def gather(reader, nvidia_smi_path="nvidia-smi", lspci_path="lspci", mokutil_path="mokutil"):
    """Collect raw inputs through ``reader`` and build the ``dlbox_host`` fact."""
    probes = {}
    raw = {}
    on_host = os.path.normpath(reader.root) == "/"

    raw["kernel_release"] = (reader.read("proc/sys/kernel/osrelease") or "").strip() or (
        platform.release() if on_host else None
    )
    raw["machine"] = (reader.read("proc/sys/kernel/arch") or "").strip() or (platform.machine() if on_host else None)
    raw["proc_version"] = reader.read("proc/version")
    raw["os_release"] = _read_first(reader, "etc/os-release", "usr/lib/os-release")
    raw["cpuinfo"] = reader.read("proc/cpuinfo")
    raw["meminfo"] = reader.read("proc/meminfo")

    if on_host:
        status, out = reader.run("lscpu", [])
        probes["lscpu"] = status
        raw["lscpu"] = out if status == "ok" else None
    else:
        probes["lscpu"] = "skipped"

    # each L3 instance once (its size per distinct shared_cpu_list): lscpu of util-linux <= 2.33 prints one instance
    l3_lines = []
    for cpu in reader.listdir("sys/devices/system/cpu") or []:
        if re.match(r"^cpu\d+$", cpu):
            for leaf in ("size", "shared_cpu_list"):
                value = reader.read("sys/devices/system/cpu/%s/cache/index3/%s" % (cpu, leaf))
                if value is not None:
                    l3_lines.append("/sys/devices/system/cpu/%s/cache/index3/%s:%s" % (cpu, leaf, value.strip()))
    raw["l3_sysfs"] = "\n".join(l3_lines) or None

    mc_entries = reader.listdir("sys/devices/system/edac/mc")
    raw["edac_mc_exists"] = mc_entries is not None
    raw["edac_mc_entries"] = mc_entries or []

    disks = []
    for name in reader.listdir("sys/block") or []:
        disks.append((
            name,
            (reader.read("sys/block/%s/queue/rotational" % name) or "").strip(),
            (reader.read("sys/block/%s/size" % name) or "0").strip(),
            (reader.read("sys/block/%s/device/model" % name) or "").strip(),
        ))
    raw["disks"] = disks
    # which disk holds / (the system disk): the root mount's major:minor, every disk's and partition's dev, dm/md slaves
    raw["mountinfo"] = reader.read("proc/self/mountinfo")
    blocks = {}
    for name in reader.listdir("sys/block") or []:
        blocks[name] = {"dev": (reader.read("sys/block/%s/dev" % name) or "").strip(), "parent": None,
                        "slaves": reader.listdir("sys/block/%s/slaves" % name) or []}
        for part in reader.listdir("sys/block/%s" % name) or []:
            if part.startswith(name) and reader.exists("sys/block/%s/%s/partition" % (name, part)):
                blocks[part] = {"dev": (reader.read("sys/block/%s/%s/dev" % (name, part)) or "").strip(),
                                "parent": name, "slaves": []}
    raw["blocks"] = blocks

    status, out = reader.run(mokutil_path, ["--sb-state"])
    probes["mokutil"] = status
    raw["mokutil"] = out
    raw["secure_boot_efivar"] = reader.read(_SECURE_BOOT_VAR, binary=True)
    raw["efi"] = reader.exists("sys/firmware/efi")

    raw["dockerenv"] = reader.exists(".dockerenv")
    raw["containerenv"] = reader.exists("run/.containerenv")
    raw["cgroup"] = reader.read("proc/1/cgroup")
    raw["pid1_environ"] = reader.read("proc/1/environ", binary=True)
    raw["systemd_container"] = reader.read("run/systemd/container")
    raw["nv_tegra_release"] = reader.read("etc/nv_tegra_release")
    raw["device_tree_model"] = reader.read("proc/device-tree/model")
    raw["nvpmodel_conf"] = reader.read("etc/nvpmodel.conf")
    raw["nvpmodel_status"] = reader.read("var/lib/nvpmodel/status")

    raw["proc_modules"] = reader.read("proc/modules")
    raw["nvidia_proc_version"] = reader.read("proc/driver/nvidia/version")

    status, out = reader.run(nvidia_smi_path, ["-q", "-x"])
    probes["nvidia_smi"] = status
    raw["nvidia_smi_xml"] = out if status == "ok" else None
    if status == "ok":
        status, out = reader.run(nvidia_smi_path, ["--query-gpu=pci.bus_id,compute_cap", "--format=csv,noheader"])
        raw["nvidia_smi_cc_csv"] = out if status == "ok" else None
        status, out = reader.run(nvidia_smi_path, ["topo", "-m"])
        probes["nvidia_smi_topo"] = status
        raw["nvidia_smi_topo"] = out if status == "ok" else None
        # each GPU's NVLink speeds: NVLink5 reports 53.125 GB/s a link (_nvlink5_facts); a GPU without NVLink prints
        # nothing, a driver without the subcommand fails (recorded, not an error)
        status, out = reader.run(nvidia_smi_path, ["nvlink", "-s"])
        probes["nvidia_smi_nvlink"] = status
        raw["nvidia_smi_nvlink"] = out if status == "ok" else None
    else:
        probes["nvidia_smi_topo"] = "skipped"
        probes["nvidia_smi_nvlink"] = "skipped"

    # NVSwitch management ports of an NVLink5 HGX board: the ConnectX-7 functions whose VPD has SMDL=SW_MNG, as NVIDIA's
    # Fabric Manager start script finds them (the VPD file is readable by root only: without become, none is read)
    ib_devices = reader.listdir("sys/class/infiniband")
    raw["ib_vpd_read"] = ib_devices is not None
    raw["ib_vpds"] = {name: reader.read("sys/class/infiniband/%s/device/vpd" % name, binary=True)
                      for name in ib_devices or []}

    status, out = reader.run(lspci_path, ["-Dnn"])
    probes["lspci"] = status
    if status == "ok":
        raw["lspci"] = out
        probes["sysfs_pci"] = "skipped"
    else:
        entries = []
        addresses = reader.listdir("sys/bus/pci/devices")
        for address in addresses or []:
            base = "sys/bus/pci/devices/%s/" % address
            entries.append((
                address,
                (reader.read(base + "vendor") or "").strip(),
                (reader.read(base + "device") or "").strip(),
                (reader.read(base + "class") or "").strip(),
            ))
        raw["sysfs_pci"] = entries
        probes["sysfs_pci"] = "ok" if addresses is not None else "missing"

    # each NVIDIA function's own link capability (LnkCap) and current link (LnkSta), as the kernel reads them
    links = {}
    for address in reader.listdir("sys/bus/pci/devices") or []:
        base = "sys/bus/pci/devices/%s/" % address
        if (reader.read(base + "vendor") or "").strip().lower() != "0x10de":
            continue
        max_speed, cur_speed = reader.read(base + "max_link_speed"), reader.read(base + "current_link_speed")
        if max_speed is None and cur_speed is None:
            continue
        links[normalize_pci_bus_id(address)] = {
            "gen_max": sysfs_link_gen(max_speed), "width_max": _int_or_none(reader.read(base + "max_link_width")),
            "gen_current": sysfs_link_gen(cur_speed), "width_current": _int_or_none(reader.read(base + "current_link_width")),
            "source": "sysfs"}
    raw["pci_links"] = links
    raw["probes"] = probes
    return build_host_facts(raw)


def _int_or_none(text):
    try:
        return int(str(text).strip())
    except (TypeError, ValueError):
        return None


def main():
    module = AnsibleModule(
        argument_spec=dict(
            nvidia_smi_path=dict(type="str", default="nvidia-smi"),
            lspci_path=dict(type="str", default="lspci"),
            mokutil_path=dict(type="str", default="mokutil"),
            root=dict(type="path", default="/"),
            timeout=dict(type="int", default=60),
        ),
        supports_check_mode=True,
    )
    reader = HostReader(module, root=module.params["root"], timeout=module.params["timeout"])
    facts = gather(
        reader,
        nvidia_smi_path=module.params["nvidia_smi_path"],
        lspci_path=module.params["lspci_path"],
        mokutil_path=module.params["mokutil_path"],
    )
    facts["files_root"] = reader.root
    module.exit_json(changed=False, ansible_facts={"dlbox_host": facts})


if __name__ == "__main__":
    main()
