"""site.yml over SSH to 3 FIXTURE GPU hosts: batches of 1, a host failing in batch 2 stops the rollout within the
failure budget, the host of batch 3 is untouched, the fleet summary records the failure and a pending reboot, a re-run
converges, and the rolling reboots happen batch by batch: each host is back with its driver loaded before the next
batch starts.

Real parts: sshd (Debian's openssh-server, which the test image carries), keys the test generates,
ports published on 127.0.0.1 only, Debian's archive for common's build tools (through apt-cacher-ng,
tests/scripts/test-cache.sh), ansible.builtin.reboot's protocol (reboot command, then a new boot id).
FIXTURE parts (NOT a GPU): each container is the FIXTURE GPU host of tests/fixtures/gpu_host (a model of an RTX 4090
machine: nvidia-smi exits 9 until a boot loads the installed driver, as NVIDIA documents it); its reboot stub gives a new
boot id and loads the module; the driver packages come from the fixture CUDA repository (tests/aptrepo, markers).
Host 1's group would allow the reboot, but the host itself does not (dlbox_reboot_allowed: false): its new driver
stays a pending reboot. The order is read from the drain/resume hooks' log on the controller (dlbox_drain_command,
dlbox_resume_command), the reboot stubs' boot ids and events, and the run's own output. Last, doctor.yml reads one of
the hosts over the same SSH (its collector's stream comes back through a terminal, CR LF).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time

import pytest

from conftest import ROOT, ansible_env, docker_ready

IMAGE = "dlbox-test:debian12"
HOSTS = ("dlbox-fleet-1", "dlbox-fleet-2", "dlbox-fleet-3")
CLIENT = ROOT / "build" / "test-cache" / "client"
FIXTURE = "/opt/dlbox-fixture-gpu"
REPO = "http://127.0.0.1:8089/cuda-debian12/"

# The FIXTURE GPU host (tests/fixtures/gpu_host) installed over SSH, as molecule/gpu_host's prepare does.
PREPARE = [{
    "name": "Install the FIXTURE GPU host's stubs", "hosts": "all", "gather_facts": False,
    "tasks": [{"name": "FIXTURE GPU host", "ansible.builtin.include_tasks": str(ROOT / "tests/fixtures/gpu_host/install.yml"),
               "vars": {"__gpu_host_dir": str(ROOT / "tests/fixtures/gpu_host"),
                        "__gpu_host_fixtures": str(ROOT / "tests/fixtures")}}],
}]

# The lab's playbook, as molecule/gpu_host/run.yml runs workstation.yml: gpu_facts reads the model first.
PLAYBOOK = [
    {"name": "Read the FIXTURE GPU hosts (a model of an RTX 4090 machine, not a GPU)", "hosts": "all",
     "gather_facts": False,
     "tasks": [{"name": "Detect the model", "dlbox.stack.gpu_facts": {
         "root": FIXTURE + "/root", "lspci_path": FIXTURE + "/bin/lspci"}}]},
    {"name": "The lab", "ansible.builtin.import_playbook": "dlbox.stack.site"},
]


def _run(argv, check=True, timeout=600, **kw):
    proc = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=timeout, **kw)
    if check and proc.returncode != 0:
        raise AssertionError("%s: rc %d\n%s\n%s" % (argv[:4], proc.returncode, proc.stdout[-3000:], proc.stderr[-3000:]))
    return proc


def _exec(name, script, check=True):
    return _run(["docker", "exec", name, "bash", "-c", script], check=check)


# What a run may change on a host, read before and after: the packages, and the files under /etc, /usr/local and
# /opt newer than a mark made after the test's own setup.
SNAPSHOT = ("dpkg-query -W -f='${Package} ${Version}\\n' | sort; echo '## newer';"
            " find /etc /usr/local /opt -xdev -newer /root/.dlbox-fleet-mark -not -path '/etc/ssh/*' 2>/dev/null | sort")


@pytest.fixture(scope="module")
def fleet(tmp_path_factory, collection_installed):
    reason = docker_ready(IMAGE)
    if reason:
        pytest.skip(reason)
    work = tmp_path_factory.mktemp("fleet")
    pid = str(os.getpid())
    _run(["bash", str(ROOT / "tests/scripts/test-cache.sh"), "start", pid], timeout=900)
    key = work / "id_ed25519"
    _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "dlbox-fleet-test", "-f", str(key)])
    ports = {}
    try:
        for name in HOSTS:
            _run(["docker", "rm", "-f", name], check=False)
            _run(["docker", "run", "-d", "--name", name, "-p", "127.0.0.1::22",
                  "-v", "%s:/etc/apt/apt.conf.d/01dlbox-test-cache:ro" % (CLIENT / "apt.conf"),
                  "-v", "%s:/etc/xdg/pip/pip.conf:ro" % (CLIENT / "pip.conf"),
                  IMAGE, "sleep", "infinity"])
        pub = (work / "id_ed25519.pub").read_text()
        for name in HOSTS:
            # the test image carries openssh-server (tests/images/Dockerfile); sshd is started by hand (no systemd here)
            _exec(name, "mkdir -p /run/sshd /root/.ssh && chmod 700 /root/.ssh"
                        " && printf '%%s' %s > /root/.ssh/authorized_keys && chmod 600 /root/.ssh/authorized_keys"
                        " && /usr/sbin/sshd" % json.dumps(pub))
            port = _run(["docker", "port", name, "22/tcp"]).stdout.split()[0]
            assert port.startswith("127.0.0.1:"), port             # published on the loopback only
            ports[name] = int(port.rsplit(":", 1)[1])
        repo = work / "fixture-repos" / "cuda-debian12"
        _run([str(ROOT / ".venv/bin/python"), str(ROOT / "tests/aptrepo/build_repo.py"),
              str(ROOT / "tests/aptrepo/specs/cuda-debian12.yml"), str(repo), "--key-dir", str(work / "fixture-keys")])
        for name in HOSTS:
            _exec(name, "mkdir -p /srv/fixture-repos")
            _run(["docker", "cp", str(repo), "%s:/srv/fixture-repos/" % name])
            _run(["docker", "cp", str(ROOT / "tests/aptrepo/serve.py"), "%s:/usr/local/bin/dlbox-fixture-serve" % name])
            _run(["docker", "exec", "-d", name, "python3", "/usr/local/bin/dlbox-fixture-serve", "/srv/fixture-repos",
                  "--port", "8089"])
        order = work / "order.log"
        hook = "sh -c 'echo $(date +%%s.%%N) %s {{ inventory_hostname }} >> " + str(order) + "'"
        inventory = {"all": {
            "vars": {
                "ansible_host": "127.0.0.1", "ansible_user": "root", "ansible_ssh_private_key_file": str(key),
                "ansible_ssh_common_args": "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null",
                "ansible_python_interpreter": "/usr/bin/python3",
                "ansible_pipelining": True,                                  # as inventories/lab sets it
                "dlbox_report_dir": str(work / "reports"),
                "dlbox_drain_command": hook % "drain", "dlbox_resume_command": hook % "resume",
                # the FIXTURE GPU host: the plan from its captured lspci, the driver from the fixture repository,
                # the reboot through its stubs
                "dlbox_plan_hardware": {"captures": [str(ROOT / "tests/fixtures/lspci/rtx4090-desktop.lspci-nn.txt")],
                                        "os": "debian-12"},
                "dlbox_plan_request": {"driver_method": "nvidia_repo", "driver_branch": "580"},
                "dlbox_reboot_options": {"reboot_command": FIXTURE + "/bin/reboot",
                                         "boot_time_command": FIXTURE + "/bin/boot-id"},
                "nvidia_driver_reboot_timeout": 120,
                "cuda_repo_base_url": REPO, "cuda_repo_key_url": REPO + "gpgkey",
                "cuda_repo_key_fingerprint": (repo / "cuda-archive-keyring.fingerprint").read_text().strip(),
                "dlbox_workstation_cuda": False, "dlbox_workstation_cudnn": False, "dlbox_workstation_nccl": False,
                "dlbox_workstation_docker": False, "dlbox_workstation_python_env": False,
                "dlbox_workstation_kernel_headers": False,
            },
            "children": {"workstations": {
                "vars": {"dlbox_reboot_allowed": True},
                "hosts": {name: {"ansible_port": ports[name]} for name in HOSTS}}},
        }}
        hosts = inventory["all"]["children"]["workstations"]["hosts"]
        hosts[HOSTS[0]]["dlbox_reboot_allowed"] = False                  # its driver stays a pending reboot
        hosts[HOSTS[1]]["common_extra_packages"] = ["dlbox-no-such-package"]
        (work / "hosts.yml").write_text(json.dumps(inventory, indent=2))
        (work / "prepare.yml").write_text(json.dumps(PREPARE))
        (work / "fleet.yml").write_text(json.dumps(PLAYBOOK))
        env = ansible_env()
        env["ANSIBLE_CONFIG"] = str(work / "none.cfg")
        _run(["ansible-playbook", "-i", str(work / "hosts.yml"), str(work / "prepare.yml")], env=env, cwd=work)
        for name in HOSTS:
            _exec(name, "sleep 1; touch /root/.dlbox-fleet-mark")
        yield work
    finally:
        for name in HOSTS:
            _run(["docker", "rm", "-f", name], check=False)
        _run(["bash", str(ROOT / "tests/scripts/test-cache.sh"), "stop", pid], check=False)


def rollout(work, name):
    """dlbox.stack.site from the installed collection, outside this repository (no ansible.cfg), over SSH."""
    env = ansible_env()
    env["ANSIBLE_CONFIG"] = str(work / "none.cfg")
    env["ANSIBLE_FORKS"] = "6"
    env["ANSIBLE_NOCOLOR"] = "1"
    (work / "order.log").write_text("")
    start = time.monotonic()
    proc = subprocess.run(
        ["ansible-playbook", "-i", str(work / "hosts.yml"), str(work / "fleet.yml"),
         "-e", json.dumps({"dlbox_serial": 1, "dlbox_max_fail_percentage": 0})],
        cwd=work, env=env, capture_output=True, text=True, check=False, timeout=900)
    seconds = round(time.monotonic() - start, 1)
    (work / ("%s.log" % name)).write_text(proc.stdout + proc.stderr)
    summary = json.loads((work / "reports" / "rollout" / "summary.json").read_text())
    print("\nfleet rollout %s: %.1f s, rc %d" % (name, seconds, proc.returncode))
    return proc, {row["host"]: row for row in summary["hosts"]}, summary["counts"]


def hooks(work):
    """[(seconds, drain|resume, host)] from the drain/resume hooks' log on the controller, in their order."""
    lines = [line.split() for line in (work / "order.log").read_text().splitlines() if line.strip()]
    return [(float(ts), what, host) for ts, what, host in lines]


def reboots(name):
    """The FIXTURE reboot stub's events on a host, and the time of its last boot (the boot id's file)."""
    events = _exec(name, "grep -E '^(reboot|boot) ' %s/state/events.log || true" % FIXTURE).stdout.splitlines()
    booted = float(_exec(name, "date -r %s/state/boot_id +%%s.%%N" % FIXTURE).stdout)
    return events, booted


def smi(name):
    return _exec(name, "nvidia-smi --query-gpu=driver_version --format=csv,noheader", check=False)


def sections(out):
    """The run's output cut at each TASK/PLAY header: [(header, body)]."""
    parts = re.split(r"^((?:TASK|PLAY|RUNNING HANDLER) \[.*\]).*$", out, flags=re.M)
    return list(zip(parts[1::2], parts[2::2]))


def test_failure_in_batch_two_stops_the_rollout_and_leaves_batch_three_untouched(fleet):
    before = {name: _exec(name, SNAPSHOT).stdout for name in HOSTS}
    proc, rows, counts = rollout(fleet, "run1")
    out = proc.stdout
    assert proc.returncode != 0, out[-4000:]
    assert "Traceback" not in out + proc.stderr
    # batches of 1: the workstation play ran for hosts 1 and 2, one batch each, and stopped there
    assert out.count("PLAY [Deep-learning workstation]") == 2, out[-4000:]
    assert "NO MORE HOSTS LEFT" in out
    assert counts == {"hosts": 3, "changed": 1, "unchanged": 0, "failed": 1, "unreachable": 0, "refused": 0,
                      "not_run": 1, "pending_reboot": 1}, rows
    one, two, three = (rows[name] for name in HOSTS)
    assert one["status"] == "changed" and "build_tools" in one["changed"] and "driver" in one["changed"]
    assert one["pending_reboot"] and one["driver"].startswith("nvidia-")         # installed, not loaded: pending
    assert two["status"] == "failed"
    assert two["failure"]["task"] == "Install build tools and probes"
    assert "dlbox-no-such-package" in two["failure"]["message"]
    assert three["status"] == "not run" and three["scenario"] == "workstation"
    assert three["reason"].startswith("the rollout stopped before its batch: 1 of the 1 hosts of batch 2")
    # the table in the run, as text lines (no JSON quoting without ansible.cfg)
    assert "\nFleet summary:\nhost " in out
    assert ("3 hosts: 1 changed, 0 unchanged, 1 failed, 0 unreachable, 0 refused, 1 not run, 1 with a reboot pending"
            in out)
    md = (fleet / "reports" / "rollout" / "summary.md").read_text()
    assert "| %s | workstation | failed |" % HOSTS[1] in md
    # joined with the fitness report of the same run (preflight.yml, same report folder): each host's verdict, the
    # fleet report linked
    for name in HOSTS:
        fit = json.loads((fleet / "reports" / "fitness" / ("%s.json" % name)).read_text())
        assert fit["host"] == name
        assert rows[name]["fitness"] == ("fit" if fit["ok"] else "NOT fit: " + ", ".join(fit["problems"])), rows[name]
        assert "| %s |" % rows[name]["fitness"] in md
    assert "[../fleet.md](../fleet.md)" in md and (fleet / "reports" / "fleet.md").is_file()
    after = {name: _exec(name, SNAPSHOT).stdout for name in HOSTS}
    assert after[HOSTS[2]] == before[HOSTS[2]]                   # batch 3: untouched
    assert after[HOSTS[0]] != before[HOSTS[0]]                   # batch 1: the baseline went in
    assert after[HOSTS[0]].split("## newer")[1].strip()
    # host 1 may not reboot: no reboot, the driver not loaded (nvidia-smi: exit 9, "driver not loaded")
    assert reboots(HOSTS[0])[0] == []
    assert smi(HOSTS[0]).returncode == 9
    # drain before the changes, resume after the checks; the failed host is not resumed; batch 3 not drained
    assert [(what, host) for _ts, what, host in hooks(fleet)] == [
        ("drain", HOSTS[0]), ("resume", HOSTS[0]), ("drain", HOSTS[1])]


def test_rerun_converges_with_rolling_reboots_batch_by_batch(fleet):
    inventory = json.loads((fleet / "hosts.yml").read_text())
    inventory["all"]["children"]["workstations"]["hosts"][HOSTS[1]].pop("common_extra_packages")
    (fleet / "hosts.yml").write_text(json.dumps(inventory, indent=2))
    proc, rows, counts = rollout(fleet, "run2")
    out = proc.stdout
    assert proc.returncode == 0, out[-4000:]
    assert counts == {"hosts": 3, "changed": 2, "unchanged": 1, "failed": 0, "unreachable": 0, "refused": 0,
                      "not_run": 0, "pending_reboot": 1}, rows
    assert rows[HOSTS[0]]["changed"] == [] and rows[HOSTS[0]]["pending_reboot"]   # converged in run 1, not rebooted
    for name in HOSTS[1:]:
        assert {"build_tools", "driver"} <= set(rows[name]["changed"]), rows[name]
        assert rows[name]["pending_reboot"] == [], rows[name]                        # rebooted: loaded
    # each rebooted host came back with its driver loaded (the stub's boot loads the installed module)
    booted = {}
    for name in HOSTS[1:]:
        events, booted[name] = reboots(name)
        assert len(events) == 2 and events[0].startswith("reboot from") and " loaded 580." in events[1], events
        assert smi(name).stdout.strip().startswith("580."), smi(name)
    assert reboots(HOSTS[0])[0] == [] and smi(HOSTS[0]).returncode == 9
    # the order, batch by batch: drain, reboot, resume of host 2 all before host 3 is drained (its first change)
    log = hooks(fleet)
    assert [(what, host) for _ts, what, host in log] == [
        (what, host) for host in HOSTS for what in ("drain", "resume")], log
    at = {(what, host): ts for ts, what, host in log}
    for name in HOSTS[1:]:
        assert at[("drain", name)] < booted[name] < at[("resume", name)], (name, booted, at)
    assert booted[HOSTS[1]] < at[("drain", HOSTS[2])] < booted[HOSTS[2]]
    # and in the run's own log: host 2's reboot task, then host 3's first change
    parts = sections(out)
    reboot2 = next(i for i, (head, body) in enumerate(parts)
                   if "Reboot to load the installed module" in head and "changed: [%s]" % HOSTS[1] in body)
    first3 = next(i for i, (head, body) in enumerate(parts) if "changed: [%s]" % HOSTS[2] in body)
    assert reboot2 < first3, (parts[reboot2][0], parts[first3][0])
    print("\norder: " + "; ".join("%s %s %.2f" % (what, host, ts - log[0][0]) for ts, what, host in log)
          + "; reboots: " + ", ".join("%s %.2f" % (h, b - log[0][0]) for h, b in booted.items()))


def test_the_doctor_reads_a_host_over_ssh(fleet):
    """playbooks/doctor.yml over SSH: ansible.builtin.script runs dlbox-collect under ``ssh -tt`` (the ssh connection's
    use_tty), so its stream comes back with CR LF line ends; the doctor must read the same captures as on a local or
    docker connection (it read none before the fix: "0 capture(s) read")."""
    env = ansible_env()
    env["ANSIBLE_CONFIG"] = str(fleet / "none.cfg")
    proc = _run(["ansible-playbook", "-i", str(fleet / "hosts.yml"), "dlbox.stack.doctor", "--limit", HOSTS[2]],
                env=env, cwd=fleet)
    assert "ok=" in proc.stdout and "failed=0" in proc.stdout.split("PLAY RECAP")[-1], proc.stdout[-3000:]
    report = json.loads((fleet / "reports" / "doctor" / ("%s.json" % HOSTS[2])).read_text())
    assert report["source"] == "live host (dlbox-collect --stdout)"
    kinds = {kind for capture in report["captures"] for kind in capture["kinds"]}
    assert {"os-release", "uname", "pci-sysfs", "dpkg"} <= kinds, report["captures"]
    assert not any("\r" in capture["file"] for capture in report["captures"]), report["captures"]
