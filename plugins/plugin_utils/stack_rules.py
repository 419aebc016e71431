# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The resolver's rules (controller only). Each rule is a yes/no check (``*_fits``, ``driver_runs_cuda``) and,
apart from it, an explanation (``rule_*``) that returns one plain-words sentence per violation: what was asked,
why it fails and what would work instead. Rules read a ``PlanContext`` and change nothing."""

from __future__ import annotations

from ansible_collections.dlbox.stack.plugins.plugin_utils.versions import (
    at_least,
    at_most,
    compare_versions,
    major_minor,
    major_of,
    parse_version,
    version_matches,
)
from ansible_collections.dlbox.stack.plugins.plugin_utils.compat_index import (
    cc_covered,
)
from ansible_collections.dlbox.stack.plugins.plugin_utils.stack_input import (
    NONE_WORDS,
)
from ansible_collections.dlbox.stack.plugins.plugin_utils.stack_context import (
    CPU_VARIANT,
    cc_label,
    driver_at_least,
    driver_description,
    fitting_cuda_majors,
    gpu_label,
    in_range,
    preferred_branch,
    suggest_branch_for,
)


def rule_gpus_supported(plan):
    """GPUs outside everything in scope, unknown GPUs, and GPUs that cannot share one driver."""
    errors = []
    for gpu in plan.kinds:
        if not gpu.get("arch") and gpu.get("legacy_branch"):
            errors.append(
                "%s is supported only by NVIDIA's legacy %s drivers (NVIDIA's device list), older than every driver "
                "branch in scope; replace the GPU." % (gpu.get("catalog_name"), gpu["legacy_branch"])
            )
            continue
        if not gpu.get("arch"):
            errors.append(
                "GPU %s is not in the GPU catalog (data/gpu_catalog.yml, data/compat.yml of %s) and its compute "
                "capability is unknown, so no driver or CUDA can be checked for it; regenerate the catalog "
                "(make gpu-catalog), add it to data/compat.yml or plan with hardware: {gpus: [...]}."
                % (gpu.get("catalog_name"), plan.index.date)
            )
            continue
        arch = plan.index.archs[gpu["arch"]]
        last_cuda = (arch.get("last_cuda_by_cc") or {}).get(gpu.get("cc")) or arch.get("last_cuda")
        if arch.get("last_driver_branch") and plan.index.oldest_branch and arch["last_driver_branch"] < plan.index.oldest_branch:
            errors.append(
                "%s is not supported by any driver branch or CUDA release in scope: its last driver branch is R%s "
                "and its last CUDA is %s; replace the GPU." % (gpu_label(gpu), arch["last_driver_branch"], arch.get("last_cuda"))
            )
        elif last_cuda and plan.index.oldest_cuda and compare_versions(last_cuda, plan.index.oldest_cuda) < 0:
            errors.append(
                "%s is not supported by any CUDA release in scope: its last CUDA is %s, older than CUDA %s; replace the GPU."
                % (gpu_label(gpu), last_cuda, plan.index.oldest_cuda)
            )
    limits = plan.limits
    if not limits["modules"]:
        errors.append(
            "No kernel module flavour fits all GPUs: %s needs the proprietary modules and %s needs the open modules; "
            "put these GPUs in different hosts." % (gpu_label(limits["modules_why"]["open"]), gpu_label(limits["modules_why"]["proprietary"]))
        )
    if limits["branch_min"] and limits["branch_max"] and limits["branch_min"][0] > limits["branch_max"][0]:
        errors.append(
            "No driver branch supports all GPUs: %s needs R%s or newer, %s is supported only up to R%s; put these GPUs "
            "in different hosts." % (gpu_label(limits["branch_min"][1]), limits["branch_min"][0], gpu_label(limits["branch_max"][1]), limits["branch_max"][0])
        )
    if limits["cuda_min"] and limits["cuda_max"] and compare_versions(limits["cuda_min"][0], limits["cuda_max"][0]) > 0:
        errors.append(
            "No CUDA release supports all GPUs: %s needs CUDA >= %s, %s stops at CUDA %s; put these GPUs in different "
            "hosts." % (gpu_label(limits["cuda_min"][1]), limits["cuda_min"][0], gpu_label(limits["cuda_max"][1]), limits["cuda_max"][0])
        )
    return errors


def rule_driver_branch(plan, branch, what):
    """A driver branch against the GPUs. ``what`` names it in messages ("Driver branch R595")."""
    errors = []
    limits = plan.limits
    if limits["branch_max"] and branch > limits["branch_max"][0]:
        gpu = limits["branch_max"][1]
        errors.append(
            "%s does not support %s: R%s is the last driver branch for %s; use driver_branch: %s."
            % (what, gpu_label(gpu), limits["branch_max"][0], gpu.get("arch_name"), limits["branch_max"][0])
        )
    if limits["branch_min"] and branch < limits["branch_min"][0]:
        gpu = limits["branch_min"][1]
        best = preferred_branch(plan)
        errors.append(
            "%s does not support %s: it needs driver branch R%s or newer; use driver_branch: %s."
            % (what, gpu_label(gpu), limits["branch_min"][0], best if best else limits["branch_min"][0])
        )
    return errors


def driver_runs_cuda(plan, cuda_version):
    """Does the planned driver meet the minor-version compatibility floor of this CUDA major?"""
    floor = plan.index.minor_compat.get(major_of(cuda_version))
    return not floor or driver_at_least(plan, floor["driver_min"])


def rule_driver_floor(plan, cuda_version, what, fix=None):
    """A CUDA X.Y runtime/toolkit against the planned driver (minor-version compatibility floor)."""
    major = major_of(cuda_version)
    floor = plan.index.minor_compat.get(major)
    if not floor or driver_at_least(plan, floor["driver_min"]):
        return []
    alternatives = fitting_cuda_majors(plan)
    if fix is None:
        fix = "use a CUDA %s build" % "/".join("%s.x" % m for m in alternatives) if alternatives else "nothing else fits"
    branch = suggest_branch_for(plan, major)
    change = (", or request driver_branch: %s (or newer) to change the driver" % branch) if branch else ""
    return [
        "%s needs driver >= %s (CUDA %s.x minor-version compatibility floor), but %s is older; %s%s."
        % (what, floor["driver_min"], major, driver_description(plan), fix, change)
    ]


def rule_kernel_modules(plan, flavour):
    errors = []
    limits = plan.limits
    if flavour not in ("open", "proprietary"):
        return ["kernel_modules: '%s' is not a module flavour; use open or proprietary." % flavour]
    if flavour == "proprietary" and "proprietary" not in limits["modules"]:
        gpu = limits["modules_why"]["proprietary"]
        errors.append(
            "Proprietary kernel modules do not support %s: %s requires the open kernel modules; use kernel_modules: open."
            % (gpu_label(gpu), gpu.get("catalog_name") if gpu.get("open_modules") == "required" else gpu.get("arch_name"))
        )
    if flavour == "open" and "open" not in limits["modules"]:
        gpu = limits["modules_why"]["open"]
        first = plan.index.first_open_modules_arch()
        need = " they need %s (CC %s) or newer;" % (first["name"], first["cc_min"]) if first else ""
        errors.append(
            "Open kernel modules do not support %s:%s use kernel_modules: proprietary." % (gpu_label(gpu), need)
        )
    return errors


def cuda_fits(plan, rel):
    """Does a CUDA release fit the GPUs, the planned driver and the OS?"""
    version = rel["version"]
    limits = plan.limits
    if limits["cuda_min"] and compare_versions(version, limits["cuda_min"][0]) < 0:
        return False
    if limits["cuda_max"] and compare_versions(version, limits["cuda_max"][0]) > 0:
        return False
    if not driver_runs_cuda(plan, version):
        return False
    last = (plan.os_entry or {}).get("last_cuda")
    return not (last and compare_versions(version, last) > 0)


def rule_cuda(plan, rel, what=None):
    """A CUDA release against GPUs, driver and OS."""
    what = what or "CUDA %s" % rel["version"]
    errors = []
    version = rel["version"]
    limits = plan.limits
    if limits["cuda_min"] and compare_versions(version, limits["cuda_min"][0]) < 0:
        gpu = limits["cuda_min"][1]
        errors.append("%s does not support %s: it needs CUDA >= %s; use cuda: '%s' or newer."
                      % (what, gpu_label(gpu), limits["cuda_min"][0], limits["cuda_min"][0]))
    if limits["cuda_max"] and compare_versions(version, limits["cuda_max"][0]) > 0:
        gpu = limits["cuda_max"][1]
        branch = limits["branch_max"][0] if limits["branch_max"] else None
        errors.append("%s does not support %s: the last CUDA for CC %s is %s; use cuda: '%s' or older%s."
                      % (what, gpu_label(gpu), gpu.get("cc"), limits["cuda_max"][0], limits["cuda_max"][0],
                         " (driver branch R%s)" % branch if branch else ""))
    errors += rule_driver_floor(plan, version, what)
    if plan.os_entry and plan.os_entry.get("last_cuda") and compare_versions(version, plan.os_entry["last_cuda"]) > 0:
        errors.append("%s is not available for %s: the last CUDA for it is %s; use cuda: '%s' or upgrade the OS."
                      % (what, plan.os_key, plan.os_entry["last_cuda"], plan.os_entry["last_cuda"]))
    return errors


def cuda_native(plan, rel):
    """True when the planned driver is at least the toolkit's own (GA) driver."""
    need = rel.get("toolkit_driver_min")
    return bool(need) and driver_at_least(plan, need)


def _cudnn_build_covers(entry, cuda_version):
    build = (entry.get("builds") or {}).get(str(major_of(cuda_version)))
    return bool(build) and at_least(major_minor(cuda_version), build[0]) and at_most(major_minor(cuda_version), build[1])


def _cudnn_driver_floor(entry, cuda_version):
    return (entry.get("driver_min") or {}).get(str(major_of(cuda_version))) if cuda_version else None


def cudnn_fits(plan, entry, cuda_version):
    """Does a cuDNN release fit the CUDA toolkit, every GPU and the driver?"""
    if cuda_version and not _cudnn_build_covers(entry, cuda_version):
        return False
    if not all(cc_covered(gpu.get("cc"), entry["cc_min"], entry["cc_max"]) for gpu in plan.kinds):
        return False
    need = _cudnn_driver_floor(entry, cuda_version)
    return not need or driver_at_least(plan, need)


def rule_cudnn(plan, entry, cuda_version):
    """Why a cuDNN release does not fit the CUDA toolkit, the GPUs or the driver (one sentence each)."""
    errors = []
    version = entry["version"]
    if cuda_version:
        build = (entry.get("builds") or {}).get(str(major_of(cuda_version)))
        if not build:
            majors = ", ".join(sorted(entry.get("builds") or {}))
            errors.append("cuDNN %s has no build for CUDA %s.x (builds: CUDA %s); use a cuDNN with a CUDA %s build%s."
                          % (version, major_of(cuda_version), majors, major_of(cuda_version), cudnn_hint(plan, cuda_version)))
        elif not (at_least(major_minor(cuda_version), build[0]) and at_most(major_minor(cuda_version), build[1])):
            errors.append("cuDNN %s's CUDA %s build covers CUDA %s to %s, not %s%s."
                          % (version, major_of(cuda_version), build[0], build[1], cuda_version, cudnn_hint(plan, cuda_version)))
    for gpu in plan.kinds:
        if not cc_covered(gpu.get("cc"), entry["cc_min"], entry["cc_max"]):
            last = plan.index.last_cudnn_for(gpu.get("cc"))
            if last is not None and compare_versions(gpu.get("cc"), entry["cc_min"]) < 0:
                fix = "cuDNN %s is the last for %s; use cudnn: '%s'" % (major_minor(last["version"]), gpu.get("arch_name"), major_minor(last["version"]))
            else:
                fix = cudnn_hint(plan, cuda_version).lstrip("; ") or "no cuDNN in data/compat.yml covers it"
            errors.append("cuDNN %s does not support %s: it covers CC %s to %s; %s."
                          % (version, gpu_label(gpu), entry["cc_min"], entry["cc_max"], fix))
    need = _cudnn_driver_floor(entry, cuda_version)
    if need and not driver_at_least(plan, need):
        errors.append("cuDNN %s for CUDA %s.x needs driver >= %s, but %s is older." % (version, major_of(cuda_version), need, driver_description(plan)))
    return errors


def cudnn_hint(plan, cuda_version):
    for entry in plan.index.cudnn:
        if cudnn_fits(plan, entry, cuda_version):
            return "; use cudnn: '%s'" % entry["version"]
    return ""


def cudnn_fits_framework(plan, entry, cuda_version, tf=None):
    return cudnn_fits(plan, entry, cuda_version) and (
        tf is None or tf.get("and_cuda") or major_of(entry["version"]) == major_of(tf["cudnn"])
    )


def rule_python(plan, name, rel, python):
    rng = rel["python"]
    if python is None or in_range(python, rng):
        return []
    releases = plan.index.pytorch if name == "PyTorch" else plan.index.tensorflow
    other = next((r for r in releases if in_range(python, r["python"])), None)
    alt = (" or %s %s, which supports Python %s" % (name, other["version"], python)) if other else ""
    return ["Python %s is outside %s %s's range (%s to %s); use a Python from %s to %s%s."
            % (python, name, rel["version"], rng["min"], rng["max"], rng["min"], rng["max"], alt)]


def find_release(releases, spec):
    spec = str(spec)
    for rel in releases:
        if version_matches(rel["version"], spec) and len(parse_version(spec)) >= 2:
            if len(parse_version(spec)) == 2 or spec in (rel.get("patches") or []) or any(
                version_matches(spec, patch) for patch in rel.get("patches") or []
            ):
                return rel
    return None


def variant_archs(plan, variant):
    if plan.arch == "aarch64":
        return variant.get("archs_aarch64"), bool(variant.get("ptx_aarch64"))
    return variant.get("archs"), bool(variant.get("ptx"))


def arch_covers(cc, archs, ptx):
    """An sm_XY cubin runs on the same major with minor >= Y; PTX of the newest arch JITs forward."""
    if cc is None:
        return True
    want = parse_version(cc)
    for arch in archs:
        have = parse_version(arch)
        if have[0] == want[0] and have[1:] <= want[1:]:
            return True
    if ptx and archs and want > max(parse_version(a) for a in archs):
        return True
    return False


def uncovered_gpus(plan, variant):
    archs, ptx = variant_archs(plan, variant)
    if archs is None:
        return []
    return [g for g in plan.kinds if not arch_covers(g.get("cc"), archs, ptx)]


def variant_fits(plan, rel, variant):
    """Variant covers every GPU and the driver runs its CUDA."""
    if variant.get("name") == CPU_VARIANT:
        return True
    archs, _ptx = variant_archs(plan, variant)
    if archs is None and plan.arch == "aarch64":
        return False
    return not uncovered_gpus(plan, variant) and driver_runs_cuda(plan, variant["cuda"])


def variant_order(rel):
    """Stable variants newest CUDA first, then experimental ones."""
    return sorted(rel.get("variants") or [], key=lambda v: (not v.get("experimental"), parse_version(v["cuda"])), reverse=True)


def suggest_pytorch(plan, rel):
    """'use cu126' or 'use PyTorch >= 2.7 with cu128' for a release that has no fitting variant."""
    fitting = [v for v in variant_order(rel) if variant_fits(plan, rel, v)]
    if fitting:
        return "use %s" % fitting[0]["name"]
    newer = sorted((r for r in plan.index.pytorch if compare_versions(r["version"], rel["version"]) > 0), key=lambda r: parse_version(r["version"]))
    for other in newer:
        fit = [v for v in variant_order(other) if variant_fits(plan, other, v)]
        if fit:
            return "use PyTorch >= %s with %s" % (other["version"], fit[0]["name"])
    for other in plan.index.pytorch:
        fit = [v for v in variant_order(other) if variant_fits(plan, other, v)]
        if fit:
            return "use PyTorch %s with %s" % (other["version"], fit[0]["name"])
    return "no PyTorch CUDA build in data/compat.yml fits; use pytorch_variant: cpu"


def rule_pytorch_variant(plan, rel, variant, named_variant):
    """One PyTorch CUDA build against the GPUs and the driver."""
    errors = []
    label = "PyTorch %s %s" % (rel["version"], variant["name"]) if named_variant else "PyTorch %s" % rel["version"]
    archs, _ptx = variant_archs(plan, variant)
    if archs is None and plan.arch == "aarch64" and plan.gpus:
        errors.append("%s: the GPU architectures of its aarch64 build are not in data/compat.yml; %s."
                      % (label, suggest_pytorch(plan, rel)))
    for gpu in uncovered_gpus(plan, variant):
        errors.append("%s has no build for %s; %s." % (label, cc_label(gpu), suggest_pytorch(plan, rel)))
    if not errors:
        fitting = [v["name"] for v in variant_order(rel) if variant_fits(plan, rel, v)]
        fix = ("use %s" % " or ".join(fitting)) if fitting else "use pytorch_variant: cpu"
        errors += rule_driver_floor(plan, variant["cuda"], "PyTorch %s %s" % (rel["version"], variant["name"]), fix)
    return errors


def rule_tensorflow(plan, rel, cuda_rel):
    errors = []
    if cuda_rel is not None and major_of(cuda_rel["version"]) != major_of(rel["cuda"]):
        errors.append(
            "TensorFlow %s is not built for CUDA %s: it is tested with CUDA %s and %s; use cuda: '%s' (or leave cuda unset)."
            % (rel["version"], cuda_rel["version"], rel["cuda"],
               "tensorflow[and-cuda] keeps every NVIDIA package below %s" % (major_of(rel["cuda"]) + 1) if rel.get("and_cuda")
               else "it loads the system CUDA %s.x libraries" % major_of(rel["cuda"]),
               newest_cuda_of_major(plan, major_of(rel["cuda"])))
        )
    if plan.gpus:
        errors += rule_driver_floor(plan, rel["cuda"], "TensorFlow %s (CUDA %s)" % (rel["version"], rel["cuda"]))
    return errors


def tensorflow_newer_gpus(plan, rel):
    """The GPUs whose architecture is newer than the CUDA a TensorFlow release is built with (PTX JIT)."""
    newer = []
    for gpu in plan.kinds:
        arch = plan.index.archs.get(gpu.get("arch")) or {}
        first_cuda = (arch.get("first_cuda_by_cc") or {}).get(gpu.get("cc")) or arch.get("first_cuda")
        if first_cuda and compare_versions(first_cuda, rel["cuda"]) > 0:
            newer.append(gpu)
    return newer


def newest_cuda_of_major(plan, major):
    for rel in plan.index.cuda:
        if major_of(rel["version"]) == major and cuda_fits(plan, rel):
            return rel["version"]
    return "%s.x" % major


def rule_request_fits_host(plan):
    """Requests that cannot apply to this kind of host (checked before any choice)."""
    errors = []
    if plan.asked("jetpack") and plan.gpus and not plan.jetson:
        errors.append("jetpack: '%s' was requested, but this host has discrete NVIDIA GPUs (%s, %s), not a Jetson module; "
                      "JetPack applies to Jetson modules only: drop jetpack." % (plan.request["jetpack"], gpu_label(plan.gpus[0]), plan.arch))
    machine = plan.index.machines.get(plan.arch) or {}
    wants_tf = plan.asked("tensorflow") and str(plan.request["tensorflow"]).lower() not in NONE_WORDS and plan.request["tensorflow"] is not False
    if wants_tf and plan.gpus and not plan.jetson and not machine.get("tensorflow_cuda"):
        errors.append("tensorflow: '%s' was requested, but TensorFlow ships no CUDA build for %s (data/compat.yml machines.%s); "
                      "drop tensorflow, or plan an x86_64 host." % (plan.request["tensorflow"], plan.arch, plan.arch))
    variant = str(plan.request.get("pytorch_variant") or "").lower()
    if variant.startswith("cu") and plan.gpus and not plan.jetson and not machine.get("pytorch_cuda"):
        errors.append("pytorch_variant: '%s' was requested, but PyTorch ships no CUDA build for %s (data/compat.yml machines.%s); "
                      "use pytorch_variant: cpu." % (plan.request["pytorch_variant"], plan.arch, plan.arch))
    return errors
