# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""unattended-upgrades' DEFAULT origins, read from the host's own configuration (issue 48 red team M7): which driver
packages and kernels an unattended run takes. Inputs are the packages' real default files (tests/fixtures/unattended/,
mvo5/unattended-upgrades at the release each distribution ships; sources in tests/fixtures/SOURCES.md), the
``apt-config dump`` real apt makes of them, a RECORDED Debian 12 ``apt-cache policy`` / ``apt-get -s upgrade`` and
RECORDED Ubuntu simulations (tests/fixtures/driver/)."""

from __future__ import annotations

import os

from ansible_collections.dlbox.stack.plugins.plugin_utils import nvidia_driver_unattended as nu

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", ".."))
FIX = os.path.join(ROOT, "tests", "fixtures", "unattended")


def _read(*parts):
    with open(os.path.join(ROOT, "tests", "fixtures", *parts), encoding="utf-8") as fh:
        return fh.read()


def _ubuntu_policy(series, version, esm=True):
    """``apt-cache policy``'s package files of an Ubuntu host in apt's format (the release fields as Ubuntu's Release
    files carry them: Origin/Label Ubuntu, Suite <series>[-pocket], Codename <series>; Ubuntu Pro's esm.ubuntu.com:
    Origin UbuntuESM / UbuntuESMApps, Suite <series>-infra-security / -apps-security, data/compat.yml origins_also)."""
    text = "Package files:\n 100 /var/lib/dpkg/status\n     release a=now\n"
    for pocket in ("", "-updates", "-security"):
        for comp in ("main", "restricted", "universe", "multiverse"):
            host = "security.ubuntu.com" if pocket == "-security" else "archive.ubuntu.com"
            text += (" 500 http://%s/ubuntu %s%s/%s amd64 Packages\n     release v=%s,o=Ubuntu,a=%s%s,n=%s,l=Ubuntu,c=%s,"
                     "b=amd64\n     origin %s\n" % (host, series, pocket, comp, version, series, pocket, series, comp, host))
    if esm:
        for origin, suite in (("UbuntuESMApps", "apps-security"), ("UbuntuESM", "infra-security")):
            fields = (suite.split("-", maxsplit=1)[0], series, suite, version, origin, series, suite, series, origin)
            text += (" 510 https://esm.ubuntu.com/%s/ubuntu %s-%s/main amd64 Packages\n     release v=%s,o=%s,a=%s-%s,n=%s,"
                     "l=%s,c=main,b=amd64\n     origin esm.ubuntu.com\n" % fields)
    text += (" 500 https://developer.download.nvidia.com/compute/cuda/repos/%s/x86_64  Packages\n     release o=NVIDIA,"
             "l=NVIDIA CUDA,c=,b=\n     origin developer.download.nvidia.com\n" % ("ubuntu" + version.replace(".", "")))
    return text + "Pinned packages:\n"


def test_the_real_default_files_read_as_unattended_upgrades_reads_them():
    ubuntu = nu.read_config(_read("unattended", "apt-config-dump-Ubuntu-2.9.1.txt"))
    assert ubuntu["periodic"] == "1" and ubuntu["origins_pattern"] == [] and ubuntu["blacklist"] == []
    assert nu.origin_patterns(ubuntu, "Ubuntu", "noble") == [
        "o=Ubuntu,a=noble", "o=Ubuntu,a=noble-security", "o=UbuntuESMApps,a=noble-apps-security",
        "o=UbuntuESM,a=noble-infra-security"]
    legacy = nu.origin_patterns(nu.read_config(_read("unattended", "apt-config-dump-Ubuntu-2.13.txt")), "Ubuntu", "jammy")
    assert "o=UbuntuESM,a=jammy-infra-legacy-security" in legacy and "o=Ubuntu,a=jammy-updates" not in legacy
    debian = nu.read_config(_read("unattended", "apt-config-dump-Debian-2.9.1.txt"))
    assert debian["allowed_origins"] == [] and nu.origin_patterns(debian, "Debian", "bookworm") == [
        "origin=Debian,codename=bookworm,label=Debian", "origin=Debian,codename=bookworm,label=Debian-Security",
        "origin=Debian,codename=bookworm-security,label=Debian-Security"]


def test_debian_12_defaults_take_the_point_release_and_security_not_bookworm_updates():
    releases = nu.policy_releases(_read("unattended", "debian12-apt-cache-policy.txt"))
    patterns = nu.origin_patterns(nu.read_config(_read("unattended", "apt-config-dump-Debian-2.9.1.txt")), "Debian", "bookworm")
    taken = dict((r["n"], nu.allowed(r, patterns)) for r in releases if r.get("n"))
    assert taken == {"bookworm-security": True, "bookworm-updates": False, "bookworm": True}
    sim = nu.simulated(_read("unattended", "debian12-apt-get-s-upgrade.txt"))
    by_name = dict((i["name"], i) for i in sim["installs"])
    assert by_name["liblzma5"]["sources"] == [("Debian-Security", "12", "oldstable-security")]
    assert all(nu.from_allowed_origin(i, releases, patterns) for i in sim["installs"])
    # a site that takes only the security archive: the point release's packages stay
    only_security = ["origin=Debian,codename=${distro_codename}-security,label=Debian-Security"]
    only_security = nu.origin_patterns({"origins_pattern": only_security}, "Debian", "bookworm")
    assert not nu.from_allowed_origin(by_name["bash"], releases, only_security)
    assert nu.from_allowed_origin(by_name["libgcrypt20"], releases, only_security)


def _signed_sim(series, driver_pockets, kernel_pockets, version="24.04"):
    """A signed-path upgrade in apt-get -s's form, the Ubuntu packages' names and pockets as RECORDED
    (tests/fixtures/driver/ubuntu2204-apt-get-s-install-580-server-open-signed.txt: ``Ubuntu:22.04/jammy-updates,
    Ubuntu:22.04/jammy-security``): a driver point release and a new kernel with its signed module."""
    def rel(pockets):
        return ", ".join("Ubuntu:%s/%s%s" % (version, series, p) for p in pockets)
    drv = "580.196.07-0ubuntu0.%s.1" % version
    lines = ["Inst %s [580.178.04-0ubuntu0.%s.1] (%s %s [amd64])" % (n, version, drv, rel(driver_pockets))
             for n in ("nvidia-kernel-common-580", "libnvidia-compute-580", "nvidia-utils-580")]
    lines += ["Inst linux-image-generic [6.8.0-149.149] (6.8.0-151.151 %s [amd64])" % rel(kernel_pockets),
              "Inst linux-image-6.8.0-151-generic (6.8.0-151.151 %s [amd64])" % rel(kernel_pockets),
              "Inst linux-modules-nvidia-580-open-generic [6.8.0-149.149] (6.8.0-151.151+1 %s [amd64])" % rel(kernel_pockets),
              "Inst linux-modules-nvidia-580-open-6.8.0-151-generic (6.8.0-151.151+1 %s [amd64])" % rel(kernel_pockets)]
    return "\n".join(lines) + "\n"


UBUNTU_DUMP = "apt-config-dump-Ubuntu-2.9.1.txt"
INSTALLED = ["linux-image-6.8.0-149-generic", "linux-modules-nvidia-580-open-6.8.0-149-generic", "nvidia-kernel-common-580"]


def _decide(sim, series="noble", version="24.04", dump=UBUNTU_DUMP, **kw):
    return nu.decide(sim, _ubuntu_policy(series, version), _read("unattended", dump), "Ubuntu", series, INSTALLED, **kw)


def test_ubuntu_default_a_kernel_in_security_whose_driver_is_in_updates_only_comes_alone():
    # the all-origins check (nvidia_driver_holds.kernel_without_module) sees the module come with the kernel: silence
    sim = _signed_sim("noble", ["-updates"], ["-updates", "-security"])
    from ansible_collections.dlbox.stack.plugins.plugin_utils import nvidia_driver_holds as nh
    assert nh.kernel_without_module(sim, INSTALLED) == []
    out = _decide(sim)
    assert out["enabled"] and not out["driver"]["moves"]
    assert [k["kernel"] for k in out["kernels_alone"]] == ["6.8.0-151-generic"]
    assert "noble-updates" in out["message"] and "WITHOUT its NVIDIA module" in out["message"]


def test_ubuntu_default_driver_and_kernel_both_in_security_move_together():
    out = _decide(_signed_sim("noble", ["-updates", "-security"], ["-updates", "-security"]))
    assert out["driver"]["moves"] and out["kernels_with_module"] == ["6.8.0-151-generic"] and out["kernels_alone"] == []


def test_ubuntu_default_a_kernel_in_updates_only_is_not_taken():
    out = _decide(_signed_sim("jammy", ["-updates"], ["-updates"], "22.04"), series="jammy", version="22.04")
    assert out["kernels_alone"] == [] and [k["kernel"] for k in out["kernels_not_taken"]] == ["6.8.0-151-generic"]
    assert "not taken unattended" in out["message"]


def test_a_site_that_adds_updates_takes_both():
    dump = _read("unattended", UBUNTU_DUMP) + 'Unattended-Upgrade::Allowed-Origins:: "${distro_id}:${distro_codename}-updates";\n'
    out = nu.decide(_signed_sim("noble", ["-updates"], ["-updates", "-security"]), _ubuntu_policy("noble", "24.04"), dump,
                    "Ubuntu", "noble", INSTALLED)
    assert out["driver"]["moves"] and out["kernels_with_module"] == ["6.8.0-151-generic"]


def test_the_roles_blacklist_or_a_hold_keeps_the_driver_and_the_kernel_comes_alone():
    sim = _signed_sim("noble", ["-updates", "-security"], ["-updates", "-security"])
    assert [k["kernel"] for k in _decide(sim, role_blacklist=["libnvidia-compute-580"])["kernels_alone"]] == ["6.8.0-151-generic"]
    assert [k["kernel"] for k in _decide(sim, held=["nvidia-utils-580:amd64"])["kernels_alone"]] == ["6.8.0-151-generic"]
    # keep_out blacklists the kernel metas too: the kernel is not taken either
    kept = _decide(sim, role_blacklist=["libnvidia-compute-580", "linux-image-generic"])
    assert kept["kernels_alone"] == [] and [k["kernel"] for k in kept["kernels_not_taken"]] == ["6.8.0-151-generic"]


def test_an_older_kernels_module_the_upgrade_removes_keeps_the_driver_back():
    sim = _signed_sim("noble", ["-updates", "-security"], ["-updates", "-security"])
    out = _decide(sim + "Remv linux-modules-nvidia-580-open-6.8.0-149-generic [6.8.0-149.149]\n")
    assert not out["driver"]["moves"] and "removes nothing" in " ".join(out["driver"]["why"])
    assert [k["kernel"] for k in out["kernels_alone"]] == ["6.8.0-151-generic"]


def test_nvidias_repository_is_in_no_default():
    # NVIDIA's CUDA repository as apt-cache policy prints it (a public Debian 12 policy listing, found with find_string
    # "release o=NVIDIA,l=NVIDIA CUDA"; the same in a 2020 Ubuntu 18.04 forum post): a flat archive, no Suite
    policy = (" 500 https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64  Packages\n"
              "     release o=NVIDIA,l=NVIDIA CUDA,c=\n     origin developer.download.nvidia.com\n")
    releases = nu.policy_releases(policy)
    assert releases == [{"priority": 500, "uri": "https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64",
                         "site": "developer.download.nvidia.com", "o": "NVIDIA", "l": "NVIDIA CUDA", "c": ""}]
    for dump, distro, codename in ((UBUNTU_DUMP, "Ubuntu", "noble"), ("apt-config-dump-Debian-2.9.1.txt", "Debian", "bookworm")):
        assert not nu.allowed(releases[0], nu.origin_patterns(nu.read_config(_read("unattended", dump)), distro, codename))
    assert nu.allowed(releases[0], ["o=NVIDIA"])  # a site that adds it


def test_off_or_not_installed_says_nothing_moves():
    dump = _read("unattended", UBUNTU_DUMP).replace('APT::Periodic::Unattended-Upgrade "1"', 'APT::Periodic::Unattended-Upgrade "0"')
    sim = _signed_sim("noble", ["-updates"], ["-updates", "-security"])
    off = nu.decide(sim, _ubuntu_policy("noble", "24.04"), dump, "Ubuntu", "noble", INSTALLED)
    assert not off["enabled"] and "not enabled" in off["message"] and "were unattended-upgrades on" in off["message"]
    assert "not installed" in _decide(sim, program=False)["message"]


# --- M9: the kernels in /boot a point release leaves without the module --------------------------------------------

def _recorded_modules():
    """The RECORDED noble-updates stanzas of linux-modules-nvidia-580-open-<abi> (tests/fixtures/holds/): {abi: Depends}."""
    out = {}
    for block in _read("holds", "ubuntu2404-noble-updates-nvidia-580.txt").split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line and not line.startswith(("#", " ")))
        name = fields.get("Package", "")
        if name.startswith("linux-modules-nvidia-580-open-6."):
            out[name[len("linux-modules-nvidia-580-open-"):]] = fields["Depends"]
    return out


def test_a_point_release_leaves_the_older_kernel_in_boot_without_its_module():
    recorded = _recorded_modules()
    assert sorted(recorded) == ["6.8.0-149-generic", "6.8.0-151-generic"]
    # the host before the point release: both kernels with the modules of their day (149's as recorded; 151's of the
    # day, built against 580.178.04 as 149's); the archive then has the respin of 151 (recorded) and 149's as it was
    installed = {"6.8.0-149-generic": recorded["6.8.0-149-generic"],
                 "6.8.0-151-generic": recorded["6.8.0-149-generic"].replace("149", "151")}
    out = nu.boot_without_module(["6.8.0-149-generic", "6.8.0-151-generic"], "precompiled", "580.196.07", installed, recorded)
    assert [i["kernel"] for i in out] == ["6.8.0-149-generic"]
    assert "nvidia-kernel-common-580 (<= 580.178.04-1)" in out[0]["why"] and "removes it" in out[0]["why"]
    # the same release for 580.178.04 itself (a reinstall) loses nothing
    assert nu.boot_without_module(["6.8.0-149-generic"], "precompiled", "580.178.04", installed, recorded) == []
    # the forecast before the release is published says the same of 149, and nothing of the newest kernel
    kernel_facts = [{"name": "linux-modules-nvidia-580-open-%s" % k, "installed": True, "depends": d} for k, d in installed.items()]
    forecast = nu.next_release_forecast(["6.8.0-149-generic", "6.8.0-151-generic"], "precompiled", nu.modules_by_kernel(kernel_facts))
    assert [i["kernel"] for i in forecast] == ["6.8.0-149-generic"]
    assert "6.8.0-149-generic" in nu.boot_message(forecast, "At the next point release")


def test_a_simulated_removal_or_respin_decides_over_the_archive_guess():
    recorded = _recorded_modules()
    installed = {"6.8.0-149-generic": recorded["6.8.0-149-generic"]}
    sim = "Remv linux-modules-nvidia-580-open-6.8.0-149-generic [6.8.0-149.149]\n"
    lost = nu.boot_without_module(["6.8.0-149-generic"], "precompiled", "580.196.07", installed, simulation=sim)
    assert [i["kernel"] for i in lost] == ["6.8.0-149-generic"]
    respin = "Inst linux-modules-nvidia-580-open-6.8.0-149-generic [6.8.0-149.149] (6.8.0-149.149+1 Ubuntu:24.04/noble-updates [amd64])\n"
    assert nu.boot_without_module(["6.8.0-149-generic"], "precompiled", "580.196.07", installed, simulation=respin) == []
    # no module at all, installed or in the archive
    assert "no signed NVIDIA module" in nu.boot_without_module(["6.8.0-100-generic"], "precompiled", "580.196.07")[0]["why"]


def test_dkms_builds_only_for_kernels_with_headers():
    facts = [{"name": "linux-headers-6.1.0-41-amd64", "installed": True}, {"name": "linux-image-6.1.0-40-amd64", "installed": True},
             {"name": "linux-headers-amd64", "installed": True}]
    with_headers = nu.headers_kernels(facts)
    assert with_headers == ["6.1.0-41-amd64"]
    out = nu.boot_without_module(["6.1.0-40-amd64", "6.1.0-41-amd64"], "dkms", "550.163.01", dkms_kernels=with_headers)
    assert [i["kernel"] for i in out] == ["6.1.0-40-amd64"] and "linux-headers-6.1.0-40-amd64" in out[0]["why"]
    assert [i["kernel"] for i in nu.next_release_forecast(["6.1.0-40-amd64", "6.1.0-41-amd64"], "dkms",
                                                          dkms_kernels=with_headers)] == ["6.1.0-40-amd64"]
