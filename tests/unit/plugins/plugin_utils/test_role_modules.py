"""The role modules (plugins/plugin_utils/roles/, filter dlbox.stack.role_module): options from the argument specs,
vendor facts from data/, and what each role needs, as the offline mirror asks it (issue 47).

The needs of cuda, cudnn and nccl were checked against the YAML they replace (playbooks/tasks/offline_plan.yml at
425969f, which read the roles' defaults files) by running both on the same plans: the same result in six
variations (defaults; two CUDA versions and an NCCL version; cudnn tarball with nccl_install false; cuda_method
distro; cuda off with cudnn and nccl on; a host toolkit 12.9 for NCCL), and python_env's packages with another
compiler. The tests below pin the rules, not today's data values: they read the expected values from data/.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.dlbox.stack.plugins.filter.role_module import role_module
from ansible_collections.dlbox.stack.plugins.plugin_utils import role_plan, site_network
from ansible_collections.dlbox.stack.plugins.plugin_utils.roles import _spec, _vendor, cuda_repo

ROOT = Path(__file__).resolve().parents[4]
REPOS = yaml.safe_load((ROOT / "data" / "repositories.yml").read_text())["repositories"]
PLAN_HW = {"gpus": ["RTX 4090"], "os": "debian-12"}
RUN_ALL = {"cuda": True, "cudnn": True, "nccl": True}


# --- options: the argument specs' defaults, the inventory's values on top -----------------------------------------

def test_options_are_the_spec_defaults_with_the_given_values_on_top():
    spec = yaml.safe_load((ROOT / "roles" / "cuda" / "meta" / "argument_specs.yml").read_text())
    defaults = {k: v.get("default") for k, v in spec["argument_specs"]["main"]["options"].items()}
    got = role_module("cuda", "options", given={"cuda_versions": ["12.8"], "cuda_repo_base_url": "x", "other": 1})
    assert got == dict(defaults, cuda_versions=["12.8"])      # another role's variable and strangers left out


def test_a_given_value_outside_the_choices_is_refused_naming_the_variable():
    with pytest.raises(AnsibleFilterError, match="cuda_method must be one of nvidia_repo, distro"):
        role_module("cuda", "options", given={"cuda_method": "apt"})


def test_a_role_without_a_spec_and_an_unknown_entry_are_refused():
    with pytest.raises(AnsibleFilterError, match="no argument spec"):
        role_module("nosuchrole", "options")
    with pytest.raises(AnsibleFilterError,
                       match=r"role docker has no entry 'install' \(it has: options, vendor, decide, needs, plan\)"):
        role_module("docker", "install")
    with pytest.raises(AnsibleFilterError, match="entry must be one of options, vendor, decide, needs, plan"):
        role_module("nosuchrole", "install")
    with pytest.raises(AnsibleFilterError, match="role common has no entry 'vendor'"):
        role_module("common", "vendor")


@pytest.mark.parametrize("role, entry, kwargs, words", [
    ("docker", "decide", {"options": {"docker_source": "distribution"}, "facts": {}},
     "role_module(docker, decide): unknown keyword options; it takes plan, given, facts"),
    ("docker", "decide", {"given": {}, "fact": {}}, "role_module(docker, decide): unknown keyword fact; it takes plan"),
    ("nccl", "decide", {"plans": None, "facts": {}}, "role_module(nccl, decide): unknown keyword plans; it takes plan"),
    ("common", "options", {"givn": {}}, "role_module(common, options): unknown keyword givn; it takes given"),
    ("cuda", "options", {"given": {}, "facts": {}}, "role_module(cuda, options): unknown keyword facts; it takes given"),
    ("docker", "vendor", {"given": {}}, "role_module(docker, vendor): unknown keyword given; it takes none"),
    ("common", "needs", {"givn": {}, "plan": None}, "role_module(common, needs): unknown keywords givn, plan; it takes given"),
    ("nccl", "needs", {"decided": {}}, "role_module(nccl, needs): unknown keyword decided; it takes decision"),
    ("common", "plan", {"hosts": {}}, "role_module(common, plan): unknown keyword hosts; it takes plan, host, request"),
    ("nvidia_driver", "hold_changes", {"wantd": []},
     "role_module(nvidia_driver, hold_changes): unknown keyword wantd; it takes wanted, held, recorded, installed"),
])
def test_a_keyword_an_entry_does_not_take_is_refused_naming_the_ones_it_takes(role, entry, kwargs, words):
    with pytest.raises(AnsibleFilterError) as err:
        role_module(role, entry, **kwargs)
    assert str(err.value).startswith(words)


def test_the_standard_entries_keywords_still_reach_the_decision():
    # the keyword it takes is read (given=), not dropped: distribution's decision differs from the default's
    facts = {"distribution_release": "bookworm"}
    assert role_module("docker", "decide", given={"docker_source": "distribution"}, facts=facts)["options"][
        "docker_source"] == "distribution"
    assert role_module("docker", "decide", facts=facts)["options"]["docker_source"] != "distribution"


@pytest.mark.parametrize("role, entry, own", [("cuda", "hold_change", "held_packages, distro_minimum"),
                                              ("cuda", "hold_changes", "held_packages, distro_minimum"),
                                              ("nvidia_driver", "hold_change", "module_check, hold_changes, kept_holds")])
def test_a_misspelt_own_entry_lists_the_roles_entries(role, entry, own):
    with pytest.raises(AnsibleFilterError) as err:
        role_module(role, entry)
    assert "role %s has no entry %r (it has: options, " % (role, entry) in str(err.value)
    assert own in str(err.value)


# --- vendor: data/ is the one place --------------------------------------------------------------------------------

@pytest.mark.parametrize("role, entry", [("docker", "docker"), ("nvidia_container_toolkit", "container_toolkit")])
def test_vendor_repositories_come_from_data(role, entry):
    got = role_module(role, "vendor")
    assert {k: got[k] for k in ("url", "key_path", "fingerprint")} == {k: REPOS[entry][k] for k in ("url", "key_path", "fingerprint")}
    assert set(got) - {"url", "key_path", "fingerprint"} <= ({"engine_packages", "packages"} if role == "docker" else set())
    if role == "docker":     # what each docker_source installs: data/docker.yml's (test_docker_packages_data.py)
        docker_data = yaml.safe_load((ROOT / "data" / "docker.yml").read_text())["packages"]
        assert got["packages"] == {source: entry["install"] for source, entry in docker_data.items()}


def test_docker_vendor_names_the_engine_package_of_each_source():
    """docker's vars/main.yml reads the engine package of docker_source here (no package name typed in the role), and
    both are engine packages of the data (data/compat.yml container_toolkit.engine_packages.docker)."""
    got = role_module("docker", "vendor")["engine_packages"]
    assert got == {"docker-ce": "docker-ce", "distribution": "docker.io"}
    compat = yaml.safe_load((ROOT / "data" / "compat.yml").read_text())
    assert set(got.values()) <= set(compat["container_toolkit"]["engine_packages"]["docker"])


def test_cuda_repo_vendor_is_data_repositories_and_compat_machines():
    got = role_module("cuda_repo", "vendor")
    machines = yaml.safe_load((ROOT / "data" / "compat.yml").read_text())["machines"]
    assert got["url"] == REPOS["cuda"]["url"]
    assert got["arch_dirs"] == {arch: m["cuda_repo"] for arch, m in machines.items()}
    assert got["signing_keys"] == {n: {"file": k["file"], "fingerprint": k["fingerprint"]}
                                   for n, k in REPOS["cuda"]["signing_keys"].items()}


def test_site_mirrors_replace_the_roots_of_data():
    roots = site_network.site_roots()
    assert sorted(roots) == sorted(site_network.MIRROR_KEYS)
    assert roots["docker"] == REPOS["docker"]["url"] and all(u.startswith("https://") for u in roots.values())


@pytest.mark.parametrize("change, words", [
    ({"fingerprint": "C95B321B"}, "fingerprint must be 40 upper-case hex digits"),
    ({"fingerprint": "c95b321b61e88c1809c4f759ddcae044f796ecb0"}, "fingerprint must be 40 upper-case hex digits"),
    ({"source": ""}, "has no source"),
    ({"url": "http://nvidia.github.io/libnvidia-container/"}, "url must be an https:// URL"),
])
def test_a_wrong_vendor_entry_is_named(tmp_path, change, words):
    data = yaml.safe_load((ROOT / "data" / "repositories.yml").read_text())
    data["repositories"]["container_toolkit"].update(change)
    (tmp_path / "repositories.yml").write_text(yaml.safe_dump(data))
    with pytest.raises(_vendor.VendorDataError, match="repositories.container_toolkit.*" + words):
        _vendor.load(str(tmp_path))


# --- needs ---------------------------------------------------------------------------------------------------------

def test_cuda_repo_needs_what_keyring_installs_first():
    assert role_module("cuda_repo", "needs") == {"apt": list(cuda_repo.PREREQUISITES), "keys": ["cuda"]}
    keyring = (ROOT / "roles" / "cuda_repo" / "tasks" / "keyring.yml").read_text()
    assert "__cuda_repo_prerequisites" in keyring          # the role installs what its module says


def test_common_needs_its_packages_and_the_extra_ones():
    defaults = _spec.options("common")
    got = role_module("common", "needs", given={"common_extra_packages": ["htop"]})
    assert got == {"apt": list(defaults["common_packages"]) + ["htop"]}


def _vendor_needs(**kw):
    plan = role_plan.resolve({}, {}, hardware=PLAN_HW)      # dlbox_plan, as plan.yml sets it
    return role_module("cuda_repo", "needs", **dict({"run": RUN_ALL, "given": {}, "plan": plan, "host": {},
                                                    "request": {}, "hardware": PLAN_HW, "arch": "x86_64"}, **kw))


def test_consumers_need_the_plans_toolkit_cudnn_and_the_key():
    got = _vendor_needs()
    prereqs = list(cuda_repo.PREREQUISITES)
    assert got["packages"]["cuda"][-2:] == prereqs and got["packages"]["cuda"][0].startswith("cuda-toolkit-")
    assert got["packages"]["cudnn"][-2:] == prereqs and all("=" in p for p in got["packages"]["cudnn"][:-2])
    assert got["keys"] == [{"name": "cuda", "roles": ["cuda", "cudnn", "nccl"]}]
    assert list(got) == ["packages", "picks", "nothing", "unmet", "keys"]


def test_a_method_off_the_repository_and_a_role_that_does_not_run_need_nothing():
    got = _vendor_needs(given={"cuda_method": "distro", "cudnn_method": "tarball"})
    assert got["packages"]["cuda"] == [] and got["packages"]["cudnn"] == []
    got = _vendor_needs(run={"cuda": False, "cudnn": False, "nccl": False})
    assert got["packages"] == {"cuda": [], "cudnn": [], "nccl": []} and got["keys"] == []


def test_nccl_builds_for_the_toolkit_cuda_installs_else_the_hosts():
    got = _vendor_needs(given={"nccl_version": "2.27.7", "cuda_versions": ["12.8"], "cuda_default_version": "12.8"})
    assert got["picks"]["nccl"]["cuda"] == "12.8" and got["packages"]["nccl"] == list(cuda_repo.PREREQUISITES)
    got = _vendor_needs(run={"cuda": False, "cudnn": False, "nccl": True}, given={"nccl_version": "2.27.7"},
                        host_cuda={"cuda_toolkits": [{"version": "12.9"}], "cuda_default": {"version": "12.9"}})
    assert got["picks"]["nccl"]["cuda"] == "12.9"
    got = _vendor_needs(run={"cuda": False, "cudnn": False, "nccl": True}, given={"nccl_version": "2.27.7"})
    assert got["unmet"][0]["role"] == "nccl" and "needs a CUDA toolkit" in got["unmet"][0]["why"]
    got = _vendor_needs(given={"nccl_install": "false"})
    assert got["nothing"] == {"nccl": "nccl_install is false: the role writes nccl.conf only"}


def test_python_env_needs_nothing_where_its_decision_is_refused_and_its_rule_where_it_decided():
    # where the role does not run, offline_plan.yml asks nothing (``if dlbox_workstation.run.python_env else []``)
    bad = [{"name": "a", "pytorch": "2.99", "frameworks": ["pytorch"]}]
    refused = role_module("python_env", "decide", given={"python_env_environments": bad}, facts={"hardware": PLAN_HW})
    assert not refused["ok"] and refused["needs"] == {"apt": [], "pypi": {}}
    got = role_module("python_env", "decide", given={"python_env_compiler_packages": ["clang"]},
                      facts={"hardware": PLAN_HW})
    # pylint: disable-next=import-outside-toplevel
    from ansible_collections.dlbox.stack.plugins.plugin_utils import offline

    assert got["ok"] and got["needs"]["apt"] == offline.python_env_apt(got["environments"], {}, True, True, ["clang"])
    assert "clang" in got["needs"]["apt"] and set(got["needs"]["pypi"]) == {e["name"] for e in got["environments"]}


# --- one registry, one filter (issue 47) ----------------------------------------------------------------------------

def test_the_registry_lists_every_role_module_with_the_entries_it_has():
    # pylint: disable-next=import-outside-toplevel
    from ansible_collections.dlbox.stack.plugins.plugin_utils import roles

    files = sorted(p.stem for p in (ROOT / "plugins" / "plugin_utils" / "roles").glob("[!_]*.py"))
    assert sorted(roles.ROLES) == files
    for role, declared in roles.ROLES.items():
        module = roles.module(role)
        has = {entry for entry in ("options", "vendor", "decide", "needs") if callable(getattr(module, entry, None))}
        assert has - {"options"} == set(declared) & set(roles.ENTRIES) - {"options"}, role  # options: the spec's, any role
        own = set(declared) - set(roles.ENTRIES)                          # a role's own entries (module_check)
        assert all(callable(getattr(module, entry, None)) for entry in own), role
        assert own <= set(roles.entries(role)), role
        assert "decide" not in declared or "options" in has, role          # a decider types its own options
    # rt47 L5: against the modules that define decide() (not DECIDERS' own definition), nvidia_driver's among them
    assert sorted(roles.DECIDERS) == [f for f in files if callable(getattr(roles.module(f), "decide", None))]
    assert {"nccl", "nvidia_driver"} <= set(roles.DECIDERS)
    source = (ROOT / "plugins" / "plugin_utils" / "roles" / "__init__.py").read_text(encoding="utf-8")
    assert "setdefault" not in source  # one registration path: ROLES (a9c11fc lost a role on the second)


def _decision_roles():
    """Role directories whose tasks take a decision (rt47 L5, M3): a set_fact of ``__<role>_decision``/``_decided``, or
    a call of the decide entry for the role (``'<role>' | dlbox.stack.role_module('decide'`` or ``role_decide(``)."""
    # pylint: disable-next=import-outside-toplevel
    import re

    found = {}
    for role_dir in sorted(p for p in (ROOT / "roles").iterdir() if (p / "tasks").is_dir()):
        role = role_dir.name
        text = "\n".join(f.read_text(encoding="utf-8") for f in sorted((role_dir / "tasks").glob("*.yml")))
        fact = re.search(r"^\s+__%s_(decision|decided):" % role, text, re.M)
        calls = re.search(r"'%s' \| dlbox\.stack\.(role_module\('decide'|role_decide\()" % role, text)
        if fact or calls:
            found[role] = (bool(fact), bool(calls))
    return found


def test_every_role_that_decides_has_its_module_in_the_registry_by_name():
    # pylint: disable-next=import-outside-toplevel
    from ansible_collections.dlbox.stack.plugins.plugin_utils import roles

    found = _decision_roles()
    assert {"nvidia_driver", "jetpack", "package_cache", "infiniband", "nccl"} <= set(found)   # the scan sees them
    for role, (_fact, calls) in found.items():
        assert role in roles.ROLES and "decide" in roles.ROLES[role], role
        assert role in roles.DECIDERS, role
        # a role's decision fact is taken through its module, never a filter of its own
        assert calls, "%s keeps a decision fact but never calls its module's decide entry" % role
    for role in roles.ROLES:
        assert (ROOT / "roles" / role / "tasks" / "main.yml").is_file(), role         # every module is a role's


def test_the_one_filter_reaches_every_entry_and_role_decide_is_its_decide():
    # pylint: disable-next=import-outside-toplevel
    from ansible_collections.dlbox.stack.plugins.filter.role_decide import role_decide

    given = {"nccl_version": "2.27.7"}
    facts = {"hardware": PLAN_HW, "toolkits": ["13.0"]}
    assert role_module("nccl", "decide", given=given, facts=facts) == role_decide("nccl", None, given, facts)
    assert role_module("nccl", "needs", decision=role_decide("nccl", None, given, facts))["pick"]["cuda"] == "13.0"
    assert role_module("common", "plan")["data"]["supported_os"]
    with pytest.raises(AnsibleFilterError, match="role common has no entry 'decide'|no decision module for role 'common'"):
        role_module("common", "decide")
    with pytest.raises(AnsibleFilterError, match="role_decide\\(nccl\\): facts must be a mapping"):
        role_decide("nccl", None, {}, ["not", "a", "mapping"])


def test_nvidia_drivers_module_check_is_its_own_entry_and_the_old_filter_calls_it():
    # pylint: disable-next=import-outside-toplevel
    from ansible_collections.dlbox.stack.plugins.filter.nvidia_driver_kernel import nvidia_driver_module_check

    decision = {"signing": {"path": "dkms"}, "build_only": False, "pending_reboot_reason": ""}
    boot = {"running": "6.8.0-31-generic", "next_boot": "6.8.0-40-generic", "boot": ["6.8.0-31-generic", "6.8.0-40-generic"]}
    kw = {"running": "6.8.0-31-generic", "boot": boot, "dkms_kernels": ["6.8.0-31-generic", "6.8.0-40-generic"],
          "modinfo": {"6.8.0-31-generic": "580.95.05", "6.8.0-40-generic": "575.57.08"}, "expected": "580.95.05",
          "headers": {"6.8.0-40-generic": 0}}
    got = role_module("nvidia_driver", "module_check", decision=decision, **kw)
    assert got == nvidia_driver_module_check(decision, **kw)
    assert sorted(got["kernels"]) == ["6.8.0-31-generic", "6.8.0-40-generic"] and "575.57.08" in " ".join(got["problems"])
    with pytest.raises(AnsibleFilterError, match=r"role_module\(nvidia_driver, module_check\): expected the nvidia_driver "
                                                 r"decision \(__nvidia_driver_decided, the role's kept decision\)"):
        role_module("nvidia_driver", "module_check", decision={"no": "signing"})
    with pytest.raises(AnsibleFilterError, match="role cuda has no entry 'module_check'|entry must be one of"):
        role_module("cuda", "module_check", decision=decision)


KEPT = "expected the nvidia_driver decision (__nvidia_driver_decided, the role's kept decision)"


@pytest.mark.parametrize("role, entry, kwargs, words", [
    ("nvidia_driver", "module_check", {"decision": {}}, KEPT),
    ("nvidia_driver", "module_check", {"decision": {"signing": {}}, "modinfo": []},
     "modinfo must be nvidia_driver_facts' modinfo mapping"),
    ("nvidia_driver", "hold_changes", {"wanted": 5}, "wanted must be a list of package names"),
    ("nvidia_driver", "kernel_without_module", {"simulation": 5}, "expected apt-get -s output (text or a command result)"),
    ("nvidia_driver", "kernel_without_module", {"simulation": "", "installed": 5}, "installed must be a list of package"),
    ("nvidia_driver", "unattended", {"simulation": 5}, "simulation must be a command's output"),
    ("nvidia_driver", "unattended", {"simulation": "", "held": 5}, "held must be a list of package names"),
    ("nvidia_driver", "boot_without_module", {"kernel_packages": 5}, "kernel_packages must be dpkg-query's text"),
    ("nvidia_driver", "boot_without_module", {"kernel_packages": [], "boot": 5}, "boot must be a list of package names"),
    ("nvidia_driver", "update_plan", {"decision": {}}, KEPT),
    ("nvidia_driver", "rollback_hint", {"records": 5}, "records must be a list of {path, mtime, content}"),
    ("nvidia_driver", "rollback_request", {"records": 5}, "records must be a list of {path, mtime, content}"),
    ("nvidia_driver", "kept_holds", {"held": 5}, "expected apt-mark showhold's lines and a list of kept packages"),
    ("nvidia_driver", "persistence", {"unit_text": "", "state": []}, "state must be the fact nvidia_driver_state"),
    ("cuda", "distro_minimum", {"policies": [], "minimum": []}, "expected {package: apt-cache policy text}"),
    ("jetpack", "pytorch", {"options": [], "plan": None}, "expected the options (source, mirror_url, mirror_kind)"),
    ("jetpack", "pytorch", {"options": {}, "plan": []}, "expected the plan (dlbox_plan) or none"),
    ("jetpack", "power_result", {"power": [], "rc": 0}, "expected the decision's power (__jetpack_decided.power)"),
    ("package_cache", "client_apt", {"cache_host": "cache", "inventory_hostname": "h", "mode": "nonsense"},
     "package_cache_mode must be one of auto, server, client, none"),
    ("python_env", "lock", {"installed": "text", "sha256sum_output": ""}, "expected the parsed output of pip list"),
    ("python_env", "check_lines", {"report": "text"}, "expected dlbox-check's --json report, parsed"),
])
def test_an_own_entrys_refusal_names_the_entry_not_a_removed_filter(role, entry, kwargs, words):
    with pytest.raises(AnsibleFilterError) as err:
        role_module(role, entry, **kwargs)
    assert str(err.value).startswith("role_module(%s, %s): %s" % (role, entry, words)), str(err.value)


def test_no_role_or_playbook_calls_a_deprecated_filter():
    runtime = yaml.safe_load((ROOT / "meta" / "runtime.yml").read_text(encoding="utf-8"))["plugin_routing"]["filter"]
    old = sorted(name for name, route in runtime.items() if "deprecation" in route)
    assert "nvidia_driver_module_check" in old
    files = list((ROOT / "roles").glob("*/tasks/*.yml")) + list((ROOT / "roles").glob("*/vars/*.yml")) \
        + list((ROOT / "roles").glob("*/defaults/*.yml")) + list((ROOT / "playbooks").rglob("*.yml"))
    calls = [(str(p.relative_to(ROOT)), name) for p in files for name in old
             if "dlbox.stack.%s(" % name in p.read_text(encoding="utf-8")
             or "dlbox.stack.%s " % name in p.read_text(encoding="utf-8")
             or "dlbox.stack.%s }" % name in p.read_text(encoding="utf-8")]
    assert calls == []
