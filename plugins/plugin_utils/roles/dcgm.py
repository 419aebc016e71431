# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The dcgm role's decision (filter ``dlbox.stack.role_decide('dcgm', ...)``).

- ``options(given)``: the role's variables, defaults from its argument specs.
- ``decide(plan, options, facts)``: ``facts`` = {"smi": ``nvidia-smi -q`` (the driver's CUDA version), "installed_dcgm":
  the installed DCGM's version once there is one}. -> :func:`dcgm_plan.plan`'s result (package per CUDA major, the
  paired exporter, where it listens) with ``exporter_packages`` (the exporter's package when the package method runs
  it) and ``apt`` (what the role installs from NVIDIA's CUDA repository). The role decides before the install and once
  more with the installed DCGM (the exporter goes with the DCGM that is there): the same entry point both times.
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


def decide(plan, options, facts, data=None):  # pylint: disable=unused-argument,redefined-outer-name
    """The plan is not read: DCGM follows the installed driver (``nvidia-smi -q``), not the planned one."""
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
    return out


def needs(decision):
    """Nothing for a refused decision."""
    if not decision["ok"]:
        return {"apt": [], "repositories": [], "images": []}
    contained = decision["exporter_enabled"] and decision["exporter"]["method"] == "container"
    images = [decision["image"]] if contained and decision["image"] else []
    return {"apt": list(decision["apt"]), "repositories": ["cuda"] if decision["apt"] else [], "images": images}
