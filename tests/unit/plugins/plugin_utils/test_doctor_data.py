# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""data/doctor.yml: loaded and shape-checked; errors name the entry and key at fault."""

from __future__ import annotations

import copy

import pytest

from ansible_collections.dlbox.stack.plugins.plugin_utils.doctor_data import (
    DoctorDataError, check_doctor_data, load_doctor_data)


def test_shipped_data_is_well_formed_and_sourced():
    data = load_doctor_data()
    assert data["xid"]["source"].startswith("NVIDIA, Analyzing Xid Errors with the Xid Catalog")
    assert {79, 48, 119}.issubset({entry["code"] for entry in data["xid"]["codes"]})


def test_every_code_of_the_catalog_is_listed_with_an_action():
    codes = {entry["code"]: entry for entry in load_doctor_data()["xid"]["codes"]}
    assert set(codes) == set(range(1, 173))  # NVIDIA's R610 catalog: codes 1-172
    # the example: Xid 46 is RESET_GPU in NVIDIA's catalog, not a silent warning
    assert (codes[46]["action"], codes[46]["severity"]) == ("RESET_GPU", "error")


@pytest.mark.parametrize("change, message", [
    (lambda d: d["xid"]["codes"].append(dict(d["xid"]["codes"][0])), r"xid.codes\[\d+\]: code 1 is listed twice"),
    (lambda d: d["xid"]["codes"][2].update(action="REBOOT"), r"xid.codes\[2\]: 'action' must be one of xid.actions"),
    (lambda d: d["xid"]["codes"][3].pop("mnemonic"), r"xid.codes\[3\]: 'mnemonic' must be text"),
    (lambda d: d.pop("min_shm_mib"), r"min_shm_mib: must be a mapping"),
    (lambda d: d["xid"]["codes"][1].update(severity="fatal"), r"xid.codes\[1\]: 'severity' must be one of"),
    (lambda d: d["xid"].pop("source"), r"xid: needs a 'source'"),
    (lambda d: d["min_gpu_memory_mib"].update(value="4 GiB"), r"min_gpu_memory_mib: 'value' must be a positive integer"),
    (lambda d: d["driver_package_patterns"]["patterns"].append("(["), r"patterns\[\d+\]: not a regular expression"),
    (lambda d: d.update(xids=[]), r"top level: unknown keys \['xids'\]"),
    (lambda d: d.update(date=20261201), r"date: must be a quoted date"),
])
def test_a_bad_entry_is_named(change, message):
    data = copy.deepcopy(load_doctor_data())
    change(data)
    with pytest.raises(DoctorDataError, match=message):
        check_doctor_data(data)


def test_unreadable_file(tmp_path):
    with pytest.raises(DoctorDataError, match="cannot be read"):
        load_doctor_data(tmp_path / "missing.yml")
