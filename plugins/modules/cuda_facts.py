#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: cuda_facts
short_description: Find the CUDA toolkits installed on a host
version_added: "0.1.0"
description:
  - Lists every toolkit tree C(<prefix>/cuda-X.Y) (newest first), says which one C(<prefix>/cuda) resolves to,
    and reports the distribution's own C(nvidia-cuda-toolkit) (C(/usr/bin/nvcc)) when it is installed.
  - A toolkit's full version comes from its C(version.json) (C(cuda) -> C(version)), else from C(nvcc --version).
  - Its C(source) (the install method) comes from the manifest the C(dlbox.stack.cuda) role writes
    (C(<tree>/dlbox-manifest.json), then C(<state_dir>/<X.Y>.json)), else from the package that owns the tree's
    files (C(dpkg-query -S)), else is C(unknown).
  - Read-only; the same in check mode. Used by the cuda, cudnn and nccl roles.
  - All parsing lives in the C(_cuda_toolkits) module_utils and is unit-tested.
author:
  - dlbox.stack developers (@dlbox)
options:
  prefix:
    description: Folder that holds the C(cuda-X.Y) trees and the C(cuda) default link.
    type: path
    default: /usr/local
  state_dir:
    description: Folder of the manifests the C(dlbox.stack.cuda) role writes, one C(<X.Y>.json) per toolkit.
    type: path
    default: /var/lib/dlbox/cuda
  host_compiler:
    description:
      - A g++ to probe besides C(g++) on E(PATH) and C(/usr/bin/g++-N) (the C(cuda) role's O(host_compiler)).
    type: str
    default: ""
  root:
    description:
      - Prefix for every path the module reads. For tests and mounted images; commands (C(nvcc), C(dpkg-query))
        only run when O(root=/).
    type: path
    default: /
extends_documentation_fragment:
  - dlbox.stack.facts
"""

EXAMPLES = r"""
- name: Find the installed CUDA toolkits
  dlbox.stack.cuda_facts:
  register: __cudnn_cuda

- name: Show the CUDA versions
  ansible.builtin.debug:
    msg: "{{ __cudnn_cuda.cuda_toolkits | map(attribute='version') | list }}"
"""

RETURN = r"""
cuda_toolkits:
  description: One item per C(cuda-X.Y) tree under O(prefix), newest first.
  returned: always
  type: list
  elements: dict
  contains:
    version:
      description: Major.minor, from the tree's name.
      type: str
      sample: "13.0"
    full_version:
      description: From C(version.json), else C(nvcc --version) (C(V13.0.88)), else V(null).
      type: str
      sample: "13.0.2"
    path:
      description: The tree.
      type: str
      sample: /usr/local/cuda-13.0
    nvcc:
      description: The tree's C(bin/nvcc), V(null) when it has none.
      type: str
      sample: /usr/local/cuda-13.0/bin/nvcc
    source:
      description: How it was installed, C(nvidia_repo), C(distro), C(local_repo), C(pip_wheels) or C(unknown).
      type: str
      sample: nvidia_repo
cuda_default:
  description: What O(prefix)C(/cuda) resolves to (through alternatives), V(null) when missing or not a C(cuda-X.Y) tree.
  returned: always
  type: dict
  sample: {version: "13.0", path: /usr/local/cuda-13.0}
cuda_distro_toolkit:
  description: The distribution's installed C(nvidia-cuda-toolkit), V(null) when not installed.
  returned: always
  type: dict
  sample: {version: "11.8", nvcc: /usr/bin/nvcc, package_version: "11.8.89~11.8.0-5~deb12u1"}
host_compilers:
  description:
    - The host C(g++) compilers that answer C(-dumpversion), the one on E(PATH) first, then O(host_compiler), then
      C(/usr/bin/g++-N), newest first. Empty when O(root) is not C(/).
  returned: always
  type: list
  elements: dict
  sample: [{path: /usr/bin/g++, major: 12}, {path: /usr/bin/g++-11, major: 11}]
"""

import glob
import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dlbox.stack.plugins.module_utils._cuda_toolkits import (
    build_facts,
    toolkit_dir_version,
)

MANIFEST_NAME = "dlbox-manifest.json"


def _read(path):
    try:
        with open(path, "rb") as handle:
            return handle.read().decode("utf-8", "replace")
    except (IOError, OSError):
        return None


def _executable(path):
    return path if os.path.isfile(path) and os.access(path, os.X_OK) else None


def _run(module, cmd):
    rc, out, err = module.run_command(cmd, check_rc=False, environ_update={"LC_ALL": "C", "LANG": "C"})
    return (out or "") + (err or "") if rc == 0 else None


def _compilers(module, given):
    """(path, -dumpversion output) of g++ on PATH, the given one and /usr/bin/g++-N."""
    paths = []
    plain = module.get_bin_path("g++", required=False)
    if plain:
        paths.append(plain)
    if given:
        paths.append(given)
    paths.extend(sorted(glob.glob("/usr/bin/g++-[0-9]*"), reverse=True))
    found = []
    for path in paths:
        if _executable(path):
            found.append((path, _run(module, [path, "-dumpfullversion", "-dumpversion"])))
    return found


def gather(module, prefix="/usr/local", state_dir="/var/lib/dlbox/cuda", root="/", host_compiler=""):
    """Read what :func:`build_facts` needs. Paths in the result are host paths (without ``root``)."""
    on_host = os.path.normpath(root) == "/"

    def local(path):
        return os.path.join(root, path.lstrip("/"))

    dpkg_query = module.get_bin_path("dpkg-query", required=False) if on_host else None
    trees = []
    try:
        names = sorted(os.listdir(local(prefix)))
    except (IOError, OSError):
        names = []
    for name in names:
        version = toolkit_dir_version(name)
        path = os.path.join(prefix, name)
        if version is None or os.path.islink(local(path)) or not os.path.isdir(local(path)):
            continue
        version_json = _read(local(os.path.join(path, "version.json")))
        nvcc = os.path.join(path, "bin", "nvcc")
        nvcc_found = _executable(local(nvcc))
        nvcc_output = None
        if version_json is None and nvcc_found and on_host:
            nvcc_output = _run(module, [nvcc, "--version"])
        manifest = _read(local(os.path.join(path, MANIFEST_NAME))) or _read(local(os.path.join(state_dir, version + ".json")))
        owner = None
        if manifest is None and dpkg_query:
            probe = nvcc if nvcc_found else os.path.join(path, "version.json")
            owner = _run(module, [dpkg_query, "-S", probe])
        trees.append({
            "path": path,
            "dirname": name,
            "version_json": version_json,
            "nvcc": nvcc if nvcc_found else None,
            "nvcc_output": nvcc_output,
            "manifest": manifest,
            "owner": owner,
        })

    default_target = None
    default_link = local(os.path.join(prefix, "cuda"))
    if os.path.isdir(default_link):
        resolved = os.path.realpath(default_link)
        root_real = os.path.realpath(root)
        if root_real != "/" and resolved.startswith(root_real + os.sep):
            resolved = resolved[len(root_real):]
        default_target = resolved

    distro = None
    if dpkg_query:
        status = _run(module, [dpkg_query, "-W", "-f=${Status} ${Version}", "nvidia-cuda-toolkit"])
        if status:
            nvcc = _executable("/usr/bin/nvcc")
            distro = {
                "dpkg_status": status,
                "nvcc": nvcc,
                "nvcc_output": _run(module, [nvcc, "--version"]) if nvcc else None,
            }
    return build_facts(trees, default_target, distro, _compilers(module, host_compiler) if on_host else [])


def main():
    module = AnsibleModule(
        argument_spec=dict(
            prefix=dict(type="path", default="/usr/local"),
            state_dir=dict(type="path", default="/var/lib/dlbox/cuda"),
            root=dict(type="path", default="/"),
            host_compiler=dict(type="str", default=""),
        ),
        supports_check_mode=True,
    )
    facts = gather(module, prefix=module.params["prefix"], state_dir=module.params["state_dir"], root=module.params["root"],
                   host_compiler=module.params["host_compiler"])
    module.exit_json(changed=False, **facts)


if __name__ == "__main__":
    main()
