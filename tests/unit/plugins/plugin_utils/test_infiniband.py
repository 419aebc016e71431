# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""ibstat's output read into link state and rate per port, on a recorded real ibstat (tests/fixtures/server/SOURCES.md:
a ConnectX-4 whose port is LinkUp but Initializing, no subnet manager yet)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.dlbox.stack.plugins.plugin_utils import gpu_settings as gs
from ansible_collections.dlbox.stack.plugins.plugin_utils import infiniband as ib

TESTS = Path(__file__).resolve().parents[3]
DATA = gs.load_data(TESTS / "unit" / "data" / "server-frozen.yml")
CX4 = (TESTS / "fixtures" / "server" / "ibstat-connectx4-initializing.txt").read_text(encoding="utf-8")


def test_recorded_ibstat_read():
    cas = ib.parse_ibstat(CX4)
    assert [ca["ca"] for ca in cas] == ["mlx5_0"]
    assert cas[0]["firmware"] == "12.20.1010" and cas[0]["port_count"] == 1 and cas[0]["type"] is None
    assert cas[0]["ports"] == [{"port": 1, "state": "Initializing", "physical_state": "LinkUp", "rate_gbps": 100.0,
                                "link_layer": "InfiniBand", "lid": "65535", "sm_lid": "0"}]


def test_linkup_but_initializing_is_down_and_says_subnet_manager():
    result = ib.report(CX4, DATA)
    assert result["down"] == ["mlx5_0/1"] and not result["ok"]
    assert result["lines"][0].startswith("mlx5_0/1: Initializing, LinkUp, 100 Gb/s, InfiniBand -- NOT Active")
    assert "subnet manager" in result["lines"][0]


def _active(text):
    """The recorded CA as the same port reads once a subnet manager made it Active (only State differs)."""
    return text.replace("State: Initializing", "State: Active")


def test_active_port_is_up():
    result = ib.report(_active(CX4), DATA)
    assert result["ok"] and result["down"] == [] and result["ports"][0]["up"]
    assert result["lines"] == ["mlx5_0/1: Active, LinkUp, 100 Gb/s, InfiniBand"]


def test_two_cas_one_without_link():
    second = CX4.replace("mlx5_0", "mlx5_1").replace("State: Initializing", "State: Down") \
        .replace("Physical state: LinkUp", "Physical state: Polling")
    result = ib.report(_active(CX4) + second, DATA)
    assert [p["name"] for p in result["ports"]] == ["mlx5_0/1", "mlx5_1/1"]
    assert result["down"] == ["mlx5_1/1"] and "no link" in result["lines"][1]


def test_rate_with_its_words_and_no_output():
    assert ib.parse_ibstat(CX4.replace("Rate: 100", "Rate: 400 Gb/sec (4X NDR)"))[0]["ports"][0]["rate_gbps"] == 400.0
    assert ib.parse_ibstat("") == []
    assert ib.report("", DATA) == {"present": False, "ports": [], "down": [], "lines": [], "ok": False}


def test_rdma_devices_without_ibstat_say_what_to_install():
    result = ib.report(None, DATA, ["mlx5_1", "mlx5_0"])
    assert result["present"] and not result["ok"]
    assert result["lines"] == ["RDMA devices mlx5_0, mlx5_1, but ibstat is not installed: install %s to see their "
                               "link state" % DATA["infiniband"]["diags_package"]]
    assert ib.report(None, DATA, [])["present"] is False


@pytest.mark.parametrize("text", ["ibpanic: [2137592] main: stat of IB device 'mthca0' failed", "Port 1:\n"])
def test_not_ibstat_output_is_an_error(text):
    with pytest.raises(ib.InfinibandError):
        ib.parse_ibstat(text)
