# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cuda role's decision (filter ``dlbox.stack.role_decide('cuda', ...)``).

- ``options(given)``: the role's variables, defaults from its argument specs.
- ``decide(plan, options, facts)``: ``facts`` = {"host": ``ansible_facts['dlbox_host']``, "request":
  ``dlbox_plan_request``, "hardware": ``dlbox_plan_hardware`` (the plan is resolved once from these when ``plan`` is
  None), "installed": ``cuda_facts``' result (its ``host_compilers`` are the compilers), "verify": the verification's
  results once it ran}. -> :func:`cuda_plan.decide`'s result (toolkits, default, removals, archs, repo_packages, distro,
  ok/errors/notes) with ``unverified`` (one line per toolkit whose check failed) and ``verify_hint`` (error 802 on an
  NVSwitch host: Fabric Manager named) from ``verify``, and ``nvswitch`` (whether the host or the plan has NVSwitch, for
  that hint). Without ``installed`` it is the decision before anything on the host is read (offline planning): no
  verification, no removals, no compiler. The role decides once, in its preflight, and keeps it (``__cuda_decided``);
  the verification's results go through the same entry point with that decision as ``facts["decided"]``
  (:func:`update`): the plan is not resolved again.
- ``needs(decision)``: {"apt": the toolkits' packages with the nvidia_repo method, "repositories": ["cuda"] then}.
- the role's own entries, on what its tasks read after the decision: ``held_packages(dpkg_lines, versions)`` (the
  installed packages of the decided toolkits, which ``cuda_hold`` holds: tasks/apt_toolkits.yml) and
  ``distro_minimum(policies, minimum, os_key)`` (the archive toolkit's package floors against ``apt-cache policy``,
  the refusals: tasks/install_distro.yml).
"""

from __future__ import annotations

from ansible_collections.dlbox.stack.plugins.plugin_utils import cuda_plan, fabric_state, role_plan
from ansible_collections.dlbox.stack.plugins.plugin_utils.roles import RoleModuleError, _spec

ROLE = "cuda"


def options(given=None):
    return _spec.typed(ROLE, given)


def _plan_options(opts, facts):
    """The role's variables as :func:`cuda_plan.decide` reads them (what the preflight's YAML handed the filter)."""
    if facts.get("installed") is None:
        return {"method": opts["cuda_method"], "versions": opts["cuda_versions"], "default": opts["cuda_default_version"],
                "compat": opts["cuda_compat"], "remove_unlisted": False, "local_repo_debs": {}, "verify": False,
                "verify_archs": [], "host_compiler": "", "wsl": False}
    virtualization = (facts.get("host") or {}).get("virtualization") or {}
    return {"method": opts["cuda_method"], "versions": opts["cuda_versions"], "default": opts["cuda_default_version"],
            "compat": opts["cuda_compat"], "remove_unlisted": opts["cuda_remove_unlisted"],
            "local_repo_debs": opts["cuda_local_repo_debs"],
            "verify": opts["cuda_verify"] and opts["cuda_verify_compile"], "verify_archs": opts["cuda_verify_archs"],
            "host_compiler": opts["cuda_host_compiler"], "wsl": virtualization.get("wsl", False)}


def unverified(results):
    """The verification's loop results -> one line per toolkit whose check did not pass (rc 2: wrong release, 3:
    compile failed, 4: the program failed on the GPU), with the last 12 lines it printed."""
    bad = []
    for result in results or []:
        if "rc" not in result or result["rc"] == 0:
            continue
        item = result.get("item") or {}
        lines = (list(result.get("stdout_lines") or []) + list(result.get("stderr_lines") or []))[-12:]
        bad.append("CUDA %s (%s) rc %s: %s" % (item.get("version"), item.get("nvcc"), result["rc"], " | ".join(lines)))
    return bad


def verify_hint(results, nvswitch):
    """Error 802 in any check's output: the sentence naming Fabric Manager (``''`` otherwise)."""
    text = "\n".join(str(line) for result in results or [] for line in (result.get("stdout_lines") or []))
    return fabric_state.cuda_failure_hint(text, bool(nvswitch))


def update(decided, facts):
    """The kept decision ``decided`` with a later fact: "verify" (the verification's loop results) -> ``unverified`` and
    ``verify_hint`` (error 802 named by the decision's ``nvswitch``); nothing else is decided again."""
    results = facts.get("verify") or []
    return dict(decided, unverified=unverified(results), verify_hint=verify_hint(results, decided.get("nvswitch")))


def decide(plan, options, facts, data_path=None):  # pylint: disable=redefined-outer-name
    if facts.get("decided") is not None:
        return update(facts["decided"], facts)
    host, request, hardware = facts.get("host") or {}, facts.get("request") or {}, facts.get("hardware")
    got = role_plan.role_plan(ROLE, plan, host=host, request=request, hardware=hardware, data_path=data_path)

    def resolve(version):
        return role_plan.role_plan(ROLE, got["plan"], host=host, request=request, hardware=hardware, data_path=data_path,
                                   overrides={"cuda": ("cuda_versions", version)})["plan"]

    installed = facts.get("installed")
    out = cuda_plan.decide(got["data"], got["plan"], _plan_options(options, facts), resolve=resolve,
                           installed=installed or {},
                           compilers=(installed or {}).get("host_compilers") if installed is not None else {})
    results = facts.get("verify") or []
    nvswitch = len(host.get("nvswitches") or []) > 0 or bool(((plan or {}).get("host") or {}).get("nvswitch"))
    out["nvswitch"] = nvswitch
    out["unverified"] = unverified(results)
    out["verify_hint"] = verify_hint(results, nvswitch)
    return out


def needs(decision):
    """The toolkits' packages where the nvidia_repo method installs them (a refused decision lists what it would)."""
    apt = [p for toolkit in decision.get("toolkits") or [] for p in (toolkit.get("packages") or [])] \
        if decision.get("method") == "nvidia_repo" else []
    return {"apt": apt, "repositories": ["cuda"] if apt else []}


def held_packages(dpkg_lines, versions):
    """dpkg-query's ``${db:Status-Abbrev} ${Package}`` lines and toolkit versions -> the packages to hold."""
    return cuda_plan.held_packages(dpkg_lines, versions)


def distro_minimum(policies, minimum, os_key=""):
    """{package: ``apt-cache policy`` text} and the decision's ``distro.minimum`` -> the refusals (empty: all fit)."""
    if not isinstance(policies, dict):
        raise RoleModuleError("role_module(cuda, distro_minimum): expected {package: apt-cache policy text}")
    return cuda_plan.distro_minimum_problems(minimum or [], policies, str(os_key or ""))
