# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gpu_settings role's decision (filter ``dlbox.stack.role_decide('gpu_settings', ...)``).

- ``options(given)``: the role's variables, defaults from its argument specs.
- ``decide(plan, options, facts)``: ``facts`` = {"smi": ``nvidia-smi -q -x`` (or ``-q``), "arch":
  ``ansible_facts['architecture']``, "nvidia_smi": nvidia-smi's path, "after": true for the GPUs read again after
  the changes (the settings only: the MIG layout was decided before them)}. -> :func:`gpu_settings.plan`'s result
  (what differs, the commands now and at boot, a pending ECC change) with, for a mig-parted document, ``mig``
  (where nvidia-mig-parted comes from, the layout checked against the GPUs); any problem empties the commands. The
  role decides once, in its preflight, and keeps it (``__gpu_settings_decision``); the GPUs read again after the
  changes go through the same entry point with that decision as ``facts["decided"]`` (:func:`update`).
- ``needs(decision)``: {"files": [{url, sha256, name}] (NVIDIA's nvidia-mig-manager .deb for a MIG layout)}.
- ``vendor()``: the vendor facts the role's defaults read: {"fabric_manager_service"} (data/compat.yml
  fabric_manager.service: the boot unit is ordered after it, gpu_settings_after_units).
"""

from __future__ import annotations

from ansible_collections.dlbox.stack.plugins.plugin_utils import gpu_settings as gs
from ansible_collections.dlbox.stack.plugins.plugin_utils import role_plan
from ansible_collections.dlbox.stack.plugins.plugin_utils.roles import _spec

ROLE = "gpu_settings"
REQUEST = tuple(gs.PREFIX + name for name in gs.SETTINGS) + ("gpu_settings_per_gpu",)


def options(given=None):
    return _spec.typed(ROLE, given)


def vendor(data_path=None):
    """Fabric Manager's unit, which the boot unit is ordered after (data/compat.yml fabric_manager.service)."""
    return {"fabric_manager_service": str(role_plan.load_data(data_path)["fabric_manager"]["service"])}


def settings_plan(smi_text, request, mig_config=None, mig_selected="", mig_parted=None, data=None):
    """The settings against the GPUs' limits and, with a mig-parted document, its layout ``mig_selected`` and where
    nvidia-mig-parted comes from (``mig_parted``: ``arch``, ``url``, ``sha256``, ``version``)."""
    result = gs.plan(smi_text or "", dict(request or {}), data=data)
    if mig_config:
        given = dict(mig_parted or {})
        install = gs.mig_parted_install(data=data, arch=given.get("arch") or "x86_64", url=given.get("url") or "",
                                        sha256=given.get("sha256") or "", version=given.get("version") or "")
        problems = install.pop("problems")
        try:
            problems = gs.mig_problems(mig_config, mig_selected, smi_text or "", data=data) + problems
        except gs.GpuSettingsError as exc:
            problems = [str(exc)] + problems
        result["problems"] = result["problems"] + problems
        result["mig"] = dict(install, selected=mig_selected)
        if result["problems"]:
            result.update(ok=False, commands_now=[], locked_clocks_now=[], boot_commands=[], ecc_reboot=False,
                          ecc_message="")
    return result


def update(decided, facts, data=None):
    """The kept decision ``decided`` with a later fact: "smi" (the GPUs read again after the changes) -> ``after``: the
    decided settings (its options) against that reading (the settings only: the MIG layout was decided before them);
    its ``commands_now`` are what still differs."""
    request = {name: decided["options"][name] for name in REQUEST}
    return dict(decided, after=settings_plan(str(facts.get("smi") or ""), request, data=data))


def decide(plan, options, facts, data=None):  # pylint: disable=unused-argument,redefined-outer-name
    """The plan is not read: the settings are checked against the GPUs nvidia-smi reports."""
    if facts.get("decided") is not None:
        return update(facts["decided"], facts, data=data)
    request = {name: options[name] for name in REQUEST}
    mig_config = None if facts.get("after") else options["gpu_settings_mig_config"]
    out = settings_plan(str(facts.get("smi") or ""), request, mig_config=mig_config,
                        mig_selected=str(options["gpu_settings_mig_selected"] or ""),
                        mig_parted={"arch": facts.get("arch") or "x86_64", "url": options["gpu_settings_mig_parted_url"],
                                    "sha256": options["gpu_settings_mig_parted_sha256"]}, data=data)
    out["nvidia_smi"] = str(facts.get("nvidia_smi") or "").strip()
    return out


def needs(decision):
    mig = decision.get("mig")
    return {"files": [{"url": mig["url"], "sha256": mig["sha256"], "name": mig["deb"]}] if mig else []}
