"""Tests for plugins/plugin_utils/compat_data.py (loading and validating data/compat.yml)."""

from __future__ import annotations

import copy
import os

import pytest
import yaml

from ansible_collections.dlbox.stack.plugins.plugin_utils import compat_data
from ansible_collections.dlbox.stack.plugins.plugin_utils.compat_data import CompatDataError, load_compat


def test_default_path_points_at_the_collection_data():
    assert compat_data.DEFAULT_PATH.parts[-2:] == ("data", "compat.yml")
    assert compat_data.DEFAULT_PATH.is_file()


def test_dates_become_text():
    data = load_compat()
    assert isinstance(data["date"], str) and len(data["date"]) == 10
    assert data["gpus"][0]["date"] == data["date"]


def _write(path, data):
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def _shipped():
    """data/compat.yml parsed once for the module; each test gets its own deep copy to break."""
    return yaml.safe_load(compat_data.DEFAULT_PATH.read_text(encoding="utf-8"))


@pytest.fixture()
def good(tmp_path, _shipped):
    return tmp_path, copy.deepcopy(_shipped)


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda d: d.pop("gpus"), "top level: key 'gpus' is missing"),
        (lambda d: d.update(cuda=[]), "cuda must be a mapping, not list"),
        (lambda d: d.update(schema_version=2), "schema_version 2 is not supported"),
        (lambda d: d["cuda"].pop("releases"), "cuda: key 'releases' is missing"),
        (lambda d: d["os"].pop("distros"), "os: key 'distros' is missing"),
        (lambda d: d.update(tensorflw=[]), "top level: key 'tensorflw' is not known (nothing reads it); did you mean 'tensorflow'?"),
        (lambda d: d["cudnn"][1].update(cc_mn="7.5"), "cudnn[1] (version %s): key 'cc_mn' is not known"),
        (lambda d: d["cudnn"][1].pop("cc_max"), "cudnn[1] (version %s): key 'cc_max' is missing"),
        (lambda d: d["cudnn"][1].update(cc_min=7.5), "cudnn[1] (version %s).cc_min must be a quoted version"),
        (lambda d: d["cudnn"][1].update(grade="X"), "cudnn[1] (version %s).grade must be one of P, Pc, M, S, U"),
        (lambda d: d["cudnn"][1].update(date="yesterday"), "cudnn[1] (version %s).date must be a date"),
        (lambda d: d["driver_branches"][0].update(branch="R620"), "driver_branches[0] (branch R620).branch must be a whole number"),
        (lambda d: d["driver_branches"][0].update(status="gone"), "driver_branches[0] (branch %s).status must be one of active, eol"),
        (lambda d: d["pytorch"]["releases"][0]["variants"][0].update(ptx="yes"),
         "pytorch.releases[0] (version %s).variants[0] (name %s).ptx must be true or false"),
        (lambda d: d["os"]["distros"]["debian-12"].update(python=None), "os.distros.debian-12.python must be a quoted version"),
    ],
)
def test_validation_names_the_entry_and_key(good, mutate, message):
    tmp_path, source = good
    labels = {
        "cudnn[1] (version %s)": "cudnn[1] (version %s)" % source["cudnn"][1]["version"],
        "(branch %s)": "(branch %s)" % source["driver_branches"][0]["branch"],
        "pytorch.releases[0] (version %s)": "pytorch.releases[0] (version %s)" % source["pytorch"]["releases"][0]["version"],
        "(name %s)": "(name %s)" % source["pytorch"]["releases"][0]["variants"][0]["name"],
    }
    for pattern, text in labels.items():
        message = message.replace(pattern, text)
    mutate(source)
    path = _write(tmp_path / "compat.yml", source)
    with pytest.raises(CompatDataError) as caught:
        load_compat(path)
    assert message in str(caught.value)


def test_the_real_data_has_no_shape_problem():
    raw = yaml.safe_load(compat_data.DEFAULT_PATH.read_text(encoding="utf-8"))
    assert compat_data.shape_problems(compat_data._dates_to_text(raw)) == []


def test_entry_date_defaults_to_the_file_date(good):
    tmp_path, source = good
    source["cudnn"][0].pop("date", None)
    source["cudnn"][1]["date"] = "2026-01-02"
    data = load_compat(_write(tmp_path / "compat.yml", source))
    assert data["cudnn"][0]["date"] == data["date"]
    assert data["cudnn"][1]["date"] == "2026-01-02"


def test_not_a_mapping(tmp_path):
    path = tmp_path / "compat.yml"
    path.write_text("- 1\n", encoding="utf-8")
    with pytest.raises(CompatDataError, match="top level must be a mapping"):
        load_compat(path)


def test_invalid_yaml(tmp_path):
    path = tmp_path / "compat.yml"
    path.write_text("a: [\n", encoding="utf-8")
    with pytest.raises(CompatDataError, match="not valid YAML"):
        load_compat(path)


def test_cache_by_path_and_mtime(good):
    tmp_path, source = good
    path = _write(tmp_path / "compat.yml", source)
    first = load_compat(path)
    assert load_compat(str(path)) is first
    source["date"] = "2026-12-01"
    _write(path, source)
    stat = os.stat(path)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    second = load_compat(path)
    assert second is not first
    assert second["date"] == "2026-12-01"
