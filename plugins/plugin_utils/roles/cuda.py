# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cuda role. needs(given, plan, host, request, hardware, run) -> what it installs from NVIDIA's CUDA
repository, decided by the role's own decision (cuda_plan.decide, as the cuda_plan filter runs it) with its
options (argument specs + the inventory's values): {"apt": [...], "toolkits": [...], "default": {...} or None}.
apt is empty where the role does not run (run), with another method than nvidia_repo, or when the plan
has no toolkit; toolkits and default are the decision's (cudnn and nccl read them)."""

from __future__ import annotations

from ansible_collections.dlbox.stack.plugins.plugin_utils import cuda_plan, role_plan
from ansible_collections.dlbox.stack.plugins.plugin_utils.roles import _spec


def decide_offline(given=None, plan=None, host=None, request=None, hardware=None, data_path=None):
    """The cuda role's decision before anything is installed (no toolkit, no compiler, no verification)."""
    opts = _spec.options("cuda", given)
    options = {"method": opts["cuda_method"], "versions": opts["cuda_versions"], "default": opts["cuda_default_version"],
               "compat": opts["cuda_compat"], "remove_unlisted": False, "local_repo_debs": {}, "verify": False,
               "verify_archs": [], "host_compiler": "", "wsl": False}
    got = role_plan.role_plan("cuda", plan, host=host or {}, request=request or {}, hardware=hardware, data_path=data_path)

    def resolve(version):
        return role_plan.role_plan("cuda", got["plan"], host=host or {}, request=request or {}, hardware=hardware,
                                   data_path=data_path, overrides={"cuda": ("cuda_versions", version)})["plan"]

    return opts["cuda_method"], cuda_plan.decide(got["data"], got["plan"], options, resolve=resolve, installed={},
                                                 compilers={})


def needs(given=None, plan=None, host=None, request=None, hardware=None, run=True, data_path=None):
    method, decided = decide_offline(given, plan, host, request, hardware, data_path)
    toolkits = decided.get("toolkits") or []
    apt = [p for toolkit in toolkits for p in (toolkit.get("packages") or [])] \
        if run and method == "nvidia_repo" and toolkits else []
    return {"apt": apt, "toolkits": toolkits, "default": decided.get("default")}
