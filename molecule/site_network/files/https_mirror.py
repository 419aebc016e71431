"""FIXTURE: a static HTTPS mirror on 127.0.0.1 only, for the site_network Molecule scenario.

    https_mirror.py ROOT CERT KEY [PORT]

Serves ROOT (the tests/aptrepo container-toolkit fixture and a PyPI simple index) with the server certificate the
scenario's test CA signed. It stands in for a lab's mirror behind its own CA; it is no part of the collection.
"""

import functools
import http.server
import ssl
import sys


def main():
    root, cert, key = sys.argv[1:4]
    port = int(sys.argv[4]) if len(sys.argv) > 4 else 8443
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=root)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
