"""The fleet report's HTML page in a real headless browser (Debian's chromium, installed by tests/scripts/host-deps.sh).

Three hosts are judged from recorded real captures (tests/fixtures/nvidia-smi: the RTX 4090 and Tesla P100 XML of
netdata's test data, the H200 of this project's lent host; see tests/fixtures/SOURCES.md; CPU, memory and disks are
inline values as in tests/unit/plugins/plugin_utils/test_fitness.py); their reports go to a report folder, the
collection's `dlbox.stack.fitness_fleet` filter renders the page through ansible, and chromium renders it: the DOM it
dumps (--dump-dom) must hold one table per host and the highlighted problem of the host that has one. A screenshot
goes to build/fitness-report.png for a person to look at.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from conftest import ROOT, ansible_env

sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT / "tests" / "unit" / "plugins" / "plugin_utils"))
from dlboxdata import collection  # noqa: E402  pylint: disable=wrong-import-position

collection.importable()
import test_fitness as cases  # noqa: E402  pylint: disable=wrong-import-position

from ansible_collections.dlbox.stack.plugins.plugin_utils import fitness  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no chromium (tests/scripts/host-deps.sh installs it)")


class Tables(HTMLParser):
    """Host tables of the rendered DOM, with the class of each row."""

    def __init__(self):
        super().__init__()
        self.tables, self.current, self.styles = {}, None, ""
        self._in_style = False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "table" and "host" in (attrs.get("class") or "").split():
            self.current = attrs["data-host"]
            self.tables[self.current] = []
        elif tag == "tr" and self.current is not None:
            self.tables[self.current].append((attrs.get("class"), attrs.get("data-check")))
        elif tag == "style":
            self._in_style = True

    def handle_endtag(self, tag):
        if tag == "table":
            self.current = None
        elif tag == "style":
            self._in_style = False

    def handle_data(self, data):
        if self._in_style:
            self.styles += data


@pytest.fixture(scope="module")
def page(tmp_path_factory, collection_installed):
    folder = tmp_path_factory.mktemp("reports")
    (folder / "fitness").mkdir()
    (folder / "acceptance").mkdir()
    hosts = {
        "ws-rtx4090": (cases.facts("nvidia-smi/rtx-4090-driver-535.xml"), "workstation"),
        "ws-p100": (cases.facts("nvidia-smi/tesla-p100-driver-510.xml"), "workstation"),
        "srv-h200": (cases.h200(edac=["mc0"]), "server"),
    }
    for name, (facts, profile) in hosts.items():
        report = fitness.judge_host(facts, name, profile, cases.DATA)
        (folder / "fitness" / f"{name}.json").write_text(json.dumps(report))
    # acceptance test input in dlbox-acceptance's shape (no measured GPU figures exist here): matmul at 50 %
    acceptance = fitness.judge_acceptance(dict(cases.measured_h200(0.5), host="srv-h200"), cases.REF)
    (folder / "acceptance" / "srv-h200.json").write_text(json.dumps(acceptance))
    html = folder / "fleet.html"
    run = subprocess.run(
        [str(Path(sys.executable).parent / "ansible"), "localhost", "-c", "local", "-m", "ansible.builtin.copy",
         "-a", "content={{ '%s' | dlbox.stack.fitness_fleet('html') }} dest=%s mode=0644" % (folder, html)],
        env=ansible_env(), capture_output=True, text=True, check=False, cwd=ROOT)
    assert run.returncode == 0, run.stdout + run.stderr
    return html


def chromium(*args):
    return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                           "--no-first-run", *args], capture_output=True, text=True, timeout=120, check=False)


def test_rendered_dom_has_a_table_per_host_and_the_problem_highlighted(page):
    run = chromium("--dump-dom", page.as_uri())
    assert run.returncode == 0 and "<table" in run.stdout, run.stderr[-2000:]
    dom = Tables()
    dom.feed(run.stdout)
    assert sorted(dom.tables) == ["srv-h200", "ws-p100", "ws-rtx4090"]
    # the P100 host misses the workstation's GPU memory: its row is highlighted; the 4090's only highlight is its link
    # (netdata's capture: a Gen4 card its host holds at Gen3)
    assert ("problem", "gpu_memory") in dom.tables["ws-p100"]
    assert [row for row in dom.tables["ws-rtx4090"] if row[0] in ("problem", "fail")] == [("problem", "gpu_pcie")]
    # the server's acceptance failed on bf16 matmul: highlighted in its table
    assert ("fail", "acceptance-matmul_bf16") in dom.tables["srv-h200"]
    assert "tr.problem td" in dom.styles and "tr.fail td" in dom.styles


def test_screenshot_for_a_person_to_look_at(page):
    shot = ROOT / "build" / "fitness-report.png"
    shot.parent.mkdir(exist_ok=True)
    if shot.exists():
        shot.unlink()
    run = chromium("--screenshot=%s" % shot, "--window-size=1280,2200", "--hide-scrollbars", page.as_uri())
    assert run.returncode == 0, run.stderr[-2000:]
    assert shot.stat().st_size > 20000          # a rendered page, not an empty frame
