"""Tests for plugins/plugin_utils/compat_data.py (loading and validating data/compat.yml)."""

from __future__ import annotations

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
    assert data["date"] == "2026-11-29"
    assert data["gpus"][0]["date"] == "2026-11-29"


def _write(path, data):
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


@pytest.fixture()
def good(tmp_path):
    source = yaml.safe_load(compat_data.DEFAULT_PATH.read_text(encoding="utf-8"))
    return tmp_path, source


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda d: d.pop("gpus"), "top-level key 'gpus' is missing"),
        (lambda d: d.update(cuda=[]), "top-level key 'cuda' must be a dict, not list"),
        (lambda d: d.update(schema_version=2), "schema_version 2 is not supported"),
        (lambda d: d["cuda"].pop("releases"), "'cuda' must have the lists 'releases' and 'minor_compat'"),
        (lambda d: d["os"].pop("distros"), "'os' must have the mapping 'distros'"),
    ],
)
def test_validation_names_the_key(good, mutate, message):
    tmp_path, source = good
    mutate(source)
    path = _write(tmp_path / "compat.yml", source)
    with pytest.raises(CompatDataError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_compat(path)


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
