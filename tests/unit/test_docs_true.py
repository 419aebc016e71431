"""The README and docs/ stay true to the tree (issue 47): every path, playbook, role, make target and variable
they name exists, and `make help` lists every target of the Makefile.

What the pages name is read from their text, never from a list kept here: Markdown links, and the words inside
`code spans` and fenced blocks. A word counts as
- a path when its first part is a top-level entry of the repository (`roles/...`, `data/compat.yml`); a placeholder
  (`<role>`, `*`, `X.Y`) ends the check at the part before it;
- a playbook when it is `playbooks/NAME.yml` or `dlbox.stack.NAME` (a playbook, module, filter or role);
- a role when the text says "the `NAME` role" or "role `NAME`";
- a make target when it follows `make ` inside code;
- a role variable when it starts with a role's name and `_` (the longest such name): it must be a key of the
  role's `defaults/main.yml` or of an entry point of its `meta/argument_specs.yml` (a filter or module of the same
  name is not a variable); a `dlbox_*` variable must be read by a playbook, role, inventory or plugin.
The few words that look like these and are not (the user's own files in an example) are listed below with why.
"""

from __future__ import annotations

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
}
PLACEHOLDER = re.compile(r"[<>*{}$]|X\.Y|X-Y|\.\.\.")
IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")


def pages(root: Path = ROOT) -> list[Path]:
    return [root / "README.md"] + sorted((root / "docs").glob("*.md"))


def code_words(text: str) -> list[str]:
    """The words inside fenced blocks and `code spans`, split on spaces, quotes and brackets."""
    fenced = re.findall(r"^```[a-z]*\n(.*?)^```", text, re.S | re.M)
    rest = re.sub(r"^```[a-z]*\n.*?^```", "", text, flags=re.S | re.M)
    spans = re.findall(r"`([^`\n]+)`", rest)
    words = []
    for chunk in fenced + spans:
        words += [w for w in re.split(r"[\s'\"()\[\],;|]+", chunk) if w]
    return words


def code_chunks(text: str) -> list[str]:
    fenced = re.findall(r"^```[a-z]*\n(.*?)^```", text, re.S | re.M)
    rest = re.sub(r"^```[a-z]*\n.*?^```", "", text, flags=re.S | re.M)
    return fenced + re.findall(r"`([^`\n]+)`", rest)


@lru_cache(maxsize=None)
def tree(root: Path = ROOT):
    """What the pages may name: top-level entries, roles and their variables, playbooks, plugins, make targets."""
    roles = {p.name for p in (root / "roles").iterdir() if (p / "tasks").is_dir()}
    variables = {}
    for role in roles:
        keys = set(yaml.safe_load((root / "roles" / role / "defaults" / "main.yml").read_text()) or {})
        specs = yaml.safe_load((root / "roles" / role / "meta" / "argument_specs.yml").read_text())
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
def dlbox_variables_read(root: Path = ROOT) -> str:
    return "\n".join(p.read_text(errors="replace") for d in ("playbooks", "roles", "inventories", "plugins")
                     for p in (root / d).rglob("*") if p.is_file() and p.suffix in (".yml", ".yaml", ".py", ".j2"))


def problems(root: Path = ROOT) -> list[str]:
    roles, variables, plugins, playbooks, targets, top = tree(root)
    read = None
    found = []
    for page in pages(root):
        text = page.read_text(encoding="utf-8")
        name = page.relative_to(root)
        for link in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
            if not re.match(r"[a-z]+:", link) and not (page.parent / link).exists():
                found.append(f"{name}: link {link} leads nowhere")
        for word in code_words(text):
            word = word.strip(".:")
            if "/" in word and word.split("/")[0] in top and word not in NOT_IN_TREE and not word.startswith("http"):
                path = word.split("=")[-1]
                parts = []
                for part in path.split("/"):
                    if PLACEHOLDER.search(part) or not part:
                        break
                    parts.append(part)
                if parts and not (root / "/".join(parts)).exists():
                    found.append(f"{name}: path {word} is not in the tree")
            m = re.fullmatch(r"dlbox\.stack\.([a-z_]+)", word)
            if m and m.group(1) not in playbooks | plugins | roles:
                found.append(f"{name}: {word} is no playbook, plugin or role of the collection")
        for chunk in code_chunks(text):
            for target in re.findall(r"(?:^|[\s;&|(])make ([a-z][a-z-]*)", chunk):
                if target not in targets:
                    found.append(f"{name}: make {target} is no target of the Makefile")
            for ident in IDENT.findall(chunk):
                ident = ident.split(".")[0]
                if ident.endswith("_"):             # a prefix: `cuda_*`
                    continue
                owner = max((r for r in roles if ident.startswith(r + "_")), key=len, default=None)
                if owner and ident not in variables[owner] and ident not in plugins:
                    found.append(f"{name}: {ident} is no variable of role {owner} (defaults or argument specs)")
                if ident.startswith("dlbox_") and ident not in plugins:
                    read = read if read is not None else dlbox_variables_read(root)
                    if not re.search(r"\b%s\b" % re.escape(ident), read):
                        found.append(f"{name}: {ident} is read by no playbook, role, inventory or plugin")
        for role in re.findall(r"(?:the|The) `([a-z_]+)` role|\brole `([a-z_]+)`", text):
            role = role[0] or role[1]
            if role not in roles:
                found.append(f"{name}: role {role} does not exist")
    return sorted(set(found))


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
    tmp_path = tmp_path_factory.mktemp("tree")
    subprocess.run(["cp", "-r", "--no-preserve=mode"] + [str(ROOT / n) for n in
                   ("README.md", "docs", "roles", "playbooks", "plugins", "Makefile", "data", "inventories", "molecule",
                    "tests", "tools", "LICENSE", "CHANGELOG.rst", "requirements.txt", "requirements-dev.txt", "examples",
                    "meta", "galaxy.yml", "changelogs", ".config")] +
                   [str(tmp_path)], check=True)
    return tmp_path


@pytest.fixture()
def copy(tree_copy):
    """The copy, its README given back after each test. Only the README changes, and neither tree() nor
    dlbox_variables_read() reads it: their answers for the copy are computed once (cached per root) for all its tests."""
    readme = (tree_copy / "README.md").read_text()
    yield tree_copy
    (tree_copy / "README.md").write_text(readme)


@pytest.mark.parametrize("line, expected", [
    ("see `roles/cuda/tasks/gone.yml`", "path roles/cuda/tasks/gone.yml is not in the tree"),
    ("see [x](data/nothing.yml)", "link data/nothing.yml leads nowhere"),
    ("run `make deploy`", "make deploy is no target of the Makefile"),
    ("set `cuda_nonexistent_knob: 1`", "cuda_nonexistent_knob is no variable of role cuda"),
    ("set `cuda_repo_base_urls`", "cuda_repo_base_urls is no variable of role cuda_repo"),
    ("set `-e dlbox_never_read=true`", "dlbox_never_read is read by no playbook"),
    ("the `cuda_magic` role", "role cuda_magic does not exist"),
    ("`ansible-playbook dlbox.stack.deploy`", "dlbox.stack.deploy is no playbook"),
])
def test_a_wrong_name_is_found(copy, line, expected):
    (copy / "README.md").write_text((copy / "README.md").read_text() + "\n" + line + "\n")
    assert any(expected in p for p in problems(copy)), problems(copy)


def test_the_pages_of_today_pass_in_the_copy(copy):
    assert problems(copy) == []
