# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cudnn role's decision is ``dlbox.stack.role_decide('cudnn', ...)`` (plugin_utils/roles/cudnn.py): the selection,
the resolver's check, the other cuDNN on the linker path (its ``foreign``) and the installed one's problems.

``cudnn_selection`` and ``cudnn_problems`` are no longer public filters (issue 47: one filter reaches every role's
decision); the functions stay for the tests written against them, and run the same code as the role (module_utils
``_cudnn``).
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.dlbox.stack.plugins.plugin_utils.lazy_import import LazyModule

_cudnn = LazyModule("module_utils._cudnn")
_compat_data = LazyModule("plugin_utils.compat_data")


def cudnn_selection(toolkits, version, cuda_major="", plan_cuda="", method="nvidia_repo", arch="x86_64",
                    install_root="/opt/cudnn", version_from="cudnn_version", data_path=None):
    """The cuDNN build for the installed CUDA toolkits, with NVIDIA's names from data/compat.yml (``cudnn``,
    ``cudnn_names``); ``errors`` says why it does not fit, naming the variable."""
    try:
        data = _compat_data.load_compat(data_path)
    except _compat_data.CompatDataError as exc:
        raise AnsibleFilterError(str(exc)) from exc
    if "cudnn_names" not in data:
        raise AnsibleFilterError("data/compat.yml has no cudnn_names section (the cudnn role reads NVIDIA's names there)")
    return _cudnn.select(data.get("cudnn") or [], data["cudnn_names"], version, toolkits or [], str(cuda_major or ""),
                         str(plan_cuda or ""), method, arch, install_root, version_from)


def cudnn_problems(facts, selection, stage="verify"):
    """What is wrong with an installed cuDNN (``stage=verify``), or which other cuDNN the linker already has for
    the soname (``stage=preflight``): a list of sentences, empty when right."""
    if stage == "preflight":
        foreign = _cudnn.foreign_libraries(facts.get("linker_paths") or [], selection["lib_dir"], selection["install_root"])
        return ["the linker already has %s at %s" % (selection["soname"], path) for path in foreign]
    if stage != "verify":
        raise AnsibleFilterError("cudnn_problems: stage must be verify or preflight, not %r" % stage)
    return _cudnn.check_install(facts, selection)


class FilterModule(object):
    """No public filter: see dlbox.stack.role_decide."""

    def filters(self):
        return {}
