# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""--tags that names no tag of the collection is refused (issue 47 red team rt47 H1): `--tags driver` ran nothing and
exited 0. plan.yml's always-tagged first play reads the roles' own task tags (roles/*/tasks/*.yml, `tags: [...]`) and
refuses any other name, listing the roles' tags; all and always pass. Real ansible-playbook, check mode, local."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from test_preflight_tags_scenario import _run  # pylint: disable=import-error

ROOT = Path(__file__).resolve().parents[2]


def _tags(node):
    if isinstance(node, dict):
        tags = node.get("tags")
        yield from ([tags] if isinstance(tags, str) else tags or [])
        for value in node.values():
            yield from _tags(value)
    elif isinstance(node, list):
        for value in node:
            yield from _tags(value)


def test_the_plays_reading_of_the_tags_is_the_yaml_tags_of_the_roles_and_covers_the_playbooks():
    files = sorted((ROOT / "roles").glob("*/tasks/*.yml"))
    # plan.yml's reading: the regex on each file's text (flow lists), as the play does it
    read = {t.strip() for f in files for m in re.findall(r"tags: .([^]]*)", f.read_text(encoding="utf-8"))
            for t in m.split(",")}
    yaml_tags = {t for f in files for t in _tags(yaml.safe_load(f.read_text(encoding="utf-8")))}
    assert read == yaml_tags
    roles = {f.parts[-3] for f in files}
    untagged = sorted(roles - yaml_tags)    # each role's name is a tag of its own tasks
    assert not untagged, "; ".join(
        "role '%s' has no tag of its name: add tags: [%s, %s_<step>] to each import in roles/%s/tasks/main.yml "
        "(docs/development.md, \"Adding a role\")" % (r, r, r, r) for r in untagged)
    played = {t for f in (ROOT / "playbooks").rglob("*.yml") for t in _tags(yaml.safe_load(f.read_text(encoding="utf-8")))}
    assert played <= yaml_tags | {"always", "never"}, \
        "playbooks/ tag tasks with %s, which no role's task carries" % sorted(played - yaml_tags - {"always", "never"})


def test_the_tags_a_playbook_reads_are_accepted():
    """server.yml runs acceptance where ansible_run_tags has 'acceptance' (no task carries that tag): plan.yml's
    __dlbox_tags_read lists each name a playbook or role reads from ansible_run_tags, and only those."""
    read = {name.strip(" '\"") for top in ("playbooks", "roles") for f in (ROOT / top).rglob("*.yml")
            if "plan.yml" != f.name
            for m in re.findall(r"ansible_run_tags \| intersect\(\[([^]]*)\]", f.read_text(encoding="utf-8"))
            for name in m.split(",")} - {"all"}
    first = yaml.safe_load((ROOT / "playbooks" / "plan.yml").read_text(encoding="utf-8"))[0]["tasks"]
    check = next(t for t in first if t.get("name") == "Check that --tags names tags of the collection's roles")
    assert read == {"acceptance"} and check["vars"]["__dlbox_tags_read"] == sorted(read), read


def test_a_tag_that_names_no_role_is_refused_with_the_roles_tags(tmp_path):
    returncode, out = _run(tmp_path, "--tags", "driver", playbook=ROOT / "playbooks" / "plan.yml")
    assert returncode != 0, out[-3000:]
    assert "--tags driver: no role of dlbox.stack has that tag" in out and "nvidia_driver, package_cache" in out, out[-3000:]


def test_a_roles_tag_or_step_tag_passes(tmp_path):
    returncode, out = _run(tmp_path, "--tags", "nvidia_driver_install,cuda,always,acceptance",
                           playbook=ROOT / "playbooks" / "plan.yml")
    assert returncode == 0 and "no role of dlbox.stack has that tag" not in out, out[-3000:]
