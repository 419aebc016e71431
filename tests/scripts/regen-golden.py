# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Regenerate the golden plans (tests/unit/golden/<name>.json) from the REAL data/compat.yml.

    .venv/bin/python tests/scripts/regen-golden.py [--check]

Each scenario of tests/unit/golden/scenarios.yml is planned on data/compat.yml and written as sorted,
indented JSON, so `git diff tests/unit/golden` shows what a data refresh changes. --check writes
nothing and exits 1 when a stored plan differs (what tests/unit/plugins/module_utils/test_golden_plans.py
checks).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "unit" / "golden"
sys.path.insert(0, str(ROOT / "tests" / "unit"))
import conftest  # noqa: E402,F401  pylint: disable=unused-import,wrong-import-position

from ansible_collections.dlbox.stack.plugins.plugin_utils.stack_resolver import resolve  # noqa: E402
from ansible_collections.dlbox.stack.plugins.plugin_utils.compat_data import load_compat, load_gpu_index  # noqa: E402


def scenarios():
    with open(GOLDEN / "scenarios.yml", encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def plan_text(data, scenario):
    plan = resolve(data, load_gpu_index().host_from_hardware(scenario["hardware"]), scenario.get("request") or {},
                   gpu_index=load_gpu_index())
    return json.dumps(plan, indent=2, sort_keys=True) + "\n"


def main(argv):
    check = "--check" in argv
    data = load_compat()
    differ = []
    for scenario in scenarios():
        path = GOLDEN / ("%s.json" % scenario["name"])
        text = plan_text(data, scenario)
        old = path.read_text(encoding="utf-8") if path.is_file() else None
        if old == text:
            continue
        differ.append(path.name)
        if not check:
            path.write_text(text, encoding="utf-8")
    verb = "differ" if check else "rewritten"
    print("golden plans %s: %s" % (verb, ", ".join(differ) if differ else "none"))
    return 1 if check and differ else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
