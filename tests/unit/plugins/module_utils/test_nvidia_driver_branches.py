"""Branch changes of the nvidia_driver role (both install methods): which packages belong to a branch,
whether a change is asked for, how the old packages are kept, the branch pin, what apt would install,
Fabric Manager's exact version and the rollback after a failed change."""

from __future__ import annotations

import pytest

from ansible_collections.dlbox.stack.plugins.module_utils import _nvidia_driver as nd
from ansible_collections.dlbox.stack.plugins.plugin_utils import nvidia_driver_plan as plan

FAMILY = ["*nvidia*", "libcuda*", "libnvcuvid*", "libnvoptix*", "libnvidia*", "cuda-drivers*"]


def facts(*items):
    out = {}
    for name, version in items:
        out.setdefault(name, []).append({"name": name, "version": version, "arch": "amd64", "source": "apt"})
    return out


# NVIDIA's Debian repository, R580 installed through the pre-590 versioned meta, plus things that are not the driver
DEBIAN_580 = facts(
    ("nvidia-open-580", "580.95.05-1"), ("nvidia-open", "580.95.05-1"), ("nvidia-driver", "580.95.05-1"),
    ("nvidia-driver-cuda", "580.95.05-1"), ("nvidia-kernel-open-dkms", "580.95.05-1"), ("nvidia-fabricmanager", "580.95.05-1"),
    ("nvidia-container-toolkit", "1.18.2-1"), ("libnvidia-container1", "1.18.2-1"), ("nvidia-cuda-toolkit", "11.8.89~11.8.0-5~deb12u1"),
    ("cuda-compat-12-4", "550.54.15-1"), ("bash", "5.2.15-2+b7"),
)
# Ubuntu's archive (distro method), R535 with branch-named packages
UBUNTU_535 = facts(
    ("nvidia-driver-535-open", "535.274.02-0ubuntu0.22.04.1"), ("nvidia-dkms-535-open", "535.274.02-0ubuntu0.22.04.1"),
    ("libnvidia-compute-535", "535.274.02-0ubuntu0.22.04.1"), ("nvidia-utils-535", "535.274.02-0ubuntu0.22.04.1"),
    ("nvidia-firmware-535-535.274.02", "535.274.02-0ubuntu0.22.04.1"),
    ("linux-modules-nvidia-535-open-generic", "5.15.0-164.174"), ("xserver-xorg-video-nvidia-535", "535.274.02-0ubuntu0.22.04.1"),
)
# NVIDIA's Ubuntu repository from 590 on: no branch in the names
UBUNTU_REPO_595 = facts(
    ("nvidia-open", "595.71.05-0ubuntu1"), ("nvidia-dkms-open", "595.71.05-0ubuntu1"), ("libnvidia-compute", "595.71.05-0ubuntu1"),
    ("nvidia-utils", "595.71.05-0ubuntu1"), ("nvidia-driver-pinning-595", "595.71.05-0ubuntu1"),
)


@pytest.mark.parametrize(("name", "version", "branch"), [
    ("nvidia-dkms-580-open", "580.95.05-0ubuntu1", 580),
    ("nvidia-dkms-open", "595.71.05-0ubuntu1", 595),        # 590+ Ubuntu names: the version tells
    ("libnvidia-compute", "1:595.71.05-1", 595),            # an epoch does not hide it
    ("linux-modules-nvidia-535-open-generic", "5.15.0-164.174", 535),  # the name tells, not the kernel's version
    ("nvidia-driver-pinning-595", "595.71.05-1", 595),
    ("cuda-drivers-580", "580.95.05-1", 580),
    ("libcuda1", "535.309.01-0+deb12u1", 535),
    ("nvidia-container-toolkit", "1.18.2-1", None),
    ("nvidia-cuda-toolkit", "11.8.89~11.8.0-5~deb12u1", None),
    ("cuda-compat-12-4", "550.54.15-1", None),              # not in the family
    ("bash", "580.1-1", None),
])
def test_member_branch(name, version, branch):
    assert nd.member_branch(name, version, FAMILY) == branch


def test_installed_driver_debian_repo():
    out = nd.installed_driver(DEBIAN_580, FAMILY)
    assert out["branch"] == 580 and out["version"] == "580.95.05" and out["other_branches"] == []
    assert [p["name"] for p in out["packages"]] == [
        "nvidia-driver", "nvidia-driver-cuda", "nvidia-fabricmanager", "nvidia-kernel-open-dkms", "nvidia-open", "nvidia-open-580"]


def test_installed_driver_ubuntu_names():
    out = nd.installed_driver(UBUNTU_535, FAMILY)
    assert out["branch"] == 535 and out["version"] == "535.274.02"
    assert "linux-modules-nvidia-535-open-generic" in [p["name"] for p in out["packages"]]
    out = nd.installed_driver(UBUNTU_REPO_595, FAMILY)
    assert out["branch"] == 595 and len(out["packages"]) == 5


def test_installed_driver_none_and_leftovers():
    assert nd.installed_driver(facts(("bash", "5.2-1"), ("nvidia-container-toolkit", "1.18.2-1")), FAMILY)["branch"] is None
    mixed = dict(DEBIAN_580, **facts(("nvidia-settings", "525.125.06-1")))
    out = nd.installed_driver(mixed, FAMILY)
    assert out["branch"] == 580 and out["other_branches"] == [525]


@pytest.mark.parametrize(("installed", "target", "allowed", "action"), [
    (None, 580, False, "install"),
    (580, 580, False, "install"),
    (580, "595", False, "refuse"),
    (580, 595, True, "change"),
    (595, 580, True, "change"),      # going back is the same operation
    (535, 580, True, "change"),      # the distro method too
])
def test_branch_change(installed, target, allowed, action):
    out = plan.branch_change(installed, target, allowed)
    assert out["action"] == action
    if action == "refuse":
        assert "nvidia_driver_change_branch: true" in out["problem"] and "Nothing was changed" in out["problem"]
        assert "R580 is installed" in out["problem"]


def test_keep_plan_prefers_apt_cache_and_repacks_the_rest():
    packages = nd.installed_driver(DEBIAN_580, FAMILY)["packages"]
    out = plan.keep_plan(packages, ["nvidia-open_580.95.05-1_amd64.deb", "nvidia-open_595.71.05-1_amd64.deb"])
    by_name = dict((k["name"], k) for k in out)
    assert by_name["nvidia-open"]["source"] == "archive" and by_name["nvidia-open"]["file"] == "nvidia-open_580.95.05-1_amd64.deb"
    assert by_name["nvidia-driver"]["source"] == "repack"
    assert len(out) == len(packages)


def test_deb_file_name_escapes_the_epoch():
    assert plan.deb_file_name("libnvidia-compute", "1:595.71.05-1", "amd64") == "libnvidia-compute_1%3a595.71.05-1_amd64.deb"


def test_branch_pin_text():
    text = plan.branch_pin(580, FAMILY, "nvidia_repo")
    # the family at the branch, less what *nvidia* covers (libnvidia*: nvidia_driver_plan._unsubsumed)
    assert "Package: *nvidia* libcuda* libnvcuvid* libnvoptix* cuda-drivers*\n" in text
    assert "Pin: version 580.*\n" in text and text.endswith("Pin-Priority: 1000\n")
    assert all(line.startswith("#") for line in text.splitlines()[:2])


SIM_580_SLIDES = """NOTE: This is only a simulation!
Inst nvidia-driver (620.0.0~fixture-1 cuda-debian12:/ [amd64])
Inst nvidia-driver-cuda (620.0.0~fixture-1 cuda-debian12:/ [amd64])
Inst nvidia-kernel-open-dkms (620.0.0~fixture-1 cuda-debian12:/ [amd64])
Inst nvidia-open-580 (580.95.05-1 cuda-debian12:/ [amd64])
Conf nvidia-open-580 (580.95.05-1 cuda-debian12:/ [amd64])
"""
SIM_580_PINNED = """Inst nvidia-driver (580.95.05-1 cuda-debian12:/ [amd64])
Inst nvidia-driver-cuda (580.95.05-1 cuda-debian12:/ [amd64])
Inst nvidia-kernel-open-dkms (580.95.05-1 cuda-debian12:/ [amd64])
Inst nvidia-open-580 (580.95.05-1 cuda-debian12:/ [amd64])
Inst dkms (3.0.10-8+deb12u1 Debian:12.8/stable [all])
"""
SIM_595_UBUNTU = """Inst nvidia-dkms-open (595.71.05-0ubuntu1 cuda-ubuntu2204:/ [amd64])
Inst libnvidia-compute (595.71.05-0ubuntu1 cuda-ubuntu2204:/ [amd64])
Inst nvidia-open (595.71.05-0ubuntu1 cuda-ubuntu2204:/ [amd64])
Inst nvidia-driver-pinning-595 (595.71.05-0ubuntu1 cuda-ubuntu2204:/ [all])
"""


def test_branch_check_catches_the_versioned_meta_sliding():
    out = plan.check_branch_simulation(SIM_580_SLIDES, 580, FAMILY, ["nvidia-driver-cuda"], "nvidia-kernel-open-dkms")
    assert not out["ok"]
    assert [w["name"] for w in out["wrong"]] == ["nvidia-driver", "nvidia-driver-cuda", "nvidia-kernel-open-dkms"]


def test_branch_check_pinned_and_exact_names():
    out = plan.check_branch_simulation(SIM_580_PINNED, 580, FAMILY, ["nvidia-driver-cuda"], "nvidia-kernel-open-dkms",
                                       ["nvidia-open-580", "nvidia-fabricmanager"])
    assert out["ok"] and out["version"] == "580.95.05"
    assert out["exact"] == ["nvidia-open-580=580.95.05-1", "nvidia-fabricmanager"]


def test_branch_check_ubuntu_590_names():
    out = plan.check_branch_simulation(SIM_595_UBUNTU, 595, FAMILY, ["libnvidia-compute"], "nvidia-dkms-open")
    assert out["ok"] and out["version"] == "595.71.05"
    mixed = SIM_595_UBUNTU.replace("Inst libnvidia-compute (595.71.05", "Inst libnvidia-compute (595.58.03")
    out = plan.check_branch_simulation(mixed, 595, FAMILY, ["libnvidia-compute"], "nvidia-dkms-open")
    assert not out["ok"] and out["mismatched"] == [{"name": "libnvidia-compute", "version": "595.58.03"}]


def test_branch_check_nothing_to_install():
    out = plan.check_branch_simulation("0 upgraded, 0 newly installed\n", 580, FAMILY, [], "nvidia-kernel-open-dkms", ["nvidia-open-580"])
    assert out["ok"] and out["version"] is None and out["exact"] == ["nvidia-open-580"]


MADISON = """nvidia-fabricmanager | 620.0.0~fixture-1 | http://127.0.0.1:8089/cuda-debian12 ./ Packages
nvidia-fabricmanager | 595.71.05-1 | http://127.0.0.1:8089/cuda-debian12 ./ Packages
nvidia-fabricmanager | 580.95.05-1 | http://127.0.0.1:8089/cuda-debian12 ./ Packages
"""


def test_fabric_manager_exact_version():
    assert plan.fabric_manager_version(MADISON, "nvidia-fabricmanager", "580.95.05") == {
        "ok": True, "version": "580.95.05-1", "available": ["620.0.0~fixture", "595.71.05", "580.95.05"]}
    out = plan.fabric_manager_version(MADISON, "nvidia-fabricmanager", "590.48.01")
    assert not out["ok"] and out["version"] is None
    # same branch, another build: not good enough
    assert not plan.fabric_manager_version(MADISON, "nvidia-fabricmanager", "580.82.07")["ok"]
    assert not plan.fabric_manager_version("", "nvidia-fabricmanager", "580.95.05")["ok"]


def test_rollback_purges_everything_but_the_kept_set():
    kept = plan.keep_plan(nd.installed_driver(DEBIAN_580, FAMILY)["packages"], [])
    # the failed 595 install left a half-configured kernel package and new metas; the 580 ones are gone
    now = facts(("nvidia-open", "595.71.05-1"), ("nvidia-driver", "595.71.05-1"), ("nvidia-kernel-open-dkms", "595.71.05-1"),
                ("nvidia-driver-pinning-595", "595.71.05-1"), ("nvidia-container-toolkit", "1.18.2-1"), ("bash", "5.2-1"))
    out = plan.rollback_plan(now, kept, FAMILY)
    assert out["purge"] == ["nvidia-driver", "nvidia-driver-pinning-595", "nvidia-kernel-open-dkms", "nvidia-open"]
    assert out["branch"] == 580 and sorted(out["install"]) == sorted(k["file"] for k in kept)


def test_rollback_keeps_what_is_still_the_old_branch():
    kept = plan.keep_plan(nd.installed_driver(DEBIAN_580, FAMILY)["packages"], [])
    out = plan.rollback_plan(DEBIAN_580, kept, FAMILY)
    assert out["purge"] == []


def test_parse_madison_ignores_noise():
    assert nd.parse_madison("W: something\n" + MADISON)[0] == {
        "name": "nvidia-fabricmanager", "version": "620.0.0~fixture-1", "source": "http://127.0.0.1:8089/cuda-debian12 ./ Packages"}


DPKG_QUERY_AFTER_FAILED_POSTINST = (
    "nvidia-driver\t595.71.05-1\tamd64\tii \n"
    "nvidia-driver-cuda\t595.71.05-1\tamd64\tii \n"
    "nvidia-driver-pinning-595\t595.71.05-1\tall\tii \n"
    "nvidia-kernel-open-dkms\t595.71.05-1\tamd64\tiF \n"
    "nvidia-open\t595.71.05-1\tamd64\tiU \n"
    "nvidia-open-580\t580.95.05-1\tamd64\trc \n"
    "libc6:amd64\t2.36-9+deb12u9\tamd64\tii \n"
)


def test_parse_dpkg_query_counts_half_configured_not_removed():
    names = [p["name"] for p in nd.parse_dpkg_query(DPKG_QUERY_AFTER_FAILED_POSTINST)]
    assert "nvidia-kernel-open-dkms" in names and "nvidia-open" in names and "nvidia-open-580" not in names
    assert "libc6" in names


def test_rollback_from_dpkg_query_after_a_failed_postinst():
    kept = plan.keep_plan(nd.installed_driver(DEBIAN_580, FAMILY)["packages"], [])
    out = plan.rollback_plan(DPKG_QUERY_AFTER_FAILED_POSTINST, kept, FAMILY)
    assert out["purge"] == ["nvidia-driver", "nvidia-driver-cuda", "nvidia-driver-pinning-595", "nvidia-kernel-open-dkms", "nvidia-open"]
