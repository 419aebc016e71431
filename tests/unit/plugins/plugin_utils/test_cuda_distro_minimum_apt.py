# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cuda role's package floors of the archive toolkit (Ubuntu 26.04: cuda-crt-13-1 from resolute-updates for glibc
2.43; issue 53 red team LOW 7: named in the plan, never enforced) against this machine's REAL `apt-cache policy` on
FIXTURE archives (tests/aptrepo/specs/ubuntu-resolute-cuda-crt.yml without the pocket, ...-updates-... with it), and
the role's wiring (roles/cuda/tasks/install_distro.yml: asked and refused before the install)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
import yaml

from ansible_collections.dlbox.stack.plugins.plugin_utils import cuda_plan
from ansible_collections.dlbox.stack.plugins.plugin_utils.compat_data import load_compat

ROOT = Path(__file__).resolve().parents[4]
sys.path.insert(0, str(ROOT / "tests" / "aptrepo"))
import apt_root  # noqa: E402  pylint: disable=wrong-import-position,import-error

MINIMUM = load_compat()["os"]["distros"]["ubuntu-26.04"]["distro_cuda_minimum"]
needs_apt = pytest.mark.skipif(not (shutil.which("apt-get") and shutil.which("dpkg-deb")), reason="needs apt and dpkg-deb")


def _policy(tmp_path, spec, installed=None):
    opts = apt_root.make_root(str(tmp_path), spec, installed=installed)[0]
    return {m["package"]: apt_root.run(opts, "apt-cache", "policy", m["package"]).stdout for m in MINIMUM}


def test_the_data_names_cuda_crt_from_resolute_updates():
    assert [(m["package"], m["version"], m["suite"]) for m in MINIMUM] == [
        ("cuda-crt-13-1", "13.1.115-0ubuntu1.1", "resolute-updates")]


@needs_apt
def test_without_the_pocket_the_install_is_refused_naming_it(tmp_path):
    problems = cuda_plan.distro_minimum_problems(MINIMUM, _policy(tmp_path, "ubuntu-resolute-cuda-crt.yml"), "ubuntu-26.04")
    assert len(problems) == 1
    assert ("ubuntu-26.04 needs cuda-crt-13-1 13.1.115-0ubuntu1.1 or newer from resolute-updates, and apt would give "
            "13.1.115-0ubuntu1") in problems[0]
    assert "Enable resolute-updates" in problems[0] and "cuda_method: nvidia_repo" in problems[0]
    assert problems[0].endswith("Nothing was changed.")


@needs_apt
def test_with_the_pocket_or_the_fix_installed_nothing_is_refused(tmp_path):
    assert cuda_plan.distro_minimum_problems(MINIMUM, _policy(tmp_path / "a", "ubuntu-resolute-updates-cuda-crt.yml")) == []
    # installed already at the fix, the list without the pocket: fine (apt keeps the installed one)
    installed = _policy(tmp_path / "b", "ubuntu-resolute-updates-cuda-crt.yml", {"cuda-crt-13-1": "13.1.115-0ubuntu1.1"})
    assert "Installed: 13.1.115-0ubuntu1.1" in installed["cuda-crt-13-1"]
    assert cuda_plan.distro_minimum_problems(MINIMUM, installed) == []


def test_a_package_apt_does_not_know_is_refused():
    problems = cuda_plan.distro_minimum_problems(MINIMUM, {"cuda-crt-13-1": ""}, "ubuntu-26.04")
    assert len(problems) == 1 and "apt knows no version of it" in problems[0]
    assert cuda_plan.distro_minimum_problems([], {}) == []


def test_the_role_asks_apt_and_refuses_before_the_install():
    tasks = yaml.safe_load((ROOT / "roles" / "cuda" / "tasks" / "install_distro.yml").read_text(encoding="utf-8"))
    names = [t["name"] for t in tasks]
    ask = names.index("Ask apt what it would give for the toolkit's package floors")
    refuse = names.index("Refuse a toolkit that apt would install without its fix")
    install = next(i for i, n in enumerate(names) if n.startswith("Install "))
    assert ask < refuse < install
    assert tasks[ask]["ansible.builtin.command"]["argv"] == ["apt-cache", "policy", "{{ item.package }}"]
    floor = tasks[refuse]["vars"]["__cuda_distro_floor_problems"]
    assert "'cuda' | dlbox.stack.role_module('distro_minimum'," in floor and "minimum=__cuda_decided.distro.minimum" in floor


def test_versions_compare_in_dpkgs_order_not_as_text():
    """A pre-release (~) sorts before the release in dpkg's order, after it as text; an epoch wins over everything."""
    def policy(candidate):
        return {"cuda-crt-13-1": "cuda-crt-13-1:\n  Installed: (none)\n  Candidate: %s\n  Version table:\n" % candidate}
    assert cuda_plan.distro_minimum_problems(MINIMUM, policy("13.1.115~rc1-0ubuntu2"))
    assert cuda_plan.distro_minimum_problems(MINIMUM, policy("1:13.1.100-0ubuntu1")) == []
    assert cuda_plan.distro_minimum_problems(MINIMUM, policy("13.1.115-0ubuntu1.10")) == []
