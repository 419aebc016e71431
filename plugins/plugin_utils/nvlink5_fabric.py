# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""NVLink5 systems in the ``nvidia_driver`` role: the packages besides the driver and Fabric Manager (pure, no I/O).

The plan (``stack_resolver``) names them; this module decides what the role gives apt and checks afterwards:

- HGX B200/B300 (``stack.fabric_manager.nvlink5``): NSCQ (``libnvidia-nscq``) and ``libnvsdm`` at exactly the driver's
  version, NVLSM (``nvlsm``, versioned apart: date-based, e.g. ``2025.06.5``); the kernel modules NVLSM needs
  (``mlx5_core``, ``mlx5_ib``, ``ib_umad``). Fabric Manager's packaged start script starts NVLSM first and waits for its
  socket (``fm_sm_ipc.socket``) before ``nv-fabricmanager`` (siderolabs/extensions#717 quoting NVIDIA's Fabric Manager
  user guide, and #893's log: "waiting for socket creation at /var/run/nvidia-fabricmanager/fm_sm_ipc.socket", then
  "running command: /opt/nvidia/nvlsm/sbin/nvlsm --config /usr/share/nvidia/nvlsm/nvlsm.conf --guid ...").
- GB200/GB300 NVL compute trays (``stack.driver.imex``): ``nvidia-imex`` at exactly the driver's version; Fabric Manager
  and NVLSM run on the switch trays (NVIDIA IMEX guide, "Getting Started": the package registers ``nvidia-imex``
  and "checks the currently loaded kernel driver stack version for compatibility, and ... aborts").

NVIDIA's repository names these packages without the branch from R580 and pins them ``=<driver version>-1``
(NVIDIA/gpu-driver-container ubuntu22.04/install.sh, data/compat.yml ``fabric_manager.nvlink5``).
"""

from __future__ import annotations

from ansible_collections.dlbox.stack.plugins.module_utils import _nvidia_driver as nd
from ansible_collections.dlbox.stack.plugins.module_utils.versions import debian_version_compare


def fabric_set(fabric_manager, driver):
    """The NVLink5 packages of a plan: ``{kind, same_version, own_version, kernel_modules, imex}`` or None.

    ``kind`` ``"hgx"`` (Fabric Manager with NVLSM) or ``"nvl"`` (IMEX); ``imex``: the plan's ``stack.driver.imex``
    (service, nodes_config) on NVL trays.

    >>> fabric_set({"package": "nvidia-fabricmanager", "nvlink5": {"same_version": ["libnvidia-nscq"],
    ...             "own_version": ["nvlsm"], "kernel_modules": ["ib_umad"]}}, {})["same_version"]
    ['libnvidia-nscq']
    """
    nvlink5 = (fabric_manager or {}).get("nvlink5")
    if nvlink5:
        return {"kind": "hgx", "same_version": list(nvlink5.get("same_version") or []),
                "own_version": list(nvlink5.get("own_version") or []),
                "own_version_series": dict(nvlink5.get("own_version_series") or {}),
                "kernel_modules": list(nvlink5.get("kernel_modules") or []), "imex": None,
                "distro_packages": list(nvlink5.get("distro_packages") or [])}
    imex = (driver or {}).get("imex")
    if imex:
        return {"kind": "nvl", "same_version": list(imex.get("packages") or [imex["package"]]), "own_version": [],
                "kernel_modules": [], "imex": dict(imex)}
    nscq = (fabric_manager or {}).get("nscq")
    if nscq:
        # NVSwitch hosts whose switches are PCI devices (HGX A100/H100/H200): NSCQ beside Fabric Manager, nothing else
        return {"kind": "nvswitch", "same_version": [nscq["package"]], "own_version": [], "kernel_modules": [], "imex": None}
    return None


def optional(fabric):
    """Whether apt may lack the set at the driver's version: NSCQ alone (kind ``nvswitch``) is what DCGM and nvidia-smi
    read the NVSwitches through, and Fabric Manager trains the fabric without it, so the driver goes on without it (and
    says so); the NVLink5 sets may not (without NVLSM and libnvsdm the fabric stays In Progress; IMEX aborts)."""
    return bool(fabric) and fabric.get("kind") == "nvswitch"


def names(fabric):
    """Every package name of the set (for ``apt-cache madison`` and the repository's allow list)."""
    if not fabric:
        return []
    return list(fabric["same_version"]) + list(fabric["own_version"])


def versions(fabric, madison_text, driver_version, pending=False, installed=None):
    """What to give apt: ``{ok, install_names, versions, problems, foreign}``.

    Each same-version package at the ``madison`` version whose upstream part is ``driver_version`` (``580.95.05`` ->
    ``libnvsdm=580.95.05-1``); each own-version package by name (apt's candidate: NVLSM's date-based versions are not
    the driver's). ``pending`` (check mode before the repository is set up): names only. A package the repositories
    do not have at the driver's version (or at all) is a problem: the role refuses before any change.

    ``installed`` (``{name: version}``, dpkg before the run): an own-version package (NVLSM) installed at a version
    the repositories do not have and newer than theirs (another repository's, a local .deb) is ``foreign`` and
    refused before any change: apt keeps an installed version newer than its candidate (an older one it upgrades), and Fabric Manager's start script runs the
    installed ``/opt/nvidia/nvlsm/sbin/nvlsm``, so the NVLSM beside the driver would not be the repository's (an
    NVLSM of another version than the package is what fabric_state.not_ready_hint finds when the fabric stays In
    Progress).

    >>> versions({"same_version": [], "own_version": ["nvlsm"]}, "nvlsm | 2025.06.5-1 | http://r ./ Packages", "580.95.05",
    ...          installed={"nvlsm": "2025.09.1-1"})["foreign"]
    [{'name': 'nvlsm', 'installed': '2025.09.1-1', 'available': ['2025.06.5-1']}]

    >>> MAD = "libnvsdm | 580.95.05-1 | http://r ./ Packages\\nnvlsm | 2025.06.5-1 | http://r ./ Packages"
    >>> versions({"same_version": ["libnvsdm"], "own_version": ["nvlsm"]}, MAD, "580.95.05")["install_names"]
    ['libnvsdm=580.95.05-1', 'nvlsm']
    """
    out = {"ok": True, "install_names": [], "versions": {}, "problems": [], "left_out": [], "warning": "", "foreign": []}
    if not fabric:
        return out
    if pending:
        out["install_names"] = names(fabric)
        return out
    entries = nd.parse_madison(madison_text or "")
    want = nd.upstream_version(driver_version or "")
    for name in fabric["same_version"]:
        mine = [e["version"] for e in entries if e["name"] == name]
        match = next((v for v in mine if nd.upstream_version(v) == want), None)
        if match is None:
            available = sorted(set(nd.upstream_version(v) for v in mine))
            out["problems"].append("%s at exactly the driver's version %s (the repositories have %s)" % (
                name, want, ", ".join(available) or "no version of it"))
            continue
        out["versions"][name] = match
        out["install_names"].append("%s=%s" % (name, match))
    for name in fabric["own_version"]:
        mine = [e["version"] for e in entries if e["name"] == name]
        if not mine:
            out["problems"].append("%s (the repositories have no version of it)" % name)
            continue
        now = (installed or {}).get(name)
        if now and now not in mine and all(debian_version_compare(now, v) > 0 for v in mine):
            out["foreign"].append({"name": name, "installed": now, "available": mine})
            continue
        series = (fabric.get("own_version_series") or {}).get(name)
        if series:
            # the release series NVIDIA pairs with the driver branch (data fabric_manager.nvlink5.hgx.nvlsm): its newest
            # build the repositories have, pinned; none of it: refused before any change
            paired = [v for v in mine if in_series(v, series)]
            if not paired:
                out["problems"].append("%s of the release series %s that NVIDIA pairs with this driver branch (the "
                                       "repositories have %s)" % (name, " or ".join(series), ", ".join(sorted(set(mine)))))
                continue
            newest = paired[0]
            for version in paired[1:]:
                if debian_version_compare(version, newest) > 0:
                    newest = version
            out["versions"][name] = newest
            out["install_names"].append("%s=%s" % (name, newest))
            continue
        out["install_names"].append(name)
    if out["problems"] and optional(fabric):
        # NSCQ alone (HGX A100/H100/H200): installed when apt has it at the driver's version, else left out and said
        out["left_out"] = names(fabric)
        out["warning"] = ("NSCQ is left out: apt has no %s. Fabric Manager trains the NVSwitch fabric without it, but DCGM "
                          "and nvidia-smi cannot read the NVSwitches until %s is installed at exactly the driver's version %s."
                          % ("; no ".join(out["problems"]), ", ".join(names(fabric)), want))
        out["install_names"], out["versions"], out["problems"] = [], {}, []
    out["ok"] = not out["problems"] and not out["foreign"]
    return out


def in_series(version, series):
    """Is a date-based version (``2025.06.5-1``, ``1:2025.06.5-1``) of one of the release series (``2025.06``)?

    >>> in_series("2025.06.10-1", ["2025.06"]), in_series("2025.03.9-1", ["2025.06"]), in_series("2025.060-1", ["2025.06"])
    (True, False, False)
    """
    upstream = str(version or "").split(":", 1)[-1]
    return any(upstream == s or upstream.startswith(str(s) + ".") or upstream.startswith(str(s) + "-") for s in series or [])


def foreign_refusal(foreign, driver_version):
    """The refusal sentence for :func:`versions`' ``foreign`` packages (an NVLSM the repositories do not have)."""
    return ("This NVLink5 HGX host has %s installed, and the repositories have %s: Fabric Manager's start script runs "
            "the installed NVLSM (/opt/nvidia/nvlsm/sbin/nvlsm) before Fabric Manager %s, and an NVLSM that is not the "
            "repository's build for this driver can leave the NVLink fabric In Progress (CUDA error 802); apt would keep "
            "it. Install the repository's (apt-get install --allow-downgrades %s) or remove it, then run the same command "
            "again. Nothing was changed." % (
                "; ".join("%s %s" % (f["name"], f["installed"]) for f in foreign),
                "; ".join("%s %s" % (f["name"], ", ".join(f["available"])) for f in foreign), driver_version,
                " ".join("%s=%s" % (f["name"], f["available"][0]) for f in foreign)))


def refusal(fabric, problems, driver_version, branch):
    """The refusal sentence for :func:`versions`' problems, naming the variable that would help."""
    what = ("NVIDIA Fabric Manager's NVLink5 companions (NVSwitch management through NVLSM)" if fabric["kind"] == "hgx"
            else "NVIDIA IMEX (nvidia-imex, the NVL compute tray's memory-export service)")
    effect = ("Without them nvidia-fabricmanager.service does not start (NV_WARN_NOTHING_TO_DO) and the fabric stays In "
              "Progress: CUDA fails with error 802." if fabric["kind"] == "hgx" else
              "nvidia-imex aborts when the loaded driver is not its own version, and multi-node NVLink jobs fail.")
    return ("This NVLink5 host needs %s: %s. %s Ask for a driver branch whose version has these builds "
            "(nvidia_driver_branch, now %s), or check cuda_repo_base_url. Nothing was changed." % (
                what, "; ".join(problems), effect, branch))


def after(fabric, installed, driver_version):
    """The check after the install: ``{installed, versions, problems, holds}``.

    ``installed``: ``{name: version}`` from dpkg after the install. Same-version packages must be at the driver's
    upstream version; own-version ones present (NSCQ alone, :func:`optional`: absent only where apt lacked it, which
    :func:`versions` said). ``holds``: the names to hold with the driver (updated together).

    >>> after({"same_version": ["libnvsdm"], "own_version": ["nvlsm"]},
    ...       {"libnvsdm": "580.82.07-1", "nvlsm": "2025.06.5-1"}, "580.95.05")["problems"]
    ["libnvsdm is 580.82.07-1, the driver 580.95.05: it must have exactly the driver's version."]
    """
    out = {"installed": False, "versions": {}, "problems": [], "holds": []}
    if not fabric:
        return out
    want = nd.upstream_version(driver_version or "")
    for name in names(fabric):
        version = installed.get(name)
        if version is None:
            if not optional(fabric):
                out["problems"].append("After installing, %s is not installed." % name)
            continue
        out["versions"][name] = version
        out["holds"].append(name)
        if name in fabric["same_version"] and nd.upstream_version(version) != want:
            out["problems"].append("%s is %s, the driver %s: it must have exactly the driver's version." % (name, version, want))
        series = (fabric.get("own_version_series") or {}).get(name)
        if series and not in_series(version, series):
            out["problems"].append("%s is %s, not of the release series %s that NVIDIA pairs with driver %s."
                                   % (name, version, " or ".join(series), want))
    out["installed"] = all(n in out["versions"] for n in names(fabric))
    return out


def summary(fabric, result):
    """One line for the run's summary: what was installed for the fabric, with versions."""
    if not fabric:
        return ""
    got = result.get("versions") or {}
    parts = ["%s %s" % (n, got.get(n, "missing")) for n in names(fabric)]
    if fabric["kind"] == "hgx":
        return "NVLink5 fabric (HGX): %s; kernel modules %s" % (", ".join(parts), ", ".join(fabric["kernel_modules"]))
    if fabric["kind"] == "nvswitch":
        return "NVSwitch fabric: %s" % ", ".join(parts)
    imex = fabric["imex"]
    return "NVLink5 NVL tray: %s (service %s, nodes %s)" % (", ".join(parts), imex.get("service"), imex.get("nodes_config"))
