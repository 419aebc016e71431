# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""roles/jetpack's jetson_clocks unit (templates/dlbox-jetson-clocks.service.j2) on every start, not only the first.

NVIDIA's jetson_clocks --store asks "File <file> already exists. Can I overwrite it? Y/N:" when its file is there, reads
the answer from stdin and exits 1 on anything but y/Y (main() of /usr/bin/jetson_clocks, "Copyright (c) 2015-2023,
NVIDIA CORPORATION", the Orin one; the same code in L4T R32's copy, public in Sahamec/VVdeC2_ARM_Neon jetson_clocks.sh
at 4086a9098814b8c3eef26c36998b1f2635b1dc86). Under systemd stdin is /dev/null, and the stored file is kept on disk:
a unit that ran `--store` at every start failed at every boot after the first and at the restart after a power-mode
change (issue 52's red team). The molecule/edge stub (molecule/edge/files/jetson_clocks) now does the same, and here
the rendered unit's own commands run against it in a temporary folder, the way systemd runs them (one after the other,
stdin /dev/null, a failure ends the start unless the command has a "-" prefix)."""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

import jinja2
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
ROLE = ROOT / "roles" / "jetpack"
TEMPLATE = ROLE / "templates" / "dlbox-jetson-clocks.service.j2"
STUB = ROOT / "molecule" / "edge" / "files" / "jetson_clocks"
PROMPT = "already exists. Can I overwrite it? Y/N:"


class FakeHost:
    """The stub's state folder, its jetson_clocks, and the unit rendered with paths in the temporary folder."""

    def __init__(self, tmp_path: Path, template: Path = TEMPLATE):
        self.state = tmp_path / "state"
        self.state.mkdir()
        (tmp_path / "home").mkdir()
        self.jetson_clocks = tmp_path / "usr-bin" / "jetson_clocks"
        self.jetson_clocks.parent.mkdir()
        shutil.copy(STUB, self.jetson_clocks)
        self.jetson_clocks.chmod(0o755)
        self.store = tmp_path / "var-lib-dlbox-jetpack" / "jetson_clocks.defaults"
        self.store.parent.mkdir()
        self.env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path / "home"), "DLBOX_FIXTURE_JETSON_STATE": str(self.state)}
        role_vars = yaml.safe_load((ROLE / "vars" / "main.yml").read_text(encoding="utf-8"))
        role_vars.update(ansible_managed="Ansible managed", __jetpack_jetson_clocks=str(self.jetson_clocks),
                         __jetpack_clocks_store=str(self.store))
        env = jinja2.Environment(undefined=jinja2.StrictUndefined, trim_blocks=True, keep_trailing_newline=True)
        self.unit = env.from_string(template.read_text(encoding="utf-8")).render(**role_vars)
        self.boot()

    def boot(self):
        """A (re)boot: jetson_clocks' clocks last until the next boot, so the power mode's own clocks are back."""
        (self.state / "clocks").write_text("default\n", encoding="utf-8")

    @property
    def clocks(self) -> str:
        return (self.state / "clocks").read_text(encoding="utf-8").strip()

    @property
    def stored(self) -> str:
        return self.store.read_text(encoding="utf-8").strip()

    def commands(self, key: str) -> list[str]:
        lines = [line.split("=", 1)[1] for line in self.unit.splitlines() if line.startswith(key + "=")]
        for line in lines:
            # systemd would expand these; the emulation below does not, so the unit must not need it
            assert "$" not in line and "%" not in line, line
        return lines

    def run(self, *keys: str) -> list[subprocess.CompletedProcess]:
        """systemd's way: each command in order, stdin /dev/null; a failure ends it unless prefixed with '-'."""
        done = []
        for key in keys:
            for line in self.commands(key):
                ignore = line.startswith("-")
                argv = shlex.split(line.lstrip("-@+!:"))
                result = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, env=self.env,
                                        check=False, timeout=30)
                done.append(result)
                if result.returncode != 0 and not ignore:
                    raise AssertionError(f"{key}={line} failed ({result.returncode}): {result.stdout}{result.stderr}")
        return done

    def start(self):
        return self.run("ExecStartPre", "ExecStart")

    def stop(self):
        return self.run("ExecStop")


# --- the stub behaves like NVIDIA's script ------------------------------------------------------------------------
def _stub(host: FakeHost, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(host.jetson_clocks), *args], input=stdin if stdin is not None else "",
                          capture_output=True, text=True, env=host.env, check=False, timeout=30)


def test_stub_store_asks_before_overwriting_and_fails_without_a_yes(tmp_path):
    host = FakeHost(tmp_path)
    assert _stub(host, "--store", str(host.store)).returncode == 0
    assert host.stored == "FIXTURE-CLOCKS default"
    _stub(host)
    assert host.clocks == "max"
    for answer in ("", "n\n", "N\n", "yes\n"):
        refused = _stub(host, "--store", str(host.store), stdin=answer)
        assert refused.returncode == 1, answer
        assert f"File {host.store} {PROMPT}" in refused.stdout
        assert f"Error: file {host.store} already exists!" in refused.stdout
        assert host.stored == "FIXTURE-CLOCKS default"
    for answer in ("y\n", "Y\n"):
        taken = _stub(host, "--store", str(host.store), stdin=answer)
        assert taken.returncode == 0 and PROMPT in taken.stdout
        assert host.stored == "FIXTURE-CLOCKS max"


def test_stub_restore_needs_the_file_and_store_makes_no_folder(tmp_path):
    host = FakeHost(tmp_path)
    missing = _stub(host, "--restore", str(host.store))
    assert missing.returncode == 1 and f"Error: {host.store} file not found !" in missing.stdout
    nowhere = tmp_path / "no-such-folder" / "conf"
    assert _stub(host, "--store", str(nowhere)).returncode == 0
    assert not nowhere.parent.exists()


def test_the_role_makes_the_stores_folder_before_the_unit_starts():
    tasks = yaml.safe_load((ROLE / "tasks" / "clocks.yml").read_text(encoding="utf-8"))
    names = [task["name"] for task in tasks]
    folder = next(t for t in tasks if t.get("ansible.builtin.file", {}).get("path") == "{{ __jetpack_clocks_store | dirname }}")
    assert folder["ansible.builtin.file"]["state"] == "directory"
    assert names.index(folder["name"]) < names.index("Run jetson_clocks now and at every boot")


# --- the unit ------------------------------------------------------------------------------------------------------
def test_the_unit_starts_again_at_the_next_boot_with_the_stored_file_there(tmp_path):
    """A boot that followed no stop (power loss; or any boot with the old unit): the file from before is there."""
    host = FakeHost(tmp_path)
    host.start()
    assert host.clocks == "max" and host.stored == "FIXTURE-CLOCKS default"
    for _boot in range(2):
        host.boot()
        host.start()
        assert host.clocks == "max"
        assert host.stored == "FIXTURE-CLOCKS default"


def test_a_start_while_the_clocks_are_raised_keeps_the_defaults_stored(tmp_path):
    """A start after one that failed (no ExecStop ran) or a hand-run jetson_clocks: the stored clocks stay the defaults."""
    host = FakeHost(tmp_path)
    host.start()
    host.start()
    assert host.clocks == "max" and host.stored == "FIXTURE-CLOCKS default"
    host.stop()
    assert host.clocks == "default"


def test_stop_puts_the_clocks_back_and_restart_stores_afresh(tmp_path):
    """`systemctl stop` (jetpack_clocks: false, shutdown) and the restart after a power-mode change (stop, start)."""
    host = FakeHost(tmp_path)
    host.start()
    for _restart in range(2):
        host.stop()
        assert host.clocks == "default" and not host.store.exists()
        host.start()
        assert host.clocks == "max" and host.stored == "FIXTURE-CLOCKS default"


def test_the_unit_keeps_its_shape(tmp_path):
    host = FakeHost(tmp_path)
    assert "Type=oneshot" in host.unit.splitlines() and "RemainAfterExit=yes" in host.unit.splitlines()
    assert host.commands("ExecStart") == [str(host.jetson_clocks)]
    assert "WantedBy=multi-user.target" in host.unit.splitlines()


@pytest.mark.parametrize("key", ["ExecStartPre", "ExecStart", "ExecStop"])
def test_every_command_has_an_absolute_path(tmp_path, key):
    host = FakeHost(tmp_path)
    for line in host.commands(key):
        assert shlex.split(line.lstrip("-@+!:"))[0].startswith("/"), line
