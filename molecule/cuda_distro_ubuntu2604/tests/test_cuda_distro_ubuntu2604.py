"""Ubuntu 26.04's REAL cuda-toolkit (Canonical's CUDA 13.1, /usr/local/cuda-13.1), installed by cuda_method: distro."""


def test_canonicals_cuda_toolkit_installed_not_debians(host):
    assert host.package("cuda-toolkit-13-1").is_installed   # the versioned meta the data names (not cuda-toolkit)
    assert host.package("cuda-toolkit-13-1").version.startswith("13.1.")
    assert not host.package("nvidia-cuda-toolkit").is_installed
    assert host.run("dpkg -S /usr/local/cuda-13.1/bin/nvcc").stdout.startswith("cuda-nvcc-13-1:")


def test_its_nvcc_is_13_1_and_builds_and_links_for_sm_89(host):
    assert "release 13.1" in host.check_output("/usr/local/cuda-13.1/bin/nvcc --version")
    out = host.check_output("/usr/local/libexec/dlbox/cuda-verify.sh --nvcc /usr/local/cuda-13.1/bin/nvcc --release 13.1 "
                            "--arch 89 --source /usr/local/libexec/dlbox/cuda-verify.cu")
    print(out)
    assert "compiled=yes" in out and "sass_sm_89=yes" in out


def test_login_shell_finds_its_nvcc(host):
    out = host.check_output("bash -lc 'command -v nvcc; nvcc --version | grep release'")
    nvcc, release = out.splitlines()
    assert nvcc.startswith("/usr/local/cuda") and "release 13.1" in release
