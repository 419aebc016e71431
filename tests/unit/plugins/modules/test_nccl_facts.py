# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Runs dlbox.stack.nccl_facts on captured hosts (read_host: false, so no command runs). The module gathers only;
the decision from what it gathers is tests/unit/plugins/plugin_utils/test_role_decide_nccl.py's."""

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


def test_topology_from_captures(capsys):
    topo = (FIX / "nccl/topo-2x-rtx5880ada-node.txt").read_text()
    result = run_module(capsys, {"topology": True, "read_host": False, "captures": {
        "topo": topo, "lspci": (FIX / "nccl/lspci-vvv-acsctl-on.txt").read_text()}})
    assert result["inputs"]["topo"] == topo and result["inputs"]["ibdev"] is None
    assert result["sources"] == {"topo": "capture", "lspci": "capture", "p2p_matrix": "missing", "gpus": "missing",
                                 "ip_link": "missing", "ibdev": "missing", "probe": "missing"}


def test_it_decides_nothing(capsys):
    result = run_module(capsys, {"topology": True, "read_host": False, "captures": {"topo": ""}})
    assert set(result) - {"invocation"} == {"changed", "inputs", "sources"}


def test_header_and_conf(capsys, tmp_path):
    header = tmp_path / "nccl.h"
    header.write_text("#define NCCL_MAJOR 2\n#define NCCL_MINOR 27\n#define NCCL_PATCH 7\n")
    conf = tmp_path / "nccl.conf"
    conf.write_text("NCCL_IB_TIMEOUT=22\n")
    result = run_module(capsys, {"header": str(header), "conf_path": str(conf)})
    assert result["header_version"] == "2.27.7" and result["conf"] == "NCCL_IB_TIMEOUT=22\n"
    result = run_module(capsys, {"header": str(tmp_path / "none.h"), "conf_path": str(tmp_path / "none.conf")})
    assert result["header_version"] is None and result["conf"] is None
