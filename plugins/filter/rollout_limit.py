# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``dlbox.stack.rollout_limit_hosts``: the hosts that ``--limit`` keeps (``ansible_limit``), by Ansible's own rule.

The fleet summary lists every host of the site's groups that the limit keeps. The ``inventory_hostnames`` lookup
takes host patterns only: for ``--limit @site.retry`` (the retry file Ansible itself suggests) it matches nothing, and
the summary was empty. Here the limit goes through ``InventoryManager.subset``, as ansible-playbook's own ``--limit``
does: comma- or colon-separated patterns, and ``@file`` read as one host pattern per line, the path relative to the
current directory."""

from __future__ import annotations

from collections.abc import Mapping

from ansible.errors import AnsibleError, AnsibleFilterError
from ansible.inventory.manager import InventoryManager
from ansible.parsing.dataloader import DataLoader


def rollout_limit_hosts(groups, limit=None):
    """The hosts of ``groups`` (Ansible's ``groups``) that the limit ``limit`` keeps, in inventory order; no limit
    (None or empty): every host."""
    if not isinstance(groups, Mapping):
        raise AnsibleFilterError("rollout_limit_hosts: the input must be Ansible's groups (a mapping), not %r"
                                 % type(groups).__name__)
    manager = InventoryManager(DataLoader(), parse=False)
    for group, hosts in groups.items():
        manager.add_group(group)
        for host in hosts or []:
            manager.add_host(host, group=group)
    try:
        manager.subset(limit or None)
        return [host.name for host in manager.get_hosts("all")]
    except AnsibleError as exc:
        raise AnsibleFilterError("rollout_limit_hosts: the limit %r: %s" % (limit, exc)) from exc


class FilterModule(object):
    """dlbox.stack rollout limit filter."""

    def filters(self):
        return {"rollout_limit_hosts": rollout_limit_hosts}
