# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""dlbox.stack.cudnn_unpack and dlbox.stack.cudnn_facts on a small tarball and wheel holding the fixture
libcudnn (tests/aptrepo/fixture-src/libcudnn.c, a real ELF that answers the two version calls)."""

from __future__ import annotations

import base64
import io
import json
import os
import tarfile
import zipfile
from pathlib import Path

import pytest
import yaml

from ansible.module_utils.testing import patch_module_args

from ansible_collections.dlbox.stack.plugins.modules import cudnn_facts, cudnn_unpack

SPEC = Path(__file__).resolve().parents[3] / "aptrepo" / "specs" / "_cuda-cudnn.yml"
# cuDNN 9.17.0 built for CUDA 12.9 (the fixture repository's libcudnn9-cuda-12 9.17.0.29)
LIB = base64.b64decode(next(f["content_base64"] for p in yaml.safe_load(SPEC.read_text())["packages"]
                            for f in p.get("files", []) if "content_base64" in f))
HEADER = b"#define CUDNN_MAJOR 9\n#define CUDNN_MINOR 17\n#define CUDNN_PATCHLEVEL 0\n"


def run(module, capsys, args, code=0):
    with patch_module_args(args):
        with pytest.raises(SystemExit) as exc:
            module.main()
    assert exc.value.code == code
    return json.loads(capsys.readouterr().out)


def add(archive, name, data=None, link=None):
    info = tarfile.TarInfo(name)
    if link:
        info.type, info.linkname = tarfile.SYMTYPE, link
        archive.addfile(info)
    else:
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))


def make_tarball(path, top="cudnn-linux-x86_64-9.17.0.29_cuda12-archive"):
    with tarfile.open(path, "w:xz") as archive:
        add(archive, top + "/LICENSE", b"FIXTURE licence\n")
        add(archive, top + "/include/cudnn_version.h", HEADER)
        add(archive, top + "/lib/libcudnn.so.9.17.0", LIB)
        add(archive, top + "/lib/libcudnn.so.9", link="libcudnn.so.9.17.0")
        add(archive, top + "/lib/libcudnn.so", link="libcudnn.so.9")
    return path


def make_wheel(path):
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("nvidia/cudnn/include/cudnn_version.h", HEADER)
        archive.writestr("nvidia/cudnn/lib/libcudnn.so.9", LIB)
        archive.writestr("nvidia_cudnn_cu12-9.17.0.29.dist-info/licenses/License.txt", "FIXTURE licence\n")
        archive.writestr("nvidia_cudnn_cu12-9.17.0.29.dist-info/RECORD", "")
    return path


def test_tarball_lands_in_its_versioned_directory_once(tmp_path, capsys):
    src = make_tarball(tmp_path / "cudnn.tar.xz")
    dest = tmp_path / "opt/cudnn/9.17.0.29-cuda12"
    result = run(cudnn_unpack, capsys, {"src": str(src), "dest": str(dest), "version": "9.17.0.29"})
    assert result["changed"] is True and result["manifest"]["kind"] == "tarball"
    assert sorted(os.listdir(dest)) == ["LICENSE", "dlbox-manifest.json", "include", "lib"]
    assert os.readlink(dest / "lib/libcudnn.so.9") == "libcudnn.so.9.17.0"
    assert (dest / "lib/libcudnn.so.9.17.0").read_bytes() == LIB
    assert not (tmp_path / "opt/cudnn/9.17.0.29-cuda12.partial").exists()
    again = run(cudnn_unpack, capsys, {"src": str(src), "dest": str(dest), "version": "9.17.0.29"})
    assert again["changed"] is False and again["manifest"]["sha256"] == result["manifest"]["sha256"]


def test_wheel_lands_in_the_same_layout_with_a_dev_link(tmp_path, capsys):
    src = make_wheel(tmp_path / "nvidia_cudnn_cu12-9.17.0.29-py3-none-manylinux_2_27_x86_64.whl")
    dest = tmp_path / "9.17.0.29-cuda12"
    result = run(cudnn_unpack, capsys, {"src": str(src), "dest": str(dest), "version": "9.17.0.29"})
    assert result["manifest"]["kind"] == "wheel" and result["manifest"]["source"] == src.name
    assert sorted(os.listdir(dest / "lib")) == ["libcudnn.so", "libcudnn.so.9"]
    assert (dest / "include/cudnn_version.h").read_bytes() == HEADER and (dest / "LICENSE").is_file()


def test_check_mode_writes_nothing(tmp_path, capsys):
    src = make_tarball(tmp_path / "cudnn.tar.xz")
    dest = tmp_path / "9.17.0.29-cuda12"
    result = run(cudnn_unpack, capsys, {"src": str(src), "dest": str(dest), "version": "9.17.0.29", "_ansible_check_mode": True})
    assert result["changed"] is True and not dest.exists()


def test_a_foreign_directory_is_not_overwritten(tmp_path, capsys):
    src = make_tarball(tmp_path / "cudnn.tar.xz")
    dest = tmp_path / "9.17.0.29-cuda12"
    dest.mkdir()
    (dest / "mine").write_text("user data")
    result = run(cudnn_unpack, capsys, {"src": str(src), "dest": str(dest), "version": "9.17.0.29"}, code=1)
    assert "without dlbox-manifest.json" in result["msg"] and (dest / "mine").read_text() == "user data"


def test_an_archive_without_cudnn_leaves_nothing(tmp_path, capsys):
    src = tmp_path / "other.tar.xz"
    with tarfile.open(src, "w:xz") as archive:
        add(archive, "x/lib/libnccl.so.2", b"x")
    dest = tmp_path / "9.17.0.29-cuda12"
    result = run(cudnn_unpack, capsys, {"src": str(src), "dest": str(dest), "version": "9.17.0.29"}, code=1)
    assert "nothing was installed" in result["msg"]
    assert not dest.exists() and not Path(str(dest) + ".partial").exists()


def test_facts_read_the_header_and_load_the_library(tmp_path, capsys, monkeypatch):
    dest = tmp_path / "9.17.0.29-cuda12"
    run(cudnn_unpack, capsys, {"src": str(make_tarball(tmp_path / "c.tar.xz")), "dest": str(dest), "version": "9.17.0.29"})
    monkeypatch.setenv("LD_LIBRARY_PATH", str(dest / "lib"))
    result = run(cudnn_facts, capsys, {"header": str(dest / "include/cudnn_version.h"), "soname": "libcudnn.so.9"})
    facts = result["cudnn"]
    assert result["changed"] is False
    assert facts["header_version"] == "9.17.0" and facts["library_version"] == "9.17.0"
    assert facts["cudart_version"] == "12.9" and facts["library_file_version"] == "9.17.0"
    assert facts["library"] == str(dest / "lib/libcudnn.so.9.17.0") and facts["load_error"] is None


def test_facts_report_a_library_that_does_not_load(tmp_path, capsys):
    result = run(cudnn_facts, capsys, {"header": str(tmp_path / "none.h"), "soname": "libcudnn.so.99"})
    facts = result["cudnn"]
    assert facts["header_version"] is None and facts["library_version"] is None
    assert "libcudnn.so.99" in facts["load_error"] and facts["linker_paths"] == []


def test_facts_refuse_a_path_as_soname(capsys):
    result = run(cudnn_facts, capsys, {"header": "/x.h", "soname": "/tmp/libcudnn.so.9"}, code=1)
    assert "soname" in result["msg"]
