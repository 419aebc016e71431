"""requirements.txt gives every supported OS's python3 an ansible-core whose controller supports it.

ansible-core's controller Python ranges, from its support matrix (docs.ansible.com, "Releases and maintenance",
ansible-core support matrix, read 2026-12-06): 2.19 runs on Python 3.11-3.13, 2.20 on 3.12-3.14. Ubuntu 26.04 ships
Python 3.14 only (data/compat.yml os ubuntu-26.04 pythons), so a single 2.19 pin left `make plan` there on a controller
ansible-core does not support (issue 53, red team HIGH 2). The quickstart test (tests/integration/test_quickstart.py,
machine ubuntu2604 in make test-heavy) checks that the venv really collected the marker's version there.
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
CONTROLLER_PYTHONS = {"2.19": ("3.11", "3.13"), "2.20": ("3.12", "3.14")}


def _core_for(python):
    for line in (ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines():
        if line.startswith("ansible-core"):
            req = Requirement(line)
            if req.marker is None or req.marker.evaluate({"python_version": python}):
                return Version(str(req.specifier).lstrip("="))
    return None


@functools.lru_cache(maxsize=None)   # data/compat.yml parsed once (collection and a test both ask); a tuple, not shared state
def _supported_pythons():
    data = yaml.safe_load((ROOT / "data" / "compat.yml").read_text(encoding="utf-8"))
    out = set()
    for name, facts in data["os"]["distros"].items():
        if facts.get("supported"):
            for python in facts.get("pythons") or [facts["python"]]:
                # tools/venv.sh needs 3.11 or newer; an older python3 (Ubuntu 22.04's 3.10) gets a newer one from apt
                if Version(python) >= Version("3.11"):
                    out.add((name, python))
    return tuple(sorted(out))


@pytest.mark.parametrize("name,python", _supported_pythons())
def test_each_supported_python_gets_an_ansible_core_whose_controller_supports_it(name, python):
    core = _core_for(python)
    assert core is not None, "requirements.txt gives Python %s (%s) no ansible-core" % (python, name)
    low, high = CONTROLLER_PYTHONS["%d.%d" % (core.major, core.minor)]
    assert Version(low) <= Version(python) <= Version(high), (
        "requirements.txt gives %s's Python %s ansible-core %s, whose controller runs on Python %s-%s" % (name, python, core, low, high))


def test_the_list_reaches_ubuntu_2604():
    assert ("ubuntu-26.04", "3.14") in _supported_pythons()
