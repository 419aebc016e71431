# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Installed CUDA toolkits: pure parsers behind the ``dlbox.stack.cuda_facts`` module (Python 3.8+).

The module does the I/O (listing ``/usr/local``, reading ``version.json``, running ``nvcc --version``
and ``dpkg-query``); everything here takes text and returns plain data:

* :func:`toolkit_dir_version`: ``"cuda-13.0"`` -> ``"13.0"`` (only ``cuda-X.Y`` trees count).
* :func:`parse_version_json`: the ``cuda`` -> ``version`` of a toolkit's ``version.json``.
* :func:`parse_nvcc_version`: ``release 13.0, V13.0.88`` of ``nvcc --version``.
* :func:`parse_manifest`: the method recorded in a dlbox manifest.
* :func:`source_of_dpkg_owner`: which method a ``dpkg-query -S`` owner line points to.
* :func:`parse_dpkg_status`: ``${Status} ${Version}`` of ``dpkg-query -W``.
* :func:`parse_gcc_major`: ``g++ -dumpversion`` -> its major.
* :func:`build_facts`: the module's result from what was read.
"""

from __future__ import annotations

import json
import re

from ansible_collections.dlbox.stack.plugins.module_utils.versions import version_tuple as version_key  # sorts "12.10" after "12.9"

SOURCES = ("nvidia_repo", "distro", "local_repo", "pip_wheels", "unknown")

_TREE = re.compile(r"^cuda-(?P<version>\d+\.\d+)$")
# "Cuda compilation tools, release 13.0, V13.0.88"
_NVCC = re.compile(r"release (?P<release>\d+\.\d+), V(?P<full>\d+(?:\.\d+)+)")
# "cuda-nvcc-13-0: /usr/local/cuda-13.0/bin/nvcc" ; "nvidia-cuda-toolkit: /usr/bin/nvcc"
_OWNER = re.compile(r"^(?P<packages>[^:]+(?:, [^:]+)*): (?P<path>/.*)$")
_FULL = re.compile(r"^\d+\.\d+(?:\.\d+)*$")


def toolkit_dir_version(name):
    """Directory name -> "X.Y" for a toolkit tree (``cuda-13.0``); None for ``cuda``, ``cuda-13``, others."""
    match = _TREE.match(name or "")
    return match.group("version") if match else None


def _json_object(text):
    """JSON text -> its top-level object (a dict), None when absent, unreadable or not an object."""
    if not text:
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def parse_version_json(text):
    """A toolkit's version.json text -> its full version ("13.0.2"), None when absent or unreadable.

    ``{"cuda": {"name": "CUDA SDK", "version": "13.0.2"}, ...}`` -> ``"13.0.2"``.
    """
    data = _json_object(text)
    if data is None or not isinstance(data.get("cuda"), dict):
        return None
    version = str(data["cuda"].get("version") or "").strip()
    return version if _FULL.match(version) else None


def parse_nvcc_version(text):
    """``nvcc --version`` output -> {"release": "13.0", "version": "13.0.88"}, or None when not nvcc's."""
    match = _NVCC.search(text or "")
    if not match:
        return None
    return {"release": match.group("release"), "version": match.group("full")}


def parse_manifest(text):
    """A dlbox manifest (JSON written by the cuda role) -> its dict, None when absent/unreadable.

    Only a manifest whose ``source`` is one of :data:`SOURCES` counts.
    """
    data = _json_object(text)
    if data is None or data.get("source") not in SOURCES:
        return None
    return data


def source_of_dpkg_owner(text):
    """``dpkg-query -S <file>`` output -> "nvidia_repo", "distro" or None (no owner).

    NVIDIA's packages (from its repository or a local-repo .deb, which hold the same packages) are
    ``cuda-*``/``libcu*``/``libnv*``; Debian's and Ubuntu's are ``nvidia-cuda-*``/``nvidia-cuda-toolkit``.
    Without a dlbox manifest the two NVIDIA routes cannot be told apart, so both read as nvidia_repo.
    """
    for line in (text or "").splitlines():
        match = _OWNER.match(line.strip())
        if not match:
            continue
        packages = [name.strip().split(":")[0] for name in match.group("packages").split(",")]
        for package in packages:
            if package.startswith("nvidia-cuda"):
                return "distro"
            if package.startswith(("cuda-", "libcu", "libnv")):
                return "nvidia_repo"
        return "unknown"
    return None


def parse_dpkg_status(text):
    """``dpkg-query -W -f='${Status} ${Version}'`` -> the version when installed, else None.

    ``"install ok installed 11.8.89~11.8.0-5~deb12u1"`` -> ``"11.8.89~11.8.0-5~deb12u1"``.
    """
    parts = (text or "").split()
    if len(parts) >= 4 and parts[2] == "installed":
        return parts[3]
    return None


def distro_release(package_version):
    """Debian's nvidia-cuda-toolkit version -> "X.Y": "11.8.89~11.8.0-5~deb12u1" -> "11.8"; "12.0.140~12.0.1-4build4" -> "12.0"."""
    text = (package_version or "").split(":")[-1]
    match = re.match(r"(\d+)\.(\d+)", text)
    return "%s.%s" % (match.group(1), match.group(2)) if match else None


def parse_gcc_major(text):
    """``g++ -dumpfullversion -dumpversion`` output -> major as int: "12.2.0" -> 12, "17" -> 17; None otherwise."""
    match = re.match(r"^\s*(\d+)(?:\.\d+)*\s*$", text or "")
    return int(match.group(1)) if match else None


def build_facts(trees, default_target, distro, compilers=None):
    """Assemble the module result.

    ``trees``: list of dicts ``{path, dirname, version_json, nvcc, nvcc_output, manifest, owner}``
    (texts may be None). ``default_target``: the resolved path of ``/usr/local/cuda`` or None.
    ``distro``: ``{dpkg_status, nvcc, nvcc_output}`` of the distribution's nvidia-cuda-toolkit, or None.
    ``compilers``: ``[(path, dumpversion output)]``, the plain ``g++`` first; those that answer become ``host_compilers``.
    """
    toolkits = []
    for tree in trees:
        version = toolkit_dir_version(tree.get("dirname"))
        if version is None:
            continue
        nvcc_info = parse_nvcc_version(tree.get("nvcc_output"))
        full = parse_version_json(tree.get("version_json")) or (nvcc_info or {}).get("version")
        manifest = parse_manifest(tree.get("manifest"))
        if manifest:
            source = manifest["source"]
        else:
            source = source_of_dpkg_owner(tree.get("owner")) or "unknown"
        toolkits.append({
            "version": version,
            "full_version": full,
            "path": tree["path"],
            "nvcc": tree.get("nvcc"),
            "source": source,
        })
    toolkits.sort(key=lambda item: version_key(item["version"]), reverse=True)

    default = None
    if default_target:
        version = toolkit_dir_version(default_target.rstrip("/").rsplit("/", 1)[-1])
        if version is not None:
            default = {"version": version, "path": default_target}

    distro_toolkit = None
    if distro:
        package_version = parse_dpkg_status(distro.get("dpkg_status"))
        if package_version:
            nvcc_info = parse_nvcc_version(distro.get("nvcc_output"))
            distro_toolkit = {
                "version": (nvcc_info or {}).get("release") or distro_release(package_version),
                "nvcc": distro.get("nvcc"),
                "package_version": package_version,
            }
    host_compilers = []
    for path, output in compilers or []:
        major = parse_gcc_major(output)
        if major is not None and path not in [c["path"] for c in host_compilers]:
            host_compilers.append({"path": path, "major": major})
    return {"cuda_toolkits": toolkits, "cuda_default": default, "cuda_distro_toolkit": distro_toolkit,
            "host_compilers": host_compilers}
