# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A role's options from its argument specs (``roles/<role>/meta/argument_specs.yml``, entry point ``main``).

The spec is the one place a variable's default and choices live (the test suite checks that ``defaults/main.yml``
agrees; a decision module takes an option's choices from :func:`choices`, and tests/unit/test_one_place.py fails on
a copy of them in the plugins). ``options("cuda", {"cuda_method": "distro"})`` -> every option of the spec with its
default, and the given value where the inventory sets one; keys the spec does not name are left out (another role's
variables). A default that is a template (``{{ ... }}``) is returned as it is: only a role run templates it.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

import yaml

ROLES_DIR = Path(__file__).resolve().parents[3] / "roles"
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class SpecError(Exception):
    """The role has no argument spec, or a given value is not one of an option's choices."""


@lru_cache(maxsize=None)
def spec(role, roles_dir=None):
    """The ``main`` entry point's options of ``role``: {name: {type, default, choices, ...}}."""
    path = Path(roles_dir or ROLES_DIR) / role / "meta" / "argument_specs.yml"
    try:
        loaded = yaml.load(path.read_text(encoding="utf-8"), Loader=_LOADER)  # nosec - CSafeLoader/SafeLoader
    except OSError as exc:
        raise SpecError("role %s has no argument spec (%s)" % (role, path)) from exc
    return (loaded.get("argument_specs") or {}).get("main", {}).get("options") or {}


def choices(role, name, roles_dir=None):
    """The ``choices`` of option ``name`` in ``role``'s argument spec, as a tuple in the spec's order: the one place a
    variable's choices live (issue 47). A decision module checks its inputs against these, never against a copy.
    ``choices("cuda", "cuda_method")`` -> ``("nvidia_repo", "distro", "local_repo", "pip_wheels")``."""
    entry = spec(role, roles_dir).get(name)
    if not entry or not entry.get("choices"):
        raise SpecError("role %s's argument spec has no choices for %s" % (role, name))
    return tuple(entry["choices"])


def options(role, given=None, roles_dir=None):
    """Every option of ``role`` with its spec default, and ``given``'s value where given; a given value outside an
    option's ``choices`` is refused naming the variable (as the role's own argument validation would)."""
    out = {}
    for name, entry in spec(role, roles_dir).items():
        value = (given or {}).get(name, entry.get("default"))
        choices = entry.get("choices")
        # a list's choices are its elements' (Ansible's argument validation reads them so)
        values = value if entry.get("type") == "list" and isinstance(value, list) else [value]
        if choices and name in (given or {}) and any(v not in choices for v in values):
            raise SpecError("%s must be one of %s, not %r" % (name, ", ".join(map(str, choices)), value))
        out[name] = value
    return out


_TRUE = ("1", "true", "yes", "on", "y", "t")
_FALSE = ("0", "false", "no", "off", "n", "f")


def typed(role, given=None, roles_dir=None):
    """:func:`options`, each value of a ``bool`` or ``int`` option as that type where the inventory gave text that
    Ansible's ``bool``/``int`` would read ("false", "8"); any other value is left as it is, for the role's decision
    (or its argument validation) to refuse naming the variable. A template default (``{{ ... }}``) is left as it is."""
    out = options(role, given, roles_dir)
    for name, entry in spec(role, roles_dir).items():
        value, kind = out[name], entry.get("type")
        if not isinstance(value, str) or "{{" in value:
            continue
        word = value.strip().lower()
        if kind == "bool" and word in _TRUE + _FALSE:
            out[name] = word in _TRUE
        elif kind == "int" and re.match(r"^[0-9]+$", word):
            out[name] = int(word)
    return out
