# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""dlbox.stack.python_env on a real Debian 12 container: torch 2.13.0 (CPU) from a local wheelhouse.

The converge built `torch` and `tools` (six 1.16.0), the idempotence run changed nothing, then
side_effect.yml tried bad input, built a changed request of `tools` (six 1.17.0) and failed to build
torch 2.14 (not in the wheelhouse). The tests read the resulting state (collected in one remote run by
files/state.py) and /var/tmp/python_env_side_effect.json.
"""

import base64
import json
from pathlib import Path

import pytest

ROOT = "/opt/dlbox/envs"
ENV = ROOT + "/torch"


@pytest.fixture(scope="module")
def effects(host):
    return json.loads(host.file("/var/tmp/python_env_side_effect.json").content_string)


@pytest.fixture(scope="module")
def state(host):
    script = (Path(__file__).parent.parent / "files" / "state.py").read_bytes()
    return json.loads(host.check_output("echo %s | base64 -d | python3 -" % base64.b64encode(script).decode()))


def _builds(state, name):
    return {k: v for k, v in state["versions"].items() if k.rsplit("-", 1)[0] == name}


def _torch(state):
    (entry,) = _builds(state, "torch").values()
    return entry


def _six(entry):
    return [d["version"] for d in entry["pip_list"] if d["name"] == "six"][0]


def test_torch_imports_from_the_selected_environment(state):
    assert state["import"]["rc"] == 0, state["import"]["stderr"]
    assert state["import"]["stdout"].strip() == "2.13.0+cpu"


def test_names_are_symlinks_into_versions(state):
    for name, target in state["links"].items():
        assert target.startswith("%s/.versions/%s-" % (ROOT, name))


def test_system_python_is_untouched(state):
    assert state["system"]["import_torch"] != 0 and state["system"]["import_six"] != 0
    assert state["system"]["externally_managed"]


def test_changed_request_was_built_beside_and_switched_the_old_one_stays(state):
    tools = {_six(entry): name for name, entry in _builds(state, "tools").items()}
    assert sorted(tools) == ["1.16.0", "1.17.0"]
    assert state["links"]["tools"].endswith(tools["1.17.0"])


def test_failed_build_switched_nothing_and_left_no_folder(state, effects):
    message = effects["failed_build"]
    assert "could not be built" in message and "torch==2.14" in message and "was not switched" in message
    assert len(_builds(state, "torch")) == 1  # the incomplete 2.14 folder was removed
    assert state["import"]["stdout"].startswith("2.13.0+cpu")  # the old one still works, and is selected


def test_rerun_ran_no_pip_at_all(state):
    """converge + idempotence + side effects: torch's pip log holds one download and one install, no more."""
    entry = _torch(state)
    log = entry["pip.log"].splitlines()
    saved = [line for line in log if " Saved ./wheels/" in line]
    installed = [line for line in log if " Processing ./wheels/" in line]
    print("torch's pip log: %d lines; %d files saved by its one download, %d installed by its one install"
          % (len(log), len(saved), len(installed)))
    print("\n".join(saved))
    assert len(saved) == len(installed) == len(entry["pip_list"]) - 1  # every dist but the venv's own pip
    assert entry["pip.log.mtime"] <= entry["manifest.json.mtime"]  # nothing appended after the build


@pytest.mark.parametrize("case, words", [
    ("version", ["python_env_environments[0]", "pytorch='2.99'", "not a release"]),
    ("python", ["python_env_environments[0]", "python='3.9'", "outside PyTorch 2.13"]),
    ("variant", ["python_env_environments[0]", "variant='cu130'", "no NVIDIA GPU"]),
    ("duplicate", ["python_env_environments[1].name", "used twice"]),
])
def test_bad_input_refused_naming_the_variable(effects, case, words):
    message = effects["refusals"][case]
    for word in words:
        assert word in message, message
    assert "nothing was changed" in message.lower()


def test_refusals_changed_nothing(effects):
    assert effects["before"] == effects["after_refusals"]


def test_check_runs_a_matmul_on_the_cpu_and_succeeds_without_gpu(state):
    assert state["check_json"]["rc"] == 0, state["check_json"]["stdout"] + state["check_json"]["stderr"]
    torch = json.loads(state["check_json"]["stdout"])["frameworks"][0]
    assert torch["framework"] == "PyTorch" and torch["version"] == "2.13.0+cpu"
    assert torch["cuda"] is None and torch["gpu_visible"] is False
    assert torch["matmul"]["device"] == "cpu" and torch["matmul"]["tflops"] > 0
    print("dlbox-check CPU matmul: %s TFLOP/s (%dx%d float32, %d in %s s)" % (
        torch["matmul"]["tflops"], torch["matmul"]["n"], torch["matmul"]["n"], torch["matmul"]["iterations"],
        torch["matmul"]["seconds"]))


def test_check_says_no_gpu_and_fails_when_a_gpu_is_required(state):
    assert state["check_require_gpu"]["rc"] == 1
    assert "no GPU visible" in state["check_require_gpu"]["stdout"]
    assert "no GPU: a GPU was expected" in state["check_require_gpu"]["stdout"]


def test_manifest_names_the_stack(state):
    manifest = json.loads(_torch(state)["manifest.json"])
    assert manifest["stack"]["pytorch"]["version"] == "2.13.0"
    assert manifest["stack"]["pytorch"]["variant"] == "cpu"
    assert manifest["python"].startswith("3.11.")
    assert manifest["frameworks"] == {"PyTorch": "2.13.0+cpu"}
    assert manifest["cuda"] == [] and manifest["driver_required"] == []
    assert manifest["driver_floors"]  # from data/compat.yml, for dlbox-check
    assert manifest["gpu_expected"] is False
    assert manifest["requirements"] == ["torch==2.13.0+cpu"]
    assert manifest["path"] == ENV


def test_lock_pins_every_package_with_a_hash(state):
    entry = _torch(state)
    lock = entry["requirements.lock"]
    assert "torch==2.13.0+cpu \\" in lock and "sympy==" in lock and "setuptools==" in lock
    pins = [line for line in lock.splitlines() if "==" in line and not line.startswith("#")]
    hashes = [line for line in lock.splitlines() if "--hash=sha256:" in line]
    assert len(hashes) == len(pins) == len(entry["pip_list"]) - 1


def test_lock_reinstalls_elsewhere_with_require_hashes(host, state):
    cmd = ("rm -rf /var/tmp/relock && python3 -m venv /var/tmp/relock && "
           "/var/tmp/relock/bin/pip install -q --no-compile --no-index --find-links /srv/wheelhouse --require-hashes "
           "-r %s/dlbox/requirements.lock && /var/tmp/relock/bin/python -m pip list --format=json" % ENV)
    result = host.run(cmd)
    assert result.rc == 0, result.stderr
    theirs = json.loads(result.stdout.strip().splitlines()[-1])
    mine = _torch(state)["pip_list"]
    assert sorted((d["name"].lower(), d["version"]) for d in mine) == sorted((d["name"].lower(), d["version"]) for d in theirs)


def test_check_command_is_executable_with_the_environments_python(state):
    for name, entry in state["versions"].items():
        assert entry["check_mode"] == "0o755"
        assert entry["check_shebang"] == "#!%s/.versions/%s/bin/python" % (ROOT, name)


def test_check_runs_the_guides_steps_on_the_cpu_each_timed(state):
    torch = json.loads(state["check_json"]["stdout"])["frameworks"][0]
    steps = {s["name"]: s for s in torch["steps"]}
    assert sorted(steps) == ["autocast", "checkpoint", "compile", "conv", "dataloader"]
    for step in steps.values():
        assert step["ok"] and step["device"] == "cpu" and step["seconds"] > 0, step
    assert "Inductor" in steps["compile"]["detail"]
    assert steps["autocast"]["detail"].startswith("bfloat16 training step")
    assert "worker processes" in steps["dataloader"]["detail"]
    assert "loaded and resumed" in steps["checkpoint"]["detail"]
    print("dlbox-check steps on the CPU: " + ", ".join("%s %.2f s" % (n, s["seconds"]) for n, s in sorted(steps.items())))


def test_check_without_python_headers_fails_naming_the_cause_and_fix(effects):
    got = effects["no_headers"]
    assert got["rc"] == 4, got
    compile_step = [s for s in got["report"]["frameworks"][0]["steps"] if s["name"] == "compile"][0]
    assert compile_step["ok"] is False
    assert "the Python headers are missing" in compile_step["cause"] and "Python.h" in compile_step["cause"]
    assert "python3.11-dev" in compile_step["fix"]
    assert any("compile on cpu failed: the Python headers are missing" in p for p in got["report"]["problems"])
    others = [s for s in got["report"]["frameworks"][0]["steps"] if s["name"] != "compile"]
    assert others and all(s["ok"] for s in others)  # the other steps need no compiler


def test_the_role_puts_the_headers_back_and_the_check_passes(host, effects):
    assert effects["headers_back"]["status"] == 0, effects["headers_back"]["problems"]
    assert host.package("python3.11-dev").is_installed and host.package("g++").is_installed


def test_shared_environment_folders_are_setgid_and_group_writable(state):
    assert state["tools_group"] == "dlbox-lab"
    for path, mode in state["tools_dirs"].items():
        assert int(mode, 8) & 0o2070 == 0o2070, (path, mode)


def test_a_member_of_the_group_installs_into_the_environment_and_an_outsider_cannot(effects):
    assert effects["member"]["rc"] == 0, effects["member"]["stderr"]
    owner, group, _mode = effects["member"]["files"].split()
    assert (owner, group) == ("labmate", "dlbox-lab")  # the setgid folder gave the new files the group
    assert effects["outsider"]["rc"] != 0
    assert "Permission denied" in effects["outsider"]["stderr"] or "not writeable" in effects["outsider"]["stderr"] \
        or "Can not perform a '--user' install" in effects["outsider"]["stderr"], effects["outsider"]["stderr"]


def test_check_with_kernels_on_a_noexec_filesystem_names_it(effects):
    got = effects["noexec"]
    assert got["rc"] == 4, got
    (compile_step,) = [s for s in got["report"]["frameworks"][0]["steps"] if s["name"] == "compile"]
    assert compile_step["ok"] is False
    assert "is mounted noexec" in compile_step["cause"] and "/dev/shm" in compile_step["cause"]
    assert "TORCHINDUCTOR_CACHE_DIR" in compile_step["fix"]
