"""Serve a built fixture apt repository over HTTP on the loopback interface only.

    serve.py DIR [--port 0] [--bind 127.0.0.1]

``--port 0`` picks a free port; the chosen URL is printed as the first line of stdout
(``http://127.0.0.1:PORT/``) and flushed, so a test can start this in the background, read one
line and go. Stop it with SIGTERM or SIGINT. Requests are not logged (``--verbose`` logs them to
stderr). Only loopback addresses are accepted for ``--bind``: test traffic never leaves the host.

From Python, ``start(directory, port=0)`` returns a running ``(server, thread)`` in-process and
``server.shutdown()`` stops it.
"""

from __future__ import annotations

import argparse
import functools
import ipaddress
import signal
import socket
import sys
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


class QuietHandler(SimpleHTTPRequestHandler):
    """Static files, no directory listings of hidden build files, no request log unless verbose."""

    verbose = False

    def log_message(self, format, *args):  # noqa: A002 - signature of the base class
        if self.verbose:
            super().log_message(format, *args)

    def send_head(self):
        if any(p.startswith(".") and p not in (".", "..") for p in self.path.split("?", 1)[0].split("/")):
            self.send_error(404, "hidden files are not served")
            return None
        return super().send_head()


def check_loopback(host: str) -> str:
    try:
        if ipaddress.ip_address(host).is_loopback:
            return host
    except ValueError:
        pass
    raise ValueError(f"refusing to listen on {host!r}: fixture servers listen on loopback only (127.0.0.1 or ::1)")


def make_server(directory: Path, port: int = 0, bind: str = "127.0.0.1", verbose: bool = False) -> ThreadingHTTPServer:
    bind = check_loopback(bind)
    directory = Path(directory).resolve()
    if not directory.is_dir():
        raise FileNotFoundError(f"{directory} is not a directory")
    handler = functools.partial(type("Handler", (QuietHandler,), {"verbose": verbose}), directory=str(directory))
    server_cls = ThreadingHTTPServer
    if ":" in bind:
        server_cls = type("ThreadingHTTPServerV6", (ThreadingHTTPServer,), {"address_family": socket.AF_INET6})
    server = server_cls((bind, port), handler)
    server.daemon_threads = True
    return server


def url_of(server: ThreadingHTTPServer) -> str:
    host, port = server.server_address[:2]
    host = f"[{host}]" if ":" in host else host
    return f"http://{host}:{port}/"


def start(directory: Path, port: int = 0, bind: str = "127.0.0.1") -> tuple[ThreadingHTTPServer, threading.Thread]:
    """Serve ``directory`` from a daemon thread of this process; ``server.shutdown()`` stops it."""
    server = make_server(directory, port, bind)
    thread = threading.Thread(target=server.serve_forever, name=f"aptrepo-serve-{server.server_address[1]}", daemon=True)
    thread.start()
    return server, thread


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("directory", type=Path, help="repository root to serve (the build_repo.py OUTDIR)")
    parser.add_argument("--port", type=int, default=0, help="TCP port; 0 picks a free one (default)")
    parser.add_argument("--bind", default="127.0.0.1", help="loopback address to listen on (default 127.0.0.1)")
    parser.add_argument("--verbose", action="store_true", help="log each request to stderr")
    args = parser.parse_args(argv)
    try:
        server = make_server(args.directory, args.port, args.bind, args.verbose)
    except (ValueError, OSError) as exc:
        print(f"serve.py: {exc}", file=sys.stderr)
        return 2

    def stop(_signum, _frame):
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(url_of(server), flush=True)
    try:
        server.serve_forever()
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
