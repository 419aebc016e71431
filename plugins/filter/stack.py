# -*- coding: utf-8 -*-
# Copyright: dlbox.stack contributors
# Apache License 2.0 (see galaxy.yml)
"""Filters ``dlbox.stack.resolve_stack`` and ``dlbox.stack.lookup_gpu``."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.dlbox.stack.plugins.module_utils import compat
from ansible_collections.dlbox.stack.plugins.plugin_utils.compat_data import CompatDataError, load_compat


def _data(data_path):
    try:
        return load_compat(data_path)
    except CompatDataError as exc:
        raise AnsibleFilterError(str(exc)) from exc


def resolve_stack(host, request=None, hardware=None, data_path=None):
    """Plan the driver/CUDA/cuDNN/NCCL/PyTorch/TensorFlow stack for a host.

    ``host`` is ``ansible_facts['dlbox_host']`` (may be empty when ``hardware`` is given);
    ``request`` pins parts of the stack (driver_branch, kernel_modules, cuda, cudnn, pytorch,
    pytorch_variant, tensorflow, python, jetpack); ``hardware`` ({gpus, nvswitch, os, arch,
    driver_version}) replaces detection, for planning without the machine; ``data_path`` points at
    another compat.yml. Returns the plan dict (ok, errors, warnings, notes, host, stack, data_date).
    """
    data = _data(data_path)
    if hardware:
        host = compat.host_from_hardware(data, hardware)
    if request is not None and not isinstance(request, dict):
        raise AnsibleFilterError("resolve_stack: request must be a mapping, not %s" % type(request).__name__)
    return compat.resolve(data, host or {}, request or {})


def lookup_gpu(name_or_pci_id, data_path=None):
    """Catalog entry for a GPU name ("RTX 4090") or PCI device id ("2684", "10de:2684"); None if unknown or ambiguous."""
    return compat.lookup_gpu(_data(data_path), name_or_pci_id)


class FilterModule(object):
    """dlbox.stack resolver filters."""

    def filters(self):
        return {"resolve_stack": resolve_stack, "lookup_gpu": lookup_gpu}
