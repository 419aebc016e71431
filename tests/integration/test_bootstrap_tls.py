"""tools/venv.sh behind a private CA: pip reaches its index only through a test CA in the system trust store.

A fresh Debian 12 test container runs a local HTTPS package index on 127.0.0.1 (Python's http.server
wrapped in TLS, a certificate for 127.0.0.1 signed by a CA made for this test) serving two wheels: pip
itself, repacked from the pip this test runs on (>= 24.2, so the bootstrap's pip upgrade has something
to install), and a one-module package made here. The container's python3 has no venv module yet, so
tools/venv.sh first installs python3.11-venv from Debian's archive (empty apt lists), whose pip 23.0.1
does not use the system store by itself.

- Without the test CA in the system store, the bootstrap fails and its last line is the TLS cause.
- With it (update-ca-certificates, nothing given to pip), the bootstrap succeeds: the old pip's upgrade
  with the system bundle, every later call through pip's truststore.
"""

from __future__ import annotations

import base64
import hashlib
import os
import subprocess
import zipfile
from pathlib import Path

import pytest

from conftest import ROOT, docker_ready

IMAGE = "dlbox-test:debian12"
PORT = 8443

SERVER = r"""
import http.server, ssl, sys
root, cert, key, port = sys.argv[1:]
handler = lambda *a, **kw: http.server.SimpleHTTPRequestHandler(*a, directory=root, **kw)
httpd = http.server.ThreadingHTTPServer(("127.0.0.1", int(port)), handler)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
httpd.socket = ctx.wrap_socket(httpd.socket, server_side=True)
httpd.serve_forever()
"""

SETUP = r"""
set -eu
cd /srv/tls
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj '/CN=dlbox test CA' -keyout ca.key -out ca.crt \
  -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj '/CN=127.0.0.1' -keyout server.key -out server.csr 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' > ext.cnf
printf 'subjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid\n' >> ext.cnf
openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -extfile ext.cnf -out server.crt 2>/dev/null
nohup python3 /srv/tls/server.py /srv/tls/index server.crt server.key %(port)d >/srv/tls/server.log 2>&1 &
for _ in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.1/%(port)d) 2>/dev/null && exit 0; sleep 0.2; done
echo 'the test index did not start'; cat /srv/tls/server.log; exit 1
""" % {"port": PORT}

BOOTSTRAP = r"""
cd /srv/tree
rm -rf /tmp/tv
export PIP_INDEX_URL=https://127.0.0.1:%(port)d/simple/ PIP_DEFAULT_TIMEOUT=5 PIP_RETRIES=0
unset PIP_CERT REQUESTS_CA_BUNDLE SSL_CERT_FILE SSL_CERT_DIR PIP_FIND_LINKS
bash tools/venv.sh /tmp/tv /srv/tls/requirements.txt
""" % {"port": PORT}


def _sh(*args, check=True, timeout=900):
    return subprocess.run(list(args), capture_output=True, text=True, check=check, timeout=timeout)


def _wheel(path: Path, files: dict, dist: str, version: str, extra_info: dict | None = None):
    """A wheel with FILES ({name: bytes}) and a dist-info whose RECORD hashes them."""
    info = "%s-%s.dist-info" % (dist, version)
    meta = dict(extra_info or {})
    meta.setdefault("METADATA", b"Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (dist.encode(), version.encode()))
    meta.setdefault("WHEEL", b"Wheel-Version: 1.0\nGenerator: dlbox-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
    entries = dict(files)
    entries.update({"%s/%s" % (info, name): data for name, data in meta.items()})
    record = []
    for name, data in entries.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append("%s,sha256=%s,%d" % (name, digest, len(data)))
    record.append("%s/RECORD,," % info)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in entries.items():
            zf.writestr(name, data)
        zf.writestr("%s/RECORD" % info, "\n".join(record) + "\n")


def _pip_wheel(out: Path) -> str:
    """The pip this test runs on, repacked as a wheel (its files and its dist-info's METADATA/WHEEL/entry points)."""
    import pip  # pylint: disable=import-outside-toplevel

    version = pip.__version__
    package = Path(pip.__file__).parent
    files = {}
    for path in package.rglob("*"):
        if path.is_file() and "__pycache__" not in path.parts:
            files["pip/%s" % path.relative_to(package).as_posix()] = path.read_bytes()
    info = package.parent / ("pip-%s.dist-info" % version)
    meta = {name: (info / name).read_bytes() for name in ("METADATA", "WHEEL", "entry_points.txt") if (info / name).is_file()}
    name = "pip-%s-py3-none-any.whl" % version
    _wheel(out / name, files, "pip", version, meta)
    return version


@pytest.fixture(scope="module")
def machine(tmp_path_factory):
    reason = docker_ready(IMAGE)
    if reason:
        pytest.skip(reason)
    tmp = tmp_path_factory.mktemp("tls")
    index = tmp / "index"
    files = index / "files"
    files.mkdir(parents=True)
    version = _pip_wheel(files)
    assert tuple(int(p) for p in version.split(".")[:2]) >= (24, 2), version
    _wheel(files / "dlbox_tls_probe-1.0-py3-none-any.whl", {"dlbox_tls_probe.py": b"OK = True\n"}, "dlbox_tls_probe", "1.0")
    for project, wheel in (("pip", "pip-%s-py3-none-any.whl" % version),
                           ("dlbox-tls-probe", "dlbox_tls_probe-1.0-py3-none-any.whl")):
        (index / "simple" / project).mkdir(parents=True)
        (index / "simple" / project / "index.html").write_text(
            '<!DOCTYPE html><html><body><a href="../../files/%s">%s</a></body></html>\n' % (wheel, wheel))
    (tmp / "server.py").write_text(SERVER)
    (tmp / "requirements.txt").write_text("pip>=24.2\ndlbox-tls-probe==1.0\n")

    name = "dlbox-tls-%s" % os.getpid()
    _sh("docker", "rm", "-f", name, check=False)
    _sh("docker", "run", "-d", "--name", name, IMAGE, "sleep", "infinity")
    try:
        _sh("docker", "exec", name, "mkdir", "-p", "/srv/tree/tools")
        _sh("docker", "cp", str(tmp), "%s:/srv/tls" % name)
        for tool in ("venv.sh", "apt-install.sh"):
            _sh("docker", "cp", str(ROOT / "tools" / tool), "%s:/srv/tree/tools/%s" % (name, tool))
        # the image trusts the host's extra CAs; the test CA is made in the container and trusted nowhere yet
        _sh("docker", "exec", name, "bash", "-c", SETUP)
        yield name
    finally:
        _sh("docker", "rm", "-f", name, check=False)


def test_bootstrap_fails_with_the_tls_cause_without_the_ca(machine):
    proc = _sh("docker", "exec", machine, "bash", "-c", BOOTSTRAP, check=False)
    assert proc.returncode != 0
    err = proc.stderr.strip().splitlines()
    assert err[-1].startswith("venv: cause: "), proc.stdout + proc.stderr
    assert "CERTIFICATE_VERIFY_FAILED" in err[-1]
    assert any("put its CA in the system trust store" in line for line in err)


def test_bootstrap_succeeds_with_the_ca_in_the_system_store_only(machine):
    trust = "cp /srv/tls/ca.crt /usr/local/share/ca-certificates/dlbox-test-ca.crt && update-ca-certificates >/dev/null 2>&1"
    _sh("docker", "exec", machine, "bash", "-c", trust)
    proc = _sh("docker", "exec", machine, "bash", "-c", BOOTSTRAP, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "venv: upgrading pip 23.0.1" in proc.stdout          # the old pip, given the system bundle
    assert "venv:   collecting dlbox-tls-probe==1.0" in proc.stdout
    check = _sh("docker", "exec", machine, "/tmp/tv/bin/python", "-c",
                "import dlbox_tls_probe, pip; print(dlbox_tls_probe.OK, pip.__version__)")
    ok, version = check.stdout.split()
    assert ok == "True" and tuple(int(p) for p in version.split(".")[:2]) >= (24, 2)
