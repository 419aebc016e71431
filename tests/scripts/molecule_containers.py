# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Create or remove a Molecule scenario's test containers with the docker CLI (.config/molecule/create.yml, destroy.yml).

    molecule_containers.py create|destroy  < platforms.json    (molecule.yml's platforms, as Molecule merged them)

Why: the Docker driver's own create and destroy playbooks run a dozen local module runs per platform that import the
Docker SDK, and poll async jobs until done. `molecule create` and `molecule destroy` of one platform cost 8.9 and 8.1
CPU-s with them, 5.0 and 4.3 with these playbooks, which run this script once each (gpu_facts, alone, 2 cores,
2026-12-03; each figure includes Molecule's own start, about 2.6 CPU-s). The script runs `docker network create`,
`docker run` and `docker rm`. The containers are those the driver made for the same platform keys (its create.yml
with container_default_behavior: compatibility, networks_cli_compatible: true): hostname = name, label
owner=molecule, json-file logs, the first network as the network mode and only the listed networks attached;
`docker inspect` of both showed the same settings.

Ansible and testinfra reach the containers over SSH (config.yml: connection_options and ssh_connection), as they reach
a lab's hosts: one multiplexed connection a container, so that a module run costs one SSH session (12 ms of CPU on 2
cores) instead of one `docker exec` (82-94 ms: the docker CLI, dockerd, containerd and runc; measured 2026-12-04 with
40 runs of `true` each, machine-wide CPU from /proc/stat). create therefore also makes the suite's key once
(build/molecule-ssh/id_ed25519, never used for anything but these containers), installs its public half as root's
authorized_keys in each container, writes the container's address into build/molecule-ssh/hosts/NAME.conf (read
through build/molecule-ssh/config, the `-F` file) and waits until sshd answers. destroy first ends the container's
master connection: Docker gives a freed address to the next container, which must not inherit a stale master.

One platform definition for the suite: .config/molecule/platform.yml (the test image, systemd, the capability, tmpfs
and volumes every test container needs). A platform that does not set `command` is that base plus what it names
(a scenario's molecule.yml holds only what differs): its list items are added to the base's, an item for the same
mount point (tmpfs `/tmp:exec`, a volume's container path) replacing the base's in place, and its other keys win.
A platform that sets `command` is taken as written (a container that must lack the base's package cache, say).

A platform key this script does not know is refused, naming it, so that no setting is silently dropped.
destroy also removes the containers' anonymous volumes (`docker rm -v`; the driver kept them: one per Docker-in-Docker
run) and the networks the platforms name that carry owner=molecule.
"""
from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

LABEL = "owner=molecule"
# Keys Molecule itself reads (inventory) or that say nothing to Docker here.
MOLECULE_KEYS = {"name", "groups", "children", "pre_build_image"}
# Platform key -> docker run option for each item of its list.
LIST_OPTIONS = {"capabilities": "--cap-add", "security_opts": "--security-opt", "tmpfs": "--tmpfs",
                "volumes": "--volume", "dns_servers": "--dns", "devices": "--device"}
SCALAR_OPTIONS = {"cgroupns_mode": "--cgroupns", "stop_signal": "--stop-signal", "user": "--user", "pid_mode": "--pid",
                  "shm_size": "--shm-size", "memory": "--memory", "cpus": "--cpus"}
OTHER_KEYS = {"image", "command", "hostname", "networks", "docker_networks", "env", "privileged"}
NETWORK_KEYS = {"name", "internal"}
SSH_DIR = Path(__file__).resolve().parents[2] / "build" / "molecule-ssh"
# Master sockets: a short path (a Unix socket's name has room for about 100 bytes), keyed by address, port and user
# (%C); config.yml's ssh_connection names the same folder and pattern, so Ansible, testinfra and this script share them.
CONTROL_DIR = Path("/tmp/dlbox-cp")
SSH_WAIT_S = 60
BASE_PLATFORM = Path(__file__).resolve().parents[2] / ".config" / "molecule" / "platform.yml"
# The part of a list item that names what it mounts: two items for the same mount point cannot both be given to docker.
ITEM_KEYS = {"tmpfs": lambda item: item.split(":")[0], "volumes": lambda item: item.split(":")[1] if ":" in item else item}


def fail(msg: str) -> None:
    print(f"molecule_containers.py: {msg}", file=sys.stderr)
    sys.exit(2)


def docker(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["docker", *args], check=check, text=True, capture_output=True)


def networks(platforms: list[dict]) -> list[dict]:
    """Every network the platforms define (docker_networks) or join (networks), once, in order."""
    seen: dict[str, dict] = {}
    for p in platforms:
        for net in p.get("docker_networks") or []:
            unknown = set(net) - NETWORK_KEYS
            if unknown:
                fail(f"platform {p['name']}: docker_networks key(s) {sorted(unknown)} are not supported here "
                     f"(supported: {sorted(NETWORK_KEYS)}); add them to tests/scripts/molecule_containers.py")
            seen.setdefault(net["name"], net)
        for net in p.get("networks") or []:
            seen.setdefault(net["name"], {"name": net["name"]})
    return list(seen.values())


def expand(text: str, environ=None) -> str:
    """${NAME} and ${NAME:-default} as Molecule expands them in molecule.yml (the default also for an empty value)."""
    env = os.environ if environ is None else environ
    return re.sub(r"\$\{(\w+)(?::-([^}]*))?\}", lambda m: env.get(m.group(1)) or (m.group(2) or ""), text)


def base_platform(path: Path = BASE_PLATFORM, environ=None) -> dict:
    """platform.yml with its variables filled in (MOLECULE_PROJECT_DIRECTORY: this tree, when Molecule did not say)."""
    env = dict(os.environ if environ is None else environ)
    env.setdefault("MOLECULE_PROJECT_DIRECTORY", str(BASE_PLATFORM.parents[2]))
    return yaml.safe_load(expand(path.read_text(encoding="utf-8"), env))


def with_base(p: dict, base: dict) -> dict:
    """The platform as docker runs it: `p` alone when it sets `command`, else the base with `p` on top."""
    if "command" in p:
        return p
    out = dict(base)
    for key, value in p.items():
        if key in LIST_OPTIONS and isinstance(value, list) and base.get(key):
            ident = ITEM_KEYS.get(key, str)
            mine = {ident(str(item)): item for item in value}
            merged = [mine.pop(ident(str(item)), item) for item in base[key]]
            out[key] = merged + [item for item in value if ident(str(item)) in mine]
        else:
            out[key] = value
    return out


def run_args(p: dict) -> list[str]:
    unknown = set(p) - MOLECULE_KEYS - set(LIST_OPTIONS) - set(SCALAR_OPTIONS) - OTHER_KEYS
    if unknown:
        fail(f"platform {p.get('name')}: key(s) {sorted(unknown)} are not supported here; add them to "
             f"tests/scripts/molecule_containers.py (the Docker driver's create.yml says what they mean)")
    if not p.get("pre_build_image"):
        fail(f"platform {p['name']}: pre_build_image must be true (the test images are built by tests/images/build.sh)")
    args = ["run", "--detach", "--name", p["name"], "--hostname", p.get("hostname", p["name"]),
            "--label", LABEL, "--log-driver", "json-file"]
    for key, option in LIST_OPTIONS.items():
        for item in p.get(key) or []:
            args += [option, str(item)]
    for key, option in SCALAR_OPTIONS.items():
        if p.get(key) is not None:
            args += [option, str(p[key])]
    for key, value in (p.get("env") or {}).items():
        args += ["--env", f"{key}={value}"]
    if p.get("privileged"):
        args.append("--privileged")
    nets = [n["name"] for n in p.get("networks") or []]
    if nets:
        args += ["--network", nets[0]]
    args.append(p["image"])
    command = p.get("command", 'bash -c "while true; do sleep 10000; done"')
    args += shlex.split(command) if isinstance(command, str) else [str(c) for c in command]
    return args


def keygen(path: Path) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "dlbox-molecule", "-f", str(path)],
                   check=True, capture_output=True)


def ssh_key() -> str:
    """The suite's key pair, made once (two scenarios starting together both make one; the first one linked wins),
    and the -F file; returns the public key."""
    key = SSH_DIR / "id_ed25519"
    (SSH_DIR / "hosts").mkdir(parents=True, exist_ok=True)
    CONTROL_DIR.mkdir(mode=0o700, exist_ok=True)
    if not key.exists():
        tmp = Path(tempfile.mkdtemp(dir=SSH_DIR))
        keygen(tmp / "key")
        try:
            os.link(tmp / "key.pub", key.with_suffix(".pub"))
            os.link(tmp / "key", key)
        except FileExistsError:
            pass
        for f in tmp.iterdir():
            f.unlink()
        tmp.rmdir()
    config = SSH_DIR / "config"
    text = f"Include {SSH_DIR}/hosts/*.conf\n"
    if not config.exists() or config.read_text(encoding="utf-8") != text:
        tmp_config = SSH_DIR / f"config.{os.getpid()}"
        tmp_config.write_text(text, encoding="utf-8")
        tmp_config.replace(config)
    return key.with_suffix(".pub").read_text(encoding="utf-8")


def ssh(name: str, *options: str, command: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    return subprocess.run(["ssh", "-F", str(SSH_DIR / "config"), *options, name, *command], text=True,
                          capture_output=True, check=False, stdin=subprocess.DEVNULL)


def docker_in(text: str, *args: str) -> None:
    subprocess.run(["docker", *args], input=text, text=True, check=True, capture_output=True)


def ssh_ready(p: dict, pubkey: str) -> None:
    """Root's authorized key, the container's address for ssh, then sshd answering (the master connection opens)."""
    name = p["name"]
    addrs = docker("inspect", "--format", "{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}", name).stdout.split()
    if not addrs:
        fail(f"platform {name}: the container has no IP address to reach it over SSH")
    docker_in(pubkey, "exec", "-i", name, "sh", "-c", "umask 077 && mkdir -p /root/.ssh && cat > /root/.ssh/authorized_keys")
    (SSH_DIR / "hosts" / f"{name}.conf").write_text(
        f"Host {name}\n  HostName {addrs[0]}\n  User root\n  IdentityFile {SSH_DIR / 'id_ed25519'}\n"
        "  IdentitiesOnly yes\n  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n"
        f"  BatchMode yes\n  ConnectTimeout 5\n  ControlMaster auto\n  ControlPersist 60s\n  ControlPath {CONTROL_DIR}/%C\n",
        encoding="utf-8")
    deadline = time.monotonic() + SSH_WAIT_S
    while True:
        got = ssh(name, command=("true",))
        if got.returncode == 0:
            return
        if time.monotonic() > deadline:
            fail(f"platform {name}: sshd at {addrs[0]} did not answer within {SSH_WAIT_S} s: {got.stderr.strip()}")
        time.sleep(0.5)


def ssh_forget(name: str) -> None:
    """End the container's master connection and forget its address."""
    conf = SSH_DIR / "hosts" / f"{name}.conf"
    if conf.exists():
        ssh(name, "-O", "exit")
        conf.unlink()


def create(platforms: list[dict]) -> None:
    runs = {p["name"]: run_args(p) for p in platforms}   # every platform checked before any docker call
    for net in networks(platforms):
        if docker("network", "inspect", net["name"], check=False).returncode != 0:
            docker("network", "create", "--label", LABEL, *(["--internal"] if net.get("internal") else []), net["name"])
    for p in platforms:
        state = docker("inspect", "--format", "{{.State.Running}}", p["name"], check=False)
        if state.returncode == 0 and state.stdout.strip() == "true":
            continue  # already up: the driver's recreate: false
        if state.returncode == 0:
            docker("rm", "--force", "--volumes", p["name"])
        ssh_forget(p["name"])
        docker(*runs[p["name"]])
        for net in [n["name"] for n in p.get("networks") or []][1:]:
            docker("network", "connect", net, p["name"])
    pubkey = ssh_key()
    for p in platforms:
        ssh_ready(p, pubkey)


def destroy(platforms: list[dict]) -> None:
    names = [p["name"] for p in platforms]
    for name in names:
        ssh_forget(name)
    if names:
        docker("rm", "--force", "--volumes", *names, check=False)
    for net in networks(platforms):
        owner = docker("network", "inspect", "--format", '{{index .Labels "owner"}}', net["name"], check=False)
        if owner.returncode == 0 and owner.stdout.strip() == "molecule":
            docker("network", "rm", net["name"])


def main() -> None:
    if len(sys.argv) != 2 or sys.argv[1] not in ("create", "destroy"):
        fail("usage: molecule_containers.py create|destroy < platforms.json")
    platforms = json.load(sys.stdin)
    if not isinstance(platforms, list) or not all(isinstance(p, dict) and p.get("name") for p in platforms):
        fail("stdin must be a JSON list of platforms, each with a name")
    base = base_platform()
    platforms = [with_base(p, base) for p in platforms]
    try:
        (create if sys.argv[1] == "create" else destroy)(platforms)
    except subprocess.CalledProcessError as e:
        fail(f"{' '.join(e.cmd)} exited {e.returncode}: {e.stderr.strip()}")
    print(json.dumps({sys.argv[1]: [p["name"] for p in platforms]}))


if __name__ == "__main__":
    main()
