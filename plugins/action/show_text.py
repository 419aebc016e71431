# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action for ``dlbox.stack.show_text``: print text lines as they are, on the controller, whatever the callback's
result format (``ansible.builtin.debug`` prints a string JSON-quoted under Ansible's default settings)."""

from __future__ import annotations

from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

display = Display()


def text_lines(text):
    """``text`` (a string, or a list of strings) as a list of lines; ValueError for anything else."""
    if isinstance(text, str):
        return text.splitlines()
    if isinstance(text, (list, tuple)) and all(isinstance(line, str) for line in text):
        return [part for line in text for part in (line.splitlines() or [""])]
    raise ValueError("show_text: text must be a string or a list of strings, not %s" % type(text).__name__)


class ActionModule(ActionBase):
    """Print ``text`` on the controller's display, line by line, unquoted."""

    TRANSFERS_FILES = False
    _supports_check_mode = True
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        unknown = sorted(set(self._task.args) - {"text"})
        if unknown or "text" not in self._task.args:
            result.update(failed=True, msg="show_text: takes one option, text (got %s)" % (sorted(self._task.args),))
            return result
        try:
            lines = text_lines(self._task.args["text"])
        except ValueError as exc:
            result.update(failed=True, msg=str(exc))
            return result
        display.display("\n".join(lines))
        result.update(changed=False, lines=lines)
        return result
