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
from ansible_collections.dlbox.stack.plugins.plugin_utils.jetpack_plan import decide, load_jetson_data, parse_installed_metas
from ansible_collections.dlbox.stack.plugins.plugin_utils.roles import jetpack as jetpack_module

ROOT = Path(__file__).resolve().parents[3]
REPOSITORY = yaml.safe_load((ROOT / "roles" / "jetpack" / "tasks" / "repository.yml").read_text(encoding="utf-8"))
RELEASE = (ROOT / "tests" / "fixtures" / "jetson" / "nv_tegra_release" / "agx-orin-r36.4.3.txt").read_text(encoding="utf-8")
METAS = ["nvidia-jetpack", "nvidia-cuda"]
# the real chain (issue 52 red team HIGH B): nvidia-jetpack -> nvidia-jetpack-runtime, nvidia-jetpack-dev (= v) ->
# the component metas (= v) (data/jetson.yml meta_chain_source, components_versions_source)
COMPONENT_METAS = ["nvidia-cuda", "nvidia-cudnn", "nvidia-tensorrt", "nvidia-vpi", "nvidia-container"]
CHAIN = {"nvidia-jetpack": ["nvidia-jetpack-runtime", "nvidia-jetpack-dev"],
         "nvidia-jetpack-runtime": COMPONENT_METAS, "nvidia-jetpack-dev": ["nvidia-cuda"]}
ALL_METAS = ["nvidia-jetpack", "nvidia-jetpack-runtime", "nvidia-jetpack-dev"] + COMPONENT_METAS
STATES = {"ii": "install ok installed", "iU": "install ok unpacked", "iF": "install ok half-configured"}

pytestmark = pytest.mark.skipif(not shutil.which("apt-cache"), reason="apt is not installed here")


def _preferences_task():
    block = next(t for t in REPOSITORY if "block" in t)["block"]
    return next(t for t in block if str(t.get("name", "")).startswith("Prefer the Jetson repositories"))


def _decided(base_url, installed_meta=None, components=("all", "cuda")):
    return decide({"stack": {"jetpack": {"version": "6.2.2", "l4t": "36.5.0", "family": "orin"}}},
                  {"components": list(components), "power_mode": "", "power_mode_reboot": "never", "clocks": None,
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


def _depends(name, version, chain):
    """The Depends line of a meta, in the archive and in dpkg's status alike (apt takes a version with other Depends
    for another build of it)."""
    depends = CHAIN.get(name, []) if chain else (["nvidia-cuda"] if name == "nvidia-jetpack" else [])
    return "Depends: %s\n" % ", ".join("%s (= %s)" % (d, version) for d in depends) if depends else ""


def _archive(root, chain):
    suite = os.path.join(root, "jetson-common-r36.5")
    os.makedirs(suite)
    with open(os.path.join(suite, "Packages"), "w", encoding="utf-8") as fh:
        for version in ("6.2.2+b24", "6.2.3+b81"):
            for name in ALL_METAS if chain else METAS:
                fh.write("Package: %s\nVersion: %s\nArchitecture: amd64\n%sFilename: %s-%s.deb\nSize: 1\nDescription: t\n\n"
                         % (name, version, _depends(name, version, chain), name, version))
    with open(os.path.join(suite, "Release"), "w", encoding="utf-8") as fh:
        fh.write("Origin: NVIDIA\nLabel: NVIDIA\nSuite: r36.5\nCodename: r36.5\nArchitectures: amd64\nComponents: main\n")
    return suite


def _status(root, installed, chain=False):
    """dpkg's status file: ``installed`` is ``{name: version}`` or ``{name: (version, "iU")}``."""
    with open(os.path.join(root, "state", "status"), "w", encoding="utf-8") as fh:
        for name, value in (installed or {}).items():
            version, state = value if isinstance(value, tuple) else (value, "ii")
            fh.write("Package: %s\nStatus: %s\nVersion: %s\nArchitecture: amd64\n%sDescription: t\n\n"
                     % (name, STATES[state], version, _depends(name, version, chain)))


def _dpkg_query(root):
    """The preflight's own read-only query (roles/jetpack/tasks/preflight.yml), by the REAL dpkg-query on the status."""
    preflight = yaml.safe_load((ROOT / "roles" / "jetpack" / "tasks" / "preflight.yml").read_text(encoding="utf-8"))
    argv = next(t for t in preflight if t.get("name") == "Read the installed JetPack metas")["ansible.builtin.command"]["argv"]
    admin = os.path.join(root, "dpkg")
    os.makedirs(admin, exist_ok=True)
    shutil.copy(os.path.join(root, "state", "status"), os.path.join(admin, "status"))
    return subprocess.run([argv[0], "--admindir=%s" % admin] + argv[1:], capture_output=True, text=True, check=False).stdout


def _apt(tmp_path, installed=None, chain=False, pref=None):
    """A private apt (no root, no network) with the archive, dpkg's status and the preferences ``pref(suite)`` writes;
    returns ``run(args)``."""
    root = str(tmp_path)
    suite = _archive(root, chain)
    for sub in ("etc/preferences.d", "state/lists/partial", "cache/archives/partial"):
        os.makedirs(os.path.join(root, sub))
    _status(root, installed, chain)
    with open(os.path.join(root, "etc", "sources.list"), "w", encoding="utf-8") as fh:
        fh.write("deb [trusted=yes] file:%s ./\n" % suite)
    # a file: source: the role's Pin: origin is then "" (jetpack_base_url file://, as for a local mirror)
    with open(os.path.join(root, "etc", "preferences.d", "dlbox-jetson.pref"), "w", encoding="utf-8") as fh:
        fh.write(pref(suite))
    opts = ["-o", "Dir::Etc=%s/etc" % root, "-o", "Dir::State=%s/state" % root, "-o", "Dir::Cache=%s/cache" % root,
            "-o", "Dir::State::status=%s/state/status" % root, "-o", "Debug::NoLocking=1", "-o", "APT::Architecture=amd64"]
    subprocess.run(["apt-get"] + opts + ["update", "-qq"], check=True, capture_output=True)

    def run(tool, args):
        return subprocess.run([tool] + opts + args, capture_output=True, text=True, check=False)
    return run


def _policy(tmp_path, installed=None, break_it=False, install=None):
    decided = {}

    def pref(suite):
        decided.update(install(suite) if install else {})
        return _preferences("file://" + suite, break_it, decided if install else None)
    run = _apt(tmp_path, {name: installed for name in METAS} if isinstance(installed, str) else installed, pref=pref)
    if install:
        # what install.yml's apt_present does with the plan's packages (simulated: no root, no dpkg)
        return run("apt-get", ["install", "-y", "-s"] + decided["packages"])
    text = run("apt-cache", ["policy"] + METAS).stdout
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
        decided = _decided("file://" + suite, None if break_it else
                           "nvidia-jetpack ii  6.2.3+b81\nnvidia-cuda ii  6.2.3+b81\nnvidia-l4t-core ii  36.5.0-20260115\n")
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
    assert seen["kept_meta"] == {"jetpack": "6.2.3", "version": "6.2.3+b81", "planned": "6.2.2+b24",
                                 "packages": ["nvidia-jetpack", "nvidia-cuda"]}
    assert any("kept and held at 6.2.3+b81" in note and "dlbox_plan_request" in note for note in seen["notes"])


@pytest.mark.parametrize("dpkg, kept", [
    ("", None), ("nvidia-jetpack un ", None), ("nvidia-jetpack rc  6.2.3+b81", None),   # not installed: nothing kept
    ("nvidia-jetpack ii  6.2.2+b24", None), ("nvidia-jetpack ii  6.2+b77", None),      # the plan's, or older
    ("nvidia-jetpack hi  6.2.3+b81", "6.2.3+b81"),                                      # held by the user: installed
    ("nvidia-container ii  6.2.3+b81", "6.2.3+b81"),      # HIGH A: NVIDIA's Docker page installed it alone
    ("nvidia-jetpack-runtime ii  6.2.3+b81", "6.2.3+b81"), ("nvidia-vpi ii  6.2.3+b81", "6.2.3+b81"),
    ("nvidia-l4t-core ii  36.5.0-20260115\nnvidia-container-toolkit ii  1.16.2-1", None),   # not JetPack metas
])
def test_only_an_installed_newer_meta_is_kept(dpkg, kept):
    decided = _decided("https://repo.download.nvidia.com/jetson", dpkg)
    assert decided["ok"], decided["errors"]
    assert (decided["kept_meta"] or {}).get("version") == kept
    assert decided["packages"][0] == "nvidia-jetpack=%s" % (kept or "6.2.2+b24")


@pytest.mark.parametrize("dpkg, named", [
    ("nvidia-jetpack ii  6.2.9+b1", "nvidia-jetpack 6.2.9+b1 is installed"),
    ("nvidia-jetpack ii  6.2.2+b24\nnvidia-container ii  6.2.9+b1", "nvidia-container 6.2.9+b1 is installed"),
])
def test_an_installed_meta_the_data_does_not_know_is_refused_before_any_change(dpkg, named):
    decided = _decided("https://repo.download.nvidia.com/jetson", dpkg)
    assert not decided["ok"]
    assert named in decided["errors"][0]
    assert "dlbox_plan_request" in decided["errors"][0] and "Nothing was changed." in decided["errors"][0]


def test_the_preflight_hands_dpkgs_answer_to_the_plan():
    """The wiring of HIGH 1 and HIGH A: the preflight asks dpkg for every nvidia-* package in one read-only query that
    never fails, before the decision, and the decision reads its answer."""
    preflight = yaml.safe_load((ROOT / "roles" / "jetpack" / "tasks" / "preflight.yml").read_text(encoding="utf-8"))
    names = [t.get("name") for t in preflight]
    ask = preflight[names.index("Read the installed JetPack metas")]
    assert ask["ansible.builtin.command"]["argv"] == ["dpkg-query", "-W", "-f=${Package} ${db:Status-Abbrev} ${Version}\n",
                                                      "nvidia-*"]
    assert ask["changed_when"] is False and ask["failed_when"] is False and ask["check_mode"] is False
    assert names.index("Read the installed JetPack metas") < names.index("Decide what to install and set")
    decide_task = preflight[names.index("Decide what to install and set")]
    # the role's module (plugin_utils/roles/jetpack.py) decides; dpkg's answer is its fact installed_meta
    assert "'installed_meta': __jetpack_meta_installed.stdout" in decide_task["ansible.builtin.set_fact"]["__jetpack_decided"]
    assert "installed_meta" in jetpack_module.FACTS
    assert parse_installed_metas("nvidia-jetpack ii  6.2.3+b81") == {"installed": {"nvidia-jetpack": "6.2.3+b81"}, "half": {}}
    assert parse_installed_metas("") == {"installed": {}, "half": {}}


# --- the real chain (issue 52 red team HIGH A, HIGH B) -----------------------------------------------------------------

def _chain_apt(tmp_path, installed, components=("all",), only_named=False):
    """The private apt on the r36.5-shaped archive of the real chain, dpkg's status ``installed``, and the preferences
    the role renders from the plan made of the REAL dpkg-query's answer. only_named: the hold of the old plan (the
    metas of jetpack_components only)."""
    seen = {}

    def pref(suite):
        decided = _decided("file://" + suite, _dpkg_query(str(tmp_path)), components)
        assert decided["ok"], decided["errors"]
        if only_named:
            decided["meta_pin"]["packages"] = [p.split("=")[0] for p in decided["packages"]]
        seen.update(decided)
        return _preferences("file://" + suite, decided=decided)
    # _apt writes dpkg's status before the preferences: the plan reads the REAL dpkg-query's answer on it
    run = _apt(tmp_path, installed, chain=True, pref=pref)
    return run, seen


def _changes(proc):
    return re.findall(r"^(Inst|Remv|Conf) (\S+)(?: \[(\S+)\])?(?: \((\S+))?", proc.stdout, re.M)


@pytest.mark.parametrize("components", [("all",), ("all", "cuda")])
@pytest.mark.parametrize("break_it", [False, True])
def test_every_meta_of_the_chain_is_held_full_upgrade_and_nvidia_container_keep_the_plan(tmp_path, components, break_it):
    """HIGH B: a 6.2.2 module with every meta of the chain at 6.2.2+b24 (after the role's install), r36.5 holding
    6.2.3+b81 too. With every meta held at 6.2.2+b24 the REAL apt's full-upgrade and NVIDIA's `apt-get install
    nvidia-container` change nothing. break_it: only the metas of jetpack_components held (the old plan, [all] ->
    nvidia-jetpack alone) -> apt removes nvidia-jetpack and moves the others to 6.2.3+b81."""
    run, seen = _chain_apt(tmp_path, {name: "6.2.2+b24" for name in ALL_METAS}, components, only_named=break_it)
    upgrade = run("apt-get", ["full-upgrade", "-y", "-s"])
    container = run("apt-get", ["install", "-y", "-s", "nvidia-container"])
    assert upgrade.returncode == 0 and container.returncode == 0, (upgrade.stderr, container.stderr)
    if break_it:
        # the red team's run: each removes nvidia-jetpack and moves nvidia-container (and more) to 6.2.3+b81
        for moved in (_changes(upgrade), _changes(container)):
            assert ("Remv", "nvidia-jetpack", "6.2.2+b24", "") in moved, moved
            assert ("Inst", "nvidia-container", "6.2.2+b24", "6.2.3+b81") in moved, moved
        return
    assert seen["meta_pin"] == {"packages": ALL_METAS, "version": "6.2.2+b24"}
    assert _changes(upgrade) == [] and _changes(container) == [], (upgrade.stdout, container.stdout)
    assert "nvidia-container is already the newest version (6.2.2+b24)" in container.stdout


@pytest.mark.parametrize("break_it", [False, True])
def test_nvidia_container_installed_first_is_planned_at_its_version(tmp_path, break_it):
    """HIGH A: NVIDIA's Docker setup page's `sudo apt install -y nvidia-container curl` on a 6.2.2 module took r36.5's
    newest, 6.2.3+b81 (nvidia-container and the component metas it leaves), nvidia-jetpack absent. The REAL dpkg-query
    of the preflight, the plan, then the REAL apt with the plan's packages and preferences: planned and held at
    6.2.3+b81, apt exits 0 and downgrades nothing. break_it: the plan reads nvidia-jetpack only (the old preflight)
    -> nvidia-jetpack=6.2.2+b24, and apt exits 100 as the red team saw."""
    installed = {"nvidia-container": "6.2.3+b81"}
    seen = {}

    def install(suite):
        answer = _dpkg_query(str(tmp_path))
        if break_it:
            answer = "\n".join(line for line in answer.splitlines() if line.startswith("nvidia-jetpack "))
        decided = _decided("file://" + suite, answer, ("all",))
        assert decided["ok"], decided["errors"]
        seen.update(decided)
        return decided
    run, _unused = _chain_apt(tmp_path, installed, ("all",))
    # the install with the plan made from dpkg's answer on this module
    suite = os.path.join(str(tmp_path), "jetson-common-r36.5")
    decided = install(suite)
    with open(os.path.join(str(tmp_path), "etc", "preferences.d", "dlbox-jetson.pref"), "w", encoding="utf-8") as fh:
        fh.write(_preferences("file://" + suite, decided=decided))
    proc = run("apt-get", ["install", "-y", "-s"] + decided["packages"])
    if break_it:
        assert seen["packages"] == ["nvidia-jetpack=6.2.2+b24"]
        assert proc.returncode == 100, (proc.stdout, proc.stderr)
        return
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    assert seen["packages"] == ["nvidia-jetpack=6.2.3+b81"] and seen["meta_pin"]["version"] == "6.2.3+b81"
    assert seen["kept_meta"]["packages"] == ["nvidia-container"]
    assert all(c[3] == "6.2.3+b81" for c in _changes(proc) if c[0] == "Inst") and "Remv" not in proc.stdout, proc.stdout
    assert "downgrade" not in proc.stdout + proc.stderr


@pytest.mark.parametrize("state", ["iU", "iF"])
def test_a_half_installed_meta_is_refused_naming_dpkg_configure(tmp_path, state):
    """LOW 2: a meta dpkg holds unpacked or half-configured (an interrupted run) is not absent: refused before any
    change, naming dpkg --configure -a. The answer is the REAL dpkg-query's."""
    root = str(tmp_path)
    os.makedirs(os.path.join(root, "state"))
    _status(root, {"nvidia-container": ("6.2.3+b81", state), "nvidia-cuda": "6.2.3+b81"})
    answer = _dpkg_query(root)
    assert "nvidia-container %s  6.2.3+b81" % state in answer
    decided = _decided("https://repo.download.nvidia.com/jetson", answer)
    assert not decided["ok"]
    assert any("nvidia-container (%s 6.2.3+b81)" % state in e and "sudo dpkg --configure -a" in e
               and "Nothing was changed." in e for e in decided["errors"]), decided["errors"]
