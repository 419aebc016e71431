# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The dcgm role's decision (filter ``dlbox.stack.role_decide('dcgm', ...)``).

- ``options(given)``: the role's variables, defaults from its argument specs.
- ``decide(plan, options, facts)``: ``facts`` = {"smi": ``nvidia-smi -q`` (the driver's CUDA version), "installed_dcgm":
  the installed DCGM's version once there is one}. -> :func:`dcgm_plan.plan`'s result (package per CUDA major, the
  paired exporter, where it listens) with ``exporter_packages`` (the exporter's package when the package method runs
  it), ``apt`` (what the role installs from NVIDIA's CUDA repository) and ``facts`` (what it was decided from). The
  role decides once, in its preflight, and keeps it (``__dcgm_decision``); the installed DCGM goes through the same
  entry point with that decision as ``facts["decided"]`` (:func:`update`: the exporter goes with the DCGM that is
  there; nvidia-smi is not read again).
- ``needs(decision)``: {"apt", "repositories": ["cuda"], "images": the exporter's image for the container method}.
"""

from __future__ import annotations

from ansible_collections.dlbox.stack.plugins.plugin_utils import dcgm_plan
from ansible_collections.dlbox.stack.plugins.plugin_utils.roles import _spec

ROLE = "dcgm"
# the variables dcgm_plan.plan checks (the rest wire files and services)
REQUEST = ("dcgm_exporter_enabled", "dcgm_exporter_method", "dcgm_exporter_version", "dcgm_exporter_listen_address",
           "dcgm_exporter_port", "dcgm_exporter_collectors")


def options(given=None):
    return _spec.typed(ROLE, given)


def update(decided, facts, data=None):
    """The kept decision ``decided`` with a later fact: "installed_dcgm" (the installed DCGM's version) -> the decision
    from the facts it was decided from (``decided["facts"]``) and its options, with that version."""
    return _decide(decided["options"], dict(decided["facts"], installed_dcgm=facts.get("installed_dcgm")), data=data)


def decide(plan, options, facts, data=None):  # pylint: disable=unused-argument,redefined-outer-name
    """The plan is not read: DCGM follows the installed driver (``nvidia-smi -q``), not the planned one."""
    if facts.get("decided") is not None:
        return update(facts["decided"], facts, data=data)
    return _decide(options, facts, data=data)


def _decide(options, facts, data=None):  # pylint: disable=redefined-outer-name
    request = {name: options[name] for name in REQUEST}
    out = dcgm_plan.plan(str(facts.get("smi") or ""), request, installed_dcgm=facts.get("installed_dcgm") or None,
                         data=data)
    exporter = out["exporter"]
    packaged = bool(options["dcgm_exporter_enabled"]) and exporter["method"] == "package"
    out["exporter_enabled"] = bool(options["dcgm_exporter_enabled"])
    out["exporter_packages"] = [exporter["package"]] if packaged else []
    out["apt"] = list(out["packages"]) + out["exporter_packages"]
    # dcgm_exporter_image replaces NVIDIA's image (a registry mirror); empty: the paired release's
    out["image"] = str(options.get("dcgm_exporter_image") or "") or exporter["image"]
    out["facts"] = {"smi": str(facts.get("smi") or "")}
    return out


def needs(decision):
    """Nothing for a refused decision."""
    if not decision["ok"]:
        return {"apt": [], "repositories": [], "images": []}
    contained = decision["exporter_enabled"] and decision["exporter"]["method"] == "container"
    images = [decision["image"]] if contained and decision["image"] else []
    return {"apt": list(decision["apt"]), "repositories": ["cuda"] if decision["apt"] else [], "images": images}
