"""A minimal forward HTTP proxy for the common_alternative scenario (a test fixture).

It serves plain-HTTP absolute-URI requests (what apt sends to an http:// proxy), logs every
request line to /var/log/dlbox-test-proxy.log, and listens on 127.0.0.1:3128 only.
"""
import shutil
import sys
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOG = "/var/log/dlbox-test-proxy.log"


class Proxy(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def do_GET(self):  # noqa: N802 - http.server naming
        with open(LOG, "a", encoding="utf-8") as log:
            log.write(f"{self.command} {self.path}\n")
        if not self.path.startswith("http://"):
            self.send_error(400, "absolute http:// URL expected")
            return
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("proxy-connection", "connection", "host")}
        request = urllib.request.Request(self.path, headers=headers, method=self.command)
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        try:
            upstream = opener.open(request, timeout=60)
        except urllib.error.HTTPError as err:
            upstream = err
        except OSError as err:
            self.send_error(502, str(err))
            return
        with upstream:
            self.send_response(upstream.status if hasattr(upstream, "status") else upstream.code)
            for key, value in upstream.headers.items():
                if key.lower() not in ("connection", "transfer-encoding"):
                    self.send_header(key, value)
            self.end_headers()
            if self.command != "HEAD":
                shutil.copyfileobj(upstream, self.wfile)

    do_HEAD = do_GET

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1]) if len(sys.argv) > 1 else 3128), Proxy).serve_forever()
