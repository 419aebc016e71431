# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Decisions about Docker's ``daemon.json`` (pure, standard library, Python 3.8+; runs on the target).

The file is MERGED, never overwritten: every key a user or another tool (nvidia-ctk, a monitoring agent)
put there stays; only the keys a role manages get the role's values. Before anything is written the
merged result is checked for the mistakes that stop dockerd or lose data, and each refusal names the
role variable that asked for it.

I/O (reading the file, asking dockerd, looking into the data root) stays in the
``docker_daemon_json`` module; everything here takes text and dicts and returns them.
"""

from __future__ import annotations

import json
import re

__all__ = [
    "DaemonJsonError",
    "parse_config",
    "merge",
    "log_rotation",
    "hosts_conflict",
    "default_runtime_problem",
    "data_root_change",
    "render",
    "plan",
]

DEFAULT_DATA_ROOT = "/var/lib/docker"
# Log drivers that understand the max-size/max-file log options (Docker's json-file and local).
ROTATING_LOG_DRIVERS = ("json-file", "local")
_HOST_FLAG_RE = re.compile(r"(?:^|\s)(?:-H|--host)(?:[\s=]|$)")


class DaemonJsonError(ValueError):
    """A refusal: the message says what is wrong and what would work; nothing was changed."""


def parse_config(text, path="/etc/docker/daemon.json"):
    """Parse daemon.json text. Empty text is ``{}``; anything but a JSON object is refused.

    ``'{"debug": true}'`` -> ``{"debug": True}``; ``''`` -> ``{}``;
    ``'{"debug": true,}'`` -> DaemonJsonError naming line and column.
    """
    if text is None or not text.strip():
        return {}
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise DaemonJsonError(
            "%s is not valid JSON (%s); dockerd would not start with it. Fix or remove the file by hand, then run "
            "again: the file was left exactly as it is." % (path, exc)
        )
    if not isinstance(value, dict):
        raise DaemonJsonError(
            "%s must hold a JSON object ({...}), not a %s; the file was left exactly as it is." % (path, type(value).__name__)
        )
    return value


def merge(current, settings):
    """Deep-merge ``settings`` into a copy of ``current``: mappings merge key by key, anything else replaces.

    ``merge({"runtimes": {"crun": {...}}, "debug": True}, {"runtimes": {"nvidia": {...}}})`` keeps ``crun``,
    ``debug`` and adds ``nvidia``. A value of ``None`` in ``settings`` leaves the key as it is.
    """
    out = dict(current)
    for key, value in (settings or {}).items():
        if value is None:
            continue
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


def log_rotation(config, max_size, max_file):
    """The ``log-opts`` to merge for rotation, or ``{}`` when the effective log driver does not rotate.

    Unset ``log-driver`` means json-file. ``journald`` or ``syslog`` reject max-size, so nothing is added
    for them. ``max_size`` empty and ``max_file`` 0 mean "leave as it is".
    """
    driver = config.get("log-driver") or "json-file"
    if driver not in ROTATING_LOG_DRIVERS:
        return {}
    opts = {}
    if max_size:
        opts["max-size"] = str(max_size)
    if max_file:
        opts["max-file"] = str(max_file)
    return {"log-opts": opts} if opts else {}


def hosts_conflict(config, execstart):
    """True when ``hosts`` is set while the service's command line already passes ``-H``/``--host``.

    dockerd refuses to start when both name listeners ("the following directives are specified both as
    a flag and in the configuration file: hosts"). ``execstart`` None means the packaged unit, which
    passes ``-H fd://`` (Debian's docker.io and Docker's docker-ce both do).
    """
    if "hosts" not in config:
        return False
    if execstart is None:
        return True
    return bool(_HOST_FLAG_RE.search(str(execstart)))


def default_runtime_problem(config):
    """A message when ``default-runtime`` names a runtime the configuration does not define, else None."""
    name = config.get("default-runtime")
    if name in (None, "", "runc", "io.containerd.runc.v2"):
        return None
    known = sorted(set(["runc"]) | set((config.get("runtimes") or {}).keys()))
    if name in known:
        return None
    return "default-runtime '%s' is not a runtime this daemon.json defines; known: %s" % (name, ", ".join(known))


def data_root_change(current, merged):
    """``(old, new)`` when the merged configuration moves Docker's data root, else None."""
    old = (current.get("data-root") or DEFAULT_DATA_ROOT).rstrip("/") or "/"
    new = (merged.get("data-root") or DEFAULT_DATA_ROOT).rstrip("/") or "/"
    return (old, new) if old != new else None


def render(config):
    """The text written to disk: 2-space JSON, the user's key order kept, a final newline."""
    return json.dumps(config, indent=2) + "\n"


def plan(current_text, settings, log_max_size="", log_max_file=0, execstart=None, old_root_holds_data=None,
         data_root_move=False, names=None, path="/etc/docker/daemon.json"):
    """Decide the new daemon.json. Raises DaemonJsonError for every refusal; returns a dict otherwise.

    ``old_root_holds_data``: a callable ``old_root -> bool`` asked only when the data root moves.
    ``names``: daemon.json key -> the role variable that sets it, for the messages.
    Returns ``{"current", "config", "changed", "text", "data_root"}``; ``changed`` compares parsed
    values, so a file that only differs in formatting is not rewritten.
    """
    names = names or {}

    def named(key):
        return names.get(key) or names.get("*") or "settings"

    current = parse_config(current_text, path)
    merged = merge(current, settings)
    merged = merge(merged, log_rotation(merged, log_max_size, log_max_file))
    if hosts_conflict(merged, execstart):
        raise DaemonJsonError(
            "%s: 'hosts' would be set in %s while the docker service already passes -H (%s); dockerd refuses to "
            "start with both. Remove 'hosts' from %s, or set the listeners in a systemd drop-in that clears "
            "ExecStart. Nothing was changed."
            % (named("hosts"), path, execstart if execstart is not None else "the packaged unit's -H fd://", named("hosts"))
        )
    problem = default_runtime_problem(merged)
    if problem:
        raise DaemonJsonError("%s: %s. Define it under 'runtimes' (nvidia_container_toolkit does that for 'nvidia'), "
                              "or use runc. Nothing was changed." % (named("default-runtime"), problem))
    move = data_root_change(current, merged)
    data_root = None
    if move:
        holds = bool(old_root_holds_data(move[0])) if old_root_holds_data else False
        data_root = {"old": move[0], "new": move[1], "old_holds_data": holds, "move": bool(holds and data_root_move)}
        if holds and not data_root_move:
            raise DaemonJsonError(
                "%s: the data root would change from %s to %s, but %s still holds images, containers or volumes, "
                "which Docker would no longer see. Set %s_move: true to copy them over (the old directory is kept), "
                "or move them yourself first. Nothing was changed."
                % (named("data-root"), move[0], move[1], move[0], named("data-root"))
            )
    return {"current": current, "config": merged, "changed": merged != current, "text": render(merged),
            "data_root": data_root}
