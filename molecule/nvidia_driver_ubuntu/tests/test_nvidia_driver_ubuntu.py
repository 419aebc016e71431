"""dlbox.stack.nvidia_driver on Ubuntu, against Ubuntu's live archive: no kernel driver in a container, and
the role's apt check on the signed precompiled set, the plain driver and the transitional 535-server package."""

import json

import pytest


def converge(host):
    return json.loads(host.file("/root/dlbox-converge.json").content_string)


def checks(host):
    return {r["name"]: r for r in json.loads(host.file("/root/dlbox-apt-checks.json").content_string)}


def test_container_gets_no_kernel_driver_and_is_told_so(host):
    reason = converge(host)["skip_reason"]
    assert "container" in reason and "comes from the host" in reason


@pytest.mark.parametrize("pattern", ["nvidia-*", "libnvidia-*", "linux-modules-nvidia-*", "dkms"])
def test_nothing_of_the_driver_installed_in_the_container(host, pattern):
    out = host.run("dpkg-query -W -f='${Package} ${db:Status-Abbrev}\\n' '%s'" % pattern)
    assert not [line for line in out.stdout.splitlines() if line.split()[-1].startswith("ii")], out.stdout


def test_signed_precompiled_set_accepted_without_dkms(host):
    result = checks(host)["signed_precompiled_set"]
    assert result["msg"] == "ACCEPTED"
    assert result["check"]["ok"] and result["check"]["dkms"] == []
    branch = converge(host)["branch"]
    assert "linux-modules-nvidia-%s-server-open-generic" % branch in result["check"]["installs"]
    assert result["check"]["version"].split(".")[0] == str(branch)


def test_plain_driver_refused_on_the_secure_boot_path(host):
    result = checks(host)["plain_driver_on_the_secure_boot_path"]
    branch = converge(host)["branch"]
    assert "nvidia-dkms-%s-open" % branch in result["msg"] and "unsigned module" in result["msg"]


def test_transitional_535_server_refused_for_real_on_jammy(host):
    if host.system_info.release != "22.04":
        pytest.skip("Ubuntu 24.04 has no transitional 535-server package in this case")
    result = checks(host)["transitional_535_server"]
    assert "nvidia-headless-580-server (R580)" in result["msg"], result["msg"]
    assert 'nvidia_driver_branch: "580"' in result["msg"] and "Nothing was changed" in result["msg"]
    assert not host.package("nvidia-headless-535-server").is_installed


def test_reboot_never_records_the_need_and_does_not_reboot(host):
    recorded = json.loads(host.file("/root/dlbox-reboot.json").content_string)
    assert recorded == {"required": True, "loaded": None}
    # /run is a tmpfs: the marker is still there, so nothing rebooted after the role wrote it
    assert host.file("/run/reboot-required").content_string == "*** System restart required ***\n"


# --- Fabric Manager with the driver, one apt transaction (issue 24) ---------------------------------------

def fm_checks(host):
    return {r["name"]: r for r in json.loads(host.file("/root/dlbox-fm-checks.json").content_string)}


def test_hgx_server_set_and_fabric_manager_resolve_in_one_transaction(host):
    result = fm_checks(host)["server_set_with_fabric_manager"]
    assert result["msg"] == "ACCEPTED", result["msg"]
    assert result["profile"] == "server"
    branch = converge(host)["branch"]
    assert result["plan_packages"] == ["nvidia-headless-%s-server-open" % branch, "nvidia-utils-%s-server" % branch]
    # ONE simulation: the driver set and Fabric Manager together
    assert result["simulated"] == result["plan_packages"] + ["nvidia-fabricmanager-%s" % branch]
    assert result["rc"] == 0 and "held broken packages" not in result["stdout"] + result["stderr"]
    # Fabric Manager's Depends (nvidia-kernel-common-<branch>-server-<version>) is satisfied by the -server series
    inst = [line.split()[1] for line in result["stdout"].splitlines() if line.startswith("Inst ")]
    assert "nvidia-fabricmanager-%s" % branch in inst and "nvidia-kernel-common-%s-server" % branch in inst
    assert "nvidia-kernel-common-%s" % branch not in inst
    check = result["fm_check"]
    assert check["ok"] and check["series"] == ["-server"] and check["version"] == check["driver_version"]
    assert result["fm_install_names"] == ["nvidia-fabricmanager-%s=%s" % (branch, check["package_version"])]


def test_desktop_set_with_fabric_manager_is_refused_by_apts_answer(host):
    result = fm_checks(host)["desktop_set_with_fabric_manager"]
    branch = converge(host)["branch"]
    # apt 2.x (22.04, 24.04) ends "E: Unable to correct problems, you have held broken packages."; apt 3.x's solver
    # (26.04's apt 3.2, recorded here against resolute-updates on 2026-12-06) "E: Unable to satisfy dependencies. Reached
    # two conflicting assignments:"; the role reads the unmet Depends line either way
    said = result["stdout"] + result["stderr"]
    assert result["rc"] != 0 and ("held broken packages" in said or "Unable to satisfy dependencies" in said), said
    assert "Fabric Manager (nvidia-fabricmanager-%s) does not resolve to the driver's series" % branch in result["msg"]
    assert "Depends: nvidia-kernel-common-%s-server-" % branch in result["msg"] and "Nothing was changed" in result["msg"]
