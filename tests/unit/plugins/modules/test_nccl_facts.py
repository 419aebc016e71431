# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Runs dlbox.stack.nccl_facts on captured hosts (read_host: false, so no command runs)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.dlbox.stack.plugins.modules import nccl_facts

FIX = Path(__file__).resolve().parents[3] / "fixtures"


def run_module(capsys, args):
    with patch_module_args(args):
        with pytest.raises(SystemExit) as exc:
            nccl_facts.main()
    result = json.loads(capsys.readouterr().out)
    assert exc.value.code == 0, result
    assert result["changed"] is False
    return result


def test_conf_from_captures(capsys):
    result = run_module(capsys, {"conf": True, "read_host": False, "captures": {
        "topo": (FIX / "nccl/topo-2x-rtx5880ada-node.txt").read_text(),
        "lspci": (FIX / "nccl/lspci-vvv-acsctl-on.txt").read_text()}})
    assert result["gpu_count"] == 2 and result["p2p"]["verdict"] == "broken"
    assert result["conf_text"].endswith("NCCL_P2P_DISABLE=1\n")
    assert result["inputs"] == {"topo": "capture", "lspci": "capture", "p2p_matrix": "missing", "gpus": "missing",
                                "ip_link": "missing", "ibdev": "missing", "probe": "missing"}


def test_options_pass_through(capsys):
    result = run_module(capsys, {"conf": True, "read_host": False, "captures": {"topo": ""},
                                 "options": {"debug": "INFO", "socket_ifname": "eth0"}})
    assert [(s["key"], s["value"]) for s in result["settings"]] == [("NCCL_DEBUG", "INFO"), ("NCCL_SOCKET_IFNAME", "eth0")]


def test_check_refuses(capsys):
    result = run_module(capsys, {"check": {"nccl_version": "2.27.5", "cuda_version": "13.0",
                                           "known": [{"version": "2.27.5", "cuda_majors": ["12"], "source": "s"}],
                                           "minor_compat": [], "variable": "nccl_version"}})
    assert len(result["refusals"]) == 1 and result["refusals"][0].startswith("nccl_version=2.27.5 has no build for CUDA 13.x")
