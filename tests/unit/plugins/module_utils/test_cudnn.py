# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cuDNN decisions and readers (plugins/module_utils/_cudnn.py), on the frozen data's cudnn sections."""

from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.dlbox.stack.plugins.module_utils import _cudnn
from ansible_collections.dlbox.stack.plugins.plugin_utils.compat_data import load_compat

FROZEN = Path(__file__).resolve().parents[2] / "data" / "compat-frozen.yml"
DATA = load_compat(str(FROZEN))
RELEASES, NAMES = DATA["cudnn"], DATA["cudnn_names"]
# the release the frozen data lists for each rule, read from it (never typed here)
CUDA12_AND_13 = next(r for r in RELEASES if set(r["builds"]) == {"12", "13"} and r["builds"]["12"][0].endswith(".0"))
CUDA13_ONLY = next(r for r in RELEASES if set(r["builds"]) == {"13"})
CUDNN8 = next(r for r in RELEASES if r["version"].startswith("8."))


def toolkit(version):
    return {"version": version, "path": "/usr/local/cuda-%s" % version, "full_version": None, "nvcc": None, "source": "unknown"}


def select(version, toolkits, **kw):
    return _cudnn.select(RELEASES, NAMES, version, [toolkit(v) for v in toolkits], **kw)


def test_prefix_names_the_newest_release_it_starts():
    major_minor = ".".join(CUDA12_AND_13["version"].split(".")[:2])
    same = [r["version"] for r in RELEASES if r["version"].startswith(major_minor + ".")]
    assert _cudnn.release_for(RELEASES, major_minor)["version"] == max(same, key=lambda v: tuple(map(int, v.split("."))))
    assert _cudnn.release_for(RELEASES, "1.2") is None


def test_apt_names_for_cudnn9_carry_the_cuda_major():
    low = CUDA12_AND_13["builds"]["12"][0]
    out = select(CUDA12_AND_13["version"], [low])
    assert out["errors"] == []
    assert out["cuda_major"] == "12" and out["cuda_version"] == low
    assert out["apt"]["packages"] == ["libcudnn9-cuda-12", "libcudnn9-dev-cuda-12"]
    assert out["apt"]["install"][0] == "libcudnn9-cuda-12=%s-1" % CUDA12_AND_13["version"]
    assert out["header"] == "/usr/include/x86_64-linux-gnu/cudnn_version_v9.h"
    assert out["lib_dir"] == "/usr/lib/x86_64-linux-gnu"
    assert out["soname"] == "libcudnn.so.9" and out["expect"] == _cudnn.short_version(CUDA12_AND_13["version"])


def test_apt_names_for_cudnn8_carry_the_build_cuda_in_the_version():
    top = CUDNN8["builds"]["12"][1]
    out = select(CUDNN8["version"], [CUDNN8["builds"]["12"][0]])
    assert out["errors"] == []
    assert out["apt"]["packages"] == ["libcudnn8", "libcudnn8-dev"]
    assert out["apt"]["version"] == "%s-1+cuda%s" % (CUDNN8["version"], top)
    assert out["soname"] == "libcudnn.so.8" and out["header"].endswith("cudnn_version_v8.h")


def test_plan_major_wins_when_installed_else_newest_that_fits():
    v12, v13 = CUDA12_AND_13["builds"]["12"][0], CUDA12_AND_13["builds"]["13"][0]
    assert select(CUDA12_AND_13["version"], [v13, v12], plan_cuda=v12)["cuda_major"] == "12"
    assert select(CUDA12_AND_13["version"], [v13, v12])["cuda_major"] == "13"
    assert select(CUDA12_AND_13["version"], [v13, v12], cuda_major="12")["cuda_version"] == v12


def test_major_not_installed_is_refused_naming_the_variable():
    out = select(CUDA12_AND_13["version"], [CUDA12_AND_13["builds"]["12"][0]], cuda_major="13")
    assert len(out["errors"]) == 1 and "cudnn_cuda_major" in out["errors"][0] and "no CUDA 13 toolkit" in out["errors"][0]


def test_release_without_a_build_for_the_installed_cuda_is_refused():
    out = select(CUDA13_ONLY["version"], ["12.6"])
    assert "cudnn_version" in out["errors"][0] and "CUDA 13 only" in out["errors"][0]
    out = select(CUDA13_ONLY["version"], ["12.6"], version_from="the plan's stack.cudnn")
    assert "the plan's stack.cudnn" in out["errors"][0]


def test_minor_outside_the_build_range_is_refused():
    low = CUDNN8["builds"]["12"][1]
    beyond = "12.%d" % (int(low.split(".")[1]) + 1)
    out = select(CUDNN8["version"], [beyond])
    assert out["errors"] and "covers CUDA" in out["errors"][0]


@pytest.mark.parametrize("version, toolkits, word", [
    ("", ["12.6"], "cudnn_version"),
    ("9.x", ["12.6"], "cudnn_version"),
    ("1.2.3", ["12.6"], "not in data/compat.yml"),
    ("9", [], "none is installed"),
])
def test_bad_input_is_refused(version, toolkits, word):
    out = select(version, toolkits)
    assert out["errors"] and word in out["errors"][0]


def test_tarball_and_wheel_share_one_versioned_layout():
    v12 = CUDA12_AND_13["builds"]["12"][0]
    tar = select(CUDA12_AND_13["version"], [v12], method="tarball", arch="aarch64", install_root="/opt/cudnn")
    whl = select(CUDA12_AND_13["version"], [v12], method="wheel")
    prefix = "/opt/cudnn/%s-cuda12" % CUDA12_AND_13["version"]
    assert tar["prefix"] == whl["prefix"] == prefix
    assert tar["header"] == whl["header"] == prefix + "/include/cudnn_version.h"
    assert tar["lib_dir"] == whl["lib_dir"] == prefix + "/lib"
    assert tar["tarball"] == "cudnn-linux-sbsa-%s_cuda12-archive.tar.xz" % CUDA12_AND_13["version"]
    assert tar["tarball_url"].endswith("/linux-sbsa/")
    assert whl["wheel"]["requirement"] == "nvidia-cudnn-cu12==%s" % CUDA12_AND_13["version"]
    assert whl["wheel"]["file_prefix"] == "nvidia_cudnn_cu12-%s-" % CUDA12_AND_13["version"]


# The first lines of cudnn_version.h as the nvidia-cudnn-cu12 9.10.2.21 wheel ships it.
HEADER = """/*
 * Copyright 2014-2025 NVIDIA Corporation.  All rights reserved.
 */
#ifndef CUDNN_VERSION_H_
#define CUDNN_VERSION_H_

#define CUDNN_MAJOR 9
#define CUDNN_MINOR 10
#define CUDNN_PATCHLEVEL 2

#define CUDNN_VERSION (CUDNN_MAJOR * 10000 + CUDNN_MINOR * 100 + CUDNN_PATCHLEVEL)
"""


def test_header_version():
    assert _cudnn.parse_version_header(HEADER) == "9.10.2"
    assert _cudnn.parse_version_header("#define CUDNN_MAJOR 8\n#define CUDNN_MINOR 9\n") is None
    assert _cudnn.parse_version_header(None) is None


@pytest.mark.parametrize("number, version", [(91002, "9.10.2"), (92600, "9.26.0"), (8907, "8.9.7"), (8600, "8.6.0")])
def test_library_version_numbers(number, version):
    assert _cudnn.decode_cudnn_version(number) == version


def test_cudart_numbers():
    assert _cudnn.decode_cudart_version(12090) == "12.9" and _cudnn.decode_cudart_version(13000) == "13.0"


def test_library_file_version():
    assert _cudnn.library_file_version("/usr/lib/x86_64-linux-gnu/libcudnn.so.9.10.2") == "9.10.2"
    assert _cudnn.library_file_version("/opt/cudnn/9.10.2.21-cuda12/lib/libcudnn.so.9") is None


LDCONFIG = """4 libs found in cache `/etc/ld.so.cache'
\tlibcudnn_graph.so.9 (libc6,x86-64) => /opt/cudnn/9.10.2.21-cuda12/lib/libcudnn_graph.so.9
\tlibcudnn.so.9 (libc6,x86-64) => /opt/cudnn/9.10.2.21-cuda12/lib/libcudnn.so.9
\tlibcudnn.so.9 (libc6,x86-64) => /usr/local/cuda-12.6/lib64/libcudnn.so.9
\tlibcudnn.so (libc6,x86-64) => /opt/cudnn/9.10.2.21-cuda12/lib/libcudnn.so
"""


def test_ldconfig_paths_and_foreign_copies():
    paths = _cudnn.parse_ldconfig(LDCONFIG, "libcudnn.so.9")
    assert paths == ["/opt/cudnn/9.10.2.21-cuda12/lib/libcudnn.so.9", "/usr/local/cuda-12.6/lib64/libcudnn.so.9"]
    assert _cudnn.foreign_libraries(paths, "/opt/cudnn/9.17.0.29-cuda12/lib", "/opt/cudnn") == [paths[1]]
    assert _cudnn.foreign_libraries(paths[:1], "/usr/lib/x86_64-linux-gnu", "/opt/cudnn/") == []


WHEEL = ["nvidia/cudnn/include/cudnn.h", "nvidia/cudnn/include/cudnn_version.h", "nvidia/cudnn/lib/libcudnn.so.9",
         "nvidia/cudnn/lib/libcudnn_graph.so.9", "nvidia/__init__.py",
         "nvidia_cudnn_cu12-9.10.2.21.dist-info/licenses/License.txt", "nvidia_cudnn_cu12-9.10.2.21.dist-info/RECORD"]
TARBALL = ["cudnn-linux-x86_64-9.17.0.29_cuda12-archive/", "cudnn-linux-x86_64-9.17.0.29_cuda12-archive/LICENSE",
           "cudnn-linux-x86_64-9.17.0.29_cuda12-archive/include/cudnn_version.h",
           "cudnn-linux-x86_64-9.17.0.29_cuda12-archive/lib/libcudnn.so",
           "cudnn-linux-x86_64-9.17.0.29_cuda12-archive/lib/libcudnn.so.9",
           "cudnn-linux-x86_64-9.17.0.29_cuda12-archive/lib/libcudnn.so.9.17.0"]


def test_wheel_and_tarball_land_in_the_same_layout():
    wheel = _cudnn.archive_layout(WHEEL)
    assert wheel == {"nvidia/cudnn/include/cudnn.h": "include/cudnn.h",
                     "nvidia/cudnn/include/cudnn_version.h": "include/cudnn_version.h",
                     "nvidia/cudnn/lib/libcudnn.so.9": "lib/libcudnn.so.9",
                     "nvidia/cudnn/lib/libcudnn_graph.so.9": "lib/libcudnn_graph.so.9",
                     "nvidia_cudnn_cu12-9.10.2.21.dist-info/licenses/License.txt": "LICENSE"}
    tar = _cudnn.archive_layout(TARBALL)
    assert sorted(tar.values()) == ["LICENSE", "include/cudnn_version.h", "lib/libcudnn.so", "lib/libcudnn.so.9",
                                    "lib/libcudnn.so.9.17.0"]


def test_an_archive_without_cudnn_is_refused():
    with pytest.raises(ValueError, match="cudnn_version.h"):
        _cudnn.archive_layout(["nvidia/nccl/lib/libnccl.so.2"])


def test_dev_links_for_wheel_libraries():
    assert _cudnn.dev_links(["libcudnn.so.9", "libcudnn_ops.so.9", "libcudnn_graph.so", "libcudnn_graph.so.9"]) == {
        "libcudnn.so": "libcudnn.so.9", "libcudnn_ops.so": "libcudnn_ops.so.9"}


SELECTION = {"expect": "9.10.2", "soname": "libcudnn.so.9", "cuda_major": "12", "lib_dir": "/opt/cudnn/9.10.2.21-cuda12/lib"}
GOOD = {"header": "/opt/cudnn/9.10.2.21-cuda12/include/cudnn_version.h", "header_version": "9.10.2",
        "library": "/opt/cudnn/9.10.2.21-cuda12/lib/libcudnn.so.9", "library_version": "9.10.2",
        "library_file_version": None, "cudart_version": "12.9", "load_error": None}


def test_a_right_install_has_no_problems():
    assert _cudnn.check_install(GOOD, SELECTION) == []


@pytest.mark.parametrize("change, words", [
    ({"header_version": None}, "no version header"),
    ({"header_version": "9.10.1"}, "the header"),
    ({"library_version": None, "load_error": "cannot open"}, "could not be loaded: cannot open"),
    ({"library_version": "9.17.0"}, "reports cuDNN 9.17.0"),
    ({"library_file_version": "9.1.0"}, "library file"),
    ({"cudart_version": "13.0"}, "built for CUDA 13.0"),
    ({"library": "/usr/local/cuda/lib64/libcudnn.so.9.10.2"}, "another cuDNN shadows it"),
])
def test_each_wrong_reading_is_named(change, words):
    problems = _cudnn.check_install(dict(GOOD, **change), SELECTION)
    assert len(problems) == 1 and words in problems[0]
