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
from ansible_collections.dlbox.stack.plugins.plugin_utils.jetpack_plan import decide, load_jetson_data

ROOT = Path(__file__).resolve().parents[3]
REPOSITORY = yaml.safe_load((ROOT / "roles" / "jetpack" / "tasks" / "repository.yml").read_text(encoding="utf-8"))
RELEASE = (ROOT / "tests" / "fixtures" / "jetson" / "nv_tegra_release" / "agx-orin-r36.4.3.txt").read_text(encoding="utf-8")
METAS = ["nvidia-jetpack", "nvidia-cuda"]

pytestmark = pytest.mark.skipif(not shutil.which("apt-cache"), reason="apt is not installed here")


def _preferences_task():
    block = next(t for t in REPOSITORY if "block" in t)["block"]
    return next(t for t in block if str(t.get("name", "")).startswith("Prefer the Jetson repositories"))


def _preferences(base_url, break_it=False):
    decided = decide({"stack": {"jetpack": {"version": "6.2.2", "l4t": "36.5.0", "family": "orin"}}},
                     {"components": ["all", "cuda"], "power_mode": "", "power_mode_reboot": "never", "clocks": None,
                      "base_url": base_url},
                     release_text=RELEASE.replace("REVISION: 4.3", "REVISION: 5.0"), model_text="NVIDIA Jetson AGX Orin",
                     data=load_jetson_data(), compat=load_compat())
    assert decided["ok"], decided["errors"]
    assert decided["packages"] == ["nvidia-jetpack=6.2.2+b24", "nvidia-cuda=6.2.2+b24"]
    if break_it:
        decided["meta_pin"] = None
    template = _preferences_task()["ansible.builtin.copy"]["content"]  # trim_blocks as Ansible templates it
    return jinja2.Environment(undefined=jinja2.StrictUndefined, trim_blocks=True).from_string(template).render(__jetpack_decided=decided)


def _policy(tmp_path, installed=None, break_it=False):
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
        fh.write(_preferences("file://" + suite, break_it))
    opts = ["-o", "Dir::Etc=%s/etc" % root, "-o", "Dir::State=%s/state" % root, "-o", "Dir::Cache=%s/cache" % root,
            "-o", "Dir::State::status=%s/state/status" % root, "-o", "Debug::NoLocking=1", "-o", "APT::Architecture=amd64"]
    subprocess.run(["apt-get"] + opts + ["update", "-qq"], check=True, capture_output=True)
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
