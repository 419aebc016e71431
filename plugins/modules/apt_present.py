#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: apt_present
short_description: M(ansible.builtin.apt) with O(ansible.builtin.apt#module:state=present), asked only for what dpkg lacks
version_added: "0.2.0"
description:
  - Takes the options of M(ansible.builtin.apt). Before the apt module runs, one C(dpkg-query) through the connection's
    shell (no module, no Python on the host) reads which of the named packages are installed, at which version, and
    which apt marked as installed automatically (C(/var/lib/apt/extended_states)). The apt module then runs, with the
    same options, for the packages still missing (or installed at another exact version, or marked automatic); when
    none is, it does not run and the task reports no change.
  - M(ansible.builtin.apt) re-reads every apt preferences file once per named package even when each one is installed;
    on a host whose preferences hold globs (the driver's branch pin, NVIDIA's repository) a task that changed nothing
    took 5 to 14 seconds, and a server's idempotent run had 17 of them.
  - Only plain names and names with an exact version (C(name=1.2-1)) are answered by dpkg. A version glob
    (C(name=1.2-*)) or comparison, a name glob, an architecture or a path sends the whole list to apt as it is (the apt
    module upgrades a glob to a newer matching version, which dpkg cannot know); so does O(ansible.builtin.apt#module:state)
    other than C(present), or any of C(update_cache), C(upgrade), C(autoremove), C(autoclean), C(clean),
    C(only_upgrade), C(purge).
  - With O(ansible.builtin.apt#module:deb), the file's package and version (C(dpkg-deb --show)) are asked of dpkg the same
    way.
author:
  - dlbox.stack developers (@dlbox)
options:
  name:
    description:
      - The packages, as for M(ansible.builtin.apt) (a list, or a comma-separated string); aliases C(pkg) and
        C(package). Every other option of M(ansible.builtin.apt) is accepted and passed on unchanged.
    type: raw
  deb:
    description:
      - A C(.deb) file on the host, as for M(ansible.builtin.apt).
    type: path
  state:
    description:
      - Only C(present) is answered by dpkg; any other state goes to M(ansible.builtin.apt) as it is.
    type: str
    default: present
attributes:
  check_mode:
    support: full
    description: The dpkg probe only reads; the apt module runs in check mode as it would.
  diff_mode:
    support: none
    description: As M(ansible.builtin.apt).
notes:
  - An action plugin around M(ansible.builtin.apt); the host needs what that module needs (C(python3-apt)) only when
    a package is missing.
seealso:
  - module: ansible.builtin.apt
"""

EXAMPLES = r"""
- name: Install the driver packages (nothing runs apt when they are there)
  dlbox.stack.apt_present:
    name: [nvidia-driver-580-server, nvidia-fabricmanager-580]
    install_recommends: false
"""

RETURN = r"""
dpkg_answered:
  description: True when dpkg showed every package installed and the apt module did not run.
  returned: always
  type: bool
  sample: true
cache_updated:
  description: As M(ansible.builtin.apt); false when dpkg answered.
  returned: success
  type: bool
  sample: false
"""
