"""The fixture apt repositories (tests/aptrepo) work with a real apt, with signature checking.

Builds the CUDA, container-toolkit (and docker-ce) fixture repositories into a temporary folder,
mounts them read-only at /srv/fixture-repos in throw-away ``dlbox-test:debian12`` containers
(``sleep infinity``, no systemd) and uses them exactly as the roles will: a deb822 ``.sources``
file with ``Signed-By:`` (never ``trusted=yes``), ``apt-get update``, ``apt-get install``.
The container-toolkit repository is served over HTTP by tests/aptrepo/serve.py on 127.0.0.1
(the container shares the host's network namespace to reach it).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from conftest import ROOT, docker_ready

APTREPO = ROOT / "tests" / "aptrepo"
SPECS = APTREPO / "specs"
IMAGE = "dlbox-test:debian12"
MOUNT = "/srv/fixture-repos"
sys.path.insert(0, str(APTREPO))
import build_repo  # noqa: E402  pylint: disable=wrong-import-position

_NOT_READY = docker_ready(IMAGE)
pytestmark = pytest.mark.skipif(_NOT_READY is not None, reason=f"{_NOT_READY}; make test builds {IMAGE} with tests/images/build.sh")

APT = "apt-get -q -o Dpkg::Use-Pty=0"
# the source the fixture cuda-keyring writes, as NVIDIA's writes cuda-<distro>-<arch>.list
CUDA_KEYRING_LIST = "/etc/apt/sources.list.d/cuda-debian12-x86_64.list"


# ----------------------------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------------------------
class Container:
    """A throw-away dlbox-test container; always removed by the fixture that made it."""

    def __init__(self, name: str):
        self.name = name

    def sh(self, script: str, check: bool = True, timeout: int = 300) -> subprocess.CompletedProcess:
        proc = subprocess.run(
            ["docker", "exec", "-e", "DEBIAN_FRONTEND=noninteractive", self.name, "sh", "-ec", script],
            capture_output=True, text=True, check=False, timeout=timeout,
        )
        if check and proc.returncode != 0:
            pytest.fail(f"in {self.name}: {script}\nrc={proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
        return proc

    def write(self, path: str, text: str) -> None:
        proc = subprocess.run(["docker", "exec", "-i", self.name, "sh", "-ec", f"mkdir -p $(dirname {path}); cat > {path}"],
                              input=text, capture_output=True, text=True, check=False, timeout=60)
        assert proc.returncode == 0, proc.stderr


def deb822(uri: str, keyring: str, suite: str = "/", components: str = "") -> str:
    text = f"Types: deb\nURIs: {uri}\nSuites: {suite}\n"
    if components:
        text += f"Components: {components}\n"
    return text + f"Signed-By: {keyring}\n"


def build(spec: str, out: Path, key_dir: Path, **kw) -> dict:
    return build_repo.build(SPECS / spec, out, key_dir=key_dir, log=lambda _msg: None, **kw)


# ----------------------------------------------------------------------------------------------
# fixtures
# ----------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def repos(tmp_path_factory):
    """root/{cuda,container-toolkit,cuda-otherkey} built from the specs; keys in a separate folder."""
    root = tmp_path_factory.mktemp("fixture-repos")
    keys = tmp_path_factory.mktemp("fixture-keys")
    other = tmp_path_factory.mktemp("other-keys")
    stamps = {
        "cuda": build("cuda-debian12.yml", root / "cuda", keys),
        "container-toolkit": build("container-toolkit.yml", root / "container-toolkit", keys),
        # the same repository signed by a key that no Signed-By below names
        "cuda-otherkey": build("cuda-debian12.yml", root / "cuda-otherkey", other),
    }
    assert stamps["cuda"]["fingerprint"] != stamps["cuda-otherkey"]["fingerprint"]
    root.chmod(0o755)
    return {"root": root, "keys": keys, "stamps": stamps}


@pytest.fixture(scope="module")
def server(repos):
    """tests/aptrepo/serve.py on 127.0.0.1:<free port>, serving the repositories' root."""
    proc = subprocess.Popen([sys.executable, str(APTREPO / "serve.py"), str(repos["root"]), "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), proc.stderr.read()
        yield url.rstrip("/")
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture()
def container(repos):
    """A fresh dlbox-test:debian12 container with the repositories mounted read-only.

    Debian's own sources are moved aside so that `apt-get update` reads only the fixtures.
    """
    name = f"dlbox-aptrepo-test-{uuid.uuid4().hex[:10]}"
    run = subprocess.run(
        ["docker", "run", "-d", "--name", name, "--network", "host",
         "-v", f"{repos['root']}:{MOUNT}:ro", "--entrypoint", "sleep", IMAGE, "infinity"],
        capture_output=True, text=True, check=False, timeout=120,
    )
    try:
        assert run.returncode == 0, run.stderr
        box = Container(name)
        box.sh("mkdir -p /root/apt-sources-aside && mv /etc/apt/sources.list.d/* /root/apt-sources-aside/ 2>/dev/null || true;"
               " rm -f /etc/apt/sources.list")
        yield box
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True, check=False, timeout=120)


def assert_signed_update(box: Container) -> str:
    proc = box.sh(f"{APT} update 2>&1")
    out = proc.stdout
    for bad in ("NO_PUBKEY", "not signed", "W:", "E:", "Ign:"):
        assert bad not in out, f"{bad!r} in apt-get update output:\n{out}"
    # apt keeps the verified, still-signed InRelease of each source
    lists = box.sh("ls /var/lib/apt/lists/").stdout
    assert "InRelease" in lists, lists
    return out


# ----------------------------------------------------------------------------------------------
# tests
# ----------------------------------------------------------------------------------------------
def test_cuda_repo_verified_and_toolkit_installs(container, repos):
    box = container
    stamp = repos["stamps"]["cuda"]
    # the real flow: install cuda-keyring from the repository, then point a source at it
    box.sh(f"dpkg -i {MOUNT}/cuda/cuda-keyring_1.1-1_all.deb")
    # like NVIDIA's, it wrote its own source, for where the Molecule scenarios serve the fixture: set aside here
    box.sh(f"rm {CUDA_KEYRING_LIST}")
    fpr = box.sh("gpg --show-keys --with-colons /usr/share/keyrings/cuda-archive-keyring.gpg | awk -F: '/^fpr:/{print $10; exit}'")
    assert fpr.stdout.strip() == stamp["fingerprint"]
    assert (repos["root"] / "cuda" / "cuda-archive-keyring.fingerprint").read_text().strip() == stamp["fingerprint"]

    box.write("/etc/apt/sources.list.d/cuda.sources",
              deb822(f"file:{MOUNT}/cuda", "/usr/share/keyrings/cuda-archive-keyring.gpg"))
    assert_signed_update(box)
    policy = box.sh("apt-cache policy cuda-toolkit-12-4").stdout
    assert "12.4.1-1" in policy and "dlbox fixture" in box.sh("apt-cache policy").stdout

    box.sh(f"{APT} install -y cuda-toolkit-12-4")
    version = box.sh("/usr/local/cuda-12.4/bin/nvcc --version").stdout
    assert "Cuda compilation tools, release 12.4, V12.4.131" in version
    assert "FIXTURE" in version
    # the config-common postinst registered the /usr/local/cuda alternative
    assert "release 12.4" in box.sh("/usr/local/cuda/bin/nvcc --version").stdout
    assert box.sh("/usr/local/cuda-12.4/bin/nvcc x.cu", check=False).returncode == 1
    desc = box.sh("dpkg-query -W -f '${Description}\\n${Maintainer}' cuda-nvcc-12-4").stdout
    assert desc.startswith("FIXTURE:") and "dlbox.stack test fixtures" in desc


def test_cuda_keyring_writes_its_own_source_as_nvidias_does(container):
    """cuda-keyring 1.1-1 lays the key AND a one-line source (a conffile); a second source for that URL with
    another Signed-By stops apt altogether, as with NVIDIA's package."""
    box = container
    box.sh(f"dpkg -i {MOUNT}/cuda/cuda-keyring_1.1-1_all.deb")
    assert box.sh(f"cat {CUDA_KEYRING_LIST}").stdout == (
        "deb [signed-by=/usr/share/keyrings/cuda-archive-keyring.gpg] http://127.0.0.1:8089/cuda-debian12/ /\n")
    assert CUDA_KEYRING_LIST in box.sh("dpkg-query --showformat='${Conffiles}' --show cuda-keyring").stdout
    box.write("/etc/apt/sources.list.d/other.sources",
              deb822("http://127.0.0.1:8089/cuda-debian12/", "/etc/apt/keyrings/other.gpg"))
    proc = box.sh(f"{APT} update 2>&1", check=False)
    assert proc.returncode != 0
    assert "Conflicting values set for option Signed-By regarding source http://127.0.0.1:8089/cuda-debian12/" in proc.stdout


def test_driver_branch_pinning(container):
    box = container
    box.sh(f"dpkg -i {MOUNT}/cuda/cuda-keyring_1.1-1_all.deb")
    box.sh(f"rm {CUDA_KEYRING_LIST}")
    box.write("/etc/apt/sources.list.d/cuda.sources",
              deb822(f"file:{MOUNT}/cuda", "/usr/share/keyrings/cuda-archive-keyring.gpg"))
    assert_signed_update(box)
    # newest branch wins without a lock
    assert "Inst nvidia-open (620." in box.sh(f"{APT} install -s nvidia-open").stdout
    sim = box.sh(f"{APT} install -s cuda-drivers-fabricmanager-580").stdout
    assert "Inst nvidia-fabricmanager-580 (580.95.05-1" in sim, sim
    # apt does not backtrack two levels: `install cuda-drivers-580` alone fails while 595/620 exist;
    # naming the versions (as a role must) resolves
    v = "=580.95.05-1"
    sim = box.sh(f"{APT} install -s cuda-drivers-580 cuda-drivers{v} nvidia-driver{v} nvidia-driver-cuda{v} nvidia-kernel-dkms{v}").stdout
    assert "Inst cuda-drivers (580.95.05-1" in sim and "Inst nvidia-kernel-dkms (580.95.05-1" in sim, sim
    # the 590+ pinning package locks the branch (and then vetoes the 580 metas)
    box.sh(f"{APT} install -y nvidia-driver-pinning-595")
    sim = box.sh(f"{APT} install -s nvidia-open nvidia-fabricmanager").stdout
    assert "Inst nvidia-open (595.71.05-1" in sim and "Inst nvidia-fabricmanager (595.71.05-1" in sim, sim
    assert "Inst nvidia-kernel-open-dkms (595.71.05-1" in sim
    # like NVIDIA's, the pre-590 versioned meta does not lock its branch: its Depends are >= 580.65.06
    sim = box.sh(f"{APT} install -s cuda-drivers-580").stdout
    assert "Inst cuda-drivers-580 (580.95.05-1" in sim and "Inst nvidia-kernel-dkms (595.71.05-1" in sim, sim
    # 620 has no proprietary modules, so no cuda-drivers 620 either
    assert "620" not in box.sh("apt-cache madison cuda-drivers").stdout
    # markers only: nothing under /lib/modules
    box.sh(f"{APT} install -y nvidia-open")
    assert box.sh("find /lib/modules /usr/lib/modules -name 'nvidia*' 2>/dev/null | wc -l").stdout.strip() == "0"
    assert "FIXTURE" in box.sh("cat /usr/share/dlbox-fixture/nvidia-open").stdout


def test_container_toolkit_over_http_and_nvidia_ctk(container, server):
    box = container
    # the install guide's flow: fetch the ASCII-armored gpgkey and dearmor it
    box.sh(f"python3 -c \"import urllib.request,sys; sys.stdout.buffer.write(urllib.request.urlopen('{server}/container-toolkit/gpgkey').read())\""
           " | gpg --dearmor -o /usr/share/keyrings/nvidia-container-toolkit-keyring.gpg")
    box.write("/etc/apt/sources.list.d/nvidia-container-toolkit.sources",
              deb822(f"{server}/container-toolkit/stable/deb/$(ARCH)", "/usr/share/keyrings/nvidia-container-toolkit-keyring.gpg"))
    assert_signed_update(box)
    # 1.18.x is in the fixture too: pin the whole 1.17.8 set (its nvidia-ctk knows only docker)
    box.sh(f"{APT} install -y nvidia-container-toolkit=1.17.8-1 nvidia-container-toolkit-base=1.17.8-1"
           " libnvidia-container-tools=1.17.8-1 libnvidia-container1=1.17.8-1")
    assert "NVIDIA Container Toolkit CLI version 1.17.8" in box.sh("nvidia-ctk --version").stdout
    assert box.sh("dpkg-query -W -f '${Version}' libnvidia-container1").stdout == "1.17.8-1"

    box.write("/etc/docker/daemon.json", json.dumps({"log-driver": "journald", "runtimes": {"crun": {"path": "/usr/bin/crun"}}}))
    out = box.sh("nvidia-ctk runtime configure --runtime=docker 2>&1").stdout
    assert "Wrote updated config to /etc/docker/daemon.json" in out
    cfg = json.loads(box.sh("cat /etc/docker/daemon.json").stdout)
    assert cfg["log-driver"] == "journald"
    assert cfg["runtimes"]["crun"] == {"path": "/usr/bin/crun"}
    assert cfg["runtimes"]["nvidia"] == {"args": [], "path": "nvidia-container-runtime"}
    assert "default-runtime" not in cfg
    before = box.sh("sha256sum /etc/docker/daemon.json").stdout
    box.sh("nvidia-ctk runtime configure --runtime=docker")
    assert box.sh("sha256sum /etc/docker/daemon.json").stdout == before  # idempotent
    box.sh("nvidia-ctk runtime configure --runtime=docker --set-as-default")
    assert json.loads(box.sh("cat /etc/docker/daemon.json").stdout)["default-runtime"] == "nvidia"
    # no daemon.json yet: created; unsupported runtimes are refused
    box.sh("nvidia-ctk runtime configure --runtime=docker --config=/tmp/new/daemon.json")
    assert "nvidia" in json.loads(box.sh("cat /tmp/new/daemon.json").stdout)["runtimes"]
    assert box.sh("nvidia-ctk runtime configure --runtime=containerd", check=False).returncode == 2


def _update_with_cuda_keyring(box, repo):
    """apt-get update against fixture repo REPO, trusting only the CUDA fixture keyring."""
    box.sh(f"install -m 0644 {MOUNT}/cuda/cuda-archive-keyring.gpg /usr/share/keyrings/cuda-archive-keyring.gpg")
    box.write("/etc/apt/sources.list.d/cuda.sources",
              deb822(f"file:{MOUNT}/{repo}", "/usr/share/keyrings/cuda-archive-keyring.gpg"))
    return box.sh(f"{APT} update 2>&1", check=False)


def test_repo_signed_by_another_key_is_rejected(container):
    box = container
    proc = _update_with_cuda_keyring(box, "cuda-otherkey")
    assert proc.returncode != 0, proc.stdout
    assert "NO_PUBKEY" in proc.stdout or "not signed" in proc.stdout, proc.stdout
    assert "Candidate: (none)" in box.sh("apt-cache policy cuda-toolkit-12-4").stdout or \
        not box.sh("apt-cache policy cuda-toolkit-12-4").stdout.strip()


def test_tampered_index_is_rejected(container, repos):
    """Packages changed after signing: apt compares it with the signed Release hashes."""
    box = container
    bad = repos["root"] / "cuda-tampered"
    shutil.copytree(repos["root"] / "cuda", bad)
    with open(bad / "Packages", "a", encoding="utf-8") as fh:
        fh.write("\nPackage: evil\nVersion: 1\nArchitecture: all\nFilename: ./evil.deb\nSize: 1\nDescription: x\n")
    (bad / "Packages.gz").unlink()
    proc = _update_with_cuda_keyring(box, "cuda-tampered")
    assert proc.returncode != 0, proc.stdout
    assert "Hash Sum mismatch" in proc.stdout or "unexpected size" in proc.stdout, proc.stdout
    assert "evil" not in box.sh("apt-cache policy evil 2>&1").stdout.split("\n", 1)[-1]


def test_docker_ce_installs_a_real_engine(container, repos):
    """docker-ce (Debian's docker.io repacked) + containerd.io resolve against Debian's archive."""
    box = container
    try:
        build("docker-ce.yml", repos["root"] / "docker-ce", repos["keys"])
    except RuntimeError as exc:  # `apt-get download docker.io` needs Debian's archive on this host
        pytest.skip(f"docker-ce fixture not buildable here: {exc}")
    box.sh("mv /root/apt-sources-aside/* /etc/apt/sources.list.d/")
    box.sh(f"install -d -m 0755 /etc/apt/keyrings && install -m 0644 {MOUNT}/docker-ce/gpg /etc/apt/keyrings/docker.asc")
    box.write("/etc/apt/sources.list.d/docker.sources",
              deb822(f"file:{MOUNT}/docker-ce", "/etc/apt/keyrings/docker.asc", suite="bookworm", components="stable"))
    proc = box.sh(f"{APT} update 2>&1", check=False)
    if proc.returncode != 0 and "docker-ce" not in proc.stdout:
        pytest.skip(f"Debian's archive did not answer in the container:\n{proc.stdout[-2000:]}")
    assert proc.returncode == 0, proc.stdout
    box.sh(f"{APT} install -y --no-install-recommends docker-ce docker-ce-cli containerd.io "
           "docker-buildx-plugin docker-compose-plugin", timeout=600)
    state = box.sh("dpkg-query -W -f '${Package} ${Status}\\n' docker-ce containerd runc docker.io 2>&1 || true").stdout
    assert "docker-ce install ok installed" in state and "containerd install ok installed" in state, state
    assert "docker.io install ok installed" not in state, state
    assert "Docker version 20.10" in box.sh("docker --version").stdout
    assert box.sh("dockerd --version").returncode == 0
