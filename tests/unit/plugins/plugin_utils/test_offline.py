# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Offline mode's decision (plugins/plugin_utils/offline.py): every missing artifact, before any change."""

from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.dlbox.stack.plugins.filter.offline import offline_check, offline_needs
from ansible_collections.dlbox.stack.plugins.plugin_utils import offline, roles

# In the form dpkg-scanpackages writes (fields trimmed to those the decision reads).
INDEX = """Package: build-essential
Version: 12.9
Architecture: amd64
Depends: libc6-dev | libc-dev, gcc (>= 4:12.2), make, dpkg-dev (>= 1.17.11)
Filename: ./build-essential_12.9_amd64.deb
Size: 7704

Package: make
Version: 4.3-4.1
Architecture: amd64
Depends: libc6 (>= 2.34)
Filename: ./make_4.3-4.1_amd64.deb
Size: 396000

Package: gcc
Version: 4:12.2.0-3
Architecture: amd64
Depends: cpp (= 4:12.2.0-3), gcc-12 (>= 12.2.0-1~)
Filename: ./gcc_12.2.0-3_amd64.deb

Package: cpp
Version: 4:12.2.0-3
Architecture: amd64
Pre-Depends: dpkg (>= 1.17)
Filename: ./cpp_12.2.0-3_amd64.deb

Package: libc6-dev
Version: 2.36-9+deb12u13
Architecture: amd64
Depends: libc6 (= 2.36-9+deb12u13), libc-dev-bin (= 2.36-9+deb12u13), linux-libc-dev
Provides: libc-dev
Filename: ./libc6-dev_2.36-9+deb12u13_amd64.deb

Package: dpkg-dev
Version: 1.21.22
Architecture: all
Depends: perl:any, libdpkg-perl (= 1.21.22), bzip2, xz-utils | awk
Filename: ./dpkg-dev_1.21.22_all.deb
"""
FILES = ["apt/Packages", "apt/build-essential_12.9_amd64.deb", "apt/make_4.3-4.1_amd64.deb",
         "apt/gcc_12.2.0-3_amd64.deb", "apt/cpp_12.2.0-3_amd64.deb", "apt/libc6-dev_2.36-9+deb12u13_amd64.deb",
         "apt/dpkg-dev_1.21.22_all.deb"]
# What a Debian 12 image has of it (dpkg-query -W -f '${Package}\t${Status}\t${Version}\t${Provides}\n').
INSTALLED = "\n".join([
    "libc6\tinstall ok installed\t2.36-9+deb12u13\t", "dpkg\tinstall ok installed\t1.21.22\t",
    "perl\tinstall ok installed\t5.36.0-7+deb12u3\t", "bzip2\tinstall ok installed\t1.0.8-5+b1\t",
    "mawk\tinstall ok installed\t1.3.4.20200120-3.1\tawk", "curl\tdeinstall ok config-files\t7.88.1-10\t",
    "gcc-12\tinstall ok installed\t12.2.0-14\t", "libc-dev-bin\tinstall ok installed\t2.36-9+deb12u13\t",
    "linux-libc-dev\tinstall ok installed\t6.1.158-1\t", "libdpkg-perl\tinstall ok installed\t1.21.22\t",
])
CPU = {"run": {"common": True, "nvidia_driver": False, "cuda": False, "python_env": False}, "kernel_headers": False}
MANIFEST = {"release": "debian bookworm"}


def mirror(files=None, index=INDEX, manifest=None):
    return {"dir": "/srv/mirror", "index": index, "files": list(FILES if files is None else files),
            "manifest": MANIFEST if manifest is None else manifest}


def run(need=None, **kw):
    return offline.check(need or offline.needs(CPU, ["build-essential"]), mirror(**kw), INSTALLED, "debian bookworm")


def test_parse_relations_drops_versions_arch_and_keeps_alternatives():
    assert offline.parse_relations("a (>= 1) | b, c:any [amd64], d <!nocheck>") == [["a", "b"], ["c"], ["d"]]
    assert offline.parse_relations("a (>= 1) | b", versions=True) == [[("a", ">=", "1"), ("b", None, None)]]


def test_a_complete_folder_installs_only_what_the_host_lacks_with_its_index():
    result = run()
    assert result["ok"], result["text"]
    assert result["missing"] == []
    assert result["apt_install"] == ["build-essential", "libc6-dev", "gcc", "make", "dpkg-dev", "cpp"]
    assert "apt/make_4.3-4.1_amd64.deb" in result["apt_files"]
    reparsed = offline.parse_packages(result["packages_text"])
    assert sorted(reparsed) == sorted(result["apt_install"])     # the host's index lists just what is carried


def test_every_missing_artifact_is_listed_at_once():
    need = offline.needs({"run": dict(CPU["run"], cuda=True, python_env=True), "kernel_headers": True},
                         ["build-essential", "jq"], {"no_index": False, "find_links": [],
                                                     "host_wheels": "/var/lib/dlbox/offline/wheels"})
    files = [f for f in FILES if not f.startswith("apt/make_")]
    index = INDEX.replace("Package: cpp\nVersion: 4:12.2.0-3\n", "Package: cpp\nVersion: 4:12.2.0-3\n"
                          "Depends: libisl23\n")
    result = offline.check(need, mirror(files=files, index=index), INSTALLED, "debian bookworm")
    assert not result["ok"]
    got = {(m["kind"], m["name"]) for m in result["missing"]}
    assert got == {("apt", "jq"), ("apt", "libisl23"), ("apt", "make"), ("role", "cuda"), ("role", "kernel headers"),
                   ("wheels", "wheels/"), ("wheels", "python_env_no_index"), ("wheels", "python_env_find_links")}
    why = {m["name"]: m["why"] for m in result["missing"]}
    assert "a dependency of cpp" in why["libisl23"]
    assert "listed in the index but absent" in why["make"]
    assert "dlbox_install_cuda: false" in why["cuda"]
    assert result["text"][0].startswith("Offline mode (dlbox_offline): 8 artifact(s) missing from /srv/mirror")
    assert len(result["text"]) == 9


def test_an_alternative_or_virtual_package_on_the_host_satisfies_a_dependency():
    # dpkg-dev's "xz-utils | awk": mawk provides awk; build-essential's "libc6-dev | libc-dev" via Provides
    index = INDEX.replace("Package: libc6-dev\n", "Package: libc6-dev-alt\n")
    result = offline.check(offline.needs(CPU, ["build-essential"]), mirror(index=index), INSTALLED, "")
    assert "libc6-dev-alt" in result["apt_install"]
    assert not [m for m in result["missing"] if "awk" in m["name"]]


def test_a_folder_of_another_release_or_without_manifest_is_refused():
    result = offline.check(offline.needs(CPU, ["make"]), mirror(manifest={"release": "ubuntu jammy"}),
                           INSTALLED, "debian bookworm")
    assert [m["name"] for m in result["missing"]] == ["manifest.json"]
    assert "made for ubuntu jammy, this host is debian bookworm" in result["missing"][0]["why"]
    result = offline.check(offline.needs(CPU, ["make"]), mirror(index="", files=[], manifest={}), "", "")
    assert {m["name"] for m in result["missing"]} == {"manifest.json", "apt/Packages", "make"}


def test_nothing_needed_nothing_missing():
    result = offline.check(offline.needs(CPU, ["libc6"]), mirror(), INSTALLED, "debian bookworm")
    assert result["ok"] and result["apt_files"] == [] and result["packages_text"] == ""


@pytest.mark.parametrize("workstation, packages, words", [
    ({}, ["make"], "dlbox_workstation"),
    (CPU, "make", "common_packages"),
    (CPU, ["make; rm -rf /"], "not a Debian package name"),
])
def test_bad_input_names_the_variable(workstation, packages, words):
    with pytest.raises(AnsibleFilterError, match=words):
        offline_needs(workstation, packages if isinstance(packages, list) else [packages, 1])


def test_filters_wrap_the_decision():
    need = offline_needs(CPU, ["build-essential"])
    assert offline_check(need, mirror(), INSTALLED, "debian bookworm")["ok"]
    with pytest.raises(AnsibleFilterError):
        offline_check("x", mirror())


@pytest.mark.parametrize("left, right, sign", [
    ("1.0", "1.0", 0), ("1.0-1", "1.0-2", -1), ("1:1.0", "2.0", 1), ("1.0~rc1", "1.0", -1),
    ("5.36.0-7+deb12u4", "5.36.0-7+deb12u3", 1), ("2.36-9+deb12u13", "2.36-9+deb12u9", 1), ("1.0a", "1.0", 1),
    ("4:12.2.0-3", "4:12.2", 1), ("1.01", "1.1", 0), ("1.0+b1", "1.0", 1),
])
def test_debian_version_order(left, right, sign):
    order = offline.compare_versions(left, right)
    assert (order > 0) - (order < 0) == sign


def test_an_installed_version_a_dependency_rejects_comes_from_the_folder():
    # found on Debian 12: the image has perl-base 5.36.0-7+deb12u3, the archive's perl wants (= ...deb12u4)
    index = ("Package: perl\nVersion: 5.36.0-7+deb12u4\nDepends: perl-base (= 5.36.0-7+deb12u4)\n"
             "Filename: ./perl_5.36.0-7+deb12u4_amd64.deb\n\n"
             "Package: perl-base\nVersion: 5.36.0-7+deb12u4\nFilename: ./perl-base_5.36.0-7+deb12u4_amd64.deb\n")
    files = ["apt/perl_5.36.0-7+deb12u4_amd64.deb", "apt/perl-base_5.36.0-7+deb12u4_amd64.deb"]
    installed = "perl-base\tinstall ok installed\t5.36.0-7+deb12u3\t"
    result = offline.check(offline.needs(CPU, ["perl"]), mirror(files=files, index=index), installed, "")
    assert result["ok"] and result["apt_install"] == ["perl", "perl-base"]
    # without the newer perl-base in the folder, the versioned dependency is what is missing
    index = index.split("\n\n", maxsplit=1)[0]
    result = offline.check(offline.needs(CPU, ["perl"]), mirror(files=files, index=index), installed, "")
    assert [m["name"] for m in result["missing"]] == ["perl-base (= 5.36.0-7+deb12u4)"]


# FIXTURE stanzas in the shape of NVIDIA's CUDA repository (tests/aptrepo/specs/_cuda-*.yml): the toolkit meta and a
# dependency, and cuDNN in two versions (the role installs name=version; the folder may hold both).
VENDOR_INDEX = INDEX + """
Package: cuda-toolkit-13-0
Version: 13.0.2-1
Architecture: amd64
Depends: cuda-cudart-13-0 (>= 13.0.96), build-essential
Filename: ./cuda-toolkit-13-0_13.0.2-1_amd64.deb

Package: cuda-cudart-13-0
Version: 13.0.96-1
Architecture: amd64
Filename: ./cuda-cudart-13-0_13.0.96-1_amd64.deb

Package: libcudnn9-cuda-13
Version: 9.26.0.51-1
Architecture: amd64
Filename: ./libcudnn9-cuda-13_9.26.0.51-1_amd64.deb

Package: libcudnn9-cuda-13
Version: 9.30.0.1-1
Architecture: amd64
Filename: ./libcudnn9-cuda-13_9.30.0.1-1_amd64.deb
"""
VENDOR_FILES = FILES + ["apt/cuda-toolkit-13-0_13.0.2-1_amd64.deb", "apt/cuda-cudart-13-0_13.0.96-1_amd64.deb",
                        "apt/libcudnn9-cuda-13_9.26.0.51-1_amd64.deb", "keys/cuda.asc"]
GPU = {"run": dict(CPU["run"], cuda=True, cudnn=True, nccl=True), "kernel_headers": False}
VENDOR = {"packages": {"cuda": ["cuda-toolkit-13-0"], "cudnn": ["libcudnn9-cuda-13=9.26.0.51-1"]}, "keys": ["cuda"]}


def test_vendor_packages_come_from_the_folder_with_their_key():
    need = offline.needs(dict(GPU, run=dict(GPU["run"], nccl=False)), ["build-essential"], None, VENDOR)
    assert need["roles"] == [] and need["vendor_keys"] == ["cuda"]
    assert need["fetch"] == ["build-essential", "cuda-toolkit-13-0", "libcudnn9-cuda-13=9.26.0.51-1"]
    result = offline.check(need, mirror(files=VENDOR_FILES, index=VENDOR_INDEX), INSTALLED, "debian bookworm")
    assert result["ok"], result["text"]
    assert {"cuda-toolkit-13-0", "cuda-cudart-13-0", "libcudnn9-cuda-13", "make"} <= set(result["apt_install"])
    # the pinned cuDNN, not the newest of the index
    assert "apt/libcudnn9-cuda-13_9.26.0.51-1_amd64.deb" in result["apt_files"]
    assert "Version: 9.26.0.51-1" in result["packages_text"] and "9.30.0.1" not in result["packages_text"]


def test_every_missing_vendor_artifact_is_listed_before_any_change():
    need = offline.needs(GPU, ["build-essential"], None, VENDOR)
    files = [f for f in VENDOR_FILES if f not in ("keys/cuda.asc", "apt/cuda-cudart-13-0_13.0.96-1_amd64.deb")]
    index = VENDOR_INDEX.replace("Version: 9.26.0.51-1\n", "Version: 9.25.0.1-1\n")
    result = offline.check(need, mirror(files=files, index=index), INSTALLED, "debian bookworm")
    got = {(m["kind"], m["name"]) for m in result["missing"]}
    assert got == {("apt", "cuda-cudart-13-0"), ("apt", "libcudnn9-cuda-13 (= 9.26.0.51-1)"), ("key", "keys/cuda.asc"),
                   ("role", "nccl")}
    why = {m["name"]: m["why"] for m in result["missing"]}
    assert "asked for by cudnn" in why["libcudnn9-cuda-13 (= 9.26.0.51-1)"]
    assert "pinned fingerprint" in why["keys/cuda.asc"]
    assert "dlbox_install_nccl: false" in why["nccl"]


def test_a_vendor_package_installed_at_the_pinned_version_needs_nothing():
    installed = INSTALLED + "\nlibcudnn9-cuda-13\tinstall ok installed\t9.26.0.51-1\t"
    need = offline.needs(GPU, [], None, {"packages": {"cudnn": ["libcudnn9-cuda-13=9.26.0.51-1"]}, "keys": ["cuda"]})
    result = offline.check(need, mirror(files=VENDOR_FILES, index=VENDOR_INDEX), installed, "")
    assert result["apt_install"] == [] and {m["name"] for m in result["missing"]} == {"cuda", "nccl"}


def test_python_env_apt_packages_are_checked():
    env = {"no_index": True, "find_links": ["/w"], "host_wheels": "/w", "apt": ["python3.11", "python3.11-venv"]}
    need = offline.needs(dict(CPU, run=dict(CPU["run"], python_env=True)), ["make"], env)
    result = offline.check(need, mirror(files=FILES + ["wheels/six-1.16.0-py2.py3-none-any.whl"]), INSTALLED, "")
    assert [(m["name"], m["why"].split(": ", 1)[1]) for m in result["missing"]] == [
        ("python3.11", "asked for by python_env (its Python, venv, headers, compiler)"),
        ("python3.11-venv", "asked for by python_env (its Python, venv, headers, compiler)")]


@pytest.mark.parametrize("environments, kw, want", [
    ([{"python": "3.11", "modules": ["torch"]}], {}, ["python3.11", "python3.11-venv", "python3.11-dev", "g++"]),
    ([{"python": "3.11", "modules": ["tensorflow"]}, {"python": "3.11", "modules": []}], {},
     ["python3.11", "python3.11-venv"]),
    ([{"python": "3.12", "modules": ["torch"]}], {"interpreters": {"3.12": "/opt/py/bin/python3.12"}}, ["g++"]),
    ([{"python": "3.11", "modules": ["torch"]}], {"install_python": False, "build_tools": False}, []),
    ([{"python": "3.10", "modules": ["torch"]}, {"python": "3.11", "modules": []}], {"compiler_packages": ["clang"]},
     ["python3.10", "python3.11", "python3.10-venv", "python3.11-venv", "python3.10-dev", "python3.11-dev", "clang"]),
])
def test_python_env_apt_is_the_roles_rule(environments, kw, want):
    assert offline.python_env_apt(environments, **kw) == want


@pytest.mark.parametrize("vendor, words", [
    ({"packages": {"docker_ce": ["x"]}}, "not a vendor role"),
    ({"packages": {"cuda": "cuda-toolkit-13-0"}}, "must be a list"),
    ({"packages": {"cudnn": ["libcudnn9=9 1"]}}, "not a Debian package name"),
    ({"packages": {"cuda": ["x1"]}, "keys": ["../etc"]}, "not a key name"),
    ({"packages": {"cuda": ["x1"]}, "keys": [{"name": "cuda", "roles": "cuda"}]}, "must be a list"),
    ({"packages": {"cuda": ["x1"]}, "keys": [{"name": "cuda", "roles": ["kernel"]}]}, "is not a vendor role"),
])
def test_bad_vendor_input_is_refused(vendor, words):
    with pytest.raises(AnsibleFilterError, match=words):
        offline_needs(GPU, ["make"], None, vendor)


# FIXTURE NCCL builds in the shape of NVIDIA's CUDA repository (tests/aptrepo/specs/_cuda-nccl.yml, _cuda-common.yml):
# the apt version names the CUDA minor the build is for.
NCCL_INDEX = VENDOR_INDEX + "".join(
    "\nPackage: %s\nVersion: %s\nArchitecture: amd64\n%sFilename: ./%s_%s_amd64.deb\n" % (
        name, version, "Depends: libnccl2 (= %s)\n" % version if name == "libnccl-dev" else "", name, version)
    for version in ("2.27.7-1+cuda12.9", "2.27.7-1+cuda13.0", "2.23.4-1+cuda12.6")
    for name in ("libnccl2", "libnccl-dev"))
NCCL_FILES = VENDOR_FILES + ["apt/libnccl2_2.27.7-1+cuda13.0_amd64.deb", "apt/libnccl-dev_2.27.7-1+cuda13.0_amd64.deb"]
NCCL_PICK = {"packages": ["libnccl2", "libnccl-dev"], "version": "2.27.7", "cuda": "13.0"}


@pytest.mark.parametrize("kw, want", [
    # nccl_version given, the toolkit cuda installs in the same run
    ({"version": "2.27.7", "toolkits": ["13.0"], "default_toolkit": "13.0"},
     {"pick": dict(NCCL_PICK)}),
    # the plan's NCCL and CUDA major: the default toolkit is of another major, the planned major's is taken
    ({"plan": {"version": "2.27.7", "cuda_major": "12"}, "toolkits": ["13.0", "12.6"], "default_toolkit": "13.0"},
     {"pick": dict(NCCL_PICK, cuda="12.6")}),
    # nccl_cuda_version wins; X.Y.Z is read as X.Y
    ({"version": "2.23.4", "cuda_version": "12.6.3", "toolkits": ["13.0"]},
     {"pick": dict(NCCL_PICK, version="2.23.4", cuda="12.6")}),
])
def test_nccl_request_is_the_roles_rule(kw, want):
    assert offline.nccl_request(True, packages=["libnccl2", "libnccl-dev"], **kw) == want


@pytest.mark.parametrize("args, kw, key, words", [
    ((False,), {}, "nothing", "does not run"),
    ((True, False, "2.27.7"), {}, "nothing", "nccl_install is false"),
    ((True,), {"toolkits": ["13.0"]}, "nothing", "nccl_version is empty"),
    ((True, True, "2.27.7"), {"plan": {"cuda_major": "12"}, "toolkits": ["13.0"], "packages": ["libnccl2"]},
     "error", "of CUDA 12.x"),
    ((True, True, "2.27.7"), {"toolkits": ["13.0"]}, "error", "package names"),
])
def test_nccl_request_without_a_build_to_pick(args, kw, key, words):
    got = offline.nccl_request(*args, **kw)
    assert list(got) == [key] and words in got[key]


def test_nccl_build_is_picked_from_the_folder_with_the_cuda_key():
    need = offline.needs(GPU, ["build-essential"], None, dict(VENDOR, picks={"nccl": NCCL_PICK}))
    assert need["roles"] == [] and need["picks"] == {"nccl": NCCL_PICK} and need["vendor_keys"] == ["cuda"]
    result = offline.check(need, mirror(files=NCCL_FILES, index=NCCL_INDEX), INSTALLED, "debian bookworm")
    assert result["ok"], result["text"]
    assert {"apt/libnccl2_2.27.7-1+cuda13.0_amd64.deb", "apt/libnccl-dev_2.27.7-1+cuda13.0_amd64.deb"} <= set(
        result["apt_files"])
    # the build for CUDA 13.0, not 12.9's, and only that one in the host's index
    assert "Version: 2.27.7-1+cuda13.0" in result["packages_text"] and "+cuda12.9" not in result["packages_text"]
    # a toolkit of a minor with no build of its own takes a build of the same major (the role's pick_build: here
    # the only 12.x build of 2.27.7, 12.9's, through minor-version compatibility)
    # (picked from the folder's index by check(), as offline.yml does)
    need = offline.needs(GPU, ["build-essential"], None, dict(VENDOR, picks={"nccl": dict(NCCL_PICK, cuda="12.8")}))
    files = VENDOR_FILES + ["apt/libnccl2_2.27.7-1+cuda12.9_amd64.deb", "apt/libnccl-dev_2.27.7-1+cuda12.9_amd64.deb"]
    result = offline.check(need, mirror(files=files, index=NCCL_INDEX), INSTALLED, "debian bookworm")
    assert result["ok"], result["text"]
    assert "Version: 2.27.7-1+cuda12.9" in result["packages_text"] and "+cuda13.0" not in result["packages_text"]


def test_nccl_build_is_picked_from_apt_cache_madison_for_the_mirror():
    madison = ("  libnccl2 | 2.27.7-1+cuda13.0 | https://developer.download.nvidia.com/compute/cuda/repos/debian12/"
               "x86_64  Packages\n  libnccl2 | 2.27.7-1+cuda12.9 | https://developer.download.nvidia.com/compute/"
               "cuda/repos/debian12/x86_64  Packages\n")
    need = offline.needs(GPU, ["make"], None, {"picks": {"nccl": NCCL_PICK}, "keys": ["cuda"]})
    got = offline.resolve_picks(need, {"nccl": madison})
    assert got["picks"] == {} and got["unmet"] == []
    assert got["fetch"] == ["libnccl-dev=2.27.7-1+cuda13.0", "libnccl2=2.27.7-1+cuda13.0", "make"]


def test_every_missing_nccl_artifact_is_listed():
    # the folder has no build of NCCL 2.23.4 for CUDA 13 and lacks the key: both named, with the role
    need = offline.needs(GPU, [], None, {"picks": {"nccl": dict(NCCL_PICK, version="2.23.4")},
                                         "packages": VENDOR["packages"], "keys": ["cuda"]})
    files = [f for f in NCCL_FILES if f != "keys/cuda.asc"]
    result = offline.check(need, mirror(files=files, index=NCCL_INDEX), INSTALLED, "")
    why = {m["name"]: m["why"] for m in result["missing"]}
    assert set(why) == {"libnccl2 (NCCL 2.23.4 for CUDA 13.0)", "keys/cuda.asc"}, result["text"]
    assert "no NCCL 2.23.4 build for CUDA 13.x" in why["libnccl2 (NCCL 2.23.4 for CUDA 13.0)"]
    assert "asked for by nccl" in why["libnccl2 (NCCL 2.23.4 for CUDA 13.0)"]
    # the picked build listed in the index but its .deb absent
    files = [f for f in NCCL_FILES if "libnccl-dev" not in f]
    result = offline.check(need, mirror(files=files, index=NCCL_INDEX.replace("2.23.4-1+cuda12.6", "2.23.4-1+cuda13.0")),
                           INSTALLED, "")
    assert sorted(m["name"] for m in result["missing"]) == ["libnccl-dev", "libnccl2"]


def test_a_role_the_decision_says_installs_nothing_or_cannot_is_not_refused_by_name():
    unmet = [{"role": "nccl", "name": "a CUDA toolkit for NCCL 2.27.7", "why": "this run installs none"}]
    need = offline.needs(GPU, [], None, {"packages": VENDOR["packages"], "nothing": {"nccl": "nccl_install is false"},
                                         "keys": ["cuda"]})
    assert need["roles"] == [] and need["nothing"] == {"nccl": "nccl_install is false"}
    need = offline.needs(GPU, [], None, {"packages": VENDOR["packages"], "unmet": unmet, "keys": ["cuda"]})
    result = offline.check(need, mirror(files=NCCL_FILES, index=NCCL_INDEX), INSTALLED, "")
    assert [m["name"] for m in result["missing"]] == ["a CUDA toolkit for NCCL 2.27.7"]
    # where the plan does not run the role, none of it counts
    off = dict(GPU, run=dict(GPU["run"], nccl=False))
    assert offline.needs(off, [], None, {"picks": {"nccl": NCCL_PICK}, "unmet": unmet})["unmet"] == []


@pytest.mark.parametrize("vendor, words", [
    ({"picks": {"cuda": NCCL_PICK}}, "only nccl"),
    ({"picks": {"nccl": dict(NCCL_PICK, cuda="13")}}, "not a version"),
    ({"picks": {"nccl": {"packages": ["libnccl2"]}}}, "packages, version, cuda"),
    ({"unmet": [{"role": "nccl", "name": "x"}]}, "role, name, why"),
    ({"nothing": {"docker_ce": "x"}}, "not a vendor role"),
])
def test_bad_pick_input_is_refused(vendor, words):
    with pytest.raises(AnsibleFilterError, match=words):
        offline_needs(GPU, ["make"], None, vendor)


def test_resolve_picks_filter_refuses_what_is_not_offline_needs_result():
    from ansible_collections.dlbox.stack.plugins.filter.offline import offline_resolve_picks
    with pytest.raises(AnsibleFilterError, match="offline_needs's result"):
        offline_resolve_picks([], {})


# FIXTURE stanzas in the shape of NVIDIA's libnvidia-container repository (tests/aptrepo/specs/container-toolkit.yml)
# and Docker's (docker-ce.yml): the toolkit in two releases, all four packages at one version.
CTK = ["nvidia-container-toolkit", "nvidia-container-toolkit-base", "libnvidia-container-tools", "libnvidia-container1"]
CTK_INDEX = INDEX + "".join(
    "\nPackage: %s\nVersion: %s\nArchitecture: amd64\nFilename: ./%s_%s_amd64.deb\n" % (name, version, name, version)
    for version in ("1.17.8-1", "1.18.2-1") for name in CTK) + (
    "\nPackage: docker-ce\nVersion: 5:20.10.24-1~debian.12~bookworm\nArchitecture: amd64\n"
    "Filename: ./docker-ce_20.10.24-1~debian.12~bookworm_amd64.deb\n")
CTK_FILES = FILES + ["apt/%s_1.18.2-1_amd64.deb" % name for name in CTK] + [
    "apt/docker-ce_20.10.24-1~debian.12~bookworm_amd64.deb", "keys/nvidia-container-toolkit.asc", "keys/docker.asc"]
DOCKER_RUN = {"run": dict(CPU["run"], docker=True, nvidia_container_toolkit=True), "kernel_headers": False}
PREREQS = ["ca-certificates", "gnupg", "python3-debian"]


# The roles' own decisions (their modules' decide with needs, as role_module('decide') returns them and the roles'
# tasks/offline_source.yml hand them to offline_needs): offline mode restates no install rule of theirs.
FPR = "0123456789ABCDEF0123456789ABCDEF01234567"
TOOLKIT = {"version": "1.18.2", "min_version": "1.18.1", "packages": CTK, "docker_cdi_min": "25.0"}


def _toolkit(toolkit="planned", jetpack=None, **given):
    plan = {"ok": True, "errors": [], "host": {"jetson": {"model": "Orin"} if jetpack else None},
            "stack": {"container_toolkit": TOOLKIT if toolkit == "planned" else toolkit, "jetpack": jetpack}}
    return roles.decide("nvidia_container_toolkit", plan, dict({
        "nvidia_container_toolkit_repo_url": "https://nvidia.github.io/libnvidia-container",
        "nvidia_container_toolkit_repo_key_fingerprint": FPR}, **given), {"inventory_hostname": "h1"})


def _docker(**given):
    return roles.decide("docker", None, dict({
        "docker_ce_repo_url": "https://download.docker.com/linux/debian", "docker_ce_repo_key_fingerprint": FPR,
        # what the role's templates render to on a host without a site proxy (as tasks/offline_source.yml reads them)
        "docker_http_proxy": "", "docker_https_proxy": "", "docker_no_proxy": "localhost", "docker_client_proxy_users": []},
        **given), {"distribution_release": "bookworm", "packages": {}})


DOCKER_CE = ["docker-ce", "docker-ce-cli", "containerd.io", "docker-buildx-plugin", "docker-compose-plugin"]


@pytest.mark.parametrize("role, decision, want", [
    ("nvidia_container_toolkit", _toolkit(), {"packages": PREREQS, "key": True,
                                              "pick": {"packages": CTK, "version": "1.18.2"}}),
    ("nvidia_container_toolkit", _toolkit(nvidia_container_toolkit_version="1.18.1"),
     {"packages": PREREQS, "key": True, "pick": {"packages": CTK, "version": "1.18.1"}}),
    ("nvidia_container_toolkit", _toolkit(None, jetpack={"version": "6.2"}), {"nothing": "JetPack's toolkit (L4T)"}),
    ("nvidia_container_toolkit", _toolkit(None), {"nothing": "the plan has no container toolkit"}),
    ("nvidia_container_toolkit", _toolkit(nvidia_container_toolkit_version="1.18"), {"error": "a release such as 1.18.2"}),
    # the role's floor (1.18.1 here, the plan's min_version): the rule offline.py restated let 1.17.8 through
    ("nvidia_container_toolkit", _toolkit(nvidia_container_toolkit_version="1.17.8"), {"error": "at least 1.18.1"}),
    ("nvidia_container_toolkit", _toolkit(jetpack={"version": "6.2"}, nvidia_container_toolkit_source="nvidia"),
     {"error": "must not go onto L4T"}),
    ("docker", _docker(), {"packages": PREREQS + DOCKER_CE, "key": True}),
    # docker_ce_version pins the packages the role pins (docker-ce, docker-ce-cli), not the others
    ("docker", _docker(docker_ce_version="5:20.10.24-1~debian.12~bookworm"),
     {"packages": PREREQS + ["docker-ce=5:20.10.24-1~debian.12~bookworm", "docker-ce-cli=5:20.10.24-1~debian.12~bookworm"]
      + DOCKER_CE[2:], "key": True}),
    ("docker", _docker(docker_source="distribution"), {"packages": ["docker.io"], "key": False}),
    ("docker", _docker(docker_ce_repo_key_fingerprint="abc"), {"error": "40-hex-digit fingerprint"}),
    ("docker", _docker(docker_ce_version="1 2"), {"error": "not a Debian package name"}),
])
def test_role_request_is_the_roles_own_decision(role, decision, want):
    got = offline.role_request(role, True, decision)
    assert sorted(got) == sorted(want)
    for key, value in want.items():
        assert value == got[key] if not isinstance(value, str) else value in got[key]
    assert offline.role_request(role, False, decision) == {"nothing": "the plan does not run %s" % role}


def test_role_request_refuses_what_is_not_a_decision():
    with pytest.raises(offline.OfflineError, match="role_module"):
        offline.role_request("docker", True, {"problems": []})
    with pytest.raises(offline.OfflineError, match="nvidia_container_toolkit only"):
        offline.role_request("docker", True, {"problems": [], "needs": {"apt": ["docker-ce=28.0.4-*"]}})
    with pytest.raises(AnsibleFilterError, match="not a vendor role"):
        offline_needs(DOCKER_RUN, [], None, {"decided": {"podman": _docker()}})


def test_decided_roles_carry_their_packages_and_only_the_keys_their_decision_adds():
    keys = [{"name": "nvidia-container-toolkit", "roles": ["nvidia_container_toolkit"]}, {"name": "docker", "roles": ["docker"]}]
    need = offline.needs(DOCKER_RUN, [], None, {"decided": {"nvidia_container_toolkit": _toolkit(), "docker": _docker()},
                                                "keys": keys})
    assert need["vendor"] == {"docker": PREREQS + DOCKER_CE, "nvidia_container_toolkit": PREREQS}
    assert need["picks"] == {"nvidia_container_toolkit": {"packages": CTK, "version": "1.18.2"}}
    assert need["vendor_keys"] == ["docker", "nvidia-container-toolkit"] and need["roles"] == []
    # docker from the OS archive, the toolkit from JetPack: no key of theirs, nothing refused
    need = offline.needs(DOCKER_RUN, ["make"], None, {"decided": {
        "nvidia_container_toolkit": _toolkit(None, jetpack={"version": "6.2"}),
        "docker": _docker(docker_source="distribution")}, "keys": keys})
    assert need["vendor"] == {"docker": ["docker.io"]} and need["vendor_keys"] == [] and need["roles"] == []
    assert need["nothing"]["nvidia_container_toolkit"].startswith("JetPack's toolkit")
    # a refused decision: listed as missing, by the role's own words, and its key is not asked for
    need = offline.needs(DOCKER_RUN, [], None, {"decided": {
        "nvidia_container_toolkit": _toolkit(nvidia_container_toolkit_version="1.17.8"), "docker": _docker()},
        "keys": keys})
    assert [(u["role"], "at least 1.18.1" in u["why"]) for u in need["unmet"]] == [("nvidia_container_toolkit", True)]
    assert need["vendor_keys"] == ["docker"]
    result = offline.check(need, mirror(files=CTK_FILES, index=CTK_INDEX), INSTALLED, "")
    assert any(m["name"] == "the decision of nvidia_container_toolkit" and "asked for by nvidia_container_toolkit"
               in m["why"] for m in result["missing"]), result["missing"]


@pytest.mark.parametrize("versions, version, want", [
    (["1.17.8-1", "1.18.2-1", "1.18.2-2", "1.18.20-1"], "1.18.2", "1.18.2-2"),
    (["2:1.18.2-1~bookworm", "1.18.1-1"], "1.18.2", "2:1.18.2-1~bookworm"),
    (["1.18.20-1", "1.18.1-1"], "1.18.2", None),
])
def test_pick_upstream_takes_any_debian_revision_of_the_release(versions, version, want):
    got = offline.pick_upstream(versions, version)
    assert got.get("version") == want and (want or "no 1.18.2-* build" in got["error"])


def test_container_toolkit_and_docker_come_from_the_folder_with_their_keys():
    vendor = {"packages": {"nvidia_container_toolkit": PREREQS[:1], "docker": ["docker-ce"]},
              "picks": {"nvidia_container_toolkit": {"packages": CTK, "version": "1.18.2"}},
              "keys": ["nvidia-container-toolkit", "docker"]}
    index = CTK_INDEX + "\nPackage: ca-certificates\nVersion: 20230311\nFilename: ./ca-certificates_20230311_all.deb\n"
    files = CTK_FILES + ["apt/ca-certificates_20230311_all.deb"]
    need = offline.needs(DOCKER_RUN, [], None, vendor)
    assert need["roles"] == [] and need["vendor_keys"] == ["docker", "nvidia-container-toolkit"]
    result = offline.check(need, mirror(files=files, index=index), INSTALLED, "")
    assert result["ok"], result["text"]
    assert set(result["apt_files"]) >= {"apt/%s_1.18.2-1_amd64.deb" % name for name in CTK}
    assert "1.17.8" not in result["packages_text"]
    # without the keys and a toolkit .deb: each listed, the key with its roles
    files = [f for f in files if not f.startswith("keys/") and "libnvidia-container1" not in f]
    result = offline.check(need, mirror(files=files, index=index), INSTALLED, "")
    why = {m["name"]: m["why"] for m in result["missing"]}
    assert set(why) == {"libnvidia-container1", "keys/nvidia-container-toolkit.asc", "keys/docker.asc"}, why
    assert "pinned fingerprint (docker, nvidia_container_toolkit)" in why["keys/docker.asc"]   # names alone: every role
    # keys given with their roles (as tasks/offline_plan.yml gives them): each missing key names its own roles only
    keyed = dict(vendor, keys=[{"name": "nvidia-container-toolkit", "roles": ["nvidia_container_toolkit"]},
                               {"name": "docker", "roles": ["docker"]}])
    result = offline.check(offline.needs(DOCKER_RUN, [], None, keyed), mirror(files=files, index=index), INSTALLED, "")
    why = {m["name"]: m["why"] for m in result["missing"]}
    assert why["keys/docker.asc"].endswith("pinned fingerprint (docker)"), why
    assert why["keys/nvidia-container-toolkit.asc"].endswith("pinned fingerprint (nvidia_container_toolkit)"), why
    # a release the folder has no build of
    vendor["picks"]["nvidia_container_toolkit"]["version"] = "1.18.1"
    result = offline.check(offline.needs(DOCKER_RUN, [], None, vendor), mirror(files=CTK_FILES, index=index), "", "")
    assert {m["name"] for m in result["missing"]} >= {"nvidia-container-toolkit (1.18.1-*)"}


def test_roles_still_refused_are_named_with_their_switch():
    need = offline.needs(dict(DOCKER_RUN, run=dict(DOCKER_RUN["run"], nvidia_driver=True)), [], None, {})
    assert need["roles"] == ["nvidia_driver", "docker", "nvidia_container_toolkit"]
    result = offline.check(need, mirror(files=FILES), INSTALLED, "")
    why = {m["name"]: m["why"] for m in result["missing"] if m["kind"] == "role"}
    assert "dlbox_install_driver: false" in why["nvidia_driver"] and "running kernel" in why["nvidia_driver"]
    assert "dlbox_install_docker: false" in why["docker"] and "dlbox_install_docker" in why[
        "nvidia_container_toolkit"]
