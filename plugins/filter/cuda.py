# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters ``dlbox.stack.cuda_held_packages`` and ``dlbox.stack.cuda_distro_minimum`` of the ``cuda`` role (its
decision: ``dlbox.stack.role_decide('cuda', ...)``, plugins/plugin_utils/roles/cuda.py)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.dlbox.stack.plugins.plugin_utils.lazy_import import LazyModule

_cuda_plan = LazyModule("plugin_utils.cuda_plan")


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
        return {"cuda_held_packages": cuda_held_packages, "cuda_distro_minimum": cuda_distro_minimum}
