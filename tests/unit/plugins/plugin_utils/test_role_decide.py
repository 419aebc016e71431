"""The role decision modules (plugins/plugin_utils/roles/<role>.py: options, decide, needs) and the one filter that
reaches them, dlbox.stack.role_decide (issue 47): docker, nvidia_container_toolkit, dcgm, gpu_settings.

Pure, on frozen data: tests/unit/data/server-frozen.yml (DCGM, MIG), tests/unit/data/compat-frozen.yml (the plan's
data), the iptables raw table facts as data/docker.yml had them when the rule was written, and recorded nvidia-smi
outputs (tests/fixtures). The options come from the roles' argument specs (their defaults are what a run starts from).
Each decision replaces YAML that decided in the role's tasks (the role's tasks before the commit that added this
file); the rows below pin what that YAML did.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.dlbox.stack.plugins.filter.role_decide import role_decide
from ansible_collections.dlbox.stack.plugins.plugin_utils import gpu_settings as gs
from ansible_collections.dlbox.stack.plugins.plugin_utils.roles import _spec, dcgm, docker, gpu_settings
from ansible_collections.dlbox.stack.plugins.plugin_utils.roles import nvidia_container_toolkit as nct

ROOT = Path(__file__).resolve().parents[4]
FIXTURES = ROOT / "tests" / "fixtures"
SERVER = gs.load_data(ROOT / "tests" / "unit" / "data" / "server-frozen.yml")
COMPAT = str(ROOT / "tests" / "unit" / "data" / "compat-frozen.yml")
H100_Q = (FIXTURES / "server" / "h100-sxm-8x-driver-565-q.txt").read_text(encoding="utf-8")
H200_X = (FIXTURES / "nvidia-smi" / "h200-driver-580-device.xml").read_text(encoding="utf-8")
FPR = "0123456789ABCDEF0123456789ABCDEF01234567"
IPTABLES_RAW = {"engine_min": "28.0.0", "engine_min_source": "x", "opt_out_min": "28.0.2", "opt_out_source": "x",
                "opt_out_env": "DOCKER_INSECURE_NO_IPTABLES_RAW",
                "l4t": {"fixed": "36.4.4", "fixed_jetpack": "JetPack 6.2.1", "without": ["36.4.3"], "source": "x"}}
R3643 = (FIXTURES / "jetson" / "nv_tegra_release" / "agx-orin-r36.4.3.txt").read_text().splitlines()[0]
MODULES = {"docker": docker, "nvidia_container_toolkit": nct, "dcgm": dcgm, "gpu_settings": gpu_settings}


def spec_defaults(role):
    options = yaml.safe_load((ROOT / "roles" / role / "meta" / "argument_specs.yml").read_text())
    return {k: v.get("default") for k, v in options["argument_specs"]["main"]["options"].items()}


# --- options: the argument specs' defaults, typed ------------------------------------------------------------------

@pytest.mark.parametrize("role", sorted(MODULES))
def test_options_are_the_argument_specs_defaults_never_retyped(role):
    assert MODULES[role].options() == spec_defaults(role)


def test_options_read_inventory_text_as_ansible_would_and_leave_the_rest_to_the_decision():
    got = _spec.typed("dcgm", {"dcgm_hold": "false", "dcgm_exporter_port": "9500", "dcgm_exporter_enabled": "maybe"})
    assert got["dcgm_hold"] is False and got["dcgm_exporter_port"] == 9500 and got["dcgm_exporter_enabled"] == "maybe"
    assert _spec.typed("docker", {"docker_iptables_raw_workaround": "no"})["docker_iptables_raw_workaround"] is False


# --- docker --------------------------------------------------------------------------------------------------------

DOCKER_GIVEN = {"docker_ce_repo_url": "https://mirror.lab.example/docker/linux/ubuntu", "docker_ce_repo_key_fingerprint": FPR,
                "docker_http_proxy": "", "docker_https_proxy": "", "docker_no_proxy": "localhost",
                "docker_client_proxy_users": []}


def _docker(given=None, **facts):
    facts = dict({"distribution_release": "jammy", "packages": {}}, **facts)
    return docker.decide(None, docker.options(dict(DOCKER_GIVEN, **(given or {}))), facts, data=IPTABLES_RAW)


def test_docker_ce_from_its_repository_with_the_pinned_packages():
    got = _docker({"docker_ce_version": "5:28.0.4-1~ubuntu.22.04~jammy"})
    assert got["problems"] == [] and got["repository"]["enabled"]
    assert got["packages"][:3] == ["docker-ce=5:28.0.4-1~ubuntu.22.04~jammy", "docker-ce-cli=5:28.0.4-1~ubuntu.22.04~jammy",
                                   "containerd.io"]          # only docker-ce and docker-ce-cli are pinned
    repo = got["repository"]
    assert (repo["suite"], repo["key_url"], repo["key_url_variable"]) == (
        "jammy", DOCKER_GIVEN["docker_ce_repo_url"] + "/gpg", "docker_ce_repo_url")
    assert _docker({"docker_ce_repo_suite": "noble"})["repository"]["suite"] == "noble"
    assert got["settings"] == {"live-restore": True} and got["proxy_env"] == {} and not got["installed"]


def test_docker_needs_the_prerequisites_the_packages_and_the_pinned_key():
    got = _docker()
    assert docker.needs(got) == {"apt": ["ca-certificates", "gnupg", "python3-debian"] + got["packages"],
                                 "repositories": ["docker"],
                                 "keys": [{"url": DOCKER_GIVEN["docker_ce_repo_url"] + "/gpg", "fingerprint": FPR,
                                           "dest": "/etc/apt/keyrings/docker.asc"}]}
    distro = _docker({"docker_source": "distribution"})
    assert docker.needs(distro) == {"apt": ["docker.io"], "repositories": [], "keys": []}


def test_docker_daemon_settings_and_proxies_are_merged_as_the_yaml_did():
    got = _docker({"docker_daemon_settings": {"live-restore": False, "debug": True}, "docker_data_root": "/data/docker",
                   "docker_default_address_pools": [{"base": "172.80.0.0/16", "size": 24}],
                   "docker_default_runtime": "nvidia",
                   "docker_http_proxy": "http://proxy.lab.example:3128", "docker_no_proxy": "localhost,.lab"})
    assert got["settings"] == {"live-restore": True, "debug": True, "data-root": "/data/docker",
                               "default-address-pools": [{"base": "172.80.0.0/16", "size": 24}],
                               "default-runtime": "nvidia"}
    assert got["proxy_env"] == {"HTTP_PROXY": "http://proxy.lab.example:3128", "NO_PROXY": "localhost,.lab"}
    assert got["proxy_client"] == {"httpProxy": "http://proxy.lab.example:3128", "noProxy": "localhost,.lab"}
    assert _docker({"docker_live_restore": None})["settings"] == {}


@pytest.mark.parametrize("given, facts, words", [
    ({"docker_source": "distribution"}, {"packages": {"docker-ce": [{"version": "5:28.0.4"}]}},
     "already has docker-ce installed; installing the other engine would remove it. Set docker_source: docker-ce"),
    ({}, {"packages": {"docker.io": [{"version": "28.2.2"}]}}, "Set docker_source: distribution to keep it"),
    ({"docker_ce_repo_key_fingerprint": "not-a-key"}, {}, "docker_ce_repo_key_fingerprint a 40-hex-digit fingerprint"),
    ({"docker_ce_repo_url": "ftp://x"}, {}, r"must be http\(s\):// or file:// URLs"),
    ({"docker_data_root": "relative"}, {}, r"docker_data_root must be an absolute path or empty \(got 'relative'\)"),
    ({"docker_default_address_pools": [{"size": 24}]}, {}, "docker_default_address_pools a list of {base"),
    ({"docker_https_proxy": "proxy:3128"}, {}, "docker_https_proxy must be empty or proxy URLs"),
    ({"docker_users": ["ghost", "root"]},
     {"users": [{"item": "ghost", "ansible_facts": {"getent_passwd": {"ghost": None}}},
                {"item": "root", "ansible_facts": {"getent_passwd": {"root": ["x", "0"]}}}]},
     "docker_users names ghost, which does not exist on lab1"),
    ({"docker_client_proxy_users": ["gone"]}, {"users": [{"item": "gone"}]}, "docker_client_proxy_users names gone"),
])
def test_docker_refusals_name_the_variable(given, facts, words):
    got = _docker(given, host="lab1", **facts)
    assert len(got["problems"]) == 1 and re.search(words, got["problems"][0]), got["problems"]


def test_docker_iptables_raw_on_a_jetson_without_the_table_and_the_service_command_line():
    probe = "l4t=%s\nconfig=/proc/config.gz\nconfig_line=# CONFIG_IP_NF_RAW is not set\nmodule_rc=1\nmodule=\n" \
            "tables=filter nat\ncandidate=28.2.2-0ubuntu1~22.04.1\n" % R3643
    got = _docker({"docker_source": "distribution"}, iptables_probe=probe, execstart="{}", systemd_booted=True)
    assert got["iptables_raw"]["action"] == "dropin" and got["engine_package"] == "docker.io"
    assert got["service_execstart"] is None and got["systemd_booted"] is True
    off = _docker({"docker_source": "distribution", "docker_iptables_raw_workaround": "false"}, iptables_probe=probe)
    assert off["iptables_raw"]["action"] == "refuse"      # inventory text "false" is the workaround off


# --- nvidia_container_toolkit --------------------------------------------------------------------------------------

TOOLKIT = {"version": "1.18.2", "min_version": "1.18.1", "packages": ["nvidia-container-toolkit", "libnvidia-container1"],
           "docker_cdi_min": "25.0"}
NCT_GIVEN = {"nvidia_container_toolkit_repo_url": "https://mirror.lab.example/libnvidia-container",
             "nvidia_container_toolkit_repo_key_fingerprint": FPR}


def _plan(toolkit="planned", jetpack=None):
    toolkit = dict(TOOLKIT) if toolkit == "planned" else toolkit
    return {"ok": True, "errors": [], "host": {"jetson": {"model": "Orin"} if jetpack else None},
            "stack": {"container_toolkit": toolkit, "jetpack": jetpack}}


def _nct(plan, given=None, **facts):
    return nct.decide(plan, nct.options(dict(NCT_GIVEN, **(given or {}))), facts, data_path=COMPAT)


def test_toolkit_version_floor_and_packages_come_from_the_plan():
    got = _nct(_plan())
    assert got["problems"] == [] and (got["source"], got["active"], got["jetpack"]) == ("nvidia", True, False)
    assert (got["version"], got["floor"], got["packages"], got["cdi_min"]) == ("1.18.2", "1.18.1", TOOLKIT["packages"],
                                                                               "25.0")
    assert got["repository"]["uri"] == NCT_GIVEN["nvidia_container_toolkit_repo_url"] + "/stable/deb/$(ARCH)"
    assert got["ctk"]["docker"] == ["nvidia-ctk", "runtime", "configure", "--runtime=docker"]
    assert nct.needs(got)["apt"][3:] == ["nvidia-container-toolkit=1.18.2-*", "libnvidia-container1=1.18.2-*"]


def test_toolkit_floor_is_the_roles_where_the_plan_asks_less_and_the_variable_wins():
    got = _nct(_plan(dict(TOOLKIT, min_version="1.17.0")), {"nvidia_container_toolkit_version": "1.18.0",
                                                            "nvidia_container_toolkit_set_as_default": "true"})
    assert (got["version"], got["floor"], got["problems"]) == ("1.18.0", "1.18", [])
    assert got["ctk"]["containerd"][-1] == "--set-as-default"


@pytest.mark.parametrize("plan, given, words", [
    ("jetson", {"nvidia_container_toolkit_source": "nvidia"}, "libnvidia-container repository must not go onto L4T"),
    ("pc", {"nvidia_container_toolkit_source": "jetpack"}, "is not a Jetson"),
    ("pc", {"nvidia_container_toolkit_version": "1.17.8"}, "at least 1.18.1"),
    ("pc", {"nvidia_container_toolkit_version": "1.18"}, "must be a release such as 1.18.2"),
])
def test_toolkit_refusals_name_the_variable(plan, given, words):
    got = _nct(_plan(jetpack={"version": "6.2"}) if plan == "jetson" else _plan(), given)
    assert len(got["problems"]) == 1 and words in got["problems"][0] and "nvidia_container_toolkit_" in got["problems"][0]
    assert not got["problems"][0].endswith("Nothing was changed.")      # the task adds it once


def test_toolkit_on_a_jetson_is_jetpacks_and_needs_nothing_from_nvidias_repository():
    got = _nct(_plan(None, jetpack={"version": "6.2"}))
    assert (got["source"], got["active"], got["problems"]) == ("jetpack", True, [])
    need = nct.needs(got)
    assert {k: need[k] for k in ("apt", "repositories", "keys")} == {"apt": [], "repositories": [], "keys": []}
    assert need["nothing"].startswith("JetPack's toolkit (L4T)")    # why, for offline mode (offline.role_request)


def test_toolkit_without_a_planned_toolkit_does_nothing_and_says_why():
    got = _nct(_plan(None), inventory_hostname="cpu1")
    assert (got["active"], got["problems"], got["version"]) == (False, [], "")
    assert "The plan for cpu1 has no NVIDIA Container Toolkit" in got["skip_reason"]


# --- dcgm ----------------------------------------------------------------------------------------------------------

def _dcgm(given=None, **facts):
    return dcgm.decide(None, dcgm.options(given), dict({"smi": H100_Q}, **facts), data=SERVER)


def test_dcgm_package_follows_the_drivers_cuda_major_and_the_exporter_its_method():
    got = _dcgm()
    assert got["ok"] and got["package"] == "datacenter-gpu-manager-4-cuda12"
    assert got["apt"] == got["packages"] + [got["exporter"]["package"]] == got["packages"] + got["exporter_packages"]
    assert dcgm.needs(got) == {"apt": got["apt"], "repositories": ["cuda"], "images": []}
    contained = _dcgm({"dcgm_exporter_method": "container"})
    assert contained["exporter_packages"] == [] and dcgm.needs(contained)["images"] == [contained["exporter"]["image"]]
    mirrored = _dcgm({"dcgm_exporter_method": "container", "dcgm_exporter_image": "registry.lab/dcgm-exporter:x"})
    assert mirrored["image"] == "registry.lab/dcgm-exporter:x" and dcgm.needs(mirrored)["images"] == [mirrored["image"]]
    assert _dcgm({"dcgm_exporter_enabled": False})["apt"] == got["packages"]


def test_dcgm_decides_again_with_the_installed_version():
    first = _dcgm()
    pairs = SERVER["dcgm"]["exporter"]["pairs"]
    other = next(v for v in pairs if v != first["dcgm_version"])
    again = _dcgm(installed_dcgm="1:%s-1" % other)
    assert again["dcgm_version"] == other and again["exporter"]["version"] == pairs[other]


@pytest.mark.parametrize("given", [None, {"dcgm_exporter_method": "container"}, {"dcgm_exporter_version": "4.1.1"}])
def test_dcgm_the_installed_version_updates_the_kept_decision_as_deciding_again_did(given):
    """install.yml hands the kept decision and the installed DCGM to the same entry point (update): what deciding again
    with nvidia-smi's output and that version gave (install.yml did so), without nvidia-smi's output handed again."""
    opts = dcgm.options(given)
    kept = dict(dcgm.decide(None, opts, {"smi": H100_Q}, data=SERVER), options=opts)
    assert kept["facts"] == {"smi": H100_Q}
    pairs = SERVER["dcgm"]["exporter"]["pairs"]
    for installed in ["1:%s-1" % v for v in pairs] + ["", "1:9.9.9-1"]:
        again = _dcgm(given, installed_dcgm=installed)
        assert dcgm.update(kept, {"installed_dcgm": installed}, data=SERVER) == again, installed
        assert dcgm.decide(None, opts, {"decided": kept, "installed_dcgm": installed}, data=SERVER) == again
    other = next(v for v in pairs if v != kept["dcgm_version"])
    assert dcgm.update(kept, {"installed_dcgm": other}, data=SERVER)["dcgm_version"] == other


def test_dcgm_the_filter_updates_with_the_kept_decision():
    kept = role_decide("dcgm", None, {}, {"smi": H100_Q})
    got = role_decide("dcgm", None, kept["options"], {"decided": kept, "installed_dcgm": kept["dcgm_version"]})
    assert got == role_decide("dcgm", None, kept["options"], {"smi": H100_Q, "installed_dcgm": kept["dcgm_version"]})


def test_dcgm_without_a_driver_is_refused():
    got = _dcgm(smi="")
    assert not got["ok"] and "install the driver first" in got["problems"][0] and dcgm.needs(got)["repositories"] == []


# --- gpu_settings --------------------------------------------------------------------------------------------------

LAYOUT = {"version": "v1", "mig-configs": {"two": [{"devices": "all", "mig-enabled": True,
                                                    "mig-devices": {"3g.71gb": 2}}]}}


def _gpu(given=None, **facts):
    facts = dict({"smi": H200_X, "nvidia_smi": "/usr/bin/nvidia-smi\n"}, **facts)
    return gpu_settings.decide(None, gpu_settings.options(given), facts, data=SERVER)


def test_gpu_settings_commands_against_the_gpus_limits():
    got = _gpu({"gpu_settings_power_limit_w": 600})
    assert got["ok"] and got["commands_now"] == [["nvidia-smi", "-i", "0", "-pl", "600"]]
    assert got["nvidia_smi"] == "/usr/bin/nvidia-smi" and gpu_settings.needs(got) == {"files": []}


def test_gpu_settings_mig_layout_needs_nvidia_mig_manager_and_the_after_check_leaves_it_out():
    given = {"gpu_settings_mig_config": LAYOUT, "gpu_settings_mig_selected": "two",
             "gpu_settings_mig_parted_sha256": "b" * 64}
    got = _gpu(given, arch="x86_64")
    assert got["ok"], got["problems"]
    assert gpu_settings.needs(got) == {"files": [{"url": got["mig"]["url"], "sha256": "b" * 64,
                                                  "name": got["mig"]["deb"]}]}
    assert "mig" not in _gpu(given, after=True)


@pytest.mark.parametrize("given", [{"gpu_settings_power_limit_w": 600}, {}, {
    "gpu_settings_power_limit_w": 600, "gpu_settings_mig_config": LAYOUT, "gpu_settings_mig_selected": "two",
    "gpu_settings_mig_parted_sha256": "b" * 64}])
def test_gpu_settings_the_gpus_read_again_update_the_kept_decision_as_the_after_check_did(given):
    """verify.yml hands the kept decision and the GPUs read again to the same entry point (update): ``after`` is what
    the after check ('after': true, the settings only) gave; the kept decision stays as it was."""
    opts = gpu_settings.options(given)
    kept = dict(_gpu(given), options=opts)
    old = _gpu(given, after=True)
    got = gpu_settings.update(kept, {"smi": H200_X}, data=SERVER)
    assert got["after"] == {k: v for k, v in old.items() if k != "nvidia_smi"}
    assert "mig" not in got["after"] and {k: v for k, v in got.items() if k != "after"} == kept
    assert gpu_settings.decide(None, opts, {"decided": kept, "smi": H200_X}, data=SERVER) == got
    assert got["after"]["commands_now"] == ([["nvidia-smi", "-i", "0", "-pl", "600"]]
                                            if given.get("gpu_settings_power_limit_w") else [])


def test_gpu_settings_a_layout_without_its_sha256_is_refused_and_commands_emptied():
    got = _gpu({"gpu_settings_power_limit_w": 600, "gpu_settings_mig_config": LAYOUT, "gpu_settings_mig_selected": "two"})
    assert not got["ok"] and got["commands_now"] == []
    assert any("gpu_settings_mig_parted_sha256" in p for p in got["problems"])


# --- the filter ----------------------------------------------------------------------------------------------------

def test_the_filter_adds_needs_and_the_options_it_decided_with():
    got = role_decide("dcgm", None, {"dcgm_exporter_port": "9500", "other_role_var": 1}, {"smi": H100_Q})
    assert got["needs"]["repositories"] == ["cuda"] and got["options"]["dcgm_exporter_port"] == 9500
    assert "other_role_var" not in got["options"]
    again = role_decide("dcgm", None, got["options"], {"smi": H100_Q})      # a later fact, the same entry point
    assert again["options"] == got["options"]


@pytest.mark.parametrize("args, words", [
    (("nosuchrole",), "no decision module for role 'nosuchrole'"),
    (("cuda_repo",), "no decision module for role 'cuda_repo'"),
    (("docker", "plan"), "plan must be dlbox_plan or none"),
    (("docker", None, ["x"]), "options must be a mapping"),
    (("dcgm", None, {"dcgm_exporter_method": "helm"}), "dcgm_exporter_method must be one of package, container"),
])
def test_the_filter_refuses_naming_what_is_wrong(args, words):
    with pytest.raises(AnsibleFilterError, match=words):
        role_decide(*args)
