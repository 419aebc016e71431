"""dlbox.stack.nvidia_driver with nvidia_driver_method: nvidia_repo, against the FIXTURE CUDA repository.

The driver packages are marker-only stand-ins (tests/aptrepo); apt, dpkg, holds, pins, dpkg-repack and the
shared cuda_repo unit are real. side_effect.yml leaves /root/dlbox-runs.json and /root/dlbox-state-<step>.txt.
"""

import json

import pytest

PIN = "/etc/apt/preferences.d/dlbox-00-nvidia-driver-branch.pref"
R580 = ["nvidia-open-580", "nvidia-driver", "nvidia-driver-cuda", "nvidia-kernel-open-dkms", "nvidia-fabricmanager"]


def runs(host):
    return {r["name"]: r for r in json.loads(host.file("/root/dlbox-runs.json").content_string)}


def state(host, step):
    """/root/dlbox-state-<step>.txt -> {section: [lines]}."""
    out, section = {}, None
    for line in host.file(f"/root/dlbox-state-{step}.txt").content_string.splitlines():
        if line.startswith("== "):
            section = line[3:]
            out[section] = []
        elif section:
            out[section].append(line)
    return out


def packages(st):
    """Installed packages ('ii', or 'hi' when held) -> {name: version}."""
    return dict((line.split()[0], line.split()[1]) for line in st["packages"]
                if len(line.split()) > 2 and line.split()[2][1:2] == "i")


def test_timings_are_recorded(host):
    for name, run in runs(host).items():
        print("nvidia_driver_repo run %-26s %6.1f s  %s" % (name, run["seconds"], "OK" if run["msg"] == "OK" else "refused/failed"))


# --- repository set up through cuda_repo, R580 installed at exact versions, pinned, held ---------------
def test_repository_through_cuda_repo(host):
    sources = host.run("grep -rl 'http://127.0.0.1:8089/cuda-debian12/' /etc/apt/sources.list.d").stdout.split()
    assert len(sources) == 1, sources
    prefs = host.run("grep -l 'nvidia_driver' /etc/apt/preferences.d/*").stdout
    assert "cuda-repo" in prefs  # the shared unit's consumer file names this role


@pytest.mark.parametrize("step", ["converged-580", "back-580", "rolled-back-580"])
def test_r580_installed_exactly_held_and_pinned(host, step):
    st = state(host, step)
    have = packages(st)
    for name in R580:
        assert have.get(name) == "580.95.05-1", (name, have)
    assert not [n for n, v in have.items() if v.startswith(("595.", "590.", "620."))], have
    assert set(R580) <= set(st["holds"]), st["holds"]
    assert "Pin: version 580.*" in st["pin"] and "Pin-Priority: 1000" in st["pin"]
    # the pin keeps 580: no upgrade moves a driver package, and installing the metas keeps 580
    assert not [line for line in st["upgrade"] if "nvidia" in line or "cuda-drivers" in line], st["upgrade"]
    assert not [line for line in st["install-metas"] if "(580." not in line], st["install-metas"]
    assert st["fabricmanager"] == ["enabled"]


def test_without_the_pin_the_versioned_meta_slides(host):
    # the reason for the role's pin: the fixture's nvidia-open-580 behaves like NVIDIA's (Depends >=)
    sim = host.run("apt-get -s -o Dir::Etc::PreferencesParts=/nonexistent install --allow-change-held-packages "
                   "--reinstall nvidia-open-580 nvidia-driver").stdout
    assert "Inst nvidia-driver [580.95.05-1] (620." in sim, sim


# --- branch change 580 -> 595 and back ---------------------------------------------------------------
def test_change_to_595(host):
    assert runs(host)["change_580_to_595"]["msg"] == "OK"
    st = state(host, "changed-595")
    have = packages(st)
    for name in ["nvidia-open", "nvidia-driver-pinning-595", "nvidia-driver", "nvidia-driver-cuda", "nvidia-kernel-open-dkms",
                 "nvidia-fabricmanager"]:
        assert have.get(name) == "595.71.05-1", (name, have)
    assert "nvidia-open-580" not in have and not [v for v in have.values() if v.startswith("580.")], have
    assert set(["nvidia-open", "nvidia-driver-pinning-595", "nvidia-kernel-open-dkms", "nvidia-fabricmanager"]) <= set(st["holds"])
    assert "nvidia-open-580" not in st["holds"]
    assert "Pin: version 595.*" in st["pin"]
    assert not [line for line in st["upgrade"] if "nvidia" in line], st["upgrade"]
    assert st["fabricmanager"] == ["enabled"]


def test_old_branch_kept_before_the_change(host):
    kept = state(host, "changed-595")["kept"]
    for name in R580:
        assert f"R580-580.95.05/{name}_580.95.05-1_amd64.deb" in kept, kept
    # before the last change nvidia-driver 580 was gone from apt's cache: rebuilt by dpkg-repack, a valid package
    info = host.check_output("dpkg-deb -f /var/backups/dlbox-nvidia-driver/R580-580.95.05/nvidia-driver_580.95.05-1_amd64.deb Package Version")
    assert "nvidia-driver" in info and "580.95.05-1" in info
    manifest = json.loads(host.file("/var/backups/dlbox-nvidia-driver/R580-580.95.05/dlbox-kept.json").content_string)
    sources = dict((p["name"], p["source"]) for p in manifest["packages"])
    assert sources["nvidia-driver"] == "repack" and sources["nvidia-open-580"] == "archive"


def test_change_back_to_580(host):
    assert runs(host)["change_595_to_580"]["msg"] == "OK"
    have = packages(state(host, "back-580"))
    assert "nvidia-driver-pinning-595" not in have and "nvidia-open" not in have


# --- a failing install of the new branch: rolled back -------------------------------------------------
def test_failed_change_is_rolled_back_and_reported(host):
    run = runs(host)["change_to_failing_595"]
    for text in run["expect"]:
        assert text in run["msg"], run["msg"]
    assert "nvidia-kernel-open-dkms" in run["msg"] or "dpkg" in run["msg"], run["msg"]
    st = state(host, "rolled-back-580")
    assert not [line for line in st["packages"] if "595." in line], st["packages"]   # no half-configured leftovers


def test_dpkg_is_consistent(host):
    assert host.run("dpkg --audit").stdout.strip() == ""
    assert host.run("apt-get -s check").rc == 0


# --- refusals before any change, and idempotence after the rollback ----------------------------------
@pytest.mark.parametrize("name", ["change_not_asked", "fabric_manager_missing", "branch_not_in_repository", "unknown_branch"])
def test_refused_before_any_change(host, name):
    run = runs(host)[name]
    assert run["msg"] != "OK"
    for text in run["expect"]:
        assert text in run["msg"], run["msg"]
    assert run["unchanged"], "%s changed the host" % name


def test_rollback_restores_the_converged_state(host):
    # what a converge run would write again (pin, holds, packages) is as converge left it
    converged, rolled_back = state(host, "converged-580"), state(host, "rolled-back-580")
    for section in ("pin", "holds", "packages", "fabricmanager"):
        assert rolled_back[section] == converged[section], section


# --- check mode on the fresh host ------------------------------------------------------------------
def test_check_mode_fresh_host(host):
    check = json.loads(host.file("/root/dlbox-check-fresh.json").content_string)
    assert check["rc"] == 0, check["tail"]
    assert check["unchanged"], "check mode changed the host"
    assert any("NVIDIA's repository would make" in name or "Would install" in name or "repository" in name for name in check["changed"]), check
