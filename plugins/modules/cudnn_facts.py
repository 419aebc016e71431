#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: cudnn_facts
short_description: Read the installed cuDNN's version from its header and from the library itself
version_added: "0.1.0"
description:
  - Reads C(CUDNN_MAJOR), C(CUDNN_MINOR) and C(CUDNN_PATCHLEVEL) from a C(cudnn_version.h).
  - Loads the library by its soname through the dynamic linker, as a program would (in a separate Python
    process, so a library that aborts cannot take the module down), calls C(cudnnGetVersion()) and
    C(cudnnGetCudartVersion()), and reports which file the linker loaded.
  - Lists what the linker cache (C(ldconfig -p)) has for the soname.
  - Read-only; the same in check mode. Used by the C(dlbox.stack.cudnn) role to refuse a second cuDNN and to
    verify what it installed. Parsing lives in the C(_cudnn) module_utils and is unit-tested.
author:
  - dlbox.stack developers (@dlbox)
options:
  header:
    description: The version header to read, for example C(/usr/include/x86_64-linux-gnu/cudnn_version_v9.h).
    type: path
    required: true
  soname:
    description: The library's soname, for example C(libcudnn.so.9).
    type: str
    required: true
  load:
    description: Load the library (set V(false) to read only the header and the linker cache).
    type: bool
    default: true
extends_documentation_fragment:
  - dlbox.stack.facts
"""

EXAMPLES = r"""
- name: Read the cuDNN versions
  dlbox.stack.cudnn_facts:
    header: /opt/cudnn/9.10.2.21-cuda12/include/cudnn_version.h
    soname: libcudnn.so.9
  register: __cudnn_facts
"""

RETURN = r"""
cudnn:
  description: What was found.
  returned: always
  type: dict
  contains:
    header:
      description: The header read.
      type: str
    header_version:
      description: Major.minor.patch from the header, V(null) when it is missing or incomplete.
      type: str
      sample: "9.10.2"
    library:
      description: The file the dynamic linker loaded for the soname, V(null) when it did not load.
      type: str
      sample: /usr/lib/x86_64-linux-gnu/libcudnn.so.9.10.2
    library_version:
      description: C(cudnnGetVersion()) as major.minor.patch.
      type: str
      sample: "9.10.2"
    library_file_version:
      description: The version in the loaded file's name (C(libcudnn.so.9.10.2)); V(null) for C(libcudnn.so.9) (wheels).
      type: str
    cudart_version:
      description: C(cudnnGetCudartVersion()) as major.minor, the CUDA runtime the library was built for.
      type: str
      sample: "12.9"
    load_error:
      description: Why the library did not load, V(null) when it did.
      type: str
    linker_paths:
      description: The paths C(ldconfig -p) lists for the soname, in cache order, each folder resolved (once).
      type: list
      elements: str
"""

import json
import os
import sys

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dlbox.stack.plugins.module_utils._cudnn import (
    decode_cudart_version,
    decode_cudnn_version,
    library_file_version,
    parse_ldconfig,
    parse_version_header,
)

# Runs in its own interpreter: loads the soname as a program would and prints what it found as JSON.
_PROBE = r"""
import ctypes, json, os, sys
name = sys.argv[1]
out = {}
try:
    lib = ctypes.CDLL(name)
except OSError as exc:
    lib = None
    out["error"] = str(exc)
for symbol in ("cudnnGetVersion", "cudnnGetCudartVersion") if lib is not None else ():
    call = getattr(lib, symbol, None)
    if call is not None:
        call.restype = ctypes.c_size_t
        call.argtypes = []
        out[symbol] = int(call())
with open("/proc/self/maps") as maps:
    for line in maps:
        fields = line.split(None, 5)
        if len(fields) == 6 and os.path.basename(fields[5].strip()).startswith(name):
            out["path"] = fields[5].strip()
            break
print(json.dumps(out))
"""


def _read(path):
    try:
        with open(path, "rb") as handle:
            return handle.read().decode("utf-8", "replace")
    except (IOError, OSError):
        return None


def probe(module, soname):
    """Load ``soname`` in a child Python; returns (versions dict, error text)."""
    rc, out, err = module.run_command([sys.executable, "-c", _PROBE, soname], check_rc=False,
                                      environ_update={"LC_ALL": "C"})
    if rc != 0:
        return {}, "the loader process ended with %s: %s" % (rc, (err or out).strip()[-400:])
    try:
        found = json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {}, "unreadable loader output: %s" % out.strip()[-400:]
    return found, found.get("error")


def main():
    module = AnsibleModule(
        argument_spec=dict(
            header=dict(type="path", required=True),
            soname=dict(type="str", required=True),
            load=dict(type="bool", default=True),
        ),
        supports_check_mode=True,
    )
    header = module.params["header"]
    soname = module.params["soname"]
    if "/" in soname or not soname.startswith("lib"):
        module.fail_json(msg="soname must be a library name such as libcudnn.so.9, not %r" % soname)
    result = {
        "header": header,
        "header_version": parse_version_header(_read(header)),
        "library": None,
        "library_version": None,
        "library_file_version": None,
        "cudart_version": None,
        "load_error": None,
        "linker_paths": [],
    }
    ldconfig = module.get_bin_path("ldconfig", opt_dirs=["/sbin", "/usr/sbin"])
    if ldconfig:
        rc, out, _err = module.run_command([ldconfig, "-p"], check_rc=False, environ_update={"LC_ALL": "C"})
        if rc == 0:
            # one entry a real folder: on merged-/usr systems the cache lists /lib/<triplet> and /usr/lib/<triplet>
            for path in parse_ldconfig(out, soname):
                real = os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))
                if real not in result["linker_paths"]:
                    result["linker_paths"].append(real)
    if module.params["load"]:
        found, error = probe(module, soname)
        result["load_error"] = error
        if "cudnnGetVersion" in found:
            result["library_version"] = decode_cudnn_version(found["cudnnGetVersion"])
        elif error is None:
            result["load_error"] = "%s has no cudnnGetVersion" % soname
        if "cudnnGetCudartVersion" in found:
            result["cudart_version"] = decode_cudart_version(found["cudnnGetCudartVersion"])
        if found.get("path"):
            result["library"] = found["path"]
            result["library_file_version"] = library_file_version(os.path.realpath(found["path"]))
    module.exit_json(changed=False, cudnn=result)


if __name__ == "__main__":
    main()
