# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The FIXTURE GPU host's nouveau binds by chip and kernel (issue 44 red team M2; tests/fixtures/gpu_host/bin/fixture-lib.sh
nouveau_knows_gpu_on says why): nouveau takes a GPU only when its kernel's chipset table has the chip, else
"unknown chipset (%08x)" and -ENODEV (nvkm/engine/device/base.c). GH100 entered the table in Linux 6.16
("drm/nouveau: add support for GH100", the 6.16 drm pull's "enable Hopper/Blackwell support"). So an H100 on Ubuntu 22.04's
5.15 kernel boots with the NVIDIA module and no blacklist, on a 6.16 kernel nouveau holds it; an RTX 4090 (AD102) is
nouveau's on the model's kernels, as before. The captures are the recorded lspci of tests/fixtures/lspci."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest
from test_gpu_host_kernel_stubs import lay_module, model, stub  # beside this file: the same temporary model

ROOT = Path(__file__).resolve().parents[3]
LSPCI = ROOT / "tests" / "fixtures" / "lspci"


@pytest.mark.parametrize("capture, kernel, nouveau, loaded", [
    ("h100-sxm5-4x-grep-nvidia.lspci-nn.txt", "5.15.0-1001-generic", "unknown-chipset", True),
    ("h100-sxm5-4x-grep-nvidia.lspci-nn.txt", "6.16.0-1-generic", "bound", False),
    ("rtx4090-desktop.lspci-nn.txt", "5.15.0-1001-generic", "bound", False),
    ("rtx4090-desktop.lspci-nn.txt", "6.8.0-31-generic", "bound", False),
])
def test_nouveau_takes_the_gpu_only_where_the_kernel_knows_its_chip(tmp_path, capture, kernel, nouveau, loaded):
    fx, host, env = model(tmp_path, kernels=(kernel,), running=kernel)
    shutil.copy(LSPCI / capture, fx / "share/lspci-nn.txt")
    lay_module(host, kernel=kernel)
    booted = stub(env, "reboot")
    assert booted.returncode == 0, booted.stderr
    events = (fx / "state/events.log").read_text().splitlines()
    assert " kernel %s nouveau %s loaded " % (kernel, nouveau) in events[-1] + " ", events
    assert (fx / "state/nouveau_bound").exists() == (nouveau == "bound")
    assert ((fx / "state/loaded_version").exists()) == loaded
    dmesg = (fx / "state/dmesg").read_text() if (fx / "state/dmesg").exists() else ""
    if nouveau == "unknown-chipset":
        assert "nouveau 0000:06:00.0: unknown chipset (180000a1)" in dmesg
    else:
        assert "NVRM: The NVIDIA probe routine was not called" in dmesg and "unknown chipset" not in dmesg


def test_a_blacklist_still_says_blacklisted_whatever_the_chip(tmp_path):
    kernel = "5.15.0-1001-generic"
    fx, host, env = model(tmp_path, kernels=(kernel,), running=kernel)
    shutil.copy(LSPCI / "h100-sxm5-4x-grep-nvidia.lspci-nn.txt", fx / "share/lspci-nn.txt")
    lay_module(host, kernel=kernel)
    (host / "etc/modprobe.d").mkdir(parents=True)
    (host / "etc/modprobe.d/blacklist-nouveau.conf").write_text("blacklist nouveau\n")
    # the initramfs regenerated after it (what bin/update-initramfs records)
    (fx / ("state/initramfs-" + kernel)).write_text("%d\n" % (int(time.time()) + 5))
    assert stub(env, "reboot").returncode == 0
    assert " nouveau blacklisted loaded " in (fx / "state/events.log").read_text().splitlines()[-1]
