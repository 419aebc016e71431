"""playbooks/workstation.yml on a CPU-only host: what it did, and its end-of-run summary (text and JSON)."""

import glob
import json
import os

import pytest

SKIPPED = ["nvidia_driver", "cuda", "cudnn", "nccl", "docker", "nvidia_container_toolkit", "python_env"]


@pytest.fixture(scope="module")
def summaries():
    files = glob.glob(os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], "summary-*.json"))
    files.sort(key=os.path.getmtime)
    assert len(files) >= 2, files
    first, again = (json.loads(open(path, encoding="utf-8").read()) for path in files[-2:])
    return first, again


def test_first_run_summary_json(summaries, host):
    first, _again = summaries
    assert first["ran"] == ["common"]
    assert [s["role"] for s in first["skipped"]] == SKIPPED
    assert all(s["why"].startswith("no NVIDIA GPU on this host") for s in first["skipped"])
    installed = first["installed"]
    version = host.package("build-essential").version
    assert installed["build_tools"] == "build-essential %s" % version
    for part in ("driver", "cuda", "cudnn", "nccl", "docker", "container_toolkit", "environments", "kernel_headers"):
        assert installed[part] is None, part
    changed = {c["component"]: c for c in first["changed"]}
    assert changed["build_tools"]["before"] is None and changed["build_tools"]["after"] == installed["build_tools"]
    assert first["pending"] == []


def test_first_run_summary_text(summaries):
    first, _again = summaries
    text = first["text"]
    assert text[0].startswith("Summary for ")
    assert "Installed now:" in text
    assert any(line.startswith("  build tools:") and "-> build-essential" in line for line in text)
    assert "Roles run: common" in text
    assert any(line.startswith("  python_env: no NVIDIA GPU on this host: PyTorch ") and "planned but not installed" in line
               for line in text)
    assert text[-1] == "Pending: nothing"


def test_second_run_summary_changed_nothing(summaries):
    first, again = summaries
    assert again["changed"] == []
    assert "Changed in this run: nothing" in again["text"]
    assert again["installed"] == first["installed"]


def test_no_kernel_headers_without_a_driver(host):
    """The plan has no driver: the headers meta package (156 MB under /usr/src) is not installed."""
    meta = "linux-headers-amd64" if host.system_info.distribution == "debian" else "linux-headers-generic"
    assert not host.package(meta).is_installed


def test_no_framework_environment_on_a_cpu_only_host(host):
    assert not host.file("/opt/dlbox/envs").exists
