#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: docker_daemon_json
short_description: Merge settings into Docker's daemon.json without losing anyone's keys
version_added: "0.1.0"
description:
  - Reads C(/etc/docker/daemon.json), merges O(settings) into it (mappings key by key, other values
    replaced) and writes the result only when the parsed content changes. Every key that is already
    there and not named in O(settings) stays as it is.
  - Refuses, leaving the file byte-for-byte untouched, a file that is not valid JSON; a C(hosts) key
    while the service already passes C(-H); a C(default-runtime) that no C(runtimes) entry defines; and
    a C(data-root) change while the old data root still holds images, containers or volumes (unless
    O(data_root_move=true)).
  - Where the engine has C(dockerd --validate) (Docker 23 and later), the merged file is validated
    before it replaces the old one. Otherwise RV(validated) is V(false) and the caller must restart
    the daemon and roll back to RV(backup_file) when it does not come up (the C(dlbox.stack.docker)
    role does that).
author:
  - dlbox.stack developers (@dlbox)
options:
  path:
    description: The daemon configuration file.
    type: path
    default: /etc/docker/daemon.json
  settings:
    description:
      - Keys to merge into the file. Nested mappings (C(runtimes), C(log-opts), C(features)) are merged
        key by key; a value of V(null) leaves that key as it is.
    type: dict
    default: {}
  log_max_size:
    description:
      - Log rotation C(max-size) to merge into C(log-opts), only when the effective C(log-driver) is
        C(json-file) (also when unset) or C(local). Empty leaves it as it is.
    type: str
    default: ""
  log_max_file:
    description: Log rotation C(max-file), under the same condition as O(log_max_size). V(0) leaves it as it is.
    type: int
    default: 0
  service_execstart:
    description:
      - The docker service's command line (C(systemctl show -p ExecStart docker)). When it passes C(-H)
        or C(--host), a C(hosts) key is refused. Omitted means the packaged unit, which passes C(-H fd://).
    type: str
  data_root_move:
    description:
      - Allow a C(data-root) change while the old data root still holds data. The caller copies the data
        (RV(data_root.move) says when); this module only writes the file.
    type: bool
    default: false
  validate:
    description:
      - V(auto) validates with C(dockerd --validate --config-file) when the engine supports it;
        V(never) skips that.
    type: str
    choices: [auto, never]
    default: auto
  dockerd_path:
    description: Name or path of C(dockerd), for validation.
    type: str
    default: dockerd
  names:
    description:
      - daemon.json key -> the variable that sets it, used in refusal messages (key C(*) for the rest).
    type: dict
    default: {}
attributes:
  check_mode:
    support: full
    description: Reports what would change and every refusal; writes and validates nothing.
  diff_mode:
    support: full
    description: Shows the old and the new file.
notes:
  - Backups of replaced files are kept beside the file (C(daemon.json.<pid>.<timestamp>~)).
"""

EXAMPLES = r"""
- name: Rotate logs and enable live restore, keeping every other key
  dlbox.stack.docker_daemon_json:
    settings:
      live-restore: true
    log_max_size: 100m
    log_max_file: 3

- name: Move the data root to a data disk, copying what the old one holds
  dlbox.stack.docker_daemon_json:
    settings:
      data-root: /data/docker
    data_root_move: true
    names:
      data-root: docker_data_root
"""

RETURN = r"""
config:
  description: The merged configuration (what the file holds now, or would hold in check mode).
  returned: success
  type: dict
  sample: {"log-level": "warn", "live-restore": true, "log-opts": {"max-size": "100m", "max-file": "3"}}
previous:
  description: The configuration the file held before (V({}) when there was none).
  returned: success
  type: dict
backup_file:
  description: Copy of the replaced file, for a rollback; empty when nothing was replaced.
  returned: success
  type: str
  sample: /etc/docker/daemon.json.1234.2026-11-30@20:00:00~
created:
  description: V(true) when the file did not exist before.
  returned: success
  type: bool
validated:
  description: V(true) when C(dockerd --validate) accepted the new file before it was swapped in.
  returned: success
  type: bool
validation:
  description: Why the file was or was not validated, in words.
  returned: success
  type: str
  sample: "dockerd 20.10.24 has no --validate: restart the daemon and roll back if it does not come up"
data_root:
  description: The data root change, when there is one; C(move) says the caller must copy the data.
  returned: success
  type: dict
  sample: {"old": "/var/lib/docker", "new": "/data/docker", "old_holds_data": true, "move": true}
  contains:
    old:
      description: The data root before.
      type: str
    new:
      description: The data root after.
      type: str
    old_holds_data:
      description: Whether the old data root holds images, containers or volumes.
      type: bool
    move:
      description: V(true) when the caller must copy the old data root over (O(data_root_move=true) and data present).
      type: bool
"""

import os
import tempfile

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dlbox.stack.plugins.module_utils._daemon_json import DaemonJsonError, plan


def _holds_data(root):
    """True when Docker's data root has containers, volumes or image metadata in it."""
    def entries(*parts):
        path = os.path.join(root, *parts)
        try:
            return [e for e in os.listdir(path) if e not in ("metadata.db", "backingFsBlockDev")]
        except OSError:
            return []

    if entries("containers") or entries("volumes"):
        return True
    for driver in entries("image"):
        if entries("image", driver, "imagedb", "content", "sha256"):
            return True
    return False


def _can_validate(module, dockerd):
    path = module.get_bin_path(dockerd) if not os.path.isabs(dockerd) else (dockerd if os.path.exists(dockerd) else None)
    if not path:
        return None, "dockerd is not installed yet: nothing to validate with"
    dummy, out, err = module.run_command([path, "--help"])
    if "--validate" in out + err:
        return path, ""
    dummy, out, err = module.run_command([path, "--version"])
    return None, "%s has no --validate: restart the daemon and roll back if it does not come up" % (out.strip() or "dockerd")


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", default="/etc/docker/daemon.json"),
            settings=dict(type="dict", default={}),
            log_max_size=dict(type="str", default=""),
            log_max_file=dict(type="int", default=0),
            service_execstart=dict(type="str"),
            data_root_move=dict(type="bool", default=False),
            validate=dict(type="str", choices=["auto", "never"], default="auto"),
            dockerd_path=dict(type="str", default="dockerd"),
            names=dict(type="dict", default={}),
        ),
        supports_check_mode=True,
    )
    params = module.params
    path = params["path"]
    exists = os.path.exists(path)
    text = ""
    if exists:
        with open(path, "rb") as handle:
            text = handle.read().decode("utf-8", errors="replace")
    try:
        decided = plan(text, params["settings"], params["log_max_size"], params["log_max_file"],
                       params["service_execstart"], _holds_data, params["data_root_move"], params["names"], path)
    except DaemonJsonError as exc:
        module.fail_json(msg=str(exc), path=path)

    result = dict(changed=decided["changed"], config=decided["config"], previous=decided["current"], backup_file="",
                  created=not exists, validated=False, validation="nothing changed", data_root=decided["data_root"])
    if module._diff and decided["changed"]:
        result["diff"] = {"before": text, "after": decided["text"], "before_header": path, "after_header": path}
    if not decided["changed"] or module.check_mode:
        if decided["changed"]:
            result["validation"] = "check mode: not validated"
        module.exit_json(**result)

    directory = os.path.dirname(path) or "."
    if not os.path.isdir(directory):
        os.makedirs(directory, 0o755)
    fd, tmp = tempfile.mkstemp(prefix=".daemon.json.", dir=directory)
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(decided["text"])
        os.chmod(tmp, (os.stat(path).st_mode & 0o7777) if exists else 0o644)
        if params["validate"] == "auto":
            dockerd, why = _can_validate(module, params["dockerd_path"])
            if dockerd:
                rc, out, err = module.run_command([dockerd, "--validate", "--config-file", tmp])
                if rc != 0:
                    module.fail_json(msg="dockerd --validate rejected the merged %s: %s. Nothing was changed; check the "
                                         "keys you set (%s)." % (path, (err or out).strip(), ", ".join(sorted(params["names"].values()) or ["settings"])),
                                     config=decided["config"], path=path)
                result["validated"] = True
                result["validation"] = "dockerd --validate accepted the merged file"
            else:
                result["validation"] = why
        else:
            result["validation"] = "validation switched off (validate=never)"
        if exists:
            result["backup_file"] = module.backup_local(path)
        module.atomic_move(tmp, path)
        tmp = None
    finally:
        if tmp and os.path.exists(tmp):
            os.unlink(tmp)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
