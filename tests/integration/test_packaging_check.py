# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The packaging check of `make lint` (tests/scripts/check-packaging.sh) fails on a deliberate break.

Each case copies the working tree (what `git clone` would give, plus files not yet committed), adds
what an engineer might forget and runs the check on the copy: a new filter without a docs sidecar, a
new role without a README. Nothing lists today's filters or roles, so the check must find them by
itself; Galaxy's importer and antsibull-docs must each say so, not only the project's meta check.
The check passing on the real tree is `make lint` itself (in full; the cases here skip the importer's ansible-lint
pass and the execution-environment step, which find neither break).
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from conftest import ROOT

CHECK = ROOT / "tests" / "scripts" / "check-packaging.sh"


def _copy_tree(dest):
    files = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                           capture_output=True, text=True, check=True).stdout
    for rel in filter(None, files.split("\0")):
        src = ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    return dest


def _check(tree):
    # DLBOX_PACKAGING_QUICK: no ansible-lint pass in the importer and no execution-environment step (neither finds a
    # missing README or missing docs; make lint runs them on the real tree): about half the check's CPU a case.
    env = dict(os.environ, DLBOX_PACKAGING_QUICK="1")
    proc = subprocess.run(["bash", str(CHECK), str(tree)], capture_output=True, text=True, check=False, timeout=900,
                          env=env)
    return proc.returncode, proc.stdout + proc.stderr


@pytest.fixture(name="tree")
def tree_fixture(tmp_path):
    return _copy_tree(tmp_path / "stack")


NEW_FILTER = '''# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A filter someone forgot to document."""


class FilterModule(object):

    def filters(self):
        return {"forgotten_double": lambda value: 2 * value}
'''


def test_a_filter_without_docs_fails_the_check(tree):
    (tree / "plugins" / "filter" / "forgotten.py").write_text(NEW_FILTER, encoding="utf-8")
    rc, out = _check(tree)
    assert rc == 1, out
    assert "ERROR: plugins/filter/forgotten_double.yml: missing" in out, out  # the meta check
    importer = [line for line in out.splitlines() if line.startswith("ERROR: Error running ansible-doc")]
    assert importer and "dlbox.stack.forgotten_double Missing documentation" in importer[0], out  # Galaxy's importer
    assert "plugins/filter/forgotten_double.py:0:0: Missing documentation" in out, out  # antsibull-docs
    assert "packaging: FAILED (collection meta,galaxy-importer,antsibull-docs lint)" in out, out


def test_a_role_without_readme_fails_the_check(tree):
    shutil.copytree(tree / "roles" / "common", tree / "roles" / "forgotten")
    (tree / "roles" / "forgotten" / "README.md").unlink()
    rc, out = _check(tree)
    assert rc == 1, out
    assert "ERROR: roles/forgotten: no README.md" in out, out  # the meta check
    assert "ERROR: The import failed for the following reason: No role readme found." in out, out  # the importer
    assert "packaging: FAILED (collection meta,galaxy-importer" in out, out
