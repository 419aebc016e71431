"""playbooks/workstation.yml on a CPU-only host: what it did, and its end-of-run summary (text and JSON)."""

import glob
import json
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.environ["MOLECULE_PROJECT_DIRECTORY"], "tests"))
from workstation_summary_checks import check_first_run, check_second_run  # noqa: E402  pylint: disable=wrong-import-position


@pytest.fixture(scope="module")
def summaries():
    files = glob.glob(os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], "summary-*.json"))
    files.sort(key=os.path.getmtime)
    assert len(files) >= 2, files
    first, again = (json.loads(open(path, encoding="utf-8").read()) for path in files[-2:])
    return first, again


def test_first_run_summary(summaries, host):
    first, _again = summaries
    check_first_run(first, host.package("build-essential").version, "2.13.0+cpu")


def test_second_run_summary_changed_nothing(summaries):
    first, again = summaries
    check_second_run(first, again)


def test_no_kernel_headers_without_a_driver(host):
    """The plan has no driver: the headers meta package (156 MB under /usr/src) is not installed."""
    meta = "linux-headers-amd64" if host.system_info.distribution == "debian" else "linux-headers-generic"
    assert not host.package(meta).is_installed


def test_cpu_framework_environment_on_a_cpu_only_host(host):
    """The plan's CPU PyTorch, built by default (issue 45): its dlbox-check runs on the CPU."""
    out = host.check_output("/opt/dlbox/envs/torch/bin/python -c 'import torch; print(torch.__version__, torch.cuda.is_available())'")
    assert out.split() == ["2.13.0+cpu", "False"]
