# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What ``playbooks/ci_image.yml`` decides for a CI image (controller only, pure apart from the data handed in).

:func:`decide` takes the plan (``dlbox_plan``), data/compat.yml as the validating loader returns it, the image's
flavour, the image build's layer and what the Dockerfile says about the image (``dlbox_ci_image_env``: its ENV lines
and its ``org.dlbox.stack`` label, written before the plan is resolved) and returns::

    {"ok": bool, "errors": [...],           # each names the build argument or the variable at fault
     "stack": {...}, "label": "...",        # the resolved stack for the label (see image_stack), and its JSON text
     "runtime": {"packages": [...], "repo_packages": [...], "nccl": [...]},   # NVIDIA's runtime set, filled in
     "archs": "8.0;9.0", "cudaarchs": "80;90"}

The build has two layers (examples/Dockerfile): ``cuda`` (CUDA, cuDNN, NCCL) and ``frameworks`` (the Python
environments, then the label's check). The frameworks layer is handed the plan the cuda layer recorded
(``recorded``) and refuses a plan that would put another CUDA, cuDNN or NCCL beside it.
"""

from __future__ import annotations

import json
import re

LAYERS = ("all", "cuda", "frameworks")
FLAVOURS = ("runtime", "toolkit")
# the parts of the stack a CUDA layer holds: the frameworks layer may not plan them differently
CUDA_PARTS = ("cuda", "cudnn", "nccl")
FRAMEWORKS = ("pytorch", "tensorflow", "jax")
_ARCH = re.compile(r"^[0-9]{1,2}[.][0-9]$")


def _fill(template, version):
    """``"cuda-libraries-{major}-{minor}"``, ``"13.0"`` -> ``"cuda-libraries-13-0"``."""
    major, minor = (str(version).split(".", 1) + [""])[:2]
    return template.replace("{major}", major).replace("{minor}", minor.split(".")[0])


def runtime_set(data, cuda_version):
    """NVIDIA's runtime set for one toolkit (data/compat.yml ``cuda.runtime_set``), its templates filled in.

    >>> runtime_set({"cuda": {"runtime_set": {"packages": ["cuda-libraries-{major}-{minor}"], "repo_packages": [],
    ...                                        "nccl": ["libnccl2"]}}}, "13.0")["packages"]
    ['cuda-libraries-13-0']
    """
    entry = ((data or {}).get("cuda") or {}).get("runtime_set") or {}
    if cuda_version is None:
        return {"packages": [], "repo_packages": [], "nccl": list(entry.get("nccl") or [])}
    return {"packages": [_fill(t, cuda_version) for t in entry.get("packages") or []],
            "repo_packages": [_fill(t, cuda_version) for t in entry.get("repo_packages") or []],
            "nccl": list(entry.get("nccl") or [])}


def _version(stack, part):
    entry = (stack or {}).get(part)
    if isinstance(entry, dict):
        value = entry.get("version")
        return None if value is None else str(value)
    return None


def image_stack(plan, parts=None):
    """The resolved stack an image carries in its ``org.dlbox.stack`` label.

    ``parts``: which parts the image installs ({"cudnn": bool, "nccl": bool, "python_env": bool}; absent = yes).
    ``driver_min`` is the oldest driver the image's CUDA runs on, as its ``NVIDIA_REQUIRE_CUDA="cuda>=X.Y"`` asks it
    (the toolkit's GA driver, plan ``stack.cuda.toolkit_driver_min``).

    >>> image_stack({"stack": {"cuda": {"version": "13.0", "toolkit_driver_min": "580.65.06"},
    ...              "cudnn": {"version": "9.20.0.48"}, "nccl": {"version": "2.27.7"}, "pytorch": {"version": "2.13.0"}}})
    {'driver_min': '580.65.06', 'cuda': '13.0', 'cudnn': '9.20.0.48', 'nccl': '2.27.7', 'frameworks': {'pytorch': '2.13.0'}}
    """
    stack = (plan or {}).get("stack") or {}
    parts = parts or {}
    cuda = stack.get("cuda") if isinstance(stack.get("cuda"), dict) else {}
    out = {"driver_min": None if cuda.get("toolkit_driver_min") is None else str(cuda["toolkit_driver_min"]),
           "cuda": _version(stack, "cuda")}
    for part in ("cudnn", "nccl"):
        out[part] = _version(stack, part) if parts.get(part, True) else None
    frameworks = {}
    if parts.get("python_env", True):
        frameworks = {name: _version(stack, name) for name in FRAMEWORKS if _version(stack, name)}
    out["frameworks"] = frameworks
    return out


def stack_label(stack):
    """The label's text: compact JSON, keys in order (the same stack always gives the same label)."""
    return json.dumps(stack, sort_keys=True, separators=(",", ":"))


def _archs(archs):
    texts = [str(a) for a in archs or []]
    return ";".join(texts), ";".join(a.replace(".", "") for a in texts)


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


def decide(plan, data, flavour="runtime", layer="all", image_env=None, archs=None, parts=None, recorded=None):
    """Everything the CI image playbook needs (see the module docstring); refusals name what to change."""
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
    if "torch_cuda_arch_list" in image_env and str(image_env["torch_cuda_arch_list"]) != archs_text:
        errors.append("DLBOX_CUDA_ARCHS (TORCH_CUDA_ARCH_LIST) is %s, but dlbox_ci_cuda_archs give %s"
                      % (json.dumps(image_env["torch_cuda_arch_list"]), archs_text))
    if "cudaarchs" in image_env and str(image_env["cudaarchs"]) != cudaarchs:
        errors.append("DLBOX_CUDAARCHS (CUDAARCHS) is %s, but dlbox_ci_cuda_archs give %s"
                      % (json.dumps(image_env["cudaarchs"]), cudaarchs))
    resolved = image_stack(plan, parts)
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
    return {"ok": not errors, "errors": errors, "stack": resolved, "label": stack_label(resolved),
            "runtime": runtime_set(data, cuda_version), "archs": archs_text, "cudaarchs": cudaarchs}
