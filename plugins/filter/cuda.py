# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``dlbox.stack.cuda_plan`` of the ``cuda`` role."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.dlbox.stack.plugins.plugin_utils.lazy_import import LazyModule

_cuda_plan = LazyModule("plugin_utils.cuda_plan")
_role_plan = LazyModule("plugin_utils.role_plan")


def cuda_plan(options, plan, host=None, request=None, hardware=None, installed=None, compilers=None, data_path=None):
    """Decide the cuda role's toolkits, default, removals and verification from the plan (see plugin_utils.cuda_plan).

    ``plan``: ``dlbox_plan``, or None to resolve it once here (plugin_utils.role_plan) from ``host``, ``request``
    and ``hardware``."""
    if not isinstance(options, dict):
        raise AnsibleFilterError("cuda_plan: expected the role's options as a mapping")
    if plan is not None and (not isinstance(plan, dict) or "stack" not in plan):
        raise AnsibleFilterError("cuda_plan: expected the plan (dlbox_plan, the result of dlbox.stack.resolve_stack) or none")
    try:
        got = _role_plan.role_plan("cuda", plan, host=host, request=request, hardware=hardware, data_path=data_path)

        def resolve(version):
            return _role_plan.role_plan("cuda", got["plan"], host=host, request=request, hardware=hardware, data_path=data_path,
                                        overrides={"cuda": ("cuda_versions", version)})["plan"]

        return _cuda_plan.decide(got["data"], got["plan"], options, resolve=resolve, installed=installed, compilers=compilers)
    except _role_plan.RolePlanError as exc:
        raise AnsibleFilterError(str(exc)) from exc


def cuda_held_packages(dpkg_lines, versions):
    """dpkg-query's ``${db:Status-Abbrev} ${Package}`` lines and toolkit versions -> the packages to hold."""
    return _cuda_plan.held_packages(dpkg_lines, versions)


def cuda_distro_minimum(policies, minimum, os_key=""):
    """{package: ``apt-cache policy`` text} and the decision's ``distro.minimum`` -> the refusals (empty: all fit)."""
    if not isinstance(policies, dict):
        raise AnsibleFilterError("cuda_distro_minimum: expected {package: apt-cache policy text}")
    return _cuda_plan.distro_minimum_problems(minimum or [], policies, str(os_key or ""))


class FilterModule(object):
    def filters(self):
        return {"cuda_plan": cuda_plan, "cuda_held_packages": cuda_held_packages, "cuda_distro_minimum": cuda_distro_minimum}
