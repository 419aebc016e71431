# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Offline mode on a host whose only network is an internal Docker network.

prepare.yml made the folder with playbooks/mirror.yml on a connected container, carried it to the controller, showed
the network cut, and ran the workstation playbook against a copy with make's .deb taken out, asking for jq and
python_env too: offline-results.json holds that run's output and a snapshot of the host before and after it.
The converge (and idempotence) ran the workstation playbook offline from the whole folder.
"""

from __future__ import annotations

import json
import os
import re

import pytest

DISTRO = os.environ.get("MOLECULE_DISTRO", "debian12")
# molecule/offline_gpu runs these tests too: a GPU plan, CUDA and cuDNN from the FIXTURE CUDA repository
GPU = os.environ.get("MOLECULE_SCENARIO_NAME") == "offline_gpu"
testinfra_hosts = ["dlbox-offline-%s%s" % ("gpu-" if GPU else "", DISTRO)]
EPHEMERAL = os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]


def _results():
    with open(os.path.join(EPHEMERAL, "offline-results.json"), encoding="utf-8") as handle:
        return json.load(handle)


def test_the_network_is_cut():
    lines = _results()["net"]
    assert len(lines) == 4
    assert all(line.startswith("unreachable ") for line in lines), lines


def test_the_preflight_lists_every_missing_artifact_and_changes_nothing():
    results = _results()
    out = re.sub(r"\x1b\[[0-9;]*m", "", results["output"])       # ansible-playbook's colours
    assert results["rc"] != 0
    folder = "%s/mirror-broken" % EPHEMERAL
    header = re.search(r"(\d+) artifact\(s\) missing from %s; nothing was changed" % re.escape(folder), out)
    assert header, out[-3000:]
    for words in ("apt jq: not in", "apt make: %s/apt/make_" % folder,
                  # python_env's own apt packages (its venv module is not in the folder made without python_env)
                  "apt python3.11-venv: not in %s/apt/Packages and not installed: asked for by python_env" % folder,
                  "wheels wheels/:", "wheels python_env_no_index:", "wheels python_env_find_links:") + ((
                      # the vendor artifacts: the cuDNN runtime's .deb (cudnn's pinned version) and the CUDA key
                      "apt libcudnn9-cuda-13: %s/apt/libcudnn9-cuda-13_9.20.0.48-1_amd64.deb" % folder,
                      # NCCL's headers at the build the nccl role picks for CUDA 13.0 (listed in the index, absent)
                      "apt libnccl-dev: %s/apt/libnccl-dev_2.27.7-1+cuda13.0_amd64.deb" % folder,
                      # Docker (asked for in that run) and the container toolkit at the planned 1.18.2: a toolkit
                      # package and Docker's key
                      "apt libnvidia-container1: %s/apt/libnvidia-container1_1.18.2-1_amd64.deb" % folder,
                      "key keys/docker.asc: %s/keys/docker.asc is missing" % folder,
                      "key keys/cuda.asc: %s/keys/cuda.asc is missing" % folder) if GPU else ()):
        assert words in out, words
    # every artifact once in the list (the failure prints the message twice)
    listed = set(re.findall(r"^\s*- (apt|key|wheels|role|folder) (\S+):", out, re.M))
    assert int(header.group(1)) == len(listed) >= (11 if GPU else 6), listed
    # refused before the roles: the summary's snapshot task never ran
    assert "dlbox.stack.summary" not in out and "dlbox.stack.common" not in out
    assert results["before"] == results["after"]
    assert results["before"].splitlines()[-1].endswith("-")        # dpkg's list summed; no file newer than the stamp
    assert len(results["before"].splitlines()) == 1


@pytest.mark.skipif(not GPU, reason="the CPU plan carries no repository key")
def test_a_key_url_given_as_an_extra_var_is_refused_by_name_before_any_change():
    results = _results()
    out = re.sub(r"\x1b\[[0-9;]*m", "", results["key_url_output"])
    assert results["key_url_rc"] != 0
    assert "but cuda_repo_key_url given as an extra var (-e)" in out, out[-3000:]
    assert "Drop cuda_repo_key_url from the command line" in out
    assert "dlbox.stack.common" not in out and "dlbox.stack.cuda_repo" not in out   # before the roles
    assert results["before"] == results["after"]                                    # the host unchanged


def test_the_folder_holds_the_closure_and_its_manifest():
    folder = os.path.join(EPHEMERAL, "mirror")
    with open(os.path.join(folder, "manifest.json"), encoding="utf-8") as handle:
        manifest = json.load(handle)
    debs = [name for name in os.listdir(os.path.join(folder, "apt")) if name.endswith(".deb")]
    size = sum(os.path.getsize(os.path.join(folder, "apt", name)) for name in debs)
    print("mirror folder: %d .debs, %.1f MB (manifest: %s)" % (len(debs), size / 1e6, manifest["debs"]))
    assert manifest["release"] == "debian bookworm"
    assert manifest["debs"] == len(debs) and manifest["deb_bytes"] == size
    assert {"build-essential", "curl"} <= set(manifest["apt"])
    if GPU:
        assert {"cuda-toolkit-13-0", "libcudnn9-cuda-13=9.20.0.48-1"} <= set(manifest["apt"])
        assert {"libnccl2=2.27.7-1+cuda13.0", "libnccl-dev=2.27.7-1+cuda13.0"} <= set(manifest["apt"])
        assert sorted(manifest["keys"]) == ["cuda", "docker", "nvidia-container-toolkit"]
        assert sorted(manifest["vendor"]) == ["cuda", "cudnn", "docker", "nccl", "nvidia_container_toolkit"]
        assert manifest["unmet"] == [] and manifest["not_carried"] == []
        assert "nvidia-container-toolkit=1.18.2-1" in manifest["apt"] and "docker-ce" in manifest["apt"]
        for key in ("docker", "nvidia-container-toolkit"):
            assert os.path.exists(os.path.join(folder, "keys", key + ".asc")), key
        assert os.path.exists(os.path.join(folder, "keys", "cuda.asc"))
        # the vendor packages and their dependencies within NVIDIA's repository, from the fixture repository
        for prefix in ("cuda-toolkit-13-0_", "cuda-cudart-13-0_", "cuda-nvcc-13-0_", "libcudnn9-cuda-13_9.20.0.48-1_",
                       "libcudnn9-dev-cuda-13_9.20.0.48-1_", "python3-debian_", "libnccl2_2.27.7-1+cuda13.0_",
                       "libnccl-dev_2.27.7-1+cuda13.0_", "nvidia-container-toolkit_1.18.2-1_",
                       "libnvidia-container1_1.18.2-1_", "docker-ce_", "containerd.io_"):
            assert [name for name in debs if name.startswith(prefix)], prefix
    else:
        assert manifest["keys"] == [] and manifest["vendor"] == {}
        assert not os.listdir(os.path.join(folder, "keys"))
    with open(os.path.join(folder, "apt", "Packages"), encoding="utf-8") as handle:
        assert handle.read().count("\nPackage: ") + 1 == len(debs)


def test_the_packages_came_from_the_folder_and_work(host):
    for name in ("build-essential", "curl", "make", "gcc"):
        assert host.package(name).is_installed, name
    host.run_test("printf 'int main(void){return 7;}' | gcc -x c - -o /root/offline-a")
    assert host.run("/root/offline-a").rc == 7
    carried = host.check_output("ls /var/lib/dlbox/offline/apt")
    print("carried to the host: %d .debs" % carried.count(".deb"))
    assert "make_" in carried and "build-essential_" in carried


def test_apt_reads_the_folder_alone(host):
    assert host.file("/etc/apt/apt.conf.d/01dlbox-offline").contains('Dir::Etc::SourceParts "/etc/apt/dlbox-offline.list.d"')
    policy = host.check_output("apt-cache policy")
    assert "file:/var/lib/dlbox/offline/apt" in policy
    assert "deb.debian.org" not in policy and "http" not in policy
    # the host's own sources are still there, unread; so is the CUDA repository's as the cuda_repo role wrote it
    assert host.file("/etc/apt/sources.list.d/debian.sources").exists
    if GPU:
        assert host.file("/etc/apt/sources.list.d/dlbox-cuda.sources").contains("http://127.0.0.1:8089/cuda-debian12/")


@pytest.mark.skipif(not GPU, reason="molecule/offline_gpu's GPU plan")
def test_cuda_and_cudnn_came_from_the_folder_with_the_pinned_key(host):
    """FIXTURE packages (tests/aptrepo cuda-debian12): the fake nvcc answers --version only."""
    assert host.package("cuda-toolkit-13-0").is_installed
    assert host.package("libcudnn9-cuda-13").version == "9.20.0.48-1"
    assert host.package("libcudnn9-dev-cuda-13").version == "9.20.0.48-1"
    assert "release 13.0" in host.check_output("/usr/local/cuda-13.0/bin/nvcc --version")
    carried = host.check_output("ls /var/lib/dlbox/offline/apt")
    assert "cuda-toolkit-13-0_" in carried and "libcudnn9-cuda-13_9.20.0.48-1_" in carried
    # the key came from the folder, checked against the pinned fingerprint (molecule.yml: the fixture key's)
    with open(os.path.join(os.environ["MOLECULE_PROJECT_DIRECTORY"],
                           "build/fixture-repos/cuda-debian12/cuda-archive-keyring.fingerprint"), encoding="utf-8") as handle:
        pinned = handle.read().strip().replace(" ", "")
    shown = host.check_output("gpg --show-keys --with-colons /etc/apt/keyrings/dlbox-cuda-archive-keyring.gpg")
    assert "fpr:::::::::%s:" % pinned in shown


@pytest.mark.skipif(not GPU, reason="molecule/offline_gpu's GPU plan")
def test_nccl_came_from_the_folder_at_the_build_for_the_toolkit(host):
    """FIXTURE packages (tests/aptrepo _cuda-nccl.yml, _cuda-common.yml): the repository has 2.27.7 for CUDA 12.9 and
    13.0; the nccl role (and the folder) took 13.0's, for the toolkit installed offline."""
    for name in ("libnccl2", "libnccl-dev"):
        assert host.package(name).version == "2.27.7-1+cuda13.0", name
    assert host.file("/usr/include/nccl.h").contains("#define NCCL_VERSION_CODE 22707")
    assert host.file("/etc/nccl.conf").exists
    carried = host.check_output("ls /var/lib/dlbox/offline/apt")
    assert "libnccl2_2.27.7-1+cuda13.0_" in carried and "+cuda12.9" not in carried
