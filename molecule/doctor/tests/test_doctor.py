"""playbooks/doctor.yml on a live test container without a GPU: a report with "no GPU" as a finding (not a
failure, no error), written on the controller, and a host that the run did not change. The raw captures
(dlbox-collect --stdout, kept by converge.yml) show the torch probe run with each environment's own Python and
with the login environment of dlbox_doctor_user."""

import json
import os
import re
from pathlib import Path

import pytest

EPHEMERAL = Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"])


@pytest.fixture(scope="module")
def name(host):
    return host.backend.get_hostname()


@pytest.fixture(scope="module")
def report(name):
    return json.loads((EPHEMERAL / "reports" / "doctor" / f"{name}.json").read_text())


@pytest.fixture(scope="module")
def captures(name):
    """{capture name: text} from the stream the doctor read (CR LF: the script module runs under ssh -tt)."""
    stream = (EPHEMERAL / f"captures-{name}.txt").read_text().replace("\r\n", "\n")
    parts = re.split(r"^===== dlbox-collect: ([\w.+-]+) =====$", stream, flags=re.M)
    return {parts[i]: parts[i + 1].strip("\n") for i in range(1, len(parts), 2)}


@pytest.fixture(scope="module")
def debian(host):
    return host.system_info.distribution == "debian"


def test_no_gpu_is_a_warning_finding_not_an_error(report, debian):
    expected = [("no-gpu", "warning")]
    if debian:  # PyTorch in /opt/dlbox/envs (prepare.yml) beside Docker's 64 MB /dev/shm: the DataLoader's risk, rightly
        expected.append(("shm-too-small", "warning"))
    assert [(f["id"], f["severity"]) for f in report["findings"]] == expected
    if debian:
        assert report["findings"][1]["evidence"][0].startswith("/dev/shm is 64 MiB (df: ")
    # lsmod without /proc/modules (this kernel has no module support) is "not available", not an unexplained error; a
    # CPU-only torch where the PCI list shows no GPU is what no-gpu advises, not a finding
    assert report["counts"]["error"] == 0
    assert report["ok"] is True


def test_the_live_captures_were_recognised(report):
    kinds = {kind for capture in report["captures"] for kind in capture["kinds"]}
    assert {"os-release", "uname", "pci-sysfs", "dpkg", "dlbox-collect-missing"} <= kinds
    assert report["source"] == "live host (dlbox-collect --stdout)"
    assert "nvidia-smi is not installed" in report["findings"][0]["evidence"]


def test_what_was_not_checked_is_named(report):
    # no nvidia-smi: nothing says what the GPUs' memory, persistence or clocks are
    not_checked = {item["id"] for item in report["not_checked"]}
    assert {"persistence-off", "gpu-memory-too-small", "gpu-throttled", "ecc-retired-or-remapped"} <= not_checked


def test_the_doctor_changed_nothing_on_the_host(name):
    digests = json.loads((EPHEMERAL / f"digests-{name}.json").read_text())
    assert len(digests["before"]) == 64
    assert digests["before"] == digests["after"]


def test_nothing_of_the_collector_is_left_on_the_host(host):
    assert not host.file("/usr/local/bin/dlbox-collect").exists
    assert host.run("find / -xdev -name 'dlbox-collect*' -not -path '/proc/*' 2>/dev/null").stdout.strip() == ""


def test_the_torch_probe_ran_with_the_environments_own_python(captures, debian):
    if not debian:
        pytest.skip("the test wheelhouse's torch is cp311: only Debian 12 has its environment (prepare.yml)")
    probe = captures["torch-probe-env-torch"].splitlines()
    assert probe[0] == "$ /opt/dlbox/envs/torch/bin/python -u - < " + probe[0].rsplit(" ", 1)[1]
    assert probe[1].startswith("python /opt/dlbox/envs/torch/bin/python 3.11.")
    assert "torch 2.13.0+cpu cuda None available False" in probe
    assert [line for line in probe if line.startswith("module ")][0].startswith("module /opt/dlbox/envs/torch/")
    # the system python3, which Ansible's shell runs, has no torch: the probe before this issue saw nothing
    assert "dlbox-collect: not available: torch (no module torch in /usr)" in captures["torch-probe"]


def test_an_environment_named_by_the_variable_is_probed_and_says_it_has_no_torch(captures):
    probe = captures["torch-probe-env-exp"].splitlines()
    assert probe[0].startswith("$ /srv/venvs/exp/bin/python -u - < ")
    assert probe[1].startswith("python /srv/venvs/exp/bin/python 3.")
    assert probe[2] == "dlbox-collect: not available: torch (no module torch in /srv/venvs/exp)"
    assert "Traceback" not in captures["torch-probe-env-exp"]


def test_the_user_probe_sees_the_users_login_environment(captures, debian):
    env = dict(line.split("=", 1) for line in captures["user-env-labuser"].splitlines()[1:])
    assert captures["user-env-labuser"].startswith("$ runuser -l labuser -c ")
    path = env["PATH"].split(":")
    assert path[0] == "/home/labuser/.dlbox-test-marker/bin"  # set after ~/.bashrc's "not interactive" guard
    assert env["CUDA_VISIBLE_DEVICES"] == "GPU-5ad0a5b0-fixture"
    assert env["LD_LIBRARY_PATH"] == "/usr/local/cuda/lib64"
    probe = captures["user-torch-probe-labuser"]
    if debian:  # ~/.bashrc activates the torch environment: the user's python3 is that environment's
        assert path[1].startswith("/opt/dlbox/envs/") and env["VIRTUAL_ENV"].startswith("/opt/dlbox/envs/")
        assert re.search(r"^python /opt/dlbox/envs/\S+/bin/python3 3\.11\.", probe, re.M)
        assert "\ntorch 2.13.0+cpu cuda None available False" in probe
    else:
        assert "\npython /usr/bin/python3 3." in probe and "not available: torch" in probe
    assert "job control" not in probe and "Traceback" not in probe


def test_the_host_captures_each_start_with_their_command(captures):
    expected = {
        "proc-cmdline": "$ cat /proc/cmdline",
        "dev-shm": "$ df -B1 /dev/shm",
        "cgroup-fs": "$ stat -fc %T /sys/fs/cgroup",
        "dev-nvidia": "$ ls -l /dev/nvidia*",
        "nvidia-container-cli-info": "$ nvidia-container-cli info",
        "nvidia-container-runtime-config": "$ cat /etc/nvidia-container-runtime/config.toml",
        "nvidia-smi-q-ecc-temperature-performance": "$ nvidia-smi -q -d ECC,TEMPERATURE,PERFORMANCE",
        "nvidia-smi-topo-p2p": "$ nvidia-smi topo -p2p r",
    }
    assert {name: captures[name].splitlines()[0] for name in expected} == expected
    assert captures["pci-aer"].splitlines()[0].startswith("$ grep -H . /sys/bus/pci/devices/")
    assert captures["pci-acs"].splitlines()[0].startswith("$ lspci -vvv -s ")


def test_what_the_container_lacks_is_recorded_not_fatal(captures):
    assert captures["nvidia-smi-topo-p2p"].endswith("dlbox-collect: command not found: nvidia-smi")
    assert captures["nvidia-container-cli-info"].endswith("dlbox-collect: command not found: nvidia-container-cli")
    assert "No such file or directory" in captures["dev-nvidia"]
    assert captures["pci-aer"].endswith("(no device of vendor 0x10de in /sys/bus/pci/devices)")
    shm = captures["dev-shm"].splitlines()
    assert shm[1].split()[:2] == ["Filesystem", "1B-blocks"] and shm[2].split()[-1] == "/dev/shm"
    assert captures["cgroup-fs"].splitlines()[1] in ("cgroup2fs", "tmpfs")
    assert re.match(r"^\S+", captures["proc-cmdline"].splitlines()[1])
