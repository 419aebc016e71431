# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Why the cuda and cuda_repo preflights keep their type asserts beside meta/argument_specs.yml (issue 47 red team:
"asserts that repeat what the argument spec enforces"). Run with real Ansible (connection local, ansible-core 2.19):

- a role's argument validation only asks whether a value CAN be converted to the spec's type, and leaves the variable
  as it was given: `cuda_versions: "12.8"` passes `type: list` (a string is split on commas), `cuda_default_version:
  12.8` passes `type: str`, `cuda_hold: "yes"` passes `type: bool`, `cuda_local_repo_debs: "a=b"` passes `type: dict`
  - and the tasks then read the string, the float, the string. The preflight's assert refuses each, naming it;
- playbooks/mirror.yml no longer runs cuda_repo's preflight (rt47 M5): it asks the role's module, and so does the
  preflight (issue 47: test_the_cuda_repo_preflight_reads_the_module; the module's host cases and refusals below).

The choices (cuda_method) are the spec's alone (no preflight assert repeats them: test_one_place)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ansible_collections.dlbox.stack.plugins.plugin_utils.roles import RoleModuleError, cuda_repo
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


NVIDIA = cuda_repo.vendor()["signing_keys"]          # data/repositories.yml's keys
NV = "https://developer.download.nvidia.com/compute/cuda/repos/"
DEBIAN = {"distribution": "Debian", "distribution_major_version": "12", "distribution_version": "12.7",
          "architecture": "x86_64", "kernel": "6.1.0-25-amd64"}
UBUNTU = {"distribution": "Ubuntu", "distribution_major_version": "24", "distribution_version": "24.04",
          "architecture": "aarch64", "kernel": "6.8.0-45-generic"}
_FPR = NVIDIA["default"]["fingerprint"]
# host -> (the host's facts and variables, the module's answer: [name, url, key_url, fingerprint])
HOSTS = {
    "debian": ({"__f": DEBIAN}, ["debian12/x86_64", NV + "debian12/x86_64/", NV + "debian12/x86_64/3bf863cc.pub", _FPR]),
    "debian13": ({"__f": dict(DEBIAN, distribution_major_version="13", distribution_version="13.1")},
                 ["debian13/x86_64", NV + "debian13/x86_64/", NV + "debian13/x86_64/8793F200.pub",
                  NVIDIA["debian13"]["fingerprint"]]),
    "ubuntu-sbsa-site": ({"__f": UBUNTU, "dlbox_site_mirrors": {"cuda": "https://mirror.example/cuda//"}},
                         ["ubuntu2404/sbsa", "https://mirror.example/cuda/ubuntu2404/sbsa/",
                          "https://mirror.example/cuda/ubuntu2404/sbsa/3bf863cc.pub", _FPR]),
    "wsl": ({"__f": dict(UBUNTU, architecture="x86_64", kernel="5.15.153.1-microsoft-standard-WSL2")},
            ["wsl-ubuntu/x86_64", NV + "wsl-ubuntu/x86_64/", NV + "wsl-ubuntu/x86_64/3bf863cc.pub", _FPR]),
    "base-url-fpr": ({"__f": DEBIAN, "cuda_repo_base_url": "file:///srv/cuda//",
                      "cuda_repo_key_fingerprint": " ".join(_FPR[i:i + 4].lower() for i in range(0, len(_FPR), 4))},
                     ["debian12/x86_64", "file:///srv/cuda/", "file:///srv/cuda/3bf863cc.pub", _FPR]),
    "key-url": ({"__f": DEBIAN, "cuda_repo_key_url": "https://keys.example/cuda.pub"},
                ["debian12/x86_64", NV + "debian12/x86_64/", "https://keys.example/cuda.pub", _FPR]),
    "plan-repo": ({"__f": DEBIAN, "dlbox_plan": {"stack": {"cuda": {"repository": "ubuntu2204/x86_64"}}}},
                  ["ubuntu2204/x86_64", NV + "ubuntu2204/x86_64/", NV + "ubuntu2204/x86_64/3bf863cc.pub", _FPR]),
    "named-keys": ({"__f": UBUNTU, "cuda_repo_repository": "ubuntu2404/x86_64",
                    "cuda_repo_nvidia_keys": {"ubuntu2404": {"file": "other.pub", "fingerprint": "a" * 40}}},
                   ["ubuntu2404/x86_64", NV + "ubuntu2404/x86_64/", NV + "ubuntu2404/x86_64/other.pub", "A" * 40]),
}
# host -> (its facts and variables, the variable its refusal names)
REFUSED = {
    "bad-arch": ({"__f": dict(DEBIAN, architecture="ppc64le")}, "cuda_repo_repository (worked out from the host) is"),
    "bad-base-url": ({"__f": DEBIAN, "cuda_repo_base_url": "ftp://mirror/cuda"}, "cuda_repo_base_url must be"),
    "bad-keys": ({"__f": DEBIAN, "cuda_repo_nvidia_keys": {"debian12": {"file": "k.pub"}}}, "cuda_repo_nvidia_keys entries"),
    "both-keys": ({"__f": DEBIAN, "cuda_repo_key_url": "https://k/x.pub", "cuda_repo_key_src": "/etc/hostname"},
                  "Set one of cuda_repo_key_url"),
    "bad-key-url": ({"__f": DEBIAN, "cuda_repo_key_url": "keys.example/x.pub"}, "Set one of cuda_repo_key_url"),
    "short-fpr": ({"__f": DEBIAN, "cuda_repo_key_fingerprint": "3BF863CC"}, "cuda_repo_key_fingerprint is '3BF863CC'"),
    "short-nvidia-fpr": ({"__f": DEBIAN, "cuda_repo_nvidia_keys": {"debian12": {"file": "k.pub", "fingerprint": "3BF863CC"}}},
                         "cuda_repo_key_fingerprint (from cuda_repo_nvidia_keys) is"),
}


def _ask(case, refusals=False):
    given = {k: v for k, v in case.items() if k.startswith("cuda_repo_")}
    return cuda_repo.repository(given, case["__f"], case.get("dlbox_plan"),
                                (case.get("dlbox_site_mirrors") or {}).get("cuda", ""), refusals=refusals)


@pytest.mark.parametrize("host", sorted(HOSTS))
def test_the_cuda_repo_module_works_out_each_host_repository(host):
    case, want = HOSTS[host]
    got = _ask(case)
    assert [got["name"], got["url"], got["key_url"], got["fingerprint"]] == want
    assert got["errors"] == [] and got["key_src"] == ""


@pytest.mark.parametrize("host", sorted(REFUSED))
def test_the_cuda_repo_module_refuses_naming_the_variable(host):
    case, named = REFUSED[host]
    with pytest.raises(RoleModuleError) as exc:
        _ask(case)
    assert named in str(exc.value)
    assert _ask(case, refusals=True) == {"errors": [str(exc.value)]}     # what the preflight asserts empty


def test_the_cuda_repo_preflight_reads_the_module(tmp_path):
    """Issue 47: the preflight no longer works the repository, URL, key and fingerprint out in YAML; one task asks the
    role's module (as playbooks/mirror.yml does) and keeps its answer, one assert refuses on its errors, and
    vars/main.yml reads the role's private names from that fact. Run with real Ansible: the preflight's own two
    tasks, host by host (ansible_facts as __f)."""
    mirror = (ROOT / "playbooks" / "mirror.yml").read_text(encoding="utf-8")
    assert "dlbox.stack.cuda_repo" not in mirror and "__cuda_repo_" not in mirror
    assert "'cuda_repo' | dlbox.stack.role_module('needs'" in mirror
    options, preflight = _role("cuda_repo")
    text = yaml.safe_dump(preflight)
    assert text.count("dlbox.stack.role_module") == 1 and "__cuda_repo_nvidia_key" not in text
    asks = [i for i, t in enumerate(preflight) if "role_module" in str(t)]
    decide, check = preflight[asks[0]], preflight[asks[0] + 1]
    assert list(decide["ansible.builtin.set_fact"]) == ["__cuda_repo_repo"]
    assert check["ansible.builtin.assert"]["that"] == "__cuda_repo_repo.errors | length == 0"
    role_vars = yaml.safe_load((ROOT / "roles" / "cuda_repo" / "vars" / "main.yml").read_text(encoding="utf-8"))
    for name, key in (("repository", "name"), ("url", "url"), ("key_url", "key_url"), ("fingerprint", "fingerprint")):
        assert role_vars["__cuda_repo_" + name] == "{{ __cuda_repo_repo.%s }}" % key
    tasks = [yaml.safe_load(yaml.safe_dump(t).replace("facts=ansible_facts", "facts=__f")) for t in (decide, check)]
    assert "facts=__f" in yaml.safe_dump(tasks[0])
    defaults = {k: v.get("default") for k, v in options.items() if "default" in v}
    cases = dict({h: c for h, (c, _w) in HOSTS.items()}, **{h: c for h, (c, _n) in REFUSED.items()})
    hostvars = {h: dict(defaults, ansible_connection="local", ansible_python_interpreter="{{ ansible_playbook_python }}", **v)
                for h, v in cases.items()}
    show = {"name": "show", "ansible.builtin.debug": {
        "msg": "{{ [__cuda_repo_repository, __cuda_repo_url, __cuda_repo_key_url, __cuda_repo_fingerprint] }}"}}
    proc, out = run_play(tmp_path, {"hosts": "all", "gather_facts": False, "vars": role_vars, "tasks": tasks + [show]},
                         hostvars)
    assert out is not None, proc.stderr
    ran = {t["task"]["name"]: t["hosts"] for t in out["plays"][0]["tasks"]}
    assert set(ran["show"]) == set(HOSTS), ran["show"]
    for host, (_case, want) in HOSTS.items():
        assert ran["show"][host]["msg"] == want, host
    for host, (_case, named) in REFUSED.items():
        result = ran[check["name"]][host]
        assert result.get("failed") and named in result["msg"] and result["msg"].endswith("Nothing was changed."), result


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
