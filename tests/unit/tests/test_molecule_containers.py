# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""tests/scripts/molecule_containers.py: Molecule's platforms become the docker CLI calls the Docker driver's playbooks
made, an unknown key is refused by name, and destroy leaves networks it did not make alone. Docker is a recorder here;
molecule/*/ runs the script for real on every scenario."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "tests" / "scripts"))
import molecule_containers as mc  # noqa: E402  pylint: disable=wrong-import-position


class Docker:
    """Records each docker call; `inspect` answers from `containers` (name -> running) and `networks` (name -> owner)."""

    def __init__(self, containers=None, networks=None):
        self.calls = []
        self.containers = containers or {}
        self.networks = networks or {}

    def __call__(self, *args, check=True):
        self.calls.append(list(args))
        rc, out = 0, ""
        if args[:2] == ("network", "inspect"):
            name = args[-1]
            rc, out = (0, self.networks[name]) if name in self.networks else (1, "")
        elif args[0] == "inspect":
            name = args[-1]
            rc, out = (0, "true" if self.containers[name] else "false") if name in self.containers else (1, "")
        return subprocess.CompletedProcess(["docker", *args], rc, out, "")


def base_platform():
    """config.yml's platform, as Molecule hands it over (its variables filled in)."""
    config = yaml.safe_load((ROOT / ".config" / "molecule" / "config.yml").read_text(encoding="utf-8"))
    platform = config["platforms"][0]
    platform["name"] = "dlbox-gpu_facts-debian12"
    platform["image"] = "dlbox-test:debian12"
    platform["volumes"] = ["/sys/fs/cgroup:/sys/fs/cgroup:rw", "/srv/cache/apt.conf:/etc/apt/apt.conf.d/01cache:ro"]
    return platform


def test_the_base_platform_runs_as_the_driver_ran_it(monkeypatch):
    docker = Docker()
    monkeypatch.setattr(mc, "docker", docker)
    mc.create([base_platform()])
    assert docker.calls[0] == ["inspect", "--format", "{{.State.Running}}", "dlbox-gpu_facts-debian12"]
    run = docker.calls[1]
    assert run[:9] == ["run", "--detach", "--name", "dlbox-gpu_facts-debian12", "--hostname", "dlbox-gpu_facts-debian12",
                       "--label", "owner=molecule", "--log-driver"]
    assert run[-2:] == ["dlbox-test:debian12", "/lib/systemd/systemd"]
    pairs = list(zip(run, run[1:]))
    for pair in [("--cap-add", "SYS_ADMIN"), ("--cgroupns", "host"), ("--stop-signal", "SIGRTMIN+3"), ("--tmpfs", "/run"),
                 ("--tmpfs", "/run/lock"), ("--tmpfs", "/tmp"), ("--volume", "/sys/fs/cgroup:/sys/fs/cgroup:rw"),
                 ("--volume", "/srv/cache/apt.conf:/etc/apt/apt.conf.d/01cache:ro")]:
        assert pair in pairs
    assert "--network" not in run                         # Docker's default bridge, as the driver left it


def test_networks_are_made_once_and_only_the_listed_ones_are_joined(monkeypatch):
    docker = Docker(networks={"dlbox-existing": "molecule"})
    monkeypatch.setattr(mc, "docker", docker)
    cut = dict(base_platform(), name="dlbox-offline-debian12", networks=[{"name": "dlbox-cut"}, {"name": "dlbox-existing"}],
               docker_networks=[{"name": "dlbox-cut", "internal": True}])
    other = dict(base_platform(), name="dlbox-offline-mirror", networks=[{"name": "dlbox-cut"}])
    mc.create([cut, other])
    creates = [c for c in docker.calls if c[:2] == ["network", "create"]]
    assert creates == [["network", "create", "--label", "owner=molecule", "--internal", "dlbox-cut"]]
    runs = [c for c in docker.calls if c[0] == "run"]
    assert [r[r.index("--network") + 1] for r in runs] == ["dlbox-cut", "dlbox-cut"]
    assert ["network", "connect", "dlbox-existing", "dlbox-offline-debian12"] in docker.calls


def test_a_running_container_is_kept_and_a_stopped_one_made_again(monkeypatch):
    docker = Docker(containers={"dlbox-a": True, "dlbox-b": False})
    monkeypatch.setattr(mc, "docker", docker)
    mc.create([dict(base_platform(), name="dlbox-a"), dict(base_platform(), name="dlbox-b")])
    assert [c[c.index("--name") + 1] for c in docker.calls if c[0] == "run"] == ["dlbox-b"]
    assert ["rm", "--force", "--volumes", "dlbox-b"] in docker.calls


@pytest.mark.parametrize("key, value", [("published_ports", ["8080:80"]), ("network_mode", "host")])
def test_an_unknown_key_is_refused_by_name(monkeypatch, capsys, key, value):
    docker = Docker()
    monkeypatch.setattr(mc, "docker", docker)
    with pytest.raises(SystemExit) as stop:
        mc.create([dict(base_platform(), **{key: value})])
    assert stop.value.code == 2
    assert key in capsys.readouterr().err
    assert not [c for c in docker.calls if c[0] == "run"]      # nothing started


def test_an_unknown_key_on_a_later_platform_stops_everything_before_any_call(monkeypatch, capsys):
    docker = Docker()
    monkeypatch.setattr(mc, "docker", docker)
    good = dict(base_platform(), networks=[{"name": "dlbox-net"}])
    with pytest.raises(SystemExit):
        mc.create([good, dict(base_platform(), name="dlbox-second", network_mode="host")])
    assert "network_mode" in capsys.readouterr().err
    assert docker.calls == []                                   # no network made, no container started


def test_an_unknown_network_key_is_refused_before_anything(monkeypatch, capsys):
    docker = Docker()
    monkeypatch.setattr(mc, "docker", docker)
    with pytest.raises(SystemExit):
        mc.create([dict(base_platform(), docker_networks=[{"name": "n", "ipam_config": []}])])
    assert "ipam_config" in capsys.readouterr().err
    assert docker.calls == []


def test_destroy_removes_containers_with_their_volumes_and_only_molecules_networks(monkeypatch):
    docker = Docker(networks={"dlbox-cut": "molecule", "users-own": ""})
    monkeypatch.setattr(mc, "docker", docker)
    mc.destroy([dict(base_platform(), name="a", networks=[{"name": "dlbox-cut"}, {"name": "users-own"}]),
                dict(base_platform(), name="b")])
    assert docker.calls[0] == ["rm", "--force", "--volumes", "a", "b"]
    assert ["network", "rm", "dlbox-cut"] in docker.calls
    assert ["network", "rm", "users-own"] not in docker.calls


def test_a_command_string_is_split_as_a_shell_would(monkeypatch):
    assert mc.run_args(dict(base_platform(), command='bash -c "sleep 1; true"'))[-3:] == ["bash", "-c", "sleep 1; true"]
