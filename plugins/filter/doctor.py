# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters ``dlbox.stack.doctor_diagnose`` and ``dlbox.stack.doctor_text`` (playbooks/doctor.yml)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.dlbox.stack.plugins.plugin_utils.lazy_import import LazyModule

doctor = LazyModule("plugin_utils.doctor")
_doctor_data = LazyModule("plugin_utils.doctor_data")


def doctor_diagnose(captures, host="localhost", stream=False, data_path=None):
    """Report of findings for one host.

    ``captures`` is the path of a folder, a ``dlbox-collect`` tarball or one file on the controller; with
    ``stream=True`` it is the standard output of ``dlbox-collect --stdout`` from a live host.
    """
    try:
        data = _doctor_data.load_doctor_data(data_path)
        if stream:
            if not isinstance(captures, str):
                raise doctor.DoctorInputError("the dlbox-collect output must be text, got %s" % type(captures).__name__)
            parts, source = doctor.split_collect_stream(captures), "live host (dlbox-collect --stdout)"
        else:
            parts, source = doctor.read_captures(captures), captures
        return doctor.diagnose(parts, host=str(host), data=data, source=source)
    except (doctor.DoctorInputError, _doctor_data.DoctorDataError) as exc:
        raise AnsibleFilterError(str(exc)) from exc


def doctor_text(report):
    """The report as lines of text."""
    if not isinstance(report, dict) or "findings" not in report:
        raise AnsibleFilterError("doctor_text expects a report from dlbox.stack.doctor_diagnose")
    return doctor.report_text(report)


class FilterModule(object):
    """dlbox.stack doctor filters."""

    def filters(self):
        return {"doctor_diagnose": doctor_diagnose, "doctor_text": doctor_text}
