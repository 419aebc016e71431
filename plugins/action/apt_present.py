# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action for ``dlbox.stack.apt_present``: ``ansible.builtin.apt`` with ``state: present``, asked only for what dpkg does
not already have.

ansible.builtin.apt re-reads apt's preferences once per named package even when every one is installed
(plugin_utils/apt_state.py): 5-7 s a task on a host whose preferences hold NVIDIA's globs, 17 such tasks in one
idempotent server run. One ``dpkg-query`` through the connection's shell (no module, no Python) answers first; the apt
module runs, with the same options, for the packages still needed, or not at all.
"""

from __future__ import annotations

import shlex

from ansible.plugins.action import ActionBase

from ansible_collections.dlbox.stack.plugins.plugin_utils import apt_state

# Options that make apt do more than install what is missing: with one of them set the task goes to apt as it is.
# (cache_valid_time alone refreshes the lists, as update_cache does.)
_APT_DOES_MORE = ("update_cache", "cache_valid_time", "upgrade", "autoremove", "autoclean", "clean", "only_upgrade", "deb",
                  "purge")
_NAME_KEYS = ("name", "pkg", "package")
_MARK = "#extended_states"


def wanted_names(args):
    """The package entries of the apt arguments ``args``, or None when the task must go to apt as it is."""
    if (args.get("state") or "present") != "present":
        return None
    if any(args.get(key) not in (None, False, 0, "0", "no", "false", "False") for key in _APT_DOES_MORE):
        return None
    given = [args[key] for key in _NAME_KEYS if args.get(key) is not None]
    if len(given) != 1:
        return None
    names = given[0]
    if isinstance(names, str):
        names = names.split(",")
    if not isinstance(names, (list, tuple)):
        return None
    return [str(item).strip() for item in names if str(item).strip()]


def deb_alone(args):
    """Whether ``args`` install one .deb file and nothing else (its package is then asked of dpkg like a name)."""
    return (bool(args.get("deb")) and not any(args.get(key) for key in _NAME_KEYS)
            and wanted_names(dict(args, deb=None, name="x")) is not None)


def deb_command(path):
    """The shell command that prints the .deb file's ``package=version``."""
    return "dpkg-deb --show --showformat=%s %s" % (shlex.quote("${Package}=${Version}"), shlex.quote(str(path)))


def probe_command(names):
    """The shell command that prints what ``apt_state.needed`` reads: dpkg's state of ``names``, then apt's marks."""
    plain = sorted({name.split("=", 1)[0] for name in names})
    return ("dpkg-query --show --showformat=%s %s 2>/dev/null; echo %s; cat /var/lib/apt/extended_states 2>/dev/null; true"
            % (shlex.quote("${Package}\t${db:Status-Abbrev}\t${Version}\n"), " ".join(shlex.quote(n) for n in plain),
               shlex.quote(_MARK)))


def still_needed(names, probe_output):
    """The entries of ``names`` apt still has to install or mark manual, from the probe's output."""
    dpkg_query, _sep, extended_states = (probe_output or "").partition(_MARK)
    return apt_state.needed(names, dpkg_query, extended_states)


class ActionModule(ActionBase):
    """Probe with dpkg-query; run ansible.builtin.apt for the missing packages only, or skip it."""

    TRANSFERS_FILES = False
    _supports_check_mode = True

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = dict(self._task.args)
        names = wanted_names(args)
        if names is None and deb_alone(args):
            shown = self._low_level_execute_command(deb_command(args["deb"]), sudoable=True)
            entry = shown.get("stdout", "").strip()
            if shown.get("rc") == 0 and "\n" not in entry and "=" in entry:
                names = [entry]
        if names is not None:
            probe = self._low_level_execute_command(probe_command(names), sudoable=True) if names else {"rc": 0}
            if probe.get("rc") == 0:
                needed = still_needed(names, probe.get("stdout", "")) if names else []
                if not needed:
                    result.update(changed=False, cache_updated=False, dpkg_answered=True,
                                  msg="Installed and marked manual already (dpkg): %s" % (", ".join(names) or "nothing named"))
                    return result
                if "deb" not in args:
                    for key in _NAME_KEYS:
                        args.pop(key, None)
                    args["name"] = needed
        result.update(self._execute_module(module_name="ansible.builtin.apt", module_args=args, task_vars=task_vars))
        result["dpkg_answered"] = False
        return result
