# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/server.yml's defaults on Ubuntu 22.04 with an HGX H100 (NVSwitch) and Secure Boot on, on the FIXTURE GPU host
with its HGX overlay (a model, NOT a GPU: tests/fixtures/gpu_host, tests/fixtures/gpu_host/hgx), from a FIXTURE stand-in for
Ubuntu's archive (tests/aptrepo/specs/ubuntu-jammy-server.yml). Every figure here is a fixture result."""

import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.environ["MOLECULE_PROJECT_DIRECTORY"], "tests"))
import gpu_host_runs  # noqa: E402  pylint: disable=wrong-import-position
from gpu_host_runs import boots  # noqa: E402  pylint: disable=wrong-import-position

HOST = "dlbox-server_hgx_default-" + os.environ.get("MOLECULE_DISTRO", "ubuntu2204")
RUNNING, UPDATE = "5.15.0-1001-generic", "5.15.0-1002-generic"
VERSION = "580.178.04"
DROPIN_DIR = "/etc/systemd/system/nvidia-persistenced.service.d"
STATE = "/opt/dlbox-fixture-gpu/state"


def run(n):
    return gpu_host_runs.run(n, HOST)


def test_run1_installs_the_server_series_signed_module_and_fabric_manager_and_ends_pending_reboot(host):
    meta, log, counts, summary = run(1)
    assert meta["rc"] == 0 and counts["failed"] == 0, log[-5000:]
    assert summary["driver_state"] == "pending_reboot", summary
    # the signed path's server set (data/compat.yml) as apt installs it on 22.04 (tests/fixtures/driver/
    # ubuntu2204-apt-get-s-install-580-server-open-signed.txt) and the distribution's Fabric Manager
    for name in ("nvidia-headless-no-dkms-580-server-open", "nvidia-utils-580-server", "libnvidia-compute-580-server",
                 "nvidia-compute-utils-580-server", "nvidia-kernel-common-580-server", "nvidia-firmware-580-server-580.178.04",
                 "linux-modules-nvidia-580-server-open-generic", "linux-modules-nvidia-580-server-open-" + RUNNING,
                 "nvidia-fabricmanager-580", "libnvidia-nscq-580"):
        assert host.package(name).is_installed, name
    for name in ("nvidia-headless-580-server-open", "nvidia-dkms-580-server-open", "dkms", "cuda-drivers-fabricmanager-580"):
        assert not host.package(name).is_installed, name
    assert host.package("nvidia-fabricmanager-580").version.startswith(VERSION)
    # NVSwitch telemetry (NSCQ) at exactly the driver's version (data/compat.yml fabric_manager.nscq); on the signed path
    # nothing of the driver is held: a hold on NSCQ froze the driver group while the kernel moved (issue 44 red team H1)
    assert host.package("libnvidia-nscq-580").version.startswith(VERSION)
    held = host.check_output("apt-mark showhold").split()
    assert not [n for n in held if "nvidia" in n], held
    # Fabric Manager enabled, not started before the module; the persistence daemon set up, not started
    assert "not started: the NVIDIA %s module is not loaded" % VERSION in " ".join(log.split())


def test_the_reboot_blacklists_nouveau_and_secure_boot_accepts_the_signed_module(host):
    kernel, nouveau, loaded, why = boots(host)[0]
    assert (kernel, nouveau, loaded) == (RUNNING, "blacklisted", VERSION), (kernel, nouveau, loaded, why)


def test_run2_runs_every_gpu_check_and_passes():
    meta, log, counts, summary = run(2)
    assert meta["rc"] == 0 and counts["failed"] == 0, log[-5000:]
    assert summary["driver_state"] == "loaded" and summary["pending"] == [], summary
    for task in ("Check the module version for every kernel", "Wait until Fabric Manager is active",
                 "Wait until every GPU's Fabric State is Completed (nvidia-smi -q)",
                 "Enable the persistence daemon (and start it when the installed module is loaded)"):
        assert re.search(r"TASK \[dlbox\.stack\.nvidia_driver : %s\] \**\n(ok|changed):" % re.escape(task), log), task


def test_run3_changes_nothing():
    meta, log, counts, summary = run(3)
    assert meta["rc"] == 0 and counts["failed"] == 0 and counts["changed"] == 0, log[-5000:]


def test_fabric_manager_runs_forking_at_the_drivers_version_and_the_fabric_is_complete_and_full(host):
    assert host.check_output("systemctl show -p Type --value nvidia-fabricmanager.service") == "forking"
    assert host.service("nvidia-fabricmanager").is_enabled
    update = json.loads(host.file("/root/dlbox-hgx-update.json").content_string)
    fabric = update["fabric"]
    assert fabric.count("State                             : Completed") == 8, fabric
    assert fabric.count("Status                            : Success") == 8
    assert fabric.count("Bandwidth                     : Full") == 8


def test_persistence_mode_comes_from_the_roles_dropin_over_ubuntus_unit(host):
    """Ubuntu's unit as shipped (--no-persistence-mode, StopWhenUnneeded=true, no [Install]) stays; the role's drop-in
    (persistence.yml, nvidia_driver_persistence_mode's default) runs the daemon with --persistence-mode, keeps it and
    enables it; gpu_settings is off here, so nothing else turns persistence mode on."""
    path = host.check_output("systemctl show -p FragmentPath --value nvidia-persistenced.service")
    assert path.startswith(("/lib/systemd/system/", "/usr/lib/systemd/system/")), path   # where the package ships it
    unit = host.file(path).content_string
    assert "--no-persistence-mode" in unit and "StopWhenUnneeded=true" in unit and "[Install]" not in unit
    dropins = host.check_output("ls %s" % DROPIN_DIR).split()
    assert len(dropins) == 1, dropins
    dropin = host.file("%s/%s" % (DROPIN_DIR, dropins[0])).content_string
    assert dropin.startswith("# Written by dlbox.stack.nvidia_driver"), dropin
    exec_start = host.check_output("systemctl show -p ExecStart --value nvidia-persistenced.service")
    assert "--persistence-mode" in exec_start and "--no-persistence-mode" not in exec_start, exec_start
    assert host.service("nvidia-persistenced").is_enabled
    # what the model's daemon did with the command line it got (state/persistence_mode: 1 = on)
    assert host.file(STATE + "/persistence_mode").content_string.strip() == "1"
    assert not host.file("/etc/systemd/system/dlbox-gpu-settings.service").exists  # gpu_settings did not run


def test_a_kernel_update_brings_its_signed_module_and_the_gpus_answer_after_the_reboot(host):
    assert host.package("linux-modules-nvidia-580-server-open-" + UPDATE).is_installed
    kernel, nouveau, loaded, why = boots(host)[-1]
    assert (kernel, loaded) == (UPDATE, VERSION), (kernel, loaded, why)
    update = json.loads(host.file("/root/dlbox-hgx-update.json").content_string)
    assert update["smi_rc"] == 0 and update["smi"].split() == [VERSION] * 8, update
    assert update["units"] == ["active", "active"], update
    print("kernel update: apt-get upgrade %.1f s" % float(host.file("/root/dlbox-upgrade.seconds").content_string))


def test_run4_on_the_updated_kernel_passes_and_changes_nothing():
    meta, log, counts, summary = run(4)
    assert meta["rc"] == 0 and counts["failed"] == 0 and counts["changed"] == 0, log[-5000:]
    assert summary["driver_state"] == "loaded" and summary["pending"] == [], summary


def test_run5_a_degraded_fabric_fails_at_once_naming_the_bandwidth():
    meta, log, counts, _summary = run(5)
    assert meta["rc"] != 0 and counts["failed"] >= 1, log[-5000:]
    text = " ".join(log.split())
    assert "the NVLink fabric is Completed but not healthy: GPU 00000000:18:00.0 Bandwidth Degraded (Summary Limited Capacity)" in text
    assert "degraded bandwidth or an unhealthy fabric does not recover by waiting" in text
    assert "FAILED - RETRYING: [%s]: Wait until every GPU's Fabric State" % HOST not in log  # no waiting on it
