# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cudnn role's filters, on the frozen data."""

from __future__ import annotations

from pathlib import Path

import pytest

from ansible.errors import AnsibleFilterError

import retired_filters as cudnn  # pylint: disable=import-error

FROZEN = str(Path(__file__).resolve().parents[2] / "data" / "compat-frozen.yml")
TOOLKITS = [{"version": "12.6", "path": "/usr/local/cuda-12.6"}]


def test_selection_reads_the_data_file():
    out = cudnn.cudnn_selection(TOOLKITS, "9.10", method="wheel", data_path=FROZEN)
    assert out["errors"] == [] and out["version"].startswith("9.10.")
    assert out["wheel"]["project"] == "nvidia-cudnn-cu12"


def test_selection_without_names_in_the_data_is_an_error(tmp_path):
    text = Path(FROZEN).read_text(encoding="utf-8")
    start = text.index("cudnn_names:")
    end = text.index("\nnccl:", start)
    path = tmp_path / "compat.yml"
    path.write_text(text[:start] + text[end + 1:], encoding="utf-8")
    with pytest.raises(AnsibleFilterError, match="cudnn_names"):
        cudnn.cudnn_selection(TOOLKITS, "9.10", data_path=str(path))


def test_preflight_names_a_copy_in_the_cuda_toolkit():
    selection = cudnn.cudnn_selection(TOOLKITS, "9.10", method="tarball", data_path=FROZEN)
    facts = {"linker_paths": ["/usr/local/cuda-12.6/lib64/libcudnn.so.9", selection["lib_dir"] + "/libcudnn.so.9"]}
    assert cudnn.cudnn_problems(facts, selection, "preflight") == [
        "the linker already has libcudnn.so.9 at /usr/local/cuda-12.6/lib64/libcudnn.so.9"]


def test_unknown_stage_is_an_error():
    with pytest.raises(AnsibleFilterError):
        cudnn.cudnn_problems({}, {}, "later")
