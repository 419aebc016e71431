# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``dlbox.stack.gpu_settings_plan``: GPU settings checked against the GPU's own limits."""

from __future__ import annotations

from ansible_collections.dlbox.stack.plugins.plugin_utils.lazy_import import LazyModule

gs = LazyModule("plugin_utils.gpu_settings")


def gpu_settings_plan(smi_text, request, mig_config=None, mig_selected="", mig_parted=None):
    """``nvidia-smi -q -x`` (or ``-q``) and the role's variables -> the plan (see the docs sidecar).

    With a mig-parted document, its layout ``mig_selected`` is checked against the GPUs too, and ``mig`` says
    where nvidia-mig-parted comes from (``mig_parted``: ``arch``, ``url``, ``sha256``, ``version``).
    """
    result = gs.plan(smi_text or "", dict(request or {}))
    if mig_config:
        options = dict(mig_parted or {})
        install = gs.mig_parted_install(arch=options.get("arch") or "x86_64", url=options.get("url") or "",
                                        sha256=options.get("sha256") or "", version=options.get("version") or "")
        problems = install.pop("problems")
        try:
            problems = gs.mig_problems(mig_config, mig_selected, smi_text or "") + problems
        except gs.GpuSettingsError as exc:
            problems = [str(exc)] + problems
        result["problems"] = result["problems"] + problems
        result["mig"] = dict(install, selected=mig_selected)
        if result["problems"]:
            result.update(ok=False, commands_now=[], locked_clocks_now=[], boot_commands=[], ecc_reboot=False,
                          ecc_message="")
    return result


class FilterModule(object):
    """dlbox.stack GPU settings filter."""

    def filters(self):
        return {"gpu_settings_plan": gpu_settings_plan}
