"""playbooks/workstation.yml on the FIXTURE GPU host (tests/fixtures/gpu_host: a model of an RTX 4090 machine, NOT a GPU).

Run 1 on the fresh machine ends green with "pending reboot"; the stub reboot loads the module; run 2 runs the GPU checks;
run 3 changes nothing; nvidia_driver_reboot: if_needed regenerates the initramfs before it reboots; connection: local
refuses if_needed before any change. Every figure here is a fixture result.
"""

import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.environ["MOLECULE_PROJECT_DIRECTORY"], "tests"))
import gpu_host_runs  # noqa: E402  pylint: disable=wrong-import-position

HOST = "dlbox-gpu_host-" + os.environ.get("MOLECULE_DISTRO", "debian12")
# the FIXTURE repository's build of the branch asked (vars/fixture.yml __branch: R595 on Ubuntu 26.04, R580 elsewhere)
VERSION = "595.71.05" if os.environ.get("MOLECULE_DISTRO") == "ubuntu2604" else "580.95.05"


def run(n):
    return gpu_host_runs.run(n, HOST)


def events(host):
    return host.file("/opt/dlbox-fixture-gpu/state/events.log").content_string.splitlines()


def test_run1_ends_green_with_pending_reboot():
    meta, log, counts, summary = run(1)
    assert meta["rc"] == 0 and counts["failed"] == 0 and counts["unreachable"] == 0, log[-4000:]
    assert summary["driver_state"] == "pending_reboot"
    assert VERSION in summary["installed"]["driver"]  # the set from the fixture repository, held
    assert any(p.startswith("pending reboot: NVIDIA driver %s is installed" % VERSION) for p in summary["pending"]), summary
    text = "\n".join(summary["text"])
    assert "pending reboot" in text and "Next:" in text and "reboot, then run the same command again" in text
    # dlbox-check ran without its GPU requirement, said as pending, not failed
    # (the YAML result format quotes the message: dlbox-check''s ..., and may fold it)
    assert "GPU requirement: pending reboot (" in " ".join(log.split())
    # the handlers ran before the summary (flushed by nvidia_driver), not after the play
    assert log.index("REBOOT NEEDED on %s" % HOST) < log.index("TASK [dlbox.stack.summary : Show the summary]")


def test_run1_left_a_machine_that_boots_into_the_driver(host):
    """What run 1 did decides what the model's reboot finds: nouveau blacklisted and the initramfs regenerated in the
    first boot (else nouveau keeps the GPU), a module built for the kernel GRUB boots (else modprobe finds none)."""
    lines = events(host)
    first = lines.index(next(line for line in lines if line.startswith("reboot from boot ")))
    boot = lines[first].rsplit(" ", 1)[1]
    assert any(re.match(r"update-initramfs .* in boot %s$" % re.escape(boot), line) for line in lines[:first]), lines
    assert re.match(r"boot \S+ kernel \S+ nouveau blacklisted loaded %s$" % re.escape(VERSION), lines[first + 1]), lines
    assert host.file("/etc/modprobe.d/dlbox-blacklist-nouveau.conf").contains("^blacklist nouveau")


def test_run2_runs_the_gpu_checks_and_passes():
    meta, log, counts, summary = run(2)
    assert meta["rc"] == 0 and counts["failed"] == 0, log[-4000:]
    assert summary["driver_state"] == "loaded" and summary["pending"] == [] and summary["next"] == []
    assert "GPU requirement: pending reboot" not in log and "pending reboot:" not in log
    assert "TASK [dlbox.stack.python_env : Run dlbox-check in every environment]" in log
    assert "Pending: nothing" in summary["text"]


def test_run3_changes_nothing():
    meta, log, counts, summary = run(3)
    assert meta["rc"] == 0 and counts["failed"] == 0 and counts["changed"] == 0, log[-4000:]
    assert summary["changed"] == [] and summary["pending"] == []


def test_if_needed_flushes_the_handlers_before_the_reboot(host):
    lines = events(host)
    start = max(i for i, line in enumerate(lines) if line.startswith("unloaded by the test in boot "))
    after = lines[start + 1:]
    boot = lines[start].rsplit(" ", 1)[1]
    assert after[:2] == ["update-initramfs -u -k all in boot %s" % boot, "reboot from boot %s" % boot], lines
    state = json.loads(host.file("/opt/dlbox-fixture-gpu/state/if_needed.json").content_string)
    assert state["state"] == "loaded" and state["loaded_version"] == VERSION


def test_connection_local_refuses_if_needed_before_any_change():
    got = gpu_host_runs.read_record("local-refusal.txt")
    assert got.startswith("Refuse a reboot that cannot continue the play (connection local)"), got
    assert "nvidia_driver_reboot: if_needed cannot work" in got and "Nothing was changed" in got
