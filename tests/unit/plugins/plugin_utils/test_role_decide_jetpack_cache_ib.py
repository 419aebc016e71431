"""The jetpack, package_cache and infiniband roles decide through their modules (plugins/plugin_utils/roles/, reached by
dlbox.stack.role_module like every other role's; rt47 M3). Each module's decide is the rules the role's old filter
ran (jetpack_plan.decide, package_cache_plan.decide, infiniband.doca_install) on the role's variables as the argument
spec names them; the old filters stay as deprecated aliases of the same rules until 1.0.0 (meta/runtime.yml). The
last test runs the three preflights' real decide tasks with ansible-playbook on local hosts.

Jetson host reads: tests/fixtures/jetson (nv_tegra_release and nvpmodel.conf of an AGX Orin, sources in SOURCES.md).
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

from ansible_collections.dlbox.stack.plugins.filter.infiniband import infiniband_doca
from ansible_collections.dlbox.stack.plugins.filter.jetpack import jetpack_plan
from ansible_collections.dlbox.stack.plugins.filter.package_cache import package_cache_plan
from ansible_collections.dlbox.stack.plugins.filter.role_module import role_module
from ansible_collections.dlbox.stack.plugins.plugin_utils import roles
from ansible_collections.dlbox.stack.plugins.plugin_utils.roles import package_cache as package_cache_module

ROOT = Path(__file__).resolve().parents[4]
JETSON = ROOT / "tests" / "fixtures" / "jetson"
PLAN_ORIN = {"stack": {"jetpack": {"version": "6.2", "l4t": "36.4.3", "family": "orin"}}}
FPR = "0123456789ABCDEF0123456789ABCDEF01234567"
DOCA_URL = "https://linux.mellanox.com/public/repo/doca/3.1.0/ubuntu24.04/x86_64/"


def _orin_facts(**more):
    return dict({"release": (JETSON / "nv_tegra_release" / "agx-orin-r36.4.3.txt").read_text(encoding="utf-8"),
                 "model": "NVIDIA Jetson AGX Orin Developer Kit",
                 "nvpmodel_conf": (JETSON / "nvpmodel" / "nvpmodel_p3701_0000.conf").read_text(encoding="utf-8"),
                 "nvpmodel_query": "NV Power Mode: MODE_30W\n2\n"}, **more)


def _without_added(decision):
    return {k: v for k, v in decision.items() if k not in ("options", "needs")}


def test_the_three_roles_are_deciders_in_the_one_registry():
    assert {"jetpack", "package_cache", "infiniband"} <= set(roles.DECIDERS)


# --- jetpack ------------------------------------------------------------------------------------------------------

def test_jetpack_decides_with_the_roles_variables_as_the_old_filter_did():
    given = {"jetpack_power_mode": "MAXN", "jetpack_power_mode_reboot": "never", "jetpack_components": ["all"],
             "jetpack_container_runtime": "false"}
    decided = role_module("jetpack", "decide", plan=PLAN_ORIN, given=given, facts=_orin_facts(reboot_allowed=None))
    old = jetpack_plan({"base_url": "", "key_url": "", "key_fingerprint": "", "components": ["all"], "power_mode": "MAXN",
                        "power_mode_reboot": "never", "clocks": None, "container_runtime": False, "reboot_allowed": None},
                       PLAN_ORIN, release=_orin_facts()["release"], model=_orin_facts()["model"],
                       nvpmodel_conf=_orin_facts()["nvpmodel_conf"], nvpmodel_query=_orin_facts()["nvpmodel_query"])
    assert decided["ok"], decided["errors"]
    assert _without_added(decided) == old
    assert decided["options"]["jetpack_container_runtime"] is False          # typed from the spec's bool
    assert decided["power"]["name"] == "MAXN"
    needs = decided["needs"]
    assert needs["apt"] == decided["packages"] and needs["apt"]
    assert needs["repositories"] == [r["uri"] for r in decided["repositories"]]
    assert needs["repositories"][0].startswith(role_module("jetpack", "vendor")["url"].rstrip("/"))
    assert needs["keys"] == [decided["key"]] and needs["keys"][0]["fingerprint"] == role_module("jetpack", "vendor")["fingerprint"]


def test_jetpack_reboot_allowed_is_the_groups_fact():
    given = {"jetpack_power_mode": "MAXN", "jetpack_power_mode_reboot": "if_needed"}
    refused = role_module("jetpack", "decide", plan=PLAN_ORIN, given=given, facts=_orin_facts(reboot_allowed=False))
    assert not refused["ok"] and "dlbox_reboot_allowed is false" in " ".join(refused["errors"])
    assert refused["needs"] == {"apt": [], "repositories": [], "keys": []}
    assert role_module("jetpack", "decide", plan=PLAN_ORIN, given=given, facts=_orin_facts(reboot_allowed=True))["ok"]


def test_jetpack_refuses_a_host_that_is_not_a_jetson():
    refused = role_module("jetpack", "decide", plan=PLAN_ORIN, facts={})
    assert not refused["ok"] and refused["errors"][0].startswith("This host is not a Jetson running L4T")


# --- package_cache ------------------------------------------------------------------------------------------------

def _cache_given(**more):
    # the two defaults that are templates in the spec (dlbox_package_cache_host, dlbox_site_proxy.http), as a run gives them
    return dict({"package_cache_host": "cache1.lab", "package_cache_upstream_proxy": ""}, **more)


def test_package_cache_server_needs_the_cache_and_proxpi():
    decided = role_module("package_cache", "decide", given=_cache_given(),
                          facts={"inventory_hostname": "cache1.lab", "fqdn": ""})
    assert decided["ok"] and decided["mode"] == "server", decided["errors"]
    spec_pip = decided["options"]["package_cache_pypi_packages"]
    assert decided["needs"] == {"apt": list(package_cache_module.SERVER_APT), "pip": spec_pip}
    assert "apt-cacher-ng" in decided["needs"]["apt"] and any(p.startswith("proxpi") for p in spec_pip)
    # the old filter's result, from the same options under its own keys
    opts = {key: decided["options"][name] for key, name in package_cache_module.OPTIONS.items()}
    old = package_cache_plan(dict(opts, inventory_hostname="cache1.lab", fqdn=""))
    assert {k: v for k, v in _without_added(decided).items() if k not in ("apt", "pip")} == old


@pytest.mark.parametrize("given, name, mode", [
    (_cache_given(), "node1", "client"),
    (_cache_given(package_cache_host=""), "node1", "none"),
    (_cache_given(package_cache_mode="client"), "cache1.lab", "client"),
])
def test_package_cache_other_hosts_need_nothing(given, name, mode):
    decided = role_module("package_cache", "decide", given=given, facts={"inventory_hostname": name, "fqdn": ""})
    assert decided["ok"] and decided["mode"] == mode
    assert decided["needs"] == {"apt": [], "pip": []} and decided["apt"] == [] and decided["pip"] == []


def test_package_cache_a_refusal_names_the_variable_and_needs_nothing():
    decided = role_module("package_cache", "decide", given=_cache_given(package_cache_apt_port=0),
                          facts={"inventory_hostname": "cache1.lab"})
    assert not decided["ok"] and any("package_cache_apt_port" in e for e in decided["errors"])
    assert decided["needs"] == {"apt": [], "pip": []}
    with pytest.raises(AnsibleFilterError, match="package_cache_mode must be one of"):
        role_module("package_cache", "decide", given=_cache_given(package_cache_mode="both"), facts={})


# --- infiniband ---------------------------------------------------------------------------------------------------

def test_infiniband_decides_doca_as_the_old_filter_did_and_needs_its_repository():
    given = {"infiniband_doca_install": "true", "infiniband_doca_repo_url": DOCA_URL,
             "infiniband_doca_key_fingerprint": FPR}
    decided = role_module("infiniband", "decide", given=given, facts={"arch": "x86_64"})
    assert decided["install"] is True and decided["problems"] == []
    assert _without_added(decided) == infiniband_doca(True, repo_url=DOCA_URL, fingerprint=FPR, arch="x86_64")
    assert decided["needs"] == {"apt": decided["packages"], "repositories": [DOCA_URL],
                                "keys": [{"url": decided["key_url"], "fingerprint": FPR}]}
    assert decided["packages"]                                              # data/server.yml's meta package


def test_infiniband_without_the_install_or_with_a_problem_needs_nothing():
    assert role_module("infiniband", "decide", facts={})["needs"] == {"apt": [], "repositories": [], "keys": []}
    refused = role_module("infiniband", "decide", given={"infiniband_doca_install": True}, facts={"arch": "aarch64"})
    assert refused["problems"][0].startswith("infiniband_doca_repo_url is empty") and "/arm64-sbsa/" in refused["problems"][0]  # the fact arch
    assert refused["needs"] == {"apt": [], "repositories": [], "keys": []}


# --- the tasks call the modules; the old names are deprecated aliases -----------------------------------------------

OLD = ("jetpack_plan", "package_cache_plan", "infiniband_doca")


def test_no_role_or_playbook_calls_the_deprecated_filters_and_runtime_says_so():
    runtime = yaml.safe_load((ROOT / "meta" / "runtime.yml").read_text(encoding="utf-8"))["plugin_routing"]["filter"]
    for name in OLD:
        assert runtime[name]["deprecation"]["removal_version"] == "1.0.0", name
        sidecar = yaml.safe_load((ROOT / "plugins" / "filter" / (name + ".yml")).read_text(encoding="utf-8"))
        assert sidecar["DOCUMENTATION"]["deprecated"]["removed_in"] == "1.0.0", name
    files = list((ROOT / "roles").glob("*/tasks/*.yml")) + list((ROOT / "roles").glob("*/vars/*.yml")) \
        + list((ROOT / "playbooks").rglob("*.yml"))
    calls = [(str(p.relative_to(ROOT)), name) for p in files for name in OLD
             if "dlbox.stack.%s" % name in p.read_text(encoding="utf-8")]
    assert calls == []


def _run(tmp_path, play, hostvars):
    (tmp_path / "play.yml").write_text(yaml.safe_dump([play]), encoding="utf-8")
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump({"all": {"hosts": hostvars}}), encoding="utf-8")
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json",
               ANSIBLE_COLLECTIONS_PATH=str(ROOT / "build" / "collections"), ANSIBLE_HOME=str(tmp_path / "home"),
               ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"), DLBOX_STACK_CACHE_DIR="off")
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(tmp_path / "hosts.yml"),
                           str(tmp_path / "play.yml")], capture_output=True, text=True, env=env, cwd=str(tmp_path),
                          timeout=300, check=False)
    assert "{" in proc.stdout, proc.stderr[-2000:]
    return proc, json.loads(proc.stdout[proc.stdout.index("{"):])


def test_the_preflights_decide_through_the_modules_in_a_real_run(tmp_path):
    """The real decide tasks of the three preflights, one local host each (this machine is no Jetson and no cache
    host): the role's variables with their defaults templated, handed to the module, its result kept."""
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    hostvars = {
        "jetson": dict(local, role="jetpack", kept="__jetpack_decided"),
        "client": dict(local, role="package_cache", kept="__package_cache_decided", dlbox_package_cache_host="cache1.lab",
                       dlbox_site_proxy={"http": "http://proxy.lab:3128"}),
        "doca": dict(local, role="infiniband", kept="__infiniband_doca", infiniband_doca_install=True,
                     infiniband_doca_key_fingerprint=FPR),
    }
    play = {"hosts": "all", "gather_facts": False, "tasks": [
        {"block": [{"ansible.builtin.include_role": {"name": "dlbox.stack.{{ role }}", "tasks_from": "preflight"}}],
         "rescue": [{"name": "refused", "ansible.builtin.debug": {"msg": "{{ ansible_failed_result.msg }}"}}]},
        {"name": "kept", "ansible.builtin.debug": {"msg": "{{ lookup('ansible.builtin.vars', kept) }}"}},
    ]}
    proc, out = _run(tmp_path, play, hostvars)
    assert proc.returncode == 0, proc.stdout[-3000:]
    tasks = {t["task"]["name"]: t["hosts"] for play_ in out["plays"] for t in play_["tasks"]}
    kept = {host: tasks["kept"][host]["msg"] for host in hostvars}
    assert kept["jetson"]["errors"][0].startswith("This host is not a Jetson running L4T")
    assert tasks["refused"]["jetson"]["msg"] == kept["jetson"]["errors"][0]
    assert kept["jetson"]["options"]["jetpack_power_mode_reboot"] == "never" and "needs" in kept["jetson"]
    client = kept["client"]
    assert client["ok"] and client["mode"] == "client" and client["client"]["apt"]["proxy"] == "http://cache1.lab:3142"
    assert client["options"]["package_cache_upstream_proxy"] == "http://proxy.lab:3128"  # the spec's template, run
    assert client["needs"] == {"apt": [], "pip": []} and "client" not in tasks["refused"]
    assert tasks["refused"]["doca"]["msg"].startswith("infiniband_doca_repo_url is empty")
    assert kept["doca"]["install"] is True and kept["doca"]["fingerprint"] == FPR
