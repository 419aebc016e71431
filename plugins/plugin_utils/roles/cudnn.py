# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cudnn role's decision (filter ``dlbox.stack.role_decide('cudnn', ...)``).

- ``options(given)``: the role's variables, defaults from its argument specs.
- ``decide(plan, options, facts)``: ``facts`` = {"toolkits": ``cuda_facts``' ``cuda_toolkits`` (newest first), "arch":
  the machine (``ansible_facts['architecture']``), "host": ``ansible_facts['dlbox_host']``, "request":
  ``dlbox_plan_request``, "hardware": ``dlbox_plan_hardware``, "linker": ``cudnn_facts``' ``cudnn`` before the install
  (another cuDNN on the linker path), "installed": ``cudnn_facts``' ``cudnn`` after it}. -> the cuDNN build
  (:func:`_cudnn.select`: version, the CUDA toolkit it is for, NVIDIA's names, ``errors`` naming the variable) with
  ``check``: the resolver's rules (GPU compute capability, driver floor, CUDA build) for this cuDNN with the CUDA that is
  installed, ``{ok, errors}`` (None where the selection is refused, or the host has no GPU and nothing was planned with
  ``hardware``); ``foreign``: the other cuDNN the linker already has for the soname ("linker"); ``problems``: what is
  wrong with the installed cuDNN ("installed"). The role decides once, in its preflight, and keeps it
  (``__cudnn_decision``); each later fact (the linker, the installed cuDNN) goes through the same entry point with that
  decision as ``facts["decided"]`` (:func:`update`): nothing is selected or resolved again.
- ``needs(decision)``: {"apt": [name=version, ...] with the nvidia_repo method, "repositories": ["cuda"] then}; nothing
  for a refused selection (the role's own preflight says why online).
- ``vendor()``: the index its wheel method uses by default (PyPI's, from data/repositories.yml).
"""

from __future__ import annotations

from ansible_collections.dlbox.stack.plugins.module_utils import _cudnn
from ansible_collections.dlbox.stack.plugins.plugin_utils import cuda_plan, role_plan
from ansible_collections.dlbox.stack.plugins.plugin_utils.compat_data import load_compat
from ansible_collections.dlbox.stack.plugins.plugin_utils.roles import _spec, _vendor

ROLE = "cudnn"
PLAN_VERSION = "the plan's stack.cudnn (set cudnn_version to choose another)"


def vendor():
    """{"pypi": the root of PyPI's index} (data/repositories.yml), where the wheel method installs from by default."""
    return {"pypi": _vendor.index("pypi")}


def options(given=None):
    return _spec.typed(ROLE, given)


def _planned(plan, part):
    stack = (plan or {}).get("stack") or {}
    return str(stack[part].get("version") or "") if isinstance(stack.get(part), dict) and stack[part] else ""


def _text(value):
    return "" if value is None else str(value)


def _foreign(linker, selection):
    """Another cuDNN the linker already has for the soname (``linker``: cudnn_facts' answer before the install)."""
    if linker is None or selection["errors"]:
        return []
    return ["the linker already has %s at %s" % (selection["soname"], path) for path in
            _cudnn.foreign_libraries(linker.get("linker_paths") or [], selection["lib_dir"], selection["install_root"])]


def _problems(installed, selection):
    """What is wrong with the installed cuDNN (``installed``: cudnn_facts' answer after the install)."""
    return _cudnn.check_install(installed, selection) if installed is not None and not selection["errors"] else []


def update(decided, facts):
    """The kept decision ``decided`` with the later facts: "linker" -> ``foreign``, "installed" -> ``problems``; the
    rest (the build, its check against the plan) stays as decided."""
    out = dict(decided)
    if "linker" in facts:
        out["foreign"] = _foreign(facts["linker"], decided)
    if "installed" in facts:
        out["problems"] = _problems(facts["installed"], decided)
    return out


def decide(plan, options, facts, data_path=None):  # pylint: disable=redefined-outer-name
    if facts.get("decided") is not None:
        return update(facts["decided"], facts)
    data = load_compat(data_path)
    given = _text(options["cudnn_version"])
    out = _cudnn.select(data.get("cudnn") or [], data["cudnn_names"], given or _planned(plan, "cudnn"),
                        list(facts.get("toolkits") or []), _text(options["cudnn_cuda_major"]), _planned(plan, "cuda"),
                        options["cudnn_method"], facts.get("arch") or "x86_64", options["cudnn_install_root"],
                        "cudnn_version" if given else PLAN_VERSION)
    out["method"] = options["cudnn_method"]
    if not out["errors"] and out.get("cuda_version"):  # the plan's driver must run the toolkit cuDNN is for (rt47b H1)
        out["errors"].extend(cuda_plan.driver_problems(data, plan, [out["cuda_version"]], "the CUDA toolkit cuDNN is for"))
    host, hardware = facts.get("host") or {}, facts.get("hardware")
    out["check"] = None
    if not out["errors"] and (hardware is not None or len(host.get("gpus") or []) > 0):
        got = role_plan.role_plan(ROLE, plan, host=host, request=facts.get("request") or {}, hardware=hardware,
                                  data_path=data_path,
                                  overrides={"cudnn": ("cudnn_version", out["version"]),
                                             "cuda": ("cudnn_cuda_major", out["cuda_version"])}, recheck=True)
        out["check"] = {"ok": got["ok"], "errors": got["errors"]}
    out["foreign"] = _foreign(facts.get("linker"), out)
    out["problems"] = _problems(facts.get("installed"), out)
    return out


def needs(decision):
    fits = decision.get("method") == "nvidia_repo" and not decision.get("errors") and "apt" in decision
    apt = list(decision["apt"]["install"]) if fits else []
    return {"apt": apt, "repositories": ["cuda"] if apt else []}
