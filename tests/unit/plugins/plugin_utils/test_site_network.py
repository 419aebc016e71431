"""The site network variables' checks (plugins/plugin_utils/site_network.py, filter site_network_problems)."""

from __future__ import annotations

import pytest

from ansible_collections.dlbox.stack.plugins.filter.common import site_network_problems
from ansible_collections.dlbox.stack.plugins.plugin_utils import site_network


def test_undefined_and_empty_are_fine():
    assert site_network.problems(None, None) == []
    assert site_network.problems({}, {}) == []
    assert site_network.problems({"http": "", "https": "", "no_proxy": "", "apt": ""},
                                 dict.fromkeys(site_network.MIRROR_KEYS, "")) == []


def test_a_full_site_is_fine():
    proxy = {"http": "http://proxy.lab.example:3128", "https": "http://user:pw@proxy.lab.example:3128/",
             "no_proxy": "localhost, 127.0.0.1,::1,.lab.example,10.0.0.0/8,*.corp", "apt": "http://cache:3142"}
    mirrors = {"cuda": "https://mirror.lab/nvidia/cuda/repos", "container_toolkit": "file:///srv/mirror/nct",
               "jetson": "http://cache:3142/HTTPS///repo.download.nvidia.com/jetson",
               "docker": "https://mirror.lab/docker", "pytorch_index": "https://mirror.lab/pytorch/whl",
               "pypi": "http://cache:3141/index/"}
    assert site_network_problems(proxy, mirrors) == []


@pytest.mark.parametrize("key, value", [
    ("http", "proxy.lab:3128"),            # no scheme
    ("https", "socks5://proxy.lab:1080"),  # not an http(s) proxy
    ("apt", "http://cache:3142/some/path"),
    ("http", "http://proxy lab:3128"),
    ("https", 3128),
])
def test_a_bad_proxy_url_names_the_key(key, value):
    out = site_network.problems({key: value}, None)
    assert len(out) == 1
    assert out[0].startswith("dlbox_site_proxy.%s must be empty or a proxy URL such as http://" % key)
    assert repr(value) in out[0]


@pytest.mark.parametrize("value", ["http://localhost", "a, b c", ["localhost"]])
def test_a_bad_no_proxy_is_refused(value):
    out = site_network.problems({"no_proxy": value}, None)
    assert len(out) == 1 and out[0].startswith("dlbox_site_proxy.no_proxy must be comma-separated")


@pytest.mark.parametrize("key", sorted(site_network.MIRROR_KEYS))
def test_a_bad_mirror_names_the_key_and_what_it_replaces(key):
    out = site_network.problems(None, {key: "mirror.lab/path"})
    assert out == ["dlbox_site_mirrors.%s must be empty or an http://, https:// or file:/// URL that stands in for %s;"
                   " got 'mirror.lab/path'." % (key, site_network.site_roots()[key])]


def test_unknown_keys_and_wrong_types_are_named():
    assert site_network.problems({"ftp": "x"}, None) == [
        "dlbox_site_proxy has unknown keys ftp; the keys are http, https, no_proxy, apt."]
    assert site_network.problems(None, {"pytorch": "https://x"})[0].startswith(
        "dlbox_site_mirrors has unknown keys pytorch; the keys are cuda, container_toolkit, jetson, docker,")
    assert site_network.problems("http://proxy:3128", None) == [
        "dlbox_site_proxy must be a mapping with keys http, https, no_proxy, apt; got str."]
