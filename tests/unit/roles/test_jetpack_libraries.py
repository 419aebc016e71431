# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""roles/jetpack/tasks/libraries.yml (issue 52 red team HIGH 4): the libraries the chosen PyTorch wheel loads and
JetPack lacks (NVIDIA's jp/v61 torch: libcusparseLt.so.0) are installed by the jetpack role edge.yml runs, before
python_env's pip, from NVIDIA's archive checked against its sha256, and the loader must find them afterwards. This reads
the task files, evaluates the role's "missing" expression with Jinja on a real `ldconfig -p` shape, and runs the task
file with Ansible on a laid-out root (ldconfig on its own cache and configuration: this machine's loader is not
touched)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import jinja2
import pytest
import yaml
from play_runner import run_play  # tests/unit/roles/play_runner.py, beside this file

ROOT = Path(__file__).resolve().parents[3]
ROLE = ROOT / "roles" / "jetpack"
TASKS = yaml.safe_load((ROLE / "tasks" / "libraries.yml").read_text(encoding="utf-8"))
MAIN = yaml.safe_load((ROLE / "tasks" / "main.yml").read_text(encoding="utf-8"))
VARS = yaml.safe_load((ROLE / "vars" / "main.yml").read_text(encoding="utf-8"))
EDGE = yaml.safe_load((ROOT / "playbooks" / "edge.yml").read_text(encoding="utf-8"))
# `ldconfig -p` as it prints (glibc's format: "<soname> (<flags>) => <path>")
LDCONFIG = ("3 libs found in cache `/etc/ld.so.cache'\n"
            "\tlibcusparse.so.12 (libc6,AArch64) => /usr/local/cuda/lib64/libcusparse.so.12\n"
            "\tlibcudart.so.12 (libc6,AArch64) => /usr/local/cuda/lib64/libcudart.so.12\n")
LIB = {"name": "cusparselt", "soname": "libcusparseLt.so.0", "version": "0.8.1.1", "folder": "cusparselt-0.8.1.1",
       "url": "https://developer.download.nvidia.com/x/libcusparse_lt-linux-aarch64-0.8.1.1_cuda12-archive.tar.xz",
       "sha256": "0" * 64}


def task(name):
    return next(t for t in TASKS if t["name"] == name)


def missing(libraries, ldconfig):
    expression = VARS["__jetpack_libraries_missing"]
    env = jinja2.Environment()
    return env.from_string(expression).render(__jetpack_pytorch={"libraries": libraries},
                                              __jetpack_ldconfig={"stdout": ldconfig}).strip()


def test_a_library_the_loader_does_not_know_is_missing_one_it_knows_is_left_alone():
    assert "libcusparseLt.so.0" in missing([LIB], LDCONFIG)
    known = LDCONFIG + "\tlibcusparseLt.so.0 (libc6,AArch64) => /usr/local/cuda/lib64/libcusparseLt.so.0\n"
    assert missing([LIB], known) == "[]"
    assert missing([], LDCONFIG) == "[]"


def test_the_archive_is_checked_against_the_datas_sha256_and_unpacked_into_its_own_folder():
    download = task("Download NVIDIA's archive of each missing library (checked against its sha256)")["ansible.builtin.get_url"]
    assert download["checksum"] == "sha256:{{ item.sha256 }}"
    unpack = task("Unpack each library into its own folder")["ansible.builtin.unarchive"]
    assert unpack["dest"] == "{{ __jetpack_libraries_dir }}/{{ item.folder }}"
    assert unpack["creates"].endswith("/lib/{{ item.soname }}")
    conf = task("Tell the loader where each library is")["ansible.builtin.copy"]
    assert "{{ __jetpack_libraries_dir }}/{{ item.folder }}/lib" in conf["content"]


def test_the_loader_is_asked_again_and_a_library_it_still_misses_fails_the_run():
    names = [t["name"] for t in TASKS]
    assert names.index("Rebuild the loader's cache") < names.index("Ask the loader again") < names.index(
        "Check that the loader finds every library the wheel needs")
    check = task("Check that the loader finds every library the wheel needs")
    assert "__jetpack_ldconfig_after.stdout" in check["vars"]["__jetpack_libraries_still_missing"]


def test_the_role_installs_them_after_jetpack_and_edge_asks_for_it_before_python_env():
    names = [t["name"] for t in MAIN]
    libraries = next(t for t in MAIN if t.get("ansible.builtin.import_tasks") == "libraries.yml")
    assert names.index(libraries["name"]) > names.index("Install the JetPack components")
    assert libraries["when"] == "jetpack_pytorch_check | bool"
    install = next(t for t in EDGE[1]["tasks"] if t["name"].startswith("Install the stack"))["block"]
    role = next(t for t in install if (t.get("ansible.builtin.include_role") or {}).get("name") == "dlbox.stack.jetpack")
    assert role["vars"]["jetpack_pytorch_check"] == "{{ dlbox_edge_python_env | default(true) | bool }}"
    steps = [t["name"] for t in install]
    python_env = next(t["name"] for t in install
                      if (t.get("ansible.builtin.include_role") or {}).get("name") == "dlbox.stack.python_env")
    assert steps.index(role["name"]) < steps.index(python_env)


# --- the task file run by Ansible (connection local) on a laid-out root -----------------------------------------------
# The archive is a FIXTURE in the layout of NVIDIA's redist archives (<name>-archive/lib, /include), holding a real
# shared object built here with the soname asked for; ldconfig runs on its own cache and configuration (-C, -f), so this
# machine's loader is not touched.
def _archive(tmp_path, soname):
    top = tmp_path / "src" / "libdlbox_fake-linux-aarch64-1.0-archive"
    (top / "lib").mkdir(parents=True)
    (top / "include").mkdir()
    (top / "include" / "fake.h").write_text("int dlbox_fake(void);\n", encoding="utf-8")
    (tmp_path / "fake.c").write_text("int dlbox_fake(void) { return 1; }\n", encoding="utf-8")
    subprocess.run(["gcc", "-shared", "-fPIC", "-Wl,-soname," + soname, "-o", str(top / "lib" / soname),
                    str(tmp_path / "fake.c")], check=True, capture_output=True)
    archive = tmp_path / "libdlbox_fake-linux-aarch64-1.0-archive.tar.xz"
    subprocess.run(["tar", "-C", str(tmp_path / "src"), "-cJf", str(archive), top.name], check=True)
    return archive, hashlib.sha256(archive.read_bytes()).hexdigest()


def _host(root, libraries):
    conf_dir = root / "ld.so.conf.d"
    conf_dir.mkdir(parents=True, exist_ok=True)
    (root / "ld.so.conf").write_text("include %s/*.conf\n" % conf_dir, encoding="utf-8")
    if not (root / "ld.so.cache").exists():                             # a host has a cache before the role runs
        subprocess.run(["ldconfig", "-C", str(root / "ld.so.cache"), "-f", str(root / "ld.so.conf")], check=True)
    return {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
            "__jetpack_libraries_cache": str(root / "cache"), "__jetpack_libraries_dir": str(root / "opt"),
            "__jetpack_ld_conf_dir": str(conf_dir),
            "__jetpack_ldconfig_argv": ["ldconfig", "-C", str(root / "ld.so.cache"), "-f", str(root / "ld.so.conf")],
            "__jetpack_pytorch": {"libraries": libraries}}


def _run(tmp_path, cases, check=False):
    """Run the task file once for every host of ``cases`` (name -> (root, libraries)); -> rc, changed, failed."""
    hostvars = {name: _host(root, libraries) for name, (root, libraries) in cases.items()}
    role_vars = {key: value for key, value in VARS.items() if key not in next(iter(hostvars.values()))}
    play = {"hosts": "all", "gather_facts": False, "vars": role_vars, "tasks": TASKS}
    proc, out = run_play(tmp_path, play, hostvars, check=check)
    tasks = out["plays"][0]["tasks"]
    changed = {h: [t["task"]["name"] for t in tasks if t["hosts"].get(h, {}).get("changed")] for h in cases}
    failed = {h: [t["task"]["name"] for t in tasks if t["hosts"].get(h, {}).get("failed")] for h in cases}
    return proc.returncode, changed, failed


needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="the tasks write root-owned files (owner: root) and run ldconfig")
DOWNLOAD = "Download NVIDIA's archive of each missing library (checked against its sha256)"


@needs_root
def test_the_task_file_on_three_hosts_check_mode_then_twice(tmp_path):
    """good: downloaded, checked, unpacked, found, then left alone; badsum: an archive with another checksum is refused
    and nothing is unpacked; nosoname: an archive without the library the wheel loads fails at the loader's check."""
    cases = {}
    for name, built, sha in (("good", "libdlboxfake.so.0", None), ("badsum", "libdlboxfake.so.0", "0" * 64),
                             ("nosoname", "libdlboxother.so.0", None)):
        root = tmp_path / name
        root.mkdir()
        archive, sha256 = _archive(root, built)
        cases[name] = (root, [{"name": "fake", "soname": "libdlboxfake.so.0", "version": "1.0", "folder": "fake-1.0",
                               "url": archive.as_uri(), "sha256": sha or sha256}])
    rc, changed, failed = _run(tmp_path, cases, check=True)                   # check mode writes nothing
    assert rc == 0, failed
    for root, _libraries in cases.values():
        assert not (root / "opt").exists() and not list((root / "ld.so.conf.d").iterdir())

    rc, changed, failed = _run(tmp_path, cases)
    assert rc != 0
    good = cases["good"][0]
    assert failed["good"] == [] and DOWNLOAD in changed["good"]
    assert (good / "opt" / "fake-1.0" / "lib" / "libdlboxfake.so.0").is_file()
    assert (good / "opt" / "fake-1.0" / "include" / "fake.h").is_file()
    assert "%s/opt/fake-1.0/lib\n" % good in (good / "ld.so.conf.d" / "dlbox-fake.conf").read_text(encoding="utf-8")
    printed = subprocess.run(["ldconfig", "-p", "-C", str(good / "ld.so.cache")], capture_output=True, text=True,
                             check=True).stdout
    assert "libdlboxfake.so.0" in printed
    assert failed["badsum"] == [DOWNLOAD]
    assert not (cases["badsum"][0] / "opt" / "fake-1.0" / "lib").exists()
    assert not list((cases["badsum"][0] / "ld.so.conf.d").iterdir())
    # `creates:` names the soname, so the unpack runs; the loader then still lacks it
    assert failed["nosoname"] == ["Check that the loader finds every library the wheel needs"]

    rc, changed, failed = _run(tmp_path, {"good": cases["good"]})             # the loader knows it now
    assert rc == 0 and changed["good"] == []
