# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""nvidia_driver_update (issue 48): a point release of the installed branch in one apt transaction. The versions are
Ubuntu's noble-updates R580 of the recorded stanzas (tests/fixtures/holds/: 580.196.07 now, the per-ABI module of
6.8.0-149 built against 580.178.04); the simulations are BUILT in apt-get -s's line format (Inst NAME [OLD] (NEW
ORIGIN [ARCH]), Remv NAME [OLD]: recorded tests/fixtures/kernel/ubuntu2404/apt-get-s-*.txt)."""

from __future__ import annotations

from ansible_collections.dlbox.stack.plugins.plugin_utils import nvidia_driver_update as nu

FAMILY = ["*nvidia*", "libcuda*", "libnvcuvid*", "libnvoptix*", "libnvidia*", "cuda-drivers*"]
OLD = "580.178.04-0ubuntu0.24.04.1"
NEW = "580.196.07-0ubuntu0.24.04.1"
SERVER = ["nvidia-headless-no-dkms-580-server-open", "nvidia-utils-580-server", "libnvidia-compute-580-server", "nvidia-kernel-common-580-server",
          "nvidia-compute-utils-580-server", "nvidia-fabricmanager-580", "libnvidia-nscq-580"]


def installed(names=None, version=OLD, extra=()):
    names = SERVER if names is None else names
    return [{"name": n, "version": version, "arch": "amd64"} for n in names] + [
        {"name": n, "version": v, "arch": "amd64"} for n, v in extra] + [{"name": "bash", "version": "5.2.21-2ubuntu4", "arch": "amd64"}]


def sim(names, version=NEW, removes=(), rc=0):
    lines = ["Remv %s [6.8.0-149.149]" % n for n in removes]
    lines += ["Inst %s [%s] (%s Ubuntu:24.04/noble-updates [amd64])" % (n, OLD, version) for n in names]
    lines += ["Conf %s (%s Ubuntu:24.04/noble-updates [amd64])" % (n, version) for n in names]
    return {"stdout": "\n".join(lines) + "\n", "stderr": "", "rc": rc}


def test_update_names_every_installed_package_of_the_branch_but_the_per_abi_modules():
    got = nu.update_names(installed(extra=[("linux-modules-nvidia-580-server-open-generic", "6.8.0-151.151+1"),
                                           ("linux-modules-nvidia-580-server-open-6.8.0-151-generic", "6.8.0-151.151+1")]), FAMILY, 580)
    assert got == SERVER + ["linux-modules-nvidia-580-server-open-generic"]
    assert "bash" not in got


def test_a_point_release_moves_driver_fm_nscq_and_persistenced_together():
    out = nu.update_plan(installed(), FAMILY, 580, sim(SERVER), fm_package="nvidia-fabricmanager-580")
    assert out["ok"] and out["action"] == "update"
    assert (out["installed_version"], out["available_version"]) == ("580.178.04", "580.196.07")
    assert out["install_names"] == ["%s=%s" % (n, NEW) for n in SERVER]
    assert "installed 580.178.04, available 580.196.07" in out["message"] and "pending reboot" in out["message"]


def test_nothing_to_update():
    out = nu.update_plan(installed(version=NEW), FAMILY, 580, sim([]))
    assert out["ok"] and out["action"] == "none" and out["install_names"] == []
    assert "580.196.07 is installed, the newest point release" in out["message"]


def test_fabric_manager_left_behind_is_refused():
    out = nu.update_plan(installed(), FAMILY, 580, sim([n for n in SERVER if n != "nvidia-fabricmanager-580"]),
                         fm_package="nvidia-fabricmanager-580")
    assert not out["ok"] and out["action"] == "refuse"
    assert "nvidia-fabricmanager-580 at 580.178.04 while the driver moves to 580.196.07" in out["message"]
    assert "Nothing was changed." in out["message"]


def test_two_versions_or_another_branch_are_refused():
    mixed = sim(SERVER[:3])
    mixed["stdout"] += "Inst libnvidia-nscq-580 [%s] (580.200.01-0ubuntu1 NVIDIA:/ [amd64])\n" % OLD
    out = nu.update_plan(installed(), FAMILY, 580, mixed)
    assert not out["ok"] and "two driver versions" in out["message"]
    slide = sim(SERVER)
    slide["stdout"] += "Inst nvidia-kernel-common-590-server (590.44.01-0ubuntu1 Ubuntu:24.04/noble-updates [amd64])\n"
    assert "of branch 590" in nu.update_plan(installed(), FAMILY, 580, slide)["message"]


def test_only_modules_of_older_kernels_may_go():
    ok = nu.update_plan(installed(), FAMILY, 580, sim(SERVER, removes=["linux-modules-nvidia-580-server-open-6.8.0-149-generic"]))
    assert ok["ok"] and ok["removes"] == ["linux-modules-nvidia-580-server-open-6.8.0-149-generic"]
    assert "modules of older kernels" in ok["message"]
    bad = nu.update_plan(installed(), FAMILY, 580, sim(SERVER, removes=["nvidia-fabricmanager-580"]))
    assert not bad["ok"] and "apt would remove nvidia-fabricmanager-580" in bad["message"]


def test_apt_failure_is_refused():
    failed = {"stdout": "", "stderr": "E: Unable to correct problems, you have held broken packages.\n", "rc": 100}
    out = nu.update_plan(installed(), FAMILY, 580, failed)
    assert not out["ok"] and "held broken packages" in out["message"]


def test_gpu_processes_refuse_the_update_unless_forced():
    apps = nu.compute_apps("4242, /usr/bin/python3, 20480 MiB\n4300, ./train, 1024 MiB\n", 0)
    assert [p["pid"] for p in apps["processes"]] == [4242, 4300]
    out = nu.update_plan(installed(), FAMILY, 580, sim(SERVER), apps=apps)
    assert not out["ok"] and "4242 /usr/bin/python3" in out["message"] and "nvidia_driver_update_force" in out["message"]
    forced = nu.update_plan(installed(), FAMILY, 580, sim(SERVER), apps=apps, force=True)
    assert forced["ok"] and forced["action"] == "update"


def test_compute_apps_without_a_driver_and_after_a_mismatch():
    # exit 9: "NVIDIA Driver is not loaded" (nvidia-smi(1)); the line recorded in tests/fixtures/doctor/smi-cannot-communicate.txt
    none = nu.compute_apps("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.", 9)
    assert none == {"known": True, "processes": [], "daemons": [], "reason": "no NVIDIA driver is loaded"}
    # exit 18 with the mismatch line (tinygrad/open-gpu-kernel-modules#47): processes cannot be listed
    mismatch = nu.compute_apps("Failed to initialize NVML: Driver/library version mismatch\n", 18)
    assert not mismatch["known"]
    out = nu.update_plan(installed(), FAMILY, 580, sim(SERVER), apps=mismatch)
    assert not out["ok"] and "Cannot tell whether GPU processes run" in out["message"]
    assert nu.compute_apps("", 0) == {"known": True, "processes": [], "daemons": [], "reason": ""}


def test_the_update_never_names_a_firmware_package_by_its_version():
    # noble-updates: nvidia-kernel-common-580-server 580.196.07 Depends nvidia-firmware-580-server-580.196.07
    # (tests/fixtures/holds/): apt brings the new name; the old one, named, would count as installed by hand and stay,
    # and (never upgraded: a new name replaces it) refuse every update as "left at 580.178.04"
    fw = [("nvidia-firmware-580-server-580.178.04", OLD)]
    assert "nvidia-firmware-580-server-580.178.04" not in nu.update_names(installed(extra=fw), FAMILY, 580)
    out = nu.update_plan(installed(extra=fw), FAMILY, 580, sim(SERVER))
    assert out["ok"] and out["action"] == "update", out["message"]


# nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader on a DCGM-managed host: BUILT in the
# query's format (the lines of the tests above: "PID, PATH, N MiB"). No public recorded output of this query listing
# nv-hostengine was found (search, 2026-12-06); the one public record of these daemons on a GPU (a GKE GPU-reset script,
# "Run 8f", public GitHub) found nvidia-persistenced, nv-hostengine, dcgm-exporter and the device plugin holding
# /dev/nvidia7 open while this query printed none: the guard is for a host where they hold a CUDA context (DCGM's
# profiling module), so that NVIDIA's own services never count as the user's work.
DCGM_HOST = ("2210, /usr/bin/nv-hostengine, 512 MiB\n"
             "2210, /usr/bin/nv-hostengine, 512 MiB\n"
             "1875, /usr/bin/nv-fabricmanager, 0 MiB\n"
             "1402, /usr/bin/nvidia-persistenced, 0 MiB\n"
             "3090, /usr/bin/dcgm-exporter, 0 MiB\n")


def test_nvidias_own_daemons_are_not_gpu_processes():
    apps = nu.compute_apps(DCGM_HOST, 0)
    assert apps["processes"] == []
    assert [p["pid"] for p in apps["daemons"]] == [2210, 2210, 1875, 1402, 3090]
    out = nu.update_plan(installed(), FAMILY, 580, sim(SERVER), apps=apps)
    assert out["ok"] and out["action"] == "update", out["message"]
    assert "not counted as GPU processes: dcgm-exporter, nv-fabricmanager, nv-hostengine, nvidia-persistenced" in out["message"]


def test_a_user_process_beside_the_daemons_still_refuses():
    apps = nu.compute_apps(DCGM_HOST + "4242, /usr/bin/python3, 20480 MiB\n", 0)
    assert [p["pid"] for p in apps["processes"]] == [4242]
    out = nu.update_plan(installed(), FAMILY, 580, sim(SERVER), apps=apps)
    assert not out["ok"] and "4242 /usr/bin/python3" in out["message"] and "nv-hostengine" not in out["message"]
    # a name that only starts like a daemon's is the user's
    assert nu.compute_apps("77, /opt/x/nv-hostengine-wrapper, 10 MiB\n", 0)["processes"][0]["pid"] == 77
