# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The python_env role's decisions (plugins/plugin_utils/python_env_plan.py), on hand-made stacks, not today's data."""

from __future__ import annotations

import pytest

from ansible_collections.dlbox.stack.plugins.plugin_utils import python_env_plan as _python_env

VAR = "python_env_environments"
CPU_TORCH = {"version": "2.13.0", "variant": "cpu", "index_url": "https://idx.example/whl/cpu", "cuda": None,
             "torchvision": "0.28.0"}
CU13_TORCH = {"version": "2.14.1", "variant": "cu132", "index_url": "https://idx.example/whl/cu132", "cuda": "13.2",
              "torchvision": "0.29.2"}
TF = {"version": "2.21.0", "cuda": "12.5", "extra": "and-cuda"}
NO_GPU = {"gpu_count": 0, "arch": "x86_64"}
ONE_GPU = {"gpu_count": 1, "arch": "x86_64"}
# the golden Jetson AGX Orin plan's stack.pytorch (tests/unit/golden/jetson-agx-orin.json)
JETSON_TORCH = {"version": "2.5.0", "variant": "jp6-cu126", "index_url": "https://pypi.jetson-ai-lab.dev/jp6/cu126",
                "cuda": "12.6", "cudnn": "9.3.0", "torchvision": None, "torchaudio": None, "index_replaces_pypi": True}


@pytest.mark.parametrize("envs, words", [
    ([{"name": "a"}, {"name": "a"}], ["python_env_environments[1].name", "'a' is used twice", "[0]"]),
    ([{"name": "bad name"}], ["python_env_environments[0].name"]),
    ([{"name": "a", "frameworks": ["jax"]}], ["python_env_environments[0].frameworks"]),
    ([{"name": "a", "variant": "cuda"}], ["python_env_environments[0].variant", "cuXXX"]),
    ([{"name": "a", "python": 3.1}], ["python_env_environments[0].python", "quoted"]),
    ([{"name": "a", "frameworks": ["pytorch"], "pytorch": "latest"}], ["python_env_environments[0].pytorch"]),
    ([{"name": "a", "tensorflow": "2.21"}], ["python_env_environments[0].tensorflow", "not in its frameworks"]),
    ([{"name": "a", "packages": "numpy"}], ["python_env_environments[0].packages"]),
    ([{"name": "a", "colour": "red"}], ["unknown keys colour"]),
    ([{"name": "a", "gpu_required": "yes"}], ["python_env_environments[0].gpu_required"]),
    ([{"name": "a", "jupyter_kernel": "yes"}], ["python_env_environments[0].jupyter_kernel"]),
    ({"name": "a"}, ["must be a list"]),
    (["a"], ["python_env_environments[0] must be a mapping"]),
])
def test_bad_environments_are_refused_naming_the_key(envs, words):
    errors = _python_env.check_environments(envs, VAR)
    assert errors
    for word in words:
        assert any(word in e for e in errors), errors


def test_good_environments_pass():
    envs = [{"name": "torch", "frameworks": ["pytorch"], "pytorch": "2.13", "variant": "cpu", "python": "3.11",
             "packages": ["numpy<3"], "jupyter_kernel": True, "gpu_required": False},
            {"name": "tf.2", "frameworks": ["tensorflow"], "tensorflow": "2.21.0"}]
    assert _python_env.check_environments(envs, VAR) == []


@pytest.mark.parametrize("env, host_request, expected", [
    ({"name": "a", "frameworks": ["pytorch"]}, {"pytorch": "2.13"}, None),
    ({"name": "a", "frameworks": ["pytorch"], "variant": "auto"}, {}, None),
    ({"name": "a", "frameworks": ["pytorch"], "pytorch": "2.9"}, {"cuda": "12.4", "driver_branch": 550},
     {"pytorch": "2.9", "driver_branch": 550}),
    ({"name": "a", "frameworks": ["pytorch"], "variant": "cu126", "python": "3.12"}, {"pytorch": "2.13"},
     {"pytorch": "2.13", "pytorch_variant": "cu126", "python": "3.12"}),
    ({"name": "a", "frameworks": ["tensorflow"], "python": "3.11"}, {}, {"tensorflow": "latest", "python": "3.11"}),
])
def test_stack_request_re_decides_only_what_the_environment_sets(env, host_request, expected):
    assert _python_env.stack_request(env, host_request) == expected


def test_needs_tensorflow_plan():
    assert _python_env.needs_tensorflow_plan({"frameworks": ["tensorflow"]}, {"tensorflow": None})
    assert not _python_env.needs_tensorflow_plan({"frameworks": ["tensorflow"]}, {"tensorflow": TF})
    assert not _python_env.needs_tensorflow_plan({"frameworks": ["pytorch"]}, {})


def test_cpu_torch_request_pins_the_local_label():
    out = _python_env.environment_request({"name": "t", "frameworks": ["pytorch"], "packages": [" six==1.17.0 "]},
                                          {"python": {"version": "3.11"}, "pytorch": CPU_TORCH}, NO_GPU, VAR + "[0]")
    assert out["errors"] == []
    assert out["requirements"] == ["torch==2.13.0+cpu", "torchvision==0.28.0+cpu", "six==1.17.0"]
    assert out["python"] == "3.11" and out["modules"] == ["torch"] and out["gpu_expected"] is False


@pytest.mark.parametrize("env, expected", [
    ({}, ["torch==2.9.1", "torchvision==0.24.1", "torchaudio==2.9.1"]),
    ({"torchaudio": False}, ["torch==2.9.1", "torchvision==0.24.1"]),
    ({"torchvision": False}, ["torch==2.9.1", "torchaudio==2.9.1"]),
])
def test_torchaudio_follows_the_plan_at_its_version_and_variant(env, expected):
    torch = {"version": "2.9.1", "variant": "pypi", "index_url": None, "cuda": "12.8", "torchvision": "0.24.1",
             "torchaudio": "2.9.1"}
    out = _python_env.environment_request(dict({"name": "t", "frameworks": ["pytorch"]}, **env),
                                          {"python": {"version": "3.11"}, "pytorch": torch}, NO_GPU, "x")
    assert out["errors"] == [] and out["requirements"] == expected
    cpu = dict(torch, variant="cpu")
    out = _python_env.environment_request({"name": "t", "frameworks": ["pytorch"]},
                                          {"python": {"version": "3.11"}, "pytorch": cpu}, NO_GPU, "x")
    assert out["requirements"] == ["torch==2.9.1+cpu", "torchvision==0.24.1+cpu", "torchaudio==2.9.1+cpu"]


def test_torchaudio_must_be_a_boolean():
    errors = _python_env.check_environments([{"name": "t", "frameworks": ["pytorch"], "torchaudio": "yes"}], VAR)
    assert any("torchaudio must be true or false" in e for e in errors)


def test_pypi_torch_has_no_label_and_no_torchvision_when_off():
    torch = dict(CU13_TORCH, variant="pypi", index_url=None)
    out = _python_env.environment_request({"name": "t", "frameworks": ["pytorch"], "torchvision": False},
                                          {"python": {"version": "3.12"}, "pytorch": torch}, ONE_GPU, "x")
    assert out["requirements"] == ["torch==2.14.1"]
    assert out["gpu_expected"] is True


@pytest.mark.parametrize("host, variant, arch, requirement", [
    (ONE_GPU, "auto", "x86_64", "tensorflow[and-cuda]==2.21.0"),
    (NO_GPU, "auto", "x86_64", "tensorflow-cpu==2.21.0"),
    (ONE_GPU, "cpu", "x86_64", "tensorflow-cpu==2.21.0"),
    ({"gpu_count": 0, "arch": "aarch64"}, "auto", "aarch64", "tensorflow==2.21.0"),
])
def test_tensorflow_package_follows_gpu_and_arch(host, variant, arch, requirement):
    out = _python_env.environment_request({"name": "tf", "frameworks": ["tensorflow"], "variant": variant},
                                          {"python": {"version": "3.11"}, "tensorflow": TF}, host, "x")
    assert out["requirements"] == [requirement]
    assert out["modules"] == ["tensorflow"]


def test_two_cuda_majors_in_one_environment_are_refused_with_the_reason():
    out = _python_env.environment_request({"name": "both", "frameworks": ["pytorch", "tensorflow"]},
                                          {"python": {"version": "3.11"}, "pytorch": CU13_TORCH, "tensorflow": TF},
                                          ONE_GPU, VAR + "[2]")
    assert len(out["errors"]) == 1
    error = out["errors"][0]
    for word in ("python_env_environments[2]", "'both'", "CUDA 12 and 13", "PyTorch 2.14.1 cu132 carries CUDA 13",
                 "tensorflow[and-cuda] 2.21.0 carries CUDA 12", "own environment"):
        assert word in error, error


def test_cpu_torch_beside_tensorflow_gpu_is_fine():
    out = _python_env.environment_request({"name": "both", "frameworks": ["pytorch", "tensorflow"]},
                                          {"python": {"version": "3.11"}, "pytorch": CPU_TORCH, "tensorflow": TF},
                                          ONE_GPU, "x")
    assert out["errors"] == [] and out["cuda_majors"] == [12]


def test_missing_framework_or_python_in_the_stack_is_an_error():
    out = _python_env.environment_request({"name": "t", "frameworks": ["pytorch", "tensorflow"]}, {}, NO_GPU, "v[0]")
    assert len(out["errors"]) == 3
    assert all("v[0]" in e for e in out["errors"])


def test_request_id_follows_the_request_only():
    stack = {"python": {"version": "3.11"}, "pytorch": CPU_TORCH}
    env = {"name": "t", "frameworks": ["pytorch"]}
    one = _python_env.environment_request(env, stack, NO_GPU, "x")["request_id"]
    assert one == _python_env.environment_request(dict(env, owner="alice"), stack, NO_GPU, "x")["request_id"]
    assert one != _python_env.environment_request(dict(env, packages=["six"]), stack, NO_GPU, "x")["request_id"]
    assert one != _python_env.environment_request(env, stack, NO_GPU, "x", "numpy\n")["request_id"]
    assert one != _python_env.environment_request(env, dict(stack, python={"version": "3.12"}), NO_GPU, "x")["request_id"]


@pytest.mark.parametrize("options, pytorch, expected", [
    ({}, None, []),
    ({}, CPU_TORCH, ["--extra-index-url", "https://idx.example/whl/cpu"]),
    ({"pytorch_index": False}, CPU_TORCH, []),
    ({"pytorch_index_url": "https://mirror.lab/whl/cpu"}, CPU_TORCH, ["--extra-index-url", "https://mirror.lab/whl/cpu"]),
    ({"pytorch_index_base_url": "https://mirror.lab/pt/whl/"}, CPU_TORCH,
     ["--extra-index-url", "https://mirror.lab/pt/whl/" + CPU_TORCH["variant"]]),
    ({"pytorch_index_base_url": "https://mirror.lab/pt/whl", "pytorch_index_url": "https://exact.lab/cpu"}, CPU_TORCH,
     ["--extra-index-url", "https://exact.lab/cpu"]),
    ({"index_url": "https://pypi.lab/simple", "extra_index_urls": ["https://more.lab/simple"], "proxy": "http://p:3128"},
     None, ["--index-url", "https://pypi.lab/simple", "--extra-index-url", "https://more.lab/simple", "--proxy", "http://p:3128"]),
    ({"no_index": True, "find_links": ["/srv/wheels", "https://wheels.lab/"], "index_url": "https://ignored"}, CPU_TORCH,
     ["--no-index", "--find-links", "/srv/wheels", "--find-links", "https://wheels.lab/"]),
    ({}, dict(CU13_TORCH, variant="pypi", index_url=None), []),
    # Jetson AI Lab's index serves PyPI's packages too, and torch 2.5.0 under PyPI's own version: pip's index
    ({}, JETSON_TORCH, ["--index-url", "https://pypi.jetson-ai-lab.dev/jp6/cu126"]),
    ({"index_url": "https://pypi.lab/simple"}, JETSON_TORCH,
     ["--index-url", "https://pypi.jetson-ai-lab.dev/jp6/cu126", "--extra-index-url", "https://pypi.lab/simple"]),
    ({"pytorch_index_url": "https://jetson-mirror.lab/jp6/cu126"}, JETSON_TORCH,
     ["--index-url", "https://jetson-mirror.lab/jp6/cu126"]),
    # the site's download.pytorch.org mirror has no jp6-cu126 folder: it is not the Jetson index's mirror
    ({"pytorch_index_base_url": "https://mirror.lab/pt/whl"}, JETSON_TORCH,
     ["--index-url", "https://pypi.jetson-ai-lab.dev/jp6/cu126"]),
])
def test_pip_index_args(options, pytorch, expected):
    assert _python_env.pip_index_args(options, pytorch) == expected


@pytest.mark.parametrize("options, pytorch, expected", [
    ({}, JETSON_TORCH, "[global]\nindex-url = https://pypi.jetson-ai-lab.dev/jp6/cu126\n"),
    ({"pytorch_index_url": "http://127.0.0.1:8089/jp6/cu126", "index_url": "https://pypi.lab/simple",
      "extra_index_urls": ["https://more.lab/simple"], "proxy": "http://p:3128", "find_links": ["/srv/w"]}, JETSON_TORCH,
     "[global]\nindex-url = http://127.0.0.1:8089/jp6/cu126\n"
     "extra-index-url = https://pypi.lab/simple\n    https://more.lab/simple\n"),
    # an index beside PyPI (download.pytorch.org) leaves pip's own configuration alone, and so does a wheelhouse
    ({}, CPU_TORCH, ""),
    ({}, None, ""),
    ({"no_index": True, "find_links": ["/srv/w"]}, JETSON_TORCH, ""),
    ({"pytorch_index": False}, JETSON_TORCH, ""),
])
def test_venv_pip_conf_only_where_the_index_replaces_pypi(options, pytorch, expected):
    assert _python_env.venv_pip_conf(_python_env.pip_index_args(options, pytorch), pytorch) == expected


@pytest.mark.parametrize("filename, expected", [
    ("torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl", ("torch", "2.13.0+cpu")),
    ("typing_extensions-4.16.0-py3-none-any.whl", ("typing-extensions", "4.16.0")),
    ("/x/y/MarkupSafe-3.0.4-cp311-cp311-manylinux2014_x86_64.manylinux_2_17_x86_64.whl", ("markupsafe", "3.0.4")),
    ("nvidia_cublas_cu12-12.9.1.4-py3-none-manylinux_2_27_x86_64.whl", ("nvidia-cublas-cu12", "12.9.1.4")),
    ("six-1.17.0.tar.gz", ("six", "1.17.0")),
    ("zope.interface-7.0.zip", ("zope-interface", "7.0")),
    ("README.txt", None),
    ("bad.whl", None),
])
def test_parse_dist_filename(filename, expected):
    assert _python_env.parse_dist_filename(filename) == expected


def test_cuda_majors_of_wheels_reads_suffixes_and_unsuffixed_versions():
    dists = [("nvidia-cublas-cu12", "12.9.1.4"), ("nvidia_cudnn_cu12", "9.3.0.75"), ("nvidia-cuda-runtime", "13.0.96"),
             ("nvidia-nvjitlink", "13.0.88"), ("cuda-toolkit", "13.0.3"), ("nvidia-ml-py", "13.580.82"),
             ("nvidia-cusparselt-cu13", "0.8.1"), ("nvidia-nvshmem", "3.4.5"), ("numpy", "2.3.0")]
    majors = _python_env.cuda_majors_of_wheels(dists, [11, 12, 13], neutral=["nvidia_ml_py"])
    assert majors == {12: ["nvidia-cublas-cu12", "nvidia-cudnn-cu12"],
                      13: ["cuda-toolkit", "nvidia-cuda-runtime", "nvidia-cusparselt-cu13", "nvidia-nvjitlink"]}


def test_wheel_mix_error():
    assert _python_env.wheel_mix_error({13: ["nvidia-cuda-runtime"]}, VAR, "t") is None
    error = _python_env.wheel_mix_error({12: ["nvidia-cublas-cu12"], 13: ["a", "b", "c", "d", "e"]}, VAR, "t")
    assert "two CUDA majors" in error and "CUDA 12: nvidia-cublas-cu12" in error and "CUDA 13: a, b, c, d ..." in error
    assert "nothing was installed" in error


def test_parse_sha256sum():
    text = ("%s  /e/dlbox/wheels/six-1.17.0-py2.py3-none-any.whl\n%s *b.whl\nsha256sum: x: No such file\n"
            % ("a" * 64, "b" * 64))
    assert _python_env.parse_sha256sum(text) == {"six-1.17.0-py2.py3-none-any.whl": "a" * 64, "b.whl": "b" * 64}


def test_render_lock_pins_every_installed_dist_with_its_hash():
    installed = [{"name": "torch", "version": "2.13.0+cpu"}, {"name": "Jinja2", "version": "3.1.6"},
                 {"name": "pip", "version": "23.0.1"}, {"name": "setuptools", "version": "84.2.1"}]
    hashes = {"torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl": "1" * 64,
              "jinja2-3.1.6-py3-none-any.whl": "2" * 64, "setuptools-84.2.1-py3-none-any.whl": "3" * 64}
    lock = _python_env.render_lock(installed, hashes, header=["env t"])
    assert lock["missing"] == []
    assert lock["text"] == ("# env t\n"
                            "jinja2==3.1.6 \\\n    --hash=sha256:%s\n"
                            "setuptools==84.2.1 \\\n    --hash=sha256:%s\n"
                            "torch==2.13.0+cpu \\\n    --hash=sha256:%s\n" % ("2" * 64, "3" * 64, "1" * 64))


def test_render_lock_finds_a_file_whose_local_label_pip_normalises():
    # NVIDIA's Jetson wheel (developer.download.nvidia.com/compute/redist/jp/v61/pytorch/) is named with "nv24.08";
    # pip lists it installed as PEP 440 writes it, "nv24.8" (found by molecule/edge, issue 52)
    hashes = {"torch-2.5.0a0+872d972e41.nv24.08.17622132-cp310-cp310-linux_aarch64.whl": "ab" * 32}
    lock = _python_env.render_lock([{"name": "torch", "version": "2.5.0a0+872d972e41.nv24.8.17622132"}], hashes)
    assert lock["missing"] == []
    assert "torch==2.5.0a0+872d972e41.nv24.8.17622132 \\\n    --hash=sha256:" + "ab" * 32 in lock["text"]


def test_render_lock_reports_what_has_no_hash():
    lock = _python_env.render_lock([{"name": "six", "version": "1.17.0"}, {"name": "pip", "version": "25"}],
                                   {"six-1.16.0-py2.py3-none-any.whl": "a" * 64})
    assert lock["missing"] == ["six==1.17.0"]


def test_render_lock_keeps_several_files_of_one_version():
    lock = _python_env.render_lock([{"name": "six", "version": "1.17.0"}],
                                   {"six-1.17.0-py2.py3-none-any.whl": "b" * 64, "six-1.17.0.tar.gz": "a" * 64})
    assert lock["text"] == "six==1.17.0 \\\n    --hash=sha256:%s \\\n    --hash=sha256:%s\n" % ("a" * 64, "b" * 64)


def test_wheel_cuda_summary():
    installed = [{"name": "nvidia-cuda-runtime-cu12", "version": "12.5.82"}, {"name": "nvidia-cudnn-cu12", "version": "9.3.0.75"},
                 {"name": "nvidia-nccl-cu12", "version": "2.27.7"}, {"name": "tensorflow", "version": "2.21.0"}]
    summary = _python_env.wheel_cuda_summary(installed, [12, 13])
    assert summary["cuda"] == "12.5.82" and summary["cudnn"] == "9.3.0.75" and summary["nccl"] == "2.27.7"
    assert summary["majors"] == [12] and "tensorflow" not in summary["nvidia"]
    assert _python_env.wheel_cuda_summary([{"name": "torch", "version": "2.13.0+cpu"}], [12])["cuda"] is None


def test_driver_floors():
    floors = _python_env.driver_floors([{"major": 12, "driver_min": "525.60.13"}, {"major": "13", "driver_min": "580.65.06"}])
    assert floors == {"12": "525.60.13", "13": "580.65.06"}
    assert _python_env.driver_floor("13.2", floors) == "580.65.06"
    assert _python_env.driver_floor(None, floors) is None
    assert _python_env.driver_floor("11.8", floors) is None


def test_a_jetson_expects_its_gpu():
    """A Jetson's GPU is part of the module: the plan's host has gpu_count 0 (no PCI GPU) and a jetson model."""
    jetson_host = {"gpu_count": 0, "arch": "aarch64", "jetson": {"model": "Jetson AGX Orin"}}
    stack = {"python": {"version": "3.10"}, "pytorch": JETSON_TORCH}
    env = {"name": "torch", "frameworks": ["pytorch"]}
    out = _python_env.environment_request(env, stack, jetson_host, "v[0]")
    assert out["errors"] == [] and out["requirements"] == ["torch==2.5.0"]
    assert out["gpu_expected"] is True
    assert _python_env.environment_request(env, stack, dict(jetson_host, jetson=None), "v[0]")["gpu_expected"] is False
