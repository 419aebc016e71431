#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: apt_keyring
short_description: Write an apt Signed-By keyring only when the key is the one pinned by fingerprint
version_added: "0.1.0"
description:
  - Takes a repository's OpenPGP public key from O(url) or from O(content) (ASCII-armored or binary),
    computes the fingerprints of its primary keys from the key packets themselves (no C(gpg) needed,
    also in check mode) and writes it to O(dest) as a binary keyring for apt's C(Signed-By) only when
    the file holds exactly the key O(fingerprint) names.
  - A key with another fingerprint, or a file that holds another key besides the pinned one, is refused
    and O(dest) is left byte-for-byte as it was (a keyring that was trusted before stays trusted).
  - O(dest) is rewritten only when its content would change.
author:
  - dlbox.stack developers (@dlbox)
options:
  dest:
    description:
      - The keyring to write. apt reads a C(*.asc) file as ASCII-armored (the key is written armored, as it
        came when it came armored) and any other name as binary (C(*.gpg), the dearmored packets).
    type: path
    required: true
  url:
    description: Where to download the key from (C(http://), C(https://) or C(file://)).
    type: str
  content:
    description: The key itself (ASCII-armored text), for example read from a file on the controller.
    type: str
  fingerprint:
    description: The full fingerprint (40 or 64 hex digits, spaces allowed) the key must have.
    type: str
    required: true
  mode:
    description: File mode of O(dest).
    type: str
    default: "0644"
  timeout:
    description: Download timeout in seconds.
    type: int
    default: 30
  validate_certs:
    description: Verify the TLS certificate of O(url).
    type: bool
    default: true
  names:
    description:
      - Option -> the role variable that sets it (C(url), C(content), C(fingerprint)), used in error
        messages so that they name what the user has to change.
    type: dict
    default: {}
attributes:
  check_mode:
    support: full
    description: Downloads and checks the key, reports whether O(dest) would change, writes nothing.
  diff_mode:
    support: none
    description: A keyring is binary; the change is reported through RV(fingerprints) and C(changed).
notes:
  - The environment's proxy variables (C(https_proxy), C(no_proxy)) apply to the download.
"""

EXAMPLES = r"""
- name: Trust NVIDIA's CUDA repository key, and nothing else
  dlbox.stack.apt_keyring:
    url: https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/3bf863cc.pub
    fingerprint: "{{ cuda_key_fingerprint }}"  # the key's full fingerprint (NVIDIA's: data/repositories.yml)
    dest: /etc/apt/keyrings/dlbox-cuda-archive-keyring.gpg

- name: The same key from a file on the controller
  dlbox.stack.apt_keyring:
    content: "{{ lookup('ansible.builtin.file', 'files/3bf863cc.pub') }}"
    fingerprint: "{{ cuda_key_fingerprint }}"  # spaces allowed, as gpg prints it in groups of four
    dest: /etc/apt/keyrings/dlbox-cuda-archive-keyring.gpg
"""

RETURN = r"""
fingerprints:
  description: The fingerprints of the primary keys found (one, the pinned one, when the module succeeds).
  returned: when a key was read
  type: list
  elements: str
  sample: ["0123456789ABCDEF0123456789ABCDEF01234567"]
dest:
  description: The keyring written (or that would be written in check mode).
  returned: always
  type: str
  sample: /etc/apt/keyrings/dlbox-cuda-archive-keyring.gpg
created:
  description: V(true) when O(dest) did not exist before.
  returned: success
  type: bool
"""

import os
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_bytes, to_native
from ansible.module_utils.urls import fetch_url

from ansible_collections.dlbox.stack.plugins.module_utils._apt_keyring import AptKeyError, check_key, normalise_fingerprint


def _name(module, option):
    return module.params["names"].get(option) or option


def _download(module):
    url = module.params["url"]
    if url.startswith("file://"):
        try:
            with open(url[len("file://"):], "rb") as handle:
                return handle.read()
        except OSError as exc:
            module.fail_json(msg="Could not read the key at %s (%s): %s" % (url, _name(module, "url"), to_native(exc)),
                             dest=module.params["dest"])
    response, info = fetch_url(module, url, timeout=module.params["timeout"])
    if response is None or info.get("status") != 200:
        module.fail_json(msg="Could not download the key from %s (%s): HTTP %s %s" % (
            url, _name(module, "url"), info.get("status"), info.get("msg", "")), dest=module.params["dest"])
    return response.read()


def main():
    module = AnsibleModule(
        argument_spec=dict(
            dest=dict(type="path", required=True),
            url=dict(type="str"),
            content=dict(type="str", no_log=False),
            fingerprint=dict(type="str", required=True),
            mode=dict(type="str", default="0644"),
            timeout=dict(type="int", default=30),
            validate_certs=dict(type="bool", default=True),
            names=dict(type="dict", default={}),
        ),
        mutually_exclusive=[("url", "content")],
        required_one_of=[("url", "content")],
        supports_check_mode=True,
    )
    dest = module.params["dest"]
    try:
        want = normalise_fingerprint(module.params["fingerprint"])
    except AptKeyError as exc:
        module.fail_json(msg="%s: %s" % (_name(module, "fingerprint"), exc), dest=dest)

    if module.params["url"]:
        data, source = _download(module), "the key at %s (%s)" % (module.params["url"], _name(module, "url"))
    else:
        data, source = to_bytes(module.params["content"]), "the key in %s" % _name(module, "content")
    try:
        keyring, found = check_key(data, want, armored=dest.endswith(".asc"))
    except AptKeyError as exc:
        module.fail_json(msg="Refused %s: %s (%s). %s was left as it was." % (
            source, exc, _name(module, "fingerprint"), dest), dest=dest)

    try:
        with open(dest, "rb") as handle:
            current = handle.read()
    except OSError:
        current = None
    mode = int(module.params["mode"], 8)
    changed = current != keyring
    if not changed:
        try:
            changed = (os.stat(dest).st_mode & 0o7777) != mode
        except OSError:
            changed = True
    if changed and not module.check_mode:
        directory = os.path.dirname(dest) or "."
        if not os.path.isdir(directory):
            os.makedirs(directory, 0o755)
        fd, tmp = tempfile.mkstemp(prefix=".dlbox-keyring-", dir=directory)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(keyring)
            os.chmod(tmp, mode)
            module.atomic_move(tmp, dest)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        os.chmod(dest, mode)
    module.exit_json(changed=changed, dest=dest, fingerprints=found, created=current is None)


if __name__ == "__main__":
    main()
