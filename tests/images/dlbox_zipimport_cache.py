"""Test images only: compiled code for modules imported from zip files, cached on disk by content.

Every Ansible module run sends its AnsiballZ zip (the module and ``ansible.module_utils``) and the remote Python
imports from it with ``zipimport``, which compiles each source file again on every run: it never reads or writes
bytecode. Importing ``ansible.module_utils.basic`` from such a zip took 0.20 CPU-s compiling, 0.09 from bytecode
(Debian 12, 2 cores). Here the compiled code of each zip member is kept in /var/cache/dlbox-zipimport, keyed by its
source, its path in the zip and the Python version, and reused; what runs is the same code (tracebacks keep the real
path), so a module behaves as it would without this file. Measured on ten common tasks (apt, copy, lineinfile, stat,
file, command, shell, slurp, getent, systemd_service), interleaved A/B from the containers' cgroups: Debian 12 4.52
-> 3.64 CPU-s, Ubuntu 24.04 5.18 -> 3.69 (2026-12-03). The folder is root's (0755): only root's module runs write
it, and no other user can plant code that root would run. Loaded by dlbox_zipimport_cache.pth in the system Python's
dist-packages (venvs do not see it).
"""

import hashlib
import marshal
import os
import sys
import types
import zipimport

CACHE = "/var/cache/dlbox-zipimport"
_compile_source = getattr(zipimport, "_compile_source", None)


def _refile(code, filename):
    consts = tuple(_refile(c, filename) if isinstance(c, types.CodeType) else c for c in code.co_consts)
    return code.replace(co_filename=filename, co_consts=consts)


def _cached_compile_source(pathname, source):
    inner = pathname.split(".zip" + os.sep, 1)[-1]
    key = hashlib.sha256(b"%s\0%s\0" % (sys.version.encode(), inner.encode()) + source).hexdigest()
    path = os.path.join(CACHE, key)
    try:
        with open(path, "rb") as handle:
            return _refile(marshal.load(handle), pathname)
    except (OSError, EOFError, ValueError, TypeError):
        pass
    code = _compile_source(pathname, source)
    try:
        tmp = "%s.%d" % (path, os.getpid())
        with open(tmp, "wb") as handle:
            marshal.dump(code, handle)
        os.replace(tmp, path)
    except OSError:
        pass
    return code


if _compile_source is not None and os.path.isdir(CACHE):
    zipimport._compile_source = _cached_compile_source
