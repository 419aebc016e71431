# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``dlbox.stack.ci_image_plan``: what playbooks/ci_image.yml decides (plugin_utils.ci_image)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.dlbox.stack.plugins.plugin_utils.lazy_import import LazyModule

_ci_image = LazyModule("plugin_utils.ci_image")
_role_plan = LazyModule("plugin_utils.role_plan")


def ci_image_plan(plan, flavour="runtime", layer="all", image_env=None, archs=None, parts=None, recorded=None,
                  compat=False, identity=False, data_path=None, machine="x86_64", environments=None, system="auto",
                  recorded_layer=None):
    """``dlbox_plan`` -> the CI image's refusals, label, runtime set, holds, NVIDIA_REQUIRE_CUDA, library path (for
    ``machine``, the image's ``uname -m``) and architectures, and whether it gets NVIDIA's apt CUDA user space
    (``system``, dlbox_ci_system_cuda; ``recorded_layer``, what the cuda layer recorded of it);
    with ``identity`` also the org.opencontainers.image.* labels' values (plugin_utils.ci_image.image_identity)."""
    if not isinstance(plan, dict) or "stack" not in plan:
        raise AnsibleFilterError("ci_image_plan: expected the plan (dlbox_plan, the result of dlbox.stack.resolve_stack)")
    if image_env is not None and not isinstance(image_env, dict):
        raise AnsibleFilterError("ci_image_plan: image_env (dlbox_ci_image_env) must be a mapping")
    try:
        data = _role_plan.load_data(data_path)
    except _role_plan.RolePlanError as exc:
        raise AnsibleFilterError(str(exc)) from exc
    out = _ci_image.decide(plan, data, flavour=flavour, layer=layer, image_env=image_env, archs=archs,
                           parts=parts, recorded=recorded if isinstance(recorded, dict) else None,
                           compat=bool(compat), machine=machine or "x86_64",
                           environments=environments if isinstance(environments, list) else None,
                           system=system, recorded_layer=recorded_layer if isinstance(recorded_layer, dict) else None)
    if identity:
        out["identity"] = _ci_image.image_identity()
    return out


class FilterModule(object):
    """dlbox.stack ci_image_plan filter."""

    def filters(self):
        return {"ci_image_plan": ci_image_plan}
