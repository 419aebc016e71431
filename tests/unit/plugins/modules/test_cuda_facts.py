# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Runs dlbox.stack.cuda_facts against a fake root tree (no commands run when root is not /)."""

from __future__ import annotations

import json

import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.dlbox.stack.plugins.modules import cuda_facts


def run_module(capsys, args):
    with patch_module_args(args):
        with pytest.raises(SystemExit) as exc:
            cuda_facts.main()
    assert exc.value.code == 0
    result = json.loads(capsys.readouterr().out)
    assert result["changed"] is False
    return result


def toolkit(root, version, full=None, manifest=None):
    tree = root / "usr/local" / ("cuda-" + version)
    (tree / "bin").mkdir(parents=True)
    nvcc = tree / "bin/nvcc"
    nvcc.write_text("#!/bin/sh\n", encoding="utf-8")
    nvcc.chmod(0o755)
    if full:
        (tree / "version.json").write_text(json.dumps({"cuda": {"version": full}}), encoding="utf-8")
    if manifest:
        (tree / "dlbox-manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return tree


def test_two_toolkits_default_through_alternatives(tmp_path, capsys):
    toolkit(tmp_path, "12.6", "12.6.3")
    toolkit(tmp_path, "13.0", "13.0.2", manifest={"source": "pip_wheels", "layout": "dlbox.stack pip-wheel tree"})
    (tmp_path / "usr/local/cuda-13").symlink_to("cuda-13.0")
    alternatives = tmp_path / "etc/alternatives"
    alternatives.mkdir(parents=True)
    (alternatives / "cuda").symlink_to(tmp_path / "usr/local/cuda-12.6")
    (tmp_path / "usr/local/cuda").symlink_to(alternatives / "cuda")
    state = tmp_path / "var/lib/dlbox/cuda"
    state.mkdir(parents=True)
    (state / "12.6.json").write_text('{"source": "nvidia_repo"}', encoding="utf-8")

    result = run_module(capsys, {"root": str(tmp_path)})
    assert result["cuda_toolkits"] == [
        {"version": "13.0", "full_version": "13.0.2", "path": "/usr/local/cuda-13.0",
         "nvcc": "/usr/local/cuda-13.0/bin/nvcc", "source": "pip_wheels"},
        {"version": "12.6", "full_version": "12.6.3", "path": "/usr/local/cuda-12.6",
         "nvcc": "/usr/local/cuda-12.6/bin/nvcc", "source": "nvidia_repo"},
    ]
    assert result["cuda_default"] == {"version": "12.6", "path": "/usr/local/cuda-12.6"}
    assert result["cuda_distro_toolkit"] is None


def test_nothing_installed(tmp_path, capsys):
    result = run_module(capsys, {"root": str(tmp_path)})
    assert result["cuda_toolkits"] == [] and result["cuda_default"] is None
