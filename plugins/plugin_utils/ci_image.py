# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What ``playbooks/ci_image.yml`` decides for a CI image (controller only, pure apart from the data handed in).

:func:`decide` takes the plan (``dlbox_plan``), data/compat.yml as the validating loader returns it, the image's
flavour, the image build's layer and what the Dockerfile says about the image (``dlbox_ci_image_env``: its ENV lines
and its ``org.dlbox.stack`` label, written before the plan is resolved) and returns::

    {"ok": bool, "errors": [...],           # each names the build argument or the variable at fault
     "stack": {...}, "label": "...",        # the resolved stack for the label (see image_stack), and its JSON text
     "system_cuda": bool, "parts": {...},   # NVIDIA's apt CUDA user space or not (see system_cuda), and what is installed
     "runtime": {"packages": [...], "repo_packages": [...], "nccl": [...]},   # NVIDIA's runtime set, filled in
     "hold": [...],                         # what apt-mark hold keeps at the installed version (cuBLAS, NCCL)
     "toolkit_host": [...],                 # toolkit flavour: what nvcc compiles with, installed first (build-essential)
     "require": "cuda>=13.0 ...",           # NVIDIA_REQUIRE_CUDA (see nvidia_require_cuda)
     "linker": {"paths": [...], "compat": None or {...}},   # ld.so.conf.d, and forward compatibility (see linker)
     "archs": "8.0;9.0", "cudaarchs": "80;90"}

:func:`image_identity` gives the ``org.opencontainers.image.*`` labels' values (version, source, revision, created)
that playbooks/ci_image_args.yml writes as build arguments.

The build has two layers (examples/Dockerfile): ``cuda`` (CUDA, cuDNN, NCCL) and ``frameworks`` (the Python
environments, then the label's check). The frameworks layer is handed the plan the cuda layer recorded
(``recorded``) and refuses a plan that would put another CUDA, cuDNN or NCCL beside it.
"""

from __future__ import annotations

import datetime
import json
import os
import re
import subprocess
from pathlib import Path

import yaml

LAYERS = ("all", "cuda", "frameworks")
FLAVOURS = ("runtime", "toolkit")
# the parts of the stack a CUDA layer holds: the frameworks layer may not plan them differently
CUDA_PARTS = ("cuda", "cudnn", "nccl")
FRAMEWORKS = ("pytorch", "tensorflow", "jax")
# A compute capability as PyTorch's TORCH_CUDA_ARCH_LIST takes it: "9.0", the architecture-specific "9.0a" / "10.0a" (sm_90a:
# the Hopper/Blackwell-only instructions FlashAttention-3 and DeepGEMM build for) and family "12.0f", and "+PTX" (PTX
# beside the SASS, so newer GPUs can JIT it): torch.utils.cpp_extension._get_cuda_arch_flags.
_ARCH = re.compile(r"^[0-9]{1,2}[.][0-9][af]?([+]PTX)?$")


def _fill(template, version):
    """``"cuda-libraries-{major}-{minor}"``, ``"13.0"`` -> ``"cuda-libraries-13-0"``."""
    major, minor = (str(version).split(".", 1) + [""])[:2]
    return template.replace("{major}", major).replace("{minor}", minor.split(".")[0])


def runtime_set(data, cuda_version, compat=False):
    """NVIDIA's runtime set for one toolkit (data/compat.yml ``cuda.runtime_set``), its templates filled in.

    ``compat``: the image also carries forward compatibility, ``cuda-compat-X-Y`` (``cuda.repo_packages.compat``), as
    every nvidia/cuda base image does.

    >>> runtime_set({"cuda": {"runtime_set": {"packages": ["cuda-libraries-{major}-{minor}"], "repo_packages": [],
    ...                                        "nccl": ["libnccl2"]}}}, "13.0")["packages"]
    ['cuda-libraries-13-0']
    """
    cuda = (data or {}).get("cuda") or {}
    entry = cuda.get("runtime_set") or {}
    if cuda_version is None:
        return {"packages": [], "repo_packages": [], "nccl": list(entry.get("nccl") or [])}
    packages = [_fill(t, cuda_version) for t in entry.get("packages") or []]
    compat_package = (cuda.get("repo_packages") or {}).get("compat")
    if compat and compat_package:
        packages.append(_fill(compat_package, cuda_version))
    return {"packages": packages,
            "repo_packages": [_fill(t, cuda_version) for t in entry.get("repo_packages") or []],
            "nccl": list(entry.get("nccl") or [])}


def held_packages(data, cuda_version, flavour="runtime", parts=None):
    """What the image holds with ``apt-mark hold`` (data/compat.yml ``cuda.runtime_set.hold``), as NVIDIA's images
    hold cuBLAS and NCCL: the runtime names, and the toolkit's in the toolkit flavour; cuBLAS only where the image
    installs CUDA, NCCL's only where it installs NCCL (``parts`` as for :func:`image_stack`).

    >>> held_packages({"cuda": {"runtime_set": {"hold": {"runtime": ["libcublas-{major}-{minor}", "libnccl2"],
    ...                                                  "toolkit": ["libcublas-dev-{major}-{minor}", "libnccl-dev"]}}}},
    ...               "13.0", "runtime", {"nccl": False})
    ['libcublas-13-0']
    """
    hold = (((data or {}).get("cuda") or {}).get("runtime_set") or {}).get("hold") or {}
    parts = parts or {}
    names = list(hold.get("runtime") or []) + (list(hold.get("toolkit") or []) if flavour == "toolkit" else [])
    out = []
    for name in names:
        is_nccl = name.startswith("libnccl")
        if is_nccl and not parts.get("nccl", True):
            continue
        if not is_nccl and (cuda_version is None or not parts.get("cuda", True)):
            continue
        filled = _fill(name, cuda_version) if cuda_version is not None else name
        if filled not in out:
            out.append(filled)
    return out


def _vkey(text):
    return tuple(int(p) if p.isdigit() else 0 for p in re.split(r"[.-]", str(text)))


def driver_floor(data, cuda_version):
    """The oldest driver an image of this CUDA runs on under the plan's rule, and the CUDA release that driver reports:
    (cuda, driver), e.g. ("13.0", "580.65.06") for any CUDA 13.x.

    The plan accepts a driver for CUDA X.Y by minor-version compatibility: any driver of at least the floor of the major
    family (data/compat.yml ``cuda.minor_compat``, NVIDIA's "Minor Version Compatibility" Table 1: 13.x >= 580, 12.x >=
    525), not the X.Y release's own driver (plugin_utils.stack_rules.driver_runs_cuda). The NVIDIA Container Toolkit
    compares ``cuda>=`` with the CUDA version the host driver reports (nvidia-container-cli's "unsatisfied condition:
    cuda>=12.8" on a 551.78 driver, which reports 12.4, SyneRBI/PETRIC2 issue 27), so ``cuda>=X.Y`` would refuse at
    ``docker run`` drivers the plan accepted. The floor driver reports the newest release of its major whose own driver
    (``toolkit_driver_min``) it meets: 580.65.06 -> 13.0, 525.60.13 -> 12.0, 450.80.02 -> 11.0. Without a floor for the
    major (before CUDA 11): (X.Y, the release's own driver).

    >>> driver_floor({"cuda": {"minor_compat": [{"major": 13, "driver_min": "580.65.06"}], "releases": [
    ...     {"version": "13.2", "toolkit_driver_min": "595.45.04"}, {"version": "13.0", "toolkit_driver_min": "580.65.06"}]}},
    ...     "13.2")
    ('13.0', '580.65.06')
    """
    if cuda_version is None:
        return None, None
    release = ".".join(str(cuda_version).split(".")[:2])
    major = release.split(".", maxsplit=1)[0]
    cuda = (data or {}).get("cuda") or {}
    releases = cuda.get("releases") or []
    own = next((r.get("toolkit_driver_min") for r in releases if str(r.get("version")) == release), None)
    floor = next((e for e in cuda.get("minor_compat") or [] if str(e.get("major")) == major), None)
    if not floor:
        return release, (None if own is None else str(own))
    driver = str(floor["driver_min"])
    met = [str(r["version"]) for r in releases if str(r.get("version", "")).split(".", maxsplit=1)[0] == major
           and r.get("toolkit_driver_min") and _vkey(r["toolkit_driver_min"]) <= _vkey(driver)
           and _vkey(r["version"]) <= _vkey(release)]
    reported = max(met, key=_vkey) if met else "%s.0" % major
    return reported, driver


def nvidia_require_cuda(data, cuda_version, compat=False):
    """The image's ``NVIDIA_REQUIRE_CUDA``: ``cuda>=M.m``, M.m the CUDA release that the plan's driver floor reports
    (:func:`driver_floor`: ``cuda>=13.0`` for any 13.x image, so the container toolkit admits every driver the plan
    admits by minor-version compatibility), and with forward compatibility in the image (``compat``, cuda-compat-X-Y)
    NVIDIA's ``brand=B,driver>=N,driver<N+1`` clauses for that CUDA release (data/compat.yml ``cuda.image_require``),
    less the brands forward compatibility does not support. Without cuda-compat no clause: an older driver is refused at
    ``docker run`` instead of failing at the first CUDA call.
    Returns (text, error); error names what is missing (no clauses known for that release).

    >>> nvidia_require_cuda({}, "13.0")
    ('cuda>=13.0', None)
    >>> nvidia_require_cuda({"cuda": {"image_require": {"clauses": [{"cuda": "13.0", "brands": ["tesla", "geforce"],
    ...     "branches": [535]}], "unsupported_brands": ["geforce"]}}}, "13.0", compat=True)
    ('cuda>=13.0 brand=tesla,driver>=535,driver<536', None)
    """
    if cuda_version is None:
        return "", None
    major_minor = ".".join(str(cuda_version).split(".")[:2])
    text = "cuda>=%s" % driver_floor(data, cuda_version)[0]
    if not compat:
        return text, None
    require = ((data or {}).get("cuda") or {}).get("image_require") or {}
    unsupported = set(require.get("unsupported_brands") or [])
    entries = [c for c in require.get("clauses") or [] if str(c.get("cuda")) == major_minor]
    if not entries:
        known = sorted({str(c.get("cuda")) for c in require.get("clauses") or []})
        return text, ("cuda_compat: true makes the image's NVIDIA_REQUIRE_CUDA carry NVIDIA's brand clauses for CUDA %s, "
                      "which data/compat.yml cuda.image_require does not have (it has %s): add them from NVIDIA's base "
                      "Dockerfile of that release, or build without cuda_compat" % (major_minor, ", ".join(known) or "none"))
    clauses = []
    for entry in entries:
        for branch in entry.get("branches") or []:
            for brand in entry.get("brands") or []:
                clause = "brand=%s,driver>=%d,driver<%d" % (brand, int(branch), int(branch) + 1)
                if brand not in unsupported and clause not in clauses:
                    clauses.append(clause)
    return " ".join([text] + clauses), None


def toolkit_host(data, cuda_version, flavour="runtime"):
    """What the toolkit flavour installs before the toolkit so that nvcc can compile (data/compat.yml
    ``cuda.toolkit_host``: build-essential, what NVIDIA's cuda-nvcc-X-Y Depends on): the cuda role verifies the toolkit
    by compiling for the image's architectures and refuses, before any change, a host without a g++ nvcc accepts, which
    a stock debian:12 or ubuntu:24.04 is. None in the runtime flavour (no compiler there) or without CUDA.

    >>> toolkit_host({"cuda": {"toolkit_host": {"packages": ["build-essential"]}}}, "13.0", "toolkit")
    ['build-essential']
    >>> toolkit_host({"cuda": {"toolkit_host": {"packages": ["build-essential"]}}}, "13.0", "runtime")
    []
    """
    if flavour != "toolkit" or cuda_version is None:
        return []
    return list((((data or {}).get("cuda") or {}).get("toolkit_host") or {}).get("packages") or [])


def devel_set(data, cuda_version):
    """NVIDIA's devel set for one toolkit (data/compat.yml ``cuda.devel_set``), its templates filled in: what
    nvidia/cuda's devel images install on top of the runtime set, far less than the ``cuda-toolkit-X-Y`` meta (no Nsight
    Systems, visual tools, gds-tools, cuda-gdb sources or documentation). ``before_13`` only for a toolkit older than
    13.0 (cuda-nvprof). Returns {"packages": [...], "nccl": [...]}; empty without CUDA.

    >>> devel_set({"cuda": {"devel_set": {"packages": ["cuda-minimal-build-{major}-{minor}"],
    ...                                   "before_13": ["cuda-nvprof-{major}-{minor}"], "nccl": ["libnccl-dev"]}}}, "12.8")
    {'packages': ['cuda-minimal-build-12-8', 'cuda-nvprof-12-8'], 'nccl': ['libnccl-dev']}
    """
    entry = (((data or {}).get("cuda") or {}).get("devel_set")) or {}
    if cuda_version is None:
        return {"packages": [], "nccl": []}
    templates = list(entry.get("packages") or [])
    if _vkey(cuda_version) < _vkey("13.0"):
        templates += list(entry.get("before_13") or [])
    return {"packages": [_fill(t, cuda_version) for t in templates], "nccl": list(entry.get("nccl") or [])}


def cuda_target(machine):
    """The ``targets/<name>`` folder of NVIDIA's toolkit for a machine (``uname -m``): sbsa-linux on aarch64 servers."""
    return "sbsa-linux" if machine == "aarch64" else "%s-linux" % (machine or "x86_64")


def linker(data, cuda_version, machine="x86_64", compat=False):
    """The image's library search path, as NVIDIA's images lay it::

        {"paths": ["/usr/local/cuda-13.0/targets/x86_64-linux/lib"],   # /etc/ld.so.conf.d/dlbox-ci-cuda.conf
         "compat": None or {"dir": "/usr/local/cuda-13.0/compat",     # what cuda-compat-13-0 installs
                            "seen_as": "/usr/local/cuda/compat",       # where NVIDIA's container toolkit looks
                            "library": "libcuda.so.*.*"}}

    The forward-compatibility folder is never on the static path (``paths``, LD_LIBRARY_PATH): its libcuda is the
    user-space driver of a newer branch and breaks a host whose driver is as new or newer (error 803). NVIDIA's images
    leave it off; the NVIDIA Container Toolkit adds it at container start, and only under an older host driver
    (data/compat.yml ``cuda.image_compat``). The image must therefore show it where the toolkit looks: ``seen_as``
    resolving to ``dir``, with exactly one regular file matching ``library``.

    >>> linker({}, "13.0")["paths"]
    ['/usr/local/cuda-13.0/targets/x86_64-linux/lib']
    >>> linker({"cuda": {"image_compat": {"dir": "/usr/local/cuda/compat", "library": "libcuda.so.*.*"}}}, "13.0",
    ...        "aarch64", compat=True)["compat"]["dir"]
    '/usr/local/cuda-13.0/compat'
    """
    if cuda_version is None:
        return {"paths": [], "compat": None}
    release = ".".join(str(cuda_version).split(".")[:2])
    home = "/usr/local/cuda-%s" % release
    out = {"paths": ["%s/targets/%s/lib" % (home, cuda_target(machine))], "compat": None}
    found = ((data or {}).get("cuda") or {}).get("image_compat") or {}
    if compat and found.get("dir"):
        seen_as = str(found["dir"]).rstrip("/")
        # the toolkit's folder names the /usr/local/cuda link; this image's is the plan's toolkit folder
        out["compat"] = {"dir": home + seen_as[len("/usr/local/cuda"):] if seen_as.startswith("/usr/local/cuda/") else seen_as,
                         "seen_as": seen_as, "library": str(found.get("library") or "libcuda.so.*.*")}
    return out


def _collection_info(root):
    """(version, repository) of the collection at ``root``: MANIFEST.json where installed, galaxy.yml in a checkout."""
    manifest = root / "MANIFEST.json"
    try:
        if manifest.is_file():
            info = json.loads(manifest.read_text(encoding="utf-8")).get("collection_info") or {}
        else:
            info = yaml.safe_load((root / "galaxy.yml").read_text(encoding="utf-8")) or {}
    except (OSError, ValueError, yaml.YAMLError):
        info = {}
    version, repository = info.get("version"), info.get("repository")
    return (None if version in (None, "") else str(version)), (None if not repository else str(repository))


def _git_revision(root):
    """The commit of a git checkout at ``root`` (None elsewhere: an installed collection has no history)."""
    if not (root / ".git").exists():
        return None
    try:
        proc = subprocess.run(["git", "-C", str(root), "rev-parse", "--verify", "HEAD"], capture_output=True, text=True,
                              timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    revision = proc.stdout.strip()
    return revision if proc.returncode == 0 and re.match(r"^[0-9a-f]{40,64}$", revision) else None


def image_identity(root=None, environ=None, now=None):
    """The ``org.opencontainers.image.*`` labels of an image this collection bakes, where known::

        {"version": "0.1.0", "source": "https://github.com/...", "revision": "<commit>" or None, "created": "...Z"}

    version and source: the collection's (MANIFEST.json, or galaxy.yml in a checkout); revision: the checkout's
    commit, None for an installed collection; created: RFC 3339 in UTC, from ``SOURCE_DATE_EPOCH`` where set (a
    reproducible build), else ``now``.
    """
    root = Path(root) if root else Path(__file__).resolve().parents[2]
    environ = os.environ if environ is None else environ
    version, source = _collection_info(root)
    epoch = str(environ.get("SOURCE_DATE_EPOCH") or "").strip()
    if epoch.isdigit():
        when = datetime.datetime.fromtimestamp(int(epoch), tz=datetime.timezone.utc)
    else:
        when = now or datetime.datetime.now(tz=datetime.timezone.utc)
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.timezone.utc)
    created = when.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"version": version, "source": source, "revision": _git_revision(root), "created": created}


def _version(stack, part):
    entry = (stack or {}).get(part)
    if isinstance(entry, dict):
        value = entry.get("version")
        return None if value is None else str(value)
    return None


def framework_wheels(plan, environments=None):
    """The PyTorch wheel variants the image's environments install, as the python_env role picks them (an environment's
    ``variant``, ``auto`` or none: the plan's ``stack.pytorch.variant``; no environments given: one pytorch environment
    of the plan's variant). A cuXXX (and PyPI's Linux) torch wheel loads CUDA, cuDNN and NCCL from its own nvidia-*
    wheels, at the versions it pins, not the image's system libraries that the label's cuda/cudnn/nccl name; a cpu
    one loads none. Returns {"pytorch": ["cu130"]}, {} without PyTorch.

    >>> framework_wheels({"stack": {"pytorch": {"version": "2.13.0", "variant": "cu130"}}},
    ...                  [{"name": "torch", "frameworks": ["pytorch"], "variant": "cpu"}, {"name": "tf", "frameworks": ["tensorflow"]}])
    {'pytorch': ['cpu']}
    """
    pytorch = ((plan or {}).get("stack") or {}).get("pytorch")
    if not isinstance(pytorch, dict) or not pytorch.get("version"):
        return {}
    planned = str(pytorch.get("variant") or "")
    if not environments:
        variants = [planned] if planned else []
    else:
        variants = [planned if env.get("variant") in (None, "", "auto") else str(env["variant"])
                    for env in environments if isinstance(env, dict) and "pytorch" in (env.get("frameworks") or [])]
    variants = sorted(set(v for v in variants if v))
    return {"pytorch": variants} if variants else {}


SYSTEM_CUDA = ("auto", True, False)
_CUDA_WHEEL = re.compile(r"^cu[0-9]{3,}$")


def _setting(value):
    """dlbox_ci_system_cuda as given (auto, a boolean, or its YAML/JSON text) -> "auto", True, False, or None if bad."""
    if value is None:
        return "auto"
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("", "auto"):
        return "auto"
    if text in ("true", "yes", "on", "1"):
        return True
    if text in ("false", "no", "off", "0"):
        return False
    return None


def environments_carry_cuda(plan, environments=None):
    """Whether every framework environment of the image loads CUDA from its own wheels, as the python_env role builds
    them (plugin_utils.python_env_plan.environment_request): (carry, reasons).

    A cuXXX torch wheel (and the plan's own CUDA build, variant auto, or PyPI's CUDA build, variant pypi) depends on
    NVIDIA's nvidia-* wheels (cuda-runtime, cublas, cudnn, nccl, ...) at the versions it pins and loads those, never the
    system's; TensorFlow's [and-cuda] extra does the same. A cpu torch, TensorFlow without [and-cuda] (it loads the
    system's CUDA and cuDNN), an environment without a framework (its packages are not known to carry CUDA) and an image
    without environments do not. ``environments``: python_env_environments; empty: the role's default, one per framework
    of the plan with the plan's variant. ``reasons``: one line per environment that does not carry it.

    >>> environments_carry_cuda({"stack": {"pytorch": {"version": "2.13.0", "variant": "cu130", "cuda": "13.0"}}})
    (True, [])
    >>> environments_carry_cuda({"stack": {"pytorch": {"version": "2.13.0", "variant": "cu130", "cuda": "13.0"}}},
    ...                         [{"name": "t", "frameworks": ["pytorch"], "variant": "cpu"}])[0]
    False
    """
    stack = (plan or {}).get("stack") or {}
    pytorch = stack.get("pytorch") if isinstance(stack.get("pytorch"), dict) else None
    tensorflow = stack.get("tensorflow") if isinstance(stack.get("tensorflow"), dict) else None
    if not environments:
        environments = ([{"name": "pytorch", "frameworks": ["pytorch"]}] if pytorch and pytorch.get("version") else []) + \
                       ([{"name": "tensorflow", "frameworks": ["tensorflow"]}] if tensorflow and tensorflow.get("version") else [])
    reasons = []
    for env in environments:
        if not isinstance(env, dict):
            continue
        name = env.get("name")
        frameworks = list(env.get("frameworks") or [])
        variant = env.get("variant")
        variant = None if variant in (None, "", "auto") else str(variant)
        if not frameworks:
            reasons.append("environment %s has no framework (its packages may link the system's CUDA)" % name)
        for framework in frameworks:
            if framework == "pytorch":
                planned = bool(pytorch and pytorch.get("cuda"))
                carries = bool(_CUDA_WHEEL.match(variant)) if variant not in (None, "pypi") else planned
                if not carries:
                    reasons.append("environment %s's torch (variant %s) carries no CUDA"
                                   % (name, variant or (pytorch or {}).get("variant") or "none"))
            elif framework == "tensorflow":
                if not (tensorflow and tensorflow.get("extra") == "and-cuda" and variant != "cpu"):
                    reasons.append("environment %s's TensorFlow has no [and-cuda] extra: it loads the system's CUDA and "
                                   "cuDNN" % name)
            else:
                reasons.append("environment %s's %s is not known to carry CUDA" % (name, framework))
    if not environments:
        reasons.append("the image has no framework environment")
    return not reasons, reasons


def system_cuda(plan, flavour="runtime", setting="auto", parts=None, environments=None, compat=False):
    """Whether the image gets NVIDIA's apt CUDA user space (the runtime set or the toolkit, and cuDNN and NCCL from apt):
    (bool, error).

    ``setting`` (dlbox_ci_system_cuda): true or false as asked; ``auto`` (the default): always in the toolkit flavour
    (it is NVIDIA's apt toolkit, what a build compiles and links against) and with forward compatibility (``compat``:
    cuda-compat-X-Y comes with NVIDIA's runtime set); in the runtime flavour only where the image's frameworks do not
    bring their own (:func:`environments_carry_cuda`): a cu130 torch's nvidia-* wheels are CUDA 13's runtime, cuBLAS,
    cuDNN and NCCL already, and a second copy from apt doubles the image for nothing the framework loads.
    ``parts``: as for :func:`image_stack`; without CUDA in the plan (``cuda`` false) there is none either way.

    >>> system_cuda({"stack": {"cuda": {"version": "13.0"}, "pytorch": {"version": "2.13.0", "variant": "cu130", "cuda": "13.0"}}})
    (False, None)
    >>> system_cuda({"stack": {"cuda": {"version": "13.0"}, "pytorch": {"version": "2.13.0", "variant": "cu130", "cuda": "13.0"}}},
    ...             "toolkit")
    (True, None)
    """
    parts = parts or {}
    wanted = _setting(setting)
    if wanted is None:
        return True, "dlbox_ci_system_cuda must be auto, true or false, not %s" % json.dumps(setting)
    if not parts.get("cuda", True) or _version((plan or {}).get("stack"), "cuda") is None:
        return False, None
    if wanted is False and flavour == "toolkit":
        return True, ("dlbox_ci_system_cuda false cannot go with dlbox_ci_cuda toolkit: the toolkit flavour is NVIDIA's "
                      "apt toolkit (nvcc, headers, stubs); use dlbox_ci_cuda runtime")
    if wanted is False and compat:
        return True, ("dlbox_ci_system_cuda false cannot go with cuda_compat true: forward compatibility is NVIDIA's apt "
                      "package cuda-compat-X-Y, installed with the runtime set")
    if wanted is not None and wanted != "auto":
        return wanted, None
    if flavour == "toolkit" or compat or not parts.get("python_env", True):
        return True, None
    return not environments_carry_cuda(plan, environments)[0], None


def image_stack(plan, parts=None, data=None, environments=None, system=True):
    """The resolved stack an image carries in its ``org.dlbox.stack`` label.

    ``parts``: which parts the image installs ({"cudnn": bool, "nccl": bool, "python_env": bool}; absent = yes).
    ``cuda``, ``cudnn`` and ``nccl`` are the image's system libraries (NVIDIA's apt packages, on the dynamic linker's
    path: what a job that links CUDA itself uses); ``framework_wheels`` the PyTorch wheel variants its environments hold
    (:func:`framework_wheels`): a cuXXX torch loads its own nvidia-* wheels' CUDA libraries, not those.
    ``system_cuda`` (``system``, :func:`system_cuda`): whether the image has NVIDIA's apt CUDA user space; without it
    ``cudnn`` and ``nccl`` are null (the framework wheels carry their own) and ``cuda`` is the plan's CUDA, the one the
    image's NVIDIA_REQUIRE_CUDA and CUDA_VERSION name.
    ``driver_min`` is the oldest driver the image's CUDA runs on under the plan's rule, the one its
    ``NVIDIA_REQUIRE_CUDA`` admits: with ``data``, the minor-version compatibility floor of the CUDA major
    (:func:`driver_floor`: 580.65.06 for 13.x); without, or for a major without one, the toolkit's own driver (plan
    ``stack.cuda.toolkit_driver_min``).

    >>> image_stack({"stack": {"cuda": {"version": "13.0", "toolkit_driver_min": "580.65.06"},
    ...              "cudnn": {"version": "9.20.0.48"}, "nccl": {"version": "2.27.7"},
    ...              "pytorch": {"version": "2.13.0", "variant": "cu130"}}})
    ... # doctest: +NORMALIZE_WHITESPACE
    {'driver_min': '580.65.06', 'cuda': '13.0', 'system_cuda': True, 'cudnn': '9.20.0.48', 'nccl': '2.27.7',
     'frameworks': {'pytorch': '2.13.0'}, 'framework_wheels': {'pytorch': ['cu130']}}
    """
    stack = (plan or {}).get("stack") or {}
    parts = parts or {}
    cuda = stack.get("cuda") if isinstance(stack.get("cuda"), dict) else {}
    driver = None if cuda.get("toolkit_driver_min") is None else str(cuda["toolkit_driver_min"])
    if data is not None and _version(stack, "cuda") is not None:
        driver = driver_floor(data, _version(stack, "cuda"))[1] or driver
    out = {"driver_min": driver, "cuda": _version(stack, "cuda"), "system_cuda": bool(system)}
    for part in ("cudnn", "nccl"):
        out[part] = _version(stack, part) if parts.get(part, True) and system else None
    frameworks = {}
    if parts.get("python_env", True):
        frameworks = {name: _version(stack, name) for name in FRAMEWORKS if _version(stack, name)}
    out["frameworks"] = frameworks
    out["framework_wheels"] = framework_wheels(plan, environments) if frameworks.get("pytorch") else {}
    return out


def stack_label(stack):
    """The label's text: compact JSON, keys in order (the same stack always gives the same label)."""
    return json.dumps(stack, sort_keys=True, separators=(",", ":"))


def _archs(archs):
    """TORCH_CUDA_ARCH_LIST and CMake's CUDAARCHS of the same capabilities: "9.0" -> "90" (CMake builds SASS and PTX for
    a bare number, CMAKE_CUDA_ARCHITECTURES), "9.0a" -> "90a", "9.0+PTX" -> "90" (PTX is in the bare number already)."""
    texts = [str(a) for a in archs or []]
    return ";".join(texts), ";".join(a.replace("+PTX", "").replace(".", "") for a in texts)


def _label_problem(given, stack):
    """The ``DLBOX_STACK`` argument (JSON text) against the resolved stack: None when they agree."""
    try:
        said = json.loads(given) if isinstance(given, str) else given
    except ValueError:
        said = None
    if said == stack:
        return None
    return ("DLBOX_STACK (the org.dlbox.stack label, dlbox_ci_image_env.stack) is %s, but the plan resolved %s: build "
            "with --build-arg DLBOX_STACK='%s' (playbooks/ci_image_args.yml writes it)"
            % (json.dumps(given) if given not in (None, "") else "empty", stack_label(stack), stack_label(stack)))


def decide(plan, data, flavour="runtime", layer="all", image_env=None, archs=None, parts=None, recorded=None, compat=False,
           machine="x86_64", environments=None, system="auto", recorded_layer=None):
    """Everything the CI image playbook needs (see the module docstring); refusals name what to change.

    ``compat``: the image carries cuda-compat-X-Y (``cuda_compat: true``), which adds NVIDIA's brand clauses to
    NVIDIA_REQUIRE_CUDA and cuda-compat-X-Y to the runtime set, and the folder the toolkit must find (:func:`linker`).
    ``machine``: the image's ``uname -m`` (the toolkit's targets folder). ``environments``: python_env_environments
    (the label's framework_wheels). ``system``: dlbox_ci_system_cuda (:func:`system_cuda`); without NVIDIA's apt CUDA
    user space the image installs no CUDA, cuDNN or NCCL package (``parts``: the effective parts, for the playbook).
    ``recorded_layer``: what the cuda layer recorded of itself ({"system_cuda": bool}); the frameworks layer refuses
    to decide otherwise (its environments are not those the cuda layer decided for)."""
    errors = []
    image_env = image_env or {}
    stack = (plan or {}).get("stack") or {}
    cuda_version = _version(stack, "cuda")
    archs_text, cudaarchs = _archs(archs)
    if layer not in LAYERS:
        errors.append("dlbox_ci_layer must be one of %s, not %r" % (", ".join(LAYERS), layer))
    if flavour not in FLAVOURS:
        errors.append("dlbox_ci_cuda must be one of %s, not %r" % (", ".join(FLAVOURS), flavour))
    bad = [str(a) for a in archs or [] if not _ARCH.match(str(a))]
    if not archs or bad:
        errors.append("dlbox_ci_cuda_archs must be compute capabilities such as [\"8.0\", \"9.0\"], not %s" % json.dumps(archs))
    # the Dockerfile's ENV lines are written before the plan is resolved: they must say what it resolved to
    if "cuda" in image_env and str(image_env["cuda"]) != str(cuda_version):
        errors.append("DLBOX_CUDA (NVIDIA_REQUIRE_CUDA, dlbox_ci_image_env.cuda) is %s, but the plan resolved CUDA %s: pin "
                      "the CUDA in dlbox_plan_request and pass the same" % (json.dumps(image_env["cuda"]), cuda_version))
    require, require_problem = nvidia_require_cuda(data, cuda_version, compat=bool(compat))
    if require_problem:
        errors.append(require_problem)
    elif "nvidia_require_cuda" in image_env and str(image_env["nvidia_require_cuda"]) != require:
        errors.append("DLBOX_NVIDIA_REQUIRE_CUDA (NVIDIA_REQUIRE_CUDA, dlbox_ci_image_env.nvidia_require_cuda) is %s, but "
                      "the plan and cuda_compat give %s: pass --build-arg DLBOX_NVIDIA_REQUIRE_CUDA='%s' "
                      "(playbooks/ci_image_args.yml writes it)"
                      % (json.dumps(image_env["nvidia_require_cuda"]), json.dumps(require), require))
    if "torch_cuda_arch_list" in image_env and str(image_env["torch_cuda_arch_list"]) != archs_text:
        errors.append("DLBOX_CUDA_ARCHS (TORCH_CUDA_ARCH_LIST) is %s, but dlbox_ci_cuda_archs give %s"
                      % (json.dumps(image_env["torch_cuda_arch_list"]), archs_text))
    if "cudaarchs" in image_env and str(image_env["cudaarchs"]) != cudaarchs:
        errors.append("DLBOX_CUDAARCHS (CUDAARCHS) is %s, but dlbox_ci_cuda_archs give %s"
                      % (json.dumps(image_env["cudaarchs"]), cudaarchs))
    has_system, system_problem = system_cuda(plan, flavour, system, parts, environments, compat=bool(compat))
    if system_problem:
        errors.append(system_problem)
    effective = dict(parts or {})
    effective.update({"cuda": bool(has_system), "cudnn": bool(has_system and (parts or {}).get("cudnn", True)),
                      "nccl": bool(has_system and (parts or {}).get("nccl", True)),
                      "python_env": bool((parts or {}).get("python_env", True))})
    resolved = image_stack(plan, parts, data, environments, system=has_system)
    if layer in ("all", "frameworks") and "stack" in image_env:
        problem = _label_problem(image_env["stack"], resolved)
        if problem:
            errors.append(problem)
    if layer == "frameworks":
        below = ((recorded or {}).get("stack") or {}) if isinstance(recorded, dict) else {}
        if not below:
            errors.append("the frameworks layer finds no plan recorded by the cuda layer (dlbox_ci_record): build the "
                          "cuda layer first (examples/Dockerfile does)")
        else:
            moved = ["%s %s (cuda layer: %s)" % (p, _version(stack, p), _version(below, p)) for p in CUDA_PARTS
                     if _version(stack, p) != _version(below, p)]
            if moved:
                errors.append("the frameworks layer's plan would change what the cuda layer installed: %s; pin them in "
                              "DLBOX_PLAN's dlbox_plan_request, which both layers read" % ", ".join(moved))
        below_system = (recorded_layer or {}).get("system_cuda") if isinstance(recorded_layer, dict) else None
        if below and below_system is None:
            errors.append("the frameworks layer finds no record of the cuda layer's own decision (ci-layer.json beside "
                          "dlbox_ci_record): build the cuda layer with this collection first")
        elif below and bool(below_system) != bool(has_system):
            errors.append("the cuda layer %s NVIDIA's apt CUDA user space, but for these framework environments "
                          "dlbox_ci_system_cuda auto %s it (%s): the cuda layer does not read DLBOX_FRAMEWORK_VARS_FILE; "
                          "set dlbox_ci_system_cuda true or false in DLBOX_VARS_FILE, which both layers read"
                          % ("installed" if below_system else "left out", "wants" if has_system else "leaves out",
                             "; ".join(environments_carry_cuda(plan, environments)[1])
                             or "every environment loads CUDA from its own nvidia-* wheels"))
    system_version = cuda_version if has_system else None
    return {"ok": not errors, "errors": errors, "stack": resolved, "label": stack_label(resolved),
            "system_cuda": bool(has_system), "parts": effective,
            "runtime": runtime_set(data, system_version, compat=bool(compat)),
            "hold": held_packages(data, system_version, flavour, effective), "require": require,
            "toolkit_host": toolkit_host(data, system_version, flavour),
            "linker": linker(data, system_version, machine, compat=bool(compat)),
            "archs": archs_text, "cudaarchs": cudaarchs}
