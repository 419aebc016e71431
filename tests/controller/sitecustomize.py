# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The test suite's controller only: the compiled-code cache of the test images (tests/images/dlbox_zipimport_cache.py)
for the modules Ansible runs on the controller itself (localhost, delegate_to: localhost).

Molecule's playbook runs (.config/molecule/config.yml) and the integration tests' (tests/integration/conftest.py)
put this folder on PYTHONPATH and name the cache folder in DLBOX_ZIPIMPORT_CACHE (build/zipimport-cache); Python
imports this file when it starts, and a local module run then reuses the compiled code of its AnsiballZ zip instead of
compiling it again. Without that variable, or when the folder is missing, nothing is changed. A playbook of 20 local
module runs (command, stat): 15.1 -> 11.2 CPU-s, 3 interleaved pairs (2026-12-03, 2 cores, beside another test run).

The same runs name DLBOX_ANSIBALLZ_CACHE (build/ansiballz-cache): the AnsiballZ payloads the controller builds are kept
there across playbook runs. Ansible builds each module's payload (the module and the module_utils it imports, found by
parsing their sources) once per ansible-playbook run, in that run's own temporary folder: about 0.2 CPU-s a distinct
module, again in every run (a Molecule scenario is five or six runs, make test about 530). Here the folder of those
payloads is, for each build, one named by the module's path and source, this tree's plugins/module_utils, the Python
and the installed Ansible packages, so a payload is only reused for exactly the sources it was built from; what goes to
the host is the same bytes Ansible would build. Without the variable nothing is changed.
`make workstation` and users' runs never load this file.
"""

import functools
import hashlib
import importlib.util
import os
import sys
import zipimport

_CACHE = os.environ.get("DLBOX_ZIPIMPORT_CACHE", "")
if _CACHE and os.path.isdir(_CACHE):
    _spec = importlib.util.spec_from_file_location(
        "dlbox_zipimport_cache", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "images", "dlbox_zipimport_cache.py"))
    if _spec is not None and _spec.loader is not None:
        _module = importlib.util.module_from_spec(_spec)
        _spec.loader.exec_module(_module)
        if _module._compile_source is not None:   # pylint: disable=protected-access
            _module.CACHE = _CACHE
            zipimport._compile_source = _module._cached_compile_source   # pylint: disable=protected-access


_ANSIBALLZ = os.environ.get("DLBOX_ANSIBALLZ_CACHE", "")


@functools.lru_cache(maxsize=1)
def _sources_key():
    """What every payload depends on besides its module: the Python, the Ansible packages, this tree's module_utils."""
    from importlib import metadata   # pylint: disable=import-outside-toplevel
    digest = hashlib.sha256(sys.version.encode())
    for dist in ("ansible-core", "ansible"):
        try:
            digest.update(("%s=%s;" % (dist, metadata.version(dist))).encode())
        except metadata.PackageNotFoundError:
            digest.update(dist.encode())
    utils = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "plugins", "module_utils")
    for folder, dirs, files in sorted(os.walk(utils)):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(folder, name)
            digest.update(path.encode())
            with open(path, "rb") as handle:
                digest.update(handle.read())
    return digest


def _patch_module_common(module_common):
    """Builds go to the persistent folder of their own sources (module_common reads C.DEFAULT_LOCAL_TMP there only)."""
    real = module_common.C
    find = module_common._find_module_utils   # pylint: disable=protected-access
    folder = None

    class _Constants:   # pylint: disable=too-few-public-methods
        def __getattr__(self, name):
            if name == "DEFAULT_LOCAL_TMP" and folder:
                return folder
            return getattr(real, name)

    def _find_module_utils(**kwargs):
        nonlocal folder
        digest = _sources_key().copy()
        digest.update(str(kwargs.get("module_path")).encode() + b"\0")
        digest.update(kwargs.get("b_module_data") or b"")
        folder = os.path.join(_ANSIBALLZ, digest.hexdigest()[:32])
        try:
            return find(**kwargs)
        finally:
            folder = None

    module_common.C = _Constants()
    module_common._find_module_utils = _find_module_utils   # pylint: disable=protected-access


class _PatchOnImport:   # pylint: disable=too-few-public-methods
    """Patches ansible.executor.module_common when it is first imported (it is not imported yet at start-up)."""

    name = "ansible.executor.module_common"

    def find_spec(self, fullname, path=None, target=None):   # pylint: disable=unused-argument
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module

        def _exec_module(module):
            exec_module(module)
            _patch_module_common(module)

        spec.loader.exec_module = _exec_module
        return spec


if _ANSIBALLZ and os.path.isdir(_ANSIBALLZ):
    sys.meta_path.insert(0, _PatchOnImport())
