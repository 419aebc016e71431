"""The fitness filters (plugins/filter/fitness.py): bad input is refused naming what would work."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.dlbox.stack.plugins.filter import fitness as flt


def test_the_filters_are_registered():
    assert set(flt.FilterModule().filters()) == {"fitness_judge", "fitness_text", "fitness_acceptance", "fitness_fleet",
                                                 "fitness_captures"}


def test_fleet_refuses_an_unknown_format(tmp_path):
    with pytest.raises(AnsibleFilterError, match="format must be html, markdown or json, got 'pdf'"):
        flt.fitness_fleet(str(tmp_path), "pdf")


def test_fleet_of_an_empty_folder_is_an_empty_report(tmp_path):
    report = json.loads(flt.fitness_fleet(str(tmp_path), "json"))
    assert report["summary"] == {"hosts": 0, "ok": 0, "problem": 0}
    assert "275 TOPS" in flt.fitness_fleet(str(tmp_path), "markdown")


def test_judge_refuses_what_is_not_the_gpu_facts():
    with pytest.raises(AnsibleFilterError, match="needs the dlbox_host fact of dlbox.stack.gpu_facts"):
        flt.fitness_judge({"os": {}})


def test_text_refuses_other_mappings():
    with pytest.raises(AnsibleFilterError, match="expects a report of dlbox.stack.fitness_judge"):
        flt.fitness_text({"findings": []})


def test_acceptance_takes_the_scripts_json_text():
    text = json.dumps({"host": "c1", "gpus": [], "checks": {}, "figures": {}, "skipped": {"fio": "fio is not installed"}})
    report = flt.fitness_acceptance(text, {"matmul": 0.5})
    assert report["ok"] is True and [r for r in report["results"] if r["id"] == "fio"][0]["reason"] == "fio is not installed"
    with pytest.raises(AnsibleFilterError, match="dlbox_acceptance_thresholds.speed must be a positive number"):
        flt.fitness_acceptance(text, {"speed": 1})


def test_captures_without_anything_the_report_reads_are_refused_by_name(tmp_path):
    paste = tmp_path / "paste.txt"
    paste.write_text("Linux gpu07 6.8.0-45-generic #45-Ubuntu SMP x86_64 GNU/Linux\n")
    with pytest.raises(AnsibleFilterError, match="dlbox_fitness_captures: .*paste.txt holds none of the outputs"):
        flt.fitness_captures(str(paste))
    with pytest.raises(AnsibleFilterError, match="dlbox_fitness_captures: .* does not exist on the controller"):
        flt.fitness_captures(str(tmp_path / "missing.tar.gz"))


def test_a_saved_dlbox_collect_stdout_stream_is_split_into_its_captures(tmp_path):
    # dlbox-collect --stdout writes each capture after "===== dlbox-collect: NAME =====" (the doctor's live mode); the
    # captures inside are this project's development VM's (tests/fixtures/fitness/collect-dev-vm, SOURCES.md)
    folder = Path(__file__).resolve().parents[3] / "fixtures" / "fitness" / "collect-dev-vm"
    stream = tmp_path / "gpu07.txt"
    stream.write_text("".join("===== dlbox-collect: %s =====\n%s\n" % (p.stem[3:], p.read_text())
                              for p in sorted(folder.iterdir())))
    facts = flt.fitness_captures(str(stream))
    assert sorted(facts["captured"]) == ["edac", "lsblk", "lscpu", "meminfo"]
    assert facts["captured"]["lsblk"] == ["gpu07.txt:lsblk"] and facts["root_disk"]["name"] == "vda"
