# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""tests/scripts/check_collection_meta.py: each rule fails on a small collection that breaks it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

SCRIPTS = Path(__file__).resolve().parents[3] / "tests" / "scripts"
sys.path.insert(0, str(SCRIPTS))
import check_collection_meta as meta  # noqa: E402  pylint: disable=wrong-import-position

HEADER = "# Copyright: (c) 2026, dlbox.stack contributors\n" + meta.GPL_LINE + "\n"
GALAXY = {
    "namespace": "dlbox",
    "name": "stack",
    "version": "0.1.0",
    "authors": ["dlbox.stack contributors"],
    "license": ["GPL-3.0-or-later"],
    "dependencies": {"community.general": ">=8.0.0"},
    "repository": "https://github.com/dlbox/dlbox.stack",
    "documentation": "https://github.com/dlbox/dlbox.stack/blob/main/README.md",
    "issues": "https://github.com/dlbox/dlbox.stack/issues",
    "build_ignore": [".ansible", "tests"],
}
FILTER = HEADER + '''
class FilterModule(object):
    def filters(self):
        return {"double": lambda x: 2 * x, "triple": lambda x: 3 * x}
'''


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


@pytest.fixture(name="coll")
def coll_fixture(tmp_path):
    """A small collection that passes every rule."""
    _write(tmp_path / "galaxy.yml", yaml.safe_dump(GALAXY))
    _write(tmp_path / "meta" / "runtime.yml", 'requires_ansible: ">=2.19.0"\n')
    _write(tmp_path / ".gitignore", "/build/\n.ansible/\n")
    for name in meta.LICENCE_FILES:
        _write(tmp_path / name, "                    GNU GENERAL PUBLIC LICENSE\n                       Version 3\n")
    _write(tmp_path / "plugins" / "filter" / "maths.py", FILTER)
    for name in ("double", "triple"):
        _write(tmp_path / "plugins" / "filter" / f"{name}.yml", "DOCUMENTATION: {}\n")
    _write(tmp_path / "plugins" / "modules" / "thing.py", "#!/usr/bin/python\n# -*- coding: utf-8 -*-\n" + HEADER)
    _write(tmp_path / "tools" / "helper.sh", "#!/usr/bin/env bash\n" + HEADER + "echo hi\n")
    _write(tmp_path / "roles" / "base" / "README.md", "# base\n")
    _write(tmp_path / "roles" / "base" / "meta" / "main.yml", "galaxy_info:\n  license: GPL-3.0-or-later\n")
    _write(tmp_path / "roles" / "base" / "tasks" / "main.yml", "- community.general.ini_file: {}\n")
    return tmp_path


def _galaxy(coll: Path, **changes) -> None:
    data = dict(GALAXY)
    for key, value in changes.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    _write(coll / "galaxy.yml", yaml.safe_dump(data))


def _only(coll: Path, fragment: str) -> None:
    problems = meta.check(coll)
    assert len(problems) == 1 and fragment in problems[0], problems


def test_a_clean_collection_passes(coll):
    assert not meta.check(coll)
    assert meta.main(["check", str(coll)]) == 0


def test_filter_names_come_from_the_filters_method(coll):
    assert meta.filter_names(coll / "plugins" / "filter" / "maths.py") == ["double", "triple"]


def test_a_filter_without_sidecar_is_named(coll):
    (coll / "plugins" / "filter" / "triple.yml").unlink()
    _only(coll, "plugins/filter/triple.yml: missing; filter triple (in maths.py)")


def test_a_role_without_readme_is_named(coll):
    _write(coll / "roles" / "extra" / "tasks" / "main.yml", "[]\n")
    _only(coll, "roles/extra: no README.md")


@pytest.mark.parametrize("path", ["plugins/modules/thing.py", "tools/helper.sh"])
def test_a_file_without_the_gpl_line_is_named(coll, path):
    target = coll / path
    target.write_text(target.read_text(encoding="utf-8").replace(meta.GPL_LINE + "\n", ""), encoding="utf-8")
    _only(coll, f"{path}: no licence line")


def test_another_licence_in_a_header_is_refused(coll):
    _write(coll / "plugins" / "module_utils" / "old.py", HEADER + "# Apache License 2.0 (see galaxy.yml)\n")
    _only(coll, "plugins/module_utils/old.py: names another licence")


def test_a_missing_copyright_line_is_named(coll):
    _write(coll / "plugins" / "module_utils" / "bare.py", meta.GPL_LINE + "\n")
    _only(coll, "plugins/module_utils/bare.py: no '# Copyright: (c) ")


def test_galaxy_licence_must_be_gpl(coll):
    _galaxy(coll, license=["Apache-2.0"])
    _only(coll, "galaxy.yml: license must be [GPL-3.0-or-later]")


def test_licence_file_must_exist(coll):
    (coll / "LICENSE").unlink()
    _only(coll, "LICENSE: missing")


def test_role_meta_licence_must_agree(coll):
    _write(coll / "roles" / "base" / "meta" / "main.yml", "galaxy_info:\n  license: Apache-2.0\n")
    _only(coll, "roles/base/meta/main.yml: galaxy_info.license is 'Apache-2.0'")


@pytest.mark.parametrize("key, value, fragment", [
    ("repository", "https://example.invalid/dlbox/stack", "repository is a placeholder"),
    ("documentation", None, "documentation must be an https:// URL"),
    ("issues", "http://github.com/dlbox/dlbox.stack/issues", "issues must be an https:// URL"),
    ("authors", [], "authors must list at least one author"),
])
def test_metadata_must_be_real(coll, key, value, fragment):
    _galaxy(coll, **{key: value})
    _only(coll, fragment)


def test_an_unused_dependency_is_named(coll):
    _galaxy(coll, dependencies={"community.general": ">=8.0.0", "ansible.posix": ">=1.5.0"})
    _only(coll, "dependency ansible.posix is declared but no role, playbook or plugin uses it")


def test_requires_ansible_must_not_be_capped(coll):
    _write(coll / "meta" / "runtime.yml", 'requires_ansible: ">=2.19.0,<2.20.0"\n')
    _only(coll, "has an upper bound")


def test_ansible_cache_must_be_ignored_by_git(coll):
    _write(coll / ".gitignore", "/build/\n")
    _only(coll, ".gitignore: must list .ansible/")


def test_ansible_cache_must_stay_out_of_the_build(coll):
    _galaxy(coll, build_ignore=["tests"])
    _only(coll, "galaxy.yml: build_ignore must list .ansible")


def test_main_prints_every_problem_and_fails(coll, capsys):
    (coll / "roles" / "base" / "README.md").unlink()
    (coll / "plugins" / "filter" / "double.yml").unlink()
    assert meta.main(["check", str(coll)]) == 1
    out = capsys.readouterr().out
    assert "ERROR: roles/base: no README.md" in out
    assert "ERROR: plugins/filter/double.yml: missing" in out
    assert "2 problem(s)" in out
