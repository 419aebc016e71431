# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A lab's index mirror on JetPack 6 (issue 52 M-D), through roles/jetpack/tasks/pytorch.yml run by Ansible (connection
local) against PEP 503 indexes served on 127.0.0.1, with the plan of an AGX Orin on JetPack 6.2 as the real resolver
makes it (tests/unit/golden/jetson-agx-orin-jp6.json) and the shipped data/jetson.yml.

JetPack 6's plan names NVIDIA's own build (torch 2.5.0a0+872d972e41.nv24.08.17622132, data/compat.yml jetson_pytorch)
and cannot ask for another PyTorch; an index mirror was pinned to 2.5.0, the community index's number of that release,
which the community index has not served since 2025-09 (dusty-nv/jetson-containers#1404): a mirror of it was a dead end,
and a lab index holding NVIDIA's very wheel was refused too (2.5.0 is not 2.5.0a0+...). Three mirrors, one run:

- ``nvidia_build``: a lab index holding NVIDIA's wheel (its file name as NVIDIA's folder serves it, data/jetson.yml):
  pinned to that exact build, with NVIDIA's wheel's needs (numpy<2 beside torch, libopenblas-dev);
- ``community_old``: a copy of the community index from when it served 2.5.0 (a FIXTURE link): pinned to 2.5.0;
- ``community_now``: the community index as public scripts quote it now (the REAL cp310 links of
  tests/fixtures/jetson/pytorch_index/community-jp6-cu126-torch.html: 2.8.0, 2.10.0): refused before any change,
  saying what the mirror must hold and what works instead (a copy of NVIDIA's folder with
  jetpack_pytorch_mirror_kind: find_links, or NVIDIA's folder).
"""

from __future__ import annotations

import functools
import http.server
import json
import sys
import threading
from pathlib import Path

import yaml

from play_runner import run_play  # tests/unit/roles/play_runner.py, beside this file

ROOT = Path(__file__).resolve().parents[3]
ROLE = ROOT / "roles" / "jetpack"
VARS = yaml.safe_load((ROLE / "vars" / "main.yml").read_text(encoding="utf-8"))
PYTORCH = yaml.safe_load((ROLE / "tasks" / "pytorch.yml").read_text(encoding="utf-8"))
LAST = next(i for i, t in enumerate(PYTORCH) if t.get("name") == "Refuse a source without the planned wheel")
REFUSAL = PYTORCH[LAST]["name"]
PLAN = json.loads((ROOT / "tests" / "unit" / "golden" / "jetson-agx-orin-jp6.json").read_text(encoding="utf-8"))
NV_BUILD = "2.5.0a0+872d972e41.nv24.08.17622132"
COMMUNITY_PAGE = (ROOT / "tests" / "fixtures" / "jetson" / "pytorch_index" / "community-jp6-cu126-torch.html").read_text(
    encoding="utf-8")


def _page(*wheels):
    links = "".join('<a href="../../packages/%s#sha256=%s">%s</a><br/>\n' % (w.replace("+", "%2B"), "0" * 64, w)
                    for w in wheels)
    return "<!DOCTYPE html>\n<!-- FIXTURE (dlbox.stack): a PEP 503 page -->\n<html><body>\n%s</body></html>\n" % links


def test_an_index_mirror_on_jetpack_6_is_pinned_by_what_it_holds_or_refused_saying_what_works(tmp_path):
    assert PLAN["stack"]["pytorch"]["version"] == NV_BUILD      # the plan this test is about
    served = tmp_path / "www"
    pages = {
        "nvidia_build": _page("torch-%s-cp310-cp310-linux_aarch64.whl" % NV_BUILD),
        # FIXTURE: the community index served torch 2.5.0 for jp6/cu126 until 2025-09 (jetson-containers#1404)
        "community_old": _page("torch-2.5.0-cp310-cp310-linux_aarch64.whl", "torch-2.4.0-cp310-cp310-linux_aarch64.whl"),
        "community_now": COMMUNITY_PAGE,
    }
    for name, html in pages.items():
        (served / name / "+simple" / "torch").mkdir(parents=True)
        (served / name / "+simple" / "torch" / "index.html").write_text(html, encoding="utf-8")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(served))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    web = "http://127.0.0.1:%d" % server.server_address[1]
    hostvars = {name: {"ansible_connection": "local", "ansible_python_interpreter": sys.executable, "dlbox_plan": PLAN,
                       "__jetpack_pytorch_options": {"source": "mirror", "mirror_url": "%s/%s/+simple" % (web, name),
                                                     "mirror_kind": "index", "libraries_url": "", "components": ["all"]}}
                for name in pages}
    play = {"hosts": "all", "gather_facts": False, "vars": VARS, "tasks": PYTORCH[:LAST + 1]}
    (tmp_path / "run").mkdir()
    try:
        proc, out = run_play(tmp_path / "run", play, hostvars, env={"no_proxy": "127.0.0.1", "NO_PROXY": "127.0.0.1"})
    finally:
        server.shutdown()
    assert out is not None, proc.stderr
    tasks = out["plays"][0]["tasks"]
    failed = {h: [t["task"]["name"] for t in tasks if t["hosts"].get(h, {}).get("failed")] for h in pages}
    assert failed == {"nvidia_build": [], "community_old": [], "community_now": [REFUSAL]}, failed
    settings = next(t for t in tasks if t["task"]["name"] == "Take python_env's settings from the checked source")["hosts"]

    nvidia = settings["nvidia_build"]["ansible_facts"]
    assert nvidia["__jetpack_pytorch_plan"]["stack"]["pytorch"]["version"] == NV_BUILD
    assert nvidia["__jetpack_pytorch_plan"]["stack"]["pytorch"]["index_url"] == "%s/nvidia_build/+simple" % web
    assert nvidia["__jetpack_pytorch_environments"] == [{"name": "pytorch", "frameworks": ["pytorch"], "packages": ["numpy<2"]}]

    old = settings["community_old"]["ansible_facts"]
    assert old["__jetpack_pytorch_plan"]["stack"]["pytorch"]["version"] == "2.5.0"
    assert old["__jetpack_pytorch_environments"] == []

    msg = next(t for t in tasks if t["task"]["name"] == REFUSAL)["hosts"]["community_now"]["msg"]
    for words in ("has no torch 2.5.0 wheel for Python 3.10",        # molecule/edge's pytorch_wheel_missing asks for this
                  "it has 2.8.0, 2.10.0",
                  "holds NVIDIA's build torch %s" % NV_BUILD,
                  "https://developer.download.nvidia.com/compute/redist/jp/v61/pytorch/",
                  "was last seen serving torch 2.8.0",
                  "jetpack_pytorch_mirror_kind: find_links", "jetpack_pytorch_source: auto", "Nothing was changed."):
        assert words in msg, (words, msg)
