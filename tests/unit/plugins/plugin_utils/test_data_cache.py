"""The disk cache Ansible's worker processes share for the loaded data and the GPU index (plugin_utils/data_cache.py)."""

from __future__ import annotations

import os

import pytest

from ansible_collections.dlbox.stack.plugins.plugin_utils import compat_data, data_cache


@pytest.fixture
def cache(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv("DLBOX_STACK_CACHE_DIR", str(folder))
    compat_data._CACHE.clear()
    yield folder
    compat_data._CACHE.clear()


def _fresh_process(monkeypatch):
    """What a new worker process sees: an empty memory cache."""
    compat_data._CACHE.clear()


def test_a_second_process_loads_the_pickles_not_the_yaml(cache, monkeypatch):
    first = compat_data.load_gpu_index()
    assert sorted(p.name.split("-")[0] for p in cache.glob("*.pickle")) == ["gpu", "yaml", "yaml"]
    _fresh_process(monkeypatch)
    monkeypatch.setattr(compat_data.yaml, "load", lambda *a, **k: pytest.fail("parsed the YAML again"))
    monkeypatch.setattr("ansible_collections.dlbox.stack.plugins.plugin_utils.gpu_catalog.GpuIndex.__init__",
                        lambda *a: pytest.fail("built the index again"))  # unpickling does not call __init__
    second = compat_data.load_gpu_index()
    assert second is not first
    assert second.lookup("RTX 4090") == first.lookup("RTX 4090")


def test_a_changed_file_gets_a_new_key(cache, tmp_path):
    data = tmp_path / "compat.yml"
    data.write_bytes(compat_data.DEFAULT_PATH.read_bytes())
    compat_data.load_compat(data)
    data.write_bytes(compat_data.DEFAULT_PATH.read_bytes().replace(b"\nos:", b"\n# changed\nos:", 1))
    os.utime(data, ns=(1, 1))
    compat_data._CACHE.clear()
    compat_data.load_compat(data)
    assert len(list(cache.glob("yaml-*.pickle"))) == 2


def test_a_pickle_others_can_write_is_not_loaded(cache):
    compat_data.load_compat()
    (path,) = cache.glob("yaml-*.pickle")
    path.chmod(0o666)
    assert data_cache.get("yaml", path.name[len("yaml-"):-len(".pickle")]) is None
    path.chmod(0o600)
    assert data_cache.get("yaml", path.name[len("yaml-"):-len(".pickle")]) is not None


def test_a_broken_pickle_is_rebuilt(cache):
    first = compat_data.load_compat()
    (path,) = cache.glob("yaml-*.pickle")
    path.write_bytes(b"not a pickle")
    compat_data._CACHE.clear()
    assert compat_data.load_compat() == first


def test_off_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("DLBOX_STACK_CACHE_DIR", "off")
    assert data_cache.cache_dir() is None
    data_cache.put("yaml", "k", {"a": 1})
    assert data_cache.get("yaml", "k") is None


def test_the_key_covers_the_code():
    assert data_cache.key(b"x") != data_cache.key(b"y")
    assert data_cache.key(b"x") == data_cache.key(b"x")
    assert len(data_cache.code_tag()) == 64
