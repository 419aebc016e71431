# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Why the cuda and cuda_repo preflights keep their type asserts beside meta/argument_specs.yml (issue 47 red team:
"asserts that repeat what the argument spec enforces"). Run with real Ansible (connection local, ansible-core 2.19):

- a role's argument validation only asks whether a value CAN be converted to the spec's type, and leaves the variable
  as it was given: `cuda_versions: "12.8"` passes `type: list` (a string is split on commas), `cuda_default_version:
  12.8` passes `type: str`, `cuda_hold: "yes"` passes `type: bool`, `cuda_local_repo_debs: "a=b"` passes `type: dict`
  - and the tasks then read the string, the float, the string. The preflight's assert refuses each, naming it;
- cuda_repo's preflight also runs without any validation: playbooks/mirror.yml includes it with
  `tasks_from: preflight.yml`, an entry point its argument specs do not have, so there its asserts are the only check.

The choices (cuda_method) are the spec's alone (no preflight assert repeats them: test_one_place)."""

from __future__ import annotations

from pathlib import Path

import yaml

from play_runner import run_play  # tests/unit/roles/play_runner.py, beside this file

ROOT = Path(__file__).resolve().parents[3]


def _role(role):
    spec = yaml.safe_load((ROOT / "roles" / role / "meta" / "argument_specs.yml").read_text(encoding="utf-8"))
    preflight = yaml.safe_load((ROOT / "roles" / role / "tasks" / "preflight.yml").read_text(encoding="utf-8"))
    return spec["argument_specs"]["main"]["options"], preflight


def _validate(options):
    """The role's own argument validation, as Ansible runs it at the role's start (main entry point)."""
    return {"name": "validate", "ansible.builtin.validate_argument_spec": {
        "argument_spec": options,
        "provided_arguments": "{{ dict(%r | zip(%r | map('extract', vars))) }}" % (list(options), list(options))}}


def test_the_spec_passes_what_the_cuda_preflight_refuses(tmp_path):
    options, preflight = _role("cuda")
    check = next(t for t in preflight if t["name"] == "Check the scalar variables")
    defaults = {k: v.get("default") for k, v in options.items()}
    cases = {"versions-string": {"cuda_versions": "12.8"}, "default-float": {"cuda_default_version": 12.8},
             "hold-yes": {"cuda_hold": "yes"}, "debs-string": {"cuda_local_repo_debs": "a=b"}, "good": {}}
    hostvars = {h: dict(defaults, ansible_connection="local", ansible_python_interpreter="{{ ansible_playbook_python }}", **v)
                for h, v in cases.items()}
    # the control: a value the spec cannot convert is refused by the validation itself (so it did run)
    hostvars["control"] = dict(hostvars["good"], cuda_local_repo_debs="not a mapping")
    proc, out = run_play(tmp_path, {"hosts": "all", "gather_facts": False, "tasks": [_validate(options), check]}, hostvars)
    assert out is not None, proc.stderr
    tasks = {t["task"]["name"]: t["hosts"] for t in out["plays"][0]["tasks"]}
    assert tasks["validate"]["control"].get("failed") and "cuda_local_repo_debs" in tasks["validate"]["control"]["msg"]
    for host in cases:
        assert not tasks["validate"][host].get("failed"), (host, tasks["validate"][host])      # the spec passes it
    for host in set(cases) - {"good"}:
        assert tasks["Check the scalar variables"][host].get("failed"), host                   # the preflight does not
        assert "Nothing was changed" in tasks["Check the scalar variables"][host]["msg"]
    assert not tasks["Check the scalar variables"]["good"].get("failed")


def test_cuda_repo_preflight_runs_without_validation_in_mirror_yml():
    mirror = (ROOT / "playbooks" / "mirror.yml").read_text(encoding="utf-8")
    assert "name: dlbox.stack.cuda_repo\n            tasks_from: preflight.yml" in mirror
    spec = yaml.safe_load((ROOT / "roles" / "cuda_repo" / "meta" / "argument_specs.yml").read_text(encoding="utf-8"))
    assert set(spec["argument_specs"]) == {"main"}          # no 'preflight' entry point: nothing validates that include


def test_the_spec_passes_what_the_cuda_repo_preflight_refuses(tmp_path):
    options, preflight = _role("cuda_repo")
    checks = [t for t in preflight if t["name"] in ("Check cuda_repo_consumer", "Check cuda_repo_packages")]
    defaults = {k: v.get("default") for k, v in options.items()}
    base = dict(defaults, cuda_repo_consumer="cuda", cuda_repo_packages=["cuda-toolkit-13-0"])
    cases = {"packages-string": {"cuda_repo_packages": "cuda-toolkit-13-0"}, "consumer-int": {"cuda_repo_consumer": 5},
             "package-int": {"cuda_repo_packages": ["cuda-toolkit-13-0", 7]}, "good": {}}
    hostvars = {h: dict(base, ansible_connection="local", ansible_python_interpreter="{{ ansible_playbook_python }}", **v)
                for h, v in cases.items()}
    hostvars["control"] = dict(hostvars["good"], cuda_repo_packages={"cuda-toolkit-13-0": 1})    # the spec refuses it
    proc, out = run_play(tmp_path, {"hosts": "all", "gather_facts": False, "tasks": [_validate(options)] + checks}, hostvars)
    assert out is not None, proc.stderr
    stats = out["stats"]
    validate = next(t["hosts"] for t in out["plays"][0]["tasks"] if t["task"]["name"] == "validate")
    assert validate["control"].get("failed") and "cuda_repo_packages" in validate["control"]["msg"]
    for host in cases:
        assert not validate[host].get("failed"), (host, validate[host])
    assert {h for h in cases if stats[h]["failures"]} == set(cases) - {"good"}
    assert stats["control"]["failures"] == 1
