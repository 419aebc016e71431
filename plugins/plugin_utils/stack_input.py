# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Strict checks of the planning input, run before anything else uses it.

``dlbox_plan_hardware`` (what the plan is for) and ``dlbox_plan_request`` (what the user pins) are checked
key by key: an unknown key is refused naming the nearest valid one, every value has a type, every version
must match a strict pattern before any use (a version ends up in package names and commands), and the
machine architecture must be one the data ships a stack for. Each problem is one sentence naming the
variable, the key and the value at fault, and what would work.

The keys are listed once, here (``REQUEST_KEYS``, ``HARDWARE_KEYS``); what the data knows (operating
systems, machine architectures) comes from the data.
"""

from __future__ import annotations

import difflib
import re

__all__ = ["REQUEST_KEYS", "HARDWARE_KEYS", "NONE_WORDS", "LATEST_WORDS", "UNSET", "is_unset",
           "check_request", "check_hardware", "check_host_arch"]

NONE_WORDS = ("none", "no", "false", "off", "skip")
LATEST_WORDS = ("latest", "yes", "true", "on", "newest")
UNSET = (None, "", "auto")

_CUDA = re.compile(r"^\d{1,2}\.\d{1,2}(\.\d{1,3})?$")
_BRANCH = re.compile(r"^[Rr]?\d{3,4}$")
_DRIVER_VERSION = re.compile(r"^\d{3,4}\.\d{1,3}(\.\d{1,3})?$")
_CUDNN = re.compile(r"^\d{1,2}(\.\d{1,2}){0,3}$")
_RELEASE = re.compile(r"^\d{1,2}\.\d{1,3}(\.\d{1,3})?$")
_PYTHON = re.compile(r"^3\.\d{1,2}$")
_VARIANT = re.compile(r"^(cu\d{3}|cpu|pypi)$")
_OS = re.compile(r"^[a-z]+-\d+(\.\d+)*$")
_GPU = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 ._:/+()\[\]-]{0,119}$")  # [] for a pasted lspci line
# The request patterns the roles check their own variables with (python_env's environments): one set.
PYTHON, VARIANT, RELEASE, CUDA, CUDNN = _PYTHON, _VARIANT, _RELEASE, _CUDA, _CUDNN


def is_unset(value):
    """A request value that leaves the choice to the resolver (absent, empty or 'auto')."""
    return value is None or (isinstance(value, str) and value.strip().lower() in ("", "auto"))


def _text(value):
    """The value as text when it is a string or a whole number; None for anything else (floats too)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return value.strip()
    return None


def _version_problem(var, key, value, pattern, example, words=()):
    """None when ``value`` is a version matching ``pattern`` (or one of ``words``); else the message."""
    if isinstance(value, float):
        return ("%s.%s: %r is a number; quote versions (%s: '%s'), since YAML reads 12.10 as 12.1."
                % (var, key, value, key, example))
    text = _text(value)
    if text is not None and (pattern.match(text) or text.lower() in words):
        return None
    allowed = "a version like '%s'" % example
    if words:
        allowed += " or one of: %s" % ", ".join(words)
    return "%s.%s: %r is not %s (or auto)." % (var, key, value, allowed)


def _choice_problem(var, key, value, choices):
    text = _text(value)
    if text is not None and text.lower() in choices:
        return None
    return "%s.%s: %r is not one of: %s (or auto)." % (var, key, value, ", ".join(choices))


def _variant_problem(var, key, value):
    text = _text(value)
    if text is not None and _VARIANT.match(text.lower()):
        return None
    return "%s.%s: %r is not a PyTorch build: use cuXXX (e.g. cu128), cpu or pypi (or auto)." % (var, key, value)


def _tensorflow_problem(var, key, value):
    if isinstance(value, bool):
        return None
    return _version_problem(var, key, value, _RELEASE, "2.20", NONE_WORDS + LATEST_WORDS)


# request key -> check(var, key, value) -> None or message. The ONE list of request keys.
REQUEST_KEYS = {
    "driver_branch": lambda v, k, x: _version_problem(v, k, x, _BRANCH, "580"),
    "driver_method": lambda v, k, x: _choice_problem(v, k, x, ("distro", "nvidia_repo")),
    "driver_profile": lambda v, k, x: _choice_problem(v, k, x, ("desktop", "server")),
    "kernel_modules": lambda v, k, x: _choice_problem(v, k, x, ("open", "proprietary")),
    "cuda": lambda v, k, x: _version_problem(v, k, x, _CUDA, "12.8"),
    "cudnn": lambda v, k, x: _version_problem(v, k, x, _CUDNN, "9.10", NONE_WORDS),
    "pytorch": lambda v, k, x: _version_problem(v, k, x, _RELEASE, "2.9", NONE_WORDS + LATEST_WORDS),
    "pytorch_variant": _variant_problem,
    "tensorflow": _tensorflow_problem,
    "python": lambda v, k, x: _version_problem(v, k, x, _PYTHON, "3.12"),
    "jetpack": lambda v, k, x: _version_problem(v, k, x, _RELEASE, "6.2"),
}

HARDWARE_KEYS = ("gpus", "nvswitch", "os", "arch", "driver_version", "l4t", "captures", "fabric")
# dlbox_plan_hardware.fabric: which NVLink fabric the host has, where its evidence conflicts (nvlink5_detect.KINDS)
FABRIC_KINDS = ("hgx", "nvl", "pcie", "none")


def _unknown_key(var, key, known):
    close = difflib.get_close_matches(str(key), list(known), n=1, cutoff=0.5)
    hint = "did you mean '%s'?" % close[0] if close else "valid keys: %s." % ", ".join(known)
    return "%s: unknown key '%s'; %s" % (var, key, hint)


def _mapping_problem(var, value, example):
    if value is None or isinstance(value, dict):
        return None
    return "%s must be a mapping such as %s, not %s %r." % (var, example, type(value).__name__, value)


def check_request(request, var="dlbox_plan_request"):
    """Problems of a request mapping, as sentences; [] when it is fine."""
    problem = _mapping_problem(var, request, '{"pytorch": "2.9", "kernel_modules": "open"}')
    if problem:
        return [problem]
    errors = []
    for key, value in (request or {}).items():
        check = REQUEST_KEYS.get(key)
        if check is None:
            errors.append(_unknown_key(var, key, REQUEST_KEYS))
        elif not is_unset(value):
            problem = check(var, key, value)
            if problem:
                errors.append(problem)
    return errors


def check_host_arch(data, arch, var="dlbox_plan_hardware"):
    """The machine architecture against the data's ``machines`` (what the stack ships for each)."""
    machines = data.get("machines") or {}
    if _text(arch) in machines:
        return []
    return ["%s.arch: %r is not a machine architecture NVIDIA's stack is shipped for in data/compat.yml; use one of: %s."
            % (var, arch, ", ".join(sorted(machines)))]


def check_hardware(data, hardware, var="dlbox_plan_hardware"):
    """Problems of a planning-hardware mapping, as sentences; [] when it is fine."""
    problem = _mapping_problem(var, hardware, '{"gpus": ["RTX 4090"], "os": "ubuntu-22.04"}')
    if problem:
        return [problem]
    hardware = hardware or {}
    errors = [_unknown_key(var, key, HARDWARE_KEYS) for key in hardware if key not in HARDWARE_KEYS]
    gpus = hardware.get("gpus")
    if gpus is not None and not isinstance(gpus, list):
        errors.append("%s.gpus must be a list of GPU names or PCI device ids such as [\"RTX 4090\"], not %r." % (var, gpus))
    for gpu in gpus if isinstance(gpus, list) else []:
        text = _text(gpu)
        if text is None or not _GPU.match(text):
            errors.append("%s.gpus: %r is not a GPU name or PCI device id (letters, digits, spaces and ._:/+()[]- only, "
                          "e.g. \"RTX 4090\" or \"10de:2684\")." % (var, gpu))
    captures = hardware.get("captures")
    if captures is not None and (not isinstance(captures, list) or not all(isinstance(c, str) and c.strip() for c in captures)):
        errors.append("%s.captures must be a list of file paths on the controller (nvidia-smi -q -x, nvidia-smi "
                      "--query-gpu=... --format=csv, lspci -nn or /etc/nv_tegra_release outputs), not %r." % (var, captures))
    if hardware.get("fabric") is not None and hardware["fabric"] not in FABRIC_KINDS:
        errors.append("%s.fabric: %r is not one of %s (hgx: an NVLink5 HGX board; nvl: a GB200/GB300 NVL compute tray; "
                      "pcie: NVSwitches on PCIe; none: no NVSwitch fabric)." % (var, hardware["fabric"], ", ".join(FABRIC_KINDS)))
    if "nvswitch" in hardware and not isinstance(hardware["nvswitch"], bool):
        errors.append("%s.nvswitch: %r is not true or false." % (var, hardware["nvswitch"]))
    os_key = hardware.get("os")
    if os_key is not None:
        distros = (data.get("os") or {}).get("distros") or {}
        text = _text(os_key)
        if text is None or not _OS.match(text.lower()) or text.lower() not in distros:
            errors.append("%s.os: %r is not an operating system dlbox.stack plans for; use one of: %s."
                          % (var, os_key, ", ".join(sorted(distros))))
    if hardware.get("arch") is not None:
        errors += check_host_arch(data, hardware["arch"], var)
    for key, pattern, example in (("driver_version", _DRIVER_VERSION, "550.54.14"), ("l4t", _CUDNN, "36.4.3")):
        if hardware.get(key) is not None:
            problem = _version_problem(var, key, hardware[key], pattern, example)
            if problem:
                errors.append(problem.replace(" (or auto).", "."))
    return errors
