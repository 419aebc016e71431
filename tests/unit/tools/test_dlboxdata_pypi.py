# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""tools/dlboxdata/pypi.py: recorded copies, loopback HTTP, versions, requirements, trimming."""

from __future__ import annotations

import json

import pytest
from dlboxdata import pypi

from conftest import FIXTURES

PROJECT = {
    "info": {
        "name": "fixture-framework",
        "version": "2.1.0",
        "requires_python": ">=3.10",
        "requires_dist": [
            "filelock",
            'nvidia-cudnn-cu13==9.26.0.51; platform_system == "Linux"',
            'nvidia-nccl-cu12<3.0,>=2.27.7; extra == "and-cuda"',
            "cuda-toolkit[cudart,nvrtc]==13.2.2",
        ],
        "summary": "FIXTURE",
    },
    "releases": {
        "1.9.0": [{"filename": "f-1.9.0.tar.gz", "requires_python": ">=3.9", "yanked": False, "packagetype": "sdist"}],
        "2.0.0": [{"filename": "f-2.0.0.tar.gz", "requires_python": ">=3.10", "yanked": True, "packagetype": "sdist"}],
        "2.0.1": [{"filename": "f-2.0.1.tar.gz", "requires_python": ">=3.10", "yanked": False, "packagetype": "sdist"}],
        "2.1.0rc1": [{"filename": "f-2.1.0rc1.tar.gz", "requires_python": ">=3.10", "yanked": False, "packagetype": "sdist"}],
        "2.1.0": [{"filename": "f-2.1.0.tar.gz", "requires_python": ">=3.10", "yanked": False, "packagetype": "sdist"}],
        "2.2.0": [],
        "not-a-version": [{"filename": "x", "yanked": False}],
        "1.10.0": [{"filename": "f-1.10.0.tar.gz", "requires_python": None, "yanked": False, "packagetype": "sdist"}],
    },
}


def test_release_versions_newest_first_without_pre_yanked_or_empty():
    assert pypi.release_versions(PROJECT) == ["2.1.0", "2.0.1", "1.10.0", "1.9.0"]
    assert pypi.release_versions(PROJECT, include_prereleases=True, include_yanked=True)[:3] == ["2.1.0", "2.1.0rc1", "2.0.1"]
    assert "2.0.0" in pypi.release_versions(PROJECT, include_yanked=True)
    assert pypi.latest_version(PROJECT) == "2.1.0"
    assert pypi.latest_version({"releases": {}}) is None


def test_requirements_read_names_pins_and_extras():
    reqs = {r.name: r for r in pypi.requirements(PROJECT)}
    assert reqs["nvidia-cudnn-cu13"].pinned() == "9.26.0.51"
    assert reqs["nvidia-cudnn-cu13"].extra is None
    assert reqs["nvidia-nccl-cu12"].extra == "and-cuda"
    assert reqs["nvidia-nccl-cu12"].pinned() is None
    assert reqs["cuda-toolkit"].extras == ("cudart", "nvrtc")
    assert reqs["cuda-toolkit"].pinned() == "13.2.2"
    assert reqs["filelock"].specifier == ""
    assert pypi.requires_python(PROJECT) == ">=3.10"


def test_requirements_refuses_an_unparsable_line():
    with pytest.raises(pypi.PyPIError, match="cannot parse requires_dist"):
        pypi.requirements({"info": {"requires_dist": ["not a ( requirement"]}})


def test_recorded_copies_are_read_and_release_falls_back_to_the_newest(tmp_path):
    pypi.write_recorded(tmp_path, "Fixture_Framework", pypi.trim_project(PROJECT))
    index = pypi.PyPI(recorded=tmp_path)
    project = index.project("fixture-framework")
    assert pypi.release_versions(project)[0] == "2.1.0"
    assert "summary" not in project["info"]  # trimmed copies keep only what is read
    assert pypi.requires_python(index.release("fixture-framework", "2.1.0")) == ">=3.10"
    with pytest.raises(pypi.PyPINotFound):
        index.release("fixture-framework", "2.0.1")
    with pytest.raises(pypi.PyPINotFound, match="no recorded copy"):
        index.project("absent")
    pypi.write_recorded(tmp_path, "fixture-framework", pypi.trim_release({"info": dict(PROJECT["info"], version="2.0.1")}), "2.0.1")
    assert index.release("fixture-framework", "2.0.1")["info"]["version"] == "2.0.1"


def test_trim_project_keeps_file_essentials_and_chosen_versions():
    trimmed = pypi.trim_project(PROJECT, versions={"2.1.0"})
    assert list(trimmed["releases"]) == ["2.1.0"]
    assert set(trimmed["releases"]["2.1.0"][0]) == {"filename", "packagetype", "python_version", "requires_python", "yanked", "upload_time"}


def test_project_over_loopback_http(tmp_path, serve_dir):
    (tmp_path / "fixture-framework").mkdir()
    (tmp_path / "fixture-framework" / "json").write_text(json.dumps(PROJECT))
    index = pypi.PyPI(base=serve_dir(tmp_path))
    assert pypi.latest_version(index.project("Fixture.Framework")) == "2.1.0"
    assert index.requests == 1 and index.bytes > 0
    with pytest.raises(pypi.PyPINotFound, match="HTTP 404"):
        index.project("absent")
    # the per-version document is absent here (as on some PyPI proxies): the newest comes from the project
    assert index.release("fixture-framework", "2.1.0")["info"]["version"] == "2.1.0"


def test_recorded_torch_copy_pins_its_cuda_stack():
    """The recorded torch document: its newest release pins an exact CUDA toolkit, cuDNN and NCCL."""
    project = pypi.PyPI(recorded=FIXTURES / "pypi").project("torch")
    pins = {r.name: r.pinned() for r in pypi.requirements(project) if r.pinned()}
    assert {"cuda-toolkit", "nvidia-cudnn-cu13", "nvidia-nccl-cu13"} <= set(pins)
    assert project["info"]["version"] in pypi.release_versions(project)
