"""playbooks/doctor.yml on a live test container without a GPU: a report with "no GPU" as a finding (not a
failure, no error), written on the controller, and a host that the run did not change."""

import json
import os
from pathlib import Path

import pytest

EPHEMERAL = Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"])


@pytest.fixture(scope="module")
def name(host):
    return host.backend.get_hostname()


@pytest.fixture(scope="module")
def report(name):
    return json.loads((EPHEMERAL / "reports" / "doctor" / f"{name}.json").read_text())


def test_no_gpu_is_a_warning_finding_not_an_error(report):
    assert [(f["id"], f["severity"]) for f in report["findings"]] == [("no-gpu", "warning")]
    assert report["counts"]["error"] == 0
    assert report["ok"] is True


def test_the_live_captures_were_recognised(report):
    kinds = {kind for capture in report["captures"] for kind in capture["kinds"]}
    assert {"os-release", "uname", "pci-sysfs", "dpkg", "dlbox-collect-missing"} <= kinds
    assert report["source"] == "live host (dlbox-collect --stdout)"
    assert "nvidia-smi is not installed" in report["findings"][0]["evidence"]


def test_what_was_not_checked_is_named(report):
    # no nvidia-smi: nothing says what the GPUs' memory, persistence or clocks are
    not_checked = {item["id"] for item in report["not_checked"]}
    assert {"persistence-off", "gpu-memory-too-small", "gpu-throttled", "ecc-retired-or-remapped"} <= not_checked


def test_the_doctor_changed_nothing_on_the_host(name):
    digests = json.loads((EPHEMERAL / f"digests-{name}.json").read_text())
    assert len(digests["before"]) == 64
    assert digests["before"] == digests["after"]


def test_nothing_of_the_collector_is_left_on_the_host(host):
    assert not host.file("/usr/local/bin/dlbox-collect").exists
    assert host.run("find / -xdev -name 'dlbox-collect*' -not -path '/proc/*' 2>/dev/null").stdout.strip() == ""
