# -*- coding: utf-8 -*-
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The common role's proxy: what it sets and what it clears (rt47c M3), run by real Ansible.

roles/common/tasks/proxy.yml runs in every Molecule scenario; here it runs with real ansible-playbook (local host,
no Docker) on a fake root: the task files, taken as they are, with ``/etc/`` moved under a folder of the test, so
that apt's proxy files, /etc/environment and /etc/pip.conf are written by the real modules. Each case is a sequence
of runs on one root (a later run with a proxy cleared is what clears it), some starting from files of an earlier
version or of the user. After each run the test keeps every file of the root (text and mode) and what each task did
(changed, skipped, loop items, lineinfile's words).

RECORDED (tests/unit/data/common_proxy_before.json) is what the tasks of BEFORE did, the YAML that decided before
the move to ``common.proxy``; the tasks now must do exactly the same, and so must the tasks of BEFORE (from git) run
today, so the recording stays true. Then ``common.proxy`` itself is checked against the rules it took over.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ansible.errors import AnsibleFilterError

from ansible_collections.dlbox.stack.plugins.filter.role_module import role_module
from ansible_collections.dlbox.stack.plugins.plugin_utils import roles

ROOT = Path(__file__).resolve().parents[3]
COMMON = ROOT / "roles" / "common"
BEFORE = "0adad899307402146dda8c3cc8c97af1bc48b4d1"  # the last commit whose proxy.yml decided in YAML
RECORDED = ROOT / "tests" / "unit" / "data" / "common_proxy_before.json"
FILES = ("tasks/proxy.yml", "tasks/pip_conf.yml", "templates/apt-proxy.conf.j2")
# a task renamed by the move: its name before -> now
RENAMED = {"Work out which proxy settings were configured before":
           "Decide the proxy's settings from what an earlier run configured (common proxy)"}

NONE = {"common_http_proxy": "", "common_https_proxy": "", "common_no_proxy": "localhost,127.0.0.1,::1",
        "common_apt_proxy": "", "common_pip_index_url": "", "dlbox_package_cache_host": ""}
HTTP = "http://proxy.lab:3128"
HTTPS = "http://sproxy.lab:3129"
ACNG = "http://acng.lab:3142"
MIRROR = "https://pypi-mirror.lab/simple/"
# an apt proxy file of an earlier version: Acquire lines only, no "// http_proxy:" records
OLD_FORMAT = ('// Ansible managed\nAcquire::http::Proxy "http://old.lab:8080";\nAcquire::https::Proxy "http://olds.lab:8443";\n'
              'Acquire::http::Proxy::localhost "DIRECT";\n')
OLD_CACHE = 'Acquire::http::Proxy "http://cache0.lab:3142";\n'


def _run(**values):
    return dict(NONE, **values)


# label -> (files under the root before the first run, the runs' inputs)
CASES = {
    "no proxy": ({}, [_run()]),
    "http only, then cleared": ({}, [_run(common_http_proxy=HTTP), _run()]),
    "https only, then cleared": ({}, [_run(common_https_proxy=HTTPS), _run()]),
    "both with no_proxy and apt's own, then http only, then none": (
        {}, [_run(common_http_proxy=HTTP, common_https_proxy=HTTPS, common_no_proxy="localhost,.lab, 10.0.0.1,bad host",
                  common_apt_proxy=ACNG),
             _run(common_http_proxy=HTTP, common_no_proxy="localhost,.lab"),
             _run()]),
    "https then http: pip's proxy and the cleared one": (
        {}, [_run(common_https_proxy=HTTPS), _run(common_http_proxy=HTTP), _run()]),
    "apt proxy alone": ({}, [_run(common_apt_proxy=ACNG), _run()]),
    "package cache without an index": ({}, [_run(dlbox_package_cache_host="cache1.lab"), _run()]),
    "package cache with common_pip_index_url and a proxy": (
        {}, [_run(dlbox_package_cache_host="cache1.lab", common_pip_index_url=MIRROR, common_http_proxy=HTTP,
                  common_no_proxy="localhost,cache1.lab")]),
    "common_pip_index_url alone": ({}, [_run(common_pip_index_url=MIRROR)]),
    "files of an earlier version and of the user, cleared": (
        {"etc/apt/apt.conf.d/80dlbox-proxy": OLD_FORMAT, "etc/apt/apt.conf.d/90dlbox-package-cache": OLD_CACHE,
         "etc/environment": ('PATH="/usr/local/sbin:/usr/bin"\nhttp_proxy=http://old.lab:8080\nHTTP_PROXY=http://user.lab:1\n'
                             'https_proxy=http://olds.lab:8443\nno_proxy=localhost\n'),
         "etc/pip.conf": "[global]\nproxy = http://olds.lab:8443\ntimeout = 30\n"},
        [_run(), _run()]),
    "files of an earlier version, http set again": (
        {"etc/apt/apt.conf.d/80dlbox-proxy": OLD_FORMAT,
         "etc/environment": "http_proxy=http://user.lab:1\n",
         "etc/pip.conf": "[global]\nproxy = http://olds.lab:8443\n"},
        [_run(common_http_proxy=HTTP)]),
    "an empty apt proxy file": ({"etc/apt/apt.conf.d/80dlbox-proxy": ""}, [_run()]),
}

DUMP = ("cd \"$ROOTDIR\" && find . -type f | LC_ALL=C sort | while read -r f; do "
        "printf '== %s %s\\n' \"$f\" \"$(stat -c %a \"$f\")\"; cat \"$f\"; done")


def _copy_role(dest, root, texts):
    """The role's proxy files (``texts``: relative path -> text) under ``dest`` with /etc/ moved under ``root``."""
    for rel, text in texts.items():
        path = dest / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text.replace("/etc/", "%s/etc/" % root), encoding="utf-8")
        if rel.startswith("templates/"):  # where a play's imported task file finds its templates
            (dest / "tasks" / rel).parent.mkdir(parents=True, exist_ok=True)
            (dest / "tasks" / rel).write_text(text, encoding="utf-8")


def _texts(commit=None):
    if commit is None:
        return {rel: (COMMON / rel).read_text(encoding="utf-8") for rel in FILES}
    try:
        return {rel: subprocess.run(["git", "-C", str(ROOT), "show", "%s:roles/common/%s" % (commit, rel)],
                                    capture_output=True, text=True, check=True).stdout for rel in FILES}
    except (OSError, subprocess.CalledProcessError):
        return None


def _task_result(name, result, root):
    got = {"name": RENAMED.get(name, name), "changed": bool(result.get("changed")),
           "skipped": bool(result.get("skipped")), "failed": bool(result.get("failed"))}
    if "results" in result:
        got["items"] = [[str(r.get("item", {}).get("key") if isinstance(r.get("item"), dict) else r.get("item")),
                         bool(r.get("changed")), bool(r.get("skipped")), r.get("msg") if isinstance(r.get("msg"), str) else None]
                        for r in result["results"]]
    elif result.get("msg") and "lineinfile" in name.lower():
        got["msg"] = result["msg"]
    if result.get("failed"):
        got["msg"] = str(result.get("msg"))[:2000]
    return json.loads(json.dumps(got).replace(str(root), "<root>"))


def run_versions(tmp_path, versions):
    """{version: {case: [{"tasks": [...], "files": dump text} per run]}} for ``versions`` (name -> the three files'
    texts), all in one ansible-playbook run."""
    hostvars, names = {}, {}
    for vname, texts in versions.items():
        for index, (label, (files, runs)) in enumerate(CASES.items()):
            host = "%s%d" % (vname, index)
            root = tmp_path / host / "root"
            for rel, text in files.items():
                (root / rel).parent.mkdir(parents=True, exist_ok=True)
                (root / rel).write_text(text, encoding="utf-8")
            (root / "etc" / "apt" / "apt.conf.d").mkdir(parents=True, exist_ok=True)
            _copy_role(tmp_path / host / "common", root, texts)
            hostvars[host] = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                              "common_apt_timeout": 45, "common_apt_retries": 2, "__runs": runs, "__root": str(root),
                              "__proxy_tasks": str(tmp_path / host / "common" / "tasks" / "proxy.yml")}
            names[host] = (vname, label, root)
    # one play per run: every case's n-th run, each host through its own copy of the task files
    plays = [{"hosts": ":".join(h for h, v in hostvars.items() if len(v["__runs"]) > number) or "none",
              "gather_facts": False, "tasks": [
                  {"name": "run", "ansible.builtin.include_tasks": "{{ __proxy_tasks }}",
                   "vars": {key: "{{ __runs[%d].%s }}" % (number, key) for key in NONE}},
                  {"name": "dump the root", "ansible.builtin.shell": DUMP, "environment": {"ROOTDIR": "{{ __root }}"},
                   "changed_when": False}]}
             for number in range(max(len(runs) for _files, runs in CASES.values()))]
    proc, out = _run_plays(tmp_path, plays, hostvars)
    assert out is not None, proc.stderr[-3000:]
    got = {}
    for play in out["plays"]:
        done = {}
        for task in play["tasks"]:
            for host, result in task["hosts"].items():
                vname, label, root = names[host]
                if task["task"]["name"] == "run":
                    continue
                if task["task"]["name"] == "dump the root":
                    assert result.get("rc") == 0, (label, result.get("msg"))
                    got.setdefault(vname, {}).setdefault(label, []).append(
                        {"tasks": done.pop(host, []), "files": result["stdout"]})
                else:
                    done.setdefault(host, []).append(_task_result(task["task"]["name"], result, root))
        assert done == {}, [t for tasks in done.values() for t in tasks if t["failed"]][:2]  # a host stopped (a task failed)
    return got


def _run_plays(tmp_path, plays, hostvars):
    """play_runner.run_play's run with several plays in one playbook."""
    (tmp_path / "play.yml").write_text(yaml.safe_dump(plays), encoding="utf-8")
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump({"all": {"hosts": hostvars}}), encoding="utf-8")
    environ = dict(os.environ, ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json", ANSIBLE_NOCOLOR="1", ANSIBLE_FORKS="24",
                   ANSIBLE_HOME=str(tmp_path / "ansible-home"), ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-tmp"))
    argv = [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(tmp_path / "hosts.yml"),
            str(tmp_path / "play.yml")]
    proc = subprocess.run(argv, capture_output=True, text=True, env=environ, timeout=600, check=False)
    out = json.loads(proc.stdout[proc.stdout.index("{"):]) if "{" in proc.stdout else None
    return proc, out


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    versions = {"now": _texts()}
    before = _texts(BEFORE) if os.environ.get("DLBOX_PROXY_BEFORE") == "1" or os.environ.get("DLBOX_RECORD_PROXY") == "1" \
        else None
    if before is not None:
        versions["before"] = before
    return run_versions(tmp_path_factory.mktemp("proxy"), versions)


def _recorded():
    return json.loads(RECORDED.read_text(encoding="utf-8"))


@pytest.mark.parametrize("label", list(CASES))
def test_the_tasks_now_do_what_the_recorded_tasks_did(ran, label):
    assert ran["now"][label] == _recorded()[label]


@pytest.mark.parametrize("label", list(CASES))
def test_the_recording_is_what_the_tasks_before_the_move_do_today(ran, label):
    if "before" not in ran:
        pytest.skip("runs with DLBOX_PROXY_BEFORE=1 (and the git history, commit %s)" % BEFORE)
    assert ran["before"][label] == _recorded()[label]


def test_the_recording_reaches_every_rule():
    """Each rule the tasks follow shows in the recording (so that a wrong rule changes it)."""
    rec = _recorded()

    def files(label, run):
        return rec[label][run]["files"]

    # the pip proxy is https's where both are set, else http's; clearing removes the one an earlier run wrote
    assert "proxy = %s" % HTTPS in files("both with no_proxy and apt's own, then http only, then none", 0)
    assert "proxy = %s" % HTTP in files("both with no_proxy and apt's own, then http only, then none", 1)
    assert "proxy" not in files("both with no_proxy and apt's own, then http only, then none", 2).split("./etc/pip.conf")[-1]
    assert "proxy = %s" % HTTPS in files("https only, then cleared", 0)
    # the fleet cache's index wins over common_pip_index_url; pip trusts the cache's host
    both = files("package cache with common_pip_index_url and a proxy", 0)
    assert "index-url = http://cache1.lab:3141/index/" in both and MIRROR not in both and "trusted-host = cache1.lab" in both
    assert "index-url = %s" % MIRROR in files("common_pip_index_url alone", 0)
    # no_proxy is exported with a proxy only, and cleared with both
    assert "no_proxy=localhost,.lab\n" in files("both with no_proxy and apt's own, then http only, then none", 1)
    assert "no_proxy" not in files("both with no_proxy and apt's own, then http only, then none", 2)
    assert "/etc/environment" not in files("apt proxy alone", 0)
    # an earlier version's file: its Acquire values are cleared from login shells and pip, a user's value stays
    cleared = files("files of an earlier version and of the user, cleared", 0)
    assert "http_proxy=http://old.lab:8080" not in cleared and "https_proxy=http://olds.lab:8443" not in cleared
    assert "HTTP_PROXY=http://user.lab:1" in cleared and "no_proxy=localhost" in cleared
    assert "80dlbox-proxy" not in cleared and "90dlbox-package-cache" not in cleared and "olds.lab" not in cleared
    assert "timeout = 30" in cleared
    # the apt proxy file: written for apt's own proxy alone, removed when all are cleared
    assert 'Acquire::http::Proxy "%s";' % ACNG in files("apt proxy alone", 0)
    assert "80dlbox-proxy" not in files("apt proxy alone", 1)
    assert "80dlbox-proxy" not in files("an empty apt proxy file", 0)
    # nothing but apt's bounds where nothing is set
    assert files("no proxy", 0).count("== ") == 1


def test_record(ran):
    """Writes the recording when DLBOX_RECORD_PROXY=1 (from the tasks of BEFORE); otherwise checks it is there."""
    if os.environ.get("DLBOX_RECORD_PROXY") == "1":
        RECORDED.write_text(json.dumps(ran["before"], indent=1, sort_keys=True) + "\n", encoding="utf-8")
    assert set(_recorded()) == set(CASES)


# --- the entry itself -------------------------------------------------------------------------------------------------

def test_proxy_is_a_declared_entry_of_common():
    assert "proxy" in roles.ROLES["common"] and "proxy" in roles.entries("common")


def _proxy(**kwargs):
    given = dict(http_proxy="", https_proxy="", no_proxy="localhost", apt_proxy="", pip_index_url="",
                 cache={"proxy": "", "direct": [], "pip_index_url": "", "pip_trusted_host": ""})
    given.update(kwargs)
    return role_module("common", "proxy", **given)


def test_the_entry_decides_the_rules_the_yaml_did():
    both = _proxy(http_proxy=HTTP, https_proxy=HTTPS)
    assert both["pip_proxy"] == HTTPS and both["apt_file"] == "write" and both["pip_proxy_clear"] == ""
    assert both["environment_set"] == {"http_proxy": HTTP, "HTTP_PROXY": HTTP, "https_proxy": HTTPS,
                                       "HTTPS_PROXY": HTTPS, "no_proxy": "localhost", "NO_PROXY": "localhost"}
    assert both["environment_clear"] == {}
    assert _proxy(http_proxy=HTTP)["pip_proxy"] == HTTP
    assert _proxy(apt_proxy=ACNG)["environment_set"] == {} and _proxy(apt_proxy=ACNG)["apt_file"] == "write"
    cache = {"proxy": "http://cache1.lab:3142", "direct": [], "pip_index_url": "http://cache1.lab:3141/index/",
             "pip_trusted_host": "cache1.lab"}
    got = _proxy(cache=cache, pip_index_url=MIRROR)
    assert (got["apt_file"], got["pip_index_url"], got["pip_trusted_host"]) == ("write", cache["pip_index_url"], "cache1.lab")
    assert _proxy(pip_index_url=MIRROR)["pip_index_url"] == MIRROR
    assert _proxy()["apt_file"] == "keep" and _proxy(before="")["apt_file"] == "remove"
    written = "// no_proxy: localhost,.lab\n// http_proxy: %s\n// https_proxy: %s\nAcquire::http::Proxy \"%s\";\n" % (HTTP, HTTPS, ACNG)
    cleared = _proxy(before=written)
    assert cleared["configured"] == {"http": HTTP, "https": HTTPS, "no_proxy": "localhost,.lab"}
    assert cleared["environment_clear"] == {"http_proxy": HTTP, "HTTP_PROXY": HTTP, "https_proxy": HTTPS,
                                            "HTTPS_PROXY": HTTPS, "no_proxy": "localhost,.lab", "NO_PROXY": "localhost,.lab"}
    assert cleared["pip_proxy_clear"] == HTTPS and cleared["apt_file"] == "remove"
    # https cleared, http kept: https's lines go, no_proxy stays, pip's proxy is http's (written over, not cleared)
    half = _proxy(http_proxy=HTTP, before=written)
    assert half["environment_clear"] == {"https_proxy": HTTPS, "HTTPS_PROXY": HTTPS}
    assert (half["pip_proxy"], half["pip_proxy_clear"]) == (HTTP, "")
    # an earlier version's file: the Acquire lines, no no_proxy record
    assert _proxy(before=OLD_FORMAT)["configured"] == {"http": "http://old.lab:8080", "https": "http://olds.lab:8443",
                                                       "no_proxy": ""}


def test_the_entry_refuses_a_keyword_it_does_not_take():
    with pytest.raises(AnsibleFilterError, match=r"role_module\(common, proxy\): unknown keyword http"):
        _proxy(http="x")
    with pytest.raises(AnsibleFilterError, match="cache"):
        role_module("common", "proxy", http_proxy="", https_proxy="", no_proxy="", apt_proxy="", pip_index_url="")
