# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers behind dlbox.stack.cuda_facts (plugins/module_utils/_cuda_toolkits.py)."""

from __future__ import annotations

import json

import pytest

from ansible_collections.dlbox.stack.plugins.module_utils import _cuda_toolkits as ct

# nvcc 13.5's --version as the nvidia-cuda-nvcc 13.5.37 wheel prints it (build date lines trimmed).
NVCC_13 = (
    "nvcc: NVIDIA (R) Cuda compiler driver\n"
    "Copyright (c) 2005-2026 NVIDIA Corporation\n"
    "Cuda compilation tools, release 13.5, V13.5.37\n"
    "Build cuda_13.5.r13.5/compiler.36000000_0\n"
)
# Debian 12's nvidia-cuda-toolkit 11.8.89
NVCC_DEBIAN = (
    "nvcc: NVIDIA (R) Cuda compiler driver\n"
    "Copyright (c) 2005-2022 NVIDIA Corporation\n"
    "Built on Wed_Sep_21_10:33:58_PDT_2022\n"
    "Cuda compilation tools, release 11.8, V11.8.89\n"
    "Build cuda_11.8.r11.8/compiler.31833905_0\n"
)
VERSION_JSON = json.dumps({"cuda": {"name": "CUDA SDK", "version": "13.0.2"}, "cuda_nvcc": {"version": "13.0.88"}})


@pytest.mark.parametrize(("name", "expected"), [
    ("cuda-13.0", "13.0"), ("cuda-12.10", "12.10"), ("cuda", None), ("cuda-13", None),
    ("cuda-13.0.bak", None), ("cudnn-9.1", None), (None, None),
])
def test_toolkit_dir_version(name, expected):
    assert ct.toolkit_dir_version(name) == expected


@pytest.mark.parametrize(("text", "expected"), [
    (VERSION_JSON, "13.0.2"), ("", None), (None, None), ("{", None), ("[]", None),
    ('{"cuda": {"version": "abc"}}', None), ('{"cuda_nvcc": {"version": "13.0.88"}}', None),
])
def test_parse_version_json(text, expected):
    assert ct.parse_version_json(text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    (NVCC_13, {"release": "13.5", "version": "13.5.37"}),
    (NVCC_DEBIAN, {"release": "11.8", "version": "11.8.89"}),
    ("bash: nvcc: command not found", None), (None, None),
])
def test_parse_nvcc_version(text, expected):
    assert ct.parse_nvcc_version(text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("cuda-nvcc-13-0: /usr/local/cuda-13.0/bin/nvcc\n", "nvidia_repo"),
    ("cuda-toolkit-13-0-config-common, cuda-cudart-13-0: /usr/local/cuda-13.0/version.json", "nvidia_repo"),
    ("nvidia-cuda-toolkit: /usr/bin/nvcc", "distro"),
    ("someone-else: /usr/local/cuda-13.0/bin/nvcc", "unknown"),
    ("dpkg-query: no path found matching pattern /usr/local/cuda-13.0/bin/nvcc", None),
    (None, None),
])
def test_source_of_dpkg_owner(text, expected):
    assert ct.source_of_dpkg_owner(text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ('{"source": "pip_wheels", "layout": "dlbox"}', {"source": "pip_wheels", "layout": "dlbox"}),
    ('{"source": "magic"}', None), ("x", None), (None, None),
])
def test_parse_manifest(text, expected):
    assert ct.parse_manifest(text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("install ok installed 11.8.89~11.8.0-5~deb12u1", "11.8.89~11.8.0-5~deb12u1"),
    ("deinstall ok config-files 11.8.89~11.8.0-5~deb12u1", None),
    ("unknown ok not-installed ", None), ("", None),
])
def test_parse_dpkg_status(text, expected):
    assert ct.parse_dpkg_status(text) == expected


@pytest.mark.parametrize(("version", "expected"), [
    ("11.8.89~11.8.0-5~deb12u1", "11.8"), ("12.0.140~12.0.1-4build4", "12.0"), ("", None)])
def test_distro_release(version, expected):
    assert ct.distro_release(version) == expected


def test_version_key_orders_two_digit_minors():
    assert sorted(["12.9", "12.10", "11.8", "13.0"], key=ct.version_key) == ["11.8", "12.9", "12.10", "13.0"]


def tree(version, **extra):
    data = {"path": "/usr/local/cuda-%s" % version, "dirname": "cuda-%s" % version, "nvcc": None}
    data.update(extra)
    return data


def test_build_facts_newest_first_with_sources_and_default():
    facts = ct.build_facts(
        [
            tree("12.6", version_json=None, nvcc="/usr/local/cuda-12.6/bin/nvcc", nvcc_output=NVCC_DEBIAN.replace("11.8", "12.6"),
                 owner="cuda-nvcc-12-6: /usr/local/cuda-12.6/bin/nvcc"),
            tree("13.0", version_json=VERSION_JSON, manifest='{"source": "local_repo"}',
                 owner="cuda-nvcc-13-0: /usr/local/cuda-13.0/bin/nvcc"),
            tree("13.5", manifest='{"source": "pip_wheels"}', nvcc_output=NVCC_13, nvcc="/usr/local/cuda-13.5/bin/nvcc"),
            {"path": "/usr/local/cuda-13", "dirname": "cuda-13"},
        ],
        "/usr/local/cuda-13.0",
        None,
    )
    assert [(t["version"], t["full_version"], t["source"]) for t in facts["cuda_toolkits"]] == [
        ("13.5", "13.5.37", "pip_wheels"), ("13.0", "13.0.2", "local_repo"), ("12.6", "12.6.89", "nvidia_repo")]
    assert facts["cuda_default"] == {"version": "13.0", "path": "/usr/local/cuda-13.0"}
    assert facts["cuda_distro_toolkit"] is None


def test_build_facts_unknown_tree_and_no_default():
    facts = ct.build_facts([tree("12.4")], "/opt/elsewhere", None)
    assert facts["cuda_toolkits"] == [
        {"version": "12.4", "full_version": None, "path": "/usr/local/cuda-12.4", "nvcc": None, "source": "unknown"}]
    assert facts["cuda_default"] is None


def test_build_facts_distro_toolkit():
    facts = ct.build_facts([], None, {"dpkg_status": "install ok installed 11.8.89~11.8.0-5~deb12u1",
                                      "nvcc": "/usr/bin/nvcc", "nvcc_output": NVCC_DEBIAN})
    assert facts["cuda_distro_toolkit"] == {"version": "11.8", "nvcc": "/usr/bin/nvcc",
                                            "package_version": "11.8.89~11.8.0-5~deb12u1"}
    removed = ct.build_facts([], None, {"dpkg_status": "deinstall ok config-files 11.8.89-5", "nvcc": None})
    assert removed["cuda_distro_toolkit"] is None


@pytest.mark.parametrize(("text", "expected"), [("12.2.0\n", 12), ("17", 17), ("gcc: not found", None), (None, None)])
def test_parse_gcc_major(text, expected):
    assert ct.parse_gcc_major(text) == expected


def test_build_facts_host_compilers_keep_order_and_drop_silent_ones():
    facts = ct.build_facts([], None, None, [("/usr/bin/g++", "12.2.0\n"), ("/usr/bin/g++-11", "11.4.0"),
                                            ("/opt/broken/g++", None), ("/usr/bin/g++", "12.2.0")])
    assert facts["host_compilers"] == [{"path": "/usr/bin/g++", "major": 12}, {"path": "/usr/bin/g++-11", "major": 11}]
