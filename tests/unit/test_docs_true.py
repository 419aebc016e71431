"""The README and docs/ stay true to the tree (issue 47): every path, playbook, role, make target and variable
they name exists, and `make help` lists every target of the Makefile.

What the pages name is read from their text, never from a list kept here: Markdown links, and the words inside
`code spans` and fenced blocks. A word counts as
- a path when its first part is a top-level entry of the repository (`roles/...`, `data/compat.yml`); a placeholder
  (`<role>`, `*`, `X.Y`) ends the check at the part before it;
- a playbook when it is `playbooks/NAME.yml` or `dlbox.stack.NAME` (a playbook, module, filter or role): a filter's
  NAME is a key its plugins/filter/*.py FilterModule.filters() returns (a plugin_utils file of the same name, or a
  sidecar left behind, is none: rt47 L6's `dlbox.stack.role_plan`);
- a tag when it follows `--tags` or `--skip-tags` inside code: a tag of the roles' or playbooks' tasks, one a playbook
  reads from ansible_run_tags, or one of Ansible's own (all, always, never, tagged, untagged);
- a role when the text says "the `NAME` role" or "role `NAME`";
- a make target when it follows `make ` inside code;
- a file of the tree when it is a file name or a part of a path that does not start at the top
  (`_gpu_facts.py`, `module_utils/hostfacts.py`, `tasks/preflight.yml`): some file of the tree must end with it;
- a role variable when it starts with a role's name and `_` (the longest such name): it must be an option of an
  entry point of the role's `meta/argument_specs.yml` (a filter or module of the same name is not a variable;
  test_role_specs.py keeps `defaults/main.yml` to the same keys); a `dlbox_*` variable must be read by a playbook,
  role, inventory or plugin;
- the collection's version when it is in a tarball's name (`dlbox-stack-X.Y.Z.tar.gz`) or the execution
  environment's tag (`dlbox-ee:X.Y.Z`): it must be galaxy.yml's.
The few words that look like these and are not (the user's own files, files on the host or written by a run) are
listed below with why.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
from functools import lru_cache
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]

# Words of the pages that look like tree paths or variables but name something the user makes, on purpose.
NOT_IN_TREE = {
    "inventories/mylab": "the user's copy of inventories/lab (docs/fleet.md: cp -r inventories/lab inventories/mylab)",
    "inventories/mylab/hosts.yml": "the same copy",
    "inventories/mylab/rollout.yml": "the same copy",
    "files/lab-proxy-ca.crt": "the user's certificate beside their own playbook (roles/common/README.md's example)",
}
# File names the pages give that are on the host or in a run's output, never in the tree.
NOT_A_TREE_FILE = {
    "daemon.json": "Docker's /etc/docker/daemon.json on the host",
    "config.toml": "the NVIDIA Container Toolkit's /etc/nvidia-container-runtime/config.toml on the host",
    "plan.json": "/etc/dlbox/plan.json, written into a CI image",
    "manifest.json": "the manifest the offline and CI-image runs write",
    "dlbox/manifest.json": "the same, under an environment",
    "MANIFEST.json": "the manifest inside a built collection tarball",
    "frameworks.yml": "a CI image's frameworks file, written by the user's build",
    "fleet.html": "the fitness fleet report a run writes",
    "fleet.json": "the same report as JSON",
    "summary.json": "the rollout summary a run writes",
    "summary.md": "the same summary as Markdown",
    "lspci-nn.txt": "a capture the user pastes",
    "supported-gpus.json": "NVIDIA's list inside Ubuntu's nvidia-kernel-common packages (tools/gpu_catalog.py reads it)",
    "dlbox-manifest.json": "the manifest the cuda (pip tree) and cudnn (archive) roles write beside what they install",
    "dlbox-kept.json": "the record of kept driver packages the nvidia_driver role writes on the host",
    "contrib/check-config.sh": "Docker's (moby's) kernel-config check script, which the docker role's check follows",
    "flash.sh": "NVIDIA's L4T flashing script (Jetson Linux BSP), run by the user",
    "debian/templates/nvidia-compute-utils-flavour.nvidia-persistenced.service.in":
        "a file of Ubuntu's nvidia-graphics-drivers source package",
}
FILE_NAME = re.compile(r"[\w+-][\w./+-]*\.(?:py|yml|yaml|sh|md|j2|txt|json|c|cfg|toml|csv|html|rst|in)")
NOT_WALKED = {".git", ".venv", "build", ".cache", ".ansible", ".pytest_cache", "__pycache__"}
PLACEHOLDER = re.compile(r"[<>*{}$]|X\.Y|X-Y|\.\.\.")
ROLE_FOLDERS = {"tasks", "handlers", "defaults", "vars", "meta", "templates", "files"}
IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")


def pages(root: Path = ROOT) -> list[Path]:
    """The README, docs/ and every role's README."""
    return [root / "README.md"] + sorted((root / "docs").glob("*.md")) + sorted((root / "roles").glob("*/README.md"))


FENCE = re.compile(r"^ *```[a-z]*\n(.*?)^ *```", re.S | re.M)
# A code span may wrap: Markdown reads a line break inside it as a space. It ends at its paragraph (a blank line).
SPAN = re.compile(r"`((?:[^`\n]|\n(?![ \t]*\n))+)`")


def code_chunks(text: str) -> list[str]:
    """What is inside fenced blocks and `code spans` (a wrapped span's line breaks read as spaces)."""
    fenced = FENCE.findall(text)
    spans = [re.sub(r"\s*\n\s*", " ", span) for span in SPAN.findall(FENCE.sub("", text))]
    return fenced + spans


def code_words(text: str) -> list[str]:
    """The words inside fenced blocks and `code spans`, split on spaces, quotes and brackets."""
    return [w for chunk in code_chunks(text) for w in re.split(r"[\s'\"()\[\],;|]+", chunk) if w]


@lru_cache(maxsize=None)
def tree(root: Path = ROOT):
    """What the pages may name: top-level entries, roles and their variables, playbooks, plugins, make targets."""
    roles = {p.name for p in (root / "roles").iterdir() if (p / "tasks").is_dir()}
    variables = {}
    for role in roles:
        keys = set()
        specs_file = root / "roles" / role / "meta" / "argument_specs.yml"
        # a role without argument specs has no variables here: test_every_role_has_argument_specs says so, once
        specs = yaml.safe_load(specs_file.read_text()) if specs_file.is_file() else {"argument_specs": {}}
        for entry in specs["argument_specs"].values():
            keys |= set(entry.get("options") or {})
        variables[role] = keys
    plugins = {p.stem for p in (root / "plugins").glob("*/*.py")} | {p.stem for p in (root / "plugins").glob("filter/*.yml")}
    playbooks = {p.stem for p in (root / "playbooks").glob("*.yml")}
    makefile = (root / "Makefile").read_text()
    targets = set(re.findall(r"^([a-z][a-z-]*):", makefile, re.M))
    targets |= {"static-" + s for s in re.search(r"^STATIC := (.*)$", makefile, re.M).group(1).split()}
    top = {p.name for p in root.iterdir()} - {"build", ".git", ".venv"}
    # words that are names of a role, a Molecule scenario or a file (`nvidia_driver_dkms`, `dlbox_zipimport_cache`)
    names = roles | {p.name for p in (root / "molecule").iterdir()}
    names |= {p.stem for d in ("tests", "tools", "plugins") for p in (root / d).rglob("*.py")}
    return roles, variables, plugins | names, playbooks, targets, top


@lru_cache(maxsize=None)
def collection_names(root: Path = ROOT) -> frozenset[str]:
    """What `dlbox.stack.NAME` may name: a playbook, a role, a module (or action plugin), a filter by its key in
    FilterModule.filters() (read from the code, so a removed filter is gone even where a file of its name stays)."""
    names = {p.stem for p in (root / "playbooks").glob("*.yml")}
    names |= {p.name for p in (root / "roles").iterdir() if (p / "tasks").is_dir()}
    names |= {p.stem for d in ("modules", "action") for p in (root / "plugins" / d).glob("*.py") if p.stem != "__init__"}
    for path in (root / "plugins" / "filter").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef) and node.name == "filters":
                for ret in (n.value for n in ast.walk(node) if isinstance(n, ast.Return)):
                    assert isinstance(ret, ast.Dict), "%s: filters() returns no dict literal" % path
                    names |= {k.value for k in ret.keys if isinstance(k, ast.Constant)}
    return frozenset(names)


@lru_cache(maxsize=None)
def known_tags(root: Path = ROOT) -> frozenset[str]:
    """Every tag `--tags` may name: the tasks' tags (roles and playbooks), the names the playbooks and roles read from
    ansible_run_tags, and Ansible's own."""
    tags = {"all", "always", "never", "tagged", "untagged"}

    def walk(node):
        if isinstance(node, list):
            for item in node:
                walk(item)
        elif isinstance(node, dict):
            found = node.get("tags")
            tags.update(t for t in ([found] if isinstance(found, str) else found or []) if isinstance(t, str))
            for value in node.values():
                walk(value)

    for path in sorted((root / "playbooks").rglob("*.yml")) + sorted((root / "roles").glob("*/tasks/*.yml")) \
            + sorted((root / "roles").glob("*/handlers/*.yml")):
        text = path.read_text(encoding="utf-8")
        walk(yaml.safe_load(text))
        for listed in re.findall(r"ansible_run_tags \| intersect\(\[([^]]*)\]", text):
            tags.update(t.strip(" '\"") for t in listed.split(","))
    return frozenset(tags)


@lru_cache(maxsize=None)
def tree_file_ends(root: Path = ROOT) -> frozenset[str]:
    """Every end of every file's path from the top: for plugins/module_utils/_gpu_facts.py, that path itself,
    module_utils/_gpu_facts.py and _gpu_facts.py."""
    ends, seen = set(), set()
    for path, dirs, files in os.walk(root, followlinks=True):     # links: the broken-copy fixture's tree
        if os.path.realpath(path) in seen:                        # a link back up is walked once
            dirs[:] = []
            continue
        seen.add(os.path.realpath(path))
        dirs[:] = [d for d in dirs if d not in NOT_WALKED]
        parts = Path(path).relative_to(root).parts
        for f in files:
            ends |= {"/".join(parts[i:] + (f,)) for i in range(len(parts) + 1)}
    return frozenset(ends)


@lru_cache(maxsize=None)
def names_defined(root: Path = ROOT) -> frozenset[str]:
    """Names that are no option but that the roles and playbooks make: a registered result, a fact set_fact sets, a
    tag, a key of a Jinja dict in their tasks (`{'python_env_checks': ...}`) or a key of data/. A role's README names
    its results and tags (`infiniband_state`, `common_ca`). Read from the YAML, not from every word, so that an option
    the argument specs lose is still found where a page names it."""
    names = set()

    def tasks(node):
        if isinstance(node, list):
            for item in node:
                tasks(item)
        elif isinstance(node, dict):
            if isinstance(node.get("register"), str):
                names.add(node["register"])
            tags = node.get("tags")
            names.update(t for t in ([tags] if isinstance(tags, str) else tags or []) if isinstance(t, str))
            for key in ("ansible.builtin.set_fact", "set_fact"):
                if isinstance(node.get(key), dict):
                    names.update(node[key])
            for key in ("block", "rescue", "always", "tasks", "pre_tasks", "post_tasks", "handlers"):
                tasks(node.get(key))

    def keys(node):
        if isinstance(node, dict):
            names.update(str(k) for k in node)
            node = list(node.values())
        for item in node if isinstance(node, list) else []:
            keys(item)

    for path in sorted((root / "playbooks").rglob("*.yml")) + sorted((root / "roles").glob("*/tasks/*.yml")) \
            + sorted((root / "roles").glob("*/handlers/*.yml")):
        text = path.read_text(encoding="utf-8")
        tasks(yaml.safe_load(text))
        names.update(re.findall(r"'(\w+)':", text))
    for path in (root / "data").glob("*.yml"):
        keys(yaml.safe_load(path.read_text(encoding="utf-8")))
    return frozenset(names)


@lru_cache(maxsize=None)
def choices(root: Path = ROOT) -> dict[str, list[str]]:
    """Every role option's choices, from its argument specs."""
    found = {}
    for specs in (root / "roles").glob("*/meta/argument_specs.yml"):
        for entry in yaml.safe_load(specs.read_text())["argument_specs"].values():
            for option, spec in (entry.get("options") or {}).items():
                if "choices" in spec:
                    found[option] = [str(c) for c in spec["choices"]]
    return found


SETTING = re.compile(r"(?<![\w.])([a-z][a-z0-9_]*)(?:: +|=)(\[[^\]\n]*\]|\"[^\"\n]*\"|'[^'\n]*'|[^\s,}\]'\"]+)")


@lru_cache(maxsize=None)
def galaxy_version(root: Path = ROOT) -> str:
    return str(yaml.safe_load((root / "galaxy.yml").read_text(encoding="utf-8"))["version"])


@lru_cache(maxsize=None)
def dlbox_variables_read(root: Path = ROOT) -> frozenset[str]:
    """Every whole word dlbox_* of the playbooks, roles, inventories and plugins."""
    return frozenset(re.findall(r"\bdlbox_\w+", "\n".join(
        p.read_text(errors="replace") for d in ("playbooks", "roles", "inventories", "plugins")
        for p in (root / d).rglob("*") if p.is_file() and p.suffix in (".yml", ".yaml", ".py", ".j2"))))


def problems(root: Path = ROOT) -> list[str]:
    return sorted({p for page in pages(root) for p in page_problems(root, page, page.read_text(encoding="utf-8"))})


@lru_cache(maxsize=None)
def page_problems(root: Path, page: Path, text: str) -> tuple[str, ...]:
    """What one page names that is not so (cached on the text: the broken-copy tests change one page at a time)."""
    roles, variables, plugins, playbooks, targets, top = tree(root)
    read = None
    found = []
    name = page.relative_to(root)
    for link in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
        if not re.match(r"[a-z]+:", link) and not (page.parent / link).exists():
            found.append(f"{name}: link {link} leads nowhere")
    for version in re.findall(r"dlbox-(?:stack-|ee[: ])(\d+\.\d+\.\d+)", text):
        if version != galaxy_version(root):
            found.append(f"{name}: names version {version} of the collection; galaxy.yml's is {galaxy_version(root)}")
    for word in code_words(text):
        word = word.rstrip(".:").lstrip(":")        # a leading dot stays: `.config/molecule/platform.yml`
        file_name = word.split("=")[-1]
        if FILE_NAME.fullmatch(file_name) and file_name.split("/")[0] not in top | NOT_WALKED \
                and not PLACEHOLDER.search(file_name) and file_name not in NOT_A_TREE_FILE:
            if file_name not in tree_file_ends(root):
                found.append(f"{name}: file {file_name} is nowhere in the tree")
        path = word.split("=")[-1]
        # a role's README names its own files from the role's folder (`tasks/preflight.yml`, `meta/...`)
        base = page.parent if page.parent.parent == root / "roles" and path.split("/")[0] in ROLE_FOLDERS \
            else root
        if "/" in word and (word.split("/")[0] in top or base != root) and word not in NOT_IN_TREE \
                and not word.startswith("http"):
            parts = []
            for part in path.split("/"):
                if PLACEHOLDER.search(part) or not part:
                    break
                parts.append(part)
            if parts and not (base / "/".join(parts)).exists():
                found.append(f"{name}: path {word} is not in the tree")
        m = re.fullmatch(r"dlbox\.stack\.([a-z_]+)", word)
        if m and m.group(1) not in collection_names(root):
            found.append(f"{name}: {word} is no playbook, plugin or role of the collection")
    settings = []
    for chunk in code_chunks(text):
        for listed in re.findall(r"--(?:skip-)?tags(?:=|\s+)['\"]?([\w,<>-]+)", chunk):
            for tag in (t for t in listed.split(",") if t and not PLACEHOLDER.search(t)):
                if tag not in known_tags(root):
                    found.append(f"{name}: --tags {tag} is no tag of the collection's roles or playbooks")
        for target in re.findall(r"(?:^|[\s;&|(])make ([a-z][a-z-]*)", chunk):
            if target not in targets:
                found.append(f"{name}: make {target} is no target of the Makefile")
        set_here = {m.group(1) for m in SETTING.finditer(chunk)}
        for m in IDENT.finditer(chunk):
            ident = m.group().split(".")[0]
            if ident.endswith("_") or chunk[m.end():m.end() + 1] in ("<", "*", "{", "$"):   # `cuda_*`, `x_v<N>.h`
                continue
            owner = max((r for r in roles if ident.startswith(r + "_")), key=len, default=None)
            if owner and ident not in variables[owner] and ident not in plugins \
                    and (ident in set_here or ident not in names_defined(root)):
                found.append(f"{name}: {ident} is no variable of role {owner} (its argument specs)")
            if ident.startswith("dlbox_") and ident not in plugins:
                read = read if read is not None else dlbox_variables_read(root)
                if ident not in read:
                    found.append(f"{name}: {ident} is read by no playbook, role, inventory or plugin")
        for m in SETTING.finditer(chunk):       # `nvidia_driver_method: distro`, `-e cuda_method=distro`
            settings.append((m.group(1), m.group(2)))
    # and in the text: set `nvidia_driver_reboot` to `if_needed`
    settings += re.findall(r"`([a-z][a-z0-9_]*)`(?: (?:set )?to| is|:| =) `([^`\n]+)`", FENCE.sub("", text))
    for option, value in settings:
        # `never|if_needed`; a list's elements (`nvidia_container_toolkit_runtimes: [docker, containerd]`)
        for one in [v for v in re.split(r"[|,]\s*", value.strip("[]")) if v.strip()] if value.startswith("[") \
                else value.strip("\"'").split("|"):
            one = one.strip().strip("\"'")
            if option in choices(root) and not PLACEHOLDER.search(one) and "{{" not in one \
                    and one not in choices(root)[option]:
                found.append(f"{name}: {option} {one!r} is none of its choices {choices(root)[option]}")
    for role in re.findall(r"(?:the|The) `([a-z_]+)` role|\brole `([a-z_]+)`", text):
        role = role[0] or role[1]
        if role not in roles:
            found.append(f"{name}: role {role} does not exist")
    return tuple(found)


def test_readme_and_docs_name_only_what_exists():
    assert problems() == []


def test_readme_is_short_and_links_every_docs_page():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 120, "the README is what a newcomer reads in five minutes; the rest goes to docs/"
    for page in sorted((ROOT / "docs").glob("*.md")):
        assert "docs/%s" % page.name in text or page.name in {"development.md"} or \
            any("(%s)" % page.name in p.read_text() for p in pages() if p.name != page.name), \
            f"docs/{page.name} is reached from no page"


def test_the_readme_table_names_every_playbook():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    for playbook in sorted((ROOT / "playbooks").glob("*.yml")):
        assert f"playbooks/{playbook.name}" in text, f"the README's table lacks playbooks/{playbook.name}"


def make_help() -> str:
    return subprocess.run(["make", "-s", "--no-print-directory", "help"], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout


def test_make_help_lists_every_target():
    targets = tree()[4]
    listed = set(re.findall(r"^  ([a-z][a-z-]*)\s", make_help(), re.M))
    assert "static" in listed and "test" in listed
    missing = sorted(t for t in targets if not t.startswith("static-") and t not in listed)
    assert not missing, f"make help does not list: {missing} (add `## what it does` to the target's line)"
    assert "static-<check>" in make_help()


# --- the checks themselves, on a broken copy (what the tests above would say about a wrong page) ---

@pytest.fixture(scope="module")
def tree_copy(tmp_path_factory):
    """The tree as links, but for the pages: README.md, docs/ and every role's README.md are copies (the tests write
    to them); a role's other entries are links."""
    tmp_path = tmp_path_factory.mktemp("tree")
    for entry in ROOT.iterdir():
        if entry.name in {"README.md", "docs"}:
            subprocess.run(["cp", "-r", "--no-preserve=mode", str(entry), str(tmp_path)], check=True)
        elif entry.name == "roles":
            for role in entry.iterdir():
                (tmp_path / "roles" / role.name).mkdir(parents=True)
                for part in role.iterdir():
                    if part.name == "README.md":
                        (tmp_path / "roles" / role.name / part.name).write_text(part.read_text())
                    else:
                        (tmp_path / "roles" / role.name / part.name).symlink_to(part)
        elif entry.name not in NOT_WALKED:
            (tmp_path / entry.name).symlink_to(entry)
    return tmp_path


@pytest.fixture()
def copy(tree_copy):
    """The copy, its pages given back after each test. Only pages change, and neither tree() nor the names read from
    the code are read from them: their answers for the copy are computed once (cached per root) for all its tests."""
    kept = {page: page.read_text() for page in pages(tree_copy)}
    yield tree_copy
    for page, text in kept.items():
        page.write_text(text)


def add(copy, page, text):
    (copy / page).write_text((copy / page).read_text() + "\n" + text + "\n")


@pytest.mark.parametrize("line, expected", [
    ("see `roles/cuda/tasks/gone.yml`", "path roles/cuda/tasks/gone.yml is not in the tree"),
    ("see [x](data/nothing.yml)", "link data/nothing.yml leads nowhere"),
    ("run `make deploy`", "make deploy is no target of the Makefile"),
    ("set `cuda_nonexistent_knob: 1`", "cuda_nonexistent_knob is no variable of role cuda"),
    ("set `cuda_repo_base_urls`", "cuda_repo_base_urls is no variable of role cuda_repo"),
    ("set `-e dlbox_never_read=true`", "dlbox_never_read is read by no playbook"),
    ("the `cuda_magic` role", "role cuda_magic does not exist"),
    ("`ansible-playbook dlbox.stack.deploy`", "dlbox.stack.deploy is no playbook"),
    # rt47 L6: a removed filter whose plugin_utils file stays; a tag no task carries (the issue's own example)
    ("`'cuda' | dlbox.stack.role_plan(plan)`", "dlbox.stack.role_plan is no playbook, plugin or role"),
    ("run `make workstation EXTRA='--tags driver'`", "--tags driver is no tag"),
    ("`ansible-playbook playbooks/server.yml --tags=dcgm,gpu_fan`", "--tags gpu_fan is no tag"),
    ("`--skip-tags nvidia_driver_rebooot`", "--tags nvidia_driver_rebooot is no tag"),
    ("`module_utils/hostfacts.py`", "file module_utils/hostfacts.py is nowhere in the tree"),      # the case
    ("parsed in `_gone_facts.py`", "file _gone_facts.py is nowhere in the tree"),
    ("`.config/molecule/gone.yml`", "path .config/molecule/gone.yml is not in the tree"),
    ("`make build` writes `dlbox-stack-0.0.9.tar.gz`", "names version 0.0.9 of the collection"),
    ("`podman push registry.lab.example/dlbox-ee:0.0.9`", "names version 0.0.9 of the collection"),
    # a span wrapped across lines (Markdown reads the break as a space)
    ("run `ansible-playbook\nplaybooks/gone.yml` first", "path playbooks/gone.yml is not in the tree"),
    ("set `-e\ncuda_nonexistent_knob=1`", "cuda_nonexistent_knob is no variable of role cuda"),
    # a value against its argument spec's choices
    ("set `nvidia_driver_method: foo`", "nvidia_driver_method 'foo' is none of its choices"),
    ("`-e cuda_method=runfile`", "cuda_method 'runfile' is none of its choices"),
    ("```yaml\nnccl_profile: \"hpc\"\n```", "nccl_profile 'hpc' is none of its choices"),
    ("set `nvidia_driver_reboot` to `always`", "nvidia_driver_reboot 'always' is none of its choices"),
    ("`docker_source: docker-ce|moby`", "docker_source 'moby' is none of its choices"),
    ("`nvidia_driver_method:\nfoo`", "nvidia_driver_method 'foo' is none of its choices"),                # wrapped
    ("`nvidia_container_toolkit_runtimes: [docker, crio]`", "nvidia_container_toolkit_runtimes 'crio' is none"),
    # a setting is an option, whatever the role sets under that name
    ("`-e infiniband_state=ok`", "infiniband_state is no variable of role infiniband"),
])
def test_a_wrong_name_is_found(copy, line, expected):
    add(copy, "README.md", line)
    assert any(expected in p for p in problems(copy)), problems(copy)


@pytest.mark.parametrize("page, line, expected", [
    # a role's README is read as the pages are, its own paths from the role's folder
    ("roles/cuda/README.md", "see `tasks/gone.yml`", "path tasks/gone.yml is not in the tree"),
    ("roles/cuda/README.md", "see `roles/cuda/tasks/gone.yml`", "path roles/cuda/tasks/gone.yml is not in the tree"),
    ("roles/docker/README.md", "`tasks/pip_tree.yml`", "path tasks/pip_tree.yml is not in the tree"),  # cuda's file
    ("roles/cuda/README.md", "see [x](defaults/gone.yml)", "link defaults/gone.yml leads nowhere"),
    ("roles/nccl/README.md", "set `nccl_profile: hpc`", "nccl_profile 'hpc' is none of its choices"),
    ("roles/nccl/README.md", "set `nccl_nonexistent`", "nccl_nonexistent is no variable of role nccl"),
    ("roles/jetpack/README.md", "set `jetpack_pytorch_source:\n  pypi`", "jetpack_pytorch_source 'pypi' is none"),
    ("docs/workstation.md", "`cudnn_method=deb`", "cudnn_method 'deb' is none of its choices"),
])
def test_a_wrong_name_in_a_role_readme_or_docs_is_found(copy, page, line, expected):
    add(copy, page, line)
    assert any(expected in p for p in problems(copy)), problems(copy)


def test_the_pages_of_today_pass_in_the_copy(copy):
    assert problems(copy) == []


def test_every_role_readme_is_read():
    read = {p.parent.name for p in pages() if p.name == "README.md" and p.parent.parent == ROOT / "roles"}
    lacking = sorted(tree()[0] - read)
    assert not lacking, "%s: no README.md: write roles/<role>/README.md (docs/development.md, \"Adding a role\")" \
        % ", ".join("role '%s'" % r for r in lacking)
    assert read <= tree()[0], "a README.md under roles/ of no role (a folder without tasks/): %s" % sorted(read - tree()[0])


def test_every_role_has_argument_specs():
    """Every role's variables are described in its meta/argument_specs.yml (the pages' variables are checked
    against them; Ansible checks a role's input with them)."""
    lacking = sorted(role for role in tree()[0] if not (ROOT / "roles" / role / "meta" / "argument_specs.yml").is_file())
    assert not lacking, "%s: no meta/argument_specs.yml: describe each variable there (type, default, description; " \
        "docs/development.md, \"Adding a role\")" % ", ".join("role '%s'" % r for r in lacking)
