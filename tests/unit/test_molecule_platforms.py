# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every Molecule scenario's EFFECTIVE configuration, loaded as `molecule test` loads it (Molecule's own Config with the
base configurations tests/scripts/molecule.sh layers: .config/molecule/config.yml, dind.yml where
.config/molecule/scenarios.txt says `dind`, suite.yml), and each platform as docker runs it (molecule_containers.py:
the one test-container definition .config/molecule/platform.yml under what the scenario names). No Docker.

What every test container must be (shared docs/test-platform.md: a systemd container that works on this machine
kind): systemd as PID 1, SYS_ADMIN (never --privileged, which fails here), the host's cgroup namespace and cgroup
mount, tmpfs /run, /run/lock, /tmp, the image the platform's name says, and the suite's package cache mounts unless it
is one of the hosts that must not have them. A scenario's molecule.yml holds only what differs (issue 47): no
platform sets `command` (which takes it as written, the base left out) but those cache-less hosts, and no key
repeats the base configuration.
"""
from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "scripts"))
import molecule_containers as mc  # noqa: E402  pylint: disable=wrong-import-position

MOLECULE = ROOT / ".config" / "molecule"
# tests/images/build.sh's platforms ("all" in scenarios.txt: every one but the opt-in ubuntu2604)
ALL = ["debian12", "ubuntu2204", "ubuntu2404"]
CACHE_MOUNTS = {"/etc/apt/apt.conf.d/01dlbox-test-cache", "/etc/xdg/pip/pip.conf"}
# The hosts without the suite's package cache: offline's cut-off workstations (an internal network only) and
# package_cache's clients (their cache is the scenario's cache host, whose figures verify measures).
CACHELESS = {"offline": ["dlbox-offline-{d}"], "offline_gpu": ["dlbox-offline-gpu-{d}"],
             "package_cache": ["dlbox-pcache-client1-{d}", "dlbox-pcache-client2-{d}", "dlbox-pcache-client3-{d}"]}


def table() -> dict[str, list[str]]:
    rows = {}
    for line in (MOLECULE / "scenarios.txt").read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            fields = line.split()
            rows[fields[0]] = fields
    return rows


SCENARIOS = sorted(p.parent.name for p in (ROOT / "molecule").glob("*/molecule.yml"))
TABLE = table()


def distros(scenario: str) -> list[str]:
    """The platforms molecule.sh runs the scenario on (scenarios.txt's platforms column), then a hand run's (unset)."""
    out: list[str] = []
    for column in TABLE.get(scenario, [scenario, "all"])[1].split(","):
        out += [d for d in (ALL if column == "all" else [column]) if d not in out]
    return out + [""]


def base_configs(scenario: str) -> list[str]:
    """The base configurations molecule.sh gives `molecule test` (its run_scenario)."""
    dind = TABLE.get(scenario, [scenario, "all", "-"])[2] == "dind"
    return [str(MOLECULE / f) for f in ["config.yml", *(["dind.yml"] if dind else []), "suite.yml"]]


@pytest.fixture(scope="module")
def loaded(tmp_path_factory):
    """{(scenario, distro): (Molecule's config_data, [platform as docker runs it])} for every scenario and platform."""
    from molecule.config import Config  # pylint: disable=import-outside-toplevel

    saved = dict(os.environ)
    os.environ.update({"PATH": f"{ROOT / '.venv' / 'bin'}{os.pathsep}{os.environ['PATH']}",  # Molecule runs ansible-config
                       "MOLECULE_PROJECT_DIRECTORY": str(ROOT),
                       "MOLECULE_EPHEMERAL_DIRECTORY": str(tmp_path_factory.mktemp("molecule-state")),
                       "DLBOX_TEST_CACHE_CLIENT": "build/test-cache/client"})
    out = {}
    try:
        for scenario in SCENARIOS:
            for distro in distros(scenario):
                os.environ.pop("MOLECULE_DISTRO", None)
                if distro:
                    os.environ["MOLECULE_DISTRO"] = distro
                os.environ["MOLECULE_SCENARIO_NAME"] = scenario
                config = Config(str(ROOT / "molecule" / scenario / "molecule.yml"),
                                args={"base_config": base_configs(scenario)})
                base = mc.base_platform()
                out[scenario, distro] = (config.config_data, [mc.with_base(p, base) for p in config.config_data["platforms"]])
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return out


def test_every_scenario_is_loaded_on_its_platforms(loaded):
    assert len(SCENARIOS) >= 40 and {s for s, _distro in loaded} == set(SCENARIOS)
    assert ("server", "debian12") in loaded and ("gpu_host_blackwell", "ubuntu2404") in loaded
    assert ("gpu_host_blackwell", "debian12") not in loaded                     # scenarios.txt: ubuntu2404 only


def test_every_test_container_is_the_suites_systemd_container(loaded):
    wrong = []
    for (scenario, distro), (_config, platforms) in loaded.items():
        for p in platforms:
            where = f"{scenario} {distro or '(MOLECULE_DISTRO unset)'} {p['name']}"
            tmpfs = {str(t).split(":", maxsplit=1)[0] for t in p.get("tmpfs") or []}
            checks = {"pre_build_image": p.get("pre_build_image") is True,
                      "command systemd": p.get("command") == "/lib/systemd/systemd",
                      "cgroupns_mode host": p.get("cgroupns_mode") == "host",
                      "SYS_ADMIN": "SYS_ADMIN" in (p.get("capabilities") or []),
                      "not privileged": not p.get("privileged"),
                      "tmpfs /run /run/lock /tmp": {"/run", "/run/lock", "/tmp"} <= tmpfs,
                      "cgroup mount": "/sys/fs/cgroup:/sys/fs/cgroup:rw" in (p.get("volumes") or []),
                      "stop_signal": p.get("stop_signal") == "SIGRTMIN+3"}
            wrong += [f"{where}: {check}" for check, ok in checks.items() if not ok]
    assert wrong == []


def test_the_image_is_the_one_the_platform_name_and_molecule_distro_say(loaded):
    """dlbox-test:<distro>, the distro its name ends in, and MOLECULE_DISTRO's where set (molecule.sh always sets it)."""
    wrong = []
    for (scenario, distro), (_config, platforms) in loaded.items():
        for p in platforms:
            tag = p["image"].split(":")[1] if p["image"].startswith("dlbox-test:") else None
            if tag is None or not p["name"].endswith(f"-{tag}") or (distro and tag != distro):
                wrong.append(f"{scenario} {distro or '(unset)'}: {p['name']} {p['image']}")
    assert wrong == []


def test_only_the_cut_off_hosts_and_the_fleets_clients_lack_the_package_cache(loaded):
    cacheless = set()
    for (scenario, distro), (_config, platforms) in loaded.items():
        for p in platforms:
            mounts = {v.split(":")[1] for v in p.get("volumes") or [] if ":" in v}
            if not CACHE_MOUNTS <= mounts:
                cacheless.add((scenario, distro, p["name"]))
            else:
                assert f"{ROOT}/build/test-cache/client/apt.conf:/etc/apt/apt.conf.d/01dlbox-test-cache:ro" in p["volumes"]
    want = {(s, d, n.format(d=d or "debian12")) for s, names in CACHELESS.items() for d in distros(s) for n in names}
    assert cacheless == want


def test_a_molecule_yml_holds_only_what_differs_from_the_base_platform():
    """No platform sets `command` (taken as written, the base platform left out) but the cache-less hosts, which Molecule's
    schema gives no other way to leave the cache mounts out; and a thin platform repeats nothing of platform.yml."""
    base = mc.base_platform(environ={})
    written, repeated = set(), []
    for scenario in SCENARIOS:
        text = (ROOT / "molecule" / scenario / "molecule.yml").read_text(encoding="utf-8")
        for p in (yaml.safe_load(text) or {}).get("platforms") or []:
            name = re.sub(r"\$\{MOLECULE_DISTRO:-\w+\}", "{d}", p["name"])
            if "command" in p:
                written.add((scenario, name))
                continue
            for key, value in p.items():
                if isinstance(value, list) and isinstance(base.get(key), list):
                    repeated += [f"{scenario}: {key} {item}" for item in value if item in base[key]]
                elif key in base and key != "image" and value == base[key]:
                    repeated.append(f"{scenario}: {key}")
    assert written == {(s, n) for s, names in CACHELESS.items() for n in names}
    assert repeated == []


def test_every_scenario_runs_through_the_suites_create_and_destroy(loaded):
    """The containers come from molecule_containers.py (config.yml's create/destroy playbooks), Ansible over SSH."""
    for (scenario, _distro), (config, _platforms) in loaded.items():
        assert config["driver"]["name"] == "docker", scenario
        assert config["ansible"]["playbooks"]["create"] == "../../.config/molecule/create.yml", scenario
        assert config["ansible"]["playbooks"]["destroy"] == "../../.config/molecule/destroy.yml", scenario
        assert config["provisioner"]["connection_options"]["ansible_connection"] == "ssh", scenario
        assert config["verifier"]["name"] == "testinfra" and config["dependency"]["enabled"] is False, scenario


def repeats(mine: dict, base: dict, path: str = "") -> list[str]:
    """The keys of `mine` whose value is the one `base` already gives at the same place (dicts are merged by Molecule)."""
    out = []
    for key, value in mine.items():
        if not isinstance(base, dict) or key not in base:
            continue
        if isinstance(value, dict) and isinstance(base[key], dict):
            out += repeats(value, base[key], f"{path}{key}.")
        elif value == base[key]:
            out.append(f"{path}{key}")
    return out


def test_a_molecule_yml_repeats_nothing_of_the_base_configuration():
    """config.yml's keys, the scenario's name (its folder) and Molecule's default playbooks (the scenario's own
    prepare.yml, converge.yml, ...) are given once; dicts merge, so a scenario names only the keys it changes."""
    config = yaml.safe_load((MOLECULE / "config.yml").read_text(encoding="utf-8"))
    found = []
    for scenario in SCENARIOS:
        base = {**config, "scenario": {**config["scenario"], "name": scenario},
                "provisioner": {**config["provisioner"], "playbooks": {
                    **{p: f"{p}.yml" for p in ("prepare", "converge", "side_effect", "verify", "cleanup")},
                    **config["provisioner"]["playbooks"]}}}
        mine = yaml.safe_load((ROOT / "molecule" / scenario / "molecule.yml").read_text(encoding="utf-8")) or {}
        found += [f"{scenario}: {key}" for key in repeats(mine, base)]
    assert found == []


def test_no_scenario_loses_the_base_ansible_environment(loaded):
    """Molecule moves a scenario's legacy provisioner.env to ansible.env AFTER the merge, replacing config.yml's whole
    (pipelining, the poll interval, the controller's caches): a scenario's variables go under ansible.env."""
    want = yaml.safe_load((MOLECULE / "config.yml").read_text(encoding="utf-8"))["ansible"]["env"]
    lost = sorted({scenario for (scenario, _distro), (config, _platforms) in loaded.items() if not set(want) <= set(config["ansible"]["env"])})
    assert lost == []
