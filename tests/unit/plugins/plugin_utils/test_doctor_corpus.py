# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The doctor on its corpus: real outputs users pasted in public issue trackers (tests/fixtures/doctor/corpus).

``cases.yml`` names each paste, its class and the finding ids that name its cause (``[]``: a healthy capture,
which must give no error). Every case runs alone, as a user would paste it. The figures (cases, classes, hits,
misses, false alarms) are printed by ``test_corpus_figures`` (``pytest -s``) and by running this file:

    python tests/unit/plugins/plugin_utils/test_doctor_corpus.py

A hit: a finding with one of the expected ids (for a healthy capture: no error; with ``max_severity: warning``, not
as an error), and every one of the case's ``checks`` holds (a finding's severity, title or fix text, see ``_check``).
A miss: none of them. A false
alarm: an error finding whose id the case neither expects nor lists under ``also`` (true consequences of the
cause, e.g. driver-not-loaded beside nouveau-loaded); on a healthy capture: any error.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

if __name__ == "__main__":  # run as a script: make the collection importable as the unit tests' conftest does
    sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "tools"))
    from dlboxdata import collection  # pylint: disable=import-error

    collection.importable()

from ansible_collections.dlbox.stack.plugins.plugin_utils import doctor  # noqa: E402
from ansible_collections.dlbox.stack.plugins.plugin_utils.doctor_data import load_doctor_data  # noqa: E402

CORPUS = Path(__file__).resolve().parents[3] / "fixtures" / "doctor" / "corpus"
DATA = load_doctor_data(Path(__file__).resolve().parents[2] / "data" / "doctor-frozen.yml")
CASES = yaml.safe_load((CORPUS / "cases.yml").read_text(encoding="utf-8"))["cases"]


def judge(case, data=DATA):
    """``{file, class, hit, false_alarms, ids}`` for one case."""
    path = CORPUS / case["file"]
    report = doctor.diagnose([(path.name, path.read_text(encoding="utf-8"))], host="corpus", data=data)
    expect = set(case["expect"])
    ids = sorted({f["id"] for f in report["findings"]})
    errors = sorted({f["id"] for f in report["findings"] if f["severity"] == "error"})
    hit = (not errors) if not expect else bool(expect & set(ids))
    if case.get("max_severity") == "warning":  # the cause is named, but it is not an error here
        hit = hit and not expect & set(errors)
    for check in case.get("checks", []):  # what the finding must say (severity, title, fix), or must not
        hit = hit and _check(report["findings"], check)
    return {"file": case["file"], "class": case["class"], "hit": hit, "ids": ids,
            "false_alarms": [i for i in errors if i not in expect and i not in case.get("also", [])]}


def _check(findings, check):
    """A finding with ``check["id"]`` matching every condition of the check (``absent: true``: no such finding).
    Conditions: ``severity``, ``title_has``, ``fix_has``, ``fix_lacks``."""
    def matches(finding):
        return (finding["id"] == check["id"]
                and finding["severity"] == check.get("severity", finding["severity"])
                and check.get("title_has", "") in finding["title"]
                and check.get("fix_has", "") in finding["fix"]
                and not ("fix_lacks" in check and check["fix_lacks"] in finding["fix"]))
    found = any(matches(f) for f in findings)
    return not found if check.get("absent") else found


def figures(data=DATA):
    """The corpus figures and the cases missed or falsely alarmed."""
    results = [judge(case, data) for case in CASES]
    return {
        "cases": len(results),
        "classes": len({r["class"] for r in results}),
        "healthy_cases": sum(1 for c in CASES if not c["expect"]),
        "hits": sum(1 for r in results if r["hit"]),
        "misses": sum(1 for r in results if not r["hit"]),
        "false_alarms": sum(1 for r in results if r["false_alarms"]),
        "missed": [(r["file"], r["ids"]) for r in results if not r["hit"]],
        "alarmed": [(r["file"], r["false_alarms"]) for r in results if r["false_alarms"]],
    }


def _print(result):
    print("doctor corpus: %(cases)d cases (%(healthy_cases)d healthy), %(classes)d classes; hits %(hits)d, "
          "misses %(misses)d, false alarms %(false_alarms)d" % result)
    for name, ids in result["missed"]:
        print("  miss: %s -> %s" % (name, ", ".join(ids) or "no finding"))
    for name, ids in result["alarmed"]:
        print("  false alarm: %s -> %s" % (name, ", ".join(ids)))


@pytest.mark.parametrize("case", CASES, ids=[c["file"] for c in CASES])
def test_corpus_case(case):
    result = judge(case)
    assert result["hit"], "expected %s, got %s" % (case["expect"] or "no error", result["ids"])
    assert not result["false_alarms"], result


def test_corpus_figures():
    result = figures()
    _print(result)
    assert result["cases"] >= 80 and result["classes"] >= 35
    assert result["misses"] == 0 and result["false_alarms"] == 0


def test_every_case_names_its_source():
    for case in CASES:
        assert case.get("source"), case["file"]
        assert (CORPUS / case["file"]).is_file(), case["file"]


if __name__ == "__main__":
    _print(figures())
