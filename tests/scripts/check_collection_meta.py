# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Packaging facts that Galaxy's importer and antsibull-docs do not check, or check only one at a time.

    python3 tests/scripts/check_collection_meta.py [COLLECTION_DIR]

Prints one line per problem (naming the file and what would fix it) and exits 1 when there is any.
Every rule looks at what is on disk, not at a list of today's roles or filters, so a new role
without a README or a new filter without a docs sidecar is caught the day it is added:

* one licence: galaxy.yml says GPL-3.0-or-later, LICENSE and LICENSES/GPL-3.0-or-later.txt exist,
  every Python and shell file under plugins/ and tools/ carries the copyright and GPL lines near its
  top and no other licence, every role's meta/main.yml names the same licence;
* metadata: repository, documentation and issues URLs that are not placeholders, authors,
  requires_ansible without an upper bound, every declared dependency used somewhere;
* docs: a README.md for every role, a plugins/filter/<name>.yml sidecar for every filter that a
  FilterModule in plugins/filter/ returns;
* caches: .ansible/ is in .gitignore and in galaxy.yml's build_ignore.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import yaml

LICENCE = "GPL-3.0-or-later"
LICENCE_FILES = ("LICENSE", "LICENSES/GPL-3.0-or-later.txt")
COPYRIGHT_LINE = "# Copyright: (c) "
GPL_LINE = "# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)"
HEADER_LINES = 6  # the licence lines must sit within the first lines (after a shebang/coding line)
OTHER_LICENCES = re.compile(r"Apache License|Apache-2\.0|MIT License|BSD[- ]\d-Clause|Mozilla Public License")
PLACEHOLDER_HOSTS = re.compile(r"example\.(invalid|com|org|net)|localhost|TODO|FIXME", re.IGNORECASE)
HEADER_SUFFIXES = (".py", ".sh")
USAGE_SUFFIXES = (".yml", ".yaml", ".py", ".j2")


def _read_yaml(path: Path):
    with path.open(encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def header_problems(path: Path, rel: str) -> list[str]:
    """Problems with the licence header of one source file (empty when it is right)."""
    head = path.read_text(encoding="utf-8", errors="replace").splitlines()[:HEADER_LINES]
    problems = []
    if not any(line.startswith(COPYRIGHT_LINE) and "dlbox.stack contributors" in line for line in head):
        problems.append(f"{rel}: no '{COPYRIGHT_LINE}<year>, dlbox.stack contributors' line in its first {HEADER_LINES} lines")
    if GPL_LINE not in head:
        problems.append(f"{rel}: no licence line in its first {HEADER_LINES} lines; add: {GPL_LINE}")
    other = [line for line in head if OTHER_LICENCES.search(line)]
    if other:
        problems.append(f"{rel}: names another licence ({other[0].strip()}); the collection is {LICENCE} only")
    return problems


def licence_problems(root: Path, galaxy: dict) -> list[str]:
    problems = []
    if galaxy.get("license") != [LICENCE] or galaxy.get("license_file"):
        problems.append(f"galaxy.yml: license must be [{LICENCE}] (and no license_file), not "
                        f"{galaxy.get('license') or galaxy.get('license_file')!r}")
    for name in LICENCE_FILES:
        if not (root / name).is_file():
            problems.append(f"{name}: missing; ship the text of the GNU GPL v3")
        elif "GNU GENERAL PUBLIC LICENSE" not in (root / name).read_text(encoding="utf-8", errors="replace")[:200]:
            problems.append(f"{name}: is not the text of the GNU GPL v3")
    for top in ("plugins", "tools"):
        for path in sorted((root / top).rglob("*")):
            if path.is_file() and path.suffix in HEADER_SUFFIXES and "__pycache__" not in path.parts:
                problems.extend(header_problems(path, path.relative_to(root).as_posix()))
    for meta in sorted(root.glob("roles/*/meta/main.yml")):
        info = (_read_yaml(meta) or {}).get("galaxy_info") or {}
        if "license" in info and info["license"] != LICENCE:
            problems.append(f"{meta.relative_to(root).as_posix()}: galaxy_info.license is {info['license']!r}; "
                            f"the collection is {LICENCE}")
    return problems


def _url_problem(galaxy: dict, key: str) -> str | None:
    value = galaxy.get(key)
    if not value or not isinstance(value, str) or not value.startswith("https://"):
        return f"galaxy.yml: {key} must be an https:// URL, not {value!r}"
    if PLACEHOLDER_HOSTS.search(value):
        return f"galaxy.yml: {key} is a placeholder ({value}); give the real URL"
    return None


def _uses(root: Path, fqcn_prefix: str) -> bool:
    """Whether any role, playbook or plugin file mentions ``<namespace>.<name>.``."""
    needle = re.compile(re.escape(fqcn_prefix) + r"\.\w")
    for top in ("roles", "playbooks", "plugins"):
        for path in (root / top).rglob("*"):
            if path.is_file() and path.suffix in USAGE_SUFFIXES and needle.search(path.read_text(encoding="utf-8", errors="replace")):
                return True
    return False


def metadata_problems(root: Path, galaxy: dict) -> list[str]:
    problems = [p for p in (_url_problem(galaxy, key) for key in ("repository", "documentation", "issues")) if p]
    authors = galaxy.get("authors") or []
    if not authors or any(not isinstance(a, str) or not a.strip() for a in authors):
        problems.append("galaxy.yml: authors must list at least one author")
    runtime = root / "meta" / "runtime.yml"
    requires = str((_read_yaml(runtime) or {}).get("requires_ansible", "")) if runtime.is_file() else ""
    if not requires.startswith(">="):
        problems.append(f"meta/runtime.yml: requires_ansible must be a lower bound such as '>=2.19.0', not {requires!r}")
    elif "<" in requires:
        problems.append(f"meta/runtime.yml: requires_ansible {requires!r} has an upper bound; the community "
                        "guidelines advise none")
    for dependency in sorted(galaxy.get("dependencies") or {}):
        if not _uses(root, dependency):
            problems.append(f"galaxy.yml: dependency {dependency} is declared but no role, playbook or plugin "
                            f"uses it; remove it")
    ignored = galaxy.get("build_ignore") or []
    if ".ansible" not in ignored:
        problems.append("galaxy.yml: build_ignore must list .ansible (ansible-lint's cache)")
    gitignore = root / ".gitignore"
    lines = gitignore.read_text(encoding="utf-8").split() if gitignore.is_file() else []
    if not {".ansible/", "/.ansible/", ".ansible"} & set(lines):
        problems.append(".gitignore: must list .ansible/ (ansible-lint's cache), or copies of the tree sweep it in")
    return problems


def filter_names(path: Path) -> list[str]:
    """Names a filter plugin file exports: the keys of the dict literal that ``filters()`` returns."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "filters":
            for ret in ast.walk(node):
                if isinstance(ret, ast.Return) and isinstance(ret.value, ast.Dict):
                    names.extend(k.value for k in ret.value.keys if isinstance(k, ast.Constant) and isinstance(k.value, str))
    return names


def docs_problems(root: Path) -> list[str]:
    problems = []
    for role in sorted(p for p in (root / "roles").iterdir() if p.is_dir()) if (root / "roles").is_dir() else []:
        if not (role / "README.md").is_file():
            problems.append(f"roles/{role.name}: no README.md (what the role does and an example; the variables "
                            "come from meta/argument_specs.yml)")
    for plugin in sorted((root / "plugins" / "filter").glob("*.py")):
        if plugin.name == "__init__.py":
            continue
        for name in filter_names(plugin):
            if not (plugin.parent / f"{name}.yml").is_file():
                problems.append(f"plugins/filter/{name}.yml: missing; filter {name} (in {plugin.name}) needs a docs "
                                "sidecar with DOCUMENTATION, EXAMPLES and RETURN")
    return problems


def check(root: Path) -> list[str]:
    """Every problem found in the collection at ``root``."""
    galaxy = _read_yaml(root / "galaxy.yml") or {}
    return licence_problems(root, galaxy) + metadata_problems(root, galaxy) + docs_problems(root)


def main(argv: list[str]) -> int:
    root = Path(argv[1] if len(argv) > 1 else ".").resolve()
    problems = check(root)
    for problem in problems:
        print(f"ERROR: {problem}")
    print(f"collection meta: {len(problems)} problem(s) in {root}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
