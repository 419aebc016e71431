# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The nccl role. needs(given, plan, host, request, hardware, run, toolkits, default_toolkit) -> the role's rules
before any toolkit is installed (offline.nccl_request): {"pick": {packages, version, cuda}} (the build is picked
from the repository's candidates later, as the role picks it), {"nothing": why} or {"error": why}.
toolkits: the CUDA versions the cuda role installs in the same run and those the host has; default_toolkit
the one /usr/local/cuda will be."""

from __future__ import annotations

from ansible_collections.dlbox.stack.plugins.plugin_utils import offline, role_plan
from ansible_collections.dlbox.stack.plugins.plugin_utils.roles import _spec


def _bool(value):
    return value if isinstance(value, bool) else str(value).strip().lower() in ("1", "true", "yes", "on", "y", "t")


def needs(given=None, plan=None, host=None, request=None, hardware=None, run=True, toolkits=(), default_toolkit="",
          data_path=None):
    opts = _spec.options("nccl", given)
    got = role_plan.role_plan("nccl", plan, host=host or {}, request=request or {}, hardware=hardware,
                              data_path=data_path)
    planned = got["stack"].get("nccl")
    packages = list(opts["nccl_packages"] or []) or role_plan.role_data("nccl", got["data"])["packages"]
    return offline.nccl_request(bool(run), _bool(opts["nccl_install"]), str(opts["nccl_version"]),
                                planned if isinstance(planned, dict) else None, str(opts["nccl_cuda_version"]),
                                list(toolkits or []), str(default_toolkit or ""), packages)
