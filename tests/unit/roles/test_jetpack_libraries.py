# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""roles/jetpack/tasks/libraries.yml (issue 52 red team HIGH 4): the libraries the chosen PyTorch wheel loads and
JetPack lacks (NVIDIA's jp/v61 torch: libcusparseLt.so.0) are installed by the jetpack role edge.yml runs, before
python_env's pip, from NVIDIA's archive checked against its sha256, and the loader must find them afterwards. This reads
the task files and evaluates the role's "missing" expression with Jinja on a real `ldconfig -p` shape; the tasks do not
run here (they would change this machine's loader)."""

from __future__ import annotations

from pathlib import Path

import jinja2
import yaml

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
