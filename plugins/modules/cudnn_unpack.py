#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: cudnn_unpack
short_description: Lay NVIDIA's cuDNN tarball or wheel out in a versioned directory
version_added: "0.1.0"
description:
  - Unpacks NVIDIA's cuDNN archive (C(cudnn-linux-*-archive.tar.xz)) or wheel (C(nvidia_cudnn_cu*.whl)) into
    one layout of this collection's own, whatever the source, C(<dest>/include), C(<dest>/lib) and C(<dest>/LICENSE),
    plus C(<dest>/dlbox-manifest.json) saying where it came from (file name, sha256, kind, version).
  - The archive's symbolic links are kept when they stay inside C(lib/); a wheel's C(libX.so.N) gets the
    C(libX.so) development link it lacks.
  - Unpacks into C(<dest>.partial) and renames it into place, so an interrupted run leaves no half directory.
  - Nothing happens when O(dest) already holds a manifest; a different archive is never unpacked over it.
author:
  - dlbox.stack developers (@dlbox)
options:
  src:
    description: The archive on the host (C(.tar.xz), C(.tar.gz), C(.tar) or C(.whl)).
    type: path
    required: true
  dest:
    description: The versioned directory to create, for example C(/opt/cudnn/9.10.2.21-cuda12).
    type: path
    required: true
  version:
    description: The cuDNN version the archive holds; recorded in the manifest.
    type: str
    required: true
attributes:
  check_mode:
    support: full
    description: Reports whether it would unpack; writes nothing.
  diff_mode:
    support: none
    description: No diff.
"""

EXAMPLES = r"""
- name: Lay the wheel out
  dlbox.stack.cudnn_unpack:
    src: /var/cache/dlbox/cudnn/nvidia_cudnn_cu12-9.10.2.21-py3-none-manylinux_2_27_x86_64.whl
    dest: /opt/cudnn/9.10.2.21-cuda12
    version: "9.10.2.21"
"""

RETURN = r"""
manifest:
  description: The manifest of O(dest) (the existing one when nothing was unpacked).
  returned: always
  type: dict
  sample: {version: "9.10.2.21", kind: wheel, source: nvidia_cudnn_cu12-9.10.2.21-py3-none-manylinux_2_27_x86_64.whl,
           sha256: 9494..., layout: "dlbox.stack cudnn: include/, lib/, LICENSE"}
"""

import hashlib
import json
import os
import shutil
import tarfile
import zipfile

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dlbox.stack.plugins.module_utils._cudnn import archive_layout, dev_links

MANIFEST = "dlbox-manifest.json"
LAYOUT = "dlbox.stack cudnn: include/ (headers), lib/ (libraries, linked through /etc/ld.so.conf.d), LICENSE"


def _sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _copy_stream(source, target, mode):
    with open(target, "wb") as out:
        shutil.copyfileobj(source, out, 1 << 20)
    os.chmod(target, mode)


def unpack_wheel(src, stage):
    with zipfile.ZipFile(src) as archive:
        layout = archive_layout(archive.namelist())
        for name, target in layout.items():
            info = archive.getinfo(name)
            if info.is_dir():
                continue
            path = os.path.join(stage, target)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with archive.open(info) as source:
                _copy_stream(source, path, 0o755 if target.startswith("lib/") else 0o644)
    lib = os.path.join(stage, "lib")
    for link, name in dev_links(os.listdir(lib)).items():
        os.symlink(name, os.path.join(lib, link))
    return "wheel"


def unpack_tar(src, stage):
    with tarfile.open(src) as archive:
        members = {m.name: m for m in archive.getmembers()}
        layout = archive_layout(list(members))
        for name, target in layout.items():
            member = members[name]
            path = os.path.join(stage, target)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            if member.issym():
                link = member.linkname
                if "/" in link or link in ("", ".", ".."):
                    raise ValueError("a link in the archive leaves its folder: %s -> %s" % (name, link))
                os.symlink(link, path)
            elif member.isfile():
                source = archive.extractfile(member)
                _copy_stream(source, path, 0o755 if target.startswith("lib/") else 0o644)
    return "tarball"


def main():
    module = AnsibleModule(
        argument_spec=dict(
            src=dict(type="path", required=True),
            dest=dict(type="path", required=True),
            version=dict(type="str", required=True),
        ),
        supports_check_mode=True,
    )
    src, dest, version = module.params["src"], module.params["dest"].rstrip("/"), module.params["version"]
    manifest_path = os.path.join(dest, MANIFEST)
    if os.path.exists(manifest_path):
        with open(manifest_path) as handle:
            module.exit_json(changed=False, manifest=json.load(handle))
    if os.path.exists(dest):
        module.fail_json(msg="%s exists without %s: not unpacking over something this role did not lay out; "
                             "move it away first" % (dest, MANIFEST))
    if not os.path.isfile(src):
        if module.check_mode:
            module.exit_json(changed=True, manifest={})
        module.fail_json(msg="the archive %s does not exist" % src)
    manifest = {"version": version, "source": os.path.basename(src), "sha256": _sha256(src), "layout": LAYOUT}
    if module.check_mode:
        module.exit_json(changed=True, manifest=manifest)
    stage = dest + ".partial"
    shutil.rmtree(stage, ignore_errors=True)
    os.makedirs(stage, mode=0o755)
    try:
        if src.endswith(".whl"):
            manifest["kind"] = unpack_wheel(src, stage)
        else:
            manifest["kind"] = unpack_tar(src, stage)
        for folder, _dirs, _files in os.walk(stage):
            os.chmod(folder, 0o755)
        with open(os.path.join(stage, MANIFEST), "w") as handle:
            json.dump(manifest, handle, indent=2, sort_keys=True)
            handle.write("\n")
        os.rename(stage, dest)
    except (ValueError, OSError, tarfile.TarError, zipfile.BadZipfile) as exc:
        shutil.rmtree(stage, ignore_errors=True)
        module.fail_json(msg="cannot lay out %s: %s; nothing was installed" % (src, exc))
    module.exit_json(changed=True, manifest=manifest)


if __name__ == "__main__":
    main()
