# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The retired filter functions the parity tests compare the role modules with (rt47c L6: they lived in
plugins/filter/cudnn.py, docker.py and gpu_settings.py, which exported no filter, kept only for these tests; issue 47
counts code used only by tests as dead). Their bodies are unchanged: each calls the same code as the role's module,
so a test that compares the two still fails when the module stops doing what the retired filter's callers got."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.dlbox.stack.plugins.plugin_utils.lazy_import import LazyModule

_cudnn = LazyModule("module_utils._cudnn")
_compat_data = LazyModule("plugin_utils.compat_data")
_docker = LazyModule("plugin_utils.roles.docker")
_vendor = LazyModule("plugin_utils.roles._vendor")
_gpu_settings_role = LazyModule("plugin_utils.roles.gpu_settings")


# from plugins/filter/cudnn.py

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


# from plugins/filter/docker.py

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


# from plugins/filter/gpu_settings.py

def gpu_settings_plan(smi_text, request, mig_config=None, mig_selected="", mig_parted=None):
    """``nvidia-smi -q -x`` (or ``-q``) and the role's variables -> the plan (roles.gpu_settings.settings_plan)."""
    return _gpu_settings_role.settings_plan(smi_text or "", dict(request or {}), mig_config=mig_config,
                                            mig_selected=mig_selected, mig_parted=mig_parted)
