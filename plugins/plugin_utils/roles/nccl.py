# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The nccl role's decision (filter ``dlbox.stack.role_decide('nccl', ...)``); the host module ``nccl_facts`` only
gathers what the host shows, and every choice is made here, on the controller (the pure rules of
``module_utils/_nccl.py``).

- ``options(given)``: the role's variables, defaults from its argument specs (typed).
- ``decide(plan, options, facts)``: ``facts`` = {"host": ``ansible_facts['dlbox_host']``, "request":
  ``dlbox_plan_request``, "hardware": ``dlbox_plan_hardware`` (the plan is resolved once from these when ``plan`` is
  None), "check_mode": ``ansible_check_mode``, "cuda": ``cuda_facts``' result (its ``cuda_toolkits`` and
  ``cuda_default``: the toolkit the build is for), "gathered": ``nccl_facts``' topology (its ``inputs`` texts,
  ``sources`` and the ``conf`` that is there), "probe": the P2P probe's output, "candidates": ``nccl_facts``' apt
  candidates of the first package, "installed": the packages' installed versions ({name: [{version}]},
  ``package_facts``), "header_version": ``nccl_facts``' version of nccl.h; offline planning instead gives "toolkits"
  (the CUDA versions of this run and the host) and "default_toolkit", and "run" (whether the plan runs the role)}.
  -> {plan, packages, version, variable, active, skip_reason, toolkit, toolkit_error, check_mode_note, refusals,
  build, install_error, outdated, conf (settings, conf_text, p2p, peermem, gpu_count, notes, inputs, lines),
  header_error, request (offline.nccl_request: what it installs before any toolkit is), facts}: each part from the
  facts it needs, empty until they are given. The role decides once in its preflight and keeps it as
  ``__nccl_decision``; each later fact (the topology, the probe, the candidates, the installed packages, nccl.h) goes
  through the same entry point with ``__nccl_decision.facts`` and the plan it worked from (no second resolve).
- ``needs(decision)``: {"apt": [] (the build is picked from the repository's candidates later), "repositories":
  ["cuda"] when it installs, and its request's "pick" ({packages, version, cuda}), "nothing" or "error"}.
"""

from __future__ import annotations

from ansible_collections.dlbox.stack.plugins.module_utils import _nccl
from ansible_collections.dlbox.stack.plugins.plugin_utils import offline, role_plan
from ansible_collections.dlbox.stack.plugins.plugin_utils.roles import _spec

ROLE = "nccl"
PLAN_VARIABLE = "nccl_version (from the plan, stack.nccl)"


def options(given=None):
    return _spec.typed(ROLE, given)


def _versions(toolkits):
    return ", ".join(str(t.get("version")) for t in toolkits) or "none"


def _toolkit(plan_nccl, opts, cuda):
    """The installed toolkit the build is for: nccl_cuda_version's, else of the plan's CUDA major the default one,
    else the first (cuda_facts lists them newest first); None when none fits."""
    toolkits = list(cuda.get("cuda_toolkits") or [])
    wanted = str(opts["nccl_cuda_version"] or "")
    if wanted:
        return next((t for t in toolkits if str(t.get("version")) == wanted), None)
    major = str((plan_nccl or {}).get("cuda_major") or "")
    candidates = [t for t in toolkits if not major or str(t.get("version") or "").startswith(major + ".")]
    default = str((cuda.get("cuda_default") or {}).get("version") or "")
    return next((t for t in candidates if str(t.get("version")) == default), candidates[0] if candidates else None)


def _toolkit_error(plan_nccl, opts, cuda):
    toolkits = list(cuda.get("cuda_toolkits") or [])
    if str(opts["nccl_cuda_version"] or ""):
        return "nccl_cuda_version=%s is not an installed CUDA toolkit; installed: %s. Nothing was changed." % (
            opts["nccl_cuda_version"], _versions(toolkits))
    major = (plan_nccl or {}).get("cuda_major")
    return ("No CUDA toolkit%s is installed (found: %s); NCCL's apt builds are made for one toolkit. Run "
            "dlbox.stack.cuda first, or set nccl_cuda_version to an installed toolkit. Nothing was changed." % (
                " of CUDA %s.x (the plan)" % major if major else "", _versions(toolkits)))


def _conf(opts, data, gathered, probe):
    """nccl.conf from the gathered topology (and the probe's output): _nccl.decide, the user's own keys kept."""
    inputs = dict(gathered.get("inputs") or {})
    sources = dict(gathered.get("sources") or {})
    if probe:
        inputs["probe"], sources["probe"] = str(probe), "capture"
    conf_options = {"debug": opts["nccl_debug"], "socket_ifname": opts["nccl_socket_ifname"],
                    "ib_hca": opts["nccl_ib_hca"], "p2p": opts["nccl_p2p"], "extra": opts["nccl_conf_extra"] or {}}
    decision = _nccl.decide(inputs, options=conf_options, issues=data["p2p_issues"])
    settings = decision["settings"]
    if gathered.get("conf") is not None:
        settings = _nccl.keep_user_settings(gathered["conf"], settings, conf_options["extra"])
    return {"settings": settings, "conf_text": _nccl.render_conf(settings), "p2p": decision["p2p"],
            "topology": decision["topology"], "ib": decision["ib"], "peermem": decision["peermem"],
            "gpu_count": len(_nccl.parse_topo(inputs.get("topo"))["gpus"]), "notes": decision["notes"],
            "inputs": sources, "lines": ["%s: %s" % (s["key"], s["reason"]) for s in settings] + decision["notes"]}


def _outdated(packages, installed, version):
    """The packages that are not installed at ``version`` (package_facts' {name: [{version}]})."""
    return [p for p in packages if not (installed.get(p) or []) or (installed[p][0] or {}).get("version") != version]


def decide(plan, options, facts, data_path=None):  # pylint: disable=redefined-outer-name,too-many-locals
    facts = dict(facts or {})
    got = role_plan.role_plan(ROLE, plan, host=facts.get("host") or {}, request=facts.get("request") or {},
                              hardware=facts.get("hardware"), data_path=data_path)
    data = role_plan.role_data(ROLE, got["data"])
    planned = got["stack"].get("nccl") if isinstance(got["stack"].get("nccl"), dict) else None
    install, conf = bool(options["nccl_install"]), bool(options["nccl_conf"])
    given_version = str(options["nccl_version"] or "")
    version = given_version or str((planned or {}).get("version") or "")
    packages = list(options["nccl_packages"] or []) or data["packages"]
    active = (bool(given_version) or planned is not None) if install else conf
    skip_reason = ("The plan for this host has no NCCL (NCCL is planned for two or more GPUs or an NVSwitch system)"
                   " and nccl_version is empty: nothing was installed. Set nccl_version to install it anyway."
                   if install else "nccl_install and nccl_conf are both false: nothing to do.")
    out = {"plan": got["plan"], "nccl": planned, "packages": packages, "version": version,
           "variable": "nccl_version" if given_version else PLAN_VARIABLE, "toolkit": None, "toolkit_error": "",
           "check_mode_note": "", "refusals": [], "build": None, "install_error": "", "outdated": [], "conf": None,
           "header_error": "", "facts": facts}
    check_mode = bool(facts.get("check_mode"))
    cuda = facts.get("cuda")
    if active and cuda is not None:
        toolkit = _toolkit(planned, options, cuda)
        out["toolkit"] = toolkit
        if install and toolkit is None:
            if check_mode:
                out["check_mode_note"] = (
                    "Check mode: no installed CUDA toolkit fits%s; a real run refuses unless an earlier role "
                    "(dlbox.stack.cuda) installs it first. Nothing more is checked here." % (
                        " nccl_cuda_version=%s" % options["nccl_cuda_version"] if options["nccl_cuda_version"] else ""))
                skip_reason = "Check mode: no CUDA toolkit installed yet; NCCL is not checked further."
                active = False
            else:
                out["toolkit_error"] = _toolkit_error(planned, options, cuda)
        elif install:
            host = got["host"] or {}
            out["refusals"] = _nccl.refusals(
                version, str(toolkit.get("version")), data["known"], data["minor_compat"],
                driver_version=host.get("driver_installed") or None,
                compute_capabilities=host.get("compute_capabilities") or [], architectures=data["architectures"],
                variable=out["variable"])
    out["active"], out["skip_reason"] = active, skip_reason
    if facts.get("candidates") is not None and out["toolkit"] is not None:
        candidates = list(facts["candidates"])
        build = _nccl.pick_build(candidates, version, str(out["toolkit"].get("version")))
        out["build"] = dict(build, candidates=candidates)
        if "version" in build:
            out["outdated"] = _outdated(packages, facts.get("installed") or {}, build["version"])
        elif not (check_mode and not candidates):
            out["install_error"] = (
                "%s=%s for the installed CUDA %s (nccl_cuda_version): %s. Pick a version the repository has, or "
                "another installed toolkit. Nothing was installed." % (
                    out["variable"], version, out["toolkit"].get("version"), build.get("error", "")))
    if "header_version" in facts and version:
        header = facts["header_version"]
        out["header_error"] = "" if header == version else \
            "says NCCL %s; %s was installed." % (header, version)
    if facts.get("gathered") is not None:
        out["conf"] = _conf(options, data, facts["gathered"], facts.get("probe"))
    if "toolkits" in facts:
        out["request"] = offline.nccl_request(
            bool(facts.get("run", True)), install, given_version, planned, str(options["nccl_cuda_version"] or ""),
            [str(t) for t in facts["toolkits"] or []], str(facts.get("default_toolkit") or ""), packages)
    return out


def needs(decision):
    """What the decision downloads: NVIDIA's CUDA repository and its request (pick, nothing or error)."""
    request = decision.get("request") or {}
    out = {"apt": [], "repositories": ["cuda"] if "pick" in request else []}
    out.update(request)
    return out
