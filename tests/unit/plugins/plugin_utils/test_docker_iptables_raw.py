"""The docker role on a Jetson kernel without the iptables raw table (issue 52): plugins/plugin_utils/roles/docker.py
(iptables_raw_plan), the filter dlbox.stack.docker_iptables_raw, data/docker.yml and the role's probe
(roles/docker/vars/main.yml __docker_iptables_raw_probe) run by sh on stand-in files.

Real outputs the cases are made of (each cited where it is used):
- /etc/nv_tegra_release of an AGX Orin on L4T R36.4.3 and R36.4.4: tests/fixtures/jetson/nv_tegra_release/ (REAL, see
  tests/fixtures/jetson/SOURCES.md);
- `zgrep IP_NF_RAW /proc/config.gz` -> `# CONFIG_IP_NF_RAW is not set` on an Orin Nano Super with L4T R36.4.3, whose
  /lib/modules has no iptable_raw.ko (moby/moby#49557, comments of 2025-03-03 and 2025-03-06);
- Ubuntu 22.04's docker.io from jammy-updates: `Get:7 http://archive.ubuntu.com/ubuntu jammy-updates/universe amd64
  docker.io amd64 28.2.2-0ubuntu1~22.04.1` (an apt log in this project's library, file id 24237152071), the version
  TommyChangUMD/ros-humble-ros1-bridge-builder#29 (Orin NX, JetPack 6.2, Docker 28.2.2) failed with;
- Docker CE's jammy version string `5:27.5.1-1~ubuntu.22.04~jammy` (jetsonhacks/install-docker#1, the downgrade);
- the probe's own output on this project's build machine (Debian 12 kernel with /proc/config.gz, no kmod, bash's apt
  candidate), captured 2026-12-06 with the R36.4.3 header copied in: CAPTURED_HERE below.
The kernel config line of an L4T R36.4.4 kernel (`CONFIG_IP_NF_RAW=m`) is not quoted anywhere stored here: the cases
with it are FIXTURES in Kconfig's own format (as in the kernel's tools/testing/selftests/net/netfilter/config).
"""

from __future__ import annotations

import gzip
import os
import stat
import subprocess
from pathlib import Path

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from retired_filters import docker_iptables_raw  # pylint: disable=import-error
from ansible_collections.dlbox.stack.plugins.plugin_utils.roles import _vendor
from ansible_collections.dlbox.stack.plugins.plugin_utils.roles import docker as role

ROOT = Path(__file__).resolve().parents[4]
TEGRA = ROOT / "tests" / "fixtures" / "jetson" / "nv_tegra_release"
R3643 = (TEGRA / "agx-orin-r36.4.3.txt").read_text().splitlines()[0]
R3644 = (TEGRA / "agx-orin-r36.4.4.txt").read_text().splitlines()[0]
DATA = yaml.safe_load((ROOT / "data" / "docker.yml").read_text())["iptables_raw"]
UNSET = "# CONFIG_IP_NF_RAW is not set"          # moby/moby#49557, L4T R36.4.3
JAMMY_DOCKER_IO = "28.2.2-0ubuntu1~22.04.1"      # jammy-updates (library file id 24237152071)
CE_27 = "5:27.5.1-1~ubuntu.22.04~jammy"          # jetsonhacks/install-docker#1

# The probe on this project's build machine (Debian 12, 2026-12-06), /etc/nv_tegra_release being the R36.4.3 fixture
CAPTURED_HERE = """l4t=# R36 (release), REVISION: 4.3, GCID: 38968081, BOARD: generic, EABI: aarch64, DATE: Wed Jan  8 01:49:37 UTC 2025
config=/proc/config.gz
config_line=CONFIG_IP_NF_RAW=y
module_rc=127
module=
tables=
candidate=5.2.15-2+b13
"""


def probe(l4t=R3643, config="/proc/config.gz", line=UNSET, module_rc=1, module="", tables="", candidate=JAMMY_DOCKER_IO):
    out = ["l4t=%s" % l4t] if l4t else []
    if config:
        out += ["config=%s" % config, "config_line=%s" % line]
    out += ["module_rc=%s" % module_rc, "module=%s" % module, "tables=%s" % tables, "candidate=%s" % candidate]
    return "\n".join(out) + "\n"


# --- the decision -------------------------------------------------------------------------------------------------

def test_jetpack_62_with_jammy_docker_io_28_gets_the_drop_in():
    got = role.iptables_raw_plan(probe(), data=DATA)
    assert got["action"] == "dropin" and got["env"] == {"DOCKER_INSECURE_NO_IPTABLES_RAW": "1"}
    assert (got["l4t"], got["kernel"], got["engine"]) == ("36.4.3", "missing", "28.2.2")
    assert UNSET in got["evidence"] and "127.0.0.1" in got["msg"] and "JetPack 6.2.1 (L4T 36.4.4)" in got["msg"]


def test_the_workaround_off_refuses_naming_the_l4t_that_has_the_table():
    got = role.iptables_raw_plan(probe(), installed=JAMMY_DOCKER_IO, workaround=False, data=DATA)
    assert got["action"] == "refuse" and got["env"] == {}
    assert "JetPack 6.2.1 (L4T 36.4.4)" in got["msg"] and "docker_iptables_raw_workaround" in got["msg"]
    assert "nothing was changed" in got["msg"]


@pytest.mark.parametrize("line", ["CONFIG_IP_NF_RAW=m", "CONFIG_IP_NF_RAW=y"])
def test_a_kernel_with_the_table_is_left_alone(line):
    # L4T R36.4.4's header (REAL); its config line a FIXTURE in Kconfig's format
    got = role.iptables_raw_plan(probe(l4t=R3644, line=line), data=DATA)
    assert (got["action"], got["kernel"], got["l4t"]) == ("none", "present", "36.4.4")


def test_the_probe_captured_here_reads_present():
    got = role.iptables_raw_plan(CAPTURED_HERE, data=DATA)
    assert (got["action"], got["kernel"]) == ("none", "present")
    assert got["evidence"] == "/proc/config.gz: CONFIG_IP_NF_RAW=y"


def test_a_loaded_raw_table_beats_the_config():
    assert role.kernel_raw_table(role.parse_raw_probe(probe(tables="filter raw nat")))[0] == "present"


def test_a_readable_config_without_the_option_is_missing():
    # CONFIG_IP_NF_IPTABLES off hides the option: Kconfig writes no line for it
    assert role.kernel_raw_table(role.parse_raw_probe(probe(line="")))[0] == "missing"


def test_modinfo_finding_the_module_without_a_config_is_present_and_silence_is_unknown():
    found = role.parse_raw_probe(probe(config="", module_rc=0, module="(builtin)"))
    assert role.kernel_raw_table(found) == ("present", "modinfo iptable_raw: (builtin)")
    silent = role.parse_raw_probe(probe(config="", module_rc=1))
    assert role.kernel_raw_table(silent)[0] == "unknown"
    got = role.iptables_raw_plan(probe(config="", module_rc=127), data=DATA)
    assert got["action"] == "none" and got["kernel"] == "unknown" and "could not tell" in got["msg"]


def test_a_host_that_is_not_a_jetson_is_never_changed():
    # the probe prints nothing without /etc/nv_tegra_release (the molecule docker scenario's Debian host)
    for workaround in (True, False):
        got = role.iptables_raw_plan("", installed="20.10.24+dfsg1-1+b3", workaround=workaround, data=DATA)
        assert (got["action"], got["jetson"], got["kernel"]) == ("none", False, None)
    # a probe without its l4t line (a broken /etc/nv_tegra_release) is no Jetson either
    assert role.iptables_raw_plan(probe(l4t=""), data=DATA)["action"] == "none"


def test_an_engine_older_than_28_needs_nothing_even_when_pinned_below_apt():
    got = role.iptables_raw_plan(probe(candidate="5:29.1.2-1~ubuntu.22.04~jammy"), installed=CE_27, pinned=CE_27,
                                 workaround=False, data=DATA)
    assert (got["action"], got["engine"]) == ("none", "27.5.1")


def test_an_installed_27_with_28_coming_from_apt_is_decided_on_28():
    got = role.iptables_raw_plan(probe(candidate=JAMMY_DOCKER_IO), installed="24.0.7-0ubuntu2~22.04.1", data=DATA)
    assert (got["action"], got["engine"]) == ("dropin", "28.2.2")


@pytest.mark.parametrize("engine", ["28.0.0-0ubuntu1", "5:28.0.1-1~ubuntu.22.04~jammy"])
def test_28_0_0_and_28_0_1_are_refused_either_way(engine):
    for workaround in (True, False):
        got = role.iptables_raw_plan(probe(candidate=engine), data=DATA, workaround=workaround)
        assert got["action"] == "refuse" and "no opt-out" in got["msg"] and "28.0.2" in got["msg"]


def test_28_0_2_is_the_first_with_the_drop_in():
    assert role.iptables_raw_plan(probe(candidate="5:28.0.2-1~ubuntu.22.04~jammy"), data=DATA)["action"] == "dropin"


def test_an_unknown_engine_counts_as_the_newest():
    # Docker CE before its repository is added: apt has no candidate
    got = role.iptables_raw_plan(probe(candidate="(none)"), data=DATA)
    assert (got["action"], got["engine"]) == ("dropin", None) and "the newest Docker" in got["msg"]


@pytest.mark.parametrize("text, want", [
    (CE_27, (27, 5, 1)), (JAMMY_DOCKER_IO, (28, 2, 2)), ("20.10.24+dfsg1-1+b3", (20, 10, 24)), ("28.0", (28, 0, 0)),
    ("(none)", None), ("", None),
])
def test_version_key(text, want):
    assert role.version_key(text) == want


# --- data/docker.yml ----------------------------------------------------------------------------------------------

def test_the_data_loads_and_the_thresholds_are_the_release_notes():
    data = role.iptables_raw_data()
    got = (data["engine_min"], data["opt_out_min"], data["opt_out_env"])
    assert got == ("28.0.0", "28.0.2", "DOCKER_INSECURE_NO_IPTABLES_RAW")
    assert (data["l4t"]["fixed"], data["l4t"]["fixed_jetpack"]) == ("36.4.4", "6.2.1") and "36.4.3" in data["l4t"]["without"]


@pytest.mark.parametrize("change, words", [
    (lambda d: d["iptables_raw"].pop("opt_out_source"), "iptables_raw.opt_out_source: must name its source"),
    (lambda d: d["iptables_raw"].update(engine_min="28.3.0"), "iptables_raw.opt_out_min: cannot come before engine_min"),
    (lambda d: d["iptables_raw"].update(opt_out_min=28.02), "iptables_raw.opt_out_min: must be a quoted version"),
    (lambda d: d["iptables_raw"]["l4t"].update(fixed="R36.4.4"), "iptables_raw.l4t.fixed"),
    (lambda d: d["iptables_raw"]["l4t"].pop("source"), "iptables_raw.l4t.source"),
])
def test_a_malformed_data_file_is_refused_naming_the_key(tmp_path, change, words):
    data = yaml.safe_load((ROOT / "data" / "docker.yml").read_text())
    change(data)
    path = tmp_path / "docker.yml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(_vendor.VendorDataError, match="data/docker.yml: " + words.replace(".", r"\.")[:60]):
        role.iptables_raw_data(path)
    with pytest.raises(AnsibleFilterError, match="data/docker.yml"):
        docker_iptables_raw(probe(), data_path=str(path))


# --- the filter ---------------------------------------------------------------------------------------------------

def test_the_filter_passes_the_role_variables():
    got = docker_iptables_raw(probe(), JAMMY_DOCKER_IO, "", False)
    assert got["action"] == "refuse"
    assert docker_iptables_raw(None)["action"] == "none"
    with pytest.raises(AnsibleFilterError, match="must be a boolean"):
        docker_iptables_raw(probe(), "", "", "false")


# --- the probe itself, run by sh on stand-in files ---------------------------------------------------------------

PROBE = yaml.safe_load((ROOT / "roles" / "docker" / "vars" / "main.yml").read_text())["__docker_iptables_raw_probe"]


def _exe(path, text):
    path.write_text("#!/bin/sh\n" + text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def run_probe(tmp_path, tegra=R3643, config=UNSET + "\nCONFIG_IP_NF_SECURITY=m\n", gz=True, tables="filter\nnat\n",
              modinfo_rc=1, candidate=JAMMY_DOCKER_IO):
    """The role's probe with its absolute paths moved under tmp_path and modinfo, apt-cache and uname stubbed."""
    (tmp_path / "bin").mkdir()
    files = {"/etc/nv_tegra_release": tmp_path / "nv_tegra_release", "/proc/config.gz": tmp_path / "config.gz",
             "/boot/config-": tmp_path / "config-", "/proc/net/ip_tables_names": tmp_path / "ip_tables_names"}
    script = PROBE
    for real, stand_in in files.items():
        script = script.replace(real, str(stand_in))
    if tegra is not None:
        files["/etc/nv_tegra_release"].write_text(tegra + "\n# KERNEL_VARIANT: oot\n")
    if config is not None:
        if gz:
            files["/proc/config.gz"].write_bytes(gzip.compress(config.encode()))
        else:
            Path(str(files["/boot/config-"]) + "5.15.148-tegra").write_text(config)
    if tables is not None:
        files["/proc/net/ip_tables_names"].write_text(tables)
    _exe(tmp_path / "bin" / "uname", "echo 5.15.148-tegra\n")
    _exe(tmp_path / "bin" / "modinfo", "[ %d -eq 0 ] && echo /lib/modules/x/iptable_raw.ko\nexit %d\n" % (modinfo_rc, modinfo_rc))
    _exe(tmp_path / "bin" / "apt-cache", "[ \"$2\" = docker.io ] && printf 'docker.io:\\n  Installed: (none)\\n"
                                         "  Candidate: %s\\n  Version table:\\n'\n" % candidate)
    env = dict(os.environ, PATH="%s:%s" % (tmp_path / "bin", os.environ.get("PATH", "")))
    done = subprocess.run(["sh", "-c", script, "dlbox-docker-probe", "docker.io"], capture_output=True, text=True,
                          env=env, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_probe_on_a_jetpack_62_kernel(tmp_path):
    out = run_probe(tmp_path)
    parsed = role.parse_raw_probe(out)
    assert parsed["config_line"] == UNSET and parsed["module_rc"] == 1 and parsed["tables"] == ["filter", "nat"]
    assert parsed["candidate"] == JAMMY_DOCKER_IO and parsed["config"].endswith("config.gz")
    got = role.iptables_raw_plan(out, data=DATA)
    assert (got["action"], got["l4t"], got["engine"]) == ("dropin", "36.4.3", "28.2.2")


def test_the_probe_reads_a_plain_boot_config_when_there_is_no_proc_config(tmp_path):
    out = run_probe(tmp_path, tegra=R3644, config="CONFIG_IP_NF_RAW_X=y\nCONFIG_IP_NF_RAW=m\n", gz=False, tables=None)
    parsed = role.parse_raw_probe(out)
    assert parsed["config"].endswith("config-5.15.148-tegra") and parsed["config_line"] == "CONFIG_IP_NF_RAW=m"
    assert parsed["tables"] == [] and role.iptables_raw_plan(out, data=DATA)["action"] == "none"


def test_the_probe_prints_nothing_without_nv_tegra_release(tmp_path):
    assert run_probe(tmp_path, tegra=None) == ""


# --- the role's wiring (the molecule docker scenario runs the role on Debian, never on a Jetson) ------------------

TASKS = ROOT / "roles" / "docker" / "tasks"


def _tasks(name):
    return yaml.safe_load((TASKS / name).read_text())


def test_the_drop_in_is_written_after_the_install_and_before_daemon_json_and_tags_reach_the_preflight():
    steps = _tasks("main.yml")
    files = [s["ansible.builtin.import_tasks"] for s in steps]
    assert files.index("install.yml") < files.index("iptables_raw.yml") < files.index("configure.yml")
    raw_tags = set(steps[files.index("iptables_raw.yml")]["tags"])
    assert raw_tags <= set(steps[files.index("preflight.yml")]["tags"])


def test_the_preflight_refuses_with_the_decision_and_the_step_writes_or_removes_by_it():
    preflight = _tasks("preflight.yml")
    refusal = next(t for t in preflight if t.get("ansible.builtin.assert", {}).get("that") == "__docker_iptables_raw.action != 'refuse'")
    assert refusal["ansible.builtin.assert"]["fail_msg"] == "{{ __docker_iptables_raw.msg }}"
    # the decision is the role's (role_decide('docker'): docker_iptables_raw_workaround typed as a bool there, see
    # test_docker_decision.py); the preflight keeps its iptables_raw part under the name the steps read
    decide = next(t for t in preflight if "__docker_iptables_raw" in (t.get("ansible.builtin.set_fact") or {}))
    assert decide["ansible.builtin.set_fact"]["__docker_iptables_raw"] == "{{ __docker_decision.iptables_raw }}"
    steps = {t["name"]: t for t in _tasks("iptables_raw.yml")}
    written = next(t for t in steps.values() if "ansible.builtin.copy" in t)
    removed = next(t for t in steps.values() if t.get("ansible.builtin.file", {}).get("state") == "absent")
    assert written["when"] == "__docker_iptables_raw.action == 'dropin'"
    assert removed["when"] == "__docker_iptables_raw.action != 'dropin'"
    restart = next(t for t in steps.values() if "ansible.builtin.command" in t)
    assert "not ansible_check_mode" in restart["when"] and "__docker_systemd_booted" in restart["when"]
