"""docs/development.md's Layout table names the whole tree (issue 47).

test_docs_true.py keeps what the pages name true to the tree; this keeps the Layout table from going stale by
omission (at 6799a6b the README's Layout named 3 of 12 playbooks and 3 of the 6 filters of stack.py). What the
table must name is read from the tree, never from a list kept here:
- every top-level entry git tracks (dotfiles of one tool's settings, ``.gitignore``, ``.yamllint``, ``.ansible-lint``,
  are left out; their folders are not);
- every folder under ``plugins/`` and ``tests/``;
- every data file (``data/*.yml``), every module (``plugins/modules/*.py``) and every role module
  (``plugins/plugin_utils/roles/<role>.py``).
An entry is named when a row's first cell names it or something inside it (``inventories/local`` names
``inventories``), or when its file name, with or without ``.py``/``.yml``, appears in the row of its folder (``compat.yml`` in
``data/``'s row, ``gpu_facts`` in ``plugins/modules/``'s).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = "docs/development.md"
TOOL_SETTINGS = {".gitignore", ".yamllint", ".ansible-lint"}


def layout_rows(root: Path = ROOT) -> list[tuple[set[str], set[str]]]:
    """(the code words of the first cell, the code words of the whole row) for each row of the Layout table."""
    text = (root / PAGE).read_text(encoding="utf-8")
    section = re.search(r"^## Layout\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    assert section, f"{PAGE} has no '## Layout' section"
    rows = []
    for line in section.group(1).splitlines():
        cells = line.strip().strip("|").split("|")
        if not line.startswith("|") or len(cells) < 2 or set(cells[0].strip()) <= set("-: "):
            continue
        first = {w.rstrip("/") for w in re.findall(r"`([^`]+)`", cells[0])}
        every = {w.rstrip("/") for w in re.findall(r"`([^`]+)`", line)}
        rows.append((first, every))
    return rows


def tracked(root: Path = ROOT) -> list[str]:
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=root,
                         capture_output=True, check=True).stdout.decode()
    return [p for p in out.split("\0") if p and (root / p).exists()]


def must_name(root: Path = ROOT) -> list[str]:
    files = tracked(root)
    top = {p.split("/")[0] for p in files} - TOOL_SETTINGS
    folders = {"/".join(p.split("/")[:2]) for p in files if p.startswith(("plugins/", "tests/")) and p.count("/") >= 2}
    named = {p for p in files if re.fullmatch(r"data/[^/]+\.yml|plugins/modules/[^/_][^/]*\.py|"
                                              r"plugins/plugin_utils/roles/[^/_][^/]*\.py", p)}
    return sorted(top | folders | named)


def unnamed(root: Path = ROOT) -> list[str]:
    rows = layout_rows(root)
    missing = []
    for entry in must_name(root):
        parts = entry.split("/")
        if any(w == entry or w.startswith(entry + "/") for row in rows for w in row[0]):
            continue
        parent = "/".join(parts[:-1])
        names = {parts[-1], re.sub(r"\.(py|yml)$", "", parts[-1])}
        if parent and any(parent in first and names & every for first, every in rows):
            continue
        missing.append(entry)
    return missing


def test_the_layout_table_names_the_whole_tree():
    assert unnamed() == [], f"{PAGE}'s Layout table does not name these; add them to its rows"


def test_the_layout_table_is_read():
    rows = layout_rows()
    assert len(rows) >= 10 and any("data" in row[0] for row in rows)
    assert "data/compat.yml" in must_name() and "plugins/modules/gpu_facts.py" in must_name()


# --- the check on a broken copy: what it says when the tree grows and the table does not -----------------------

def test_a_new_folder_data_file_or_module_is_found(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "docs").mkdir()
    (tmp_path / PAGE).write_text((ROOT / PAGE).read_text(encoding="utf-8"), encoding="utf-8")
    for rel in ("data/compat.yml", "plugins/modules/gpu_facts.py", "tests/unit/test_x.py",
                "data/new_vendor.yml", "plugins/modules/new_facts.py", "tests/newsuite/test_y.py", "newtop/x.txt",
                "plugins/plugin_utils/roles/_private.py", ".yamllint"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("")
    assert unnamed(tmp_path) == ["data/new_vendor.yml", "newtop", "plugins/modules/new_facts.py", "tests/newsuite"]
