# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One module per role, each with the same entry points (issue 47), reached by one filter (``dlbox.stack.role_module``).

- ``options(role, given)``: the role's variables: the defaults of its ``meta/argument_specs.yml`` (never retyped
  here) with what the inventory gives on top (:mod:`._spec`).
- ``vendor()``: the vendor facts the role acts on, from ``data/`` (its repository, key fingerprints, layout).
- ``needs(options, ...)``: what the role will download (apt packages, keys, picks from a repository), for the
  offline mirror and its check, so that no playbook reads a role's files to find out.

A role module defines the entry points it has; :func:`call` says which ones exist when asked for another.

The roles whose decision lives here (DECIDERS, filter ``dlbox.stack.role_decide``) have three more, the same in each:

- ``options(given)``: as above, typed (a bool option given as "false" is False, an int given as "8" is 8);
- ``decide(plan, options, facts)``: everything the role's tasks need, pure (``facts``: what the host said, read by
  the tasks' probes); the tasks run it once per host per run and keep it as a fact (``__<role>_decision``); a later
  fact (after the install) goes through the same entry point;
- ``needs(decision)``: what the decision downloads ({"apt": [...], "repositories": [...], "images": [...],
  "files": [...]}).

Modules so far: ``common``, ``cuda_repo``, ``nccl``, ``python_env`` (what offline needs), ``docker``
and ``nvidia_container_toolkit`` (their vendor facts), ``cuda`` and ``cudnn`` (their whole decision); the rest of each role's decision
still sits in its own filter (``nvidia_driver_plan``, ...), to move here one role at a time.
"""

from __future__ import annotations

import importlib

ROLES = ("common", "cuda_repo", "cuda", "cudnn", "nccl", "python_env", "docker", "nvidia_container_toolkit")
ENTRIES = ("options", "vendor", "needs")
DECIDERS = ("docker", "nvidia_container_toolkit", "dcgm", "gpu_settings", "cuda", "cudnn")


class RoleModuleError(Exception):
    """A role or entry point that does not exist, or data that does not load (the filter raises it as its error)."""


def module(role):
    if role not in ROLES:
        raise RoleModuleError("role_module: no module for role %r (modules: %s)" % (role, ", ".join(ROLES)))
    return importlib.import_module("%s.%s" % (__name__, role))


def call(role, entry, **kwargs):
    """``entry`` of ``role``'s module with ``kwargs``; ``options`` for any role with an argument spec."""
    if entry not in ENTRIES:
        raise RoleModuleError("role_module: entry must be one of %s, not %r" % (", ".join(ENTRIES), entry))
    if entry == "options":
        # pylint: disable-next=import-outside-toplevel
        from ansible_collections.dlbox.stack.plugins.plugin_utils.roles import _spec

        return _spec.options(role, kwargs.get("given"))
    mod = module(role)
    function = getattr(mod, entry, None)
    if function is None:
        has = [name for name in ENTRIES if name == "options" or hasattr(mod, name)]
        raise RoleModuleError("role_module: role %s has no entry %r (it has: %s)" % (role, entry, ", ".join(has)))
    return function(**kwargs)


def decide(role, plan=None, given=None, facts=None):
    """``role``'s decision for one host: its module's ``decide(plan, options(given), facts)`` with ``needs`` (what
    it downloads) and ``options`` (the values it decided with) added."""
    if role not in DECIDERS:
        raise RoleModuleError("role_decide: no decision module for role %r (roles: %s)" % (role, ", ".join(DECIDERS)))
    mod = importlib.import_module("%s.%s" % (__name__, role))
    opts = mod.options(given)
    decision = mod.decide(plan, opts, dict(facts or {}))
    return dict(decision, options=opts, needs=mod.needs(decision))
