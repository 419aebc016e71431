# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Decisions of the ``python_env`` role, on the controller (pure; behind the ``python_env_*`` filters).

The role wires these; nothing here touches a host (the request values an environment may set - python,
variant, pytorch, tensorflow - are checked with the resolver's own patterns, ``stack_input``):

* ``check_environments``: refuse a bad ``python_env_environments`` list, naming the item and key;
* ``environment_request``: one environment's requirements from its stack (the plan's entries for
  PyTorch, TensorFlow and Python), and the refusal of two CUDA majors in one environment;
* ``pip_index_args``: index, extra index, find-links and proxy options for pip;
* ``venv_pip_conf``: the environment's own ``pip.conf`` where its PyTorch index replaces PyPI (a Jetson's), so a
  later ``pip install`` in it keeps to that index;
* ``parse_dist_filename`` / ``cuda_majors_of_wheels`` / ``wheel_mix_error``: what the downloaded
  wheels really carry (``nvidia-cublas-cu12`` -> CUDA 12, ``nvidia-cuda-runtime 13.0.96`` -> 13);
* ``parse_sha256sum`` / ``render_lock``: a ``pip install --require-hashes`` lock of what is installed;
* ``wheel_cuda_summary`` / ``driver_floor``: the CUDA and cuDNN the wheels carry, the driver they need.

Vendor facts (which driver a CUDA major needs, which versions exist) come from ``data/compat.yml``
through the caller; only the wheel naming convention is parsed here.
"""

from __future__ import annotations

import hashlib
import json
import re

from ansible_collections.dlbox.stack.plugins.plugin_utils import stack_input

FRAMEWORKS = ("pytorch", "tensorflow")
# Framework -> the module dlbox-check imports.
MODULES = {"pytorch": "torch", "tensorflow": "tensorflow"}
ENV_KEYS = (
    "name", "frameworks", "pytorch", "tensorflow", "variant", "python", "torchvision", "torchaudio", "packages",
    "requirements", "owner", "group", "jupyter_kernel", "gpu_required",
)
# Keys of an environment that re-decide its stack (anything else is wiring).
STACK_KEYS = ("pytorch", "tensorflow", "variant", "python")
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_CUDA_VARIANT_RE = re.compile(r"^cu\d{3}$")
_CU_SUFFIX_RE = re.compile(r"-cu(\d{2})$")
_NORMALISE_RE = re.compile(r"[-_.]+")
_SHA256_LINE_RE = re.compile(r"^([0-9a-f]{64}) [ *](.+)$")
_SDIST_EXTS = (".tar.gz", ".zip", ".tar.bz2")


def normalise_name(name):
    """PEP 503 name: ``"Jinja2"`` -> ``"jinja2"``, ``"typing_extensions"`` -> ``"typing-extensions"``."""
    return _NORMALISE_RE.sub("-", str(name)).lower()


def _major(version):
    match = re.match(r"^\s*(\d+)", str(version or ""))
    return int(match.group(1)) if match else None


# --------------------------------------------------------------------------------------------
# The environments list
# --------------------------------------------------------------------------------------------


def check_environments(environments, var="python_env_environments"):
    """Errors in the environments list, each naming ``var[i].key``; ``[]`` when it is usable.

    ``[{"name": "a"}, {"name": "a"}]`` -> ``["python_env_environments[1].name: 'a' is used twice ..."]``.
    """
    if not isinstance(environments, list):
        return ["%s must be a list of environments such as [{name: torch, frameworks: [pytorch]}], not %s."
                % (var, type(environments).__name__)]
    errors = []
    seen = {}
    for index, env in enumerate(environments):
        where = "%s[%d]" % (var, index)
        if not isinstance(env, dict):
            errors.append("%s must be a mapping such as {name: torch, frameworks: [pytorch]}." % where)
            continue
        unknown = sorted(set(env) - set(ENV_KEYS))
        if unknown:
            errors.append("%s: unknown keys %s; known keys: %s." % (where, ", ".join(unknown), ", ".join(ENV_KEYS)))
        name = env.get("name")
        if not isinstance(name, str) or not _NAME_RE.match(name):
            errors.append("%s.name must be letters, digits, '.', '_' or '-' (it becomes a directory name); got %r."
                          % (where, name))
        elif name in seen:
            errors.append("%s.name: '%s' is used twice (also by %s[%d]); every environment needs its own name."
                          % (where, name, var, seen[name]))
        else:
            seen[name] = index
        frameworks = env.get("frameworks", [])
        if not isinstance(frameworks, list) or any(f not in FRAMEWORKS for f in frameworks):
            errors.append("%s.frameworks must be a list of %s; got %r." % (where, " and ".join(FRAMEWORKS), frameworks))
        variant = env.get("variant", "auto")
        if not isinstance(variant, str) or not (variant == "auto" or stack_input.VARIANT.match(variant)):
            errors.append("%s.variant must be auto (the plan's), cpu, pypi or cuXXX such as cu130; got %r." % (where, variant))
        python = env.get("python")
        # a number is refused: YAML reads 3.10 as 3.1
        if python not in (None, "") and not (isinstance(python, str) and stack_input.PYTHON.match(python)):
            errors.append("%s.python must be a version such as '3.11' (quoted), or empty for the plan's; got %r."
                          % (where, python))
        for key in ("pytorch", "tensorflow"):
            value = env.get(key)
            if value not in (None, "") and not (isinstance(value, str) and stack_input.RELEASE.match(value)):
                errors.append("%s.%s must be a version such as '2.13' or '2.13.0' (quoted), or empty for the plan's; got %r."
                              % (where, key, value))
            if value not in (None, "") and isinstance(frameworks, list) and key not in frameworks:
                errors.append("%s.%s is set but %s is not in its frameworks %r." % (where, key, key, frameworks))
        packages = env.get("packages", [])
        if not isinstance(packages, list) or any(not isinstance(p, str) or not p.strip() for p in packages):
            errors.append("%s.packages must be a list of pip requirements such as ['numpy<3', 'pandas']; got %r."
                          % (where, packages))
        for key in ("torchvision", "torchaudio", "jupyter_kernel"):
            if key in env and not isinstance(env[key], bool):
                errors.append("%s.%s must be true or false; got %r." % (where, key, env[key]))
        gpu = env.get("gpu_required", "auto")
        if not isinstance(gpu, bool) and gpu != "auto":
            errors.append("%s.gpu_required must be auto (when the plan has a GPU), true or false; got %r." % (where, gpu))
    return errors


def stack_request(env, plan_request=None):
    """The resolver request for an environment that re-decides its stack, else None (the plan's stack).

    The host's own request is kept except ``cuda``/``cudnn`` (framework wheels carry their own CUDA);
    the environment's versions, variant and Python replace the host's.
    """
    base = dict(plan_request or {})
    if not any(env.get(key) not in (None, "", "auto") for key in STACK_KEYS):
        return None
    for key in ("cuda", "cudnn"):
        base.pop(key, None)
    frameworks = env.get("frameworks", [])
    if env.get("pytorch") not in (None, ""):
        base["pytorch"] = str(env["pytorch"])
    if "tensorflow" in frameworks:
        base["tensorflow"] = str(env.get("tensorflow") or base.get("tensorflow") or "latest")
    if env.get("variant") not in (None, "", "auto"):
        base["pytorch_variant"] = env["variant"]
    if env.get("python") not in (None, ""):
        base["python"] = str(env["python"])
    return base


def needs_tensorflow_plan(env, stack):
    """An environment with TensorFlow whose plan has none (TensorFlow is planned only when requested)."""
    return "tensorflow" in env.get("frameworks", []) and not (stack or {}).get("tensorflow")


# --------------------------------------------------------------------------------------------
# One environment's request
# --------------------------------------------------------------------------------------------


def _cuda_of(framework_stack, key):
    entry = framework_stack.get(key) or {}
    return entry.get("cuda")


def _pin(name, version, variant):
    """``torch``, ``2.13.0``, ``cpu`` -> ``torch==2.13.0+cpu`` (the local label PyTorch's index uses)."""
    if variant and (variant == "cpu" or _CUDA_VARIANT_RE.match(variant)):
        return "%s==%s+%s" % (name, version, variant)
    return "%s==%s" % (name, version)


def environment_request(env, stack, host, var, requirements_text=""):
    """Turn one environment and its stack into what the role installs.

    ``stack`` is a plan's ``stack`` (``pytorch``, ``tensorflow``, ``python``); ``host`` its ``host``
    (``gpu_count``, ``arch``). Returns ``{errors, name, python, requirements, frameworks, modules,
    gpu_expected, cuda_majors, request_id}``; ``errors`` name ``var`` (``python_env_environments[0]``).
    """
    errors = []
    frameworks = env.get("frameworks", [])
    # a Jetson's GPU is part of the module: gpu_count (PCI GPUs) is 0 there
    has_gpu = bool((host or {}).get("gpu_count") or ((host or {}).get("jetson") or {}).get("model"))
    python = ((stack.get("python") or {}).get("version")) or None
    if python is None:
        errors.append("%s: the plan has no Python version; set %s.python such as '3.11'." % (var, var))
    requirements = []
    cuda = {}
    variant = env.get("variant", "auto")
    pytorch = stack.get("pytorch") if "pytorch" in frameworks else None
    if "pytorch" in frameworks:
        if not pytorch:
            errors.append("%s: PyTorch is in its frameworks but the plan has no PyTorch (see the plan's warnings); "
                          "set %s.pytorch and %s.variant, or drop pytorch." % (var, var, var))
        else:
            requirements.append(_pin("torch", pytorch["version"], pytorch.get("variant")))
            if env.get("torchvision", True) and pytorch.get("torchvision"):
                requirements.append(_pin("torchvision", pytorch["torchvision"], pytorch.get("variant")))
            # the guides' `pip install torch torchvision torchaudio`: the plan names torchaudio up to PyTorch 2.11
            if env.get("torchaudio", True) and pytorch.get("torchaudio"):
                requirements.append(_pin("torchaudio", pytorch["torchaudio"], pytorch.get("variant")))
            if pytorch.get("cuda"):
                cuda["PyTorch %s %s" % (pytorch["version"], pytorch.get("variant"))] = _major(pytorch["cuda"])
    tf_gpu = False
    if "tensorflow" in frameworks:
        tensorflow = stack.get("tensorflow")
        if not tensorflow:
            errors.append("%s: TensorFlow is in its frameworks but the plan has no TensorFlow; set %s.tensorflow."
                          % (var, var))
        else:
            tf_gpu = has_gpu and variant != "cpu" and tensorflow.get("extra") == "and-cuda"
            if tf_gpu:
                requirements.append("tensorflow[and-cuda]==%s" % tensorflow["version"])
                cuda["tensorflow[and-cuda] %s" % tensorflow["version"]] = _major(tensorflow.get("cuda"))
            elif (host or {}).get("arch", "x86_64") == "x86_64":
                requirements.append("tensorflow-cpu==%s" % tensorflow["version"])
            else:
                requirements.append("tensorflow==%s" % tensorflow["version"])
    if env.get("jupyter_kernel"):
        requirements.append("ipykernel")
    requirements.extend(p.strip() for p in env.get("packages", []))
    majors = sorted(set(m for m in cuda.values() if m is not None))
    if len(majors) > 1:
        parts = ["%s carries CUDA %s wheels" % (what, major) for what, major in sorted(cuda.items())]
        errors.append("%s ('%s') would mix nvidia-* wheels of CUDA %s in one environment: %s, and one process cannot "
                      "load two CUDA majors. Put each framework in its own environment (the default), or give %s.variant "
                      "a build of one CUDA major (e.g. a cu12x PyTorch next to TensorFlow, or cpu)."
                      % (var, env.get("name"), " and ".join(str(m) for m in majors), "; ".join(parts), var))
    gpu_required = env.get("gpu_required", "auto")
    pytorch_gpu = bool(pytorch and pytorch.get("cuda"))
    gpu_expected = (has_gpu and (pytorch_gpu or tf_gpu)) if gpu_required == "auto" else bool(gpu_required)
    identity = {"python": python, "requirements": requirements, "requirements_text": requirements_text or ""}
    request_id = hashlib.sha256(json.dumps(identity, sort_keys=True).encode("utf-8")).hexdigest()[:12]
    return {
        "errors": errors,
        "name": env.get("name"),
        "python": python,
        "requirements": requirements,
        "frameworks": {
            "pytorch": pytorch if "pytorch" in frameworks else None,
            "tensorflow": stack.get("tensorflow") if "tensorflow" in frameworks else None,
        },
        "modules": [MODULES[f] for f in FRAMEWORKS if f in frameworks],
        "gpu_expected": gpu_expected,
        "cuda_majors": majors,
        "request_id": request_id,
    }


def pip_index_args(options, pytorch=None):
    """pip options for indexes, find-links and proxy.

    ``options``: ``index_url``, ``extra_index_urls``, ``find_links``, ``no_index``, ``proxy``,
    ``pytorch_index_url`` (replaces the plan's PyTorch index, e.g. a mirror), ``pytorch_index_base_url`` (a mirror
    of download.pytorch.org/whl laid out like it: the plan's variant folder, cu130 or cpu, is appended; the site's
    ``dlbox_site_mirrors.pytorch_index``; not for an index that replaces PyPI), ``pytorch_index`` (False:
    no PyTorch index, a wheelhouse or mirror serves torch). ``pytorch`` is the
    environment's PyTorch stack entry or None; its index is added as an extra index unless the build
    is PyPI's own (``index_url`` None in the plan) or ``no_index`` is set; an index that replaces PyPI
    (``index_replaces_pypi``: Jetson AI Lab's) becomes ``--index-url``.
    """
    args = []
    if options.get("no_index"):
        args.append("--no-index")
    else:
        index = options.get("index_url")
        extras = list(options.get("extra_index_urls") or [])
        if pytorch and pytorch.get("index_url") and options.get("pytorch_index", True):
            torch_index = options.get("pytorch_index_url") or pytorch["index_url"]
            # a mirror of download.pytorch.org/whl holds its variant folders (cu130, cpu); an index that replaces
            # PyPI (Jetson AI Lab's jp6/cu126) is not one of them: only pytorch_index_url mirrors it
            if (not options.get("pytorch_index_url") and options.get("pytorch_index_base_url") and pytorch.get("variant")
                    and not pytorch.get("index_replaces_pypi")):
                torch_index = "%s/%s" % (options["pytorch_index_base_url"].rstrip("/"), pytorch["variant"])
            if pytorch.get("index_replaces_pypi"):
                # the index serves PyPI's packages too and builds under PyPI's version numbers (Jetson AI Lab's):
                # it is pip's index, and a site index given as well becomes an extra one
                if index and index not in extras:
                    extras.insert(0, index)
                index = torch_index
            elif torch_index not in extras:
                extras.append(torch_index)
        if index:
            args += ["--index-url", index]
        for url in extras:
            args += ["--extra-index-url", url]
    for place in options.get("find_links") or []:
        args += ["--find-links", place]
    if options.get("proxy"):
        args += ["--proxy", options["proxy"]]
    return args


def venv_pip_conf(pip_args, pytorch=None):
    """The text of an environment's own ``pip.conf`` (``<venv>/pip.conf``, pip's "site" file), or ``""``.

    Only for an environment whose PyTorch index replaces PyPI (``index_replaces_pypi``, Jetson AI Lab's): there a
    later ``pip install`` with pip's defaults would take PyPI's builds under the same version numbers (torch 2.5.0
    for aarch64 without CUDA), so the environment keeps the index it was built from. ``pip_args`` are
    ``pip_index_args``' result; their ``--index-url`` and ``--extra-index-url`` values are written::

        ["--index-url", "https://pypi.jetson-ai-lab.dev/jp6/cu126", "--extra-index-url", "https://pypi.lab/simple"]
        -> "[global]\nindex-url = https://pypi.jetson-ai-lab.dev/jp6/cu126\nextra-index-url = https://pypi.lab/simple\n"

    Proxies and find-links stay out (they belong to the site, not to the environment).
    """
    if not (pytorch or {}).get("index_replaces_pypi"):
        return ""
    pairs = list(zip(pip_args, pip_args[1:]))
    index = [value for flag, value in pairs if flag == "--index-url"]
    extras = [value for flag, value in pairs if flag == "--extra-index-url"]
    if not index:
        return ""
    lines = ["[global]", "index-url = %s" % index[0]]
    if extras:
        lines.append("extra-index-url = %s" % "\n    ".join(extras))
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------
# What the downloaded wheels carry
# --------------------------------------------------------------------------------------------


def parse_dist_filename(filename):
    """``torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl`` -> ``("torch", "2.13.0+cpu")``.

    Also sdists (``six-1.17.0.tar.gz`` -> ``("six", "1.17.0")``); None for anything else.
    """
    base = str(filename).rsplit("/", 1)[-1]
    if base.endswith(".whl"):
        parts = base[:-4].split("-")
        if len(parts) < 5:
            return None
        return normalise_name(parts[0]), parts[1]
    for ext in _SDIST_EXTS:
        if base.endswith(ext):
            stem = base[: -len(ext)]
            name, sep, version = stem.rpartition("-")
            return (normalise_name(name), version) if sep and name else None
    return None


def cuda_majors_of_wheels(dists, known_majors, neutral=()):
    """CUDA major -> sorted package names, for the ``(name, version)`` pairs of an environment.

    ``nvidia-*-cuNN`` names give NN; ``cuda-toolkit`` and suffix-less ``nvidia-*`` packages (CUDA 13
    wheels drop the suffix) give their version's major when it is a CUDA major in ``known_majors``.
    Names in ``neutral`` (e.g. ``nvidia-ml-py``) are not CUDA libraries and are skipped.
    """
    known = set(int(m) for m in known_majors)
    skip = set(normalise_name(n) for n in neutral)
    out = {}
    for name, version in dists:
        name = normalise_name(name)
        if name in skip:
            continue
        major = None
        suffix = _CU_SUFFIX_RE.search(name)
        if name.startswith("nvidia-") and suffix:
            major = int(suffix.group(1))
        elif name.startswith("nvidia-") or name == "cuda-toolkit":
            candidate = _major(version)
            major = candidate if candidate in known else None
        if major is not None:
            out.setdefault(major, []).append(name)
    return dict((major, sorted(set(names))) for major, names in out.items())


def wheel_mix_error(majors, var, name):
    """One plain-words refusal when ``cuda_majors_of_wheels`` found two majors, else None."""
    if len(majors) < 2:
        return None
    parts = ["CUDA %s: %s" % (major, ", ".join(majors[major][:4]) + (" ..." if len(majors[major]) > 4 else ""))
             for major in sorted(majors)]
    return ("%s ('%s'): its packages resolve to nvidia-* wheels of two CUDA majors (%s). One process cannot load "
            "both; nothing was installed and the current environment stays selected. Split them into separate "
            "environments, or pin packages built for one CUDA major." % (var, name, "; ".join(parts)))


# --------------------------------------------------------------------------------------------
# Lock and manifest
# --------------------------------------------------------------------------------------------


def parse_sha256sum(text):
    """``sha256sum`` output -> ``{basename: hexdigest}``."""
    out = {}
    for line in str(text or "").splitlines():
        match = _SHA256_LINE_RE.match(line.strip())
        if match:
            out[match.group(2).rsplit("/", 1)[-1]] = match.group(1)
    return out


def _canonical_version(version):
    """PEP 440's form of a local version label, as pip reports an installed dist: NVIDIA's Jetson wheel file
    ``torch-2.5.0a0+872d972e41.nv24.08.17622132-...whl`` installs as ``2.5.0a0+872d972e41.nv24.8.17622132``."""
    public, plus, local = str(version).partition("+")
    if not plus:
        return public
    return public + "+" + ".".join(str(int(p)) if p.isdigit() else p.lower() for p in re.split(r"[._-]", local))


def render_lock(installed, hashes, header=(), bootstrap=("pip", "setuptools", "wheel")):
    """A ``pip install --require-hashes -r`` file for the ``installed`` dists.

    ``installed``: ``pip list --format=json`` (``[{name, version}]``). ``hashes``: downloaded file ->
    sha256 (``parse_sha256sum``). Every installed dist needs a downloaded file of the same name and
    version, except the venv's own ``bootstrap`` packages that were not downloaded. Returns
    ``{text, missing}``; a lock with ``missing`` names is not usable.
    """
    files = {}
    for filename, digest in sorted(hashes.items()):
        parsed = parse_dist_filename(filename)
        if parsed:
            files.setdefault((parsed[0], _canonical_version(parsed[1])), []).append(digest)
    lines = ["# %s" % h for h in header]
    missing = []
    for dist in sorted(installed, key=lambda d: normalise_name(d["name"])):
        key = (normalise_name(dist["name"]), _canonical_version(dist["version"]))
        digests = files.get(key)
        if not digests:
            if key[0] not in bootstrap:
                missing.append("%s==%s" % key)
            continue
        lines.append("%s==%s \\" % key)
        lines.extend("    --hash=sha256:%s%s" % (d, " \\" if i < len(digests) - 1 else "")
                     for i, d in enumerate(sorted(digests)))
    return {"text": "\n".join(lines) + "\n", "missing": missing}


def wheel_cuda_summary(installed, known_majors, neutral=()):
    """What CUDA the installed wheels carry: ``{cuda, cudnn, nccl, majors, nvidia}``.

    ``cuda`` is the version of the CUDA runtime wheel (``nvidia-cuda-runtime[-cuNN]``), ``cudnn`` and
    ``nccl`` those of their wheels; ``nvidia`` maps every nvidia-*/cuda-toolkit wheel to its version.
    """
    versions = dict((normalise_name(d["name"]), str(d["version"])) for d in installed)
    pairs = list(versions.items())
    majors = cuda_majors_of_wheels(pairs, known_majors, neutral)

    def first(prefix):
        for name in sorted(versions):
            if name == prefix or re.match(re.escape(prefix) + r"-cu\d{2}$", name):
                return versions[name]
        return None

    return {
        "cuda": first("nvidia-cuda-runtime"),
        "cudnn": first("nvidia-cudnn"),
        "nccl": first("nvidia-nccl"),
        "majors": sorted(majors),
        "nvidia": dict((n, v) for n, v in sorted(versions.items()) if n.startswith("nvidia-") or n == "cuda-toolkit"),
    }


def driver_floors(minor_compat):
    """``data/compat.yml`` ``cuda.minor_compat`` -> ``{"12": "525.60.13", ...}`` (CUDA major -> lowest driver)."""
    return dict((str(int(e["major"])), str(e["driver_min"])) for e in minor_compat or [])


def driver_floor(cuda_version, floors):
    """Lowest driver for a CUDA version by minor-version compatibility, or None (CPU build, unknown major)."""
    major = _major(cuda_version)
    return None if major is None else (floors or {}).get(str(major))


# --------------------------------------------------------------------------------------------
# dlbox-check's report, in words for the run's output
# --------------------------------------------------------------------------------------------


def check_lines(report):
    """dlbox-check's ``--json`` report as short lines: frameworks, matmul, each step with its time, the problems."""
    report = report or {}
    lines = []
    for fw in report.get("frameworks") or []:
        extras = ", ".join("%s %s" % (k, fw[k]) for k in ("torchvision", "torchaudio") if fw.get(k))
        lines.append("%s %s (CUDA %s%s): %s" % (
            fw.get("framework"), fw.get("version"), fw.get("cuda") or "none", ", " + extras if extras else "",
            "GPU: " + ", ".join(fw.get("devices") or []) if fw.get("gpu_visible") else "no GPU visible"))
        matmul = fw.get("matmul")
        if matmul:
            lines.append("  matmul %sx%s %s on %s: %s TFLOP/s" % (matmul.get("n"), matmul.get("n"), matmul.get("dtype"),
                                                                  matmul.get("device"), matmul.get("tflops")))
        for step in fw.get("steps") or []:
            lines.append("  %s on %s: %s in %.2f s, %s" % (
                step.get("name"), step.get("device"), "ok" if step.get("ok") else "FAILED", float(step.get("seconds") or 0),
                step.get("detail") if step.get("ok") else "%s; fix: %s" % (step.get("cause"), step.get("fix"))))
    for problem in report.get("problems") or []:
        lines.append("PROBLEM: %s" % problem)
    lines.append("Result: %s" % ("OK" if report.get("status") == 0 else "FAILED (exit %s)" % report.get("status")))
    return lines
