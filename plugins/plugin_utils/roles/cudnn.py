# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cudnn role. needs(given, plan, toolkits, arch, run) -> {"apt": [name=version, ...]}: the cuDNN build
the role selects (module_utils._cudnn.select, as the cudnn_selection filter runs it) for the toolkits the cuda
role installs, from NVIDIA's CUDA repository; empty where the role does not run, with another method than
nvidia_repo, or when the selection is refused (the role's own preflight says why online). ``vendor()``:
the index its wheel method uses by default (PyPI's, from data/repositories.yml)."""

from __future__ import annotations

from ansible_collections.dlbox.stack.plugins.module_utils import _cudnn
from ansible_collections.dlbox.stack.plugins.plugin_utils.compat_data import load_compat
from ansible_collections.dlbox.stack.plugins.plugin_utils.roles import _spec, _vendor

INSTALL_ROOT = "/opt/cudnn"  # the names only; where it unpacks does not change what apt fetches


def vendor():
    """{"pypi": the root of PyPI's index} (data/repositories.yml), where the wheel method installs from by default."""
    return {"pypi": _vendor.index("pypi")}


def _planned(plan, part):
    stack = (plan or {}).get("stack") or {}
    return str(stack[part].get("version") or "") if isinstance(stack.get(part), dict) else ""


def needs(given=None, plan=None, toolkits=None, arch="x86_64", run=True, data_path=None):
    opts = _spec.options("cudnn", given)
    data = load_compat(data_path)
    # the toolkits newest first, as the role's cuda_facts lists them (sorted as text, as the YAML did)
    ordered = sorted(toolkits or [], key=lambda t: str(t.get("version")), reverse=True)
    selection = _cudnn.select(data.get("cudnn") or [], data["cudnn_names"],
                              str(opts["cudnn_version"] or "") or _planned(plan, "cudnn"), ordered,
                              str(opts["cudnn_cuda_major"] or ""), _planned(plan, "cuda"), opts["cudnn_method"], arch,
                              INSTALL_ROOT, "cudnn_version")
    fits = run and opts["cudnn_method"] == "nvidia_repo" and not selection.get("errors") and "apt" in selection
    return {"apt": list(selection["apt"]["install"]) if fits else []}
