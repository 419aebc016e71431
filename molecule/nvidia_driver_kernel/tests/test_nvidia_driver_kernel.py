"""dlbox.stack.nvidia_driver, the kernel side of Ubuntu's signed modules, against Ubuntu 24.04's live archive.

dpkg's status holds kernel packages built from the archive's REAL control data (no file unpacked, no maintainer
script run): tests/fixtures/kernel/build-status.sh. The running kernel is the container host's, for which the
archive has no signed module (a real case)."""

import json
import re


def result(host):
    return json.loads(host.file("/root/dlbox-kernel.json").content_string)


def inst(text):
    return [m.group(1) for m in re.finditer(r"^Inst (\S+)", text, re.M)]


def test_no_kernel_with_a_signed_module_is_refused_before_any_change_naming_the_kernel(host):
    refusal = json.loads(host.file("/root/dlbox-refusal.json").content_string)
    assert "The running kernel %s has no signed NVIDIA module" % refusal["kernel"] in refusal["msg"]
    assert "Nothing was changed" in refusal["msg"]


def test_hwe_machine_gets_the_hwe_module_meta(host):
    r = result(host)
    assert r["kernel"]["flavour"] == "generic-hwe-24.04"
    assert r["kernel"]["flavour_source"] == "installed kernel meta linux-image-generic-hwe-24.04"
    meta = "linux-modules-nvidia-%s-open-generic-hwe-24.04" % r["branch"]
    assert meta in r["packages"] and meta in r["installs"]
    assert "linux-modules-nvidia-%s-open-generic" % r["branch"] not in r["packages"]


def test_apt_brings_the_module_of_the_kernel_that_boots_next(host):
    r = result(host)
    assert r["kernel"]["next_boot"] == r["hwe_kernel"]
    assert "linux-modules-nvidia-%s-open-%s" % (r["branch"], r["hwe_kernel"]) in r["installs"]


def test_the_deferral_names_both_kernels(host):
    r = result(host)
    assert r["pending_reboot_reason"] == (
        "The running kernel %s has no signed NVIDIA module in the archive (no linux-modules-nvidia-%s-open-%s); the module "
        "is installed for kernel %s, which boots next: reboot into it to load the driver."
        % (r["running"], r["branch"], r["running"], r["hwe_kernel"]))


def test_the_branch_is_pinned_by_name(host):
    # holds and the blacklist are decided after the install (unit-tested: test_nvidia_driver_kernel.py)
    assert "Pin: version %s.*" % result(host)["branch"] in result(host)["pin"]


def test_dist_upgrade_brings_the_newer_kernel_and_its_signed_module(host):
    kernel = result(host)["hwe_kernel"]
    free = host.file("/root/old/free.txt").content_string
    assert "linux-image-%s" % kernel in inst(free), free
    assert [n for n in inst(free) if re.match(r"^linux-modules-nvidia-\d+-open-%s$" % re.escape(kernel), n)], free


def test_with_the_old_hold_the_newer_kernel_comes_without_its_module(host):
    kernel = result(host)["hwe_kernel"]
    # dist-upgrade: apt gives up ("held broken packages"); upgrade --with-new-pkgs (what unattended-upgrades does
    # with kernel metas): the new kernel comes, its module is kept back
    held = host.file("/root/old/held.txt").content_string
    assert not [n for n in inst(held) if re.match(r"^linux-modules-nvidia-\d+-open-%s$" % re.escape(kernel), n)], held
    upgrade = host.file("/root/old/held-upgrade.txt").content_string
    assert "linux-image-%s" % kernel in inst(upgrade), upgrade
    assert not [n for n in inst(upgrade) if re.match(r"^linux-modules-nvidia-\d+-open-%s$" % re.escape(kernel), n)], upgrade
