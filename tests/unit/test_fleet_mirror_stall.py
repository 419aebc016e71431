"""A stalled mirror never freezes a rollout (issue 50, item 7): this machine's REAL apt-get and pip, configured as the
roles configure them, pointed at a mirror on 127.0.0.1 that stalls, fail within their bound with the reason; and the
rollout's own task files (playbooks/tasks/rollout_*.yml, real ansible-playbook) turn such a host's failure into a
failed row with apt's reason while its batch goes on within the budget. No Docker, no network.

The mirror (FIXTURE, this file): a TCP server on 127.0.0.1 that serves a FIXTURE archive's files (tests/aptrepo,
apt_root.py) and a PEP 503 page, and stalls where a test says:
  silent   accepts the connection and never answers (a cache stuck on a lock, as apt-cacher-ng's in item 7);
  headers  answers 200 with its headers and a first part of the body, then never sends the rest.

The options and what bounds them (the figures are asserted on the real programs below):
  apt   Acquire::http::Timeout / ::https::Timeout: "the timeout timer used by the method; this value applies to the
        connection as well as the data timeout" (apt-transport-http(1), apt.conf(5)); Acquire::Retries: "APT will retry
        failed files the given number of times" (apt.conf(5)), each retry after a delay that doubles from 1 s up to
        Acquire::Retries::Delay::Maximum (30 s; apt 2.3+). Rendered from roles/common/tasks/proxy.yml's own
        80dlbox-network file, given to apt with -c (apt reads /etc/apt/apt.conf.d before -o Dir::Etc could move it).
        Measured with apt 2.6.1 (Debian 12): a silent mirror costs two timeouts per try (the connection's, then the
        data's: "Connection failed"), a stalled body one ("Connection timed out").
  pip   --timeout "Set the socket timeout (default 15 seconds)", --retries "Maximum attempts to establish a new HTTP
        connection. (default: 5)", --resume-retries "Maximum attempts to resume or restart an incomplete download.
        (default: 5)" (pip 25.1+; pip's reference, pip install / pip download general options; pip.pypa.io). The roles
        set neither (roles/common/tasks/proxy.yml: pip's own defaults bound it), so the defaults are read from pip's
        own option table here and the real run takes small values through the same options.
"""

from __future__ import annotations

import json
import os
import posixpath
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import jinja2
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
sys.path.insert(0, str(ROOT / "tests" / "aptrepo"))
import apt_root  # noqa: E402  pylint: disable=wrong-import-position,import-error

sys.path.insert(0, str(ROOT / "tools"))
from dlboxdata import collection  # noqa: E402  pylint: disable=wrong-import-position,import-error

PROXY = ROOT / "roles" / "common" / "tasks" / "proxy.yml"
COMMON_DEFAULTS = ROOT / "roles" / "common" / "defaults" / "main.yml"
TIMEOUT, RETRIES = 1, 1          # the role's variables as the tests give them (common_apt_timeout, common_apt_retries)
SLACK = 10.0                     # seconds of process start-up and index reading on a loaded 2-core machine

# A FIXTURE archive of one package without dependencies (apt_root.make_root builds it with tests/aptrepo).
SPEC = {"name": "stall-probe", "origin": "dlbox", "description": "FIXTURE: one package for the stalled-mirror tests",
        "layout": "flat", "flat_dir": ".", "codename": "stall", "architectures": ["amd64"], "vars": {},
        "packages": [{"name": "dlbox-stall-probe", "version": "1.0-1", "architecture": "all",
                      "description": "FIXTURE: a probe package", "files": [{"path": "/usr/share/dlbox-stall-probe",
                                                                            "content": "probe\n"}]}]}
WHEEL = "dlbox_stall_probe-1.0-py3-none-any.whl"


class Mirror:
    """A mirror on 127.0.0.1: files of ``root`` (and ``pages``: path -> (type, bytes)), stalling as ``stall(path)``
    says (None: serve; "silent"; "headers"). Stalled connections are held until close()."""

    def __init__(self, root, stall, pages=None):
        self.root, self.stall, self.pages = Path(root), stall, pages or {}
        self.done = threading.Event()
        self.requests = []
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.url = "http://127.0.0.1:%d/" % self.port
        self.held = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.done.is_set():
            try:
                conn, _addr = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        data = b""
        try:
            while not self.done.is_set():
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    data += chunk
                head, data = data.split(b"\r\n\r\n", 1)
                path = posixpath.normpath(head.split(b"\r\n")[0].split(b" ")[1].decode().split("?")[0])
                self.requests.append(path)
                how = self.stall(path)
                if how == "silent":
                    self.done.wait()
                    return
                if path in self.pages:
                    kind, body = self.pages[path]
                elif (self.root / path.lstrip("/")).is_file():
                    kind, body = "application/octet-stream", (self.root / path.lstrip("/")).read_bytes()
                else:
                    conn.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
                    continue
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n"
                             % (kind.encode(), len(body)) + (body if how is None else body[:len(body) // 2]))
                if how == "headers":
                    self.done.wait()
                    return
        except OSError:
            return

    def close(self):
        self.done.set()
        self.sock.close()
        for conn in self.held:
            conn.close()


def _rendered_apt_conf(path, timeout, retries):
    """The role's own 80dlbox-network file, rendered with common_apt_timeout / common_apt_retries."""
    task = next(t for t in yaml.safe_load(PROXY.read_text())
                if t["name"] == "Bound every apt download (common_apt_timeout, common_apt_retries)")
    path.write_text(jinja2.Environment().from_string(task["ansible.builtin.copy"]["content"])
                    .render(common_apt_timeout=timeout, common_apt_retries=retries))
    return path


def apt_bound(timeout, retries, per_try):
    """Seconds apt may take for one file: (retries + 1) tries of ``per_try`` timeouts, and the delays between them
    (1 s doubling, at most 30 s)."""
    return (retries + 1) * per_try * timeout + sum(min(2 ** i, 30) for i in range(retries))


def pip_bound(timeout, retries):
    """Seconds pip may take for one URL: (retries + 1) socket timeouts and urllib3's backoff (factor 0.25, pip's
    network/session.py), at most 2 s for the few retries here."""
    return (retries + 1) * timeout + 2.0


def _timed(argv, env=None, limit=300):
    """(the process, its seconds); past ``limit`` seconds it is killed and the test fails (a hang, not a bound)."""
    start = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=limit, env=env)
    return proc, time.monotonic() - start


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    """A throwaway apt root whose source is the FIXTURE archive over HTTP, its lists read once from a healthy mirror."""
    root = tmp_path_factory.mktemp("apt")
    (root / "spec.yml").write_text(yaml.safe_dump(SPEC))
    opts, _installed = apt_root.make_root(str(root), str(root / "spec.yml"))
    conf = _rendered_apt_conf(root / "80dlbox-network", TIMEOUT, RETRIES)
    return root, ["-c", str(conf)] + opts


def _point_at(root, mirror):
    (root / "etc" / "sources.list").write_text("deb [trusted=yes] %s ./\n" % mirror.url)


@pytest.mark.parametrize("how, reason, per_try", [("silent", "Connection failed", 2), ("headers", "Connection timed out", 1)])
def test_apt_get_update_from_a_stalled_mirror_fails_within_the_bound_with_the_reason(archive, how, reason, per_try):
    root, opts = archive
    mirror = Mirror(root / "repo", lambda path: how)
    try:
        _point_at(root, mirror)
        proc, took = _timed(["apt-get"] + opts + ["update"], env=dict(os.environ, LC_ALL="C"),
                            limit=apt_bound(TIMEOUT, RETRIES, per_try) + 2 * SLACK)
    finally:
        mirror.close()
    out = proc.stdout + proc.stderr
    # apt-get update warns and exits 0 (the lists it could not fetch are "ignored"); ansible.builtin.apt fails on the
    # warning ("Failed to update apt cache: W:Failed to fetch ..."), which is the reason the host's row shows
    assert "Failed to fetch %s./InRelease  %s [IP: 127.0.0.1 %d]" % (mirror.url, reason, mirror.port) in out, out
    bound = apt_bound(TIMEOUT, RETRIES, per_try)
    assert took <= bound + SLACK, (took, bound, out)
    # the retry is the role's: one try more than the first (apt's default is 3 retries)
    # each try is the role's (apt's default is 3 retries); a silent mirror is asked twice a try (a new connection)
    assert mirror.requests.count("/InRelease") == per_try * (RETRIES + 1), mirror.requests
    assert took >= (RETRIES + 1) * per_try * TIMEOUT - 0.5, took      # it did wait for the mirror: a real timeout


@pytest.mark.parametrize("how, reason, per_try", [("silent", "Connection failed", 2), ("headers", "Connection timed out", 1)])
def test_apt_get_install_download_only_from_a_mirror_stalling_on_the_package_fails_within_the_bound(
        archive, how, reason, per_try):
    root, opts = archive
    mirror = Mirror(root / "repo", lambda path: how if path.endswith(".deb") else None)
    try:
        _point_at(root, mirror)
        update, _took = _timed(["apt-get"] + opts + ["update"], env=dict(os.environ, LC_ALL="C"))
        assert "Failed" not in update.stdout + update.stderr, update.stdout + update.stderr   # the index is served
        proc, took = _timed(["apt-get"] + opts + ["install", "--download-only", "-y", "dlbox-stall-probe"],
                            env=dict(os.environ, LC_ALL="C"), limit=apt_bound(TIMEOUT, RETRIES, per_try) + 2 * SLACK)
    finally:
        mirror.close()
    out = proc.stdout + proc.stderr
    assert proc.returncode == 100, out
    assert "E: Failed to fetch %s./dlbox-stall-probe_1.0-1_all.deb  %s [IP: 127.0.0.1 %d]" % (
        mirror.url, reason, mirror.port) in out, out
    assert took <= apt_bound(TIMEOUT, RETRIES, per_try) + SLACK, (took, out)
    assert sum(p.endswith(".deb") for p in mirror.requests) == per_try * (RETRIES + 1), mirror.requests


def _pip_env(tmp_path):
    """pip with no configuration of this machine (PIP_CONFIG_FILE=/dev/null: no file; no PIP_* variable)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env.update(PIP_CONFIG_FILE=os.devnull, HOME=str(tmp_path), LC_ALL="C", PIP_DISABLE_PIP_VERSION_CHECK="1")
    return env


def test_pip_download_from_a_silent_index_fails_within_the_bound_with_the_reason(tmp_path):
    mirror = Mirror(tmp_path, lambda path: "silent")
    try:
        proc, took = _timed([sys.executable, "-m", "pip", "download", "--no-deps", "-d", str(tmp_path / "dl"),
                             "--timeout", str(TIMEOUT), "--retries", str(RETRIES), "--index-url", mirror.url + "simple/",
                             "dlbox-stall-probe"], env=_pip_env(tmp_path))
    finally:
        mirror.close()
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "Read timed out. (read timeout=%.1f)" % TIMEOUT in out and "/simple/dlbox-stall-probe/" in out, out
    assert "No matching distribution found for dlbox-stall-probe" in out, out
    assert took <= pip_bound(TIMEOUT, RETRIES) + SLACK, (took, out)
    assert mirror.requests.count("/simple/dlbox-stall-probe") == RETRIES + 1, mirror.requests


def test_pip_download_of_a_wheel_that_stalls_after_its_headers_fails_within_the_bound_with_the_reason(tmp_path):
    page = ('<!DOCTYPE html><html><body><a href="/files/%s">%s</a></body></html>' % (WHEEL, WHEEL)).encode()
    (tmp_path / "files").mkdir()
    (tmp_path / "files" / WHEEL).write_bytes(b"PK" + b"\0" * 4096)
    mirror = Mirror(tmp_path, lambda path: "headers" if path.endswith(".whl") else None,
                    pages={"/simple/dlbox-stall-probe": ("text/html", page)})
    try:
        proc, took = _timed([sys.executable, "-m", "pip", "download", "--no-deps", "-d", str(tmp_path / "dl"),
                             "--timeout", str(TIMEOUT), "--retries", str(RETRIES), "--resume-retries", str(RETRIES),
                             "--index-url", mirror.url + "simple/", "dlbox-stall-probe"], env=_pip_env(tmp_path))
    finally:
        mirror.close()
    out = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode != 0, out
    # pip 25.1+ resumes an interrupted download --resume-retries times (default 5), each bounded by the socket timeout
    assert ("Download failed after %d attempts because not enough bytes were received" % (RETRIES + 1)) in out, out
    assert "URL: %sfiles/%s" % (mirror.url, WHEEL) in out, out
    assert sum(p.endswith(".whl") for p in mirror.requests) == RETRIES + 1, mirror.requests
    assert took <= (RETRIES + 1) * pip_bound(TIMEOUT, 0) + SLACK, (took, out)


def test_the_roles_bounds_are_what_the_tests_measure():
    """The figures the role leaves to apt and pip: common's defaults for apt; pip's own defaults (the roles set none),
    read from pip's option table, as its reference gives them (15 s, 5 retries). One stalled file costs a host at most
    these seconds; the refresh as a whole has its task timeout (common_apt_update_timeout), every task of a scenario
    dlbox_task_timeout."""
    from pip._internal.cli import cmdoptions  # pylint: disable=import-outside-toplevel
    defaults = yaml.safe_load(COMMON_DEFAULTS.read_text())
    assert (cmdoptions.timeout().default, cmdoptions.retries().default, cmdoptions.resume_retries().default) == (15, 5, 5)
    apt_worst = apt_bound(defaults["common_apt_timeout"], defaults["common_apt_retries"], 2)
    assert apt_worst == 4 * 2 * 60 + 1 + 2 + 4 == 487
    assert apt_worst < defaults["common_apt_update_timeout"] == 900          # a file stalls; the refresh still ends
    assert pip_bound(15, 5) == 92.0                                          # an index page
    assert 6 * pip_bound(15, 0) == 102.0                                     # a file: 6 tries of one timeout each


# --- The rollout's handling of a host whose mirror stalls -----------------------------------------------------------

PLAY = """
- name: A batch of three behind a mirror that stalls for one of them (workstation.yml's skeleton)
  hosts: all
  gather_facts: false
  serial: "{{ dlbox_serial | default(0) | dlbox.stack.rollout_serial }}"
  max_fail_percentage: 100  # the budget is the rollout's (rollout_finish.yml), as in workstation.yml
  tasks:
    - name: Install the stack
      timeout: "{{ dlbox_task_timeout | default(3600) | int }}"
      block:
        - name: Check the rollout variables, note the scenario
          ansible.builtin.include_tasks: %(tasks)s/rollout_begin.yml
          vars:
            __dlbox_rollout_scenario: workstation
        - name: Download the packages (the host's mirror)
          ansible.builtin.command:
            argv: "{{ ['apt-get'] + test_apt_opts + ['install', '--download-only', '-y', 'dlbox-stall-probe'] }}"
          environment: {LC_ALL: C}
          changed_when: false
      rescue:
        - name: Record the failing task and its message
          ansible.builtin.include_tasks: %(tasks)s/rollout_failed.yml
    - name: Resume, fleet summary, budget
      ansible.builtin.include_tasks: %(tasks)s/rollout_finish.yml
      vars:
        __dlbox_rollout_scenario: workstation
""" % {"tasks": ROOT / "playbooks" / "tasks"}


def test_a_host_whose_mirror_stalls_fails_with_apts_reason_and_its_batch_goes_on_within_the_budget(archive, tmp_path):
    """h2's mirror stalls on the package (after its headers); h1 and h3 have a healthy one. Batches of 3 within 34 %:
    h2 fails within apt's bound with its reason in the summary, 1 of 3 is within the budget, the rollout goes on."""
    root, opts = archive
    healthy = Mirror(root / "repo", lambda path: None)
    stalled = Mirror(root / "repo", lambda path: "headers" if path.endswith(".deb") else None)
    hosts = {}
    try:
        for name, mirror in (("h1", healthy), ("h2", stalled), ("h3", healthy)):
            host_root = tmp_path / name
            for sub in ("etc/preferences.d", "state/lists/partial", "cache/archives/partial"):
                (host_root / sub).mkdir(parents=True)
            (host_root / "state" / "status").write_text("")
            (host_root / "etc" / "sources.list").write_text("deb [trusted=yes] %s ./\n" % mirror.url)
            host_opts = ["-c", opts[1], "-o", "Dir::Etc=%s/etc" % host_root, "-o", "Dir::State=%s/state" % host_root,
                         "-o", "Dir::Cache=%s/cache" % host_root, "-o", "Dir::State::status=%s/state/status" % host_root,
                         "-o", "Debug::NoLocking=1", "-o", "APT::Architecture=amd64",
                         "-o", "APT::Sandbox::User=root"]
            subprocess.run(["apt-get"] + host_opts + ["update", "-qq"], check=True, capture_output=True)
            hosts[name] = {"test_apt_opts": host_opts}
        (tmp_path / "play.yml").write_text(PLAY)
        (tmp_path / "hosts.yml").write_text(json.dumps({"all": {"vars": {
            "ansible_connection": "local", "ansible_python_interpreter": sys.executable,
            "dlbox_report_dir": str(tmp_path / "reports")}, "hosts": hosts}}))
        collection.importable()
        base = next(p for p in sys.path if (Path(p) / "ansible_collections" / "dlbox" / "stack").exists())
        env = {"PATH": "%s:/usr/bin:/bin" % BIN, "ANSIBLE_CONFIG": str(tmp_path / "none.cfg"), "ANSIBLE_NOCOLOR": "1",
               "HOME": str(tmp_path), "ANSIBLE_LOCAL_TEMP": str(tmp_path / "tmp"), "ANSIBLE_COLLECTIONS_PATH": base}
        proc, took = _timed([str(BIN / "ansible-playbook"), "-i", str(tmp_path / "hosts.yml"), str(tmp_path / "play.yml"),
                             "-e", json.dumps({"dlbox_serial": 3, "dlbox_max_fail_percentage": 34})], env=env)
    finally:
        healthy.close()
        stalled.close()
    out = proc.stdout + proc.stderr
    summary = json.loads((tmp_path / "reports" / "rollout" / "summary.json").read_text())
    rows = {row["host"]: row for row in summary["hosts"]}
    assert proc.returncode == 2, out[-4000:]                                   # h2 fails the run at the batch's end
    assert rows["h2"]["status"] == "failed", rows["h2"]
    assert rows["h2"]["failure"]["task"] == "Download the packages (the host's mirror)"
    # the command's "non-zero return code", then apt's reason from its stderr (the summary keeps single spaces)
    assert rows["h2"]["failure"]["message"].startswith("non-zero return code: "), rows["h2"]
    assert ("E: Failed to fetch %s./dlbox-stall-probe_1.0-1_all.deb Connection timed out [IP: 127.0.0.1 %d]"
            % (stalled.url, stalled.port)) in rows["h2"]["failure"]["message"], rows["h2"]
    assert [(b["hosts"], b["failed"], b["percent"], b["stop"]) for b in summary["batches"]] == [
        (["h1", "h2", "h3"], ["h2"], 33.3, False)]
    assert summary["stopped"] is None
    assert (rows["h1"]["status"], rows["h3"]["status"]) == ("changed", "changed"), rows
    assert took <= apt_bound(TIMEOUT, RETRIES, 1) + 60, took                 # apt's bound, not a hang
    assert "NO MORE HOSTS LEFT" not in proc.stdout
