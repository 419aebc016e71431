# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One module per role, each with the same entry points (issue 47), in one registry (:data:`ROLES`), reached by one
filter (``dlbox.stack.role_module``; ``dlbox.stack.role_decide`` is its ``decide`` entry under the older name).

Every role with a module here is in :data:`ROLES` with the entry points its module has:

- ``options(given)``: the role's variables, the defaults of its ``meta/argument_specs.yml`` (never retyped here) with
  the inventory's on top (:mod:`._spec`); any role with an argument spec has it, typed for a role that decides (a bool
  option given as "false" is False, an int given as "8" is 8);
- ``vendor()``: the vendor facts the role acts on, from ``data/`` (its repository, key fingerprints, layout);
- ``decide(plan, options, facts)``: everything the role's tasks need, pure (``facts``: what the host said, read by the
  tasks' probes); the tasks run it once per host per run and keep it as a fact (``__<role>_decision``); a later fact
  (after the install) goes through the same entry point;
- ``needs``: what the role downloads: for a role that decides, ``needs(decision)`` ({"apt": [...], "repositories":
  [...], ...}); otherwise ``needs(...)`` with what offline planning knows (common, cuda_repo);
- ``plan``: the part of the plan the role works from (``plugin_utils.role_plan.role_plan``), for any role of
  ``role_plan.ROLE_PARTS``;
- a role's own entries after these, declared in its ROLES line: a later step of its decision that its tasks take on
  facts read after the install (nvidia_driver: ``module_check``, which kernels must have the module and the verdict on
  their modinfo; cuda: ``held_packages``, ``distro_minimum``; python_env: ``lock``, ``check_lines``, ``wheels``;
  jetpack: ``pytorch``, ``power_result``; package_cache: ``client_apt``, the fleet cache's part that common writes).

:func:`call` reaches one entry point and says which ones a role has when asked for another; :func:`decide` is a role's
whole decision (``decide`` with ``options`` and ``needs`` added). :data:`DECIDERS` (the roles that declare ``decide``)
is derived from :data:`ROLES` (one registration path: a role's decision is added by its ROLES line; the test compares
DECIDERS with the modules that define ``decide``).
"""

from __future__ import annotations

import importlib
import inspect

ENTRIES = ("options", "vendor", "decide", "needs", "plan")
_DECIDES = ("options", "decide", "needs")

# The one registry: every role with a module in this package, and the entry points its module declares.
ROLES = {
    "common": ("options", "needs", "proxy"),
    "cuda_repo": ("options", "vendor", "needs"),
    "cuda": _DECIDES + ("held_packages", "distro_minimum"),
    "cudnn": ("options", "vendor", "decide", "needs"),
    "dcgm": _DECIDES,
    "docker": ("options", "vendor", "decide", "needs"),
    "gpu_settings": ("options", "vendor", "decide", "needs"),
    "infiniband": _DECIDES,
    "jetpack": ("options", "vendor", "decide", "needs", "pytorch", "power_result"),
    "nccl": _DECIDES,
    "nvidia_container_toolkit": ("options", "vendor", "decide", "needs"),
    "nvidia_driver": _DECIDES + ("module_check", "hold_changes", "kept_holds", "kernel_without_module", "unattended",
                                 "boot_without_module", "update_plan", "rollback_request", "rollback_hint", "persistence",
                                 "failure_logs", "install_failure", "fabric_not_ready_hint"),
    "package_cache": _DECIDES + ("client_apt",),
    "python_env": _DECIDES + ("lock", "check_lines", "wheels"),
}

# Roles whose decision lives in their module.
DECIDERS = tuple(role for role, declared in ROLES.items() if "decide" in declared)


class RoleModuleError(Exception):
    """A role or entry point that does not exist, or data that does not load (the filter raises it as its error)."""


def module(role):
    if role not in ROLES:
        raise RoleModuleError("role_module: no module for role %r (modules: %s)" % (role, ", ".join(ROLES)))
    return importlib.import_module("%s.%s" % (__name__, role))


def entries(role):
    """The entry points ``role`` has: its declared ones, and ``plan`` for a role that has a part of the plan."""
    # pylint: disable-next=import-outside-toplevel
    from ansible_collections.dlbox.stack.plugins.plugin_utils import role_plan

    declared = ROLES.get(role, ())
    return tuple(e for e in ENTRIES if e in declared or (e == "plan" and role in role_plan.ROLE_PARTS)) \
        + tuple(e for e in declared if e not in ENTRIES)


def keywords(role, entry):
    """The keywords ``entry`` of ``role`` takes through :func:`call`: ``decide`` plan, given, facts; ``options``
    given; ``plan`` those of :func:`role_plan.role_plan`; ``vendor``, ``needs`` and a role's own entries those of its
    module's function."""
    if entry == "decide":
        return ("plan", "given", "facts")
    if entry == "options":
        return ("given",)
    if entry == "plan":
        # pylint: disable-next=import-outside-toplevel
        from ansible_collections.dlbox.stack.plugins.plugin_utils import role_plan

        function = role_plan.role_plan
    else:
        function = getattr(module(role), entry)
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return tuple(name for name, param in inspect.signature(function).parameters.items()
                 if param.kind in kinds and not (entry == "plan" and name == "role"))


def check_keywords(role, entry, kwargs):
    """Refuse a keyword ``entry`` of ``role`` does not take (it would be dropped, or fail with Python's words)."""
    takes = keywords(role, entry)
    unknown = sorted(name for name in kwargs if name not in takes)
    if unknown:
        raise RoleModuleError("role_module(%s, %s): unknown keyword%s %s; it takes %s"
                              % (role, entry, "s" if len(unknown) > 1 else "", ", ".join(unknown),
                                 ", ".join(takes) or "none"))


def call(role, entry, **kwargs):
    """``entry`` of ``role``'s module with ``kwargs``; ``options`` for any role with an argument spec, ``plan`` for
    any role with a part of the plan, ``decide`` as :func:`decide` (``plan``, ``given``, ``facts``). A keyword the
    entry does not take is refused (:func:`check_keywords`)."""
    if entry not in ENTRIES and entry not in ROLES.get(role, ()):
        if role in ROLES:
            raise RoleModuleError("role_module: role %s has no entry %r (it has: %s)"
                                  % (role, entry, ", ".join(entries(role))))
        raise RoleModuleError("role_module: entry must be one of %s (or one of the role's own), not %r"
                              % (", ".join(ENTRIES), entry))
    if entry in ("vendor", "needs") and entry not in entries(role):
        raise RoleModuleError("role_module: role %s has no entry %r (it has: %s)" % (role, entry, ", ".join(entries(role))))
    check_keywords(role, entry, kwargs)
    if entry == "options" and role not in DECIDERS:
        # pylint: disable-next=import-outside-toplevel
        from ansible_collections.dlbox.stack.plugins.plugin_utils.roles import _spec

        return _spec.options(role, kwargs.get("given"))
    if entry == "plan":
        # pylint: disable-next=import-outside-toplevel
        from ansible_collections.dlbox.stack.plugins.plugin_utils import role_plan

        if role not in role_plan.ROLE_PARTS:
            raise RoleModuleError("role_module: unknown role %r for the plan (the roles with a part of it: %s)"
                                  % (role, ", ".join(sorted(role_plan.ROLE_PARTS))))
        got = role_plan.role_plan(role, kwargs.pop("plan", None), **kwargs)
        return dict({k: got[k] for k in ("ok", "errors", "plan", "stack", "host", "source")},
                    data=role_plan.role_data(role, got["data"]))
    if entry == "decide":
        return decide(role, kwargs.get("plan"), kwargs.get("given"), kwargs.get("facts"))
    return getattr(module(role), entry)(**kwargs)


def decide(role, plan=None, given=None, facts=None):
    """``role``'s decision for one host: its module's ``decide(plan, options(given), facts)`` with ``needs`` (what
    it downloads) and ``options`` (the values it decided with) added."""
    if role not in DECIDERS:
        raise RoleModuleError("role_decide: no decision module for role %r (roles: %s)" % (role, ", ".join(DECIDERS)))
    mod = module(role)
    opts = mod.options(given)
    decision = mod.decide(plan, opts, dict(facts or {}))
    return dict(decision, options=opts, needs=mod.needs(decision))
