# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""nvidia_driver_rollback: true (issue 48): back to the branch kept before a change whose later checks failed."""

from __future__ import annotations

import json

import pytest

from ansible_collections.dlbox.stack.plugins.filter.role_module import role_module
from ansible_collections.dlbox.stack.plugins.plugin_utils import nvidia_driver_rollback as nr

FAMILY = ["*nvidia*", "libcuda*", "libnvcuvid*", "libnvoptix*", "libnvidia*", "cuda-drivers*"]
KEEP = "/var/backups/dlbox-nvidia-driver"
KEPT = [{"name": "nvidia-headless-570-server-open", "version": "570.195.03-0ubuntu0.24.04.1", "arch": "amd64",
         "file": "nvidia-headless-570-server-open_570.195.03-0ubuntu0.24.04.1_amd64.deb", "source": "archive"},
        {"name": "nvidia-utils-570-server", "version": "570.195.03-0ubuntu0.24.04.1", "arch": "amd64",
         "file": "nvidia-utils-570-server_570.195.03-0ubuntu0.24.04.1_amd64.deb", "source": "repack"}]
RECORD = {"branch": 570, "version": "570.195.03", "packages": KEPT,
          "holds": ["nvidia-headless-570-server-open", "nvidia-utils-570-server", "linux-modules-nvidia-570-server-open-generic"],
          "pin": "Package: *nvidia*\nPin: version 570.*\nPin-Priority: 1000\n"}
NOW = [{"name": "nvidia-headless-580-server-open", "version": "580.196.07-0ubuntu0.24.04.1", "arch": "amd64"},
       {"name": "nvidia-utils-580-server", "version": "580.196.07-0ubuntu0.24.04.1", "arch": "amd64"},
       {"name": "bash", "version": "5.2.21-2ubuntu4", "arch": "amd64"}]


def records(*items):
    return [{"path": "%s/%s/dlbox-kept.json" % (KEEP, folder), "mtime": mtime, "content": json.dumps(data)} for folder, mtime, data in items]


def test_the_newest_kept_branch_comes_back_with_its_pin_and_holds():
    found = nr.latest_record(records(("R535-535.274.02", 100, dict(RECORD, branch=535)), ("R570-570.195.03", 200, RECORD)))
    assert found["folder"] == KEEP + "/R570-570.195.03"
    out = nr.rollback_request(found, NOW, FAMILY, KEEP, [found["folder"] + "/" + k["file"] for k in KEPT])
    assert out["ok"] and out["branch"] == 570
    assert out["purge"] == ["nvidia-headless-580-server-open", "nvidia-utils-580-server"]
    assert out["install"] == [found["folder"] + "/" + k["file"] for k in KEPT]
    assert out["pin"] == RECORD["pin"]
    assert out["holds"] == ["nvidia-headless-570-server-open", "nvidia-utils-570-server"]  # never a kernel follower
    assert 'nvidia_driver_branch: "570"' in out["message"]


def test_nothing_kept_or_a_copy_missing_is_refused():
    assert "no kept driver branch" in nr.rollback_request(None, NOW, FAMILY, KEEP)["message"]
    found = nr.latest_record(records(("R570-570.195.03", 200, RECORD)))
    out = nr.rollback_request(found, NOW, FAMILY, KEEP, [found["folder"] + "/" + KEPT[0]["file"]])
    assert not out["ok"] and KEPT[1]["file"] in out["message"] and "Nothing was changed" in out["message"]


def test_the_filter_reads_slurp_results():
    import base64
    slurped = [{"item": {"path": KEEP + "/R570-570.195.03/dlbox-kept.json", "mtime": 5.0},
                "content": base64.b64encode(json.dumps(RECORD).encode()).decode()}]
    out = role_module("nvidia_driver", "rollback_request", records=slurped, installed=NOW, family=FAMILY, keep_dir=KEEP, present_files=None)
    assert out["ok"] and out["branch"] == 570


# The one transaction simulated first (issue 48 red-team 8), by the REAL apt of this machine (apt-get -s, no root, no
# network): the newer branch installed in a dpkg status file, the kept branch as .debs built with dpkg-deb.
def _apt(tmp_path, kept_depends):
    import os
    import subprocess
    root = tmp_path
    for sub in ("etc/preferences.d", "state/lists/partial", "cache/archives/partial", "repo", "keep"):
        (root / sub).mkdir(parents=True)
    (root / "repo" / "Packages").write_text("")
    (root / "etc" / "sources.list").write_text("deb [trusted=yes] file:%s ./\n" % (root / "repo"))
    (root / "state" / "status").write_text("".join(
        "Package: %s\nStatus: install ok installed\nVersion: %s\nArchitecture: amd64\nMaintainer: t <t@t>\nDescription: t\n\n"
        % (p["name"], p["version"]) for p in NOW))
    for k in KEPT:
        deb = root / "pkg" / k["name"]
        (deb / "DEBIAN").mkdir(parents=True)
        depends = kept_depends.get(k["name"])
        (deb / "DEBIAN" / "control").write_text("Package: %s\nVersion: %s\nArchitecture: amd64\nMaintainer: t <t@t>\n%sDescription: t\n"
                                                % (k["name"], k["version"], "Depends: %s\n" % depends if depends else ""))
        subprocess.run(["dpkg-deb", "-b", str(deb), str(root / "keep" / k["file"])], check=True, capture_output=True)
    opts = ["-o", "Dir::Etc=%s/etc" % root, "-o", "Dir::State=%s/state" % root, "-o", "Dir::Cache=%s/cache" % root,
            "-o", "Dir::State::status=%s/state/status" % root, "-o", "Debug::NoLocking=1", "-o", "APT::Architecture=amd64"]
    subprocess.run(["apt-get"] + opts + ["update", "-qq"], check=True, capture_output=True)
    found = {"folder": str(root / "keep"), "record": RECORD}
    first = nr.rollback_request(found, NOW, FAMILY, KEEP, [os.path.join(found["folder"], k["file"]) for k in KEPT])
    argv = first["simulate"]
    assert argv[:3] == ["apt-get", "-s", "install"] and "nvidia-utils-580-server-" in argv
    sim = subprocess.run(argv[:1] + opts + argv[1:], capture_output=True, text=True, check=False,
                         env=dict(os.environ, LC_ALL="C"))
    print(sim.stdout, sim.stderr)
    return nr.rollback_request(found, NOW, FAMILY, KEEP, [os.path.join(found["folder"], k["file"]) for k in KEPT],
                               {"rc": sim.returncode, "stdout": sim.stdout, "stderr": sim.stderr})


def test_a_rollback_apt_can_do_is_simulated_and_goes_ahead(tmp_path):
    out = _apt(tmp_path, {"nvidia-headless-570-server-open": "nvidia-utils-570-server (= 570.195.03-0ubuntu0.24.04.1)"})
    assert out["ok"], out["message"]


def test_a_rollback_apt_would_refuse_is_refused_before_anything_is_purged(tmp_path):
    # a kept copy depends on a package that was neither kept nor is in any archive now (the old point release was
    # superseded): purging first would leave the host without a driver
    out = _apt(tmp_path, {"nvidia-utils-570-server": "libnvidia-compute-570-server (= 570.195.03-0ubuntu0.24.04.1)"})
    assert not out["ok"]
    assert "libnvidia-compute-570-server" in out["message"] and "Nothing was changed" in out["message"], out["message"]


def test_the_restored_holds_are_the_kept_packages_and_the_newest_firmware():
    kept = KEPT + [{"name": n, "version": "570.195.03-0ubuntu0.24.04.1", "arch": "amd64", "file": n + ".deb", "source": "repack"}
                   for n in ("nvidia-firmware-570-server-570.172.08", "nvidia-firmware-570-server-570.195.03")]
    holds = ["nvidia-headless-570-server-open", "nvidia-firmware-570-server-570.172.08", "nvidia-firmware-570-server-570.195.03",
             "nvidia-utils-570-server", "libnvidia-compute-570-server", "linux-modules-nvidia-570-server-open-generic"]
    # a hold on what the rollback does not reinstall (libnvidia-compute-570-server is not kept here), on the older
    # firmware, on a kernel follower: none comes back
    assert nr.rollback_holds(holds, kept) == ["nvidia-headless-570-server-open", "nvidia-firmware-570-server-570.195.03",
                                              "nvidia-utils-570-server"]


# A second run with nvidia_driver_rollback still true (or the role's own rollback after a failed install before it):
# dpkg has exactly the kept branch. Nothing to purge or reinstall, no reboot marked again; the holds still come back.
AFTER = [dict(k, version=k["version"]) for k in KEPT] + [{"name": "bash", "version": "5.2.21-2ubuntu4", "arch": "amd64"}]


def test_a_rollback_already_done_does_nothing_again():
    found = nr.latest_record(records(("R570-570.195.03", 200, RECORD)))
    out = nr.rollback_request(found, AFTER, FAMILY, KEEP, [found["folder"] + "/" + k["file"] for k in KEPT])
    assert out["ok"] and out["action"] == "none"
    assert out["purge"] == [] and out["install"] == [] and out["simulate"] == []
    assert out["holds"] == ["nvidia-headless-570-server-open", "nvidia-utils-570-server"] and out["pin"] == RECORD["pin"]
    assert 'nvidia_driver_branch: "570"' in out["message"] and "nothing to purge or reinstall" in out["message"]


@pytest.mark.parametrize("now", [
    NOW,                                                                       # the newer branch
    [dict(KEPT[0]), dict(KEPT[1], version="570.172.08-0ubuntu0.24.04.1")],     # the kept branch at another point release
    [dict(KEPT[0])],                                                           # a kept package missing
    AFTER + [{"name": "libnvidia-compute-580-server", "version": "580.196.07-0ubuntu0.24.04.1", "arch": "amd64"}],
])
def test_anything_but_exactly_the_kept_branch_is_rolled_back(now):
    found = nr.latest_record(records(("R570-570.195.03", 200, RECORD)))
    out = nr.rollback_request(found, now, FAMILY, KEEP, [found["folder"] + "/" + k["file"] for k in KEPT])
    assert out["ok"] and out["action"] == "rollback" and out["install"] and out["simulate"][:3] == ["apt-get", "-s", "install"]


def test_a_refused_rollback_acts_on_nothing():
    assert nr.rollback_request(None, NOW, FAMILY, KEEP)["action"] == "none"


def test_the_holds_recorded_before_a_change_keep_their_architecture():
    # apt-mark showhold prints a foreign architecture's package as name:arch (a desktop's i386 libraries)
    held = ["nvidia-utils-570-server", "libnvidia-compute-570-server:i386", "nvidia-headless-570-server-open", "docker-ce",
            "nvidia-utils-570-server"]
    kept = KEPT + [{"name": "libnvidia-compute-570-server", "version": "570.195.03-0ubuntu0.24.04.1", "arch": "i386",
                    "file": "libnvidia-compute-570-server_570.195.03-0ubuntu0.24.04.1_i386.deb", "source": "archive"}]
    assert nr.kept_holds(held, kept) == ["nvidia-utils-570-server", "libnvidia-compute-570-server:i386",
                                         "nvidia-headless-570-server-open"]
    assert role_module("nvidia_driver", "kept_holds", held="\n".join(held), kept=kept) == nr.kept_holds(held, kept)
    # and the rollback restores it as printed
    assert "libnvidia-compute-570-server:i386" in nr.rollback_holds(nr.kept_holds(held, kept), kept)


# Rollback after a failed check: the checks after the install (kernel.yml, fabric_wait.yml) end their failure with the
# sentence that names the variable, the kept branch, its folder and the holds it gets back.
def test_a_failed_check_after_a_branch_change_names_the_variable():
    found = nr.latest_record(records(("R570-570.195.03", 200, RECORD)))
    hint = nr.rollback_hint(found, 580, changed_now=True)
    assert hint == nr.rollback_hint(found, 580, installed_at=200 + 300)  # a later run: R580 installed 5 min after the record
    assert hint.startswith("The branch change from R570 to R580 can be undone: run the role with nvidia_driver_rollback: true")
    assert "R570 570.195.03" in hint and found["folder"] in hint
    assert hint.endswith("as they were: nvidia-headless-570-server-open, nvidia-utils-570-server).")  # never a kernel follower


@pytest.mark.parametrize(("found", "branch"), [(None, 580), ("R570", 570), ("R570", "570")])
def test_no_sentence_without_a_kept_branch_or_on_the_kept_branch(found, branch):
    # after the rollback, nvidia_driver_branch set to the kept branch: its own failures offer no rollback to itself
    found = nr.latest_record(records(("R570-570.195.03", 200, RECORD))) if found else None
    assert nr.rollback_hint(found, branch) == ""


YEAR = 365 * 86400


@pytest.mark.parametrize("installed_at", [None, 200 + YEAR, 100])
def test_a_year_old_record_offers_no_rollback(installed_at):
    # issue 48 red-team 10: a year-old R535 record while R550 is installed (another way, a year later; or dpkg's time
    # unknown; or a driver installed before the record): this run changed nothing, the failing check is not about it
    record = dict(RECORD, branch=535, version="535.183.01")
    found = nr.latest_record(records(("R535-535.183.01", 200, record)))
    assert nr.rollback_hint(found, 550, installed_at=installed_at) == ""
    assert nr.rollback_hint(found, 550, changed_now=True).startswith("The branch change from R535 to R550")


def test_the_hint_filter_reads_slurp_results():
    import base64
    slurped = [{"item": {"path": KEEP + "/R570-570.195.03/dlbox-kept.json", "mtime": 5.0},
                "content": base64.b64encode(json.dumps(RECORD).encode()).decode()}]
    assert "nvidia_driver_rollback: true" in role_module("nvidia_driver", "rollback_hint", records=slurped, branch=580, changed_now=True)
    assert role_module("nvidia_driver", "rollback_hint", records=slurped, branch=580) == ""
    assert role_module("nvidia_driver", "rollback_hint", records=[], branch=580) == ""


@pytest.mark.parametrize("now", [NOW, AFTER])
def test_the_rollback_puts_the_unattended_upgrades_file_back_as_recorded(now):
    text = 'Unattended-Upgrade::Package-Blacklist {\n    "^nvidia-utils-570-server$";\n};\n'
    found = nr.latest_record(records(("R570-570.195.03", 200, dict(RECORD, unattended=text))))
    out = nr.rollback_request(found, now, FAMILY, KEEP, [found["folder"] + "/" + k["file"] for k in KEPT])
    assert out["unattended"] == {"action": "write", "content": text}  # a second run (AFTER) puts it back too
    found = nr.latest_record(records(("R570-570.195.03", 200, dict(RECORD, unattended=None))))
    assert nr.rollback_request(found, now, FAMILY, KEEP)["unattended"]["action"] == "remove"
