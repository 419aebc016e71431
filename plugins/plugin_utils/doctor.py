# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The doctor: captured outputs in, a report of findings out (controller only).

Captures come from a folder, a ``dlbox-collect`` tarball or a single file on the controller
(``read_captures``), or from the stream ``dlbox-collect --stdout`` printed on a live host
(``split_collect_stream``). ``diagnose`` recognises each by its content, runs every rule of
``doctor_rules`` and returns ``{host, findings, not_checked, checked, contradicted, captures, unrecognized, counts,
ok}``; error lines no rule explains become ``unexplained-error`` findings;
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
    findings, not_checked, checked = doctor_rules.run_rules(facts, data)
    findings += unexplained_errors(texts, findings)
    order = {"error": 0, "warning": 1, "info": 2}
    findings.sort(key=lambda f: order[f["severity"]])
    contradicted = _contradicted(texts, checked)
    checked = [rule_id for rule_id in checked if rule_id not in {c["id"] for c in contradicted}]
    counts = {severity: sum(1 for f in findings if f["severity"] == severity) for severity in ("error", "warning", "info")}
    return {
        "host": host,
        "source": source,
        "ok": counts["error"] == 0,
        "counts": counts,
        "findings": findings,
        "not_checked": not_checked,
        "checked": checked,
        "contradicted": contradicted,
        "captures": recognised,
        "unrecognized": unrecognized,
        "data_date": data.get("date"),
    }


# Lines that follow from another error (a container that did not start, a unit that failed, a process that died): not
# reported on their own when another line of the same capture is explained.
_CONSEQUENCE_RE = re.compile(r"ERRO\[\d+\] error waiting for container|Encountered errors while bringing up|"
                             r"\[FAILED\] Failed to start|Control process exited|Failed with result|Job for \S+ failed|"
                             r"exited with code|\bAborted\b|core dumped|terminate called|miner terminated|"
                             r"^\w*Error:\s*$|^Error response from daemon|^\S*\s*\[ERROR\] .* failed - stderr|"
                             r"Please make sure \S+ is in your library path", re.I)
_MAX_QUOTED = 3


def _norm(line):
    """A line without numbers, addresses and spacing: repeated kernel lines compare equal."""
    return re.sub(r"\s+", " ", re.sub(r"0x[0-9a-f]+|[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}(?:\.\d)?|\d+", "#", line.lower())).strip()


def _pieces(item):
    """An evidence item and its parts: evidence adds a source before ': ' and a gloss after ' ('."""
    parts = [item, item.split(" (")[0]]
    if ": " in item:
        tail = item.split(": ", 1)[1]
        parts += [tail, tail.split(" (")[0]]
    return [_norm(part) for part in parts if len(part.strip()) >= 12]


def _explained(line, evidence):
    norm = _norm(line)
    return any(piece in norm or (len(norm) >= 12 and norm in piece) for item in evidence for piece in _pieces(item))


def unexplained_errors(texts, findings):
    """An ``unexplained-error`` finding per capture whose error lines no finding explains: the doctor is never silent
    on an error. Severity error when nothing else in that capture was explained, warning when these lines sit beside
    an explained error (usually its consequences)."""
    evidence = [item for f in findings for item in f["evidence"]]
    found = []
    for name, text in texts:
        kinds = doctor_captures.recognize(text)
        if not set(kinds) - {"not-available", "dlbox-collect-missing"}:
            continue  # the tool could not run here (not installed, not permitted): the report says so elsewhere
        owned = [m["line"] for m in doctor_captures.messages(text) if _explained(m["line"], evidence)]
        explained = [line for line in text.splitlines() if line.strip() and _explained(line.strip(), evidence)]
        rest = [line for line in doctor_captures.error_lines(text, kinds)
                if not _explained(line, evidence) and not any(line in m or m in line for m in owned)]
        if explained:
            rest = [line for line in rest if not _CONSEQUENCE_RE.search(line)]
        rest = list(dict.fromkeys(rest))
        if not rest:
            continue
        shown = ["%s: %s" % (name, line) for line in rest[:_MAX_QUOTED]]
        if len(rest) > _MAX_QUOTED:
            shown.append("(%d more error line(s) in %s)" % (len(rest) - _MAX_QUOTED, name))
        found.append({
            "id": "unexplained-error", "severity": "warning" if explained else "error",
            "title": "An error no rule of the doctor explains, in %s" % name, "evidence": shown,
            "fix": "The doctor has no rule for %s; it is quoted so the report is never silent on an error. Search the "
                   "message in the issue trackers of the tool that printed it (NVIDIA's forums for NVRM lines) and read "
                   "the lines around it in the capture." % ("these lines" if len(rest) > 1 else "this line")})
    return found


def _contradicted(texts, checked):
    """Rules that found nothing while a capture holds a line of the kind they look for: ``[{id, capture, line}]``."""
    found = []
    for rule_id in checked:
        pattern = doctor_rules.SIGNALS.get(rule_id)
        if not pattern:
            continue
        for name, text in texts:
            match = re.search(r"^(?![#$] ).*(?:%s).*$" % pattern, text, re.M)  # not the command line a capture starts with
            if match:
                found.append({"id": rule_id, "capture": name, "line": match.group(0).strip()[:200]})
                break
    return found


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
    if report.get("checked"):
        lines.append("Checked, nothing found: %s" % ", ".join(report["checked"]))
    for item in report.get("contradicted", []):
        lines.append("Not called clean: %s found nothing, but %s says: %s" % (item["id"], item["capture"], item["line"]))
    return lines
