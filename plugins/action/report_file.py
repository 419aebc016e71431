# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action for ``dlbox.stack.report_file``: write a report (the fleet summary, the stack summary) on the controller,
in the controller's own process. ``ansible.builtin.copy`` delegated to localhost starts a Python interpreter for its
stat and again for its copy, for every file of every run (make bench: 1.85 s of a 24 s no-op re-run on the FIXTURE GPU
host went to the fleet summary's two files); a report the controller writes for itself needs neither."""

from __future__ import annotations

import os
import tempfile

from ansible.module_utils.common.text.converters import to_bytes
from ansible.plugins.action import ActionBase

OPTIONS = ("dest", "content", "mode")


def _mode(value):
    """``"0644"`` or 0o644 (an int) as an int; ValueError for anything else."""
    if isinstance(value, int) and not isinstance(value, bool):
        mode = value
    elif isinstance(value, str) and value.strip() and set(value.strip()) <= set("01234567"):
        mode = int(value.strip(), 8)
    else:
        raise ValueError("report_file: mode must be an octal string such as \"0644\", not %r" % (value,))
    if not 0 <= mode <= 0o7777:
        raise ValueError("report_file: mode %r is not a file mode" % (value,))
    return mode


def write_report(dest, content, mode="0644", check=False):
    """Write ``content`` to ``dest`` (a path on the controller; a relative one from its working folder), its folders made as needed (0755), through a
    temporary file in the same folder renamed over it (a reader never sees half a report). Returns ``(changed,
    reason)``: ``changed`` True when the file's content or mode was (check: would be) different; nothing is written
    when it is the same. OSError and ValueError say why a file cannot be written."""
    if not isinstance(dest, str) or not dest.strip():
        raise ValueError("report_file: dest must be a path on the controller, not %r" % (dest,))
    dest = os.path.abspath(os.path.expanduser(dest))  # relative: to the controller's working folder, as copy's was
    if not isinstance(content, str):
        raise ValueError("report_file: content must be a string, not %s" % type(content).__name__)
    want_mode = _mode(mode)
    data = to_bytes(content, errors="surrogate_or_strict")
    try:
        with open(dest, "rb") as handle:
            same = handle.read() == data
        same_mode = (os.stat(dest).st_mode & 0o7777) == want_mode
    except FileNotFoundError:
        same = same_mode = False
    if same and same_mode:
        return False, "unchanged"
    if check:
        return True, "would be written (check mode)"
    if same:
        os.chmod(dest, want_mode)
        return True, "mode set"
    folder = os.path.dirname(dest)
    os.makedirs(folder, mode=0o755, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".%s." % os.path.basename(dest))
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, want_mode)
        os.replace(tmp, dest)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return True, "written"


class ActionModule(ActionBase):
    """Write ``content`` to ``dest`` on the controller when it differs; ``dest`` in the result only when the file has
    that content now (a result without ``dest`` is a report not written, its ``msg`` says why)."""

    TRANSFERS_FILES = False
    _supports_check_mode = True
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = self._task.args
        unknown = sorted(set(args) - set(OPTIONS))
        missing = [name for name in ("dest", "content") if name not in args]
        if unknown or missing:
            result.update(failed=True, msg="report_file: takes dest, content and mode (unknown: %s; missing: %s)"
                          % (", ".join(unknown) or "none", ", ".join(missing) or "none"))
            return result
        try:
            changed, how = write_report(args["dest"], args["content"], args.get("mode", "0644"),
                                        check=bool(self._task.check_mode))
        except (OSError, ValueError) as exc:
            reason = "%s: %s" % (exc.strerror, exc.filename) if isinstance(exc, OSError) and exc.strerror else str(exc)
            result.update(failed=True, msg="report_file: %s was not written: %s" % (args["dest"], reason))
            return result
        result.update(changed=changed, msg=how)
        if not self._task.check_mode or not changed:
            result["dest"] = args["dest"]
        return result
