"""Golden plans on the REAL data/compat.yml (tests/unit/golden/<name>.json).

When a data refresh changes one of them on purpose, regenerate with
``.venv/bin/python tests/scripts/regen-golden.py`` and review the JSON diff; never edit the JSON by hand.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from ansible_collections.dlbox.stack.plugins.plugin_utils.stack_resolver import resolve
from ansible_collections.dlbox.stack.plugins.plugin_utils.compat_data import load_compat, load_gpu_index

GOLDEN = Path(__file__).resolve().parents[2] / "golden"  # tests/unit/golden
SCENARIOS = yaml.safe_load((GOLDEN / "scenarios.yml").read_text(encoding="utf-8"))


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s["name"] for s in SCENARIOS])
def test_golden_plan(scenario):
    data = load_compat()
    plan = resolve(data, load_gpu_index().host_from_hardware(scenario["hardware"]), scenario.get("request") or {},
                   gpu_index=load_gpu_index())
    stored = json.loads((GOLDEN / ("%s.json" % scenario["name"])).read_text(encoding="utf-8"))
    assert json.loads(json.dumps(plan)) == stored, (
        "the plan for %s on data/compat.yml changed; if the data change is intended, run "
        ".venv/bin/python tests/scripts/regen-golden.py and review the diff" % scenario["name"]
    )


def test_every_golden_file_has_a_scenario():
    names = {s["name"] for s in SCENARIOS}
    assert {p.stem for p in GOLDEN.glob("*.json")} == names
