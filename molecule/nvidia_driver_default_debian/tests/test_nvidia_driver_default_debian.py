# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""make workstation's defaults on Debian 12 (NVIDIA's repository, DKMS) on the FIXTURE GPU host (a model, NOT a GPU:
tests/fixtures/gpu_host), with the FIXTURE CUDA repository and FIXTURE Debian kernels. Every figure here is a fixture result."""

import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.environ["MOLECULE_PROJECT_DIRECTORY"], "tests"))
import gpu_host_runs  # noqa: E402  pylint: disable=wrong-import-position
from gpu_host_runs import boots  # noqa: E402  pylint: disable=wrong-import-position

HOST = "dlbox-nvidia_driver_default_debian-" + os.environ.get("MOLECULE_DISTRO", "debian12")
RUNNING, UPDATE = "6.1.0-1001-amd64", "6.1.0-1002-amd64"
VERSION = "580.95.05"


def run(n):
    return gpu_host_runs.run(n, HOST)


def test_run1_installs_nvidias_open_driver_builds_it_and_ends_pending_reboot(host):
    meta, log, counts, summary = run(1)
    assert meta["rc"] == 0 and counts["failed"] == 0, log[-5000:]
    assert summary["driver_state"] == "pending_reboot", summary
    assert host.package("nvidia-open").is_installed or host.package("nvidia-open-580").is_installed
    # the headers came from the role's defaults (prepare installs none): the running kernel's and Debian's meta
    assert host.package("linux-headers-amd64").is_installed and host.package("linux-headers-" + RUNNING).is_installed
    assert re.search(r"TASK \[dlbox\.stack\.common : Install the kernel headers meta package\] \**\nchanged:", log), log[-3000:]
    assert "nvidia/%s, %s, x86_64: installed" % (VERSION, RUNNING) in host.check_output("dkms status")


def test_the_reboot_loads_the_module_built_for_the_running_kernel(host):
    kernel, nouveau, loaded, why = boots(host)[0]
    assert (kernel, nouveau, loaded) == (RUNNING, "blacklisted", VERSION), (kernel, nouveau, loaded, why)


def test_run2_runs_every_gpu_check_and_passes():
    meta, log, counts, summary = run(2)
    assert meta["rc"] == 0 and counts["failed"] == 0, log[-5000:]
    assert summary["driver_state"] == "loaded" and summary["pending"] == [], summary
    assert "TASK [dlbox.stack.python_env : Run dlbox-check in every environment]" in log


def test_run3_changes_nothing():
    meta, log, counts, summary = run(3)
    assert meta["rc"] == 0 and counts["failed"] == 0 and counts["changed"] == 0, log[-5000:]


def test_a_kernel_update_gets_its_dkms_build_and_the_gpu_answers_after_the_reboot(host):
    assert host.package("linux-headers-" + UPDATE).is_installed
    assert "nvidia/%s, %s, x86_64: installed" % (VERSION, UPDATE) in host.check_output("dkms status")
    kernel, nouveau, loaded, why = boots(host)[-1]
    assert (kernel, loaded) == (UPDATE, VERSION), (kernel, loaded, why)
    update = json.loads(host.file("/root/dlbox-default-update.json").content_string)
    assert update["smi_rc"] == 0 and update["smi"].strip() == VERSION, update
    print("kernel update: apt upgrade %.1f s" % float(host.file("/root/dlbox-upgrade.seconds").content_string))
