# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""cuDNN for the cudnn role: which build fits the installed CUDA, NVIDIA's names for it, and the
readers of what got installed (version header, library version calls, linker cache, archive layout).

Pure functions; the vendor facts (releases, builds, names) come in as arguments from data/compat.yml
(``cudnn`` and ``cudnn_names``). Used by the cudnn role's decision (plugin_utils/roles/cudnn.py) and the ``cudnn_facts`` and
``cudnn_unpack`` modules.
"""

from __future__ import annotations

import posixpath
import re

from ansible_collections.dlbox.stack.plugins.module_utils.versions import version_tuple

_HEADER_DEFINE = re.compile(r"^\s*#\s*define\s+CUDNN_(MAJOR|MINOR|PATCHLEVEL)\s+(\d+)\s*$", re.M)
_LIB_FILE = re.compile(r"^libcudnn\.so\.(\d+\.\d+\.\d+)$")
_SONAME_FILE = re.compile(r"^(lib[A-Za-z0-9_]+)\.so\.(\d+)$")
_LDCONFIG_LINE = re.compile(r"^\s*(\S+)\s+\([^)]*\)\s+=>\s+(\S+)\s*$")
_VERSION = re.compile(r"^\d+(\.\d+){0,3}$")


def major_of(version):
    return str(version).split(".", 1)[0]


def short_version(version):
    """The major.minor.patch a header and the library report: 9.10.2.21 -> 9.10.2."""
    return ".".join(str(version).split(".")[:3])


def release_for(releases, requested):
    """The ``cudnn`` entry ``requested`` names: the exact version, or the newest whose version starts with it
    ("9.10" -> 9.10.2.21). None when none does."""
    want = version_tuple(requested)
    fitting = [r for r in releases if version_tuple(r["version"])[:len(want)] == want]
    return max(fitting, key=lambda r: version_tuple(r["version"])) if fitting else None


def _fill(template, values):
    return template.format(**values)


def select(releases, names, version, toolkits, cuda_major="", plan_cuda="", method="nvidia_repo", arch="x86_64",
           install_root="/opt/cudnn", version_from="cudnn_version"):
    """Decide the cuDNN build to install: the release, the installed CUDA toolkit it is for, and NVIDIA's names.

    ``releases``/``names``: data/compat.yml ``cudnn`` / ``cudnn_names``. ``toolkits``: ``cuda_facts``'
    ``cuda_toolkits`` (newest first). ``cuda_major``: the user's pick ('' = the plan's CUDA major when it is
    installed and the release has a build for it, else the newest installed major it has a build for).
    ``version_from`` names where the version came from, for messages.
    Returns a dict; ``errors`` (sentences naming the variable to change) is empty when it fits.
    """
    out = {"errors": [], "version": None}
    errors = out["errors"]
    version = str(version or "")
    if not version:
        errors.append("No cuDNN version: the plan has no stack.cudnn and cudnn_version is empty; set cudnn_version "
                      "(known: %s)." % ", ".join(r["version"] for r in releases))
        return out
    if not _VERSION.match(version):
        errors.append("%s must be a version such as '9.10.2.21' or '9.10', not '%s'." % (version_from, version))
        return out
    release = release_for(releases, version)
    if release is None:
        errors.append("cuDNN '%s' (%s) is not in data/compat.yml; known: %s."
                      % (version, version_from, ", ".join(r["version"] for r in releases)))
        return out
    out["version"] = release["version"]
    builds = release["builds"]
    installed = {}
    for toolkit in toolkits or []:
        installed.setdefault(major_of(toolkit["version"]), toolkit)  # newest first: the first of a major wins
    shown = ", ".join("%s (%s)" % (t["version"], t["path"]) for t in toolkits or []) or "none"
    if not installed:
        errors.append("cuDNN %s needs a CUDA toolkit, and none is installed (dlbox.stack.cuda_facts found none); "
                      "install CUDA first (dlbox.stack.cuda)." % release["version"])
        return out
    if cuda_major:
        major = str(cuda_major)
        if major not in installed:
            errors.append("cudnn_cuda_major is %s, but no CUDA %s toolkit is installed (installed: %s); cuDNN must match "
                          "an installed CUDA major: set cudnn_cuda_major to one of %s or install CUDA %s first."
                          % (major, major, shown, ", ".join(sorted(installed)), major))
            return out
        if major not in builds:
            errors.append("cuDNN %s (%s) has no build for CUDA %s (builds: CUDA %s); set cudnn_cuda_major to one of "
                          "those, or choose another cudnn_version." % (release["version"], version_from, major,
                                                                       ", ".join(sorted(builds))))
            return out
    else:
        candidates = [m for m in installed if m in builds]
        plan_major = major_of(plan_cuda) if plan_cuda else None
        if not candidates:
            errors.append("cuDNN %s (%s) has builds for CUDA %s only, and the installed CUDA is %s; choose a "
                          "cudnn_version with a build for an installed CUDA major, or install CUDA %s first."
                          % (release["version"], version_from, ", ".join(sorted(builds)), shown, max(builds, key=int)))
            return out
        major = plan_major if plan_major in candidates else max(candidates, key=int)
    toolkit = installed[major]
    low, high = builds[major]
    if not version_tuple(low) <= version_tuple(toolkit["version"]) <= version_tuple(high):
        errors.append("cuDNN %s's CUDA %s build covers CUDA %s to %s, but the installed CUDA %s toolkit is %s (%s); "
                      "choose another cudnn_version."
                      % (release["version"], major, low, high, major, toolkit["version"], toolkit["path"]))
        return out
    values = {"version": release["version"], "cudnn_major": major_of(release["version"]), "cuda_major": major,
              "build_cuda": high, "arch": (names.get("tarball_arch") or {}).get(arch, arch),
              "multiarch": "%s-linux-gnu" % arch}
    out.update({
        "cudnn_major": values["cudnn_major"],
        "cuda_major": major,
        "cuda_version": toolkit["version"],
        "cuda_path": toolkit["path"],
        "expect": short_version(release["version"]),
        "soname": "libcudnn.so.%s" % values["cudnn_major"],
        "install_root": install_root,
    })
    if method == "nvidia_repo":
        apt = (names.get("apt") or {}).get(values["cudnn_major"])
        if apt is None:
            errors.append("data/compat.yml cudnn_names.apt has no package names for cuDNN %s.x; use cudnn_method: "
                          "tarball or wheel." % values["cudnn_major"])
            return out
        packages = [_fill(p, values) for p in apt["packages"]]
        apt_version = _fill(apt["version"], values)
        out["apt"] = {"packages": packages, "version": apt_version,
                      "install": ["%s=%s" % (p, apt_version) for p in packages]}
        out["header"] = _fill(apt["header"], values)
        out["lib_dir"] = "/usr/lib/%s" % values["multiarch"]
    else:
        prefix = posixpath.join(install_root, "%s-cuda%s" % (release["version"], major))
        out["prefix"] = prefix
        out["header"] = posixpath.join(prefix, "include", "cudnn_version.h")
        out["lib_dir"] = posixpath.join(prefix, "lib")
        if method == "tarball":
            out["tarball"] = _fill(names["tarball"], values)
            out["tarball_url"] = _fill(names["tarball_url"], values)
        else:
            project = _fill(names["wheel"], values)
            out["wheel"] = {"project": project, "requirement": "%s==%s" % (project, release["version"]),
                            "file_prefix": "%s-%s-" % (project.replace("-", "_"), release["version"])}
    return out


def parse_version_header(text):
    """``cudnn_version.h`` -> "9.10.2" (CUDNN_MAJOR.CUDNN_MINOR.CUDNN_PATCHLEVEL); None when one is missing."""
    found = dict(_HEADER_DEFINE.findall(text or ""))
    if not all(k in found for k in ("MAJOR", "MINOR", "PATCHLEVEL")):
        return None
    return "%d.%d.%d" % (int(found["MAJOR"]), int(found["MINOR"]), int(found["PATCHLEVEL"]))


def decode_cudnn_version(number):
    """What ``cudnnGetVersion()`` returns -> "9.10.2". cuDNN 9 encodes MAJOR*10000+MINOR*100+PATCH (91002),
    cuDNN 8 and older MAJOR*1000+MINOR*100+PATCH (8907), as their cudnn_version.h says."""
    number = int(number)
    if number >= 90000:
        return "%d.%d.%d" % (number // 10000, number % 10000 // 100, number % 100)
    return "%d.%d.%d" % (number // 1000, number % 1000 // 100, number % 100)


def decode_cudart_version(number):
    """``cudnnGetCudartVersion()`` (CUDART_VERSION, MAJOR*1000+MINOR*10) -> "12.9"."""
    number = int(number)
    return "%d.%d" % (number // 1000, number % 1000 // 10)


def library_file_version(path):
    """The version in a library's real file name: .../libcudnn.so.9.10.2 -> "9.10.2"; None otherwise
    (the wheels ship only libcudnn.so.9)."""
    match = _LIB_FILE.match(posixpath.basename(path or ""))
    return match.group(1) if match else None


def parse_ldconfig(text, soname):
    """``ldconfig -p`` -> the paths the linker cache has for ``soname``, in cache order."""
    paths = []
    for line in (text or "").splitlines():
        match = _LDCONFIG_LINE.match(line)
        if match and match.group(1) == soname:
            paths.append(match.group(2))
    return paths


def archive_layout(members):
    """Where each member of NVIDIA's tarball or wheel goes in the versioned directory.

    ``members``: archive paths. The folder holding ``cudnn_version.h`` becomes ``include/``, the folder
    holding ``libcudnn.so*`` becomes ``lib/``, a top-level LICENSE (tarball) or the wheel's
    ``*.dist-info/licenses/*`` go to ``LICENSE``. Returns {member: relative target}; members outside those
    folders are left out. Raises ValueError when the archive has no header or no library.
    """
    def folder_of(test):
        for name in members:
            if test(posixpath.basename(name)):
                return posixpath.dirname(name)
        return None

    include = folder_of(lambda b: b == "cudnn_version.h")
    lib = folder_of(lambda b: b == "libcudnn.so" or b.startswith("libcudnn.so."))
    if include is None or lib is None:
        raise ValueError("the archive has no %s" % ("cudnn_version.h" if include is None else "libcudnn.so*"))
    out = {}
    for name in members:
        clean = name.rstrip("/")
        base = posixpath.basename(clean)
        for folder, target in ((include, "include"), (lib, "lib")):
            if posixpath.dirname(clean) == folder and base:
                out[name] = posixpath.join(target, base)
        if name not in out and (base.upper().startswith("LICENSE") and (clean.count("/") <= 1
                                                                        or "/licenses/" in clean)):
            out.setdefault(name, "LICENSE")
    for name, target in out.items():
        if ".." in target.split("/") or target.startswith("/"):
            raise ValueError("unsafe path in the archive: %s" % name)
    return out


def dev_links(lib_names):
    """Development links a wheel lacks: {"libcudnn.so": "libcudnn.so.9", ...} for every libX.so.N without libX.so."""
    present = set(lib_names)
    links = {}
    for name in sorted(present):
        match = _SONAME_FILE.match(name)
        if match and match.group(1) + ".so" not in present:
            links[match.group(1) + ".so"] = name
    return links


def check_install(facts, selection):
    """Problems of an installed cuDNN against the selection: header and library versions, the CUDA major the
    library was built for, and where the linker finds it. Empty when it is right."""
    expect = selection["expect"]
    problems = []
    header = facts.get("header_version")
    if header is None:
        problems.append("no version header at %s" % facts.get("header"))
    elif header != expect:
        problems.append("the header %s says cuDNN %s, not %s" % (facts.get("header"), header, expect))
    library = facts.get("library_version")
    if library is None:
        problems.append("%s could not be loaded: %s" % (selection["soname"], facts.get("load_error") or "unknown"))
    elif library != expect:
        problems.append("%s (%s) reports cuDNN %s, not %s" % (selection["soname"], facts.get("library"), library, expect))
    file_version = facts.get("library_file_version")
    if file_version is not None and file_version != expect:
        problems.append("the library file %s is version %s, not %s" % (facts.get("library"), file_version, expect))
    cudart = facts.get("cudart_version")
    if cudart is not None and major_of(cudart) != str(selection["cuda_major"]):
        problems.append("%s was built for CUDA %s, not CUDA %s" % (selection["soname"], cudart, selection["cuda_major"]))
    lib_dir = selection.get("lib_dir")
    loaded = facts.get("library")
    if library is not None and lib_dir and loaded and posixpath.dirname(loaded) != lib_dir:
        problems.append("the dynamic linker loads %s from %s, not from %s (another cuDNN shadows it)"
                        % (selection["soname"], loaded, lib_dir))
    return problems


def foreign_libraries(linker_paths, lib_dir, install_root):
    """Linker-cache paths of the soname that are neither in ``lib_dir`` nor in one of this role's versioned
    directories under ``install_root``: another cuDNN the linker could pick instead (the guides' copy in
    /usr/local/cuda/lib64, a package when installing a tarball)."""
    root = install_root.rstrip("/") + "/"
    return [p for p in linker_paths if posixpath.dirname(p) != lib_dir and not p.startswith(root)]
