# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A month in the life of make workstation's defaults on Ubuntu 24.04 with an RTX 4090 and Secure Boot on (issue 48), on
the FIXTURE GPU host (a model, NOT a GPU: tests/fixtures/gpu_host), with a FIXTURE stand-in for Ubuntu's archive
(tests/aptrepo/specs/ubuntu-noble-signed.yml, -month.yml) and Ubuntu's REAL unattended-upgrade program. Every figure
here is a fixture result, but unattended-upgrade's decisions are the real program's."""

import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.environ["MOLECULE_PROJECT_DIRECTORY"], "tests"))
import gpu_host_runs  # noqa: E402  pylint: disable=wrong-import-position
from gpu_host_runs import boots  # noqa: E402  pylint: disable=wrong-import-position

HOST = "dlbox-nvidia_driver_month-" + os.environ.get("MOLECULE_DISTRO", "ubuntu2404")
BOOTED, NEW_KERNEL = "6.8.0-1002-generic", "6.8.0-1003-generic"
OLD, NEW = "580.178.04", "580.196.07"
KEEP = os.path.join(os.environ["MOLECULE_PROJECT_DIRECTORY"], "build", "molecule-logs", "nvidia_driver_month-runs")


def run(n):
    return gpu_host_runs.run(n, HOST)


def kept(name):
    with open(os.path.join(KEEP, name), encoding="utf-8") as handle:
        return handle.read()


def upgraded(log):
    """unattended-upgrade -v's 'Packages that will be upgraded: ...' (empty when none)."""
    found = re.findall(r"Packages that will be upgraded: (.*)$", log, re.M)
    return found[-1].split() if found else []


def test_the_steps_and_their_wall_time():
    steps = [json.loads(line) for line in kept("dlbox-month-steps.jsonl").splitlines() if line.strip()]
    for step in steps:
        print("step %s: %.1f s wall" % (step["step"], step["seconds"]))
    print(kept("dlbox-month-steps.log"))
    assert [s["step"].split()[0] for s in steps] == ["1", "2", "3", "4a", "4b"]


def test_step1_install_and_reboot(host):
    meta, log, counts, summary = run(1)
    assert meta["rc"] == 0 and counts["failed"] == 0, log[-5000:]
    assert summary["driver_state"] == "pending_reboot", summary
    meta, log, counts, summary = run(2)
    assert meta["rc"] == 0 and counts["failed"] == 0, log[-5000:]
    assert summary["driver_state"] == "loaded", summary
    assert boots(host)[0][0] == BOOTED and boots(host)[0][2] == OLD


def test_step3_control_the_old_blacklist_lets_a_kernel_come_without_its_module():
    # the role's blacklist before issue 48 (user space only, nvidia-kernel-common and the metas left out): the REAL
    # unattended-upgrade would take the kernel meta (the new kernel) and not the module meta (its module needs the new
    # point release, which the user space's blacklist keeps out)
    would = upgraded(kept("dlbox-uu-old-rule.log"))
    assert "linux-image-generic-hwe-24.04" in would, kept("dlbox-uu-old-rule.log")[-3000:]
    assert "linux-modules-nvidia-580-open-generic-hwe-24.04" not in would


def test_step3_control_the_first_issue48_blacklist_never_lets_a_kernel_come():
    # the first issue-48 rule (kernel and module metas blacklisted with the driver): no kernel ever comes unattended,
    # security kernels included (the red-team's finding)
    would = upgraded(kept("dlbox-uu-first-48-rule.log"))
    assert not [n for n in would if n.startswith(("linux-image", "linux-modules", "linux-generic"))], would


def test_step3_unattended_upgrade_moves_kernel_module_and_driver_together(host):
    # Ubuntu's design on the signed path (red-team of issue 48: the first issue-48 blacklist kept the kernel metas out
    # forever, so no security kernel came): the role blacklists nothing of the kernel, its module or the driver, and
    # the REAL unattended-upgrade moves the kernel meta, the module meta, nvidia-kernel-common and the user space together
    for name in ("dlbox-uu-dry-run.log", "dlbox-uu.log"):
        would = upgraded(kept(name))
        for package in ("linux-image-generic-hwe-24.04", "linux-modules-nvidia-580-open-generic-hwe-24.04",
                        "nvidia-kernel-common-580", "libnvidia-compute-580", "nvidia-driver-580-open"):
            assert package in would, (name, package, would)
    steps = kept("dlbox-month-steps.log")
    step3 = steps.split("== step 3")[1].split("== step 4")[0]
    # the new kernel booted with its module and the driver it was built against: the GPU answers
    assert "running kernel %s; nvidia-smi: %s" % (NEW_KERNEL, NEW) in step3, step3
    assert boots(host)[1][0] == NEW_KERNEL and boots(host)[1][2] == NEW


def test_step4_update_finds_the_newest_point_release_installed(host):
    # unattended-upgrades moved the branch to its newest point release in step 3: nvidia_driver_update: true has nothing
    # to do (its one transaction is tested by the REAL apt in tests/unit/.../test_nvidia_driver_update_apt.py)
    meta, log, counts, summary = run(3)
    assert meta["rc"] == 0 and counts["failed"] == 0, log[-5000:]
    text = " ".join(log.split())
    assert "%s is installed, the newest point release of the branch; nothing to update" % NEW in text, text[-4000:]
    assert summary["driver_state"] == "loaded", summary
    step4a = kept("dlbox-month-steps.log").split("== step 4a")[1].split("== step 4b")[0]
    for name in ("nvidia-kernel-common-580", "libnvidia-compute-580", "nvidia-driver-580-open"):
        assert re.search(r"^%s %s-" % (name, re.escape(NEW)), step4a, re.M), (name, step4a)
    # the module of the booted kernel (respun) and the new kernel's module came with the kernel
    assert re.search(r"^linux-modules-nvidia-580-open-%s 6\.8\.0-1002\.1002\+1$" % re.escape(BOOTED), step4a, re.M), step4a
    assert re.search(r"^linux-modules-nvidia-580-open-%s " % re.escape(NEW_KERNEL), step4a, re.M), step4a
    meta, log, counts, summary = run(4)
    assert meta["rc"] == 0 and counts["failed"] == 0, log[-5000:]
    assert summary["driver_state"] == "loaded", summary
    assert boots(host)[-1][0] == NEW_KERNEL and boots(host)[-1][2] == NEW, boots(host)
    assert host.check_output("nvidia-smi --query-gpu=driver_version --format=csv,noheader") == NEW
