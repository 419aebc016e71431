# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the fitness report and the acceptance figures (playbooks/preflight.yml, playbooks/acceptance.yml)."""

from __future__ import annotations

import json

from ansible.errors import AnsibleFilterError

from ansible_collections.dlbox.stack.plugins.plugin_utils.lazy_import import LazyModule

fitness = LazyModule("plugin_utils.fitness")
fitness_captures_lib = LazyModule("plugin_utils.fitness_captures")
doctor = LazyModule("plugin_utils.doctor")


def fitness_judge(facts, host="localhost", profile="workstation", overrides=None, data_disk=None, data_path=None):
    """The fitness report of one host from its ``dlbox_host`` fact."""
    try:
        data = fitness.load_fitness_data(data_path)
        return fitness.judge_host(facts, str(host), str(profile), data, overrides or {}, data_disk or None)
    except fitness.FitnessError as exc:
        raise AnsibleFilterError(str(exc)) from exc


def fitness_captures(path):
    """The ``dlbox_host`` facts of a machine from its captures: a dlbox-collect tarball, a folder or a pasted file."""
    try:
        captures = []
        for name, text in doctor.read_captures(path):
            # a saved `dlbox-collect --stdout` stream: one part per "===== dlbox-collect: NAME =====" line
            parts = doctor.split_collect_stream(text) if "===== dlbox-collect: " in text else []
            if parts:
                captures.extend(("%s:%s" % (name, part), body) for part, body in parts)
            else:
                captures.append((name, text))
    except doctor.DoctorInputError as exc:
        raise AnsibleFilterError(str(exc).replace("dlbox_doctor_captures", "dlbox_fitness_captures")) from exc
    facts = fitness_captures_lib.host_from_captures(captures)
    if not facts["captured"]:
        raise AnsibleFilterError("dlbox_fitness_captures: %s holds none of the outputs the fitness report reads (%s)"
                                 % (path, ", ".join(fitness_captures_lib.KINDS)))
    return facts


def fitness_text(report):
    """A fitness or acceptance report as lines of text."""
    if isinstance(report, dict) and "checks" in report and "advice" in report:
        return fitness.report_text(report)
    if isinstance(report, dict) and "results" in report:
        return fitness.acceptance_text(report)
    raise AnsibleFilterError("fitness_text expects a report of dlbox.stack.fitness_judge or dlbox.stack.fitness_acceptance")


def fitness_acceptance(measured, thresholds=None, data_path=None):
    """Judge the JSON of dlbox-acceptance against data/acceptance.yml."""
    try:
        if isinstance(measured, str):
            measured = json.loads(measured)
        return fitness.judge_acceptance(measured, fitness.load_reference_data(data_path), thresholds or {})
    except ValueError as exc:
        raise AnsibleFilterError(str(exc)) from exc


def fitness_fleet(folder, fmt="html", data_path=None):
    """The fleet report of every host's reports under ``folder`` as ``html``, ``markdown`` or ``json`` text."""
    if fmt not in ("html", "markdown", "json"):
        raise AnsibleFilterError("fitness_fleet: format must be html, markdown or json, got %r" % (fmt,))
    try:
        reports, acceptances = fitness.load_folder(folder)
        report = fitness.fleet(reports, acceptances, fitness.load_fitness_data(data_path))
    except fitness.FitnessError as exc:
        raise AnsibleFilterError(str(exc)) from exc
    if fmt == "json":
        return json.dumps(report, indent=2, sort_keys=True) + "\n"
    return fitness.render_markdown(report) if fmt == "markdown" else fitness.render_html(report)


class FilterModule(object):
    """dlbox.stack fitness filters."""

    def filters(self):
        return {"fitness_judge": fitness_judge, "fitness_text": fitness_text, "fitness_acceptance": fitness_acceptance,
                "fitness_fleet": fitness_fleet, "fitness_captures": fitness_captures}
