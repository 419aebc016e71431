# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The end-of-run summary of a scenario playbook (``workstation.yml`` and those after it); pure, no I/O.

The ``summary`` role probes the host twice, before the roles and after them, with one read-only shell
probe whose output (:func:`parse_probe`) has sections::

    ## packages         dpkg-query lines: <status abbrev>\\t<package>\\t<version>
    ## cuda             one /usr/local/cuda-X.Y directory a line
    ## envs             one python_env environment a line: <name>\\t<manifest path or empty>
    ## driver_loaded    the first line of /proc/driver/nvidia/version, or nothing
    ## reboot_required  the packages of /var/run/reboot-required.pkgs, or "yes" when only the flag exists

:func:`summarize` turns the two snapshots and the roles decision (``workstation_plan.workstation_roles``)
into ``{"installed", "changed", "skipped", "pending", "ran"}``; :func:`summary_text` into lines.
"""

from __future__ import annotations

import re

# What the summary reports, and the Debian packages that show each (first match wins).
COMPONENTS = (
    ("driver", (re.compile(r"^nvidia-driver(-\d+)?(-open|-server|-server-open)?$"), re.compile(r"^nvidia-open(-\d+)?$"),
                re.compile(r"^cuda-drivers(-\d+)?$"))),
    # NVSwitch / NVLink5 hosts: Fabric Manager and what the fabric needs beside it (NSCQ, libnvsdm, NVLSM; IMEX on
    # GB200/GB300 NVL trays), all listed (one pattern), by their names with or without the branch
    ("fabric", (re.compile(r"^(nvidia-fabricmanager|libnvidia-nscq|libnvsdm|nvidia-imex)(-\d+)?$|^nvlsm$"),)),
    ("cuda", (re.compile(r"^cuda-toolkit-\d+-\d+$"), re.compile(r"^nvidia-cuda-toolkit$"))),
    ("cudnn", (re.compile(r"^libcudnn\d+(-cuda-\d+)?$"), re.compile(r"^cudnn\d*-cuda-\d+$"))),
    ("nccl", (re.compile(r"^libnccl2$"),)),
    ("docker", (re.compile(r"^docker-ce$"), re.compile(r"^docker\.io$"))),
    ("container_toolkit", (re.compile(r"^nvidia-container-toolkit$"),)),
    ("build_tools", (re.compile(r"^build-essential$"),)),
    ("kernel_headers", (re.compile(r"^linux-headers-(?!common).*"),)),
)
LABELS = {
    "driver": "driver",
    "fabric": "NVLink fabric",
    "cuda": "CUDA",
    "cudnn": "cuDNN",
    "nccl": "NCCL",
    "docker": "Docker",
    "container_toolkit": "container toolkit",
    "environments": "environments",
    "build_tools": "build tools",
    "kernel_headers": "kernel headers",
}
SECTIONS = ("packages", "cuda", "envs", "driver_loaded", "reboot_required")


class SummaryError(ValueError):
    """A probe output that is not the summary role's."""


def parse_probe(text):
    """The probe's output as {"packages": {name: version}, "cuda": [...], "envs": {name: manifest}, ...}."""
    if not isinstance(text, str) or "## packages" not in text:
        raise SummaryError("summary: expected the summary role's probe output (sections '## packages' ...)")
    found = {name: [] for name in SECTIONS}
    current = None
    for line in text.splitlines():
        if line.startswith("## "):
            current = line[3:].strip()
            if current not in found:
                raise SummaryError("summary: unknown probe section %r" % current)
            continue
        if current and line.strip():
            found[current].append(line.rstrip("\n"))
    packages = {}
    for line in found["packages"]:
        parts = line.split("\t")
        # installed ("ii"), held ones included ("hi": the driver role holds its packages)
        if len(parts) == 3 and parts[0][1:2] == "i":
            packages[parts[1].split(":")[0]] = parts[2]
    envs = {}
    for line in found["envs"]:
        name, _sep, manifest = line.partition("\t")
        envs[name.strip()] = manifest.strip() or None
    return {
        "packages": packages,
        "cuda": sorted({line.strip().rstrip("/").rsplit("/", 1)[-1].replace("cuda-", "") for line in found["cuda"]}),
        "envs": envs,
        "driver_loaded": found["driver_loaded"][0].strip() if found["driver_loaded"] else None,
        "reboot_required": [line.strip() for line in found["reboot_required"]],
    }


def installed(snapshot):
    """{component: "package version, ..." or None} for one parsed probe."""
    packages = snapshot["packages"]
    out = {}
    for component, patterns in COMPONENTS:
        names = []
        for pattern in patterns:
            names = sorted(name for name in packages if pattern.match(name))
            if names:
                break
        out[component] = ", ".join("%s %s" % (name, packages[name]) for name in names) or None
    if snapshot["cuda"]:
        trees = ", ".join("/usr/local/cuda-%s" % v for v in snapshot["cuda"])
        out["cuda"] = "%s (%s)" % (out["cuda"], trees) if out["cuda"] else trees
    envs = [name for name, manifest in sorted(snapshot["envs"].items()) if manifest]
    out["environments"] = ", ".join(envs) or None
    return out


def fabric_line(fabric=None, imex=None):
    """The NVLink fabric's state and IMEX's status as the ``nvidia_driver`` role kept them this run, in one line, or None.

    ``fabric``: ``nvidia_driver_fabric`` (``fabric_state.verdict`` of the wait's last ``nvidia-smi -q``); each GPU's
    ``State/Status`` counted (``Completed/Success on 8 GPUs``), and the verdict's reason when it is not ready.
    ``imex``: ``nvidia_driver_imex`` (``imex_ctl.verdict``): ``IMEX READY, domain UP with 18 node(s)``, or the daemon's
    word and the reason, with the warnings (a domain DEGRADED: the trays not READY).

    >>> fabric_line({"ready": True, "gpus": [{"state": "Completed", "status": "Success"}] * 8})
    'fabric Completed/Success on 8 GPUs'
    """
    parts = []
    if isinstance(fabric, dict):
        counts = {}
        for gpu in fabric.get("gpus") or []:
            key = "%s/%s" % (gpu.get("state") or "N/A", gpu.get("status") or "N/A")
            counts[key] = counts.get(key, 0) + 1
        line = "fabric " + (", ".join("%s on %d GPU%s" % (key, n, "" if n == 1 else "s") for key, n in sorted(counts.items()))
                            or "state not reported")
        if not fabric.get("ready") and fabric.get("reason"):
            line += " (not ready: %s)" % str(fabric["reason"]).rstrip(".")
        parts.append(line)
    if isinstance(imex, dict):
        domain = imex.get("domain") or {}
        if imex.get("ready"):
            line = "IMEX READY"
            if domain.get("state"):
                line += ", domain %s with %d node(s)" % (domain["state"], len(domain.get("nodes") or []))
        else:
            line = "IMEX %s: %s" % (imex.get("daemon") or "without a state", str(imex.get("reason") or "not judged").rstrip("."))
        parts.append(line + "".join(" (%s)" % str(w).rstrip(".") for w in imex.get("warnings") or []))
    return "; ".join(parts) or None


def summarize(before, after, roles=None, driver_state=None, fabric=None, imex=None):
    """The summary of one host: what is installed now, what changed in this run, what was skipped and why,
    what is pending and what to do next. ``before``/``after``: probe outputs (text or parsed); ``roles``:
    workstation_roles' result; ``driver_state``: ``nvidia_driver_state`` (``driver_state.from_probes``) when the
    driver role ran, which wins over the probe's ``/proc/driver/nvidia/version``; ``fabric``/``imex``:
    ``nvidia_driver_fabric``/``nvidia_driver_imex`` (:func:`fabric_line`) where the role kept them."""
    before = parse_probe(before) if isinstance(before, str) else before
    after = parse_probe(after) if isinstance(after, str) else after
    now = installed(after)
    was = installed(before)
    changed = []
    for key in list(LABELS):
        if was.get(key) != now.get(key):
            changed.append({"component": key, "before": was.get(key), "after": now.get(key)})
    decided = (roles or {}).get("roles") or []
    skipped = [{"role": r["role"], "why": r["why"]} for r in decided if not r.get("run")]
    ran = [r["role"] for r in decided if r.get("run")]
    pending = []
    state = driver_state.get("state") if isinstance(driver_state, dict) else None
    if state == "pending_reboot":
        pending.append("pending reboot: NVIDIA driver %s is installed, %s" % (
            driver_state.get("installed_version") or now["driver"] or "(version unknown)",
            "module %s is still loaded" % driver_state["loaded_version"] if driver_state.get("loaded_version")
            else "its kernel module is not loaded yet; the GPU checks wait for it"))
    elif state is None and now["driver"] and not after["driver_loaded"]:
        pending.append("pending reboot: the NVIDIA driver is installed but its kernel module is not loaded")
    if after["reboot_required"]:
        pkgs = [p for p in after["reboot_required"] if p != "yes"]
        pending.append("reboot: the system asks for one (/var/run/reboot-required%s)" % (
            ": %s" % ", ".join(pkgs) if pkgs else ""))
    next_steps = []
    if any(p.startswith(("pending reboot", "reboot")) for p in pending):
        next_steps.append("reboot, then run the same command again (e.g. make workstation): that run runs every GPU check")
    return {"installed": now, "changed": changed, "ran": ran, "skipped": skipped, "pending": pending,
            "driver_state": state, "fabric": fabric_line(fabric, imex), "next": next_steps}


def summary_text(summary, host_name=None):
    """The summary as lines for ansible.builtin.debug."""
    title = "Summary for %s" % host_name if host_name else "Summary"
    lines = ["%s:" % title, "Installed now:"]
    for key, label in LABELS.items():
        lines.append("  %-18s %s" % (label + ":", summary["installed"].get(key) or "-"))
    if summary.get("fabric"):
        lines.append("  %-18s %s" % ("fabric / IMEX:", summary["fabric"]))
    if summary["changed"]:
        lines.append("Changed in this run:")
        lines.extend("  %-18s %s -> %s" % (LABELS[c["component"]] + ":", c["before"] or "-", c["after"] or "-")
                     for c in summary["changed"])
    else:
        lines.append("Changed in this run: nothing")
    if summary.get("ran"):
        lines.append("Roles run: %s" % ", ".join(summary["ran"]))
    if summary["skipped"]:
        lines.append("Skipped:")
        lines.extend("  %s: %s" % (s["role"], s["why"]) for s in summary["skipped"])
    lines.append("Pending: %s" % ("nothing" if not summary["pending"] else ""))
    if summary["pending"]:
        lines[-1] = "Pending:"
        lines.extend("  - %s" % p for p in summary["pending"])
    if summary.get("next"):
        lines.append("Next:")
        lines.extend("  - %s" % n for n in summary["next"])
    return lines
