# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the ``cuda`` role installs, decided on the controller from the plan and the data (pure).

:func:`decide` turns the role's variables, the plan (``dlbox_plan``), what ``cuda_facts`` found and the host's
compilers into one result: the toolkits to install (packages, wheels or local installer per method), the default
``/usr/local/cuda``, what to remove (only when asked), the GPU architectures the verification compiles for, and
the host compiler nvcc may use. Every refusal names the variable and says what would work. Versions are never
decided here: they come from the plan, and a version the plan did not pick is checked by the resolver itself
(``resolve``, a callable the filter passes in).
"""

from __future__ import annotations

import re

from ansible_collections.dlbox.stack.plugins.module_utils.versions import debian_version_compare
from ansible_collections.dlbox.stack.plugins.module_utils.versions import version_tuple as version_key
from ansible_collections.dlbox.stack.plugins.plugin_utils.lazy_import import LazyModule
from ansible_collections.dlbox.stack.plugins.plugin_utils.roles import _spec

_kernel = LazyModule("plugin_utils.nvidia_driver_kernel")  # its apt-cache policy reader (policy_versions)

METHODS = _spec.choices("cuda", "cuda_method")  # the argument spec's, the one place they live (issue 47)
PREFIX = "/usr/local"
_MAJOR_MINOR = re.compile(r"^\d+\.\d+$")
_CC = re.compile(r"^\d+\.\d+$")
_SHA256 = re.compile(r"^sha256:[0-9a-f]{64}$")
_DISTRO_HOME = "/usr/lib/nvidia-cuda-toolkit"


def _fill(template, version):
    major, minor = version.split(".")
    return template.format(major=major, minor=minor)


def _major_minor(text):
    match = re.match(r"^(\d+)\.(\d+)", text or "")
    return "%s.%s" % match.groups() if match else None


def gcc_max(data, version):
    """Newest host gcc major nvcc ``version`` accepts (data ``cuda.host_gcc``), None when the data has none."""
    best = None
    for entry in data["cuda"].get("host_gcc") or []:
        if version_key(entry["cuda_min"]) <= version_key(version):
            if best is None or version_key(entry["cuda_min"]) > version_key(best["cuda_min"]):
                best = entry
    return best["gcc_max"] if best else None


def pick_host_compiler(cap, compilers, given):
    """Which g++ nvcc uses, or why none fits.

    ``cap``: newest gcc major nvcc accepts (None: unknown, anything goes). ``compilers``: list of
    ``{path, major}`` found on the host, the plain ``g++`` first then ``g++-N``. ``given``: the path the
    user set (``cuda_host_compiler``), or empty. Returns ``{"ccbin": path or None, "error": text or None}``;
    ``ccbin`` None means nvcc's default (``g++`` on PATH) fits. Never -allow-unsupported-compiler.
    """
    found = [c for c in compilers or [] if c.get("major") is not None]
    if given:
        match = [c for c in found if c["path"] == given]
        if not match:
            return {"ccbin": None, "error": "cuda_host_compiler '%s' is not a g++ that answers -dumpversion; give the path of "
                                            "an installed g++%s." % (given, " <= %d" % cap if cap else "")}
        if cap is not None and match[0]["major"] > cap:
            return {"ccbin": None, "error": "cuda_host_compiler '%s' is gcc %d, newer than this nvcc accepts (gcc <= %d); "
                                            "install g++-%d (apt-get install g++-%d) and set cuda_host_compiler: /usr/bin/g++-%d. "
                                            "-allow-unsupported-compiler is never used." % (given, match[0]["major"], cap, cap, cap, cap)}
        return {"ccbin": given, "error": None}
    if not found:
        return {"ccbin": None, "error": "no g++ on the host for nvcc; install g++%s (apt-get install %s), or set "
                                        "cuda_verify: false." % (
                                            "-%d" % cap if cap else "", "g++-%d" % cap if cap else "g++")}
    if cap is None or found[0]["major"] <= cap:
        return {"ccbin": None, "error": None}
    fitting = sorted((c for c in found[1:] if c["major"] <= cap), key=lambda c: c["major"], reverse=True)
    if fitting:
        return {"ccbin": fitting[0]["path"], "error": None}
    return {"ccbin": None, "error": "the host's g++ is gcc %d, newer than this nvcc accepts (gcc <= %d) and no older g++-N is "
                                    "installed; install g++-%d (apt-get install g++-%d) or set cuda_host_compiler. "
                                    "-allow-unsupported-compiler is never used." % (found[0]["major"], cap, cap, cap)}


def check_options(options):
    """Shape of the role's variables -> list of errors (each names its variable)."""
    errors = []
    method = options.get("method")
    if method not in METHODS:
        errors.append("cuda_method '%s' is not one of %s." % (method, ", ".join(METHODS)))
    versions = options.get("versions")
    if not isinstance(versions, list):
        errors.append("cuda_versions must be a list of quoted major.minor versions such as [\"12.8\", \"13.0\"], not %r." % (versions,))
        versions = []
    for pos, version in enumerate(versions):
        if not isinstance(version, str) or not _MAJOR_MINOR.match(version):
            errors.append("cuda_versions[%d] %r must be a quoted major.minor version such as \"13.0\"." % (pos, version))
    if len(set(map(str, versions))) != len(versions):
        errors.append("cuda_versions lists a version twice: %s." % ", ".join(map(str, versions)))
    default = options.get("default") or ""
    if default and (not isinstance(default, str) or not _MAJOR_MINOR.match(default)):
        errors.append("cuda_default_version %r must be empty or a quoted major.minor version such as \"13.0\"." % (default,))
    for pos, cc in enumerate(options.get("verify_archs") or []):
        if not isinstance(cc, str) or not _CC.match(cc):
            errors.append("cuda_verify_archs[%d] %r must be a quoted compute capability such as \"8.9\"." % (pos, cc))
    debs = options.get("local_repo_debs") or {}
    if not isinstance(debs, dict):
        errors.append("cuda_local_repo_debs must be a mapping of CUDA version to {url or src, checksum}.")
        debs = {}
    for version, deb in debs.items():
        var = "cuda_local_repo_debs['%s']" % version
        if not isinstance(deb, dict) or bool(deb.get("url")) == bool(deb.get("src")):
            errors.append("%s needs exactly one of url (http(s)/file URL of NVIDIA's cuda-repo-<distro>-X-Y-local .deb) "
                          "or src (that .deb on the controller)." % var)
        elif not _SHA256.match(str(deb.get("checksum") or "")):
            errors.append("%s.checksum must be sha256:<64 hex digits> of the .deb (sha256sum on the download page), "
                          "not %r." % (var, deb.get("checksum")))
    if options.get("compat") and method in ("distro", "pip_wheels"):
        errors.append("cuda_compat: true needs cuda_method nvidia_repo or local_repo (cuda-compat-X-Y is NVIDIA's package), "
                      "not %s." % method)
    if options.get("wsl") and method == "distro":
        errors.append("cuda_method: distro is refused on WSL: the distribution's toolkit pulls libcuda1, a driver library "
                      "that shadows Windows' driver; use cuda_method: nvidia_repo (NVIDIA's wsl-ubuntu repository).")
    if options.get("wsl") and options.get("compat"):
        errors.append("cuda_compat: true is refused on WSL: the driver comes from Windows.")
    return errors


def held_packages(dpkg_lines, versions):
    """``dpkg-query -W -f '${db:Status-Abbrev} ${Package}\\n'`` lines and toolkit versions -> the installed packages to
    hold: every package named ``*-X-Y`` for a toolkit X.Y (``cuda-toolkit-13-0``, ``cuda-nvcc-13-0``,
    ``libcublas-13-0``, ``gds-tools-13-0``). NVIDIA's repository names each part of a toolkit by its X-Y and the meta
    depends on its parts with ``>=``, so holding the meta alone would let ``apt upgrade`` move the parts.

    >>> held_packages(["ii  cuda-nvcc-13-0", "rc  cuda-nvcc-12-6", "ii  cuda-toolkit-13-0-config-common"], ["13.0"])
    ['cuda-nvcc-13-0']
    """
    suffixes = tuple("-" + str(v).replace(".", "-") for v in versions or [])
    held = []
    for line in dpkg_lines or []:
        parts = str(line).split()
        if len(parts) == 2 and parts[0] in ("ii", "hi") and suffixes and parts[1].endswith(suffixes):
            held.append(parts[1])
    return sorted(set(held))


def _toolkit(data, version, method, options):
    entry = {"version": version, "path": "%s/cuda-%s" % (PREFIX, version), "nvcc": "%s/cuda-%s/bin/nvcc" % (PREFIX, version),
             "packages": [], "repo_packages": [], "wheels": None, "local_deb": None, "gcc_max": gcc_max(data, version)}
    if method in ("nvidia_repo", "local_repo"):
        entry["packages"] = [_fill(data["cuda"]["toolkit_package"], version)]
        repo = data["cuda"].get("repo_packages") or {}
        entry["repo_packages"] = [_fill(t, version) for t in repo.get("toolkit") or [data["cuda"]["toolkit_package"]]]
        if options.get("compat") and repo.get("compat"):
            entry["packages"].append(_fill(repo["compat"], version))
            entry["repo_packages"].append(_fill(repo["compat"], version))
    if method == "local_repo":
        deb = dict((options.get("local_repo_debs") or {}).get(version) or {})
        if deb:
            deb["filename"] = (deb.get("url") or deb.get("src")).rstrip("/").rsplit("/", 1)[-1]
        entry["local_deb"] = deb or None
    if method == "pip_wheels":
        wheels = [w for w in data["cuda"].get("pip_wheels") or [] if w["cuda"] == version]
        entry["wheels"] = {k: wheels[0][k] for k in ("version", "root", "packages")} if wheels else None
    return entry


def _repo_lacks(data, os_key, versions, options):
    """cuda_method: nvidia_repo and a version NVIDIA's repository has no release of for this OS (data/compat.yml
    cuda.releases[].os; Ubuntu 26.04's ubuntu2604 starts at 13.3) -> errors naming the variable and what works."""
    distro_entry = (((data.get("os") or {}).get("distros") or {}).get(os_key or "")) or {}
    if not distro_entry:
        return []
    releases = data["cuda"].get("releases") or []
    offered = [r["version"] for r in releases if os_key in (r.get("os") or [])]
    archive = ((((data.get("distro_drivers") or {}).get("distros") or {}).get(os_key) or {}).get("distro") or {}).get("cuda_toolkit")
    repo = distro_entry.get("repo_distro") or os_key
    errors = []
    for pos, version in enumerate(versions):
        rel = next((r for r in releases if r["version"] == version), None)
        if rel is None or os_key in (rel.get("os") or []):
            continue
        var = "cuda_versions[%d]" % pos if options.get("versions") else "cuda_versions (the plan's %s)" % version
        ways = ["cuda_versions with one of %s" % ", ".join(offered) if offered else None]
        if archive and _major_minor(archive.get("nvcc") or archive["version"]) == version:
            ways.append("cuda_method: distro (%s's own %s %s)" % (os_key, archive["package"], archive["package_version"]))
        ways = [w for w in ways if w]
        errors.append("%s ('%s'): cuda_method: nvidia_repo, but NVIDIA's repository %s has no CUDA %s (data/compat.yml "
                      "lists it for %s only; %s); use %s." % (
                          var, version, repo, version, ", ".join(rel.get("os") or []) or "no OS",
                          "for %s it lists %s" % (os_key, ", ".join(offered)) if offered else
                          "it lists no CUDA release for %s" % os_key,
                          " or ".join(ways) if ways else "another OS"))
    return errors


def driver_problems(data, plan, versions, variable="cuda_versions"):
    """Toolkits the plan's driver cannot run -> refusals naming the variable (rt47b H1). The driver is the plan's
    (``stack.driver``: the branch, and ``version_available`` or ``min_version``), the floor the data's for the toolkit's
    major (``cuda.minor_compat``: ``branch_min``, ``driver_min``; NVIDIA's minor-version compatibility, CUDA Toolkit
    release notes Table 1): CUDA 13.x needs >= 580.65.06, so R570 runs 12.8 and not 13.0. A plan without a driver
    (Jetson, no GPU) refuses nothing here.

    >>> data = {"cuda": {"minor_compat": [{"major": 13, "driver_min": "580.65.06", "branch_min": 580}]}}
    >>> plan = {"stack": {"driver": {"branch": 570, "min_version": "570.26"}}}
    >>> driver_problems(data, plan, ["12.8"])
    []
    >>> driver_problems(data, plan, ["13.0"])[0].split(", but")[0]
    "cuda_versions[0] ('13.0'): CUDA 13.x needs driver >= 580.65.06 (data/compat.yml cuda.minor_compat, ?)"
    """
    driver = (((plan or {}).get("stack") or {}).get("driver")) if isinstance(plan, dict) else None
    if not isinstance(driver, dict) or not driver.get("branch"):
        return []
    branch = int(str(driver["branch"]))
    have = str(driver.get("version_available") or driver.get("min_version") or "")
    floors = {int(e["major"]): e for e in (data.get("cuda") or {}).get("minor_compat") or []}
    problems = []
    for pos, version in enumerate(versions):
        floor = floors.get(int(str(version).split(".", 1)[0]))
        if floor is None:
            continue
        short = branch < int(floor.get("branch_min") or 0) or (
            bool(have) and int(have.split(".", 1)[0]) == int(floor.get("branch_min") or -1)
            and version_key(have) < version_key(str(floor["driver_min"])))
        if short:
            var = "%s[%d]" % (variable, pos) if variable == "cuda_versions" else variable
            problems.append(
                "%s ('%s'): CUDA %s.x needs driver >= %s (data/compat.yml cuda.minor_compat, %s), but the plan's driver is "
                "R%s%s; use a toolkit R%s runs, or plan a newer driver (nvidia_driver_branch or "
                "dlbox_plan_request.driver_branch: %s or newer, in plan.yml). Nothing was changed." % (
                    var, version, str(version).split(".", 1)[0], floor["driver_min"], floor.get("source", "?"), branch,
                    " (%s)" % have if have else "", branch, floor.get("branch_min")))
    return problems


def decide(data, plan, options, resolve=None, installed=None, compilers=None):
    """The cuda role's whole decision. See the module docstring; returns ``{ok, errors, notes, ...}``."""
    errors = check_options(options)
    notes = []
    method = options.get("method")
    versions = list(options.get("versions") or []) if isinstance(options.get("versions"), list) else []
    installed = installed or {}
    out = {"ok": False, "errors": errors, "notes": notes, "method": method, "toolkits": [], "default": None,
           "remove": [], "archs": [], "repo_packages": [], "distro": None}
    if errors:
        return out
    if not isinstance(plan, dict) or not plan.get("ok"):
        errors.extend("the plan was refused (dlbox_plan): %s" % e for e in (plan or {}).get("errors") or ["no plan"])
        return out
    stack = plan.get("stack") or {}
    planned = (stack.get("cuda") or {}).get("version")
    os_key = (plan.get("host") or {}).get("os")

    if method == "distro":
        distro = (((data.get("distro_drivers") or {}).get("distros") or {}).get(os_key) or {}).get("distro") or {}
        toolkit = distro.get("cuda_toolkit")
        if not toolkit:
            errors.append("cuda_method: distro: %s has no CUDA toolkit in data/compat.yml; use cuda_method nvidia_repo." % os_key)
            return out
        distro_version = _major_minor(toolkit.get("nvcc") or toolkit["version"])
        if versions and versions != [distro_version]:
            errors.append("cuda_versions %s: cuda_method: distro installs only %s's %s, CUDA %s; leave "
                          "cuda_versions empty or [\"%s\"], or use cuda_method nvidia_repo." % (
                              versions, os_key, toolkit["package"], distro_version, distro_version))
            return out
        versions = [distro_version]
        # Debian's nvidia-cuda-toolkit: /usr/lib/nvidia-cuda-toolkit, nvcc in /usr/bin. Canonical's cuda-toolkit (Ubuntu
        # 26.04): NVIDIA's layout, the data's home (/usr/local/cuda-13.1), nvcc in its bin/ and not on PATH.
        home = toolkit.get("home") or _DISTRO_HOME
        # package versions the archive's toolkit needs at least (an -updates fix: Ubuntu 26.04's cuda-crt-13-1 for glibc 2.43)
        minimum = [{"package": m["package"], "version": m["version"], "suite": m["suite"]}
                   for m in (((data.get("os") or {}).get("distros") or {}).get(os_key) or {}).get("distro_cuda_minimum") or []]
        out["distro"] = {"version": distro_version, "package": toolkit["package"], "package_version": toolkit["package_version"],
                         "home": home, "nvcc": "%s/bin/nvcc" % home if toolkit.get("home") else "/usr/bin/nvcc"}
        if minimum:
            out["distro"]["minimum"] = minimum
        if planned and planned != distro_version and not options.get("versions"):
            notes.append("cuda_method: distro installs %s's %s %s, CUDA %s, not the plan's CUDA %s (NVIDIA's repository's; "
                         "cuda_method: nvidia_repo installs that one)." % (
                             os_key, toolkit["package"], toolkit["package_version"], distro_version, planned))
        for item in minimum:
            notes.append("cuda_method: distro needs %s %s or newer (%s; data/compat.yml os.distros.%s.distro_cuda_minimum): "
                         "keep that pocket enabled." % (item["package"], item["version"], item["suite"], os_key))
    elif not versions:
        if not planned:
            errors.append("cuda_versions is empty and the plan has no CUDA (no GPU was planned); name the toolkits, "
                          "e.g. cuda_versions: [\"13.0\"].")
            return out
        versions = [planned]

    # every toolkit must run on the plan's driver (the driver role installs the plan's: rt47b H1)
    errors.extend(driver_problems(data, plan, versions, "cuda_versions" if options.get("versions") else (
        "cuda_method: distro" if method == "distro" else "the plan's CUDA")))
    if errors:
        return out
    # versions the plan did not pick go through the resolver, exactly as plan.yml would decide them; plan.yml already
    # checked the toolkits of cuda_versions it planned (stack.cuda.toolkits)
    checked = (stack.get("cuda") or {}).get("toolkits") or []
    for pos, version in enumerate(versions):
        if version == planned or version in checked:
            continue
        sub = resolve(version) if resolve else {"ok": True}
        var = "cuda_versions[%d]" % pos if options.get("versions") else "cuda_method: distro"
        for problem in sub.get("errors") or []:
            errors.append("%s ('%s'): %s" % (var, version, problem))

    if method == "nvidia_repo" and not options.get("wsl"):
        errors.extend(_repo_lacks(data, os_key, versions, options))
        if errors:
            return out

    toolkits = [_toolkit(data, v, method, options) for v in versions]
    for pos, toolkit in enumerate(toolkits):
        var = "cuda_versions[%d]" % pos if options.get("versions") else "cuda_versions (the plan's %s)" % toolkit["version"]
        if method == "pip_wheels" and toolkit["wheels"] is None:
            have = [w["cuda"] for w in data["cuda"].get("pip_wheels") or []]
            errors.append("%s ('%s'): cuda_method: pip_wheels has no NVIDIA wheels listed for CUDA %s in data/compat.yml "
                          "(cuda.pip_wheels has %s); use cuda_method nvidia_repo or local_repo." % (
                              var, toolkit["version"], toolkit["version"], ", ".join(have) or "none"))
        if method == "local_repo" and toolkit["local_deb"] is None:
            errors.append("%s ('%s'): cuda_method: local_repo needs cuda_local_repo_debs['%s'] = {url or src, checksum: "
                          "sha256:...} for NVIDIA's cuda-repo-<distro>-%s-local .deb." % (
                              var, toolkit["version"], toolkit["version"], toolkit["version"].replace(".", "-")))

    installed_versions = [t["version"] for t in installed.get("cuda_toolkits") or []]
    family = {"nvidia_repo": ("nvidia_repo", "local_repo"), "local_repo": ("nvidia_repo", "local_repo"),
              "pip_wheels": ("pip_wheels",)}.get(method)
    for pos, toolkit in enumerate(toolkits):
        for item in installed.get("cuda_toolkits") or []:
            if family and item["version"] == toolkit["version"] and item["source"] not in family:
                errors.append("cuda_versions[%d] ('%s'): %s is already there, installed by %s; cuda_method: %s would write "
                              "over it. Move it away (nothing of it is touched) or use its method." % (
                                  pos, toolkit["version"], item["path"], item["source"], method))
    if method == "distro":
        toolkits[0].update(path=out["distro"]["home"], nvcc=out["distro"]["nvcc"])
        if options.get("default"):
            errors.append("cuda_default_version '%s': cuda_method: distro leaves /usr/local/cuda to the distribution's package "
                          "(its nvcc is %s); leave cuda_default_version empty." % (options["default"], out["distro"]["nvcc"]))
    else:
        default = options.get("default") or (planned if planned in versions else sorted(versions, key=version_key)[-1])
        if default not in versions and default not in installed_versions:
            errors.append("cuda_default_version '%s' is neither in cuda_versions (%s) nor installed (%s)." % (
                default, ", ".join(versions), ", ".join(installed_versions) or "none"))
        out["default"] = {"version": default, "path": "%s/cuda-%s" % (PREFIX, default)}

    # removal: only when asked, only what a known method installed, never the default
    for item in installed.get("cuda_toolkits") or []:
        if item["version"] in versions:
            continue
        if not options.get("remove_unlisted"):
            notes.append("CUDA %s at %s is not in cuda_versions and stays (cuda_remove_unlisted: false)." % (item["version"], item["path"]))
            continue
        if out["default"] and item["version"] == out["default"]["version"]:
            errors.append("cuda_default_version '%s' is a toolkit that cuda_remove_unlisted: true would remove; list it in "
                          "cuda_versions or pick another default." % item["version"])
            continue
        if item["source"] in ("nvidia_repo", "local_repo"):
            repo = data["cuda"].get("repo_packages") or {}
            globs = [_fill(t, item["version"]) for t in repo.get("toolkit") or [data["cuda"]["toolkit_package"]]
                     if "{minor}" in t]
            out["remove"].append({"version": item["version"], "path": item["path"], "source": item["source"], "packages": globs})
        elif item["source"] == "pip_wheels":
            out["remove"].append({"version": item["version"], "path": item["path"], "source": item["source"], "packages": []})
        else:
            notes.append("CUDA %s at %s was not installed by a method this role knows (%s) and stays; remove it by hand." % (
                item["version"], item["path"], item["source"]))

    archs = options.get("verify_archs") or (plan.get("host") or {}).get("compute_capabilities") or []
    out["archs"] = sorted(set(cc.replace(".", "") for cc in archs), key=int)
    if options.get("verify") and not out["archs"]:
        notes.append("no GPU in the plan and cuda_verify_archs is empty: nvcc compiles for its default architecture.")

    if options.get("verify"):
        for pos, toolkit in enumerate(toolkits):
            choice = pick_host_compiler(toolkit["gcc_max"], compilers, options.get("host_compiler") or "")
            toolkit["ccbin"] = choice["ccbin"]
            if choice["error"]:
                errors.append("CUDA %s (nvcc accepts gcc <= %s): %s" % (toolkit["version"], toolkit["gcc_max"], choice["error"]))
    else:
        for toolkit in toolkits:
            toolkit["ccbin"] = None

    repo_packages = []
    for toolkit in toolkits:
        repo_packages.extend(p for p in toolkit["repo_packages"] if p not in repo_packages)
    out.update(toolkits=toolkits, repo_packages=repo_packages, ok=not errors)
    return out


def distro_minimum_problems(minimum, policies, os_key=""):
    """The archive toolkit's package floors (decision ``distro.minimum``: [{package, version, suite}]) against what apt
    would give (``policies``: {package: ``apt-cache policy`` text}): one refusal a package whose installed and candidate
    versions are both older than its floor (or that apt does not know), naming the suite to enable. Ubuntu 26.04's
    cuda-crt-13-1 13.1.115-0ubuntu1 (resolute) breaks nvcc with glibc 2.43's math headers; 13.1.115-0ubuntu1.1
    (resolute-updates) fixes it (data/compat.yml os.distros.ubuntu-26.04.distro_cuda_minimum)."""
    problems = []
    for item in minimum or []:
        seen = _kernel.policy_versions((policies or {}).get(item["package"]))
        installed, candidate = seen["installed"], seen["candidate"]
        have = [v for v in (installed, candidate) if v]
        if any(debian_version_compare(v, item["version"]) >= 0 for v in have):
            continue
        got = "apt knows no version of it" if not have else "apt would give %s" % (candidate or installed)
        problems.append(
            "cuda_method: distro: %s needs %s %s or newer from %s, and %s (a mirror or cache without that pocket?). "
            "Enable %s (or your mirror of it) and run again, or use cuda_method: nvidia_repo (data/compat.yml "
            "os.distros.%s.distro_cuda_minimum). Nothing was changed." % (
                os_key or "this OS", item["package"], item["version"], item["suite"], got, item["suite"], os_key or "<os>"))
    return problems
