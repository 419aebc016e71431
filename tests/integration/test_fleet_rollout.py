"""site.yml over SSH to 4 FIXTURE GPU hosts, two runs on the same containers (issue 50's must-show cases):

Run 1, batches of 3 ("3": [h1, h2, h3], [h4]) within a 34 % budget: h2 fails (a package that does not exist), 1 of 3
is 33 %, so the rollout goes on to batch 2 and the failed host fails the run; the rolling reboots happen batch by
batch (h3 in batch 1 is back with its driver loaded before h4 is drained).
Run 2, batches [1, "50%"] ([h1], [h2, h3], [h4]) within "34%" (survey text): h2 now converges (with its reboot),
h3's sshd is stopped by its drain hook (lost after its drain: unreachable, with the step, "interrupted"), and 1 of 2
is 50 %: the rollout counts the lost host (Ansible alone would not, ansible/ansible#56265) and stops; h4 is untouched
(snapshots) and listed as not run; h1 converged in run 1 and changes nothing (its reboot still pending). The stop
is the rollout's own (the plays keep Ansible's max_fail_percentage at 100, so the
budget is counted once, at the batch's end: "The rollout stops after this batch: ...").

Real parts: sshd (Debian's openssh-server, which the test image carries), keys the test generates,
ports published on 127.0.0.1 only, Debian's archive for common's build tools (through apt-cacher-ng,
tests/scripts/test-cache.sh), ansible.builtin.reboot's protocol (reboot command, then a new boot id), a host lost
for real (every sshd process of its container killed: Ansible's own UNREACHABLE).
FIXTURE parts (NOT a GPU): each container is the FIXTURE GPU host of tests/fixtures/gpu_host (installed over SSH on
the first container, which is then committed as an image that the other three start from; a model of an RTX 4090
machine: nvidia-smi exits 9 until a boot loads the installed driver, as NVIDIA documents it); its reboot stub gives a new
boot id and loads the module; the driver packages come from the fixture CUDA repository (tests/aptrepo, markers).
Host 1's group would allow the reboot, but the host itself does not (dlbox_reboot_allowed: false): its new driver
stays a pending reboot. Host 1 is a workstation outside the scheduler (its dlbox_drain_command and
dlbox_resume_command empty): nothing drains it, so its pending reboot is the summary's "reboot pending", not "left
drained", and counts nothing against the budget (a host the rollout drains and must leave drained counts against it,
rt50b H2: tests/unit/test_fleet_left_drained_budget.py, test_fleet_left_drained.py). Common's build tools
(build-essential, the real apt install) are host 1's in run 1 and host 2's
in run 2; hosts 3 and 4 ask common only for probes the image has (common_packages), which halves the test's compiler
installs (issue 50: the test's cost in make test). The order is read from the drain/resume hooks' log on the
controller (dlbox_drain_command, dlbox_resume_command), the reboot stubs' boot ids and events, and the run's own
output. Last, doctor.yml reads one of
the hosts over the same SSH (its collector's stream comes back through a terminal, CR LF). The budget's other cases,
the artifacts through ansible-runner and drain-and-wait run without Docker in test_rollout_budget.py.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from conftest import ROOT, ansible_env, docker_ready

IMAGE = "dlbox-test:debian12"
HOSTS = ("dlbox-fleet-1", "dlbox-fleet-2", "dlbox-fleet-3", "dlbox-fleet-4")
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


def _each(fn, names=HOSTS):
    """{name: fn(name)} for every host at once (docker's client calls wait on the engine)."""
    with ThreadPoolExecutor(len(names)) as pool:
        return dict(zip(names, pool.map(fn, names)))


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
    repo = work / "fixture-repos" / "cuda-debian12"
    # the fixture repository is built while the containers start (each host's setup in a thread of its own: docker's
    # client calls wait on the engine, not on this machine's cores)
    build = subprocess.Popen(  # pylint: disable=consider-using-with
        [str(ROOT / ".venv/bin/python"), str(ROOT / "tests/aptrepo/build_repo.py"),
         str(ROOT / "tests/aptrepo/specs/cuda-debian12.yml"), str(repo), "--key-dir", str(work / "fixture-keys")],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    pub = (work / "id_ed25519.pub").read_text()
    # The hosts are one prepared container, committed as an image (the fixture repository and server copied in, the
    # FIXTURE GPU host installed over SSH), then the others started from it: each host is what the first one was
    # after its setup (its own boot id drawn again, as install.yml draws it), and the setup's SSH and docker cp work is
    # done once, not once per host (issue 50: the test's cost).
    prepared = "dlbox-fleet-prepared:%s" % pid

    def start(name, image=IMAGE):
        _run(["docker", "rm", "-f", name], check=False)
        _run(["docker", "run", "-d", "--name", name, "-p", "127.0.0.1::22",
              "-v", "%s:/etc/apt/apt.conf.d/01dlbox-test-cache:ro" % (CLIENT / "apt.conf"),
              "-v", "%s:/etc/xdg/pip/pip.conf:ro" % (CLIENT / "pip.conf"),
              image, "sleep", "infinity"])
        # the test image carries openssh-server (tests/images/Dockerfile); sshd is started by hand (no systemd here)
        _exec(name, "mkdir -p /run/sshd /root/.ssh && chmod 700 /root/.ssh"
                    " && printf '%%s' %s > /root/.ssh/authorized_keys && chmod 600 /root/.ssh/authorized_keys"
                    " && /usr/sbin/sshd" % json.dumps(pub))
        port = _run(["docker", "port", name, "22/tcp"]).stdout.split()[0]
        assert port.startswith("127.0.0.1:"), port             # published on the loopback only
        ports[name] = int(port.rsplit(":", 1)[1])

    def serve(name):
        _run(["docker", "exec", "-d", name, "python3", "/usr/local/bin/dlbox-fixture-serve", "/srv/fixture-repos",
              "--port", "8089"])

    def start_prepared(name):
        start(name, prepared)
        _exec(name, "cat /proc/sys/kernel/random/uuid > %s/state/boot_id" % FIXTURE)
        serve(name)

    try:
        start(HOSTS[0])
        out = build.communicate(timeout=600)[0]
        assert build.returncode == 0, out[-3000:]
        _exec(HOSTS[0], "mkdir -p /srv/fixture-repos")
        _run(["docker", "cp", str(repo), "%s:/srv/fixture-repos/" % HOSTS[0]])
        _run(["docker", "cp", str(ROOT / "tests/aptrepo/serve.py"), "%s:/usr/local/bin/dlbox-fixture-serve" % HOSTS[0]])
        serve(HOSTS[0])
        env = ansible_env()
        env["ANSIBLE_CONFIG"] = str(work / "none.cfg")
        (work / "prepare.yml").write_text(json.dumps(PREPARE))
        (work / "prepare-hosts.yml").write_text(json.dumps({"all": {"hosts": {HOSTS[0]: {
            "ansible_host": "127.0.0.1", "ansible_port": ports[HOSTS[0]], "ansible_user": "root",
            "ansible_ssh_private_key_file": str(key),
            "ansible_ssh_common_args": "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null",
            "ansible_python_interpreter": "/usr/bin/python3", "ansible_pipelining": True}}}}))
        _run(["ansible-playbook", "-i", str(work / "prepare-hosts.yml"), str(work / "prepare.yml")], env=env, cwd=work)
        _run(["docker", "commit", HOSTS[0], prepared])
        _each(start_prepared, HOSTS[1:])
        order = work / "order.log"
        hook = "sh -c 'echo $(date +%%s.%%N) %s {{ inventory_hostname }} >> " + str(order) + "'"
        # the drain hook of the host to lose (run 2): logs its drain, then kills every sshd process of its container
        # (the listener and the sessions behind Ansible's ControlPersist connection): lost after its drain
        (work / "lose.sh").write_text(
            "echo $(date +%%s.%%N) drain $1 >> %s\n"
            "docker exec \"$1\" sh -c 'for p in /proc/[0-9]*; do [ \"$(cat $p/comm 2>/dev/null)\" = sshd ]"
            " && kill -9 ${p#/proc/}; done; true'\n" % order)
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
                "dlbox_install_cuda": False, "dlbox_install_cudnn": False, "dlbox_install_nccl": False,
                "dlbox_install_docker": False, "dlbox_install_python_env": False,
                "dlbox_install_kernel_headers": False,
            },
            "children": {"workstations": {
                "vars": {"dlbox_reboot_allowed": True},
                "hosts": {name: {"ansible_port": ports[name]} for name in HOSTS}}},
        }}
        hosts = inventory["all"]["children"]["workstations"]["hosts"]
        hosts[HOSTS[0]]["dlbox_reboot_allowed"] = False                  # its driver stays a pending reboot
        hosts[HOSTS[0]]["dlbox_drain_command"] = ""                      # outside the scheduler: never drained
        hosts[HOSTS[0]]["dlbox_resume_command"] = ""
        hosts[HOSTS[1]]["common_extra_packages"] = ["dlbox-no-such-package"]
        # common's build tools are host 1's (run 1) and host 2's (run 2) to show; hosts 3 and 4 take the probes the
        # image has, so their apt installs no compiler (what they show is the reboot order, which their driver brings)
        for name in HOSTS[2:]:
            hosts[name]["common_packages"] = ["ca-certificates", "gnupg", "pciutils", "kmod"]
        (work / "hosts.yml").write_text(json.dumps(inventory, indent=2))
        (work / "fleet.yml").write_text(json.dumps(PLAYBOOK))
        time.sleep(1)                                     # the mark is newer than every file the setup wrote
        _each(lambda name: _exec(name, "touch /root/.dlbox-fleet-mark"))
        yield work
    finally:
        if build.poll() is None:
            build.kill()
        _run(["docker", "rm", "-f"] + list(HOSTS), check=False)                 # one call: the engine stops them at once
        _run(["docker", "image", "rm", "-f", prepared], check=False)
        _run(["bash", str(ROOT / "tests/scripts/test-cache.sh"), "stop", pid], check=False)


def rollout(work, name, extra_vars):
    """dlbox.stack.site from the installed collection, outside this repository (no ansible.cfg), over SSH."""
    env = ansible_env()
    env["ANSIBLE_CONFIG"] = str(work / "none.cfg")
    env["ANSIBLE_FORKS"] = "6"
    env["ANSIBLE_NOCOLOR"] = "1"
    (work / "order.log").write_text("")
    start = time.monotonic()
    proc = subprocess.run(
        ["ansible-playbook", "-i", str(work / "hosts.yml"), str(work / "fleet.yml"), "-e", json.dumps(extra_vars)],
        cwd=work, env=env, capture_output=True, text=True, check=False, timeout=1500)
    seconds = round(time.monotonic() - start, 1)
    (work / ("%s.log" % name)).write_text(proc.stdout + proc.stderr)
    report = work / "reports" / "rollout" / "summary.json"
    assert report.is_file(), "no fleet summary after %s (rc %d):\n%s\n%s" % (
        name, proc.returncode, proc.stdout[-6000:], proc.stderr[-2000:])
    summary = json.loads(report.read_text())
    print("\nfleet rollout %s: %.1f s, rc %d" % (name, seconds, proc.returncode))
    return proc, {row["host"]: row for row in summary["hosts"]}, summary


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


def recap(out, name):
    """The host's line of the PLAY RECAP."""
    return next(line for line in out.split("PLAY RECAP")[-1].splitlines() if line.startswith(name + " "))


def test_a_batch_of_three_with_one_failure_within_34_percent_goes_on(fleet):
    h1, h2, h3, h4 = HOSTS
    before = _each(lambda name: _exec(name, SNAPSHOT).stdout)
    proc, rows, summary = rollout(fleet, "run1", {"dlbox_serial": 3, "dlbox_max_fail_percentage": 34})
    out = proc.stdout
    assert proc.returncode != 0, out[-4000:]                        # the failed host fails the run
    assert "Traceback" not in out + proc.stderr
    assert out.count("PLAY [Deep-learning workstation]") == 2, out[-4000:]
    assert [(b["index"], b["hosts"], b["failed"], b["unreachable"], b["percent"], b["stop"])
            for b in summary["batches"]] == [(1, [h1, h2, h3], [h2], [], 33.3, False), (2, [h4], [], [], 0.0, False)]
    assert summary["stopped"] is None
    assert summary["counts"] == {"hosts": 4, "changed": 3, "unchanged": 0, "failed": 1, "unreachable": 0,
                                 "refused": 0, "not_run": 0, "pending_reboot": 1, "left_drained": 0}, rows
    assert rows[h1]["status"] == "changed" and {"build_tools", "driver"} <= set(rows[h1]["changed"])
    assert rows[h1]["pending_reboot"] and rows[h1]["driver"].startswith("nvidia-")   # installed, not loaded: pending
    assert rows[h2]["status"] == "failed"
    assert rows[h2]["failure"]["task"] == "Install build tools and probes"
    assert "dlbox-no-such-package" in rows[h2]["failure"]["message"]
    for name in (h3, h4):
        assert rows[name]["status"] == "changed" and rows[name]["pending_reboot"] == [], rows[name]   # rebooted: loaded
    assert "failed=1" in recap(out, h2) and "failed=0" in recap(out, h4)
    # the table in the run, as text lines (no JSON quoting without ansible.cfg)
    assert "\nFleet summary:\nhost " in out
    assert ("4 hosts: 3 changed, 0 unchanged, 1 failed, 0 unreachable, 0 refused, 0 not run, 1 with a reboot pending"
            in out)
    md = (fleet / "reports" / "rollout" / "summary.md").read_text()
    assert "| %s | workstation | failed |" % h2 in md
    # joined with the fitness report of the same run (preflight.yml, same report folder): each host's verdict, the
    # fleet report linked
    for name in HOSTS:
        fit = json.loads((fleet / "reports" / "fitness" / ("%s.json" % name)).read_text())
        assert fit["host"] == name
        assert rows[name]["fitness"] == ("fit" if fit["ok"] else "NOT fit: " + ", ".join(fit["problems"])), rows[name]
        assert "| %s |" % rows[name]["fitness"] in md
    assert "[../fleet.md](../fleet.md)" in md and (fleet / "reports" / "fleet.md").is_file()
    after = _each(lambda name: _exec(name, SNAPSHOT).stdout)
    for name in (h1, h3, h4):
        assert after[name] != before[name] and after[name].split("## newer")[1].strip(), name
    # host 1 may not reboot: no reboot, the driver not loaded (nvidia-smi: exit 9, "driver not loaded")
    assert reboots(h1)[0] == [] and smi(h1).returncode == 9
    booted = {}
    for name in (h3, h4):
        events, booted[name] = reboots(name)
        assert len(events) == 2 and events[0].startswith("reboot from") and " loaded 580." in events[1], events
        assert smi(name).stdout.strip().startswith("580."), smi(name)
    # drain before the changes, resume after the checks, batch by batch; the failed host is not resumed; host 1, outside
    # the scheduler, is never drained: its pending reboot is no "left drained" and counts nothing against the budget
    for name in HOSTS:
        assert not (rows[name].get("reason") or "").startswith("left drained"), rows[name]
    assert not any("WARNING: %s is left drained" % name in out for name in HOSTS)
    log = hooks(fleet)
    pairs = [(what, host) for _ts, what, host in log]
    assert sorted(pairs[:3]) == [("drain", h2), ("drain", h3), ("resume", h3)], log
    assert pairs[3:] == [("drain", h4), ("resume", h4)], log
    at = {(what, host): ts for ts, what, host in log}
    assert at[("drain", h3)] < booted[h3] < at[("resume", h3)] < at[("drain", h4)] < booted[h4] < at[("resume", h4)]
    # and in the run's own log: host 3's reboot task, then host 4's first change
    parts = sections(out)
    reboot3 = next(i for i, (head, body) in enumerate(parts)
                   if "Reboot to load the installed module" in head and "changed: [%s]" % h3 in body)
    first4 = next(i for i, (head, body) in enumerate(parts) if "changed: [%s]" % h4 in body)
    assert reboot3 < first4, (parts[reboot3][0], parts[first4][0])
    print("\norder: " + "; ".join("%s %s %.2f" % (what, host, ts - log[0][0]) for ts, what, host in log)
          + "; reboots: " + ", ".join("%s %.2f" % (h, b - log[0][0]) for h, b in booted.items()))


def test_a_host_lost_mid_run_counts_against_the_budget_and_stops_the_rollout(fleet):
    h1, h2, h3, h4 = HOSTS
    inventory = json.loads((fleet / "hosts.yml").read_text())
    hosts = inventory["all"]["children"]["workstations"]["hosts"]
    hosts[h2].pop("common_extra_packages")
    hosts[h3]["dlbox_drain_command"] = "sh %s {{ inventory_hostname }}" % (fleet / "lose.sh")
    (fleet / "hosts.yml").write_text(json.dumps(inventory, indent=2))
    before = _exec(h4, SNAPSHOT).stdout
    proc, rows, summary = rollout(fleet, "run2", {"dlbox_serial": [1, "50%"], "dlbox_max_fail_percentage": "34%"})
    out = proc.stdout
    assert proc.returncode != 0, out[-4000:]
    assert "Traceback" not in out + proc.stderr
    # [1, "50%"] of 4 hosts: [h1], [h2, h3], then [h4], which the stop leaves out
    assert out.count("PLAY [Deep-learning workstation]") == 2, out[-4000:]
    # the rollout's own stop at the batch's end (the plays' max_fail_percentage is 100: Ansible ends nothing early)
    assert "The rollout stops after this batch: " in out, out[-4000:]
    assert [(b["index"], b["hosts"], b["failed"], b["unreachable"], b["stop"]) for b in summary["batches"]] == [
        (1, [h1], [], [], False), (2, [h2, h3], [], [h3], True)]
    stopped = ("1 of the 2 hosts of batch 2 (%s) failed or were unreachable: 50%%, more than the failure budget "
               "dlbox_max_fail_percentage=34%%" % h3)
    assert summary["stopped"] == stopped
    assert summary["counts"] == {"hosts": 4, "changed": 1, "unchanged": 1, "failed": 0, "unreachable": 1,
                                 "refused": 0, "not_run": 1, "pending_reboot": 1, "left_drained": 0}, rows
    assert rows[h1]["changed"] == [] and rows[h1]["pending_reboot"]               # converged in run 1, not rebooted
    assert {"build_tools", "driver"} <= set(rows[h2]["changed"]) and rows[h2]["pending_reboot"] == [], rows[h2]
    assert rows[h3]["status"] == "unreachable" and rows[h3]["step"] == "workstation: baseline (common)", rows[h3]
    assert "interrupted" in rows[h3]["reason"] and "untouched" not in rows[h3]["reason"]
    assert rows[h4]["status"] == "not run" and rows[h4]["scenario"] == "workstation"
    assert rows[h4]["reason"] == "the rollout stopped before its batch: " + stopped
    assert "unreachable=1" in recap(out, h3)
    assert "failed=1" in recap(out, h2)          # the stopped batch fails, as Ansible's own budget does
    assert ("4 hosts: 1 changed, 1 unchanged, 0 failed, 1 unreachable, 0 refused, 1 not run, 1 with a reboot pending"
            in out)
    assert _exec(h4, SNAPSHOT).stdout == before                                  # batch 3: untouched
    events, booted = reboots(h2)
    assert len(events) == 2 and " loaded 580." in events[1], events
    log = hooks(fleet)
    pairs = [(what, host) for _ts, what, host in log]
    assert not (rows[h1].get("reason") or "").startswith("left drained"), rows[h1]   # never drained (no scheduler)
    assert sorted(pairs) == [("drain", h2), ("drain", h3), ("resume", h2)], log   # h1 outside, h4 never drained
    at = {(what, host): ts for ts, what, host in log}
    assert at[("drain", h2)] < booted < at[("resume", h2)]
    _exec(h3, "/usr/sbin/sshd")                                                   # back for the doctor and teardown


def test_the_doctor_reads_a_host_over_ssh(fleet):
    """playbooks/doctor.yml over SSH: ansible.builtin.script runs dlbox-collect under ``ssh -tt`` (the ssh connection's
    use_tty), so its stream comes back with CR LF line ends; the doctor must read the same captures as on a local or
    docker connection (it read none before the fix: "0 capture(s) read")."""
    env = ansible_env()
    env["ANSIBLE_CONFIG"] = str(fleet / "none.cfg")
    proc = _run(["ansible-playbook", "-i", str(fleet / "hosts.yml"), "dlbox.stack.doctor", "--limit", HOSTS[0]],
                env=env, cwd=fleet)
    assert "ok=" in proc.stdout and "failed=0" in proc.stdout.split("PLAY RECAP")[-1], proc.stdout[-3000:]
    report = json.loads((fleet / "reports" / "doctor" / ("%s.json" % HOSTS[0])).read_text())
    assert report["source"] == "live host (dlbox-collect --stdout)"
    kinds = {kind for capture in report["captures"] for kind in capture["kinds"]}
    assert {"os-release", "uname", "pci-sysfs", "dpkg"} <= kinds, report["captures"]
    assert not any("\r" in capture["file"] for capture in report["captures"]), report["captures"]
