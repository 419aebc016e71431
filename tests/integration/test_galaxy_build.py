"""The collection tarball carries the collection, not its tests, images or Molecule scenarios."""

from __future__ import annotations

import subprocess
import tarfile

from conftest import ROOT, ansible_env


def test_build_excludes_test_material(tmp_path):
    proc = subprocess.run(
        ["ansible-galaxy", "collection", "build", "--output-path", str(tmp_path), str(ROOT)],
        env=ansible_env(), capture_output=True, text=True, check=False, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    (tarball,) = tmp_path.glob("dlbox-stack-*.tar.gz")
    names = tarfile.open(tarball).getnames()
    for must in ("MANIFEST.json", "FILES.json", "meta/runtime.yml", "data/compat.yml",
                 "roles/common/tasks/main.yml", "plugins/modules/gpu_facts.py", "playbooks/plan.yml"):
        assert must in names, must
    for banned in ("tests/", "molecule/", ".config/", ".ci/", "build/", ".venv/", ".pytest_cache/", "tools/", "Makefile", "ansible.cfg"):
        assert not [n for n in names if n == banned.rstrip("/") or n.startswith(banned)], banned
