"""dlbox.stack.plan_text renders resolver plans readably."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.dlbox.stack.plugins.filter.stack import plan_text, resolve_stack


def _line(lines, prefix):
    found = [line for line in lines if line.startswith(prefix)]
    assert len(found) == 1, lines
    return found[0]


def test_cpu_only_plan_says_so():
    plan = resolve_stack({"arch": "x86_64", "os": {"key": "debian-12"}, "gpus": []}, {})
    lines = plan_text(plan, "box")
    assert lines[0].startswith("Plan for box: OK")
    assert "no NVIDIA GPU" in _line(lines, "Hardware:")
    assert _line(lines, "Driver:") == "Driver:     -"
    assert " cpu from https://download.pytorch.org/whl/cpu" in _line(lines, "PyTorch:")
    assert any("No NVIDIA GPU was found" in line for line in lines)


def test_nvswitch_server_plan_lists_fabric_manager():
    plan = resolve_stack({}, {}, {"gpus": ["H100 SXM"] * 8, "nvswitch": True, "os": "ubuntu-22.04"})
    lines = plan_text(plan)
    assert "8x NVIDIA H100 80GB HBM3 (Hopper, CC 9.0)" in _line(lines, "Hardware:")
    assert "NVSwitch" in _line(lines, "Hardware:")
    assert "open kernel modules" in _line(lines, "Driver:")
    assert _line(lines, "Fabric Mgr:").startswith("Fabric Mgr: nvidia-fabricmanager-580 ")


@pytest.mark.parametrize(
    ("hardware", "request_", "reason"),
    [
        ({"gpus": ["RTX 5090"], "os": "ubuntu-24.04"}, {"kernel_modules": "proprietary"}, "open"),
        ({"gpus": ["RTX 5090"], "os": "ubuntu-24.04"}, {"pytorch": "2.6"}, "PyTorch 2.6 has no build for compute capability 12.0"),
    ],
)
def test_refused_plan_shows_reasons(hardware, request_, reason):
    lines = plan_text(resolve_stack({}, request_, hardware))
    assert "REFUSED" in lines[0]
    start = lines.index("Refused because:")
    assert any(reason in line for line in lines[start + 1:])


def test_rejects_something_that_is_not_a_plan():
    with pytest.raises(AnsibleFilterError, match="expected the result"):
        plan_text({"ok": True})
