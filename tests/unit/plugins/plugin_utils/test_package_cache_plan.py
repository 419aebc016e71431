# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The package_cache role's decisions (plugins/plugin_utils/package_cache_plan.py)."""

from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.dlbox.stack.plugins.filter.package_cache import package_cache_plan
from ansible_collections.dlbox.stack.plugins.filter.role_module import role_module
from ansible_collections.dlbox.stack.plugins.plugin_utils import package_cache_plan as pc

# the keyword names of the package_cache module's client_apt entry, in the order of the old filter's arguments
CLIENT_APT = ("cache_host", "inventory_hostname", "fqdn", "mode", "apt_port", "client_direct", "pypi_port")


def options(**extra):
    base = {"cache_host": "cache1.lab", "inventory_hostname": "gpu01", "fqdn": "gpu01.lab", "mode": "auto",
            "apt_port": 3142, "pypi_port": 3141, "bind_address": "0.0.0.0", "upstream_proxy": "",
            "apt_upstream_proxy": "", "apt_backends": {}, "apt_remaps": [],
            "pypi_upstream": "https://pypi.org/simple/", "pypi_packages": ["proxpi==1.3.1", "gunicorn==23.0.0"],
            "venv": "/opt/dlbox-proxpi", "pypi_cache_size_gb": 50, "pypi_index_ttl": 1800, "pypi_log_level": "INFO",
            "client_direct": ["localhost", "127.0.0.1"]}
    base.update(extra)
    return base


@pytest.mark.parametrize("extra, mode", [
    ({}, "client"),
    ({"inventory_hostname": "cache1.lab"}, "server"),
    ({"fqdn": "cache1.lab"}, "server"),
    ({"cache_host": ""}, "none"),
    ({"mode": "none"}, "none"),
    ({"mode": "server"}, "server"),
    ({"inventory_hostname": "cache1.lab", "mode": "client"}, "client"),
])
def test_the_part_this_host_plays(extra, mode):
    got = pc.decide(options(**extra))
    assert got["ok"] and got["mode"] == mode
    assert (got["server"] is not None) == (mode == "server")
    assert (got["client"] is not None) == (mode == "client")


def test_a_client_points_apt_and_pip_at_the_cache_host():
    client = pc.decide(options())["client"]
    assert client["apt"] == {"proxy": "http://cache1.lab:3142", "direct": ["localhost", "127.0.0.1"]}
    assert client["pip_index_url"] == "http://cache1.lab:3141/index/"
    assert client["pip_trusted_host"] == "cache1.lab"


def test_an_ipv6_cache_host_is_trusted_without_brackets():
    client = pc.decide(options(cache_host="[fd00::5]"))["client"]
    assert client["pip_index_url"] == "http://[fd00::5]:3141/index/" and client["pip_trusted_host"] == "fd00::5"


def test_the_server_configures_apt_cacher_ng_with_remaps_and_proxy():
    got = pc.decide(options(inventory_hostname="cache1.lab", upstream_proxy="http://proxy.lab:3128",
                            apt_remaps=[{"name": "nvidia-cuda",
                                         "url": "https://developer.download.nvidia.com/compute/cuda/repos/"}],
                            apt_backends={"debian": ["http://deb.debian.org/debian/"]}))
    lines = got["server"]["acng_conf"].splitlines()
    assert "Port: 3142" in lines and "Proxy: http://proxy.lab:3128" in lines and "VerboseLog: 1" in lines
    # concurrent requests for one InRelease share one download (no "Failure to move file ... File exists")
    assert "ResponseFreezeDetectTime: 2147483647" in lines
    assert "Remap-dlboxnvidiacuda: /nvidia-cuda ; https://developer.download.nvidia.com/compute/cuda/repos/" in lines
    assert got["server"]["backends"] == {"debian": "http://deb.debian.org/debian/\n"}
    # the client's base URL for that vendor repository: plain HTTP on the cache, no proxy needed
    assert got["mirrors"] == {"nvidia-cuda": "http://cache1.lab:3142/nvidia-cuda/"}
    assert 'Environment="HTTPS_PROXY=http://proxy.lab:3128"' in got["server"]["unit"]


def test_an_apt_upstream_proxy_wins_for_apt_cacher_ng_only():
    got = pc.decide(options(inventory_hostname="cache1.lab", upstream_proxy="http://proxy.lab:3128",
                            apt_upstream_proxy="http://acng.region:3142"))
    assert "Proxy: http://acng.region:3142" in got["server"]["acng_conf"].splitlines()
    assert "PipelineDepth: 1" in got["server"]["acng_conf"].splitlines()
    assert "HTTPS_PROXY=http://proxy.lab:3128" in got["server"]["unit"]


def test_without_an_upstream_proxy_apt_cacher_ng_fetches_directly_and_pipelines():
    conf = pc.decide(options(inventory_hostname="cache1.lab"))["server"]["acng_conf"]
    assert "Proxy:" not in conf and "PipelineDepth" not in conf


def test_the_proxpi_unit_runs_the_venv_gunicorn_with_the_index():
    unit = pc.decide(options(inventory_hostname="cache1.lab", pypi_port=4000, pypi_cache_size_gb=2))["server"]["unit"]
    assert "ExecStart=/opt/dlbox-proxpi/bin/gunicorn " in unit and "--bind 0.0.0.0:4000 " in unit
    assert 'Environment="PROXPI_INDEX_URL=https://pypi.org/simple/"' in unit
    assert 'Environment="PROXPI_CACHE_SIZE=2000000000"' in unit
    assert "DynamicUser=yes" in unit and "HTTPS_PROXY" not in unit
    # systemd expands %x specifiers: gunicorn's access-log format has every % doubled
    assert "%%(h)s" in unit and "%(h)s" not in unit.replace("%%(", "")


@pytest.mark.parametrize("extra, variable", [
    ({"cache_host": "http://cache1.lab"}, "package_cache_host"),
    ({"cache_host": 5}, "package_cache_host"),
    ({"mode": "sometimes"}, "package_cache_mode"),
    ({"mode": "client", "cache_host": ""}, "package_cache_mode client needs package_cache_host"),
    ({"apt_port": 0}, "package_cache_apt_port"),
    ({"pypi_port": "3141"}, "package_cache_pypi_port"),
    ({"pypi_port": 3142}, "package_cache_apt_port and package_cache_pypi_port must differ"),
    ({"bind_address": "all"}, "package_cache_bind_address"),
    ({"upstream_proxy": "proxy.lab:3128"}, "package_cache_upstream_proxy"),
    ({"apt_upstream_proxy": "https://x:1"}, "package_cache_apt_upstream_proxy"),
    ({"upstream_proxy": "http://cache1.lab:3142"}, "package_cache_upstream_proxy points at the cache itself"),
    ({"pypi_upstream": "http://cache1.lab:3141/index/"}, "package_cache_pypi_upstream points at the cache itself"),
    ({"pypi_upstream": "https://pypi.org/simple"}, "package_cache_pypi_upstream"),
    ({"pypi_cache_size_gb": 0}, "package_cache_pypi_cache_size_gb"),
    ({"pypi_index_ttl": -1}, "package_cache_pypi_index_ttl"),
    ({"pypi_log_level": "debug"}, "package_cache_pypi_log_level"),
    ({"pypi_packages": []}, "package_cache_pypi_packages"),
    ({"pypi_packages": ["proxpi; rm -rf /"]}, "package_cache_pypi_packages"),
    ({"apt_backends": {"debian": "http://deb.debian.org/debian/"}}, "package_cache_apt_backends"),
    ({"apt_backends": {"debian": ["http://deb.debian.org/debian"]}}, "package_cache_apt_backends"),
    ({"apt_remaps": {"name": "x"}}, "package_cache_apt_remaps"),
    ({"apt_remaps": [{"name": "Nvidia", "url": "https://x/"}]}, "package_cache_apt_remaps[0]"),
    ({"apt_remaps": [{"name": "a", "url": "https://x"}]}, "package_cache_apt_remaps[0]"),
    ({"apt_remaps": [{"name": "a", "url": "https://x/"}, {"name": "a", "url": "https://y/"}]}, "given twice"),
    ({"client_direct": "localhost"}, "package_cache_client_direct"),
])
def test_bad_input_is_refused_naming_the_variable(extra, variable):
    got = pc.decide(options(**extra))
    assert not got["ok"] and got["mode"] is None
    assert any(variable in error for error in got["errors"]), got["errors"]


def test_every_refusal_is_listed_at_once():
    got = pc.decide(options(apt_port=0, pypi_log_level="x", client_direct=None))
    assert len(got["errors"]) == 3


def test_the_filter_refuses_a_non_mapping():
    with pytest.raises(AnsibleFilterError, match="mapping"):
        package_cache_plan(["cache1.lab"])


def test_the_filter_returns_the_decision():
    assert package_cache_plan(options())["mode"] == "client"


NO_CLIENT = {"proxy": "", "direct": [], "pip_index_url": "", "pip_trusted_host": ""}


@pytest.mark.parametrize("args, want", [
    (("cache1.lab", "ws1"), {"proxy": "http://cache1.lab:3142", "direct": ["localhost", "127.0.0.1"],
                             "pip_index_url": "http://cache1.lab:3141/index/", "pip_trusted_host": "cache1.lab"}),
    (("cache1.lab", "cache1.lab"), NO_CLIENT),                                   # the cache host itself
    (("cache1.lab", "ws1", "cache1.lab"), NO_CLIENT),                            # ... by its FQDN
    (("", "ws1"), NO_CLIENT),                                                    # no cache named
    (("cache1.lab", "ws1", "", "none"), NO_CLIENT),
    (("10.0.0.5", "ws1", "", "auto", 8080, ["10.0.0.7"], 8081),
     {"proxy": "http://10.0.0.5:8080", "direct": ["10.0.0.7"], "pip_index_url": "http://10.0.0.5:8081/index/",
      "pip_trusted_host": "10.0.0.5"}),
    (("[fd00::5]", "ws1"), {"proxy": "http://[fd00::5]:3142", "direct": ["localhost", "127.0.0.1"],
                            "pip_index_url": "http://[fd00::5]:3141/index/", "pip_trusted_host": "fd00::5"}),
])
def test_the_common_role_takes_the_clients_apt_proxy_and_pip_index(args, want):
    assert pc.client_apt(*args) == want


@pytest.mark.parametrize("args, words", [
    (("cache 1", "ws1"), "dlbox_package_cache_host"),
    (("cache1.lab", "ws1", "", "sometimes"), "package_cache_mode"),
    (("cache1.lab", "ws1", "", "auto", 0), "package_cache_apt_port"),
    (("cache1.lab", "ws1", "", "auto", 3142, "localhost"), "package_cache_client_direct"),
    (("cache1.lab", "ws1", "", "auto", 3142, ["localhost"], 3142), "must differ"),
    (("cache1.lab", "ws1", "", "auto", 3142, ["localhost"], 0), "package_cache_pypi_port"),
])
def test_the_clients_part_refuses_what_the_role_refuses(args, words):
    with pytest.raises(AnsibleFilterError, match=words):
        role_module("package_cache", "client_apt", **dict(zip(CLIENT_APT, args)))
