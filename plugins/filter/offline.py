# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of offline mode (dlbox_offline): ``dlbox.stack.offline_needs``, ``dlbox.stack.offline_check``, the vendor
roles' requests (``offline_nccl_request``, ``offline_container_toolkit_request``, ``offline_docker_request``),
``dlbox.stack.offline_resolve_picks`` and ``dlbox.stack.python_env_apt``."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.dlbox.stack.plugins.plugin_utils.lazy_import import LazyModule

_offline = LazyModule("plugin_utils.offline")


def offline_needs(workstation, packages, python_env=None, vendor=None):
    """What one plan needs from the mirror folder (see plugin_utils.offline.needs)."""
    try:
        return _offline.needs(workstation, list(packages or []), python_env, vendor)
    except ValueError as exc:
        raise AnsibleFilterError("offline_needs: %s" % exc)


def offline_check(need, mirror, installed="", release=""):
    """Every artifact the mirror folder lacks for `need` (see plugin_utils.offline.check)."""
    if not isinstance(need, dict) or not isinstance(mirror, dict):
        raise AnsibleFilterError("offline_check: expected offline_needs's result and the folder as mappings")
    return _offline.check(need, mirror, installed or "", release or "")


def python_env_apt(environments, interpreters=None, install_python=True, build_tools=True, compiler_packages=None):
    """python_env's own apt packages for its decided environments (see plugin_utils.offline.python_env_apt)."""
    if not isinstance(environments, list) or not all(isinstance(e, dict) for e in environments):
        raise AnsibleFilterError("python_env_apt: expected python_env_plan's environments (a list of mappings)")
    return _offline.python_env_apt(environments, interpreters or {}, install_python, build_tools,
                                   ["g++"] if compiler_packages is None else list(compiler_packages))


def offline_nccl_request(run, install=True, version="", plan=None, cuda_version="", toolkits=None, default_toolkit="",
                         packages=None):
    """What the nccl role installs, before any toolkit is there (see plugin_utils.offline.nccl_request)."""
    if not isinstance(toolkits or [], list) or not isinstance(packages or [], list):
        raise AnsibleFilterError("offline_nccl_request: toolkits and packages must be lists")
    return _offline.nccl_request(bool(run), bool(install), str(version or ""), plan, str(cuda_version or ""),
                                 list(toolkits or []), str(default_toolkit or ""), list(packages or []))


def offline_container_toolkit_request(run, source=None, version="", has_plan=True, packages=None, prereqs=None):
    """What the nvidia_container_toolkit role installs (see plugin_utils.offline.container_toolkit_request)."""
    if not isinstance(packages or [], list) or not isinstance(prereqs or [], list):
        raise AnsibleFilterError("offline_container_toolkit_request: packages and prereqs must be lists")
    return _offline.container_toolkit_request(bool(run), source, str(version or ""), bool(has_plan),
                                              list(packages or []), list(prereqs or []))


def offline_docker_request(run, source="docker-ce", ce_packages=None, ce_version="", pinned=None,
                           distribution_packages=None, prereqs=None):
    """What the docker role installs (see plugin_utils.offline.docker_request)."""
    lists = (ce_packages or [], pinned or [], distribution_packages or [], prereqs or [])
    if not all(isinstance(item, list) for item in lists):
        raise AnsibleFilterError("offline_docker_request: the package arguments must be lists")
    return _offline.docker_request(bool(run), str(source or ""), *[list(item) for item in lists[:1]],
                                   ce_version=str(ce_version or ""), pinned=lists[1], distribution_packages=lists[2],
                                   prereqs=lists[3])


def offline_resolve_picks(need, versions):
    """offline_needs's result with each pick made from the repository's candidates (see
    plugin_utils.offline.resolve_picks)."""
    if not isinstance(need, dict) or not isinstance(versions, dict):
        raise AnsibleFilterError("offline_resolve_picks: expected offline_needs's result and {role: versions}")
    return _offline.resolve_picks(need, versions)


class FilterModule(object):
    def filters(self):
        return {"offline_needs": offline_needs, "offline_check": offline_check, "python_env_apt": python_env_apt,
                "offline_nccl_request": offline_nccl_request, "offline_resolve_picks": offline_resolve_picks,
                "offline_container_toolkit_request": offline_container_toolkit_request,
                "offline_docker_request": offline_docker_request}
