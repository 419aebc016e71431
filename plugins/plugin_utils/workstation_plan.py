# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which roles ``playbooks/workstation.yml`` runs on a host, and why: the one decision the plan prints and
the playbook follows (pure; no I/O).

:func:`workstation_roles` takes a plan from the resolver and the host's ``dlbox_install_*`` switches
(None where unset; ``dlbox_workstation_*`` is their deprecated alias, which plan_fleet reads until 1.0.0) and
returns, in the playbook's order, one entry per role::

    {"role": "cuda", "run": True, "why": "CUDA 13.0 (cuda-toolkit-13-0) as /usr/local/cuda",
     "switch": "dlbox_install_cuda"}

plus ``run`` (role name -> bool, for the playbook's conditions) and ``kernel_headers`` (whether ``common``
installs kernel headers: where a driver is planned, unless
``dlbox_install_kernel_headers`` says otherwise).
"""

from __future__ import annotations

# (role, switch suffix, the plan's part that makes it run by default)
ROLES = (
    ("common", None, None),
    ("nvidia_driver", "driver", "driver"),
    ("cuda", "cuda", "cuda"),
    ("cudnn", "cudnn", "cudnn"),
    ("nccl", "nccl", "nccl"),
    ("docker", "docker", "container_toolkit"),
    ("nvidia_container_toolkit", "docker", "container_toolkit"),
    ("python_env", "python_env", None),
)
SWITCHES = ("driver", "cuda", "cudnn", "nccl", "docker", "python_env", "kernel_headers")
# Each switch is the variable PREFIX + name on every kind of host (workstation, server, edge); ALIAS_PREFIX + name is
# its deprecated alias (issue 47: the old name said "workstation" on a server too), read until 1.0.0.
PREFIX = "dlbox_install_"
ALIAS_PREFIX = "dlbox_workstation_"
# Roles that install from NVIDIA's CUDA repository for x86_64 or sbsa (cuda_repo): never on a Jetson (L4T) system,
# whose CUDA, cuDNN and NCCL come with JetPack from NVIDIA's Jetson repository.
CUDA_REPO_ROLES = ("cuda", "cudnn", "nccl")
TRUE_WORDS = ("true", "yes", "on", "1")
FALSE_WORDS = ("false", "no", "off", "0")


class WorkstationPlanError(ValueError):
    """A dlbox_install_* switch that is not a boolean (the message names the variable)."""


def switch_value(name, value):
    """None (unset), True or False; anything else raises WorkstationPlanError naming the variable."""
    if value is None or isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in TRUE_WORDS:
        return True
    if text in FALSE_WORDS:
        return False
    raise WorkstationPlanError("%s%s must be true or false (or unset: the plan decides; so must its deprecated alias %s%s); got %r."
                               % (PREFIX, name, ALIAS_PREFIX, name, value))


def _switches(given):
    given = dict(given or {})
    unknown = sorted(set(given) - set(SWITCHES))
    if unknown:
        raise WorkstationPlanError("unknown workstation switch %s; known: %s." % (
            ", ".join(PREFIX + k for k in unknown), ", ".join(PREFIX + k for k in SWITCHES)))
    return {name: switch_value(name, given.get(name)) for name in SWITCHES}


def _frameworks(stack):
    parts = []
    torch = stack.get("pytorch")
    if torch:
        parts.append("PyTorch %s %s" % (torch.get("version"), torch.get("variant")))
    tf = stack.get("tensorflow")
    if tf:
        parts.append("TensorFlow %s" % tf.get("version"))
    return " and ".join(parts)


def _runs(role, plan):
    """What the role does on this host, in a few words (the plan's part)."""
    stack = plan.get("stack") or {}
    if role == "nvidia_driver":
        drv = stack.get("driver") or {}
        if not drv:
            return "the driver"
        where = "NVIDIA's repository" if drv.get("method") == "nvidia_repo" else "the OS's archive"
        if drv.get("installed") and not drv.get("change"):
            return "keeps and checks the installed driver %s (R%s)" % (drv.get("installed"), drv.get("branch"))
        return "driver R%s from %s%s" % (drv.get("branch"), where, " (%s)" % ", ".join(drv["packages"]) if drv.get("packages") else "")
    if role == "cuda":
        cuda = stack.get("cuda") or {}
        return "CUDA %s%s as /usr/local/cuda" % (cuda.get("version", "?"), " (%s)" % cuda["package"] if cuda.get("package") else "")
    if role == "cudnn":
        return "cuDNN %s" % (stack.get("cudnn") or {}).get("version", "?")
    if role == "nccl":
        return "NCCL %s and /etc/nccl.conf" % (stack.get("nccl") or {}).get("version", "?")
    if role == "docker":
        return "Docker, for GPU containers"
    if role == "nvidia_container_toolkit":
        ctk = stack.get("container_toolkit") or {}
        return "NVIDIA Container Toolkit %s" % ctk.get("version", "(the role's default)")
    if role == "python_env":
        return "virtualenvs for %s" % (_frameworks(stack) or "the planned frameworks")
    return role


def _skip_reason(role, plan):
    """Why the plan has nothing for the role."""
    host = plan.get("host") or {}
    no_gpu = not (host.get("gpu_count") or 0) and not host.get("jetson")
    if no_gpu:
        return "no NVIDIA GPU on this host"
    if host.get("jetson") and role == "nvidia_driver":
        return "JetPack provides it on a Jetson"
    if _jetson(plan) and role in CUDA_REPO_ROLES:
        return jetson_skip_reason(role, plan)
    if role == "nccl":
        return "NCCL is planned for two or more GPUs or an NVSwitch system"
    return "the plan has no %s" % {"nvidia_driver": "driver", "cuda": "CUDA toolkit", "cudnn": "cuDNN",
                                   "docker": "container toolkit", "nvidia_container_toolkit": "container toolkit"}.get(role, role)


def _jetson(plan):
    return bool((plan.get("host") or {}).get("jetson") or (plan.get("stack") or {}).get("jetpack"))


def jetson_skip_reason(role, plan):
    """Why a role that uses NVIDIA's x86_64/sbsa repositories is skipped on a Jetson (L4T) host."""
    jetpack = (plan.get("stack") or {}).get("jetpack") or {}
    have = {"cuda": "CUDA %s" % jetpack.get("cuda"), "cudnn": "cuDNN %s" % jetpack.get("cudnn"), "nccl": "its libraries"}[role]
    return ("Jetson (L4T): JetPack %s brings %s from NVIDIA's Jetson repository; this role installs from NVIDIA's "
            "x86_64/sbsa CUDA repository, which must never go onto an L4T system" % (jetpack.get("version") or "", have))


def workstation_roles(plan, switches=None):
    """The roles workstation.yml runs on this host: {"roles": [...], "kernel_headers": bool}."""
    flags = _switches(switches)
    stack = plan.get("stack") or {}
    host = plan.get("host") or {}
    gpus = (host.get("gpu_count") or 0) > 0
    roles = []
    for role, switch, part in ROLES:
        var = PREFIX + switch if switch else None
        if role == "common":
            roles.append({"role": role, "run": True, "switch": None,
                          "why": "the baseline: apt cache, build tools, CA certificates and proxies"})
            continue
        # python_env: on a GPU host, and on a CPU-only host (not a Jetson) whose plan has a framework: the plan's CPU
        # wheels, as the plan prints them (issue 45)
        planned = (gpus or (bool(_frameworks(stack)) and not _jetson(plan))) if role == "python_env" else stack.get(part) is not None
        chosen = flags[switch]
        if role in CUDA_REPO_ROLES and _jetson(plan):
            # no switch turns these on over L4T: they would add NVIDIA's x86_64/sbsa repository
            why = jetson_skip_reason(role, plan) + (" (-e %s=true does not change that)" % var if chosen else "")
            roles.append({"role": role, "run": False, "switch": var, "why": why})
            continue
        run = planned if chosen is None else chosen
        if run and chosen and not planned:
            why = "%s (-e %s=true)" % (_runs(role, plan), var)
        elif run and role == "python_env" and not gpus and not _jetson(plan):
            why = "%s; no NVIDIA GPU on this host: the CPU build (-e %s=false skips it)" % (_runs(role, plan), var)
        elif run:
            why = _runs(role, plan)
        elif chosen is False:
            why = "-e %s=false" % var
        elif role == "python_env":
            why = "no framework in the plan"
        elif role == "docker" and no_parts(stack, part):
            why = "%s; -e %s=true installs Docker anyway" % (_skip_reason(role, plan), var)
        else:
            why = _skip_reason(role, plan)
        roles.append({"role": role, "run": bool(run), "switch": var, "why": why})
    headers = flags["kernel_headers"]
    driver = next(r for r in roles if r["role"] == "nvidia_driver")["run"]
    kernel_headers = driver if headers is None else headers
    common = roles[0]
    if kernel_headers:
        common["why"] += "; kernel headers%s" % (" (for the driver's DKMS module)" if headers is None else " (-e %skernel_headers=true)" % PREFIX)
    else:
        common["why"] += "; no kernel headers (%s)" % (
            "no driver to build" if headers is None else "-e %skernel_headers=false" % PREFIX)
    return {"roles": roles, "run": {r["role"]: r["run"] for r in roles}, "kernel_headers": bool(kernel_headers)}


def no_parts(stack, part):
    return stack.get(part) is None


def cuda_split_line(plan):
    """Why the system CUDA toolkit and a framework's CUDA differ, or None where they do not."""
    stack = plan.get("stack") or {}
    cuda = stack.get("cuda") or {}
    system = cuda.get("version")
    if not system:
        return None
    drv = stack.get("driver") or {}
    for key, label, wheel in (("pytorch", "PyTorch", "%s wheels"), ("tensorflow", "TensorFlow", "wheels")):
        framework = stack.get(key) or {}
        theirs = framework.get("cuda")
        if not theirs or theirs == system:
            continue
        which = wheel % framework.get("variant") if "%s" in wheel else wheel
        floor = " (its own driver floor: %s)" % cuda["toolkit_driver_min"] if cuda.get("toolkit_driver_min") else ""
        driver = "driver R%s" % drv["branch"] if drv.get("branch") else "the installed driver"
        same_major = str(theirs).split(".", maxsplit=1)[0] == str(system).split(".", maxsplit=1)[0]
        runs = ("%s runs them through CUDA %s.x minor-version compatibility" % (driver, str(system).split(".", maxsplit=1)[0])
                if same_major else "they need a driver for CUDA %s.x" % str(theirs).split(".", maxsplit=1)[0])
        return ("CUDA %s is the system toolkit (nvcc, /usr/local/cuda) chosen for %s%s; %s's %s bring their own CUDA %s "
                "runtime from PyPI and do not use it; %s." % (system, driver, floor, label, which, theirs, runs))
    return None
