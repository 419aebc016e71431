#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: nvidia_driver_facts
short_description: Read what the nvidia_driver role needs to know about a host's driver packages
version_added: "0.1.0"
description:
  - Reads the host for the C(nvidia_driver) role; the role's filter P(dlbox.stack.nvidia_driver_plan#filter)
    decides from the result on the controller.
  - Always returns the packages dpkg has (C(dpkg-query -W), half-configured ones included) and whether systemd runs
    the host. On request it also reads the apt sources files, tests a signing certificate with
    C(mokutil --test-key), asks apt what an install would do (C(apt-get -s install)), lists the versions of packages
    the repositories have (C(apt-cache madison)), reads C(dkms status), finds the kernels that have a build tree and
    asks C(modinfo) which module version each kernel would load.
  - The simulation can show apt the host as it will be once given packages are removed (a copy of dpkg's status
    without them and without the C(/etc/apt/preferences.d) files they own) and with an extra preferences file, in a
    temporary folder; nothing of the host is changed.
  - Read-only; the same in check mode. Parsing lives in the C(_nvidia_driver) module_utils, unit-tested.
author:
  - dlbox.stack developers (@dlbox)
options:
  sources:
    description: Read the apt sources files (C(/etc/apt/sources.list), C(/etc/apt/sources.list.d/*.list) and C(*.sources)).
    type: bool
    default: false
  mok_key:
    description: Path of the signing key; its existence is reported in RV(mok).
    type: str
    default: ""
  mok_certificate:
    description: Path of the signing certificate; its existence and C(mokutil --test-key)'s answer are reported in RV(mok).
    type: str
    default: ""
  simulate:
    description:
      - Ask apt what C(apt-get install) of C(packages) would do. Keys C(packages) (list), C(recommends) (bool),
        C(sandbox) (bool, with a copy of preferences.d and, with C(remove), of dpkg's status), C(remove) (packages
        shown to apt as removed), C(pin_name) and C(pin_text) (an extra preferences file in the copy).
    type: dict
  madison:
    description: Packages whose versions C(apt-cache madison) lists in RV(madison).
    type: list
    elements: str
    default: []
  dkms:
    description:
      - Read C(dkms status); with keys C(module), C(version) and C(kernels), RV(dkms_missing) lists the kernels without
        it installed. Without C(kernels), the kernels of O(kernels=true) are meant.
    type: dict
  kernels:
    description: Find the kernels under C(/lib/modules) that have a build tree (C(build/Makefile)).
    type: bool
    default: false
  modinfo:
    description: With keys C(module) and C(kernels), the module version C(modinfo -k KERNEL -F version) reports for each kernel.
    type: dict
  kernel:
    description:
      - Read the kernel side for Ubuntu's signed modules and DKMS, in RV(kernel); nothing is changed.
      - The running release, dpkg's kernel packages with their C(Depends) (C(linux-image-*), C(linux-headers-*),
        C(linux-generic*), C(linux-virtual*), C(linux-modules-nvidia-*)), the kernels in C(/boot) (C(vmlinuz-*)) and
        the C(linux-modules-nvidia-*) names apt knows for those kernels plus the flavour metas (C(apt-cache pkgnames)).
    type: bool
    default: false
  boot:
    description:
      - Read only the running release, the kernels in C(/boot) and the one GRUB boots next, in RV(kernel) (no package
        lists); ignored with O(kernel=true), which reads them too.
    type: bool
    default: false
attributes:
  check_mode:
    support: full
    description: The module only reads; the simulation works in a temporary folder.
  diff_mode:
    support: none
    description: Nothing changes.
"""

EXAMPLES = r"""
- name: Read the installed packages and the signing certificate
  dlbox.stack.nvidia_driver_facts:
    mok_key: /root/mok/MOK.priv
    mok_certificate: /root/mok/MOK.der
  register: __nvidia_driver_facts

- name: Ask apt what the branch would install, with the branch pin in place and the old branch removed
  dlbox.stack.nvidia_driver_facts:
    simulate:
      packages: [nvidia-open-580, nvidia-driver-pinning-580]
      recommends: false
      sandbox: true
      remove: [nvidia-open, nvidia-driver-cuda]
      pin_name: dlbox-00-nvidia-driver-branch.pref
      pin_text: "Package: *nvidia*\nPin: version 580.*\nPin-Priority: 1000\n"
    madison: [nvidia-fabricmanager]
  register: __nvidia_driver_probe
"""

RETURN = r"""
installed:
  description: The packages dpkg has (half-configured ones included, removed ones with only configuration files left out).
  returned: always
  type: list
  elements: dict
  sample: [{"name": "nvidia-open", "version": "580.95.05-1", "arch": "amd64"}]
systemd:
  description: Whether systemd runs the host (C(/run/systemd/system) exists).
  returned: always
  type: bool
sources:
  description: The apt sources files, each C(path) and C(content).
  returned: when O(sources=true)
  type: list
  elements: dict
mok:
  description: C(key_exists), C(certificate_exists), C(state) (enrolled, pending, blocked, not-enrolled, unknown) and C(text) (mokutil's answer).
  returned: when O(mok_certificate) is given
  type: dict
simulation:
  description: C(rc), C(stdout) and C(stderr) of the C(apt-get -s install) run.
  returned: when O(simulate) is given
  type: dict
madison:
  description: The output of C(apt-cache madison) for O(madison).
  returned: when O(madison) is not empty
  type: str
dkms_status:
  description: C(dkms status), parsed (C(module), C(version), C(kernel), C(arch), C(state)).
  returned: when O(dkms) is given
  type: list
  elements: dict
dkms_missing:
  description: The kernels of O(dkms) without the module at the version installed.
  returned: when O(dkms) is given
  type: list
  elements: str
dkms_text:
  description: C(dkms status) as it printed it.
  returned: when O(dkms) is given
  type: str
kernels:
  description: The kernels that have a build tree.
  returned: when O(kernels=true)
  type: list
  elements: str
modinfo:
  description: For each kernel of O(modinfo), the module version C(modinfo) reports (or its error).
  returned: when O(modinfo) is given
  type: dict
kernel:
  description:
    - >-
      C(running) (the release C(uname -r) prints), C(packages) (C(name), C(version), C(installed), C(depends)),
      C(boot) (the releases of C(/boot/vmlinuz-*)), C(next_boot) (the kernel GRUB boots next: grubenv's C(next_entry),
      else C(GRUB_DEFAULT) of C(/etc/default/grub) and C(/etc/default/grub.d/*.cfg), C(saved) meaning grubenv's
      C(saved_entry); entry 0 and anything not read: the newest of C(/boot); no kernel in C(/boot): the newest installed
      C(linux-image-<release>), else the running release), C(next_boot_source) (how C(next_boot) was found) and
      C(module_names) (the C(linux-modules-nvidia-*) packages apt knows for the running, booted and installed kernels,
      and the flavour metas).
    - With O(boot=true) only C(running), C(boot), C(next_boot) and C(next_boot_source).
  returned: when O(kernel=true) or O(boot=true)
  type: dict
  sample: {"running": "6.8.0-90-generic", "boot": ["6.8.0-90-generic", "7.0.0-44-generic"], "next_boot": "7.0.0-44-generic",
           "packages": [{"name": "linux-image-generic-hwe-24.04", "version": "7.0.0-44.44~24.04.1", "installed": true,
                         "depends": "linux-image-7.0.0-44-generic, linux-modules-7.0.0-44-generic"}],
           "module_names": ["linux-modules-nvidia-580-open-7.0.0-44-generic", "linux-modules-nvidia-580-open-generic-hwe-24.04"]}
"""

import glob
import os
import re
import shutil
import tempfile

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dlbox.stack.plugins.module_utils import _nvidia_driver as nd
from ansible_collections.dlbox.stack.plugins.module_utils import kernel as kernel_utils

_ENV = {"LC_ALL": "C", "LANG": "C"}
DPKG_QUERY = ["dpkg-query", "-W", "-f", "${Package}\t${Version}\t${Architecture}\t${db:Status-Abbrev}\n"]
_PREFERENCES = "/etc/apt/preferences.d"
_STATUS = "/var/lib/dpkg/status"
GRUB_DEFAULTS = "/etc/default/grub"
GRUBENV = "/boot/grub/grubenv"


def _run(module, argv):
    return module.run_command(argv, environ_update=_ENV)


def without_packages(status_text, remove):
    """dpkg's status file without the stanzas of the packages in ``remove``."""
    drop = set(remove)
    kept = []
    for stanza in re.split(r"\n\n+", status_text.strip("\n")):
        first = stanza.split("\n", 1)[0]
        name = first[len("Package:"):].strip() if first.startswith("Package:") else ""
        if name not in drop:
            kept.append(stanza)
    return "\n\n".join(kept) + "\n\n"


def simulate(module, spec):
    packages = list(spec.get("packages") or [])
    recommends = "APT::Install-Recommends=%s" % ("true" if spec.get("recommends") else "false")
    if not spec.get("sandbox"):
        rc, out, err = _run(module, ["apt-get", "-s", "-o", recommends, "install"] + packages)
        return {"rc": rc, "stdout": out, "stderr": err}
    tmp = tempfile.mkdtemp(prefix="dlbox-simulate-")
    try:
        prefs = os.path.join(tmp, "preferences.d")
        if os.path.isdir(_PREFERENCES):
            shutil.copytree(_PREFERENCES, prefs, symlinks=True)
        else:
            os.mkdir(prefs)
        status = _STATUS
        remove = list(spec.get("remove") or [])
        if remove:
            _rc, owned, _err = _run(module, ["dpkg-query", "-L"] + remove)
            for path in owned.splitlines():
                if path.startswith(_PREFERENCES + "/"):
                    target = os.path.join(prefs, os.path.basename(path))
                    if os.path.lexists(target):
                        os.remove(target)
            with open(_STATUS, encoding="utf-8", errors="surrogateescape") as handle:
                text = handle.read()
            status = os.path.join(tmp, "status")
            with open(status, "w", encoding="utf-8", errors="surrogateescape") as handle:
                handle.write(without_packages(text, remove))
        if spec.get("pin_text"):
            with open(os.path.join(prefs, spec.get("pin_name") or "dlbox-pin.pref"), "w", encoding="utf-8") as handle:
                handle.write(spec["pin_text"])
        rc, out, err = _run(module, ["apt-get", "-s", "-o", "Dir::Etc::PreferencesParts=%s" % prefs, "-o", "Dir::State::status=%s" % status,
                                     "-o", recommends, "--allow-downgrades", "install"] + packages)
        return {"rc": rc, "stdout": out, "stderr": err}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def read_sources():
    paths = [p for p in ["/etc/apt/sources.list"] if os.path.isfile(p)]
    paths += sorted(glob.glob("/etc/apt/sources.list.d/*.list") + glob.glob("/etc/apt/sources.list.d/*.sources"))
    out = []
    for path in paths:
        with open(path, encoding="utf-8", errors="surrogateescape") as handle:
            out.append({"path": path, "content": handle.read()})
    return out


def _read(path):
    with open(path, encoding="utf-8", errors="surrogateescape") as handle:
        return handle.read()


def running_release():
    """What ``uname -r`` prints."""
    return os.uname().release


def read_boot(installed=()):
    """The running release, /boot's kernels and the one GRUB boots next (``installed``: the installed kernel releases,
    used when /boot lists none)."""
    running = running_release()
    boot = sorted(os.path.basename(path)[len("vmlinuz-"):] for path in glob.glob("/boot/vmlinuz-*"))
    newest = kernel_utils.next_boot_kernel(boot or list(installed), running)
    defaults = [_read(path) for path in [GRUB_DEFAULTS] + sorted(glob.glob(GRUB_DEFAULTS + ".d/*.cfg")) if os.path.isfile(path)]
    env = _read(GRUBENV) if os.path.isfile(GRUBENV) else ""
    if boot and (defaults or env):
        grub = nd.grub_next_boot(nd.grub_default(defaults), nd.parse_grubenv(env), boot, newest)
    else:
        grub = {"release": newest, "source": "no GRUB configuration read: the newest kernel" if boot else "no kernel in /boot: the running one"}
    return {"running": running, "boot": boot, "next_boot": grub["release"], "next_boot_source": grub["source"]}


def read_kernel(module):
    """The kernel side: running release, dpkg's kernel packages, /boot's kernels, the module packages apt knows."""
    _rc, out, _err = _run(module, ["dpkg-query", "-W", "-f", kernel_utils.KERNEL_DPKG_FORMAT] + kernel_utils.KERNEL_PACKAGE_PATTERNS)
    packages = kernel_utils.parse_kernel_packages(out)  # rc 1 when a pattern matches nothing: the rest is still listed
    result = read_boot(kernel_utils.installed_kernels(packages))
    releases = [result["running"]] + result["boot"] + kernel_utils.installed_kernels(packages) + \
        [m["kernel"] for m in kernel_utils.image_metas(packages)]
    names = []
    if module.get_bin_path("apt-cache"):
        _rc, names_text, _err = _run(module, ["apt-cache", "pkgnames", "linux-modules-nvidia-"])
        names = kernel_utils.module_names_for(names_text.splitlines(), releases)
    result.update(packages=packages, module_names=names)
    return result


def main():
    module = AnsibleModule(
        argument_spec={
            "sources": {"type": "bool", "default": False},
            "mok_key": {"type": "str", "default": "", "no_log": False},  # a path, not the key itself
            "mok_certificate": {"type": "str", "default": ""},
            "simulate": {"type": "dict"},
            "madison": {"type": "list", "elements": "str", "default": []},
            "dkms": {"type": "dict"},
            "kernels": {"type": "bool", "default": False},
            "modinfo": {"type": "dict"},
            "kernel": {"type": "bool", "default": False},
            "boot": {"type": "bool", "default": False},
        },
        supports_check_mode=True,
    )
    p = module.params
    # no dpkg (not a Debian-family host): nothing installed; nvidia_driver_plan refuses the OS
    rc, out, err = _run(module, DPKG_QUERY) if module.get_bin_path("dpkg-query") else (0, "", "")
    if rc != 0:
        module.fail_json(msg="dpkg-query failed: %s" % err.strip())
    result = {"changed": False, "installed": nd.parse_dpkg_query(out), "systemd": os.path.isdir("/run/systemd/system")}
    if p["sources"]:
        result["sources"] = read_sources()
    if p["mok_certificate"]:
        mok = {"key_exists": bool(p["mok_key"]) and os.path.exists(p["mok_key"]),
               "certificate_exists": os.path.exists(p["mok_certificate"]), "text": "", "state": "unknown"}
        tool = module.get_bin_path("mokutil")
        if tool:
            _rc, m_out, m_err = _run(module, [tool, "--test-key", p["mok_certificate"]])
            mok["text"] = m_out + m_err
            mok["state"] = nd.parse_mokutil_test_key(mok["text"])
        result["mok"] = mok
    if p["simulate"] is not None:
        result["simulation"] = simulate(module, p["simulate"])
    if p["madison"]:
        _rc, m_out, _err = _run(module, ["apt-cache", "madison"] + p["madison"])
        result["madison"] = m_out
    if p["kernels"]:
        result["kernels"] = sorted(os.path.basename(os.path.dirname(os.path.dirname(path)))
                                   for path in glob.glob("/lib/modules/*/build/Makefile"))
    if p["dkms"] is not None:
        tool = module.get_bin_path("dkms")
        text = _run(module, [tool, "status"])[1] if tool else ""
        result["dkms_text"] = text
        result["dkms_status"] = nd.parse_dkms_status(text)
        spec = p["dkms"]
        result["dkms_missing"] = nd.dkms_missing(text, spec.get("module"), spec.get("version") or "",
                                                 spec["kernels"] if spec.get("kernels") is not None else result.get("kernels") or []) \
            if spec.get("module") else []
    if p["modinfo"] is not None:
        found = {}
        for kernel in p["modinfo"].get("kernels") or []:
            m_rc, m_out, m_err = _run(module, ["modinfo", "-k", kernel, "-F", "version", p["modinfo"].get("module") or "nvidia"])
            found[kernel] = m_out.strip() if m_rc == 0 else (m_out + m_err).strip()
        result["modinfo"] = found
    if p["kernel"]:
        result["kernel"] = read_kernel(module)
    elif p["boot"]:
        result["kernel"] = read_boot()
    module.exit_json(**result)


if __name__ == "__main__":
    main()
