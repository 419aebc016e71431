"""stack.container_toolkit: the toolkit version the container roles install comes from the data."""

from __future__ import annotations

import pytest

from ansible_collections.dlbox.stack.plugins.plugin_utils import stack_resolver, versions
from ansible_collections.dlbox.stack.plugins.plugin_utils.compat_data import load_compat, load_gpu_index


class _FakePlan:
    """Just what pick_container_toolkit reads (plan.index.data) and writes (report.add/warn)."""

    def __init__(self, section):
        self.index = type("Index", (), {"data": {"container_toolkit": section} if section is not None else {}})()
        self.errors, self.warnings = [], []

    def add(self, errors):
        self.errors += errors

    def warn(self, msg):
        self.warnings.append(msg)


SECTION = {"min_version": "1.18.1", "default_version": "1.18.2", "packages": ["a", "b"], "docker_cdi_min": "25.0",
           "source": "frozen test data", "grade": "P"}


def test_picks_the_default_version_with_its_floor_and_packages():
    p = _FakePlan(SECTION)
    got = stack_resolver.pick_container_toolkit(p, p)
    assert got == {"version": "1.18.2", "min_version": "1.18.1", "packages": ["a", "b"], "docker_cdi_min": "25.0"}
    assert not p.errors and not p.warnings


@pytest.mark.parametrize("section", [None, {}, {"min_version": "1.18.1"}])
def test_no_section_no_toolkit(section):
    plan = _FakePlan(section)
    assert stack_resolver.pick_container_toolkit(plan, plan) is None


def test_default_below_floor_is_a_data_error():
    p = _FakePlan(dict(SECTION, default_version="1.17.8"))
    stack_resolver.pick_container_toolkit(p, p)
    assert p.errors and "container_toolkit" in p.errors[0] and "1.18.1" in p.errors[0]


def test_unconfirmed_data_warns():
    p = _FakePlan(dict(SECTION, grade="U", source="frozen test data (U)"))
    assert stack_resolver.pick_container_toolkit(p, p)["version"] == "1.18.2"
    assert p.warnings and "unconfirmed" in p.warnings[0]


@pytest.fixture(scope="module")
def data():
    return load_compat()


def test_real_data_gpu_plan_carries_a_toolkit_at_or_above_its_floor(data):
    plan = stack_resolver.resolve(data, load_gpu_index().host_from_hardware({"gpus": ["RTX 4090"], "os": "debian-12"}), {}, gpu_index=load_gpu_index())
    tk = plan["stack"]["container_toolkit"]
    assert tk is not None and tk["packages"]
    assert versions.compare_versions(tk["version"], tk["min_version"]) >= 0
    assert versions.compare_versions(tk["min_version"], "1.18") >= 0  # the roles rely on 1.18 behaviour


def test_cpu_plan_has_no_toolkit(data):
    plan = stack_resolver.resolve(data, load_gpu_index().host_from_hardware({"gpus": [], "os": "debian-12"}), {}, gpu_index=load_gpu_index())
    assert plan["stack"]["container_toolkit"] is None
