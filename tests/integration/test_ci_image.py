"""examples/Dockerfile builds a CI image with playbooks/ci_image.yml, from the local test image, offline.

What is real and what is a FIXTURE here:
- real: the Dockerfile and its two stages under Docker's own BuildKit (Debian's docker.io 20.10 with
  DOCKER_BUILDKIT=1, or docker-buildx), ansible-core from PyPI through the suite's cache (proxpi), Debian's
  packages through apt-cacher-ng (tests/scripts/test-cache.sh), the collection as its Galaxy tarball, the plan,
  the roles' apt and pip runs, and PyTorch 2.13.0 (the CPU build) from the python_env scenario's wheelhouse
  (tests/scripts/test-wheelhouse.sh) in the build context;
- FIXTURE: NVIDIA's CUDA repository (tests/aptrepo, cuda-debian12, served on 127.0.0.1): the CUDA 13.0 toolkit is
  a fake nvcc, the toolkit's config-common package and cuda-cudart-13-0 (a real ELF stand-in libcudart.so.13 that
  answers cudaRuntimeGetVersion() only), cuDNN 9.20.0.48 is a real ELF stand-in that answers cudnnGetVersion() only, libnccl2 lays no
  library. The GPUs are planned on paper (dlbox_plan_hardware: two H100 SXM, driver 580.95.05).
The image is built runtime-only (dlbox_ci_cuda: runtime) for compute capability 9.0: no nvcc, no driver
libraries, no Ansible in it. The network is 127.0.0.1 only (docker build --network host): the fixture server this
test starts and the suite's cache container. Figures (build times, size) go to build/ci-image-test/figures.json.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

import pytest

from conftest import ROOT, ansible_env, docker_ready

sys.path.insert(0, str(ROOT / "tests" / "aptrepo"))
import serve  # noqa: E402  pylint: disable=wrong-import-position

BASE = "dlbox-test:debian12"
TAG = "dlbox-ci-image-test:debian12"
WORK = ROOT / "build" / "ci-image-test"   # beside build/wheelhouse: the wheels are hard links, not copies
PLAN = {
    "dlbox_plan_hardware": {"gpus": ["H100 SXM", "H100 SXM"], "os": "debian-12", "arch": "x86_64",
                            "driver_version": "580.95.05"},
    "dlbox_plan_request": {"cuda": "13.0", "cudnn": "9.20.0.48", "pytorch": "2.13"},
    "dlbox_ci_cuda": "runtime",
    "dlbox_ci_cuda_archs": ["9.0"],
}


def _run(argv, timeout=600, check=True, **kw):
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=check, **kw)


def buildkit_client():
    """(argv prefix, extra env) of a docker client that builds with BuildKit, or None."""
    docker = shutil.which("docker")
    if docker and _run([docker, "buildx", "version"], check=False).returncode == 0:
        return [docker, "buildx", "build", "--load"], {}
    for client in (docker, "/usr/bin/docker"):
        if not client or not os.path.exists(client):
            continue
        version = _run([client, "version", "--format", "{{.Client.Version}}"], check=False).stdout.strip()
        if version.split(".")[0].isdigit() and int(version.split(".")[0]) < 23:   # BuildKit built in, no buildx
            return [client, "build"], {"DOCKER_BUILDKIT": "1"}
    return None


def _in_image(script, check=True):
    # --shm-size: dlbox-check's DataLoader step holds 77 MB in /dev/shm, more than Docker's 64 MB default (as training does)
    return _run(["docker", "run", "--rm", "--network", "none", "--shm-size", "1g", TAG, "bash", "-c", script], timeout=300,
                check=check)


@pytest.fixture(scope="module")
def image(collection_installed):
    reason = docker_ready(BASE)
    client = buildkit_client()
    if reason or client is None:
        pytest.skip(reason or "no docker client that builds with BuildKit (Debian's docker.io 20.10 or docker-buildx)")
    env = ansible_env()
    _run(["bash", str(ROOT / "tests/scripts/test-wheelhouse.sh")], env=env, timeout=1200)
    shutil.rmtree(WORK / "ctx", ignore_errors=True)
    (WORK / "ctx" / "wheelhouse").mkdir(parents=True)
    ctx = WORK / "ctx"
    _run([sys.executable, str(ROOT / "tests/aptrepo/build_repo.py"), str(ROOT / "tests/aptrepo/specs/cuda-debian12.yml"),
          str(WORK / "repos" / "cuda-debian12"), "--key-dir", str(WORK / "keys")])
    for wheel in (ROOT / "build" / "wheelhouse" / "python_env").glob("*.whl"):
        os.link(wheel, ctx / "wheelhouse" / wheel.name)
    shutil.copy(ROOT / "examples" / "Dockerfile", ctx / "Dockerfile")
    _run(["ansible-galaxy", "collection", "build", "--output-path", str(ctx), str(ROOT)], env=env)
    (tarball,) = ctx.glob("dlbox-stack-*.tar.gz")
    pid = str(os.getpid())
    _run(["bash", str(ROOT / "tests/scripts/test-cache.sh"), "start", pid], timeout=900)
    server, _thread = serve.start(str(WORK / "repos"), port=0)
    try:
        url = "http://127.0.0.1:%d/cuda-debian12/" % server.server_address[1]
        site = {
            "cuda_repo_base_url": url,
            "cuda_repo_key_url": url + "gpgkey",
            "cuda_repo_key_fingerprint": (WORK / "repos/cuda-debian12/cuda-archive-keyring.fingerprint").read_text().strip(),
            "python_env_environments": [{"name": "torch", "frameworks": ["pytorch"], "variant": "cpu", "torchvision": False}],
            "python_env_find_links": ["/srv/dlbox-context/wheelhouse"],
            "python_env_no_index": True,
            "python_env_pytorch_index": False,
        }
        (ctx / "ci-vars.yml").write_text(json.dumps(site, indent=2) + "\n")
        args = ["--progress", "plain", "--network", "host", "-t", TAG,
                "--secret", "id=ca_bundle,src=/etc/ssl/certs/ca-certificates.crt",
                "--build-arg", "BASE_IMAGE=" + BASE, "--build-arg", "DLBOX_PLAN=" + json.dumps(PLAN),
                "--build-arg", "DLBOX_VARS_FILE=ci-vars.yml", "--build-arg", "DLBOX_COLLECTION=" + tarball.name,
                "--build-arg", "PIP_INDEX_URL=http://127.0.0.1:3141/index/",
                "--build-arg", "http_proxy=http://127.0.0.1:3142", "--build-arg", "no_proxy=127.0.0.1,localhost",
                str(ctx)]
        build_env = dict(os.environ, **client[1])
        times, logs = [], []
        for extra in (["--no-cache"], []):        # first from nothing, then again with the same inputs
            start = time.monotonic()
            proc = _run(client[0] + extra + args, env=build_env, timeout=1200, check=False)
            times.append(round(time.monotonic() - start, 1))
            logs.append(proc.stdout + proc.stderr)
            (WORK / ("build-%d.log" % len(times))).write_text(logs[-1])
            assert proc.returncode == 0, logs[-1][-6000:]
    finally:
        server.shutdown()
        _run(["bash", str(ROOT / "tests/scripts/test-cache.sh"), "stop", pid], check=False)
    size = int(_run(["docker", "image", "inspect", "-f", "{{.Size}}", TAG]).stdout)
    figures = {"first_build_s": times[0], "cached_build_s": times[1], "image_bytes": size,
               "image_mb": round(size / 1e6), "base": BASE}
    (WORK / "figures.json").write_text(json.dumps(figures, indent=2) + "\n")
    print("\nci image: first build %.1f s, cached %.1f s, %d MB" % (times[0], times[1], size / 1e6))
    yield {"logs": logs, "figures": figures}
    _run(["docker", "image", "rm", "-f", TAG], check=False)


def test_the_second_build_comes_from_the_cache(image):
    cached = image["logs"][1]
    assert "ansible-playbook" in image["logs"][0] and "PLAY RECAP" in image["logs"][0]
    assert "PLAY RECAP" not in cached                    # the playbook did not run again
    assert cached.count("CACHED") >= 2


def test_the_label_holds_the_plan_and_the_image_its_resolution(image):
    label = _run(["docker", "image", "inspect", "-f", '{{ index .Config.Labels "org.dlbox.plan" }}', TAG]).stdout
    assert json.loads(label) == PLAN
    resolved = json.loads(_in_image("cat /etc/dlbox/plan.json").stdout)
    assert resolved["ok"] is True
    assert resolved["stack"]["cuda"]["version"] == "13.0"
    assert resolved["stack"]["cudnn"]["version"] == "9.20.0.48"
    assert resolved["stack"]["nccl"]["version"] == "2.27.7"
    # planned for the runners' GPUs given in the label, not for the build machine (which has none)
    assert resolved["host"]["planning"] is True
    assert [(g["cc"], g["count"]) for g in resolved["host"]["gpus"]] == [("9.0", 2)]


def test_the_framework_imports_and_the_check_reports_no_gpu(image):
    torch = _in_image("/opt/dlbox/envs/torch/bin/python -c 'import torch; print(torch.__version__)'")
    assert torch.stdout.strip() == "2.13.0+cpu"
    check = _in_image("/opt/dlbox/envs/torch/bin/dlbox-check --skip compile", check=False)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "no GPU visible" in check.stdout and "Driver:      none loaded" in check.stdout
    required = _in_image("/opt/dlbox/envs/torch/bin/dlbox-check --require-gpu --no-steps --no-matmul", check=False)
    assert required.returncode == 1, required.stdout + required.stderr       # EXIT_NO_GPU
    assert "no GPU" in required.stdout


def test_runtime_only_image_has_the_libraries_and_no_compiler_driver_or_ansible(image):
    out = _in_image(r"""
        set -u
        echo "cudnn=$(python3 -c 'import ctypes; print(ctypes.CDLL("libcudnn.so.9").cudnnGetVersion())')"
        cudart=/usr/local/cuda-13.0/targets/x86_64-linux/lib/libcudart.so.13
        ask='import ctypes, sys; v = ctypes.c_int(); lib = ctypes.CDLL(sys.argv[1])
        print(lib.cudaRuntimeGetVersion(ctypes.byref(v)), v.value)'
        echo "cudart=$(python3 -c "$(echo "$ask" | sed 's/^ *//')" "$cudart")"
        echo "packages=$(dpkg-query -W -f '${Package}=${Version} ' 'cuda-*' 'libcudnn*' 'libnccl*' 'nvidia-*' 'libcuda*' 2>/dev/null)"
        echo "manual=$(apt-mark showmanual | tr '\n' ' ')"
        echo "found=$(find / -xdev \( -name 'nvcc' -o -name 'libcuda.so*' -o -name 'libnvidia-ml.so*' -o -name 'ansible*' \
                     -o -name 'dlbox-ansible' \) 2>/dev/null | tr '\n' ' ')"
        echo "toolkit=$(cat /usr/local/cuda-13.0/version.json | tr -d '\n ')"
        echo "lists=$(ls /var/lib/apt/lists | tr '\n' ' ')"
        echo "caches=$(ls -d /root/.cache/pip /var/cache/dlbox /root/.ansible /tmp/dlbox-ansible 2>/dev/null | tr '\n' ' ')"
        echo "archs=$(. /etc/profile.d/dlbox-ci-image.sh; echo "$TORCH_CUDA_ARCH_LIST $CUDAARCHS")"
        """).stdout
    facts = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
    assert facts["cudnn"] == "92000"              # the FIXTURE libcudnn.so.9 loads and says 9.20.0
    assert facts["cudart"] == "0 13000"           # the FIXTURE CUDA runtime (cuda-cudart-13-0) stays and says 13.0
    packages = dict(p.split("=", 1) for p in facts["packages"].split())
    assert packages.get("libcudnn9-cuda-13") == "9.20.0.48-1"
    assert packages.get("libnccl2") == "2.27.7-1+cuda13.0"
    assert "cuda-toolkit-13-0-config-common" in packages        # the toolkit's record, not its compiler
    assert "cuda-nvcc-13-0" not in packages and "cuda-toolkit-13-0" not in packages
    assert not [p for p in packages if p.startswith(("nvidia-driver", "nvidia-open", "nvidia-kernel", "libcuda1"))]
    assert "cuda-cudart-13-0" in packages                       # the runtime library stays, runtime-only
    for kept in ("libcudnn9-cuda-13", "libnccl2", "cuda-toolkit-13-0-config-common", "cuda-cudart-13-0"):
        assert kept in facts["manual"].split()    # `apt-get autoremove` in the image keeps them
    assert facts["found"].strip() == "", facts["found"]          # no nvcc, libcuda.so*, libnvidia-ml.so*, Ansible
    assert '"version":"13.0' in facts["toolkit"]
    assert facts["lists"].split() == ["partial"]
    assert facts["caches"].strip() == ""
    assert facts["archs"] == "9.0 90"


def test_the_ca_bundle_secret_is_in_no_layer(image):
    history = _run(["docker", "history", "--no-trunc", "--format", "{{.CreatedBy}}", TAG]).stdout
    assert "BEGIN CERTIFICATE" not in history
    assert "/opt/dlbox-ansible/bin/ansible-playbook" in history     # Ansible ran, from the mounted stage
    # no mount point of the bake RUN is left, not even empty
    assert _in_image("ls -d /run/secrets /opt/dlbox-ansible /srv/dlbox-context 2>/dev/null | wc -l").stdout.strip() == "0"


@pytest.mark.parametrize("extra, names", [
    ({"dlbox_ci_cuda_archs": ["9.0"]}, "dlbox_plan_hardware"),                          # the build machine is never planned
    ({"dlbox_plan_hardware": {"gpus": []}, "dlbox_ci_cuda_archs": ["9.0"]}, "dlbox_plan_hardware"),
    ({"dlbox_plan_hardware": {"gpus": ["H100 SXM"]}, "dlbox_ci_cuda_archs": ["sm_90"]}, "dlbox_ci_cuda_archs"),
    ({"dlbox_plan_hardware": {"gpus": ["H100 SXM"]}, "dlbox_ci_cuda_archs": ["9.0"], "cuda_method": "pip_wheels"},
     "cuda_method"),
])
def test_bad_input_is_refused_before_anything(collection_installed, extra, names):
    proc = _run(["ansible-playbook", str(ROOT / "playbooks/ci_image.yml"), "-i", "localhost,", "-c", "local", "--check",
                 "-e", "ansible_python_interpreter=" + sys.executable, "-e", json.dumps(extra)],
                env=ansible_env(), check=False, timeout=120)
    assert proc.returncode == 2, proc.stdout
    assert "Check the CI image variables before anything else" in proc.stdout
    assert names in proc.stdout and "Nothing was changed." in proc.stdout
    assert "Plan the deep-learning stack" not in proc.stdout
