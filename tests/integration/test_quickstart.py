"""The README's quickstart, as a new user runs it, on fresh Debian 12 and Ubuntu 22.04 containers.

Each container starts from the test image with sudo removed (a Debian server set up with a root
password has none), installs git and make as the README says, receives this working tree (what
`git clone` would give, plus files not yet committed), then runs `make plan` and `make workstation`
twice. Ubuntu 22.04's python3 is 3.10, so tools/venv.sh must
bring python3.11 there.
"""

from __future__ import annotations

import os
import subprocess

import pytest

from conftest import ROOT, docker_ready

SCRIPT = r"""
set -eu
apt-get purge -y -qq sudo >/dev/null 2>&1 || true
apt-get update -qq >/dev/null
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq git make >/dev/null
mkdir -p /root/dlbox-stack && tar -C /root/dlbox-stack -xf /tmp/tree.tar
cd /root/dlbox-stack
make plan > /root/plan.log 2>&1 || { tail -40 /root/plan.log; exit 11; }
make workstation > /root/ws1.log 2>&1 || { tail -40 /root/ws1.log; exit 12; }
make workstation > /root/ws2.log 2>&1 || { tail -40 /root/ws2.log; exit 13; }
"""


def _sh(*args, check=True, timeout=1500):
    return subprocess.run(list(args), capture_output=True, text=True, check=check, timeout=timeout)


@pytest.fixture(params=["debian12", "ubuntu2204"])
def fresh_machine(request):
    image = f"dlbox-test:{request.param}"
    reason = docker_ready(image)
    if reason:
        pytest.skip(reason)
    name = f"dlbox-quickstart-{request.param}-{os.getpid()}"
    _sh("docker", "run", "-d", "--name", name, image, "sleep", "infinity")
    try:
        yield name
    finally:
        _sh("docker", "rm", "-f", name, check=False)


def _cat(name, path):
    return _sh("docker", "exec", name, "cat", path).stdout


def _send_tree(name, tmp_path):
    files = _sh("git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard").stdout
    listing = tmp_path / "files"
    listing.write_text("\n".join(f for f in files.split("\0") if f and (ROOT / f).exists()))
    _sh("tar", "-C", str(ROOT), "-cf", str(tmp_path / "tree.tar"), "-T", str(listing))
    _sh("docker", "cp", str(tmp_path / "tree.tar"), f"{name}:/tmp/tree.tar")


def test_readme_quickstart(fresh_machine, tmp_path):
    _send_tree(fresh_machine, tmp_path)
    proc = _sh("docker", "exec", fresh_machine, "bash", "-c", SCRIPT, check=False)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]

    plan = _cat(fresh_machine, "/root/plan.log")
    assert "No NVIDIA GPU was found on this host" in plan
    assert "failed=0" in plan

    first = _cat(fresh_machine, "/root/ws1.log")
    assert first.index("PLAY [Plan the deep-learning stack]") < first.index("PLAY [Deep-learning workstation]")
    assert "failed=0" in first and "changed=0" not in first.split("PLAY RECAP")[-1]

    again = _cat(fresh_machine, "/root/ws2.log").split("PLAY RECAP")[-1]
    assert "changed=0" in again and "failed=0" in again

    assert _sh("docker", "exec", fresh_machine, "dpkg", "-s", "build-essential").returncode == 0
