"""dlbox.stack.cudnn on Debian 12 with the FIXTURE CUDA 12.6 toolkit.

apt: the FIXTURE libcudnn9-cuda-12 9.17.0.29 (a stand-in ELF that answers the version calls); tarball: a FIXTURE
tarball built by prepare; wheel: the REAL nvidia-cudnn-cu12 9.10.2.21 from PyPI, whose library is loaded here.
"""

import json

import pytest

WHEEL_DIR = "/opt/cudnn/9.10.2.21-cuda12"
TAR_DIR = "/opt/cudnn/9.17.0.29-cuda12"
# How a program finds cuDNN: by soname, through the dynamic linker.
LOAD = ("python3 -c \"import ctypes; l = ctypes.CDLL('libcudnn.so.9'); l.cudnnGetVersion.restype = ctypes.c_size_t; "
        "l.cudnnGetCudartVersion.restype = ctypes.c_size_t; print(l.cudnnGetVersion(), l.cudnnGetCudartVersion())\"")


def record(host, name):
    return json.loads(host.file(f"/root/dlbox-{name}.json").content_string)


# --- check mode ---------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["fresh", "changed_request"])
def test_check_mode_reports_and_changes_nothing(host, name):
    run = record(host, f"check-{name}")
    assert run["rc"] == 0, run["tail"]
    assert run["unchanged"], run["tail"]


def test_check_mode_on_the_fresh_host_reports_changes(host):
    run = record(host, "check-fresh")
    assert run["changed"], run["tail"]


def test_check_mode_reports_the_switch_back_to_the_tarball(host):
    run = record(host, "check-changed_request")
    assert "Point the linker at " + TAR_DIR + "/lib" in run["changed"], run


# --- apt (NVIDIA's repository, fixture): the plan's cuDNN for the installed CUDA major, held ---------
def test_apt_installed_the_plans_cudnn_for_cuda_12_and_held_it(host):
    state = record(host, "cudnn-apt")["state"]
    assert "libcudnn9-cuda-12 9.17.0.29-1 hi " in state
    assert "libcudnn9-dev-cuda-12 9.17.0.29-1 hi " in state
    held = next(line for line in state if line.startswith("held: ")).split()[1:]
    assert sorted(held) == ["libcudnn9-cuda-12", "libcudnn9-dev-cuda-12"]
    assert not any(line.startswith("libcudnn9-cuda-13") and " ii " in line for line in state)


def test_apt_cudnn_is_read_from_header_and_library(host):
    facts = record(host, "cudnn-apt")["facts"]
    assert facts["header_version"] == "9.17.0"
    assert facts["library_version"] == "9.17.0" and facts["library_file_version"] == "9.17.0"
    assert facts["library"] == "/usr/lib/x86_64-linux-gnu/libcudnn.so.9.17.0"
    assert facts["cudart_version"].startswith("12.")


def test_cudnn_packages_come_only_through_the_shared_repository_pin(host):
    state = record(host, "cudnn-apt")["state"]
    assert any("cudnn" in line and line.endswith(".pref") for line in state), state


# --- refusals: before any change, naming the variable -------------------------------------------
@pytest.mark.parametrize("name", ["bad_version", "unknown_method", "major_not_installed", "no_build_for_installed_cuda",
                                  "gpu_cannot_run_it", "tarball_without_checksum", "second_cudnn",
                                  "tarball_checksum_mismatch"])
def test_refused_with_the_reason_and_nothing_changed(host, name):
    case = next(c for c in record(host, "cudnn-refusals") if c["name"] == name)
    assert case["msg"] != "NOT REFUSED"
    assert case["expect"] in case["msg"], case["msg"]
    assert case["unchanged"], case


def test_checksum_mismatch_left_no_directory(host):
    # the tarball was installed later; its manifest holds the good checksum, laid out after the refusal
    case = next(c for c in record(host, "cudnn-refusals") if c["name"] == "tarball_checksum_mismatch")
    assert "did not match" in case["msg"] or "checksum" in case["msg"]


# --- tarball and wheel: installed, and the second run changes nothing -----------------------------
@pytest.mark.parametrize("name", ["tarball_1", "tarball_2", "wheel_1", "wheel_2"])
def test_runs_succeed(host, name):
    run = record(host, "cudnn-runs")[name]
    assert run["rc"] == 0, run["tail"]


@pytest.mark.parametrize("name", ["tarball_2", "wheel_2"])
def test_second_run_changes_nothing(host, name):
    run = record(host, "cudnn-runs")[name]
    assert run["recap"] and all("changed=0" in line for line in run["recap"]), run


def test_tarball_lands_in_its_versioned_directory(host):
    assert host.file(f"{TAR_DIR}/include/cudnn_version.h").contains("CUDNN_MINOR 17")
    assert host.file(f"{TAR_DIR}/lib/libcudnn.so.9").linked_to == f"{TAR_DIR}/lib/libcudnn.so.9.17.0"
    manifest = json.loads(host.file(f"{TAR_DIR}/dlbox-manifest.json").content_string)
    expected = host.file("/srv/fixture-repos/cudnn-redist/linux-x86_64/"
                         "cudnn-linux-x86_64-9.17.0.29_cuda12-archive.tar.xz.sha256").content_string.strip()
    assert manifest["kind"] == "tarball" and manifest["sha256"] == expected


def test_real_wheel_lands_in_its_versioned_directory(host):
    manifest = json.loads(host.file(f"{WHEEL_DIR}/dlbox-manifest.json").content_string)
    assert manifest["kind"] == "wheel"
    assert manifest["source"].startswith("nvidia_cudnn_cu12-9.10.2.21-")
    assert host.file(f"{WHEEL_DIR}/include/cudnn_version.h").contains("#define CUDNN_MINOR 10")
    assert host.file(f"{WHEEL_DIR}/lib/libcudnn.so.9").size > 100000
    assert host.file(f"{WHEEL_DIR}/lib/libcudnn.so").linked_to == f"{WHEEL_DIR}/lib/libcudnn.so.9"
    assert host.file(f"{WHEEL_DIR}/LICENSE").exists


def test_linker_finds_the_real_wheel_and_only_it(host):
    assert host.file("/etc/ld.so.conf.d/dlbox-cudnn.conf").contains(f"^{WHEEL_DIR}/lib$")
    lines = [l for l in host.check_output("ldconfig -p").splitlines() if l.strip().startswith("libcudnn.so.9 ")]
    assert len(lines) == 1 and lines[0].endswith(f"{WHEEL_DIR}/lib/libcudnn.so.9"), lines


def test_real_library_reports_its_version_through_the_linker(host):
    version, cudart = host.check_output(LOAD).split()
    assert version == "91002"          # cuDNN 9.10.2
    assert cudart.startswith("12")     # built for CUDA 12.x


def test_nothing_copied_into_the_cuda_toolkit(host):
    assert host.check_output("find /usr/local/cuda-12.6 -name 'libcudnn*' | wc -l").strip() == "0"


def test_downloads_were_removed(host):
    assert host.check_output("find /var/cache/dlbox/cudnn -type f | wc -l").strip() == "0"


def test_the_tarball_install_is_kept_after_switching(host):
    assert host.file(f"{TAR_DIR}/dlbox-manifest.json").exists
