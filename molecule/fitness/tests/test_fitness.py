"""preflight.yml and acceptance.yml on a live Debian 12 container without a GPU: "no GPU" is a finding, not a
failure; fio's sequential read and the DataLoader figure are real measurements; the fleet report is on the
controller in three formats and names this host; the container's dlbox-collect output judged on the controller gets
the live run's verdict."""

import json
import os
from pathlib import Path

import pytest

REPORTS = Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]) / "reports"


@pytest.fixture(scope="module")
def name(host):
    return host.backend.get_hostname()


@pytest.fixture(scope="module")
def fitness(name):
    return json.loads((REPORTS / "fitness" / f"{name}.json").read_text())


@pytest.fixture(scope="module")
def acceptance(name):
    return json.loads((REPORTS / "acceptance" / f"{name}.json").read_text())


def by_id(acceptance):
    return {item["id"]: item for item in acceptance["results"]}


def test_no_gpu_is_a_fitness_finding_not_a_problem(fitness):
    assert fitness["profile"] == "workstation"
    assert len(fitness["findings"]) == 1 and fitness["findings"][0].startswith("no GPU visible to the driver")
    assert fitness["container"] is True
    checks = {c["id"]: c for c in fitness["checks"]}
    assert checks["gpu_memory"]["status"] == "finding"
    assert "gpu_memory" not in fitness["problems"]
    assert fitness["advice"]["pin_memory"] is False


def test_acceptance_has_no_gpu_as_findings_not_failures(acceptance):
    results = by_id(acceptance)
    # only the environment's own check may fail here (its verdict is dlbox-check's, see below)
    assert set(acceptance["failed"]) <= {"env_torch"}, acceptance["failed"]
    assert results["nvidia_smi"]["status"] == "finding"
    assert results["cuda_program"]["status"] == "finding"
    assert results["matmul_bf16"]["status"] == "skipped" and results["matmul_bf16"]["reason"]
    assert results["allreduce"]["reason"]
    assert results["dcgm"]["reason"] == "DCGM is not installed"


def test_the_environment_check_ran_for_real(acceptance):
    # dlbox-check --json of python_env's real torch environment: its verdict is recorded as it came, with its reason
    env = by_id(acceptance)["env_torch"]
    print("\ndlbox-check --json in /opt/dlbox/envs/torch: %s (%s) %s" % (env["status"], env["value"], env["reason"] or ""))
    assert env["label"] == "dlbox-check --json in torch"
    assert env["status"] in ("pass", "fail") and env["value"]
    if env["status"] == "fail":
        assert env["reason"]


def test_fio_and_dataloader_figures_are_real(acceptance):
    results = by_id(acceptance)
    print("\nfio sequential read of /var/tmp: %s MB/s (%s); DataLoader: %s samples/s" % (
        results["fio"]["value"], results["fio"]["reason"], results["dataloader"]["value"]))
    assert results["fio"]["status"] == "pass" and results["fio"]["value"] > 1
    assert results["dataloader"]["status"] == "pass" and results["dataloader"]["reference"] == 200


def test_fio_left_nothing_behind(host):
    assert not host.file("/var/tmp/dlbox-acceptance.fio").exists


def test_the_fleet_report_is_written_in_three_formats(name):
    fleet = json.loads((REPORTS / "fleet.json").read_text())
    assert [h["host"] for h in fleet["hosts"]] == [name]
    assert fleet["hosts"][0]["acceptance"]["host"] == name       # acceptance joined the fleet report
    assert f"## {name}" in (REPORTS / "fleet.md").read_text()
    page = (REPORTS / "fleet.html").read_text()
    assert page.count('<table class="host"') == 1 and f'id="host-{name}"' in page


def test_the_containers_captures_get_the_live_verdict(fitness):
    # preflight.yml judged the same container twice: live (gpu_facts over SSH) and from its dlbox-collect --stdout
    # saved on the controller (-e dlbox_fitness_captures); the verdict must be the same, check by check
    bundle = json.loads((REPORTS.parent / "reports-bundle" / "fitness" / "bundle.json").read_text())
    print("\nlive:   %s %s\nbundle: %s %s" % (fitness["ok"], fitness["problems"], bundle["ok"], bundle["problems"]))
    assert (bundle["ok"], bundle["problems"]) == (fitness["ok"], fitness["problems"])
    assert {c["id"]: c["status"] for c in bundle["checks"]} == {c["id"]: c["status"] for c in fitness["checks"]}
    assert (bundle["cpu"], bundle["ram_gib"], bundle["disks"]) == (fitness["cpu"], fitness["ram_gib"], fitness["disks"])
