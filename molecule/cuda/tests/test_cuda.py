"""dlbox.stack.cuda: FIXTURE toolkits 12.6 and 13.0 from the fixture CUDA repository (fake nvcc that only
answers --version), and NVIDIA's REAL nvcc 13.5.37 from its PyPI wheels laid out as /usr/local/cuda-13.5.
side_effect.yml switched the default from 12.6 to 13.0 and recorded the refusals."""

import json

import pytest

LOGIN = "bash -lc '{}'"


def record(host, name):
    return json.loads(host.file(f"/root/{name}").content_string)


# --- side by side, toolkit only --------------------------------------------------------------------
@pytest.mark.parametrize(("version", "package", "full"), [("12.6", "cuda-toolkit-12-6", "12.6.3"),
                                                          ("13.0", "cuda-toolkit-13-0", "13.0.2")])
def test_fixture_toolkits_side_by_side(host, version, package, full):
    assert host.package(package).is_installed
    assert host.file(f"/usr/local/cuda-{version}/bin/nvcc").is_file
    assert f'"version": "{full}"' in host.file(f"/usr/local/cuda-{version}/version.json").content_string
    assert json.loads(host.file(f"/var/lib/dlbox/cuda/{version}.json").content_string)["source"] == "nvidia_repo"


@pytest.mark.parametrize("package", ["cuda", "cuda-drivers", "nvidia-driver", "nvidia-open", "cuda-toolkit", "libcuda1"])
def test_toolkit_only_no_driver_or_meta(host, package):
    assert not host.package(package).is_installed


def test_nvidia_repository_supplies_only_what_the_role_listed(host):
    pref = host.file("/etc/apt/preferences.d/zz-dlbox-cuda-repo-cuda.pref").content_string
    assert "cuda-toolkit-12-6" in pref and "cuda-toolkit-13-0" in pref
    assert "cuda-drivers" not in pref and "nvidia-driver" not in pref


# --- the default and login shells ------------------------------------------------------------------
def test_default_switched_from_12_6_to_13_0(host):
    switch = record(host, "dlbox-cuda-switch.json")
    assert switch["rc"] == 0, switch["tail"]
    assert "CUDA_HOME=/usr/local/cuda" in switch["before"]
    assert any("release 12.6" in line for line in switch["before"]), switch["before"]
    assert any("release 13.0" in line for line in switch["after"]), switch["after"]
    assert host.file("/usr/local/cuda").linked_to == "/usr/local/cuda-13.0"
    assert host.check_output("readlink /etc/alternatives/cuda") == "/usr/local/cuda-13.0"


def test_login_shell_path_cuda_home_and_no_ld_library_path(host):
    out = host.check_output(LOGIN.format('command -v nvcc; echo "$CUDA_HOME"; echo "${LD_LIBRARY_PATH-unset}"; echo "$PATH"'))
    nvcc, cuda_home, ld_path, path = out.splitlines()
    assert nvcc == "/usr/local/cuda/bin/nvcc"
    assert cuda_home == "/usr/local/cuda"
    assert ld_path == "unset"
    assert path.split(":")[0] == "/usr/local/cuda/bin"
    assert "release 13.0, V13.0.88" in host.check_output(LOGIN.format("nvcc --version"))
    profile = host.file("/etc/profile.d/dlbox-cuda.sh").content_string
    assert not [line for line in profile.splitlines() if "LD_LIBRARY_PATH" in line and not line.startswith("#")]


def test_ldconfig_finds_the_cuda_runtime(host):
    cache = host.check_output("ldconfig -p")
    assert "libcudart.so.13 (libc6,x86-64) => /usr/local/cuda-13.5/lib64/libcudart.so.13" in cache
    assert host.file("/etc/ld.so.conf.d/dlbox-cuda-13.5.conf").content_string.strip().endswith("/usr/local/cuda-13.5/lib64")


# --- the real compiler from NVIDIA's wheels --------------------------------------------------------
def test_pip_wheel_tree_and_its_manifest(host):
    manifest = json.loads(host.file("/usr/local/cuda-13.5/dlbox-manifest.json").content_string)
    assert manifest["source"] == "pip_wheels" and manifest["version"] == "13.5.37"
    assert "dlbox.stack's own layout" in manifest["layout"] and "does not ship or support" in manifest["layout"]
    assert "nvidia-cuda-nvcc==13.5.37" in manifest["wheels"]
    for path in ("bin/nvcc", "bin/ptxas", "bin/cudafe++", "bin/nvlink", "nvvm/bin/cicc", "include/cuda_runtime.h",
                 "include/crt/host_config.h"):
        assert host.file(f"/usr/local/cuda-13.5/{path}").exists, path
    assert host.file("/usr/local/cuda-13.5/lib64").linked_to == "/usr/local/cuda-13.5/lib"
    # pip --target only: nothing went into the system's Python
    assert "nvidia" not in host.check_output("python3 -m pip list --disable-pip-version-check 2>/dev/null || true")


def test_real_nvcc_compiles_for_sm_89_and_sm_90(host):
    out = host.check_output("/usr/local/libexec/dlbox/cuda-verify.sh --nvcc /usr/local/cuda-13.5/bin/nvcc --release 13.5 "
                            "--arch 89 --arch 90 --source /usr/local/libexec/dlbox/cuda-verify.cu")
    print(out)
    assert "nvcc_release=13.5 nvcc_version=13.5.37" in out
    assert "compiled=yes" in out and "sass_sm_89=yes" in out and "sass_sm_90=yes" in out
    assert "ran=no" in out  # no GPU in the container


def test_wrong_release_is_caught(host):
    cmd = host.run("/usr/local/libexec/dlbox/cuda-verify.sh --nvcc /usr/local/cuda-13.5/bin/nvcc --release 13.0 --compile no")
    assert cmd.rc == 2 and "not 13.0" in cmd.stderr


def test_cuda_facts_see_all_three(host):
    states = {v: json.loads(host.file(f"/var/lib/dlbox/cuda/{v}.json").content_string)["source"] for v in ("12.6", "13.0", "13.5")}
    assert states == {"12.6": "nvidia_repo", "13.0": "nvidia_repo", "13.5": "pip_wheels"}


# --- check mode, refusals --------------------------------------------------------------------------
def test_check_mode_reports_the_switch_and_changes_nothing(host):
    check = record(host, "dlbox-check-switch_default.json")
    assert check["rc"] == 0, check["tail"]
    assert check["unchanged"], check["tail"]
    assert "Report the default that would be set (check mode): /usr/local/cuda-13.0" in check["changed"], check["changed"]


@pytest.mark.parametrize("case", ["unknown_version", "driver_too_old", "local_checksum_mismatch", "unsupported_host_compiler"])
def test_bad_input_refused_before_changes_naming_the_variable(host, case):
    result = {r["name"]: r for r in record(host, "dlbox-refusals.json")}[case]
    assert result["msg"] != "NOT REFUSED"
    assert result["expect"] in result["msg"], result["msg"]
    assert "Nothing was changed" in result["msg"] or "nothing was changed" in result["msg"]
    assert result["unchanged"]
