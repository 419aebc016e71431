# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The nvidia_driver role's holds (plugin_utils.nvidia_driver_holds): what to hold, what to release
(``nvidia_driver_hold_changes``)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.dlbox.stack.plugins.plugin_utils.lazy_import import LazyModule

_nh = LazyModule("plugin_utils.nvidia_driver_holds")
_nu = LazyModule("plugin_utils.nvidia_driver_unattended")
_ku = LazyModule("module_utils.kernel")


def _names(value, what):
    if value is None:
        return []
    if isinstance(value, str):
        return value.split()
    if not isinstance(value, (list, tuple)):
        raise AnsibleFilterError("nvidia_driver_hold_changes: %s must be a list of package names" % what)
    return [str(v) for v in value]


def nvidia_driver_hold_changes(wanted, held=None, recorded=None, installed=None):
    """``wanted``: the holds the role wants (the plan's ``holds``, or a rollback's holds from before); ``held``:
    ``apt-mark showhold``'s lines; ``recorded``: what the role held before (its record; None: no record, the holds on
    driver packages are taken as the role's); ``installed``: dpkg's package names (None: not read)."""
    return _nh.hold_changes(_names(wanted, "wanted"), _names(held, "held"), None if recorded is None else _names(recorded, "recorded"),
                            None if installed is None else _names(installed, "installed"))


def nvidia_driver_kernel_without_module(simulation, installed=None):
    """``simulation``: ``apt-get -s upgrade --with-new-pkgs``'s output (text or a registered result); ``installed``:
    dpkg's package names. The new kernel releases apt would install without their signed NVIDIA module."""
    if isinstance(simulation, dict):
        simulation = simulation.get("stdout", "")
    if not isinstance(simulation, str):
        raise AnsibleFilterError("nvidia_driver_kernel_without_module: expected apt-get -s output (text or a command result)")
    return _nh.kernel_without_module(simulation, _names(installed, "installed"))


def _text(value, what, name):
    if value is None:
        return ""
    if isinstance(value, dict):
        value = value.get("stdout", "")
    if not isinstance(value, str):
        raise AnsibleFilterError("%s: %s must be a command's output (text or a registered result)" % (name, what))
    return value


def nvidia_driver_unattended(simulation, policy=None, config=None, distro_id="", codename="", installed=None, held=None,
                             blacklist=None, program=True):
    """What unattended-upgrades takes, from the host's own configuration (plugin_utils.nvidia_driver_unattended.decide):
    ``simulation``: ``apt-get -s upgrade --with-new-pkgs``; ``policy``: ``apt-cache policy``; ``config``: ``apt-config
    dump`` (text or registered results)."""
    name = "nvidia_driver_unattended"
    return _nu.decide(_text(simulation, "simulation", name), _text(policy, "policy", name), _text(config, "config", name),
                      str(distro_id or ""), str(codename or ""), _names(installed, "installed"), _names(held, "held"),
                      _names(blacklist, "blacklist"), bool(program))


def nvidia_driver_boot_without_module(kernel_packages, boot=None, signing="precompiled", new_version=None, simulation=None,
                                      running=""):
    """The kernels in /boot left without the NVIDIA module: {kernels: [{kernel, why}], message}. ``kernel_packages``:
    ``dpkg-query -W -f '${Package}\\t${Version}\\t${db:Status-Abbrev}\\t${Depends}\\n'`` text (or nvidia_driver_facts'
    ``kernel.packages``); ``boot``: the releases of /boot/vmlinuz-* (the installed linux-image-<release> are added).
    ``new_version``: the point release being installed (with its ``simulation``); omitted: the forecast for the next one."""
    name = "nvidia_driver_boot_without_module"
    if isinstance(kernel_packages, (str, dict)):
        kernel_packages = _ku.parse_kernel_packages(_text(kernel_packages, "kernel_packages", name))
    if not isinstance(kernel_packages, (list, tuple)):
        raise AnsibleFilterError("%s: kernel_packages must be dpkg-query's text or a list of packages" % name)
    releases = list(_names(boot, "boot"))
    releases += [k for k in _ku.installed_kernels(kernel_packages) if k not in releases]
    modules = _nu.modules_by_kernel(kernel_packages)
    dkms_kernels = _nu.headers_kernels(kernel_packages)
    if new_version:
        kernels = _nu.boot_without_module(releases, signing, str(new_version), modules, simulation=_text(simulation, "simulation", name),
                                          dkms_kernels=dkms_kernels)
        when = "After the update to %s" % new_version
    else:
        kernels = _nu.next_release_forecast(releases, signing, modules, dkms_kernels, str(running or ""))
        when = "At the driver's next point release"
    return {"kernels": kernels, "message": _nu.boot_message(kernels, when)}


class FilterModule(object):
    """dlbox.stack nvidia_driver_holds filters."""

    def filters(self):
        return {"nvidia_driver_hold_changes": nvidia_driver_hold_changes,
                "nvidia_driver_kernel_without_module": nvidia_driver_kernel_without_module,
                "nvidia_driver_unattended": nvidia_driver_unattended,
                "nvidia_driver_boot_without_module": nvidia_driver_boot_without_module}
