# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The string literals of a Python file that are code, not prose: shared by the tests that look for vendor facts typed
outside data/ (tests/unit/test_one_place.py, tests/unit/plugins/plugin_utils/test_nvidia_driver_pin_names.py)."""

from __future__ import annotations

import ast


def prose_ids(tree, assigned=()):
    """The ids of the docstring constants of ``tree`` (module, classes, functions) and of the values assigned to the
    names in ``assigned`` (a plugin's DOCUMENTATION, EXAMPLES, RETURN)."""
    prose = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                prose.add(id(first.value))
        if assigned and isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id in assigned
                                                             for t in node.targets):
            prose.add(id(node.value))
    return prose
