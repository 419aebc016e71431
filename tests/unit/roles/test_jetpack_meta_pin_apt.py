# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The JetPack metas held at the plan's version (issue 52, third red team MEDIUM 3), read by the REAL apt of this
machine: roles/jetpack/tasks/repository.yml's preferences, rendered from the plan of a JetPack 6.2.2 module (L4T
36.5.0), against a local archive in the shape of NVIDIA's r36.5 suite, which holds the metas of 6.2.2 (6.2.2+b24) and
6.2.3 (6.2.3+b81) under the same names (data/jetson.yml components_versions_source). Without the hold, apt's candidate
is 6.2.3's, so an install or a later `apt upgrade` moves a 6.2.2 module to 6.2.3's packages. No root, no network."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import jinja2
import pytest
import yaml

from ansible_collections.dlbox.stack.plugins.plugin_utils.compat_data import load_compat
from ansible_collections.dlbox.stack.plugins.plugin_utils.jetpack_plan import decide, load_jetson_data, parse_installed_meta

ROOT = Path(__file__).resolve().parents[3]
REPOSITORY = yaml.safe_load((ROOT / "roles" / "jetpack" / "tasks" / "repository.yml").read_text(encoding="utf-8"))
RELEASE = (ROOT / "tests" / "fixtures" / "jetson" / "nv_tegra_release" / "agx-orin-r36.4.3.txt").read_text(encoding="utf-8")
METAS = ["nvidia-jetpack", "nvidia-cuda"]

pytestmark = pytest.mark.skipif(not shutil.which("apt-cache"), reason="apt is not installed here")


def _preferences_task():
    block = next(t for t in REPOSITORY if "block" in t)["block"]
    return next(t for t in block if str(t.get("name", "")).startswith("Prefer the Jetson repositories"))


def _decided(base_url, installed_meta=None):
    return decide({"stack": {"jetpack": {"version": "6.2.2", "l4t": "36.5.0", "family": "orin"}}},
                  {"components": ["all", "cuda"], "power_mode": "", "power_mode_reboot": "never", "clocks": None,
                   "base_url": base_url},
                  release_text=RELEASE.replace("REVISION: 4.3", "REVISION: 5.0"), model_text="NVIDIA Jetson AGX Orin",
                  data=load_jetson_data(), compat=load_compat(), installed_meta=installed_meta)


def _preferences(base_url, break_it=False, decided=None):
    if decided is None:
        decided = _decided(base_url)
        assert decided["ok"], decided["errors"]
        assert decided["packages"] == ["nvidia-jetpack=6.2.2+b24", "nvidia-cuda=6.2.2+b24"]
    if break_it:
        decided["meta_pin"] = None
    template = _preferences_task()["ansible.builtin.copy"]["content"]  # trim_blocks as Ansible templates it
    return jinja2.Environment(undefined=jinja2.StrictUndefined, trim_blocks=True).from_string(template).render(__jetpack_decided=decided)


def _policy(tmp_path, installed=None, break_it=False, install=None):
    root = str(tmp_path)
    suite = os.path.join(root, "jetson-common-r36.5")
    os.makedirs(suite)
    with open(os.path.join(suite, "Packages"), "w", encoding="utf-8") as fh:
        for version in ("6.2.2+b24", "6.2.3+b81"):
            fh.write("Package: nvidia-jetpack\nVersion: %s\nArchitecture: amd64\nDepends: nvidia-cuda (= %s)\n"
                     "Filename: j-%s.deb\nSize: 1\nDescription: t\n\n" % (version, version, version))
            fh.write("Package: nvidia-cuda\nVersion: %s\nArchitecture: amd64\nFilename: c-%s.deb\nSize: 1\n"
                     "Description: t\n\n" % (version, version))
    with open(os.path.join(suite, "Release"), "w", encoding="utf-8") as fh:
        fh.write("Origin: NVIDIA\nLabel: NVIDIA\nSuite: r36.5\nCodename: r36.5\nArchitectures: amd64\nComponents: main\n")
    for sub in ("etc/preferences.d", "state/lists/partial", "cache/archives/partial"):
        os.makedirs(os.path.join(root, sub))
    with open(os.path.join(root, "state", "status"), "w", encoding="utf-8") as fh:
        fh.write("".join("Package: %s\nStatus: install ok installed\nVersion: %s\nArchitecture: amd64\nDescription: t\n\n"
                         % (name, installed) for name in METAS) if installed else "")
    with open(os.path.join(root, "etc", "sources.list"), "w", encoding="utf-8") as fh:
        fh.write("deb [trusted=yes] file:%s ./\n" % suite)
    # a file: source: the role's Pin: origin is then "" (jetpack_base_url file://, as for a local mirror)
    with open(os.path.join(root, "etc", "preferences.d", "dlbox-jetson.pref"), "w", encoding="utf-8") as fh:
        fh.write(_preferences("file://" + suite, break_it, install(suite) if install else None))
    opts = ["-o", "Dir::Etc=%s/etc" % root, "-o", "Dir::State=%s/state" % root, "-o", "Dir::Cache=%s/cache" % root,
            "-o", "Dir::State::status=%s/state/status" % root, "-o", "Debug::NoLocking=1", "-o", "APT::Architecture=amd64"]
    subprocess.run(["apt-get"] + opts + ["update", "-qq"], check=True, capture_output=True)
    if install:
        # what install.yml's apt_present does with the plan's packages (simulated: no root, no dpkg)
        return subprocess.run(["apt-get"] + opts + ["install", "-y", "-s"] + install(suite)["packages"],
                              capture_output=True, text=True, check=False)
    text = subprocess.run(["apt-cache"] + opts + ["policy"] + METAS, check=True, capture_output=True, text=True).stdout
    return {block.split(":", 1)[0]: re.search(r"Candidate: (\S+)", block).group(1) for block in re.split(r"\n(?=\S)", text)}


@pytest.mark.parametrize("installed, candidate", [
    (None, "6.2.2+b24"),              # the install takes 6.2.2's metas
    ("6.2.2+b24", "6.2.2+b24"),       # an apt upgrade keeps them (the finding: it moved them to 6.2.3's)
    ("6.2.3+b81", "6.2.3+b81"),       # 990, not over 1000: a newer one already there is not downgraded
])
def test_the_preferences_hold_the_metas_at_the_plans_jetpack(tmp_path, installed, candidate):
    assert _policy(tmp_path, installed) == {name: candidate for name in METAS}


def test_without_the_hold_apt_takes_the_other_jetpacks_metas(tmp_path):
    assert _policy(tmp_path, "6.2.2+b24", break_it=True) == {name: "6.2.3+b81" for name in METAS}


@pytest.mark.parametrize("break_it", [False, True])
def test_a_newer_installed_jetpack_is_kept_and_held_not_downgraded(tmp_path, break_it):
    """Issue 52 red team HIGH 1: 6.2.3+b81 installed on L4T 36.5 (NVIDIA's `apt install nvidia-jetpack` took the newest
    of r36.5), the plan 6.2.2 (6.2.2+b24): the plan read dpkg's answer and pins 6.2.3+b81, said in its notes; apt then
    installs nothing and downgrades nothing. break_it: the dpkg answer not read (the old plan) -> apt downgrades."""
    seen = {}

    def install(suite):
        decided = _decided("file://" + suite, None if break_it else "ii  6.2.3+b81")
        assert decided["ok"], decided["errors"]
        seen.update(decided)
        return decided

    proc = _policy(tmp_path, "6.2.3+b81", install=install)
    if break_it:   # the red team's failure, by the real apt: exit 100 after the sources and preferences were written
        assert proc.returncode == 100 and "Packages were downgraded and -y was used without --allow-downgrades" in proc.stderr
        return
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    assert "downgrade" not in proc.stdout + proc.stderr and not re.search(r"^Inst .*\(6\.2\.2\+b24", proc.stdout, re.M), proc.stdout
    assert seen["packages"] == ["nvidia-jetpack=6.2.3+b81", "nvidia-cuda=6.2.3+b81"]
    assert seen["meta_pin"]["version"] == "6.2.3+b81"
    assert seen["kept_meta"] == {"jetpack": "6.2.3", "version": "6.2.3+b81", "planned": "6.2.2+b24"}
    assert any("kept and held at 6.2.3+b81" in note and "dlbox_plan_request" in note for note in seen["notes"])


@pytest.mark.parametrize("dpkg, kept", [
    ("", None), ("un ", None), ("rc  6.2.3+b81", None),          # not installed: nothing kept
    ("ii  6.2.2+b24", None), ("ii  6.2+b77", None),            # the plan's, or older: the pin installs/upgrades
    ("hi  6.2.3+b81", "6.2.3+b81"),                             # held by the user: still installed
])
def test_only_an_installed_newer_meta_is_kept(dpkg, kept):
    decided = _decided("https://repo.download.nvidia.com/jetson", dpkg)
    assert decided["ok"], decided["errors"]
    assert (decided["kept_meta"] or {}).get("version") == kept
    assert decided["packages"][0] == "nvidia-jetpack=%s" % (kept or "6.2.2+b24")


def test_an_installed_meta_the_data_does_not_know_is_refused_before_any_change():
    decided = _decided("https://repo.download.nvidia.com/jetson", "ii  6.2.9+b1")
    assert not decided["ok"]
    assert "nvidia-jetpack 6.2.9+b1 is installed" in decided["errors"][0]
    assert "dlbox_plan_request" in decided["errors"][0] and "Nothing was changed." in decided["errors"][0]


def test_the_preflight_hands_dpkgs_answer_to_the_plan():
    """The wiring of HIGH 1: the preflight asks dpkg for nvidia-jetpack (read-only, never failing) before the decision,
    and the decision reads its answer."""
    preflight = yaml.safe_load((ROOT / "roles" / "jetpack" / "tasks" / "preflight.yml").read_text(encoding="utf-8"))
    names = [t.get("name") for t in preflight]
    ask = preflight[names.index("Read the installed nvidia-jetpack version")]
    assert ask["ansible.builtin.command"]["argv"] == ["dpkg-query", "-W", "-f=${db:Status-Abbrev} ${Version}", "nvidia-jetpack"]
    assert ask["changed_when"] is False and ask["failed_when"] is False and ask["check_mode"] is False
    assert names.index("Read the installed nvidia-jetpack version") < names.index("Decide what to install and set")
    decide_task = preflight[names.index("Decide what to install and set")]
    assert "installed_meta=__jetpack_meta_installed.stdout" in decide_task["ansible.builtin.set_fact"]["__jetpack_decided"]
    # the answer's shape as dpkg-query prints it for that format
    assert parse_installed_meta("ii  6.2.3+b81") == "6.2.3+b81" and parse_installed_meta("") is None
