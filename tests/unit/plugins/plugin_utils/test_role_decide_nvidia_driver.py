"""The nvidia_driver role's decision module (plugins/plugin_utils/roles/nvidia_driver.py, issue 47): options from the
argument specs, decide(plan, options, facts) around the planner (plugin_utils/nvidia_driver_plan.py), needs(decision).

Decided once: the preflight's decision is kept, and each later fact (apt's verdict, the install, the copies before a
branch change, the rollback) updates it through the same entry point without working the plan out again; the result
is the planner's own with every fact at once. The decisions that sat in the role's YAML (Fabric Manager's names with
their fallback, whether the role runs nvidia-persistenced) are the module's. apt's outputs are the RECORDED captures of
tests/fixtures/driver and the fixture repository's names that test_nvidia_driver_plan.py uses (on the frozen data).
"""

from __future__ import annotations

import copy

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.dlbox.stack.plugins.filter.role_decide import role_decide
from ansible_collections.dlbox.stack.plugins.module_utils import _nvidia_driver as nd
from ansible_collections.dlbox.stack.plugins.plugin_utils import nvidia_driver_plan as ndp
from ansible_collections.dlbox.stack.plugins.plugin_utils import role_plan
from ansible_collections.dlbox.stack.plugins.plugin_utils import roles
from ansible_collections.dlbox.stack.plugins.plugin_utils.roles import nvidia_driver as mod
from test_nvidia_driver_plan import (  # the planner's own test inputs (same folder)
    A100, DATA, FROZEN, MADISON, R580, SIM_595, debian_plan, fixture, installed, options as planner_opts, repo_plan)

SYSTEM = {"hostname": "gpu1", "distribution": "Debian", "distribution_version": "12", "kernel": "6.1.0-57-amd64",
          "check_mode": False}
PATHS = {"pin_file": "/etc/apt/preferences.d/dlbox-00-nvidia-driver-branch.pref", "shim_mok_dir": "/var/lib/shim-signed/mok"}
GOOD_535 = installed(("nvidia-kernel-dkms", "535.309.01-0+deb12u1"), ("nvidia-smi", "535.309.01-0+deb12u1"),
                     ("libcuda1", "535.309.01-0+deb12u1"), ("nvidia-persistenced", "535.171.04-1"),
                     ("firmware-nvidia-gsp", "535.309.01-0+deb12u1"), ("libnvidia-ml1", "535.309.01-0+deb12u1"), ("bash", "5.2"))
FAILED_595 = nd.parse_dpkg_query("nvidia-open-595\t595.71.05-1\tamd64\tiF\n" + "".join(
    "%s\t%s\tamd64\tii\n" % (i["name"], i["version"]) for i in R580 if i["name"] != "nvidia-open"))
# the decision's own keys (the planner's result has the rest)
OWN = ("fm_names", "persistenced_manage")


def role_options(**over):
    return mod.options(dict({"nvidia_driver_profile": "server"}, **{"nvidia_driver_" + k: v for k, v in over.items()}))


def facts(**read):
    return dict(read, host={}, request={}, system=dict(SYSTEM), paths=dict(PATHS))


def first(plan, opts, read):
    return mod.decide(plan, opts, facts(**read), data_path=FROZEN)


def later(decided, opts, read, **new):
    return mod.decide(decided["plan"], opts, dict(facts(**read), decided=decided, **new), data_path=FROZEN)


def planner(plan, opts, all_facts):
    """The planner with every fact at once: what the role's YAML computed before (the filter, on the same plan)."""
    return ndp.decide(DATA, mod.planner_options(opts, facts()), plan, host={}, facts=all_facts)


def same(decision, full):
    got = {k: v for k, v in decision.items() if k not in OWN + ("plan",)}
    return got == full


# --- options -----------------------------------------------------------------------------------------------------

def test_options_are_the_argument_specs_typed():
    opts = mod.options({"nvidia_driver_change_branch": "true", "nvidia_driver_branch": 580, "cuda_method": "distro"})
    assert opts["nvidia_driver_change_branch"] is True and opts["nvidia_driver_method"] == "" and "cuda_method" not in opts
    assert opts["nvidia_driver_persistenced"] is True and opts["nvidia_driver_keep_dir"] == "/var/backups/dlbox-nvidia-driver"
    o = mod.planner_options(opts, facts())
    assert o["branch"] == "580" and o["pin_name"] == "dlbox-00-nvidia-driver-branch.pref" and o["request_text"] == "{}"
    assert o == dict(planner_opts(branch="580", change_branch=True, profile="", method="", unattended_signed="together"))


# --- decided once, updated with each later fact -----------------------------------------------------------------

def test_a_branch_change_updated_step_by_step_is_the_planners_decision_with_every_fact():
    opts = role_options(method="nvidia_repo", branch="595", change_branch=True)
    plan = repo_plan(595)
    base = {"installed": R580}
    decided = first(plan, opts, base)
    assert decided["ok"] and decided["change"]["action"] == "change" and decided["plan"]["source"] == "dlbox_plan"
    assert same(decided, planner(plan, opts, base))
    archives = ["nvidia-open_580.95.05-1_amd64.deb"]
    kept = later(decided, opts, base, archives=archives)["kept"]
    assert kept == planner(plan, opts, dict(base, archives=archives))["kept"]
    probe = {"simulation": {"rc": 0, "stdout": SIM_595, "stderr": ""}, "madison": MADISON}
    judged = later(decided, opts, dict(base, **probe), pending=False)
    assert same(judged, planner(plan, opts, dict(base, pending=False, **probe)))
    assert judged["install_names"] == ["nvidia-open-595=595.71.05-1", "nvidia-driver-pinning-595=595.71.05-1"]
    after = installed(*[(n, "595.71.05-1") for n in ("nvidia-open-595", "nvidia-driver", "nvidia-driver-cuda",
                                                     "nvidia-kernel-open-dkms", "nvidia-driver-pinning-595")])
    done = later(judged, opts, base, after=after)
    assert same(done, planner(plan, opts, dict(base, pending=False, after=after, **probe)))
    assert done["after"]["problems"] == [] and done["after"]["version"] == "595.71.05"
    back = later(judged, opts, base, failed=FAILED_595, kept=kept)["rollback"]
    assert back == planner(plan, opts, dict(base, failed=FAILED_595, kept=kept))["rollback"]
    assert back["purge"] == ["nvidia-open-595"] and back["branch"] == 580


def test_the_distro_check_after_the_install_updated_is_the_planners():
    opts = role_options()
    sim = {"simulation": {"rc": 0, "stdout": fixture("debian12-apt-get-s-install-compute-set.txt"), "stderr": ""}}
    decided = later(first(debian_plan(), opts, {"installed": []}), opts, dict(sim, installed=[]))
    bad = [dict(i, version="535.261.03-1") if i["name"] == "firmware-nvidia-gsp" else i for i in GOOD_535]
    for after, problems in ((GOOD_535, 0), (bad, 1)):
        done = later(decided, opts, {"installed": []}, after=after)
        assert same(done, planner(debian_plan(), opts, dict(sim, installed=[], after=after)))
        assert len(done["after"]["problems"]) == problems
    assert done["holds"] == ["nvidia-kernel-dkms", "nvidia-smi", "libcuda1", "nvidia-persistenced", "firmware-nvidia-gsp"]


def test_an_update_neither_resolves_the_plan_nor_decides_again(monkeypatch):
    opts = role_options(method="nvidia_repo", branch="595", change_branch=True)
    decided = first(repo_plan(595), opts, {"installed": R580})

    def forbidden(*_args, **_kwargs):
        raise AssertionError("the plan was worked out again")
    monkeypatch.setattr(ndp, "decide", forbidden)
    monkeypatch.setattr(role_plan, "role_plan", forbidden)
    monkeypatch.setattr(role_plan, "resolve", forbidden)
    kept = later(decided, opts, {"installed": R580}, archives=[])
    assert kept["ok"] and [k["source"] for k in kept["kept"]] == ["repack"] * (len(R580) - 1)
    judged = later(decided, opts, {"installed": R580, "simulation": {"rc": 0, "stdout": SIM_595}, "madison": MADISON})
    assert judged["target_version"] == "595.71.05"


def test_the_kept_decision_is_not_changed_by_an_update():
    opts = role_options(method="nvidia_repo", branch="595", change_branch=True)
    decided = first(repo_plan(595), opts, {"installed": R580})
    before = copy.deepcopy(decided)
    later(decided, opts, {"installed": R580, "simulation": {"rc": 0, "stdout": SIM_595}, "madison": MADISON})
    assert decided == before


def test_a_refused_decision_stays_refused_through_an_update():
    opts = role_options(method="nvidia_repo", branch="595")            # R580 installed, no change asked: refused
    decided = first(repo_plan(595), opts, {"installed": R580})
    assert not decided["ok"] and decided["change"]["action"] == "refuse"
    again = later(decided, opts, {"installed": R580, "simulation": {"rc": 0, "stdout": SIM_595}, "madison": MADISON})
    assert again["errors"] == decided["errors"] and "install_names" not in again


# --- the decisions that were YAML: Fabric Manager's names, nvidia-persistenced -----------------------------------

def test_fabric_manager_names_exact_after_apts_verdict():
    opts = role_options(method="nvidia_repo", branch="595", change_branch=True)
    judged = later(first(repo_plan(595), opts, {"installed": R580}), opts,
                   {"installed": R580, "simulation": {"rc": 0, "stdout": SIM_595}, "madison": MADISON})
    assert judged["fm_install_names"] == ["nvidia-fabricmanager=595.71.05-1"]
    assert judged["fm_names"] == ["nvidia-fabricmanager=595.71.05-1"]


def test_fabric_manager_names_in_check_mode_before_the_repository_are_the_planners():
    """Check mode with NVIDIA's repository not set up yet (pending): no exact FM version is known, fm.version is
    "<driver>-*", and the planner names that (the one place, rt47 L1; the role module's copy of this rule is gone)."""
    opts = role_options(method="nvidia_repo", branch="580")
    decided = later(first(repo_plan(580), opts, {"installed": []}), opts, {"installed": []}, pending=True)
    assert decided["fm_install_names"] == ["nvidia-fabricmanager=580.95.05-*"] and decided["fm"]["version"] == "580.95.05-*"
    assert decided["fm_names"] == ["nvidia-fabricmanager=580.95.05-*"]
    assert mod.fm_names({"fm_install_names": [], "fabric_manager": None, "fm": {"version": "1"}}) == []
    assert mod.fm_names({"fabric_manager": {"package": "nvidia-fabricmanager"}, "fm": {"version": None}}) == []


def test_fabric_manager_names_carry_the_nvlink_companions():
    decision = {"fm_install_names": ["nvidia-fabricmanager-580=580.178.04-0ubuntu0.22.04.1"],
                "fabric_install_names": ["libnvidia-nscq-580=580.178.04-0ubuntu0.22.04.1"],
                "fabric_manager": {"package": "nvidia-fabricmanager-580"}, "fm": {"version": "580.178.04-0ubuntu0.22.04.1"}}
    assert mod.fm_names(decision) == ["nvidia-fabricmanager-580=580.178.04-0ubuntu0.22.04.1",
                                      "libnvidia-nscq-580=580.178.04-0ubuntu0.22.04.1"]
    # the planner's names only (rt47 L1): no second rule builds Fabric Manager's name from fm.version
    assert mod.fm_names(dict(decision, fm_install_names=[])) == ["libnvidia-nscq-580=580.178.04-0ubuntu0.22.04.1"]


@pytest.mark.parametrize(("profile", "persistenced", "systemd", "manage"), [
    ("server", True, True, True), ("desktop", True, True, False), ("server", False, True, False),
    ("server", True, False, False), ("server", "false", True, False)])
def test_the_role_runs_nvidia_persistenced_on_the_server_profile_with_systemd(profile, persistenced, systemd, manage):
    opts = mod.options({"nvidia_driver_profile": profile, "nvidia_driver_persistenced": persistenced})
    decided = first(debian_plan(), opts, {"installed": [], "systemd": systemd})
    assert decided["profile"] == profile and decided["persistenced_manage"] is manage


def test_persistenced_follows_the_decided_profile_not_the_variable():
    # the installed R580 is NVIDIA's repository's desktop set; the variable's profile is what the plan's would be
    assert mod.persistenced_manage({"profile": "desktop"}, role_options(), {"systemd": True}) is False
    assert mod.persistenced_manage({"profile": "server"}, role_options(profile="desktop"), {"systemd": True}) is True


# --- needs ----------------------------------------------------------------------------------------------------------

def test_needs_before_and_after_apts_verdict():
    opts = role_options(method="nvidia_repo", branch="595", change_branch=True)
    decided = first(repo_plan(595), opts, {"installed": R580})
    assert mod.needs(decided) == {"apt": ["nvidia-open-595", "nvidia-driver-pinning-595", "nvidia-fabricmanager"],
                                  "repositories": ["cuda"]}
    judged = later(decided, opts, {"installed": R580, "simulation": {"rc": 0, "stdout": SIM_595}, "madison": MADISON})
    assert mod.needs(judged) == {"apt": ["nvidia-open-595=595.71.05-1", "nvidia-driver-pinning-595=595.71.05-1",
                                         "nvidia-fabricmanager=595.71.05-1"], "repositories": ["cuda"]}
    assert mod.needs(first(debian_plan(), role_options(), {"installed": []}))["repositories"] == []
    refused = first(repo_plan(595), role_options(method="nvidia_repo", branch="595"), {"installed": R580})
    assert mod.needs(refused) == {"apt": [], "repositories": []}


# --- through the one filter -----------------------------------------------------------------------------------------

def test_the_filter_reaches_it_and_a_later_fact_goes_through_the_same_entry_point():
    assert "nvidia_driver" in roles.DECIDERS
    got = role_decide("nvidia_driver", None, {"nvidia_driver_method": "distro", "other_role_var": 1},
                      dict(facts(installed=[]), hardware=A100))
    assert got["ok"], got["errors"]
    assert got["plan"]["source"] == "resolved" and got["options"]["nvidia_driver_method"] == "distro"
    assert "other_role_var" not in got["options"] and got["needs"]["apt"] == got["set"]["packages"]
    again = role_decide("nvidia_driver", got["plan"], got["options"], dict(facts(installed=[]), decided=got, archives=[]))
    assert again["plan"] == got["plan"] and again["set"] == got["set"]
    with pytest.raises(AnsibleFilterError, match="nvidia_driver_method must be one of"):
        role_decide("nvidia_driver", None, {"nvidia_driver_method": "runfile"}, facts(installed=[]))
