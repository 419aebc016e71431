# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""imex_ctl on recorded ``nvidia-imex-ctl`` outputs (tests/fixtures/imex, sources in its SOURCES.md). One file there is
an EDITED real capture (named EDITED-*: a node UNAVAILABLE in a DEGRADED domain, no verbatim public capture of one was
found); the tests say so where they use it."""

from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.dlbox.stack.plugins.filter import fabric as fabric_filter
from ansible_collections.dlbox.stack.plugins.plugin_utils import imex_ctl as ic

IMEX = Path(__file__).resolve().parents[3] / "fixtures" / "imex"
AWS_18 = "imex-ctl-N-18-nodes-up-aws-parallelcluster.txt"
GH200_1 = "imex-ctl-q-N-s-1-node-gh200-dra-repro.txt"
GH200_2 = "imex-ctl-q-N-s-2-nodes-gh200-dra-repro.txt"
DEGRADED = "EDITED-imex-ctl-q-N-s-2-nodes-one-unavailable.txt"


def _read(name):
    return (IMEX / name).read_text(encoding="utf-8")


def test_eighteen_gb200_trays_up_with_their_versions():
    """Real: nvidia-imex-ctl -N on 18 GB200 trays (AWS), every node READY at 570.172, all connected, domain UP."""
    domain = ic.parse_domain(_read(AWS_18))
    assert domain["state"] == "UP"
    assert [n["index"] for n in domain["nodes"]] == list(range(18))
    assert domain["nodes"][10] == {"index": 10, "address": "172.31.54.95", "status": "READY", "version": "570.172"}
    assert len(domain["links"]) == 18 * 18 and {link["code"] for link in domain["links"]} == {"C"}
    assert {"from": 17, "to": 0, "code": "C"} in domain["links"]


def test_the_older_format_without_versions_and_the_daemon_word():
    """Real: IMEX 570.00 under NVIDIA's DRA driver (GH200): -q printed READY, -N no Version column."""
    text = _read(GH200_2)
    assert ic.parse_query(text) == "READY"
    domain = ic.parse_domain(text)
    assert domain["state"] == "UP"
    assert domain["nodes"] == [{"index": 0, "address": "10.136.206.47", "status": "READY", "version": None},
                               {"index": 1, "address": "10.136.206.48", "status": "READY", "version": None}]
    assert [(link["from"], link["to"], link["code"]) for link in domain["links"]] == [
        (0, 0, "C"), (0, 1, "C"), (1, 0, "C"), (1, 1, "C")]


@pytest.mark.parametrize("name", [GH200_1, GH200_2])
def test_ready_daemon_in_an_up_domain_is_ready(name):
    out = ic.verdict(_read(name), _read(name), "active")
    assert out["ready"] and out["judged"] and not out["waiting"] and not out["failed"]
    assert out["warnings"] == [] and "domain UP" in out["reason"]


def test_a_degraded_domain_is_a_warning_naming_the_node_not_a_failure():
    """EDITED fixture (the two-node capture with node #1 UNAVAILABLE, its links Never Connected, the domain DEGRADED:
    the words of NVIDIA/DCGM's dcgm_fields.h and the legend): this tray is READY, the warning names the other one."""
    text = _read(DEGRADED)
    out = ic.verdict(text, text, "active")
    assert out["ready"] and not out["failed"]
    assert out["warnings"] == ["IMEX domain DEGRADED: node(s) not READY: #1 10.136.206.48 UNAVAILABLE; "
                               "Never Connected 0->1, 1->0, 1->1 (N)."]


def test_without_a_daemon_state_nothing_is_judged_ready():
    """-N alone (the AWS capture has no -q): the domain is read, but readiness is not claimed."""
    out = ic.verdict("", _read(AWS_18), "active")
    assert not out["judged"] and not out["ready"] and not out["failed"] and not out["waiting"]
    assert "command service" in out["reason"] and out["domain"]["state"] == "UP"
    assert not ic.verdict("nvidia-imex-ctl: connection refused", "", "active")["judged"]


@pytest.mark.parametrize(("word", "key"), [("INITIALIZING", "waiting"), ("WAITING_FOR_PEERS", "waiting"),
                                           ("WAITING_FOR_RECOVERY", "waiting"), ("INIT_GPU", "waiting"),
                                           ("SHUTTING_DOWN", "failed"), ("UNAVAILABLE", "failed"), ("READY", "ready")])
def test_each_daemon_state(word, key):
    out = ic.verdict(word + "\n", "", "active")
    assert out[key] and word in out["reason"]
    assert sum(out[k] for k in ("ready", "waiting", "failed")) == 1


@pytest.mark.parametrize(("word", "key"), [("failed", "failed"), ("activating", "waiting"), ("inactive", "waiting")])
def test_the_service_comes_first(word, key):
    out = ic.verdict("READY\n", _read(GH200_2), word)
    assert out[key] and not out["ready"] and "nvidia-imex.service" in out["reason"]


@pytest.mark.parametrize(("code", "words"), [("!M!", "nodes_config.cfg"), ("!V!", "same driver version")])
def test_a_version_or_node_map_mismatch_fails(code, words):
    """The legend's codes on the real two-node capture: communication is disabled, waiting does not help."""
    text = _read(GH200_2).replace("       1        C  C", "       1        %s  C" % code)
    out = ic.verdict(text, text, "active")
    assert out["failed"] and not out["ready"] and code in out["reason"] and words in out["reason"]


def test_a_node_on_another_version_than_the_driver_is_named():
    out = ic.verdict("READY\n", _read(AWS_18), "active", driver_version="580.95.05")
    assert out["ready"] and out["warnings"][-1].endswith("reports version 570.172, the driver here is 580.95.05.")
    assert ic.verdict("READY\n", _read(AWS_18), "active", driver_version="570.172.08")["warnings"] == []


def test_the_filter_passes_its_arguments():
    out = fabric_filter.imex_state(_read(GH200_1), _read(GH200_1), "active", None)
    assert out["ready"] and out["domain"]["nodes"][0]["address"] == "10.136.206.48"
    assert "imex_state" in fabric_filter.FilterModule().filters()
