# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""dlbox.stack.nvidia_driver_facts with its commands answered by recorded outputs (no command runs here).

The texts are the FIXTURE captures of tests/fixtures/driver (real output of the Debian 12 test container) and
dpkg-query lines in dpkg's own format; the module's parsing and the simulation's copy of dpkg's status are real.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.dlbox.stack.plugins.modules import nvidia_driver_facts as facts

FIX = Path(__file__).resolve().parents[3] / "fixtures" / "driver"
DPKG = "nvidia-kernel-dkms\t535.309.01-0+deb12u1\tamd64\tii \nold-thing\t1.0\tamd64\trc \nbash\t5.2.15-2+b7\tamd64\tii \n"


def run_module(capsys, monkeypatch, args, answers):
    calls = []

    def run_command(self, argv, **kwargs):
        calls.append(list(argv))
        for prefix, answer in answers.items():
            if " ".join(argv).startswith(prefix):
                return answer
        return 0, "", ""

    monkeypatch.setattr(facts.AnsibleModule, "run_command", run_command)
    monkeypatch.setattr(facts.AnsibleModule, "get_bin_path", lambda self, name, *a, **k: "/usr/bin/" + name)
    with patch_module_args(args):
        with pytest.raises(SystemExit) as exc:
            facts.main()
    assert exc.value.code == 0
    result = json.loads(capsys.readouterr().out)
    assert result["changed"] is False
    return result, calls


def test_installed_packages_leave_out_removed_ones(capsys, monkeypatch):
    result, calls = run_module(capsys, monkeypatch, {}, {"dpkg-query -W": (0, DPKG, "")})
    assert result["installed"] == [{"name": "nvidia-kernel-dkms", "version": "535.309.01-0+deb12u1", "arch": "amd64", "status": "ii"},
                                   {"name": "bash", "version": "5.2.15-2+b7", "arch": "amd64", "status": "ii"}]
    assert calls == [facts.DPKG_QUERY]


def test_plain_simulation_dkms_and_madison(capsys, monkeypatch):
    sim = (FIX / "debian12-apt-get-s-install-compute-set.txt").read_text(encoding="utf-8")
    dkms = (FIX / "debian12-dkms-status.txt").read_text(encoding="utf-8")
    result, calls = run_module(capsys, monkeypatch, {
        "simulate": {"packages": ["nvidia-kernel-dkms", "nvidia-smi"], "recommends": False, "sandbox": False},
        "madison": ["nvidia-fabricmanager"],
        "dkms": {"module": "nvidia-current", "version": "535.309.01", "kernels": ["6.1.0-57-amd64", "6.1.0-99-amd64"]},
    }, {"dpkg-query -W": (0, DPKG, ""), "apt-get -s": (0, sim, ""), "/usr/bin/dkms status": (0, dkms, ""),
        "apt-cache madison": (0, "nvidia-fabricmanager | 580.95.05-1 | http://x ./ Packages\n", "")})
    assert ["apt-get", "-s", "-o", "APT::Install-Recommends=false", "install", "nvidia-kernel-dkms", "nvidia-smi"] in calls
    assert result["simulation"]["rc"] == 0 and result["simulation"]["stdout"] == sim
    assert result["madison"].startswith("nvidia-fabricmanager | 580.95.05-1")
    assert "6.1.0-99-amd64" in result["dkms_missing"]
    assert result["dkms_status"]


def test_mok_answer_is_parsed(capsys, monkeypatch, tmp_path):
    cert = tmp_path / "MOK.der"
    cert.write_bytes(b"x")
    result, _calls = run_module(capsys, monkeypatch, {"mok_key": str(tmp_path / "MOK.priv"), "mok_certificate": str(cert)},
                                {"dpkg-query -W": (0, "", ""), "/usr/bin/mokutil --test-key": (1, "%s is not enrolled\n" % cert, "")})
    assert result["mok"]["key_exists"] is False and result["mok"]["certificate_exists"] is True
    assert result["mok"]["state"] == "not-enrolled"


def test_status_without_the_removed_packages():
    status = ("Package: nvidia-open\nStatus: install ok installed\nVersion: 580.95.05-1\n\n"
              "Package: bash\nStatus: install ok installed\nVersion: 5.2\n\n"
              "Package: nvidia-driver-cuda\nStatus: install ok installed\n\n\n"
              "Package: nvidia-open-580\nVersion: 580.95.05-1\n")
    out = facts.without_packages(status, ["nvidia-open", "nvidia-driver-cuda"])
    assert out == ("Package: bash\nStatus: install ok installed\nVersion: 5.2\n\n"
                   "Package: nvidia-open-580\nVersion: 580.95.05-1\n\n")


def test_kernel_probe_reads_metas_boot_and_the_module_names_for_those_kernels(capsys, monkeypatch, tmp_path):
    # dpkg-query's answer: the recorded HWE desktop status (tests/fixtures/kernel, real control data, built status)
    kfix = FIX.parent / "kernel" / "ubuntu2404"
    dpkg_kernel = "".join(l for l in (kfix / "dpkg-query-kernel-hwe-desktop.txt").read_text(encoding="utf-8").splitlines(True)
                          if not l.startswith("#"))
    names = "".join(l for l in (kfix / "apt-cache-pkgnames-linux-modules-nvidia-580-open.txt").read_text(encoding="utf-8")
                    .splitlines(True) if not l.startswith("#"))
    monkeypatch.setattr(facts.glob, "glob", lambda pattern: ["/boot/vmlinuz-6.8.0-31-generic"] if pattern == "/boot/vmlinuz-*" else [])
    monkeypatch.setattr(facts.os, "uname", type("U", (), {"release": "6.8.0-31-generic"}))
    result, calls = run_module(capsys, monkeypatch, {"kernel": True}, {
        "dpkg-query -W -f ${Package}\t${Version}\t${db:Status-Abbrev}\t${Depends}": (0, dpkg_kernel, ""),
        "dpkg-query -W": (0, DPKG, ""),
        "apt-cache pkgnames linux-modules-nvidia-": (0, names, "")})
    kernel = result["kernel"]
    assert kernel["running"] == "6.8.0-31-generic" and kernel["boot"] == ["6.8.0-31-generic"]
    # /boot has only the old kernel; the newest one dpkg has is not there yet: /boot decides (grub's menu)
    assert kernel["next_boot"] == "6.8.0-31-generic"
    assert {"name": "linux-image-generic-hwe-24.04", "version": "7.0.0-44.44~24.04.1", "installed": True,
            "depends": "linux-image-7.0.0-44-generic, linux-modules-7.0.0-44-generic, linux-main-modules-zfs-7.0.0-44-generic, "
                       "linux-main-modules-v4l2loopback-7.0.0-44-generic, linux-firmware, intel-microcode, amd64-microcode"} in kernel["packages"]
    assert "linux-modules-nvidia-580-open-7.0.0-44-generic" in kernel["module_names"]
    assert "linux-modules-nvidia-580-open-generic-hwe-24.04" in kernel["module_names"]
    assert "linux-modules-nvidia-580-open-6.8.0-151-generic" not in kernel["module_names"]
