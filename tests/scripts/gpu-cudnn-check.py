# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPU-machine check of the cudnn role's readers against a real cuDNN wheel that is already installed (torch's
nvidia-cudnn-cu12/-cu13), without Ansible: the wheel's file list through _cudnn.archive_layout (the layout the role's
unpacker makes), the version from its cudnn_version.h, the probe of dlbox.stack.cudnn_facts (cudnnGetVersion and
cudnnGetCudartVersion through the dynamic linker), then cudnnCreate() on the GPU; torch's own reading for comparison.
Prints figures; exits non-zero when a reading disagrees.   usage: python3 tests/scripts/gpu-cudnn-check.py"""

import importlib.metadata
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


cudnn = load("_cudnn", ROOT / "plugins/module_utils/_cudnn.py")
SOURCE = (ROOT / "plugins/modules/cudnn_facts.py").read_text()
PROBE = SOURCE.split('_PROBE = r"""', 1)[1].split('"""', 1)[0]
CREATE = r"""
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
handle = ctypes.c_void_p()
status = lib.cudnnCreate(ctypes.byref(handle))
print("cudnnCreate status", status)
if status == 0:
    print("cudnnDestroy status", lib.cudnnDestroy(handle))
sys.exit(status)
"""

failures = 0
for dist in importlib.metadata.distributions():
    name = (dist.metadata["Name"] or "").lower()
    if not name.startswith("nvidia-cudnn"):
        continue
    files = [str(f) for f in dist.files or []]
    layout = cudnn.archive_layout(files)
    header = next(str(dist.locate_file(f)) for f, t in layout.items() if t == "include/cudnn_version.h")
    lib_dir = os.path.dirname(next(str(dist.locate_file(f)) for f, t in layout.items() if t.startswith("lib/libcudnn.so")))
    print("wheel %s %s: %d members laid out (%d include, %d lib, LICENSE %s); header folder %s" % (
        name, dist.version, len(layout), sum(t.startswith("include/") for t in layout.values()),
        sum(t.startswith("lib/") for t in layout.values()), "LICENSE" in layout.values(), os.path.dirname(header)))
    header_version = cudnn.parse_version_header(Path(header).read_text())
    libs = sorted({str(Path(p).parent) for p in (str(dist.locate_file(f)) for f in files) if "/lib/" in p and ".so" in p}
                  | {str(p) for p in Path(lib_dir).parents[1].glob("*/lib")})
    env = dict(os.environ, LD_LIBRARY_PATH=":".join([lib_dir] + libs))
    out = subprocess.run([sys.executable, "-c", PROBE, "libcudnn.so.9"], env=env, capture_output=True, text=True, check=False)
    found = json.loads(out.stdout.strip().splitlines()[-1])
    library_version = cudnn.decode_cudnn_version(found["cudnnGetVersion"])
    cudart = cudnn.decode_cudart_version(found["cudnnGetCudartVersion"])
    print("header %s; cudnnGetVersion %s -> %s; cudnnGetCudartVersion %s -> %s; loaded %s" % (
        header_version, found["cudnnGetVersion"], library_version, found["cudnnGetCudartVersion"], cudart, found.get("path")))
    if header_version != cudnn.short_version(dist.version) or library_version != header_version:
        print("MISMATCH: wheel %s, header %s, library %s" % (dist.version, header_version, library_version))
        failures += 1
    create = subprocess.run([sys.executable, "-c", CREATE, "libcudnn.so.9"], env=env, capture_output=True, text=True, check=False)
    print(create.stdout.strip(), create.stderr.strip()[-300:])
    failures += create.returncode != 0

try:
    import torch
    print("torch %s: torch.backends.cudnn.version() %s, device %s" % (
        torch.__version__, torch.backends.cudnn.version(), torch.cuda.get_device_name(0)))
except Exception as exc:  # pylint: disable=broad-except
    print("torch reading unavailable:", exc)
sys.exit(1 if failures else 0)
