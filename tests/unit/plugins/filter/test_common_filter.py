"""Filter common_ini_option (plugins/filter/common.py, plugins/plugin_utils/ini_text.py): pip.conf edits."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.dlbox.stack.plugins.filter.common import FilterModule, common_ini_option


def test_registered():
    assert set(FilterModule().filters()) == {"common_ini_option", "site_network_problems", "apt_lists_fresh"}


def test_a_new_file_gets_the_section():
    assert common_ini_option("", "global", "cert", "/etc/ssl/certs/ca-certificates.crt") == (
        "[global]\ncert = /etc/ssl/certs/ca-certificates.crt\n")


def test_an_option_is_added_to_the_section_and_other_keys_stay():
    text = "# pip\n[global]\ntimeout = 60\n\n[install]\nuser = false\n"
    out = common_ini_option(text, "global", "proxy", "http://127.0.0.1:3128")
    assert out == "# pip\n[global]\ntimeout = 60\nproxy = http://127.0.0.1:3128\n\n[install]\nuser = false\n"
    assert common_ini_option(out, "global", "proxy", "http://127.0.0.1:3128") == out  # idempotent


def test_an_option_is_replaced_in_its_section_only():
    text = "[install]\nproxy=other\n[global]\nproxy=http://old:3129\n"
    out = common_ini_option(text, "global", "proxy", "http://new:3128")
    assert out == "[install]\nproxy=other\n[global]\nproxy = http://new:3128\n"


def test_a_missing_section_is_appended():
    assert common_ini_option("[install]\nuser = false\n", "global", "cert", "/x") == "[install]\nuser = false\n\n[global]\ncert = /x\n"


def test_absent_removes_only_the_given_value():
    text = "[global]\ntimeout = 60\nproxy = http://old:3129\n"
    assert common_ini_option(text, "global", "proxy", "http://old:3129", "absent") == "[global]\ntimeout = 60\n"
    assert common_ini_option(text, "global", "proxy", "http://other:1", "absent") == text
    assert common_ini_option("", "global", "proxy", "x", "absent") == ""
    assert common_ini_option("[global]\n# proxy = x\n", "global", "proxy", "x", "absent") == "[global]\n# proxy = x\n"


@pytest.mark.parametrize("args", [(["x"], "global", "cert", "v"), ("", "global", "cert", None), ("", "global", "cert", "v", "gone")])
def test_bad_calls_are_refused(args):
    with pytest.raises(AnsibleFilterError):
        common_ini_option(*args)
