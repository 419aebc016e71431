# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Why the cuda and cuda_repo preflights keep their type asserts beside meta/argument_specs.yml (issue 47 red team:
"asserts that repeat what the argument spec enforces"). Run with real Ansible (connection local, ansible-core 2.19):

- a role's argument validation only asks whether a value CAN be converted to the spec's type, and leaves the variable
  as it was given: `cuda_versions: "12.8"` passes `type: list` (a string is split on commas), `cuda_default_version:
  12.8` passes `type: str`, `cuda_hold: "yes"` passes `type: bool`, `cuda_local_repo_debs: "a=b"` passes `type: dict`
  - and the tasks then read the string, the float, the string. The preflight's assert refuses each, naming it;
- playbooks/mirror.yml no longer runs cuda_repo's preflight (rt47 M5): it asks the role's module, whose answer is the
  preflight's (test_mirror_yml_asks_the_cuda_repo_module_what_the_role_preflight_works_out).

The choices (cuda_method) are the spec's alone (no preflight assert repeats them: test_one_place)."""

from __future__ import annotations

from pathlib import Path

import yaml

from ansible_collections.dlbox.stack.plugins.plugin_utils.roles import cuda_repo
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


def test_mirror_yml_asks_the_cuda_repo_module_what_the_role_preflight_works_out(tmp_path):
    """rt47 M5: playbooks/mirror.yml ran cuda_repo's preflight (tasks_from, no validation) and read its private
    __cuda_repo_url, __cuda_repo_key_url and __cuda_repo_fingerprint. It now asks the role's module
    ('cuda_repo' | dlbox.stack.role_module('needs', facts=...)); the module's answer is the preflight's, host by host
    (the preflight's own expressions, run by Ansible)."""
    mirror = (ROOT / "playbooks" / "mirror.yml").read_text(encoding="utf-8")
    assert "dlbox.stack.cuda_repo" not in mirror and "__cuda_repo_" not in mirror
    assert "'cuda_repo' | dlbox.stack.role_module('needs'" in mirror
    _options, preflight = _role("cuda_repo")
    work = [yaml.safe_load(yaml.safe_dump(t).replace("ansible_facts[", "__f["))
            for t in preflight if t["name"].startswith("Work out the") and "set_fact" in str(t)]
    assert [t["name"] for t in work] == ["Work out the repository", "Work out the URL and the key", "Work out the fingerprint"]
    role_vars = yaml.safe_load((ROOT / "roles" / "cuda_repo" / "vars" / "main.yml").read_text(encoding="utf-8"))
    nvidia = cuda_repo.vendor()["signing_keys"]["default"]["fingerprint"]         # data/repositories.yml's
    debian = {"distribution": "Debian", "distribution_major_version": "12", "distribution_version": "12.7",
              "architecture": "x86_64", "kernel": "6.1.0-25-amd64"}
    ubuntu = {"distribution": "Ubuntu", "distribution_major_version": "24", "distribution_version": "24.04",
              "architecture": "aarch64", "kernel": "6.8.0-45-generic"}
    cases = {
        "debian": {"__f": debian},
        "debian13": {"__f": dict(debian, distribution_major_version="13", distribution_version="13.1")},
        "ubuntu-sbsa-site": {"__f": ubuntu, "dlbox_site_mirrors": {"cuda": "https://mirror.example/cuda//"}},
        "wsl": {"__f": dict(ubuntu, architecture="x86_64", kernel="5.15.153.1-microsoft-standard-WSL2")},
        "base-url-fpr": {"__f": debian, "cuda_repo_base_url": "file:///srv/cuda//",
                         "cuda_repo_key_fingerprint": " ".join(nvidia[i:i + 4].lower() for i in range(0, len(nvidia), 4))},
        "key-url": {"__f": debian, "cuda_repo_key_url": "https://keys.example/cuda.pub"},
        "plan-repo": {"__f": debian, "dlbox_plan": {"stack": {"cuda": {"repository": "ubuntu2204/x86_64"}}}},
        "named-keys": {"__f": ubuntu, "cuda_repo_repository": "ubuntu2404/x86_64",
                       "cuda_repo_nvidia_keys": {"ubuntu2404": {"file": "other.pub", "fingerprint": "A" * 40}}},
    }
    defaults = {k: v.get("default") for k, v in _options.items() if "default" in v}
    hostvars = {h: dict(defaults, ansible_connection="local", ansible_python_interpreter="{{ ansible_playbook_python }}", **v)
                for h, v in cases.items()}
    asked = ("{{ ('cuda_repo' | dlbox.stack.role_module('needs', given=dict(__n | zip(query('ansible.builtin.vars', *__n))),"
             " facts=__f, plan=dlbox_plan | default(none), site_mirror=dlbox_site_mirrors.cuda | default('', true))).repository }}")
    module = {"name": "module", "ansible.builtin.set_fact": {"__py": asked},
              "vars": {"__n": "{{ query('ansible.builtin.varnames', '^cuda_repo_') }}"}}
    show = {"name": "show", "ansible.builtin.debug": {"msg": {
        "role": "{{ [__cuda_repo_repository, __cuda_repo_url, __cuda_repo_key_url, __cuda_repo_fingerprint] }}",
        "module": "{{ [__py.name, __py.url, __py.key_url, __py.fingerprint] }}"}}}
    proc, out = run_play(tmp_path, {"hosts": "all", "gather_facts": False, "vars": role_vars,
                                    "tasks": work + [module, show]}, hostvars)
    assert out is not None, proc.stderr
    shown = next(t["hosts"] for t in out["plays"][0]["tasks"] if t["task"]["name"] == "show")
    assert set(shown) == set(cases), shown
    for host, result in shown.items():
        assert result["msg"]["module"] == result["msg"]["role"], (host, result["msg"])
    assert shown["ubuntu-sbsa-site"]["msg"]["role"][1] == "https://mirror.example/cuda/ubuntu2404/sbsa/"
    assert shown["base-url-fpr"]["msg"]["role"][3] == nvidia


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
