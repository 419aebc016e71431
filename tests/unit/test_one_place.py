"""One place per fact (issue 47).

- A key fingerprint (40 upper-case hex digits, as gpg prints it, also in groups of four as `gpg --fingerprint` does,
  or after 0x) appears only in data/
  (and in tests/fixtures, tests/unit/data: copies and fixture keys). Lower-case 40-hex strings are git commits
  in source citations, not fingerprints; but a fingerprint data/ holds is found in any case or grouping.
- A URL under a vendor's package host appears in no value the roles, playbooks, plugins, Molecule scenarios and
  examples use: in YAML, no string value outside descriptions and messages; in Python, no string literal outside
  docstrings and the module documentation (DOCUMENTATION, EXAMPLES, RETURN); in templates, nowhere. Comments and
  prose (READMEs, docs/, changelogs) may name the vendor; tests/ asserts what data/ holds.
- No playbook or role reads another role's files (lookup('file', '../../roles/...'), include_vars, vars_files,
  role_path/../<role>): they ask the role's module (dlbox.stack.role_module) or include the role.
- A variable's choices live only in its argument spec: no preflight asserts `<variable> in [...]` for an option
  whose spec has choices (the role's argument validation already refuses, naming the variable), and no plugin types
  them again (a tuple, list or set of the same words): a decision module reads them with
  plugins/plugin_utils/roles/_spec.py `choices(role, variable)`.
Each allow-list entry below says why it is there; a new occurrence fails.
"""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from py_literals import prose_ids  # pylint: disable=import-error

ROOT = Path(__file__).resolve().parents[2]

# gpg --fingerprint prints ten groups of four with two spaces after the fifth; a fingerprint may be written 0x...
FINGERPRINT = re.compile(r"(?<![0-9A-Za-z])(?:[0-9A-F]{40}|(?:[0-9A-F]{4} {1,2}){9}[0-9A-F]{4})(?![0-9A-Za-z])")
HEX_PREFIX = re.compile(r"\b0x(?=[0-9A-F]{4})")
FAKE_FINGERPRINT = "0123456789ABCDEF0123456789ABCDEF01234567"  # obviously not a key: examples and tests
FINGERPRINT_DIRS = ("data/", "tests/fixtures/", "tests/unit/data/")
FINGERPRINT_ALLOWED = {
    "tests/unit/plugins/module_utils/test_apt_keyring.py": "fingerprints of the fixture keys in tests/unit/data/openpgp",
    "tests/unit/plugins/modules/test_apt_keyring_module.py": "the same fixture keys",
    "tests/unit/plugins/plugin_utils/test_jetpack_plan.py": "a test of data/jetson.yml's loader (edge's area this round)",
    "CHANGELOG.rst": "the released history",
    "tests/unit/test_one_place.py": "its own deliberate breaks",
    "tests/unit/plugins/plugin_utils/test_role_modules.py": "the vendor loader's refusal of a lower-case fingerprint "
                                                            "(the container toolkit's, lower-cased)",
}

# The vendors' package hosts, whole: any path under them is a repository, a key or a download (NVIDIA's CUDA, Jetson,
# container toolkit, driver and DOCA repositories, Docker's, PyTorch's and PyPI's indexes, NVIDIA's release downloads).
VENDOR_URL = re.compile(r"https?://(?:developer\.download\.nvidia\.com/|nvidia\.github\.io/|download\.docker\.com|"
                        r"repo\.download\.nvidia\.com/|us\.download\.nvidia\.com/|download\.pytorch\.org/|"
                        r"pypi\.org/simple|pypi\.nvidia\.com|pypi\.ngc\.nvidia\.com|linux\.mellanox\.com/public/repo|"
                        r"github\.com/NVIDIA/[\w.-]+/releases/download)")
# Where a value may name a vendor URL: what the roles, playbooks and plugins use, and the scenarios and examples a
# user copies (molecule/, examples/). tests/ asserts what data/ holds; docs/, READMEs and changelogs are prose.
URL_SCANNED = ("roles/", "playbooks/", "plugins/", "inventories/", "molecule/", "examples/")
PROSE_KEYS = {"description", "short_description", "fail_msg", "msg", "success_msg", "name", "notes"}
URL_ALLOWED = {
    "plugins/plugin_utils/doctor_rules.py": "a finding's fix quotes PyTorch's install command to the user",
    "plugins/plugin_utils/jetpack_plan.py": "a refusal names Jetson's repository as an example of a mirror's root",
    "plugins/plugin_utils/package_cache_plan.py": "its refusals name PyPI's and NVIDIA's roots as examples of a valid value; "
                                                  "client_apt fills the server's options it does not check with PyPI's root",
    "roles/package_cache/defaults/main.yml": "package_cache_pypi_upstream's default, PyPI's root (also data/repositories.yml "
                                             "indexes.pypi): package_cache has no role module to read it through yet "
                                             "(issue 47, left)",
    "roles/package_cache/meta/argument_specs.yml": "the same default, which the spec repeats",
    "molecule/package_cache/converge.yml": "the scenario plays a site's inventory: the upstreams a user gives "
                                           "package_cache (PyPI's root, NVIDIA's CUDA repositories)",
}


# What a walk of a tree that is not a git checkout (a git archive, as CI may test) leaves out: build outputs,
# virtual environments, caches, ansible-test's output.
SKIPPED_DIRS = {".git", ".venv", "venv", "build", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".tox",
                ".cache", "node_modules", ".eggs"}
SKIPPED_PATHS = ("tests/output/",)


def _walk(root):
    out = []
    for path in root.rglob("*"):
        rel = path.relative_to(root).as_posix()
        if any(part in SKIPPED_DIRS for part in path.relative_to(root).parts) or rel.startswith(SKIPPED_PATHS):
            continue
        if path.is_file() and not path.is_symlink():
            out.append(rel)
    return sorted(out)


def tracked(root=ROOT):
    """The repository's files: git's (tracked and untracked, less the ignored) in a checkout, else a walk of the tree
    (rt47 L7: a git-archive copy has no .git)."""
    if not (root / ".git").exists():
        return _walk(root)
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=root,
                         capture_output=True, check=True).stdout.decode()
    return sorted(p for p in out.split("\0") if p and (root / p).is_file())


def fingerprints_outside_data(root=ROOT):
    found = []
    for rel in tracked(root):
        if rel.startswith(FINGERPRINT_DIRS) or rel in FINGERPRINT_ALLOWED:
            continue
        try:
            text = (root / rel).read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        for number, line in enumerate(text.splitlines(), 1):
            for match in FINGERPRINT.findall(HEX_PREFIX.sub("  ", line)):
                if match != FAKE_FINGERPRINT:
                    found.append("%s:%d: %s" % (rel, number, match))
    return found


def known_fingerprints(root=ROOT):
    """The fingerprints data/ holds, as 40 upper-case hex digits."""
    found = set()
    for path in sorted((root / "data").glob("*.yml")):
        for match in FINGERPRINT.findall(HEX_PREFIX.sub("  ", path.read_text(encoding="utf-8"))):
            found.add(re.sub(r"\s", "", match))
    return found - {FAKE_FINGERPRINT}


def known_fingerprints_outside_data(root=ROOT):
    """data/'s fingerprints written anywhere else in any case or grouping (lower case, 'c95b 321b ...', 'C9:5B:...'):
    the upper-case check above leaves lower-case 40-hex strings alone (git commits), not these."""
    known = known_fingerprints(root)
    found = []
    for rel in tracked(root):
        if rel.startswith(FINGERPRINT_DIRS) or rel in FINGERPRINT_ALLOWED:
            continue
        try:
            text = (root / rel).read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        whole = re.sub(r"[\s:]|0x", "", text).upper()
        if not any(key in whole for key in known):   # a fingerprint across two lines is found too, named at its file
            continue
        for number, line in enumerate(text.splitlines(), 1):
            compact = re.sub(r"[\s:]|0x", "", line).upper()
            found.extend("%s:%d: %s" % (rel, number, key) for key in sorted(known) if key in compact)
        if not any(f.startswith(rel + ":") for f in found):
            found.extend("%s: %s" % (rel, key) for key in sorted(known) if key in whole)
    return found


class _TagLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # pylint: disable=too-many-ancestors
    """SafeLoader that reads Ansible's tags (!unsafe, !vault) as the plain value they tag."""


_TagLoader.add_multi_constructor("!", lambda loader, suffix, node: loader.construct_scalar(node)
                                 if isinstance(node, yaml.ScalarNode) else None)


def _yaml_strings(node, key=None):
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _yaml_strings(v, k)
    elif isinstance(node, list):
        for v in node:
            yield from _yaml_strings(v, key)
    elif isinstance(node, str) and key not in PROSE_KEYS:
        yield node


def _python_strings(text):
    tree = ast.parse(text)
    docs = prose_ids(tree, ("DOCUMENTATION", "EXAMPLES", "RETURN"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            yield node.value


def vendor_urls_outside_data(root=ROOT):
    found = []
    for rel in tracked(root):
        if rel in URL_ALLOWED or not rel.startswith(URL_SCANNED):
            continue
        if rel.startswith("plugins/") and rel.endswith(".yml"):    # a filter's documentation sidecar
            continue
        path = root / rel
        if rel.endswith((".yml", ".yaml")) and "/files/" not in rel:
            strings = list(_yaml_strings(yaml.load(path.read_text(encoding="utf-8"), Loader=_TagLoader)))  # nosec
        elif rel.endswith(".py"):
            strings = list(_python_strings(path.read_text(encoding="utf-8")))
        elif rel.endswith(".j2"):
            strings = [path.read_text(encoding="utf-8")]
        else:
            continue
        for value in strings:
            for match in VENDOR_URL.findall(value):
                found.append("%s: %s" % (rel, match))
    return sorted(set(found))


CROSS_READ = re.compile(r"(?:\.\./)+roles/([a-z_]+)/|role_path\W.*?\.\./([a-z_]+)/|"
                        r"(?:include_vars|vars_files)\W[^\n]*roles/([a-z_]+)/")


def cross_role_reads(root=ROOT):
    found = []
    for rel in tracked(root):
        if not rel.startswith(("roles/", "playbooks/")) or not rel.endswith((".yml", ".yaml", ".j2")):
            continue
        own = rel.split("/")[1] if rel.startswith("roles/") else None
        for number, line in enumerate((root / rel).read_text(encoding="utf-8").splitlines(), 1):
            if line.lstrip().startswith("#"):
                continue
            for match in CROSS_READ.finditer(line):
                role = next(g for g in match.groups() if g)
                if role != own:
                    found.append("%s:%d reads roles/%s's files: %s" % (rel, number, role, line.strip()))
    return found


# Asserts in flight in another helper's change when this test was written; drop the entry with the assert.
CHOICES_ALLOWED = {}


def repeated_choices(root=ROOT):
    found = []
    for role in sorted(p for p in (root / "roles").iterdir() if (p / "meta" / "argument_specs.yml").is_file()):
        specs = yaml.safe_load((role / "meta" / "argument_specs.yml").read_text())["argument_specs"]
        choices = {name for entry in specs.values() for name, opt in (entry.get("options") or {}).items()
                   if opt.get("choices")}
        for tasks in sorted((role / "tasks").glob("*.yml")):
            for number, line in enumerate(tasks.read_text().splitlines(), 1):
                for name in choices - set(CHOICES_ALLOWED):
                    if re.search(r"^\s*-?\s*%s(\s*\|\s*string)?\s+in\s+(\[|__)" % re.escape(name), line):
                        found.append("%s:%d repeats the choices of %s (its argument spec checks them)"
                                     % (tasks.relative_to(root), number, name))
    return found


# Python literals with the same words as a spec's choices that are not a copy of them; each says why.
PY_CHOICES_ALLOWED = {
    "plugins/module_utils/_nccl.py: nccl_p2p": "module_utils runs on the host (nccl_facts), where the role's argument "
                                               "spec is not; the controller's role validation checks first",
    "plugins/plugin_utils/jetpack_pytorch.py: jetpack_pytorch_mirror_kind": "KINDS: the `kind` of data/jetson.yml's "
                                                                            "PyTorch sources, the data's own schema",
    "plugins/plugin_utils/nvidia_driver_plan.py: cudnn_profile, nccl_profile": "driver_packages' profile: the package "
                                                                               "sets of data/compat.yml by profile",
    "plugins/plugin_utils/stack_input.py: cudnn_profile, nccl_profile": "the plan request's driver_profile "
                                                                        "(dlbox_plan_request), not a role variable",
}


def spec_choices(root=ROOT):
    """{frozenset of choices: [variables]} over every role's argument specs (every entry point), two words or more."""
    out = {}
    for spec in sorted((root / "roles").glob("*/meta/argument_specs.yml")):
        for entry in (yaml.safe_load(spec.read_text(encoding="utf-8")).get("argument_specs") or {}).values():
            for name, opt in (entry.get("options") or {}).items():
                words = opt.get("choices") or []
                if len(words) >= 2 and all(isinstance(w, str) for w in words):
                    out.setdefault(frozenset(words), []).append(name)
    return out


def choices_typed_in_plugins(root=ROOT):
    known = spec_choices(root)
    found = []
    for rel in tracked(root):
        if not (rel.startswith("plugins/") and rel.endswith(".py")):
            continue
        for node in ast.walk(ast.parse((root / rel).read_text(encoding="utf-8"))):
            if isinstance(node, (ast.Tuple, ast.List, ast.Set)) and len(node.elts) >= 2 and all(
                    isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
                names = known.get(frozenset(e.value for e in node.elts))
                key = "%s: %s" % (rel, ", ".join(sorted(set(names or ()))))
                if names and key not in PY_CHOICES_ALLOWED:
                    found.append("%s:%d types the choices of %s (read them with roles/_spec.py choices())"
                                 % (rel, node.lineno, ", ".join(sorted(set(names)))))
    return found


def test_fingerprints_only_in_data():
    assert fingerprints_outside_data() == []


def test_data_fingerprints_in_no_other_case_or_grouping_outside_data():
    assert len(known_fingerprints()) >= 6
    assert known_fingerprints_outside_data() == []


def test_vendor_urls_only_in_data():
    assert vendor_urls_outside_data() == []


def test_no_playbook_or_role_reads_another_roles_files():
    assert cross_role_reads() == []


def test_choices_only_in_argument_specs():
    assert repeated_choices() == []


def test_plugins_read_choices_from_the_argument_specs():
    assert choices_typed_in_plugins() == []


def test_the_allow_lists_name_files_that_exist():
    for rel in list(FINGERPRINT_ALLOWED) + list(URL_ALLOWED) + [k.split(": ")[0] for k in PY_CHOICES_ALLOWED]:
        assert (ROOT / rel).is_file(), rel


def test_the_spec_reader_gives_the_specs_choices():
    from ansible_collections.dlbox.stack.plugins.plugin_utils import cuda_plan, dcgm_plan, package_cache_plan
    from ansible_collections.dlbox.stack.plugins.plugin_utils.roles import _spec
    assert cuda_plan.METHODS == ("nvidia_repo", "distro", "local_repo", "pip_wheels")
    assert dcgm_plan.METHODS == ("package", "container") and package_cache_plan.MODES[0] == "auto"
    with pytest.raises(_spec.SpecError, match="no choices for cuda_versions"):
        _spec.choices("cuda", "cuda_versions")


# --- each check on a deliberately broken copy ------------------------------------------------------------------

@pytest.fixture()
def tree(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    for rel in ("roles/docker", "roles/cuda", "roles/nccl", "playbooks/tasks"):
        (tmp_path / rel).mkdir(parents=True, exist_ok=True)
    subprocess.run(["cp", "-r", str(ROOT / "roles" / "nccl"), str(tmp_path / "roles")], check=True)
    return tmp_path


def test_a_fingerprint_in_a_role_is_found(tree):
    (tree / "roles" / "docker" / "defaults.yml").write_text('docker_key: "9DC8 5822 9FC7 DD38 854A E2D8 8D81 803C 0EBF CD88"\n')
    (tree / "roles" / "docker" / "commit.yml").write_text("# at 078c2e2e6734175630bde4df217ea61634d092ec\n")
    (tree / "roles" / "docker" / "gpg.yml").write_text(
        "# pub rsa4096 2017-09-28 [SCE]\n#   C95B 321B 61E8 8C18 09C4  F759 DDCA E044 F796 ECB0\n"
        "key: 0xEB693B3035CD5710E231E123A4B469963BF863CC\n")
    assert fingerprints_outside_data(tree) == [
        "roles/docker/defaults.yml:1: 9DC8 5822 9FC7 DD38 854A E2D8 8D81 803C 0EBF CD88",
        "roles/docker/gpg.yml:2: C95B 321B 61E8 8C18 09C4  F759 DDCA E044 F796 ECB0",
        "roles/docker/gpg.yml:3: EB693B3035CD5710E231E123A4B469963BF863CC"]


def test_a_data_fingerprint_in_lower_case_or_colons_is_found(tree):
    (tree / "data").mkdir()
    (tree / "data" / "repositories.yml").write_text("fingerprint: C95B321B61E88C1809C4F759DDCAE044F796ECB0\n")
    (tree / "roles" / "docker" / "keys.yml").write_text(
        "a: c95b321b61e88c1809c4f759ddcae044f796ecb0\n"
        "b: c9:5b:32:1b:61:e8:8c:18:09:c4:f7:59:dd:ca:e0:44:f7:96:ec:b0\n"
        "c: 078c2e2e6734175630bde4df217ea61634d092ec  # a commit, not data's\n")
    (tree / "molecule").mkdir()
    (tree / "molecule" / "x.yml").write_text("key: '0xc95b 321b 61e8 8c18 09c4  f759 ddca e044 f796 ecb0'\n")
    assert [f.rsplit(":", 1)[0] for f in known_fingerprints_outside_data(tree)] == [
        "molecule/x.yml:1", "roles/docker/keys.yml:1", "roles/docker/keys.yml:2"]


def test_a_vendor_url_in_a_value_is_found_and_prose_is_not(tree):
    (tree / "roles" / "docker" / "main.yml").write_text(
        "# comment https://download.docker.com/linux\n"
        "- name: Set\n  ansible.builtin.set_fact:\n    docker_url: \"{{ mirror or 'https://download.docker.com' }}/linux\"\n"
        "- name: Fail\n  ansible.builtin.fail:\n    msg: see https://pypi.org/simple\n")
    (tree / "roles" / "docker" / "x.py").write_text('"""Doc https://pypi.org/simple."""\nURL = "https://pypi.org/simple"\n')
    (tree / "molecule" / "s").mkdir(parents=True)
    (tree / "molecule" / "s" / "converge.yml").write_text(
        "- hosts: all\n  vars:\n    key: https://linux.mellanox.com/public/repo/doca/GPG-KEY-Mellanox.pub\n"
        "    fm: https://developer.download.nvidia.com/compute/nvidia-driver/redist/fabricmanager/\n")
    assert vendor_urls_outside_data(tree) == ["molecule/s/converge.yml: https://developer.download.nvidia.com/",
                                              "molecule/s/converge.yml: https://linux.mellanox.com/public/repo",
                                              "roles/docker/main.yml: https://download.docker.com",
                                              "roles/docker/x.py: https://pypi.org/simple"]


def test_reading_another_roles_defaults_is_found(tree):
    (tree / "playbooks" / "tasks" / "plan.yml").write_text(
        "- x: \"{{ lookup('ansible.builtin.file', '../../roles/cuda/defaults/main.yml') | from_yaml }}\"\n")
    (tree / "roles" / "cuda" / "main.yml").write_text("- ansible.builtin.include_vars: \"{{ role_path }}/../nccl/vars/main.yml\"\n")
    found = cross_role_reads(tree)
    assert len(found) == 2 and "reads roles/cuda's files" in found[0] and "reads roles/nccl's files" in found[1]


def test_a_plugin_typing_a_specs_choices_is_found(tree):
    (tree / "plugins" / "plugin_utils").mkdir(parents=True)
    (tree / "plugins" / "plugin_utils" / "x.py").write_text(
        '"""A module."""\nPROFILES = ("desktop", "server")\nOTHER = ("desktop", "laptop")\nP2P = ["nvlink", "auto", "enabled", '
        '"disabled"]\n\n\ndef ok(p):\n    return p in {"server", "desktop"}\n')
    assert [f.split(" (")[0] for f in choices_typed_in_plugins(tree)] == [
        "plugins/plugin_utils/x.py:2 types the choices of nccl_profile",
        "plugins/plugin_utils/x.py:4 types the choices of nccl_p2p",
        "plugins/plugin_utils/x.py:8 types the choices of nccl_profile"]


def test_a_preflight_repeating_the_choices_is_found(tree):
    preflight = tree / "roles" / "nccl" / "tasks" / "preflight.yml"
    preflight.write_text(preflight.read_text() + "\n- name: Again\n  ansible.builtin.assert:\n    that:\n"
                         "      - nccl_profile in ['desktop', 'server']\n")
    assert [re.search(r"choices of (\w+)", f).group(1) for f in repeated_choices(tree)] == ["nccl_profile"]


def test_a_tree_that_is_not_a_git_checkout_is_walked(tmp_path):
    """rt47 L7: a git-archive copy (no .git) is walked, without build outputs, virtual environments and caches; the
    checks find in it what they find in a checkout."""
    for rel in ("roles/docker/defaults/main.yml", "build/collections/x.yml", ".venv/lib/x.yml", "roles/docker/__pycache__/x.yml",
                ".pytest_cache/x.yml", "tests/output/x.yml", "playbooks/x.yml"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text('key: "9DC8 5822 9FC7 DD38 854A E2D8 8D81 803C 0EBF CD88"\n')
    assert tracked(tmp_path) == ["playbooks/x.yml", "roles/docker/defaults/main.yml"]
    assert [f.split(":")[0] for f in fingerprints_outside_data(tmp_path)] == ["playbooks/x.yml", "roles/docker/defaults/main.yml"]


def test_the_walk_finds_every_file_git_lists():
    """In this checkout, the walk (what an archive copy gets) holds every file git lists: it skips nothing real."""
    assert set(tracked()) - set(_walk(ROOT)) == set()
