"""playbooks/edge.yml on the FIXTURE Jetson (molecule/edge/molecule.yml): an x86 Ubuntu 22.04 container dressed as a
Jetson AGX Orin on L4T R36.4.3. Its nv_tegra_release and nvpmodel.conf are REAL files of that module; the Jetson
repositories, their packages (markers, Architecture all) and the nvpmodel / jetson_clocks stubs are FIXTURES. A
pass here says the playbook and the role do the right things to such a host, not that JetPack works."""

import json

import pytest

REPO = "http://127.0.0.1:8089/jetson"
KEYRING = "/etc/apt/keyrings/nvidia-jetson.gpg"
L4T_LIST = "/etc/apt/sources.list.d/nvidia-l4t-apt-source.list"
DIVERTED = "/var/lib/dlbox/jetpack/diverted/nvidia-l4t-apt-source.list"
UNIT = "dlbox-jetson-clocks.service"


def record(host, name):
    return json.loads(host.file(f"/root/dlbox-{name}.json").content_string)


# --- the host as gpu_facts sees it (the fixture's dressing) -------------------------------------------------------
def test_gpu_facts_sees_a_jetson_agx_orin_on_r36_4_3(host):
    jetson = record(host, "gpu-facts-jetson")
    assert jetson["l4t"] == "36.4.3"
    assert jetson["model"] == "NVIDIA Jetson AGX Orin Developer Kit"
    assert jetson["jetpack"] == "6.2"


# --- NVIDIA's Jetson repositories (fixture) ------------------------------------------------------------------------
@pytest.mark.parametrize("repo", ["common", "t234"])
def test_source_for_the_l4t_release_signed_by_the_pinned_key(host, repo):
    source = host.file(f"/etc/apt/sources.list.d/nvidia-jetson-{repo}.sources").content_string
    assert f"URIs: {REPO}/{repo}" in source
    assert "Suites: r36.4" in source and "Components: main" in source
    assert f"Signed-By: {KEYRING}" in source


def test_keyring_holds_the_fixture_key_only(host):
    fingerprint = host.file("/root/dlbox-fixture-fingerprint").content_string.strip()
    out = host.check_output(f"gpg --show-keys --with-colons {KEYRING}")
    assert [line.split(":")[9] for line in out.splitlines() if line.startswith("fpr:")] == [fingerprint]


def test_the_flashed_jetpack_list_is_set_aside_not_deleted(host):
    # at its own path a list without sources (nvidia-l4t-apt-source's postinst edits it in place on an OTA: issue 52 M5)
    assert not [line for line in host.file(L4T_LIST).content_string.splitlines() if line.strip().startswith("deb")]
    assert f"deb {REPO}/common r36.4 main" in host.file(DIVERTED).content_string
    assert L4T_LIST in host.check_output("dpkg-divert --list")


def test_apt_update_is_clean(host):
    out = host.run("apt-get update 2>&1")
    assert out.rc == 0
    assert "Conflicting values" not in out.stdout and not out.stdout.startswith("E:")


# --- JetPack (fixture packages) ------------------------------------------------------------------------------------
@pytest.mark.parametrize("package, version", [
    ("nvidia-jetpack", "6.2+b77"),
    ("nvidia-jetpack-runtime", "6.2+b77"),
    ("nvidia-container", "6.2+b77"),
    ("nvidia-l4t-jetson-multimedia-api", "36.4.3-20250107174145"),   # only the t234 repository has it
])
def test_jetpack_installed_from_the_jetson_repositories(host, package, version):
    pkg = host.package(package)
    assert pkg.is_installed and pkg.version == version


def test_the_jetson_repositories_win_over_ubuntus_nvidia_cudnn(host):
    # Ubuntu's multiverse has nvidia-cudnn 8.2.4.15~cuda11.4 (an installer that pulls nvidia-cuda-toolkit): REAL
    out = host.check_output("apt-cache policy nvidia-cudnn")
    assert "Installed: 6.2+b77" in out and "Candidate: 6.2+b77" in out
    assert not host.package("nvidia-cuda-toolkit").is_installed


@pytest.mark.parametrize("absent", ["cuda-keyring", "nvidia-driver", "cuda-toolkit-12-6", "nvidia-container-toolkit"])
def test_no_x86_or_sbsa_parts(host, absent):
    assert not host.package(absent).is_installed


def test_no_cuda_repository(host):
    out = host.run("grep -rl 'compute/cuda/repos\\|libnvidia-container' /etc/apt/ 2>/dev/null")
    assert out.stdout == ""


# --- PyTorch from NVIDIA's folder of Jetson wheels (a FIXTURE copy, files/jetson_pypi.py) ------------------------
ENV = "/opt/dlbox/envs/pytorch"


def torch_plan(host):
    return json.loads(host.file("/root/dlbox-jetson-torch.json").content_string)


def test_the_environment_asked_for_nvidias_exact_build_of_the_plans_torch(host):
    torch = torch_plan(host)
    # the plan names NVIDIA's exact build since cac443f (was the release, 2.5.0): the environment asks for that build
    assert torch["pytorch"]["version"] == torch["plan"]["version"] and "a0+" in torch["plan"]["version"], torch
    lines = [line for line in host.file(f"{ENV}/dlbox/requirements.in").content_string.splitlines()
             if not line.startswith("#")]
    # and the source's requirement beside it: NVIDIA's nv24.08 build is compiled against NumPy 1.x (data/jetson.yml
    # pytorch_sources nvidia pip_constraints), found in the folder as a lab's wheelhouse holds it (prepare.yml)
    assert sorted(lines) == sorted([f"torch=={torch['pytorch']['version']}", "numpy<2"]), lines


def test_torch_imports_and_is_the_fixture_of_that_build(host):
    plan = torch_plan(host)["pytorch"]
    out = host.check_output(f"{ENV}/bin/python -c 'import torch; print(torch.FIXTURE); print(torch.__version__);"
                            " print(torch.version.cuda)'").splitlines()
    assert out[0].startswith("dlbox FIXTURE torch") and out[1:] == [plan["version"], plan["cuda"]]


def test_numpy_1_from_the_wheelhouse_beside_it(host):
    """The REAL numpy 1.x wheel prepare.yml put in the folder (numpy<2, data/jetson.yml), not NumPy 2."""
    version = host.check_output(f"{ENV}/bin/python -c 'import numpy; print(numpy.__version__)'")
    assert version.startswith("1."), version


def test_the_folder_was_pips_find_links(host):
    torch = torch_plan(host)
    manifest = json.loads(host.file(f"{ENV}/dlbox/manifest.json").content_string)
    assert manifest["pip_index_args"] == ["--no-index", "--find-links", torch["folder"]]
    assert manifest["frameworks"] == {"PyTorch": torch["pytorch"]["version"]}


def test_no_pip_conf_keeps_the_environment_on_an_index(host):
    # a folder of wheels replaces no index: later installs take their dependencies from the site's index as usual
    assert not host.file(f"{ENV}/pip.conf").exists


def test_dlbox_check_reports_the_fixture_torch(host):
    report = json.loads(host.run(f"{ENV}/bin/dlbox-check --json --no-matmul --no-steps --no-require-gpu").stdout)
    plan = torch_plan(host)["pytorch"]
    assert report["status"] == 0, report["problems"]
    assert [(fw["framework"], fw["version"], fw["cuda"]) for fw in report["frameworks"]] == \
        [("PyTorch", plan["version"], plan["cuda"])]


# --- power mode and clocks (stubs) ---------------------------------------------------------------------------------
def test_power_mode_maxn_is_set_and_kept(host):
    assert host.check_output("nvpmodel -q").splitlines() == ["NV Power Mode: MAXN", "0"]
    assert host.file("/var/lib/nvpmodel/status").content_string.startswith("pmode:0000")


@pytest.mark.parametrize("run", ["never-1", "never-2"])
def test_never_records_a_pending_reboot_and_stays_green(host, run):
    result = record(host, "power-" + run)
    assert result["rc"] == 0, "\n".join(result["tail"])
    # nvpmodel asked and the answer "no" cancelled its change: the mode in effect is still the module's default
    assert result["query"] == ["NV Power Mode: MODE_30W", "2"]
    # and the role wrote MAXN to nvpmodel's status, the mode the next boot applies (the stub's FIXTURE reboot does)
    assert (result["status"] or "").startswith("pmode:0000"), result["status"]
    assert "Power mode MAXN (id 0) needs a reboot" in result["pending"]
    assert "the next reboot sets it (pending reboot)" in result["pending"]
    assert "jetpack_power_mode_reboot: if_needed" in result["pending"]


def test_never_changes_nothing_the_second_time(host):
    changed = record(host, "power-never-1")["changed"]
    for task in ("Write the power mode to nvpmodel's status, which the next boot applies (jetpack_power_mode_reboot is never)",
                 "Record the power mode that waits for a reboot (jetpack_power_mode_reboot is never)"):
        assert task in changed, changed
    # the second run finds MAXN in the status while MODE_30W is in effect: pending, nvpmodel not asked again
    assert record(host, "power-never-2")["changed"] == []


def test_if_needed_rebooted_once_through_nvpmodels_prompt(host):
    events = host.file("/opt/dlbox-fixture-jetson/state/events.log").content_string.splitlines()
    assert events.count("reboot") == 1
    # the answer YES went to `nvpmodel -m 0`, which rebooted (the stub's FIXTURE reboot)
    assert events[events.index("reboot") - 1] == "nvpmodel -m 0"
    assert host.file("/opt/dlbox-fixture-jetson/state/boot_id").content_string.strip() != "fixture-boot-1"


def test_the_pending_record_is_gone_once_the_mode_is_set(host):
    assert not host.file("/var/lib/dlbox/jetpack/power-mode-pending").exists


def test_jetson_clocks_runs_from_the_unit_and_at_boot(host):
    unit = host.service(UNIT)
    assert unit.is_enabled and unit.is_running
    assert host.file("/opt/dlbox-fixture-jetson/state/clocks").content_string.strip() == "max"
    # the clocks as they were before, stored for ExecStop (--restore)
    assert host.file("/var/lib/dlbox/jetpack/jetson_clocks.defaults").content_string.strip() == "FIXTURE-CLOCKS default"


def test_stopping_the_unit_puts_the_clocks_back(host):
    with host.sudo():
        host.check_output(f"systemctl stop {UNIT}")
        try:
            assert host.file("/opt/dlbox-fixture-jetson/state/clocks").content_string.strip() == "default"
        finally:
            host.check_output(f"systemctl start {UNIT}")


# --- the fleet summary's record (edge.yml's dlbox_edge) ----------------------------------------------------------
def test_edge_notes_jetpack_l4t_power_mode_and_pytorch_for_the_fleet_summary(host):
    edge = record(host, "edge")
    assert edge == {"jetpack": "6.2", "l4t": "36.4.3", "power_mode": "MAXN", "power_pending": False,
                    "pytorch": torch_plan(host)["pytorch"]["version"]}


# --- check mode (prepare.yml, on the fresh host) -------------------------------------------------------------------
def test_check_mode_on_the_fresh_host_reports_and_changes_nothing(host):
    run = record(host, "check-fresh")
    # the failure's own lines last: CI shows the last lines of a failed verify (tests/scripts/molecule.sh)
    assert run["rc"] == 0, "\n".join(host.file("/root/dlbox-check-fresh.out").content_string.splitlines()[-150:]
                                     + ["--- what failed:"] + run.get("failed", []))
    assert run["unchanged"]
    for task in ("Set that list aside", "Say what would be installed (check mode, repositories not there yet)",
                 "Set the power mode with nvpmodel -m: MAXN",
                 "Say that the unit would be started (check mode, unit not written yet)"):
        assert task in run["changed"], run["changed"]


# --- refusals (prepare.yml, on the fresh host) ---------------------------------------------------------------------
@pytest.mark.parametrize("case", ["not_a_jetson", "l4t_major_change", "power_mode_not_on_this_module",
                                  "pytorch_wheel_missing", "toolkit_from_nvidias_repository_on_l4t"])
def test_refused_before_any_change(host, case):
    result = {r["name"]: r for r in record(host, "refusals")}[case]
    assert result["expect"] in result["msg"], result["msg"]
    assert result["unchanged"], f"{case} changed the host"


def test_the_missing_wheel_refusal_offers_what_the_index_has(host):
    msg = {r["name"]: r for r in record(host, "refusals")}["pytorch_wheel_missing"]["msg"]
    assert "it has 2.8.0" in msg and "/jp6/cu126/+simple/torch/" in msg and "Nothing was changed" in msg


def test_the_l4t_major_refusal_says_why(host):
    msg = {r["name"]: r for r in record(host, "refusals")}["l4t_major_change"]["msg"]
    assert "runs L4T 32.5.1 (R32)" in msg and "SDK Manager or flash.sh" in msg and "nothing was changed" in msg
