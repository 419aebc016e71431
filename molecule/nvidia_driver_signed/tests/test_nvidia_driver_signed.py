# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""make workstation's defaults on Ubuntu 24.04 with an RTX 4090 and Secure Boot on, on the FIXTURE GPU host (a model,
NOT a GPU: tests/fixtures/gpu_host), from a FIXTURE stand-in for Ubuntu's archive (tests/aptrepo/specs/ubuntu-noble-signed.yml).
Every figure here is a fixture result."""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.environ["MOLECULE_PROJECT_DIRECTORY"], "tests"))
import gpu_host_runs  # noqa: E402  pylint: disable=wrong-import-position
from gpu_host_runs import boots  # noqa: E402  pylint: disable=wrong-import-position

HOST = "dlbox-nvidia_driver_signed-" + os.environ.get("MOLECULE_DISTRO", "ubuntu2404")
RUNNING, NEXT, UPDATE = "6.8.0-1001-generic", "6.8.0-1002-generic", "6.8.0-1003-generic"
VERSION = "580.178.04"


def run(n):
    return gpu_host_runs.run(n, HOST)


def test_run1_installs_the_distribution_driver_and_the_signed_module_and_ends_pending_reboot(host):
    meta, log, counts, summary = run(1)
    assert meta["rc"] == 0 and counts["failed"] == 0, log[-5000:]
    assert summary["driver_state"] == "pending_reboot", summary
    # the signed path's desktop set (data/compat.yml), as ubuntu-drivers installs it: nvidia-driver-580-open and the module
    # flavour meta, whose Provides nvidia-dkms-580-open stands for the DKMS package; nvidia-driver-580-open's Depends (Ubuntu's
    # noble-updates Packages, tests/fixtures/indexes/ubuntu): NVENC/NVDEC, FBC, the extra libraries, the X driver
    for name in ("nvidia-driver-580-open", "linux-modules-nvidia-580-open-generic-hwe-24.04", "linux-modules-nvidia-580-open-" + NEXT,
                 "libnvidia-gl-580", "libnvidia-compute-580", "libnvidia-extra-580", "libnvidia-decode-580", "libnvidia-encode-580",
                 "libnvidia-fbc1-580", "libnvidia-cfg1-580", "nvidia-compute-utils-580", "nvidia-utils-580",
                 "xserver-xorg-video-nvidia-580", "nvidia-kernel-common-580", "nvidia-kernel-source-580-open"):
        assert host.package(name).is_installed, name
    assert not host.package("nvidia-headless-no-dkms-580-open").is_installed  # --gpgpu's set, not the desktop's
    assert not host.package("nvidia-dkms-580-open").is_installed  # the module flavour meta Provides it
    assert not host.package("dkms").is_installed  # the signed path builds nothing
    assert not host.package("linux-modules-nvidia-580-open-" + RUNNING).is_installed  # the archive has none
    text = " ".join(log.split())
    assert RUNNING in text and NEXT in text  # the pending reason names both kernels


def test_the_reboot_boots_the_next_kernel_and_secure_boot_accepts_its_module(host):
    kernel, nouveau, loaded, why = boots(host)[0]
    assert (kernel, nouveau, loaded) == (NEXT, "blacklisted", VERSION), (kernel, nouveau, loaded, why)


def test_run2_runs_every_gpu_check_and_passes():
    meta, log, counts, summary = run(2)
    assert meta["rc"] == 0 and counts["failed"] == 0, log[-5000:]
    assert summary["driver_state"] == "loaded" and summary["pending"] == [], summary
    assert "TASK [dlbox.stack.python_env : Run dlbox-check in every environment]" in log


def test_run3_changes_nothing():
    meta, log, counts, summary = run(3)
    assert meta["rc"] == 0 and counts["failed"] == 0 and counts["changed"] == 0, log[-5000:]


def test_a_kernel_update_brings_its_signed_module_and_the_gpu_answers_after_the_reboot(host):
    assert host.package("linux-modules-nvidia-580-open-" + UPDATE).is_installed
    kernel, nouveau, loaded, why = boots(host)[-1]
    assert (kernel, loaded) == (UPDATE, VERSION), (kernel, loaded, why)
    update = json.loads(host.file("/root/dlbox-signed-update.json").content_string)
    assert update["smi_rc"] == 0 and update["smi"].strip() == VERSION, update
    print("kernel update: apt upgrade %.1f s" % float(host.file("/root/dlbox-upgrade.seconds").content_string))
