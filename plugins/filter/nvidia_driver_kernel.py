# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The nvidia_driver role's decisions after the install (plugin_utils.nvidia_driver_kernel): which kernels must have the
module and the verdict on modinfo (``nvidia_driver_module_check``), and what happens to nvidia-persistenced
(``nvidia_driver_persistence``)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.dlbox.stack.plugins.plugin_utils.lazy_import import LazyModule

_nk = LazyModule("plugin_utils.nvidia_driver_kernel")


def nvidia_driver_module_check(decided, running="", boot=None, build_kernels=None, dkms_kernels=None, modinfo=None, expected="",
                               headers=None):
    """``decided``: the role's plan (nvidia_driver_plan's result). ``boot``: nvidia_driver_facts' ``kernel`` read after
    the install (``running``, ``next_boot``, ``boot``). Without ``modinfo``: the kernels to ask; with it: the verdict too.
    ``headers``: {kernel: apt-cache show's exit status for linux-headers-<kernel>} (0: the archive has it; 100: not)."""
    if not isinstance(decided, dict) or not isinstance(decided.get("signing"), dict):
        raise AnsibleFilterError("nvidia_driver_module_check: expected the nvidia_driver plan (nvidia_driver_plan's result)")
    if modinfo is not None and not isinstance(modinfo, dict):
        raise AnsibleFilterError("nvidia_driver_module_check: modinfo must be nvidia_driver_facts' modinfo mapping")
    boot = boot if isinstance(boot, dict) else {}
    return _nk.module_check(decided["signing"].get("path"), bool(decided.get("build_only")), build_kernels or [], dkms_kernels or [],
                            boot.get("running") or running, boot.get("next_boot") or "", decided.get("pending_reboot_reason") or "",
                            modinfo, str(expected or ""),
                            {str(k): int(rc) == 0 for k, rc in (headers or {}).items() if rc is not None and str(rc) in ("0", "100")},
                            boot.get("boot") if "boot" in boot else None)


def nvidia_driver_persistence(unit_text, manage=False, build_only=False, installed="", sys_version="", state=None,
                              persistence_mode=True, unit_path="", check_mode=False, dropins=None, dropin_path="",
                              dropin_present=False):
    """``unit_text``: the shipped nvidia-persistenced.service ("" when systemd knows none)."""
    if state is not None and not isinstance(state, dict):
        raise AnsibleFilterError("nvidia_driver_persistence: state must be the fact nvidia_driver_state (a mapping) or none")
    loaded = _nk.loaded_module_version(sys_version, state)
    return _nk.persistence_daemon(bool(manage), bool(build_only), str(installed or ""), loaded, bool(persistence_mode),
                                  str(unit_text or ""), str(unit_path or ""), bool(check_mode),
                                  dict(dropins or {}), str(dropin_path or ""), bool(dropin_present))


def nvidia_driver_failure_logs(result):
    """The DKMS make.log paths a failed task's result names (``ansible_failed_result``)."""
    return _nk.failure_logs(result if isinstance(result, dict) else {})


def nvidia_driver_install_failure(result, tails=None):
    """The words of a failed install (``ansible_failed_result``): apt's, dpkg's and DKMS's error lines, the end of each
    make.log (``tails``: the registered loop results of ``tail`` on them), and ``dpkg --configure -a`` where dpkg left
    packages unconfigured."""
    return _nk.install_failure(result if isinstance(result, dict) else {}, list(tails or []))


class FilterModule(object):
    """dlbox.stack nvidia_driver_kernel filters."""

    def filters(self):
        return {"nvidia_driver_module_check": nvidia_driver_module_check,
                "nvidia_driver_failure_logs": nvidia_driver_failure_logs,
                "nvidia_driver_install_failure": nvidia_driver_install_failure,
                "nvidia_driver_persistence": nvidia_driver_persistence}
