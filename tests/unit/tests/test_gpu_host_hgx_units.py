# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The FIXTURE HGX overlay lays the persistence daemon's unit where the package does (/lib/systemd/system, the vendor
unit directory: nvidia-compute-utils-<branch>[-server] installs Ubuntu's there, tests/fixtures/persistenced/README.md),
not in /etc/systemd/system, which is the administrator's and would hide that the role only adds a drop-in."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[3]
INSTALL = ROOT / "tests" / "fixtures" / "gpu_host" / "hgx" / "install.yml"


def test_the_persistence_unit_is_laid_where_the_package_ships_it():
    tasks = yaml.safe_load(INSTALL.read_text(encoding="utf-8"))
    laid = [t["ansible.builtin.copy"]["dest"] for t in tasks
            if "nvidia-persistenced.service" in str((t.get("ansible.builtin.copy") or {}).get("dest", ""))]
    assert laid == ["/lib/systemd/system/nvidia-persistenced.service"]
