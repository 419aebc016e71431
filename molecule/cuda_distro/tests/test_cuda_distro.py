"""Debian 12's REAL nvidia-cuda-toolkit (11.8) beside NVIDIA's real nvcc 13.5 (pip wheels) as /usr/local/cuda."""


def test_debian_toolkit_installed_in_usr_bin(host):
    assert host.package("nvidia-cuda-toolkit").is_installed
    assert "release 11.8" in host.check_output("/usr/bin/nvcc --version")


def test_debian_nvcc_builds_and_links_a_program_with_ccbin(host):
    out = host.check_output("/usr/local/libexec/dlbox/cuda-verify.sh --nvcc /usr/bin/nvcc --release 11.8 --arch 89 "
                            "--ccbin /usr/bin/g++-11 --source /usr/local/libexec/dlbox/cuda-verify.cu")
    print(out)
    assert "compiled=yes" in out and "sass_sm_89=yes" in out
    assert "host_compiler=/usr/bin/g++-11 gcc=11." in out


def test_precedence_in_a_login_shell(host):
    # /usr/local/cuda/bin goes first: the default toolkit's nvcc wins; Debian's stays at /usr/bin/nvcc
    out = host.check_output("bash -lc 'command -v nvcc; echo $CUDA_HOME; nvcc --version | grep release'")
    nvcc, cuda_home, release = out.splitlines()
    assert nvcc == "/usr/local/cuda/bin/nvcc"
    assert cuda_home == "/usr/local/cuda"
    assert "release 13.5" in release
    assert "release 11.8" in host.check_output("bash -lc '/usr/bin/nvcc --version'")


def test_no_global_ld_library_path(host):
    assert host.check_output("bash -lc 'echo ${LD_LIBRARY_PATH-unset}'") == "unset"
