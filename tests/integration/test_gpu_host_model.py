# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The FIXTURE GPU host fails the way hardware does (tests/fixtures/gpu_host/model-check.sh, in a bare test container of
each distribution, no Ansible): one test a behaviour, each named as the script names it. A model, NOT a GPU."""

from __future__ import annotations

import re
import subprocess

import pytest

from conftest import ROOT, docker_ready

SCRIPT = ROOT / "tests" / "fixtures" / "gpu_host" / "model-check.sh"
IMAGES = ["dlbox-test:ubuntu2404", "dlbox-test:debian12"]
BEHAVIOURS = [m.group(1) for m in re.finditer(r'^check "([^"]+)"', SCRIPT.read_text(encoding="utf-8"), re.M)]


@pytest.fixture(scope="module", params=IMAGES)
def checked(request):
    reason = docker_ready(request.param)
    if reason is not None:
        pytest.skip(f"{reason}; make test builds {request.param} with tests/images/build.sh")
    proc = subprocess.run(["docker", "run", "--rm", "-v", f"{ROOT / 'tests' / 'fixtures'}:/fx:ro", request.param,
                           "sh", "/fx/gpu_host/model-check.sh"], capture_output=True, text=True, timeout=300, check=False)
    return proc


def test_every_check_ran(checked):
    lines = checked.stdout.splitlines()
    assert len(lines) == len(BEHAVIOURS), checked.stdout + checked.stderr


@pytest.mark.parametrize("behaviour", BEHAVIOURS)
def test_the_model_behaves(checked, behaviour):
    lines = checked.stdout.splitlines()
    failed = [line for line in lines if line.startswith("FAIL %s: expected" % behaviour)]
    assert "ok   " + behaviour in lines, failed or checked.stdout + checked.stderr
