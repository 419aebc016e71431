# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""tests/scripts/molecule_containers.py: Molecule's platforms become the docker CLI calls the Docker driver's playbooks
made, an unknown key is refused by name, destroy leaves networks it did not make alone, and each container is made
reachable over SSH (the suite's key in root's authorized_keys, its address in build/molecule-ssh) and forgotten before
it goes. Docker and ssh are recorders here; molecule/*/ runs the script for real on every scenario."""

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
        elif args[0] == "inspect" and "NetworkSettings" in args[2]:
            out = "172.18.0.%d " % (len(self.calls) % 200 + 2)
        elif args[0] == "inspect":
            name = args[-1]
            rc, out = (0, "true" if self.containers[name] else "false") if name in self.containers else (1, "")
        return subprocess.CompletedProcess(["docker", *args], rc, out, "")


class Ssh:
    """Records each ssh call (-F file's host, options, command); answers `true` with `fails` failures first."""

    def __init__(self, fails=0):
        self.calls = []
        self.fails = fails

    def __call__(self, name, *options, command=()):
        self.calls.append((name, options, command))
        rc = 0
        if command == ("true",) and self.fails:
            self.fails -= 1
            rc = 255
        return subprocess.CompletedProcess(["ssh"], rc, "", "Connection refused" if rc else "")


@pytest.fixture(autouse=True)
def ssh_recorded(monkeypatch, tmp_path):
    """build/molecule-ssh in a temporary folder, ssh-keygen writing two small files, ssh and `docker exec -i` recorded."""
    monkeypatch.setattr(mc, "SSH_DIR", tmp_path / "molecule-ssh")
    monkeypatch.setattr(mc, "CONTROL_DIR", tmp_path / "cp")
    made = []

    def keygen(path):
        made.append(path)
        path.write_text("private\n")
        path.with_suffix(".pub").write_text("ssh-ed25519 AAAAtest dlbox-molecule\n")

    monkeypatch.setattr(mc, "keygen", keygen)
    sent = []
    monkeypatch.setattr(mc, "docker_in", lambda text, *args: sent.append((text, list(args))))
    ssh = Ssh()
    monkeypatch.setattr(mc, "ssh", ssh)
    monkeypatch.setattr(mc.time, "sleep", lambda s: None)
    return {"keys_made": made, "sent": sent, "ssh": ssh, "dir": tmp_path / "molecule-ssh"}


def base_platform():
    """config.yml's platform with the suite's base (platform.yml) under it, as main() hands it to create (its variables
    filled in)."""
    config = yaml.safe_load((ROOT / ".config" / "molecule" / "config.yml").read_text(encoding="utf-8"))
    platform = mc.with_base(config["platforms"][0], mc.base_platform(environ={"MOLECULE_PROJECT_DIRECTORY": "/srv"}))
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


def test_each_container_gets_the_key_and_its_address_and_answers_before_create_ends(monkeypatch, ssh_recorded):
    docker = Docker()
    monkeypatch.setattr(mc, "docker", docker)
    mc.create([dict(base_platform(), name="dlbox-a"), dict(base_platform(), name="dlbox-b")])
    assert [(text, args[:3]) for text, args in ssh_recorded["sent"]] == [
        ("ssh-ed25519 AAAAtest dlbox-molecule\n", ["exec", "-i", "dlbox-a"]),
        ("ssh-ed25519 AAAAtest dlbox-molecule\n", ["exec", "-i", "dlbox-b"])]
    assert "cat > /root/.ssh/authorized_keys" in ssh_recorded["sent"][0][1][-1]
    conf = (ssh_recorded["dir"] / "hosts" / "dlbox-a.conf").read_text()
    assert conf.startswith("Host dlbox-a\n  HostName 172.18.0.")
    assert "  User root\n" in conf and "  IdentityFile %s\n" % (ssh_recorded["dir"] / "id_ed25519") in conf
    assert "  ControlPath %s/%%C\n" % mc.CONTROL_DIR in conf
    assert (ssh_recorded["dir"] / "config").read_text() == "Include %s/hosts/*.conf\n" % ssh_recorded["dir"]
    answered = [c for c in ssh_recorded["ssh"].calls if c[2] == ("true",)]
    assert answered == [("dlbox-a", (), ("true",)), ("dlbox-b", (), ("true",))]
    assert len(ssh_recorded["keys_made"]) == 1                    # one key for the suite
    mc.create([dict(base_platform(), name="dlbox-c")])
    assert len(ssh_recorded["keys_made"]) == 1                    # and kept


def test_create_waits_for_sshd_and_names_the_platform_when_it_never_answers(monkeypatch, capsys, ssh_recorded):
    monkeypatch.setattr(mc, "docker", Docker())
    ssh_recorded["ssh"].fails = 3
    mc.create([dict(base_platform(), name="dlbox-slow")])          # three refusals, then an answer
    assert len([c for c in ssh_recorded["ssh"].calls if c[2] == ("true",)]) == 4
    ssh_recorded["ssh"].fails = 10 ** 6
    clock = iter(range(0, 10 ** 6, 10))
    monkeypatch.setattr(mc.time, "monotonic", lambda: next(clock))
    with pytest.raises(SystemExit):
        mc.create([dict(base_platform(), name="dlbox-mute")])
    err = capsys.readouterr().err
    assert "dlbox-mute" in err and "did not answer" in err and "Connection refused" in err


def test_a_container_without_an_address_is_refused_by_name(monkeypatch, capsys):
    docker = Docker()
    real = docker.__call__

    def no_address(*args, check=True):
        got = real(*args, check=check)
        return subprocess.CompletedProcess(got.args, 0, "", "") if "NetworkSettings" in " ".join(args) else got

    monkeypatch.setattr(mc, "docker", no_address)
    with pytest.raises(SystemExit):
        mc.create([dict(base_platform(), name="dlbox-nonet")])
    assert "dlbox-nonet" in capsys.readouterr().err


def test_destroy_ends_the_master_connection_before_the_container_goes(monkeypatch, ssh_recorded):
    docker = Docker()
    monkeypatch.setattr(mc, "docker", docker)
    mc.create([dict(base_platform(), name="dlbox-a")])
    order = []
    monkeypatch.setattr(mc, "docker", lambda *args, check=True: order.append(("docker",) + args) or docker(*args, check=check))
    recorded = ssh_recorded["ssh"]
    monkeypatch.setattr(mc, "ssh", lambda name, *o, command=(): order.append(("ssh", name) + o) or recorded(name, *o, command=command))
    mc.destroy([dict(base_platform(), name="dlbox-a")])
    assert order[0] == ("ssh", "dlbox-a", "-O", "exit")
    assert order[1][:3] == ("docker", "rm", "--force")
    assert not (ssh_recorded["dir"] / "hosts" / "dlbox-a.conf").exists()


def test_a_stopped_container_made_again_loses_its_old_master_first(monkeypatch, ssh_recorded):
    monkeypatch.setattr(mc, "docker", Docker())
    mc.create([dict(base_platform(), name="dlbox-b")])
    monkeypatch.setattr(mc, "docker", Docker(containers={"dlbox-b": False}))
    ssh_recorded["ssh"].calls.clear()
    mc.create([dict(base_platform(), name="dlbox-b")])
    assert ssh_recorded["ssh"].calls[0] == ("dlbox-b", ("-O", "exit"), ())


# --- one platform definition (.config/molecule/platform.yml): a scenario's platform holds only what differs ----------

BASE = {"image": "dlbox-test:debian12", "pre_build_image": True, "command": "/lib/systemd/systemd",
        "capabilities": ["SYS_ADMIN"], "tmpfs": ["/run", "/run/lock", "/tmp"],
        "volumes": ["/sys/fs/cgroup:/sys/fs/cgroup:rw", "/srv/cache/apt.conf:/etc/apt/apt.conf.d/01cache:ro"]}


def test_a_platform_without_command_is_the_base_with_what_it_names_on_top():
    thin = {"name": "dlbox-python_env-debian12", "tmpfs": ["/tmp:exec"], "shm_size": "1g",
            "volumes": ["/srv/wheelhouse:/srv/wheelhouse:ro"], "capabilities": ["NET_ADMIN", "SYS_ADMIN"]}
    got = mc.with_base(thin, BASE)
    assert got["tmpfs"] == ["/run", "/run/lock", "/tmp:exec"]          # the same mount point replaced in place
    assert got["volumes"] == BASE["volumes"] + ["/srv/wheelhouse:/srv/wheelhouse:ro"]
    assert got["capabilities"] == ["SYS_ADMIN", "NET_ADMIN"]           # once each
    assert (got["shm_size"], got["command"], got["name"]) == ("1g", "/lib/systemd/systemd", thin["name"])
    assert BASE["tmpfs"] == ["/run", "/run/lock", "/tmp"]              # the base itself is left as it was


def test_a_platform_with_its_own_command_is_taken_as_written():
    cut = {"name": "dlbox-offline-debian12", "command": "/lib/systemd/systemd", "volumes": ["/sys/fs/cgroup:/sys/fs/cgroup:rw"]}
    assert mc.with_base(cut, BASE) is cut                              # no package cache volumes added


@pytest.mark.parametrize("environ, want", [({}, "dlbox-test:debian12"), ({"MOLECULE_DISTRO": ""}, "dlbox-test:debian12"),
                                           ({"MOLECULE_DISTRO": "ubuntu2404"}, "dlbox-test:ubuntu2404")])
def test_the_base_file_is_expanded_as_molecule_expands_molecule_yml(environ, want):
    assert mc.base_platform(environ=environ)["image"] == want


def test_thin_platforms_repeat_nothing_of_the_base():
    """A scenario's platform without `command` names only what differs from .config/molecule/platform.yml."""
    base = mc.base_platform(environ={})
    repeated = []
    for path in sorted((ROOT / "molecule").glob("*/molecule.yml")) + [ROOT / ".config" / "molecule" / "dind.yml"]:
        for platform in (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("platforms") or []:
            if "command" in platform:
                continue
            for key, value in platform.items():
                if isinstance(value, list) and isinstance(base.get(key), list):
                    repeated += ["%s: %s %s" % (path.relative_to(ROOT), key, item) for item in value if item in base[key]]
                elif key in base and key != "image" and value == base[key]:
                    repeated.append("%s: %s" % (path.relative_to(ROOT), key))
    assert repeated == []
