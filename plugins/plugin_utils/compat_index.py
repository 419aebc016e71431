# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The index of the compatibility data: sorted and keyed views the resolver reads (controller only)."""

from __future__ import annotations

from ansible_collections.dlbox.stack.plugins.plugin_utils.versions import at_least, at_most, major_of, parse_version, version_matches

__all__ = ["CompatIndex", "cc_covered"]


def cc_covered(cc, cc_min, cc_max):
    """cc within [cc_min, cc_max]; cc_max covers its whole major (binary compatibility). Unknown cc: True."""
    if cc is None:
        return True
    return at_least(cc, cc_min) and major_of(cc) <= major_of(cc_max)


class CompatIndex(object):
    """Sorted and keyed views of data/compat.yml, built once per loaded data (see
    ``compat_data.load_compat_index``) and passed to ``stack_resolver.resolve``, so that one plan costs little."""

    def __init__(self, data):
        self.data = data
        self.date = str(data.get("date", ""))
        self.archs = data.get("architectures") or {}
        cuda = data.get("cuda") or {}
        self.minor_compat = {int(e["major"]): e for e in cuda.get("minor_compat") or []}
        self.cuda = sorted(cuda.get("releases") or [], key=lambda e: parse_version(e["version"]), reverse=True)
        self.cuda_never_released = [str(e["version"]) for e in cuda.get("never_released") or []]
        self.cuda_toolkit_package = cuda.get("toolkit_package")
        self.branches = sorted(data.get("driver_branches") or [], key=lambda e: int(e["branch"]), reverse=True)
        self.branch = {int(e["branch"]): e for e in self.branches}
        # the oldest driver branch and CUDA release the data covers: older ones are out of scope
        self.oldest_branch = int(self.branches[-1]["branch"]) if self.branches else None
        self.oldest_cuda = self.cuda[-1]["version"] if self.cuda else None
        self.cudnn = sorted(data.get("cudnn") or [], key=lambda e: parse_version(e["version"]), reverse=True)
        self.nccl = sorted(data.get("nccl") or [], key=lambda e: parse_version(e["version"]), reverse=True)
        pytorch = data.get("pytorch") or {}
        self.pt_base = str(pytorch.get("index_url_base") or "").rstrip("/")
        self.pytorch = sorted(pytorch.get("releases") or [], key=lambda e: parse_version(e["version"]), reverse=True)
        self.variant_cuda = {}  # "cu128" -> "12.8": the CUDA of a PyTorch build name
        for rel in self.pytorch:
            for variant in rel.get("variants") or []:
                self.variant_cuda.setdefault(variant["name"], str(variant["cuda"]))
        self.tensorflow = sorted(data.get("tensorflow") or [], key=lambda e: parse_version(e["version"]), reverse=True)
        self.jetpack = sorted(data.get("jetpack") or [], key=lambda e: parse_version(e["version"]), reverse=True)
        self.jetson_pytorch = data.get("jetson_pytorch") or {}
        osdata = data.get("os") or {}
        self.distros = osdata.get("distros") or {}
        self.default_python = osdata.get("default_python")
        self.default_driver_method = osdata.get("default_driver_method")
        self.machines = data.get("machines") or {}
        self.distro_drivers = (data.get("distro_drivers") or {}).get("distros") or {}
        self.fabric = data.get("fabric_manager") or {}
        self.driver_packages = data.get("driver_packages") or {}
        self.driver_names = data.get("driver_package_names") or {}
        self.kernel_modules = data.get("kernel_modules") or {}

    def cuda_release(self, spec):
        """The CUDA release a spec names ("12.4", "12.4.1"), or None."""
        for rel in self.cuda:
            if version_matches(rel["version"], spec) or version_matches(spec, rel["version"]):
                if len(parse_version(spec)) <= 2 or any(
                    version_matches(spec, u["version"]) for u in rel.get("updates") or []
                ):
                    return rel
        return None

    def arch_for_cc(self, cc):
        for key, arch in self.archs.items():
            if at_least(cc, arch["cc_min"]) and at_most(cc, arch["cc_max"]):
                return key
        return None

    def first_open_modules_arch(self):
        """The oldest architecture the open kernel modules support (by cc_min), or None."""
        allowed = [a for a in self.archs.values() if a.get("open_modules") in ("allowed", "required")]
        return min(allowed, key=lambda a: parse_version(a["cc_min"])) if allowed else None

    def last_cudnn_for(self, cc):
        """The newest cuDNN whose CC range covers ``cc``, or None."""
        return next((e for e in self.cudnn if cc_covered(cc, e["cc_min"], e["cc_max"])), None)
