"""The fleet summary of a rollout (plugins/plugin_utils/fleet_summary.py, filter dlbox.stack.fleet_summary)."""

from __future__ import annotations

import json

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.dlbox.stack.plugins.action.show_text import text_lines
from ansible_collections.dlbox.stack.plugins.filter import fleet as flt
from ansible_collections.dlbox.stack.plugins.plugin_utils import fleet_summary as fs
from ansible_collections.dlbox.stack.plugins.plugin_utils import workstation_summary as ws

BEFORE = "## packages\n## cuda\n## envs\n## driver_loaded\n## reboot_required\n"
AFTER_GPU = (
    "## packages\nii \tnvidia-driver-580-open\t580.95.05-1\nii \tcuda-toolkit-13-0\t13.0.2-1\n"
    "ii \tlibcudnn9-cuda-13\t9.14.0.64-1\nii \tlibnccl2\t2.28.7-1+cuda13.0\nii \tbuild-essential\t12.9\n"
    "## cuda\n13.0\n## envs\ntorch\t/opt/dlbox/envs/torch/dlbox/manifest.json\n## driver_loaded\n"
    "## reboot_required\nnvidia-driver-580-open\n"
)
AFTER_PLAIN = "## packages\nii \tbuild-essential\t12.9\n## cuda\n## envs\n## driver_loaded\n## reboot_required\n"


def report(after, before=BEFORE):
    """A real per-host report, as the summary role builds it."""
    return ws.summarize(before, after)


@pytest.fixture(name="hostvars")
def hostvars_fixture():
    return {
        "ws-1": {"summary_report": report(AFTER_GPU), "dlbox_scenario": "workstation"},
        "ws-2": {"dlbox_scenario": "workstation",
                 "dlbox_failure": {"task": "Baseline (apt cache, build tools)",
                                   "message": "No package matching\n 'no-such-package' is available"}},
        "ws-3": {"dlbox_scenario": "workstation"},
        "ws-4": {"summary_report": report(AFTER_PLAIN, AFTER_PLAIN), "dlbox_scenario": "workstation"},
    }


def test_rows_one_per_host_in_order_with_status(hostvars):
    rows = fs.fleet_rows(["ws-4", "ws-1", "ws-2", "ws-3"], hostvars)
    assert [(r["host"], r["status"]) for r in rows] == [
        ("ws-4", "unchanged"), ("ws-1", "changed"), ("ws-2", "failed"), ("ws-3", "not run")]
    assert rows[3]["reason"] == "its batch has not run yet"


def test_installed_changed_and_pending_reboot_come_from_the_host_report(hostvars):
    row = fs.fleet_rows(["ws-1"], hostvars)[0]
    assert row["driver"] == "nvidia-driver-580-open 580.95.05-1"
    assert row["cuda"].startswith("cuda-toolkit-13-0 13.0.2-1") and "/usr/local/cuda-13.0" in row["cuda"]
    assert row["cudnn"] == "libcudnn9-cuda-13 9.14.0.64-1"
    assert row["nccl"] == "libnccl2 2.28.7-1+cuda13.0"
    assert row["frameworks"] == "torch"
    assert {"driver", "cuda", "cudnn", "nccl", "environments", "build_tools"} <= set(row["changed"])
    assert row["pending_reboot"] and all("reboot" in p for p in row["pending_reboot"])
    assert row["failure"] is None


def test_a_noop_host_changed_nothing_and_has_no_reboot_pending(hostvars):
    row = fs.fleet_rows(["ws-4"], hostvars)[0]
    assert row["changed"] == [] and row["pending_reboot"] == []
    assert fs.fleet_text([row])[2].split()[-5:] == ["nothing", "no", "-", "-", "-"]   # ... jetson, fitness, failure


def test_failure_keeps_task_and_message_on_one_line(hostvars):
    row = fs.fleet_rows(["ws-2"], hostvars)[0]
    assert row["failure"] == {"task": "Baseline (apt cache, build tools)",
                              "message": "No package matching 'no-such-package' is available"}
    assert row["changed"] is None and row["pending_reboot"] is None


def test_text_table_and_counts(hostvars):
    summary = fs.fleet_summary(["ws-1", "ws-2", "ws-3", "ws-4"], hostvars)
    text = summary["text"]
    assert text[0].split()[:4] == ["host", "scenario", "status", "driver"]
    assert set(text[1]) <= {"-", " "}
    ws2 = next(line for line in text if line.startswith("ws-2"))
    assert "failed" in ws2 and "Baseline (apt cache, build tools): No package matching 'no-such-package'" in ws2
    ws1 = next(line for line in text if line.startswith("ws-1"))
    assert " yes " in ws1
    assert text[-1] == ("4 hosts: 1 changed, 1 unchanged, 1 failed, 0 unreachable, 0 refused, 1 not run, "
                        "1 with a reboot pending, 0 left drained")
    assert summary["counts"] == {"hosts": 4, "changed": 1, "unchanged": 1, "failed": 1, "unreachable": 0,
                                 "refused": 0, "not_run": 1, "pending_reboot": 1, "left_drained": 0}
    # aligned: every row's status column starts at the same offset as the header's
    offset = text[0].index("status")
    assert all(line[offset:].split()[0] in ("changed", "unchanged", "failed", "not") for line in text[2:-1])


def test_markdown_table_escapes_pipes(hostvars):
    hostvars["ws-2"]["dlbox_failure"]["message"] = "a | b"
    md = fs.fleet_summary(["ws-1", "ws-2"], hostvars)["markdown"]
    lines = md.splitlines()
    assert lines[0] == "# Fleet summary"
    assert lines[2].startswith("| host | scenario | status | driver | CUDA | cuDNN | NCCL | frameworks |")
    assert lines[3] == "|" + "---|" * len(fs.COLUMNS)
    assert all(line.count(" | ") == len(fs.COLUMNS) - 1 for line in lines[4:6])
    assert "a \\| b" in md


def test_json_round_trip(hostvars):
    summary = fs.fleet_summary(["ws-1", "ws-2", "ws-3"], hostvars)
    assert json.loads(json.dumps(summary["rows"])) == summary["rows"]


@pytest.mark.parametrize("hosts", ["ws-1", None, [1]])
def test_hosts_must_be_a_list_of_names(hosts):
    with pytest.raises(fs.FleetSummaryError, match="hosts must be a list of host names"):
        fs.fleet_rows(hosts, {})


def test_a_failure_that_is_not_a_mapping_is_refused_naming_the_variable():
    with pytest.raises(fs.FleetSummaryError, match="dlbox_failure of h must be a mapping with task and message"):
        fs.fleet_rows(["h"], {"h": {"dlbox_failure": "boom"}})


def test_a_report_that_is_not_the_summary_roles_is_refused():
    with pytest.raises(fs.FleetSummaryError, match="summary_report of h"):
        fs.fleet_rows(["h"], {"h": {"summary_report": "text"}})


def test_filter_reads_only_its_keys_and_unknown_hosts(hostvars):
    hostvars["ws-1"]["ansible_password"] = "secret"
    out = flt.fleet_summary(hostvars, ["ws-1", "elsewhere"])
    assert [r["status"] for r in out["rows"]] == ["changed", "not run"]
    assert "secret" not in json.dumps(out)
    assert set(flt.FilterModule().filters()) == {
        "fleet_summary", "rollout_serial", "rollout_budget", "rollout_batch", "rollout_site_hosts", "rollout_drain_found",
        "rollout_drain_check_failure"}


def test_filter_refuses_bad_input():
    with pytest.raises(AnsibleFilterError, match="hosts must be a list"):
        flt.fleet_summary({}, "ws-1")
    with pytest.raises(AnsibleFilterError, match="the input must be hostvars"):
        flt.fleet_summary([], ["ws-1"])
    with pytest.raises(AnsibleFilterError, match="dlbox_failure of h"):
        flt.fleet_summary({"h": {"dlbox_failure": 3}}, ["h"])


def test_show_text_lines():
    assert text_lines("a\nb") == ["a", "b"]
    assert text_lines(["a", "b\nc", ""]) == ["a", "b", "c", ""]
    with pytest.raises(ValueError, match="text must be a string or a list of strings, not dict"):
        text_lines({"a": 1})


def test_hosts_not_reached_take_the_play_scenario(hostvars):
    rows = fs.fleet_rows(["ws-3", "ws-1"], {"ws-3": {}, "ws-1": {"dlbox_scenario": "server"}}, scenario="workstation")
    assert [r["scenario"] for r in rows] == ["workstation", "server"]
    with pytest.raises(AnsibleFilterError, match="scenario must be a name"):
        flt.fleet_summary(hostvars, ["ws-1"], scenario=3)


def test_site_plays_give_a_scenario_per_host_and_a_host_without_report_that_finished_is_ok():
    hostvars = {"edge-1": {"dlbox_scenario": "edge", "dlbox_rollout_done": True},
                "srv-1": {}, "ws-1": {"summary_report": report(AFTER_PLAIN, AFTER_PLAIN)}}
    rows = fs.fleet_rows(["ws-1", "srv-1", "edge-1"], hostvars,
                         scenario={"ws-1": "workstation", "srv-1": "server", "edge-1": "edge"})
    assert [(r["host"], r["scenario"], r["status"]) for r in rows] == [
        ("ws-1", "workstation", "unchanged"), ("srv-1", "server", "not run"), ("edge-1", "edge", "changed")]
    assert rows[2]["driver"] is None and rows[2]["changed"] is None
    out = flt.fleet_summary(hostvars, ["edge-1"], scenario={"edge-1": "edge"})
    assert out["counts"]["changed"] == 1
    with pytest.raises(AnsibleFilterError, match="mapping host -> name"):
        flt.fleet_summary(hostvars, ["edge-1"], scenario={"edge-1": 3})


def test_the_fitness_verdict_of_the_same_run_joins_each_row_and_the_markdown_links_the_fleet_report(hostvars):
    hostvars["ws-1"]["dlbox_fitness"] = {"host": "ws-1", "ok": True, "problems": []}
    hostvars["ws-4"]["dlbox_fitness"] = {"host": "ws-4", "ok": False, "problems": ["ram", "data_disk_raid"]}
    out = flt.fleet_summary(hostvars, ["ws-1", "ws-4", "ws-3"])
    assert [r["fitness"] for r in out["rows"]] == ["fit", "NOT fit: ram, data_disk_raid", None]
    assert "| ws-4 | workstation | unchanged |" in out["markdown"] and "| NOT fit: ram, data_disk_raid |" in out["markdown"]
    assert "[../fleet.md](../fleet.md)" in out["markdown"]
    assert "fleet.md" not in fs.fleet_summary(["ws-3"], hostvars)["markdown"]     # no fitness report: no link
    with pytest.raises(AnsibleFilterError, match="dlbox_fitness of ws-3 must be preflight.yml's fitness report"):
        flt.fleet_summary({"ws-3": {"dlbox_fitness": "fit"}}, ["ws-3"])


def test_an_edge_row_shows_jetpack_l4t_power_mode_and_pytorch():
    # what edge.yml leaves on a Jetson (dlbox_edge): the AGX Orin of molecule/edge, MAXN waiting for a reboot
    hostvars = {"orin-1": {"dlbox_scenario": "edge", "dlbox_rollout_done": True,
                           "dlbox_edge": {"jetpack": "6.2", "l4t": "36.4.3", "power_mode": "MAXN", "power_pending": True,
                                          "pytorch": "2.5.0a0+872d972e41.nv24.08.17622132"}},
                "orin-2": {"dlbox_scenario": "edge", "dlbox_rollout_done": True,
                           "dlbox_edge": {"jetpack": "6.2", "l4t": "36.4.3", "power_mode": None, "power_pending": False,
                                          "pytorch": None}}}
    rows = fs.fleet_rows(["orin-1", "orin-2"], hostvars)
    assert rows[0]["jetson"] == "JetPack 6.2 / L4T 36.4.3 / MAXN (pending reboot)"
    assert rows[0]["frameworks"] == "PyTorch 2.5.0a0+872d972e41.nv24.08.17622132"
    assert rows[0]["pending_reboot"] == ["power mode MAXN"]
    assert (rows[1]["jetson"], rows[1]["frameworks"], rows[1]["pending_reboot"]) == \
        ("JetPack 6.2 / L4T 36.4.3 / as it was", None, [])
    text = "\n".join(fs.fleet_text(rows))
    assert "JetPack / L4T / power" in text and "MAXN (pending reboot)" in text
    assert flt.fleet_summary(hostvars, ["orin-1"])["rows"][0]["jetson"].startswith("JetPack 6.2")


def test_an_edge_record_that_is_not_a_mapping_is_refused():
    with pytest.raises(fs.FleetSummaryError, match="dlbox_edge of h must be edge.yml's mapping"):
        fs.fleet_rows(["h"], {"h": {"dlbox_edge": "6.2"}})


# --- every host one status ---------------------------------------------------------------------------------------
def test_unreachable_refused_and_not_run_rows_say_why():
    hostvars = {
        "lost": {"dlbox_scenario": "workstation", "dlbox_rollout_step": "workstation: baseline (common)"},
        "planned-out": {"dlbox_plan": {"ok": False, "errors": ["no driver branch supports GPU 10de:1234"]}},
        "not-a-jetson": {"dlbox_scenario": "edge", "dlbox_rollout_done": True,
                         "dlbox_refusal": {"task": "Refuse a host that is not a Jetson", "message": "no L4T\nhere"}},
        "later-batch": {}, "later-group": {},
    }
    rows = fs.fleet_rows(list(hostvars), hostvars, lost=["lost"], stopped="budget exceeded",
                         played=["lost", "planned-out", "not-a-jetson", "later-batch"])
    by = {r["host"]: r for r in rows}
    assert by["lost"]["status"] == "unreachable" and by["lost"]["step"] == "workstation: baseline (common)"
    assert by["lost"]["reason"] == "lost at: workstation: baseline (common) (interrupted there)"
    assert by["planned-out"]["status"] == "refused"
    assert by["planned-out"]["reason"] == "the plan: no driver branch supports GPU 10de:1234 (nothing was changed)"
    assert by["not-a-jetson"]["status"] == "refused"                           # refused wins over "got to the end"
    assert by["not-a-jetson"]["reason"] == "Refuse a host that is not a Jetson: no L4T here (nothing was changed)"
    assert by["later-batch"]["reason"] == "the rollout stopped before its batch: budget exceeded"
    assert by["later-group"]["reason"] == "the rollout stopped before its group's play: budget exceeded"
    assert {r["status"] for r in rows} <= set(fs.STATUSES)
    summary = fs.fleet_summary(list(hostvars), hostvars, lost=["lost"], stopped="budget exceeded")
    assert summary["stopped"] == "budget exceeded" and summary["text"][-1] == "The rollout stopped: budget exceeded"
    assert "The rollout stopped: budget exceeded" in summary["markdown"]
    assert summary["counts"]["unreachable"] == 1 and summary["counts"]["refused"] == 2


def test_a_failure_wins_over_lost_and_an_unreachable_host_without_step_was_lost_before_its_changes():
    rows = fs.fleet_rows(["a", "b"], {"a": {"dlbox_failure": {"task": "t", "message": "m"}}, "b": {}}, lost=["a", "b"])
    assert [r["status"] for r in rows] == ["failed", "unreachable"]
    assert rows[1]["step"] == "before its changes"


def test_a_refusal_that_is_not_a_mapping_is_refused_naming_the_variable():
    with pytest.raises(fs.FleetSummaryError, match="dlbox_refusal of h must be a mapping"):
        fs.fleet_rows(["h"], {"h": {"dlbox_refusal": "no"}})


# --- batches and the failure budget -----------------------------------------------------------------------------
@pytest.mark.parametrize("value, want", [
    (None, []), ("", []), (0, []), ("0", []), (3, [3]), ("3", [3]), ("25%", ["25%"]), ([1, "25%"], [1, "25%"]),
    ("1,25%", [1, "25%"]), (" 1 , 25 % ", [1, "25%"]), ("[1, '25%']", [1, "25%"]), ("1;2;50%", [1, 2, "50%"]),
])
def test_serial_as_ansible_reads_it_and_as_survey_text(value, want):
    assert fs.parse_serial(value) == want
    assert flt.rollout_serial(value) == want


@pytest.mark.parametrize("value", ["x", "1,x", "0%", "101%", [1, -2], True, "1.5"])
def test_a_bad_serial_is_refused_naming_the_variable(value):
    with pytest.raises(fs.FleetSummaryError, match="dlbox_serial"):
        fs.parse_serial(value)
    with pytest.raises(AnsibleFilterError, match="dlbox_serial"):
        flt.rollout_serial(value)


@pytest.mark.parametrize("value, want", [(None, 100), ("", 100), (0, 0), ("34", 34), ("34%", 34), (12.5, 12.5)])
def test_budget_as_a_number_or_survey_text(value, want):
    assert fs.parse_budget(value) == want


@pytest.mark.parametrize("value", ["lots", -1, 101, "120%", True])
def test_a_bad_budget_is_refused_naming_the_variable(value):
    with pytest.raises(AnsibleFilterError, match="dlbox_max_fail_percentage"):
        flt.rollout_budget(value)


HOSTS10 = ["h%02d" % i for i in range(1, 11)]


@pytest.mark.parametrize("serial, sizes", [
    (0, [10]), (3, [3, 3, 3, 1]), ("25%", [2, 2, 2, 2, 2]), ([1, "25%"], [1, 2, 2, 2, 2, 1]),
    ("1,50%", [1, 5, 4]), ([1, 3, "100%"], [1, 3, 6]), ("5%", [1] * 10),
])
def test_batches_are_ansibles(serial, sizes):
    """As playbook_executor._get_serialized_batches with pct_to_int: a percentage of all the play's hosts, rounded
    down, at least 1; the list's last item repeats."""
    out = fs.batches(HOSTS10, serial)
    assert [len(b) for b in out] == sizes and sum(out, []) == HOSTS10


def verdict(alive, hostvars, serial=3, budget=34, hosts=("a", "b", "c", "d", "e", "f"), counted=(1,)):
    return fs.batch_verdict(list(hosts), alive, hostvars, serial, budget, counted=list(counted))


def test_one_failure_of_three_is_within_34_percent_and_two_are_over():
    out = verdict(["a", "b", "c"], {"b": {"dlbox_failure": {"task": "t", "message": "m"}}})
    got = (out["index"], out["hosts"], out["failed"], out["percent"], out["stop"])
    assert got == (1, ["a", "b", "c"], ["b"], 33.3, False)
    assert out["later"] == ["d", "e", "f"]
    out = verdict(["d", "e", "f"], {"d": {"dlbox_failure": {"task": "t", "message": "m"}},
                                    "e": {"dlbox_failure": {"task": "t", "message": "m"}}})
    assert out["index"] == 2 and out["stop"] and "67%, more than the failure budget dlbox_max_fail_percentage=34%" \
        in out["message"]


def test_an_unreachable_host_counts_against_the_budget():
    """Ansible's max_fail_percentage counts failed hosts only (ansible/ansible#56265): a batch with one failure and
    one host lost is 2 of 3 here. Lost: its own result said so (dlbox_rollout_lost, recorded by rollout_finish.yml after
    asking the host); a host merely missing from the batch is dropped, counted, but named neither failed nor lost."""
    lost = {"f": {"dlbox_rollout_lost": True}}
    out = verdict(["d", "e"], dict(lost, e={"dlbox_failure": {"task": "t", "message": "m"}}))
    assert out["unreachable"] == ["f"] and out["failed"] == ["e"] and out["stop"]
    out = verdict(["d", "e"], lost, budget=34)
    assert out["unreachable"] == ["f"] and not out["stop"]                       # 1 of 3: within 34 %
    out = verdict(["d", "e"], {"e": {"dlbox_failure": {"task": "t", "message": "m"}}})
    assert (out["unreachable"], out["dropped"], out["failed"], out["stop"]) == ([], ["f"], ["e"], True)
    assert out["message"].startswith("2 of the 3 hosts of batch 2 (e, f) failed or were unreachable"), out["message"]


def test_a_batch_whose_hosts_all_fail_stops_whatever_the_budget_and_plan_refusals_count_for_nothing():
    out = verdict(["a"], {"b": {"dlbox_failure": {"task": "t", "message": "m"}},
                          "c": {"dlbox_refusal": {"task": "t", "message": "m"}}}, budget=100)
    assert out["stop"] is False                                                  # a is fine
    out = verdict(["a"], {"a": {"dlbox_failure": {"task": "t", "message": "m"}}}, serial=1, budget=100)
    assert out["stop"] and "no host of the batch was left" in out["message"] and "every host of a batch" in out["message"]
    refused = {"b": {"dlbox_plan": {"ok": False, "errors": ["x"]}}}
    out = verdict(["a", "c"], refused, budget=0)
    assert out["refused"] == ["b"] and out["failed"] == [] and out["unreachable"] == [] and not out["stop"]


def test_a_refused_host_beside_a_failed_one_goes_on_under_budget_100_as_ansible_does():
    """rt50d M1, e2: serial [1, 2], budget 100, batch 2 = [p1 refused by its plan, x1 failed]. Ansible ends a run only
    where the batch's NEW failures are the whole batch (playbook_executor.py: failed_hosts_count == len(batch)); p1
    failed in the plan's play before, so Ansible goes on (rt50d's plain-Ansible run of that shape ran the next batch).
    Before, the rollout stopped here, "no host of the batch was left (Ansible ends the run ...)": a claim Ansible did
    not make, with h2 and h3 "not run"."""
    hosts = ("h1", "p1", "x1", "h2", "h3")
    hostvars = {"p1": {"dlbox_plan": {"ok": False, "errors": ["x"]}}, "x1": {"dlbox_failure": {"task": "t", "message": "m"}}}
    out = verdict(["x1"], hostvars, serial=[1, 2], budget=100, hosts=hosts)
    assert out["index"] == 2 and out["refused"] == ["p1"] and out["failed"] == ["x1"], out
    assert out["percent"] == 50.0 and out["stop"] is False and out["message"] is None, out
    assert out["later"] == ["h2", "h3"]
    # the budget still decides: 1 failed of 2 is over 49 %
    out = verdict(["x1"], hostvars, serial=[1, 2], budget=49, hosts=hosts)
    assert out["stop"] and "50%, more than the failure budget dlbox_max_fail_percentage=49%" in out["message"], out
    # and a batch whose every host failed in it ends the run whatever the budget, as before
    hostvars["p1"] = {"dlbox_failure": {"task": "t", "message": "m"}}
    out = verdict(["x1"], hostvars, serial=[1, 2], budget=100, hosts=hosts)
    assert out["stop"] and "no host of the batch was left" in out["message"], out


def test_a_batch_verdict_needs_a_host_of_the_play():
    with pytest.raises(AnsibleFilterError, match="none of the batch's hosts"):
        flt.rollout_batch({}, ["a"], ["z"], 1, 0)


def test_the_site_hosts_in_group_order_with_their_scenario():
    groups = {"all": ["w1", "s1", "e1", "w2"], "workstations": ["w1", "w2"], "servers": ["s1", "w2"], "edge": ["e1"]}
    out = flt.rollout_site_hosts(groups, {"workstations": "workstation", "servers": "server", "edge": "edge"})
    assert list(out.items()) == [("w1", "workstation"), ("w2", "workstation"), ("s1", "server"), ("e1", "edge")]
    assert flt.rollout_site_hosts(groups, {}) == {}
    with pytest.raises(AnsibleFilterError, match="site_groups must be a mapping"):
        flt.rollout_site_hosts(groups, {"edge": 1})


def test_a_batch_that_lost_every_host_it_had_left_is_counted_at_the_next_batchs_end():
    """Batch 1 [a, b]: a refused by its plan (failed in the plan play), b lost: no host of it gets to its end, and
    Ansible goes on (1 unreachable of 2 is not the whole batch to it). At the end of batch 2 the rollout counts batch
    1 too: b is unreachable, and batch 1 was over the budget, so the rollout stops here."""
    hostvars = {"a": {"dlbox_plan": {"ok": False, "errors": ["x"]}}, "c": {"dlbox_rollout_done": True}}
    asked = fs.batch_verdict(["a", "b", "c", "d"], ["c"], hostvars, [2, 1], 34, counted=[])
    assert asked["dropped"] == ["b"] and asked["unreachable"] == [] and asked["stop"]   # to ask (rollout_finish.yml)
    hostvars["b"] = {"dlbox_rollout_lost": True}                                      # it did not answer
    out = fs.batch_verdict(["a", "b", "c", "d"], ["c"], hostvars, [2, 1], 34, counted=[])
    assert out["index"] == 2 and out["missed"] == [1] and out["unreachable"] == ["b"] and out["dropped"] == []
    assert out["stop"] and out["message"].startswith("1 of the 2 hosts of batch 1 (b) failed or were unreachable")
    assert out["message"].endswith("(counted at the end of batch 2: no host of it was left)")
    assert out["later"] == ["d"]
    out = fs.batch_verdict(["a", "b", "c", "d"], ["c"], hostvars, [2, 1], 34, counted=[1])
    assert out["missed"] == [] and out["unreachable"] == [] and not out["stop"]


@pytest.mark.parametrize("size, bad, budget", [
    (2, 1, 50), (2, 1, 49), (3, 1, 34), (3, 1, 33), (4, 1, 25), (4, 1, 24), (4, 2, 50), (5, 2, 40), (5, 3, 60),
    (6, 2, 34), (6, 2, 33), (3, 2, 100), (4, 3, 74),
])
def test_the_budget_is_ansibles_comparison_with_the_unreachable_counted(size, bad, budget):
    """linear.py's check, ``len(failed_hosts) / batch_size > max_fail_percentage / 100.0`` (MORE than the budget stops;
    exactly at it goes on), with the lost hosts added to the failed: half of the bad hosts fail, the rest are lost.
    A batch short of every host bad stops only over the budget."""
    hosts = ["h%d" % i for i in range(size)]
    failed = hosts[:(bad + 1) // 2]
    lost = hosts[len(failed):bad]
    hostvars = {h: {"dlbox_failure": {"task": "t", "message": "m"}} for h in failed}
    hostvars.update({h: {"dlbox_rollout_lost": True} for h in lost})             # their own result said so
    out = fs.batch_verdict(hosts, [h for h in hosts if h not in lost], hostvars, size, budget)
    assert (out["failed"], out["unreachable"], out["dropped"]) == (failed, lost, [])
    assert out["stop"] is (bad / size > budget / 100.0), out
    assert bool(out["message"]) is out["stop"]


class _Inventory:
    def __init__(self, hosts):
        self.hosts = hosts

    def get_hosts(self, _pattern, order=None):    # pylint: disable=unused-argument
        return list(self.hosts)


class _Play:
    hosts = "all"
    order = None

    def __init__(self, serial):
        self.serial = serial


class _Executor:
    def __init__(self, hosts):
        self._inventory = _Inventory(hosts)


@pytest.mark.parametrize("serial", [0, 1, 3, "29%", "35%", "50%", "100%", [1, "25%"], "1,50%", [2, "33%", 1],
                                    "1,10%", [1, 3, "100%"]])
@pytest.mark.parametrize("count", [1, 2, 3, 4, 7, 10, 13, 100])
def test_batches_equal_ansibles_own(serial, count):
    """The same batches as Ansible's own PlaybookExecutor._get_serialized_batches (pct_to_int: a percentage of all the
    play's hosts, its float rounded down, at least 1), given the serial list rollout_serial hands the play."""
    from ansible.executor.playbook_executor import PlaybookExecutor  # pylint: disable=import-outside-toplevel
    hosts = ["h%03d" % i for i in range(count)]
    want = PlaybookExecutor._get_serialized_batches(_Executor(hosts), _Play(fs.parse_serial(serial)))  # pylint: disable=protected-access
    assert fs.batches(hosts, serial) == want
