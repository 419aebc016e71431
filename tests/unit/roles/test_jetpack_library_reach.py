# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""roles/jetpack/tasks/pytorch.yml's look for the libraries' archives (issue 52, third red team LOW 10), run by Ansible
(connection local) in the preflight: NVIDIA's jp/v61 torch loads libcusparseLt.so.0, which JetPack 6 lacks, and
libraries.yml downloads its archive only after the repositories and packages changed. The preflight now asks for the
archive from the host first (an http(s) HEAD, or the file:// path) and refuses one it cannot fetch, naming
jetpack_pytorch_libraries_url. Four hosts, one run: a folder on a local web server that holds the archive's name and
one that does not, a file:// folder with it and one without. The archive here is an empty FIXTURE file under NVIDIA's
archive name (only its presence is asked; its sha256 is libraries.yml's business)."""

from __future__ import annotations

import functools
import http.server
import subprocess
import sys
import threading
from pathlib import Path

import yaml

from play_runner import run_play  # tests/unit/roles/play_runner.py, beside this file

ROOT = Path(__file__).resolve().parents[3]
ROLE = ROOT / "roles" / "jetpack"
VARS = yaml.safe_load((ROLE / "vars" / "main.yml").read_text(encoding="utf-8"))
PYTORCH = yaml.safe_load((ROLE / "tasks" / "pytorch.yml").read_text(encoding="utf-8"))
FIRST = next(i for i, t in enumerate(PYTORCH) if t.get("name") == "Ask the loader which libraries it knows (the libraries' check)")
ARCHIVE = "libcusparse_lt-linux-aarch64-0.8.1.1_cuda12-archive.tar.xz"   # data/jetson.yml pytorch_sources.libraries
REFUSAL = "Refuse a library archive this host cannot fetch"
# the plan of an Orin on JetPack 6.2 (the resolver's shape), whose default source is NVIDIA's jp/v61 folder
PLAN = {"stack": {"pytorch": {"version": "2.5.0", "variant": "jp6-cu126", "index_url": "https://pypi.jetson-ai-lab.io/jp6/cu126/+simple",
                              "cuda": "12.6", "index_replaces_pypi": True},
                  "jetpack": {"version": "6.2", "l4t": "36.4.3", "family": "orin"}}}


def test_an_archive_the_host_cannot_fetch_is_refused_in_the_preflight(tmp_path):
    served = tmp_path / "www"
    (served / "ok").mkdir(parents=True)
    (served / "none").mkdir()
    (served / "ok" / ARCHIVE).write_bytes(b"FIXTURE")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(served))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    web = "http://127.0.0.1:%d" % server.server_address[1]
    (tmp_path / "ld.so.conf").write_text("", encoding="utf-8")
    # a host has a loader cache before the role runs (here an empty one of its own)
    subprocess.run(["ldconfig", "-C", str(tmp_path / "ld.so.cache"), "-f", str(tmp_path / "ld.so.conf")], check=True)
    folders = {"http_ok": web + "/ok/", "http_gone": web + "/none/", "file_ok": (served / "ok").as_uri(),
               "file_gone": (served / "none").as_uri()}
    hostvars = {name: {"ansible_connection": "local", "ansible_python_interpreter": sys.executable, "dlbox_plan": PLAN,
                       "__jetpack_pytorch_options": {"source": "auto", "mirror_url": "", "mirror_kind": "index",
                                                     "libraries_url": url, "components": ["all"]},
                       # the loader's own cache and configuration (-C, -f): it knows no cuSPARSELt
                       "__jetpack_ldconfig_argv": ["ldconfig", "-C", str(tmp_path / "ld.so.cache"),
                                                   "-f", str(tmp_path / "ld.so.conf")]}
                for name, url in folders.items()}
    choose = {"name": "Choose the source", "ansible.builtin.set_fact": {
        "__jetpack_pytorch": "{{ 'jetpack' | dlbox.stack.role_module('pytorch', options=__jetpack_pytorch_options, plan=dlbox_plan) }}"}}
    play = {"hosts": "all", "gather_facts": False, "vars": {k: v for k, v in VARS.items() if not k.startswith("__jetpack_ldconfig_argv")},
            "tasks": [choose] + PYTORCH[FIRST:]}
    (tmp_path / "run").mkdir()
    try:
        proc, out = run_play(tmp_path / "run", play, hostvars, env={"no_proxy": "127.0.0.1", "NO_PROXY": "127.0.0.1"})
    finally:
        server.shutdown()
    assert out is not None, proc.stderr
    tasks = out["plays"][0]["tasks"]
    failed = {h: [t["task"]["name"] for t in tasks if t["hosts"].get(h, {}).get("failed")] for h in folders}
    assert failed == {"http_ok": [], "http_gone": [REFUSAL], "file_ok": [], "file_gone": [REFUSAL]}, failed
    refusal = next(t for t in tasks if t["task"]["name"] == REFUSAL)["hosts"]
    assert "%s/none/%s answered HTTP 404" % (web, ARCHIVE) in refusal["http_gone"]["msg"]
    assert "answered no such file on this host" in refusal["file_gone"]["msg"]
    for host in ("http_gone", "file_gone"):
        assert "jetpack_pytorch_libraries_url" in refusal[host]["msg"] and "Nothing was changed." in refusal[host]["msg"]
