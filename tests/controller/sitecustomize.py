# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The test suite's controller only: the compiled-code cache of the test images (tests/images/dlbox_zipimport_cache.py)
for the modules Ansible runs on the controller itself (localhost, delegate_to: localhost).

Molecule's playbook runs (.config/molecule/config.yml) and the integration tests' (tests/integration/conftest.py)
put this folder on PYTHONPATH and name the cache folder in DLBOX_ZIPIMPORT_CACHE (build/zipimport-cache); Python
imports this file when it starts, and a local module run then reuses the compiled code of its AnsiballZ zip instead of
compiling it again. Without that variable, or when the folder is missing, nothing is changed. A playbook of 20 local
module runs (command, stat): 15.1 -> 11.2 CPU-s, 3 interleaved pairs (2026-12-03, 2 cores, beside another test run).
`make workstation` and users' runs never load this file.
"""

import importlib.util
import os
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
