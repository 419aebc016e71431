# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Docker's package names in one place (issue 47, rt47 L3): data/docker.yml ``packages`` (with its source) says what
each docker_source installs, its engine, what docker_ce_version pins and the other source's packages; the docker
module decides from it, and docker_ce_packages / docker_distribution_packages stay user variables whose defaults are
that data (defaults/main.yml and the argument spec: ``role_module('vendor').packages``)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ansible_collections.dlbox.stack.plugins.plugin_utils.roles import _vendor, docker

ROOT = Path(__file__).resolve().parents[4]
DATA = yaml.safe_load((ROOT / "data" / "docker.yml").read_text(encoding="utf-8"))
DEFAULTS = yaml.safe_load((ROOT / "roles" / "docker" / "defaults" / "main.yml").read_text(encoding="utf-8"))
GIVEN = {"docker_ce_repo_url": "https://download.docker.com/linux/debian",
         "docker_ce_repo_key_fingerprint": "0123456789ABCDEF0123456789ABCDEF01234567", "docker_http_proxy": "",
         "docker_https_proxy": "", "docker_no_proxy": "localhost", "docker_client_proxy_users": []}


def _decide(given=None, **facts):
    return docker.decide(None, docker.options(dict(GIVEN, **(given or {}))),
                         dict({"distribution_release": "bookworm", "packages": {}}, **facts))


def test_the_data_names_each_sources_packages_with_its_source():
    assert docker.packages_data() == DATA["packages"]
    assert DATA["packages"]["docker-ce"]["install"] == ["docker-ce", "docker-ce-cli", "containerd.io",
                                                        "docker-buildx-plugin", "docker-compose-plugin"]
    assert "docs.docker.com/engine/install" in DATA["packages"]["docker-ce"]["source"]


def test_the_variables_default_to_the_data():
    for name, source in (("docker_ce_packages", "docker-ce"), ("docker_distribution_packages", "distribution")):
        assert DEFAULTS[name] == "{{ ('docker' | dlbox.stack.role_module('vendor')).packages['%s'] }}" % source
        assert docker.options()[name] == DEFAULTS[name]       # the argument spec's default is the same
    assert docker.vendor()["packages"] == {"docker-ce": DATA["packages"]["docker-ce"]["install"],
                                           "distribution": DATA["packages"]["distribution"]["install"]}


@pytest.mark.parametrize("given, want", [
    ({}, ["docker-ce", "docker-ce-cli", "containerd.io", "docker-buildx-plugin", "docker-compose-plugin"]),
    ({"docker_ce_version": "5:28.0.4-1~debian.12~bookworm"},
     ["docker-ce=5:28.0.4-1~debian.12~bookworm", "docker-ce-cli=5:28.0.4-1~debian.12~bookworm", "containerd.io",
      "docker-buildx-plugin", "docker-compose-plugin"]),
    ({"docker_ce_packages": ["docker-ce", "docker-ce-rootless-extras"]}, ["docker-ce", "docker-ce-rootless-extras"]),
    ({"docker_source": "distribution"}, ["docker.io"]),
    ({"docker_source": "distribution", "docker_distribution_packages": ["docker.io", "docker-compose"]},
     ["docker.io", "docker-compose"]),
])
def test_the_decision_installs_the_data_or_the_inventorys_list(given, want):
    got = _decide(given)
    assert got["problems"] == [] and got["packages"] == want
    assert got["engine_package"] == DATA["packages"][got["source"]]["engine"]


def test_the_other_sources_packages_on_the_host_are_refused_by_the_data():
    got = _decide({"docker_source": "distribution"}, packages={"docker-ce-cli": [{"version": "5:28.0.4-1"}]})
    assert got["other_installed"] == ["docker-ce-cli"] and "docker_source: docker-ce" in got["problems"][0]
    assert _decide(packages={"docker.io": [{"version": "26.1.5"}]})["other_installed"] == ["docker.io"]


def test_a_data_file_without_a_source_or_a_docker_source_is_refused(tmp_path):
    broken = dict(DATA, packages={"docker-ce": DATA["packages"]["docker-ce"]})
    (tmp_path / "docker.yml").write_text(yaml.safe_dump(broken), encoding="utf-8")
    with pytest.raises(_vendor.VendorDataError, match="each docker_source"):
        docker.packages_data(tmp_path / "docker.yml")
    unsourced = dict(DATA, packages={k: dict(v, source="") for k, v in DATA["packages"].items()})
    (tmp_path / "docker.yml").write_text(yaml.safe_dump(unsourced), encoding="utf-8")
    with pytest.raises(_vendor.VendorDataError, match="source"):
        docker.packages_data(tmp_path / "docker.yml")
