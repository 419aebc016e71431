"""site.yml over SSH to 3 test containers: batches of 1, a host failing in batch 2 stops the rollout within the failure
budget, the host of batch 3 is untouched, the fleet summary records the failure and a pending reboot, a re-run
converges.

Real parts: sshd (Debian's openssh-server, installed through the suite's package cache), keys the test generates,
ports published on 127.0.0.1 only, Debian's archive for common's build tools (through apt-cacher-ng,
tests/scripts/test-cache.sh). The pending reboot is Debian's own marker (/var/run/reboot-required, as
unattended-upgrades writes it), set on host 1 before the run; no GPU, so no driver is planned and no reboot happens.
"""

from __future__ import annotations

import json
import os
import subprocess
import time

import pytest

from conftest import ROOT, ansible_env, docker_ready

IMAGE = "dlbox-test:debian12"
HOSTS = ("dlbox-fleet-1", "dlbox-fleet-2", "dlbox-fleet-3")
CLIENT = ROOT / "build" / "test-cache" / "client"


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
            _exec(name, "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends"
                        " openssh-server >/dev/null && mkdir -p /run/sshd /root/.ssh && chmod 700 /root/.ssh"
                        " && printf '%%s' %s > /root/.ssh/authorized_keys && chmod 600 /root/.ssh/authorized_keys"
                        " && /usr/sbin/sshd" % json.dumps(pub))
            port = _run(["docker", "port", name, "22/tcp"]).stdout.split()[0]
            assert port.startswith("127.0.0.1:"), port             # published on the loopback only
            ports[name] = int(port.rsplit(":", 1)[1])
        _exec(HOSTS[0], "echo '*** System restart required ***' > /var/run/reboot-required")
        for name in HOSTS:
            _exec(name, "sleep 1; touch /root/.dlbox-fleet-mark")
        inventory = {"all": {
            "vars": {
                "ansible_host": "127.0.0.1", "ansible_user": "root", "ansible_ssh_private_key_file": str(key),
                "ansible_ssh_common_args": "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null",
                "ansible_python_interpreter": "/usr/bin/python3",
                "dlbox_workstation_docker": False, "dlbox_workstation_python_env": False,
                "dlbox_report_dir": str(work / "reports"),
            },
            "children": {"workstations": {"hosts": {name: {"ansible_port": ports[name]} for name in HOSTS}}},
        }}
        inventory["all"]["children"]["workstations"]["hosts"][HOSTS[1]]["common_extra_packages"] = ["dlbox-no-such-package"]
        (work / "hosts.yml").write_text(json.dumps(inventory, indent=2))
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
    start = time.monotonic()
    proc = subprocess.run(
        ["ansible-playbook", "-i", str(work / "hosts.yml"), "dlbox.stack.site",
         "-e", json.dumps({"dlbox_serial": 1, "dlbox_max_fail_percentage": 0})],
        cwd=work, env=env, capture_output=True, text=True, check=False, timeout=900)
    seconds = round(time.monotonic() - start, 1)
    (work / ("%s.log" % name)).write_text(proc.stdout + proc.stderr)
    summary = json.loads((work / "reports" / "rollout" / "summary.json").read_text())
    print("\nfleet rollout %s: %.1f s, rc %d" % (name, seconds, proc.returncode))
    return proc, {row["host"]: row for row in summary["hosts"]}, summary["counts"]


def test_failure_in_batch_two_stops_the_rollout_and_leaves_batch_three_untouched(fleet):
    before = {name: _exec(name, SNAPSHOT).stdout for name in HOSTS}
    proc, rows, counts = rollout(fleet, "run1")
    out = proc.stdout
    assert proc.returncode != 0, out[-4000:]
    assert "Traceback" not in out + proc.stderr
    # batches of 1: the workstation play ran for hosts 1 and 2, one batch each, and stopped there
    assert out.count("PLAY [Deep-learning workstation]") == 2, out[-4000:]
    assert "NO MORE HOSTS LEFT" in out
    assert counts == {"hosts": 3, "ok": 1, "failed": 1, "not_reached": 1, "pending_reboot": 1}
    one, two, three = (rows[name] for name in HOSTS)
    assert one["status"] == "ok" and "build_tools" in one["changed"] and one["pending_reboot"]
    assert two["status"] == "failed"
    assert two["failure"]["task"] == "Install build tools and probes"
    assert "dlbox-no-such-package" in two["failure"]["message"]
    assert three["status"] == "not reached" and three["scenario"] == "workstation"
    # the table in the run, as text lines (no JSON quoting without ansible.cfg)
    assert "\nFleet summary:\nhost " in out
    assert "3 hosts: 1 ok, 1 failed, 1 not reached (untouched), 1 with a reboot pending" in out
    md = (fleet / "reports" / "rollout" / "summary.md").read_text()
    assert "| %s | workstation | failed |" % HOSTS[1] in md
    after = {name: _exec(name, SNAPSHOT).stdout for name in HOSTS}
    assert after[HOSTS[2]] == before[HOSTS[2]]                   # batch 3: untouched
    assert after[HOSTS[0]] != before[HOSTS[0]]                   # batch 1: the baseline went in
    assert after[HOSTS[0]].split("## newer")[1].strip()


def test_rerun_with_the_failure_fixed_converges(fleet):
    inventory = json.loads((fleet / "hosts.yml").read_text())
    inventory["all"]["children"]["workstations"]["hosts"][HOSTS[1]].pop("common_extra_packages")
    (fleet / "hosts.yml").write_text(json.dumps(inventory, indent=2))
    proc, rows, counts = rollout(fleet, "run2")
    assert proc.returncode == 0, proc.stdout[-4000:]
    assert counts["ok"] == 3 and counts["failed"] == 0 and counts["not_reached"] == 0
    assert rows[HOSTS[0]]["changed"] == []                       # converged in run 1
    assert "build_tools" in rows[HOSTS[2]]["changed"]
