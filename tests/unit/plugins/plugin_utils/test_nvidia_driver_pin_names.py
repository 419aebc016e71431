# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One place per fact (issues 47 and 48): the package names NVIDIA ships without a branch number, which the branch pin
(plugin_utils.nvidia_driver_plan.branch_pin) names exactly, live in data/compat.yml (driver_package_names.branchless and
.nvidia_repo_branchless, each with its source), and the pin reads them from there.

- the modules that build the pin hold none of those names in a string literal (docstrings and comments may name them);
- no string literal, and no list, tuple or set of literals, of any plugin holds several of them (a re-typed copy);
- the pin names what the data names (an added name shows up in it) and the collection's data by default;
- the schema refuses the entries without a source or grade.
"""

from __future__ import annotations

import ast
import copy
import re
import subprocess
from pathlib import Path

import pytest

from ansible_collections.dlbox.stack.plugins.plugin_utils import compat_data
from py_literals import prose_ids  # pylint: disable=import-error
from ansible_collections.dlbox.stack.plugins.plugin_utils import nvidia_driver_kernel as nk
from ansible_collections.dlbox.stack.plugins.plugin_utils import nvidia_driver_plan as p

ROOT = Path(__file__).resolve().parents[4]
FAMILY = ["*nvidia*", "libcuda*", "libnvcuvid*", "libnvoptix*", "libnvidia*", "cuda-drivers*"]
PIN_MODULES = ("plugins/plugin_utils/nvidia_driver_plan.py", "plugins/plugin_utils/nvidia_driver_kernel.py")
# a literal (or a literal sequence) naming this many of the names is a copy of the list
COPY_AT = 4
COPY_ALLOWED = {
    "plugins/plugin_utils/workstation_summary.py": "a regular expression that recognises the installed fabric packages "
                                                   "(Fabric Manager, NSCQ, libnvsdm, IMEX) to report them, not the pin's list",
}
TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9.+-]*")


def _names(data=None):
    names = (data or compat_data.load_compat())["driver_package_names"]
    return set(names["branchless"]["names"]) | set(names["nvidia_repo_branchless"]["names"])


def _code_literals(text):
    """(line, [strings]) of every string literal outside docstrings, and of every list/tuple/set of string literals."""
    tree = ast.parse(text)
    docs = prose_ids(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            yield node.lineno, [node.value]
        elif isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            strings = [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
            if len(strings) > 1:
                yield node.lineno, strings


def names_in_pin_modules(root=ROOT, names=None):
    names = names if names is not None else _names()
    found = []
    for rel in PIN_MODULES:
        for line, strings in _code_literals((root / rel).read_text(encoding="utf-8")):
            hit = sorted(set(TOKEN.findall(" ".join(strings))) & names)
            if hit:
                found.append("%s:%d: %s" % (rel, line, ", ".join(hit)))
    return found


def copies_in_plugins(root=ROOT, names=None):
    names = names if names is not None else _names()
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "plugins"], cwd=root,
                         capture_output=True, check=True).stdout.decode()
    found = []
    for rel in sorted(r for r in out.split("\0") if r.endswith(".py") and r not in COPY_ALLOWED):
        path = root / rel
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8")
        if sum(1 for name in names if name in text) < COPY_AT:  # no copy possible: not worth parsing
            continue
        for line, strings in _code_literals(text):
            hit = sorted(set(TOKEN.findall(" ".join(strings))) & names)
            if len(hit) >= COPY_AT:
                found.append("%s:%d: %s" % (rel, line, ", ".join(hit)))
    return found


def test_the_pin_modules_type_none_of_the_names():
    assert names_in_pin_modules() == []


def test_no_plugin_holds_a_copy_of_the_names():
    assert copies_in_plugins() == []


def test_a_retyped_name_is_found(tmp_path):
    # the deliberate break: nvidia_driver_plan.py with one of the data's names typed back in, as the list once was
    for rel in PIN_MODULES:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text((ROOT / rel).read_text(encoding="utf-8"), encoding="utf-8")
    plan = tmp_path / PIN_MODULES[0]
    plan.write_text(plan.read_text(encoding="utf-8") + '\n_EXTRA = " ".join(("nvidia-dkms-open", "libnvidia-gl"))\n',
                    encoding="utf-8")
    found = names_in_pin_modules(tmp_path)
    last = len(plan.read_text(encoding="utf-8").splitlines())
    assert "plugins/plugin_utils/nvidia_driver_plan.py:%d: libnvidia-gl, nvidia-dkms-open" % last in found, found


def test_the_pin_names_what_the_data_names():
    data = copy.deepcopy(compat_data.load_compat()["driver_package_names"])
    data["branchless"]["names"].append("nvidia-test-branchless")
    data["nvidia_repo_branchless"]["names"].append("nvidia-test-590")
    repo = p.branch_pin(595, FAMILY, "t", "NVIDIA", data)
    distro = p.branch_pin(580, FAMILY, "t", "Ubuntu", data)
    assert "nvidia-test-590 nvidia-fabricmanager" in repo and "nvidia-test-branchless" in repo
    assert "nvidia-test-branchless" in distro and "nvidia-test-590" not in distro
    data["nvidia_repo_branchless"]["branch_min"] = 600
    assert "nvidia-test-590" not in p.branch_pin(595, FAMILY, "t", "NVIDIA", data)


def _marked(path=None):
    """The data with one made-up name added to each list."""
    data = copy.deepcopy(compat_data.load_compat(path))
    data["driver_package_names"]["branchless"]["names"].append("nvidia-test-branchless")
    data["driver_package_names"]["nvidia_repo_branchless"]["names"].append("nvidia-test-590")
    return data


def test_decide_pins_the_names_of_its_data():
    # NVIDIA's repository, a branch change 580 -> 595 (as test_nvidia_driver_plan's), on the frozen data with the marks
    data = _marked(ROOT / "tests" / "unit" / "data" / "compat-frozen.yml")
    options = dict(method="nvidia_repo", branch="595", kernel_modules="", profile="server", other_branch="refuse",
                   change_branch=True, keep_dir="/var/backups/dlbox-nvidia-driver", in_container="skip", build_kernels=[],
                   kernel_flavour="", secure_boot="auto", secure_boot_signing="auto", mok_key="", mok_certificate="",
                   shim_mok_dir="/var/lib/shim-signed/mok", pin_name="dlbox-00-nvidia-driver-branch.pref", hostname="gpu1",
                   distribution="Debian", distribution_version="12", kernel="6.1.0-57-amd64", check_mode=False, request_text="{}")
    family = data["driver_package_names"]["family"]
    plan = {"ok": True, "errors": [], "host": {"nvswitch": False},
            "stack": {"driver": {"branch": 595, "kernel_modules": "open", "method": "nvidia_repo",
                                 "packages": ["nvidia-open-595", "nvidia-driver-pinning-595"],
                                 "repo": {"kernel_package": "nvidia-kernel-open-dkms", "same_version": ["nvidia-driver-cuda"],
                                          "dkms_module": "nvidia", "lock": None},
                                 "family": family, "min_version": "595.0", "version_available": "595.95.05"},
                      "fabric_manager": None}}
    installed = [{"name": n, "version": "580.95.05-1", "arch": "amd64"} for n in ("nvidia-open", "nvidia-driver-cuda")]
    out = p.decide(data, options, plan, facts={"installed": installed})
    assert out["ok"], out["errors"]
    assert "nvidia-test-590 nvidia-fabricmanager" in out["pin"] and "nvidia-test-branchless" in out["pin"]
    assert out["rollback_pin"] == p.branch_pin(580, family, "nvidia_driver_method: nvidia_repo", "NVIDIA",
                                               data["driver_package_names"])


def test_the_signed_module_pin_names_the_data_it_is_given():
    names = _marked()["driver_package_names"]
    out = {"set": {"packages": ["nvidia-driver-580"], "signing": "precompiled"}, "pin": None, "driver": {"branch": 580},
           "family": FAMILY, "origins": {"ubuntu": "Ubuntu"}}
    assert "nvidia-test-branchless" in nk.finish(out, names)["pin"]


def test_the_collection_data_by_default():
    data = compat_data.load_compat()["driver_package_names"]
    assert p.pin_names() == p.pin_names(data)
    assert p.branch_pin(590, FAMILY, "t", "NVIDIA") == p.branch_pin(590, FAMILY, "t", "NVIDIA", data)
    got = p.pin_names()
    assert got["branch_min"] == data["nvidia_repo_branchless"]["branch_min"]
    assert got["nvidia_repo"].split() == data["nvidia_repo_branchless"]["names"] + data["branchless"]["names"]
    assert "nvidia-dkms-open" in got["nvidia_repo"].split() and "nvidia-fabricmanager" in got["branchless"].split()


def test_data_without_the_names_is_refused():
    with pytest.raises(ValueError, match="branchless"):
        p.pin_names({"origins": {}})


@pytest.mark.parametrize("entry", ["branchless", "nvidia_repo_branchless"])
@pytest.mark.parametrize("key", ["source", "grade", "names"])
def test_each_entry_must_carry_its_source(entry, key):
    data = copy.deepcopy(compat_data.load_compat())
    assert compat_data.shape_problems(data) == []
    del data["driver_package_names"][entry][key]
    assert compat_data.shape_problems(data) == ["driver_package_names.%s: key '%s' is missing" % (entry, key)]


def test_the_entries_are_required():
    data = copy.deepcopy(compat_data.load_compat())
    del data["driver_package_names"]["branchless"]
    assert compat_data.shape_problems(data) == ["driver_package_names: key 'branchless' is missing"]
