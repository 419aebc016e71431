# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The doctor: captured outputs in, a report of findings out (controller only).

Captures come from a folder, a ``dlbox-collect`` tarball or a single file on the controller
(``read_captures``), or from the stream ``dlbox-collect --stdout`` printed on a live host
(``split_collect_stream``). ``diagnose`` recognises each by its content, runs every rule of
``doctor_rules`` and returns ``{host, findings, not_checked, captures, unrecognized, counts, ok}``;
``report_text`` renders it for the run's output.
"""

from __future__ import annotations

import os
import re
import tarfile

from ansible_collections.dlbox.stack.plugins.plugin_utils import doctor_captures, doctor_rules
from ansible_collections.dlbox.stack.plugins.plugin_utils.doctor_data import load_doctor_data

__all__ = ["DoctorInputError", "read_captures", "split_collect_stream", "diagnose", "report_text"]

_MAX_FILE_BYTES = 8 * 1024 * 1024
_MAX_FILES = 500
_MARKER_RE = re.compile(r"^===== dlbox-collect: (?P<name>[\w.+-]+) =====$", re.M)


class DoctorInputError(ValueError):
    """The captures cannot be read."""


def _lf(text):
    """Text with LF line ends. Output read through a terminal ends every line with CR LF: Ansible's ``script`` over SSH
    runs under ``ssh -tt`` (the ssh connection's ``use_tty``), and so does ``ssh -t host nvidia-smi > file``."""
    return text.replace("\r\n", "\n")


def _decode(data):
    return _lf(data.decode("utf-8", errors="replace"))


def _read_tar(path):
    found = []
    try:
        with tarfile.open(path) as archive:
            for member in archive:
                if not member.isfile():
                    continue
                if len(found) >= _MAX_FILES:
                    raise DoctorInputError("%s holds more than %d files" % (path, _MAX_FILES))
                if member.size > _MAX_FILE_BYTES:
                    found.append((member.name, ""))
                    continue
                handle = archive.extractfile(member)
                found.append((member.name, _decode(handle.read()) if handle else ""))
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise DoctorInputError("%s is not a readable tarball (%s)" % (path, exc)) from exc
    return found


def _read_file(path, name):
    if os.path.getsize(path) > _MAX_FILE_BYTES:
        return name, ""
    with open(path, "rb") as handle:
        return name, _decode(handle.read())


def read_captures(path):
    """``[(name, text)]`` from a folder (searched recursively), a tarball (``.tar``, ``.tar.gz``...) or one file."""
    if not isinstance(path, str) or not path.strip():
        raise DoctorInputError("dlbox_doctor_captures must be the path of a folder, a tarball or a file on the "
                               "controller, e.g. /tmp/dlbox-collect-gpu01.tar.gz; got %r" % (path,))
    path = os.path.expanduser(path)
    if not os.path.exists(path):
        raise DoctorInputError("dlbox_doctor_captures: %s does not exist on the controller" % path)
    try:
        if os.path.isdir(path):
            found = []
            for top, dirs, files in os.walk(path):
                dirs.sort()
                for name in sorted(files):
                    full = os.path.join(top, name)
                    if len(found) >= _MAX_FILES:
                        raise DoctorInputError("%s holds more than %d files" % (path, _MAX_FILES))
                    if tarfile.is_tarfile(full):
                        found.extend((os.path.relpath(full, path) + ":" + n, t) for n, t in _read_tar(full))
                    else:
                        found.append(_read_file(full, os.path.relpath(full, path)))
            return found
        if tarfile.is_tarfile(path):
            return _read_tar(path)
        return [_read_file(path, os.path.basename(path))]
    except OSError as exc:
        raise DoctorInputError("dlbox_doctor_captures: %s cannot be read (%s)" % (path, exc.strerror or exc)) from exc


def split_collect_stream(text):
    """``dlbox-collect --stdout`` output -> ``[(name, text)]`` (one part per ``===== dlbox-collect: NAME =====``)."""
    text = _lf(text or "")
    parts = []
    matches = list(_MARKER_RE.finditer(text))
    for index, match in enumerate(matches):
        end = matches[index + 1].start() if index + 1 < len(matches) else len(text)
        parts.append((match.group("name"), text[match.end():end].strip("\n")))
    return parts


def diagnose(captures, host="localhost", data=None, source=None):
    """The report for ``[(name, text)]`` captures of one host (``data``: data/doctor.yml, loaded when None)."""
    data = data if data is not None else load_doctor_data()
    recognised, unrecognized, texts = [], [], []
    for name, text in captures:
        kinds = doctor_captures.recognize(text)
        if kinds:
            recognised.append({"file": name, "kinds": kinds})
            texts.append((name, text))
        elif (text or "").strip():
            unrecognized.append(name)
    facts = doctor_captures.extract_facts(texts)
    findings, not_checked = doctor_rules.run_rules(facts, data)
    counts = {severity: sum(1 for f in findings if f["severity"] == severity) for severity in ("error", "warning", "info")}
    return {
        "host": host,
        "source": source,
        "ok": counts["error"] == 0,
        "counts": counts,
        "findings": findings,
        "not_checked": not_checked,
        "captures": recognised,
        "unrecognized": unrecognized,
        "data_date": data.get("date"),
    }


def report_text(report):
    """Readable lines for ``ansible.builtin.debug``."""
    counts = report["counts"]
    lines = ["Doctor for %s: %d error(s), %d warning(s), %d info; %d capture(s) read%s" % (
        report["host"], counts["error"], counts["warning"], counts["info"], len(report["captures"]),
        (", %d not recognised: %s" % (len(report["unrecognized"]), ", ".join(report["unrecognized"][:5])))
        if report["unrecognized"] else "")]
    for finding in report["findings"]:
        lines.append("%s [%s] %s" % (finding["severity"].upper(), finding["id"], finding["title"]))
        for item in finding["evidence"]:
            lines.append("    evidence: %s" % item)
        lines.append("    fix: %s" % finding["fix"])
    if not report["findings"]:
        lines.append("No finding.")
    if report["not_checked"]:
        lines.append("Not checked (the captures lack what they need): %s" % ", ".join(
            item["id"] for item in report["not_checked"]))
    return lines
