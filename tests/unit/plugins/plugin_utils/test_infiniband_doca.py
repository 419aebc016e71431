# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""DOCA-OFED's optional install (infiniband_doca_*) checked on a frozen data/server.yml: off by default, the
repository URL and the key's fingerprint required when on, each problem naming its variable."""

from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.dlbox.stack.plugins.filter.infiniband import infiniband_doca
from ansible_collections.dlbox.stack.plugins.plugin_utils import gpu_settings as gs
from ansible_collections.dlbox.stack.plugins.plugin_utils import infiniband as ib

DATA = gs.load_data(Path(__file__).resolve().parents[3] / "unit" / "data" / "server-frozen.yml")
URL = "https://linux.mellanox.com/public/repo/doca/3.1.0/ubuntu24.04/x86_64"
FPR = "0123 4567 89ab CDEF 0123  4567 89AB CDEF 0123 4567"


def _plan(**kwargs):
    args = {"install": True, "repo_url": URL, "fingerprint": FPR}
    args.update(kwargs)
    return ib.doca_install(DATA, **args)


def test_off_by_default_looks_at_nothing_else():
    result = ib.doca_install(DATA)
    assert result == {"install": False, "problems": [], "url": "", "key_url": "", "fingerprint": "", "packages": []}
    assert ib.doca_install(DATA, False, repo_url="not a url", fingerprint="x")["problems"] == []


def test_install_with_url_and_fingerprint():
    result = _plan()
    assert result["problems"] == [] and result["install"]
    assert result["url"] == URL + "/"
    assert result["fingerprint"] == "0123456789ABCDEF0123456789ABCDEF01234567"
    assert result["key_url"] == "https://linux.mellanox.com/public/repo/doca/GPG-KEY-Mellanox.pub"
    assert result["packages"] == ["doca-ofed"]


def test_given_key_url_and_packages_kept():
    result = _plan(key_url="http://127.0.0.1:8089/doca/gpgkey", packages=["doca-ofed-userspace"])
    assert result["problems"] == []
    assert (result["key_url"], result["packages"]) == ("http://127.0.0.1:8089/doca/gpgkey", ["doca-ofed-userspace"])


@pytest.mark.parametrize("kwargs, variable, words", [
    ({"repo_url": ""}, "infiniband_doca_repo_url", "is empty"),
    ({"repo_url": "linux.mellanox.com/public/repo/doca/3.1.0/ubuntu24.04/x86_64/"}, "infiniband_doca_repo_url",
     "must be an http"),
    ({"fingerprint": ""}, "infiniband_doca_key_fingerprint", "A024F6F0E6D6A281"),
    ({"fingerprint": "A024F6F0E6D6A281"}, "infiniband_doca_key_fingerprint", "40 hex digits"),
    ({"key_url": "ftp://example.org/key"}, "infiniband_doca_key_url", "must be an http"),
    ({"packages": ["doca ofed"]}, "infiniband_doca_packages", "list of DOCA package names"),
    ({"packages": "doca-ofed"}, "infiniband_doca_packages", "list of DOCA package names"),
    ({"install": "yes"}, "infiniband_doca_install", "true or false"),
])
def test_bad_input_refused_naming_the_variable(kwargs, variable, words):
    problems = _plan(**kwargs)["problems"]
    assert len(problems) == 1, problems
    assert problems[0].startswith(variable) and words in problems[0]


def test_missing_url_says_the_layout_for_the_hosts_arch():
    problem = _plan(repo_url="", arch="aarch64")["problems"][0]
    assert "https://linux.mellanox.com/public/repo/doca/<version>/<distro>/arm64-sbsa/" in problem


def test_repository_of_another_architecture_refused():
    problems = _plan(repo_url=URL.replace("x86_64", "arm64-sbsa"))["problems"]
    assert len(problems) == 1 and "for arm64-sbsa, and this host is x86_64" in problems[0]
    assert _plan(repo_url=URL.replace("x86_64", "arm64-sbsa"), arch="aarch64")["problems"] == []


def test_a_mirror_outside_nvidias_layout_is_taken():
    assert _plan(repo_url="http://127.0.0.1:8089/doca/")["problems"] == []


def test_architecture_without_doca_refused():
    problems = _plan(arch="ppc64le")["problems"]
    assert any("not ppc64le" in p for p in problems)


def test_filter_reads_the_live_data():
    result = infiniband_doca(True, repo_url=URL, fingerprint=FPR)
    assert result["problems"] == [] and result["packages"] == DATA["infiniband"]["doca"]["packages"]
    assert infiniband_doca(False)["install"] is False


def test_unknown_architecture_is_not_checked():
    assert _plan(repo_url=URL.replace("x86_64", "arm64-sbsa"), arch="")["problems"] == []
    assert "/<version>/<distro>/<arch>/" in _plan(repo_url="", arch="")["problems"][0]
