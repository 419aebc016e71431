# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Offline mode on a host whose only network is an internal Docker network.

prepare.yml made the folder with playbooks/mirror.yml on a connected container, carried it to the controller, showed
the network cut, and ran the workstation playbook against a copy with make's .deb taken out, asking for jq and
python_env too: offline-results.json holds that run's output and a snapshot of the host before and after it.
The converge (and idempotence) ran the workstation playbook offline from the whole folder.
"""

from __future__ import annotations

import json
import os

DISTRO = os.environ.get("MOLECULE_DISTRO", "debian12")
testinfra_hosts = ["dlbox-offline-%s" % DISTRO]
EPHEMERAL = os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]


def _results():
    with open(os.path.join(EPHEMERAL, "offline-results.json"), encoding="utf-8") as handle:
        return json.load(handle)


def test_the_network_is_cut():
    lines = _results()["net"]
    assert len(lines) == 4
    assert all(line.startswith("unreachable ") for line in lines), lines


def test_the_preflight_lists_every_missing_artifact_and_changes_nothing():
    results = _results()
    out = results["output"]
    assert results["rc"] != 0
    assert "5 artifact(s) missing from %s/mirror-broken; nothing was changed" % EPHEMERAL in out, out[-3000:]
    for words in ("apt jq: not in", "apt make: %s/mirror-broken/apt/make_" % EPHEMERAL,
                  "wheels wheels/:", "wheels python_env_no_index:", "wheels python_env_find_links:"):
        assert words in out, words
    # refused before the roles: the summary's snapshot task never ran
    assert "dlbox.stack.summary" not in out and "dlbox.stack.common" not in out
    assert results["before"] == results["after"]
    assert results["before"].splitlines()[-1].endswith("-")        # dpkg's list summed; no file newer than the stamp
    assert len(results["before"].splitlines()) == 1


def test_the_folder_holds_the_closure_and_its_manifest():
    folder = os.path.join(EPHEMERAL, "mirror")
    with open(os.path.join(folder, "manifest.json"), encoding="utf-8") as handle:
        manifest = json.load(handle)
    debs = [name for name in os.listdir(os.path.join(folder, "apt")) if name.endswith(".deb")]
    size = sum(os.path.getsize(os.path.join(folder, "apt", name)) for name in debs)
    print("mirror folder: %d .debs, %.1f MB (manifest: %s)" % (len(debs), size / 1e6, manifest["debs"]))
    assert manifest["release"] == "debian bookworm"
    assert manifest["debs"] == len(debs) and manifest["deb_bytes"] == size
    assert {"build-essential", "curl"} <= set(manifest["apt"])
    with open(os.path.join(folder, "apt", "Packages"), encoding="utf-8") as handle:
        assert handle.read().count("\nPackage: ") + 1 == len(debs)


def test_the_packages_came_from_the_folder_and_work(host):
    for name in ("build-essential", "curl", "make", "gcc"):
        assert host.package(name).is_installed, name
    host.run_test("printf 'int main(void){return 7;}' | gcc -x c - -o /root/offline-a")
    assert host.run("/root/offline-a").rc == 7
    carried = host.check_output("ls /var/lib/dlbox/offline/apt")
    print("carried to the host: %d .debs" % carried.count(".deb"))
    assert "make_" in carried and "build-essential_" in carried


def test_apt_reads_the_folder_alone(host):
    assert host.file("/etc/apt/apt.conf.d/01dlbox-offline").contains('Dir::Etc::SourceParts "/etc/apt/dlbox-offline.list.d"')
    policy = host.check_output("apt-cache policy")
    assert "file:/var/lib/dlbox/offline/apt" in policy
    assert "deb.debian.org" not in policy and "http" not in policy
    # the host's own sources are still there, unread
    assert host.file("/etc/apt/sources.list.d/debian.sources").exists
