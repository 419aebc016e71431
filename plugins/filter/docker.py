# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The docker role's decision is ``dlbox.stack.role_decide('docker', ...)`` (plugin_utils/roles/docker.py), the iptables
raw table question included (its ``iptables_raw``).

``docker_iptables_raw`` is no longer a public filter (issue 47: one filter reaches every role's decision); the function
stays for the tests written against it, and runs the same code as the role (``iptables_raw_plan``).
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.dlbox.stack.plugins.plugin_utils.lazy_import import LazyModule

_docker = LazyModule("plugin_utils.roles.docker")
_vendor = LazyModule("plugin_utils.roles._vendor")


def docker_iptables_raw(probe, installed="", pinned="", workaround=True, data_path=None):
    """Nothing, the DOCKER_INSECURE_NO_IPTABLES_RAW drop-in, or a refusal (see plugin_utils.roles.docker)."""
    if probe is not None and not isinstance(probe, str):
        raise AnsibleFilterError("docker_iptables_raw: expected the probe's output as text")
    if not isinstance(workaround, bool):
        raise AnsibleFilterError("docker_iptables_raw: workaround (docker_iptables_raw_workaround) must be a boolean")
    try:
        data = _docker.iptables_raw_data(data_path)
    except _vendor.VendorDataError as exc:
        raise AnsibleFilterError(str(exc)) from exc
    return _docker.iptables_raw_plan(probe or "", installed=str(installed or ""), pinned=str(pinned or ""),
                                     workaround=workaround, data=data)


class FilterModule(object):
    """No public filter: see dlbox.stack.role_decide."""

    def filters(self):
        return {}
