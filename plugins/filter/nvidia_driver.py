# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the nvidia_driver role: package sets, Secure Boot signing path, apt simulation, DKMS and MOK state,
the installed branch, branch changes (kept packages, pin, rollback) and Fabric Manager's version."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.dlbox.stack.plugins.module_utils import _nvidia_driver as nd
from ansible_collections.dlbox.stack.plugins.module_utils.kernel import kernel_flavour


def nvidia_driver_packages(names, branch, kernel_modules, profile="desktop", signing="dkms", kernel_release=None, flavour=""):
    """Package set for a branch; ``flavour`` wins over the flavour of ``kernel_release`` (default generic)."""
    try:
        return nd.driver_packages(names, int(branch), kernel_modules, profile, signing,
                                  flavour or kernel_flavour(kernel_release) or "generic")
    except (ValueError, TypeError) as exc:
        raise AnsibleFilterError("nvidia_driver_packages: %s" % exc) from exc


def nvidia_driver_signing(secure_boot, distribution, choice="auto", mok_key="", mok_certificate="", dkms_major=None):
    """Signing path under Secure Boot: {path, problem, dkms_config}."""
    return nd.signing_path(distribution, secure_boot, choice, mok_key, mok_certificate, dkms_major)


def nvidia_driver_apt_check(text, primary, branch, same_version=None, installed=None):
    """Verdict on ``apt-get -s install`` output: {ok, branch_found, version, pulled, mismatched, dkms, installs}."""
    return nd.check_simulation(text, primary, int(branch), same_version or [], installed or {})


def nvidia_driver_sources(text, components, deb822=False):
    """An apt sources file with ``components`` added to every entry that has main."""
    return nd.apt_sources_with_components(text, components, deb822)


def nvidia_driver_dkms_missing(text, module, version, kernels):
    """Kernels for which ``dkms status`` does not show module/version installed."""
    return nd.dkms_missing(text, module, version, kernels)


def nvidia_driver_mok_state(text):
    """``mokutil --test-key`` output -> enrolled, pending, not-enrolled or unknown."""
    return nd.parse_mokutil_test_key(text)


def nvidia_driver_installed(packages, family):
    """package_facts -> the installed driver: {branch, version, packages, other_branches}."""
    return nd.installed_driver(packages or {}, family or [])


def nvidia_driver_branch_plan(installed_branch, target_branch, allowed=False):
    """install / change / refuse for a target branch: {action, from_branch, to_branch, problem}."""
    try:
        return nd.branch_change(None if installed_branch in (None, "") else int(installed_branch), int(target_branch), bool(allowed))
    except (ValueError, TypeError) as exc:
        raise AnsibleFilterError("nvidia_driver_branch_plan: %s" % exc) from exc


def nvidia_driver_keep(packages, archive_files=None):
    """[{name, version, arch}] -> [{..., file, source: archive|repack}]."""
    return nd.keep_plan(packages or [], archive_files or [])


def nvidia_driver_pin(branch, family, reason=""):
    """apt preferences text that keeps the driver family on a branch."""
    try:
        return nd.branch_pin(int(branch), family or [], reason)
    except (ValueError, TypeError) as exc:
        raise AnsibleFilterError("nvidia_driver_pin: %s" % exc) from exc


def nvidia_driver_branch_check(text, branch, family, same_version=None, kernel_package=None, requested=None):
    """Verdict on ``apt-get -s install`` output for a branch: {ok, version, wrong, mismatched, installs, exact}."""
    return nd.check_branch_simulation(text, int(branch), family or [], same_version or [], kernel_package or None, requested or [])


def nvidia_driver_fabric_manager(text, package, driver_version):
    """``apt-cache madison`` output -> {ok, version, available} for Fabric Manager at exactly the driver's version."""
    return nd.fabric_manager_version(text, package, driver_version or "")


def nvidia_driver_rollback(packages, kept, family):
    """After a failed branch change: {purge: [names], install: [files], branch}."""
    return nd.rollback_plan(packages or {}, kept or [], family or [])


class FilterModule(object):
    """dlbox.stack nvidia_driver filters."""

    def filters(self):
        return {
            "nvidia_driver_packages": nvidia_driver_packages,
            "nvidia_driver_signing": nvidia_driver_signing,
            "nvidia_driver_apt_check": nvidia_driver_apt_check,
            "nvidia_driver_dkms_missing": nvidia_driver_dkms_missing,
            "nvidia_driver_mok_state": nvidia_driver_mok_state,
            "nvidia_driver_sources": nvidia_driver_sources,
            "nvidia_driver_installed": nvidia_driver_installed,
            "nvidia_driver_branch_plan": nvidia_driver_branch_plan,
            "nvidia_driver_keep": nvidia_driver_keep,
            "nvidia_driver_pin": nvidia_driver_pin,
            "nvidia_driver_branch_check": nvidia_driver_branch_check,
            "nvidia_driver_fabric_manager": nvidia_driver_fabric_manager,
            "nvidia_driver_rollback": nvidia_driver_rollback,
        }
