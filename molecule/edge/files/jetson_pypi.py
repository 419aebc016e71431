# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Build a FIXTURE of the Jetson AI Lab PyTorch index for the `edge` scenario (molecule/edge/prepare.yml).

    jetson_pypi.py OUT --path /jp6/cu126 --torch 2.5.0 --cuda 12.6 --cudnn 9.3.0
    jetson_pypi.py OUT --path /compute/redist/jp/v61/pytorch --layout folder --torch 2.5.0a0+872d972e41.nv24.08.17622132 ...

The real index (data/jetson.yml ``pytorch_sources``, e.g. https://pypi.jetson-ai-lab.io/jp6/cu126) is a PEP 503
"simple" index that serves aarch64 CUDA builds of torch under PyPI's version numbers, and PyPI's own packages beside
them; pip takes it as ``--index-url``. Its wheels are aarch64 only and cannot install on the x86 test container, so
this writes the same layout under ``OUT/<path>`` (``--layout folder``: the wheel and an ``index.html`` listing it
directly under ``OUT/<path>``, as NVIDIA's folder of Jetson wheels is served):

    OUT/README.md                                   says what this is (FIXTURE)
    OUT/<path>/index.html                           the project list (torch)
    OUT/<path>/torch/index.html                     the links, each with its #sha256= as pip checks it
    OUT/<path>/torch/torch-<version>-py3-none-any.whl

The wheel is NOT PyTorch: a pure-Python ``torch`` package labelled FIXTURE in its metadata and module, answering
what dlbox-check asks (``torch.__version__``, ``torch.version.cuda``, ``torch.backends.cudnn.version()`` in
PyTorch's encoding, 9.3.0 -> 90300) and seeing no GPU (``torch.cuda.is_available()`` False: a container has
none). The same arguments give the same bytes (fixed timestamps), so a rebuild changes nothing.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
import zipfile
from pathlib import Path

_EPOCH = (2026, 1, 1, 0, 0, 0)

_MODULE = '''"""FIXTURE: a stand-in for PyTorch {version} from the Jetson AI Lab index ({path}), NOT PyTorch.

Built by molecule/edge/files/jetson_pypi.py for dlbox.stack's `edge` test (an x86 container dressed as a Jetson).
"""
import types

FIXTURE = "dlbox FIXTURE torch {version}: Jetson AI Lab {path} stand-in, not PyTorch"
__version__ = "{version}"
version = types.SimpleNamespace(cuda="{cuda}", __version__="{version}")
backends = types.SimpleNamespace(cudnn=types.SimpleNamespace(is_available=lambda: True, version=lambda: {cudnn_int}))
cuda = types.SimpleNamespace(is_available=lambda: False, device_count=lambda: 0)
'''


def cudnn_int(text):
    """PyTorch's torch.backends.cudnn.version() of cuDNN 9 and newer: ``9.3.0`` -> ``90300``."""
    parts = [int(p) for p in (str(text).split(".") + ["0", "0"])[:3]]
    return parts[0] * 10000 + parts[1] * 100 + parts[2]


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (name, digest, len(data))


def wheel_bytes(version, path, cuda, cudnn):
    """The fixture wheel ``torch-<version>-py3-none-any.whl`` as bytes."""
    info = "torch-%s.dist-info" % version
    files = {
        "torch/__init__.py": _MODULE.format(version=version, path=path, cuda=cuda, cudnn_int=cudnn_int(cudnn)),
        info + "/METADATA": ("Metadata-Version: 2.1\nName: torch\nVersion: %s\n"
                             "Summary: FIXTURE stand-in for the Jetson AI Lab torch wheel (%s), not PyTorch\n" % (version, path)),
        info + "/WHEEL": "Wheel-Version: 1.0\nGenerator: dlbox-fixture\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    out = io.BytesIO()
    record = []
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as whl:
        for name, text in files.items():
            data = text.encode("utf-8")
            record.append(_record_line(name, data))
            whl.writestr(zipfile.ZipInfo(name, _EPOCH), data)
        record.append(info + "/RECORD,,")
        whl.writestr(zipfile.ZipInfo(info + "/RECORD", _EPOCH), "\n".join(record) + "\n")
    return out.getvalue()


def build(out, path, version, cuda, cudnn, layout="index"):
    """Write the index (or, ``layout="folder"``, the folder) under ``out``; returns the wheel's file name."""
    root = Path(out) / path.strip("/")
    folder = root if layout == "folder" else root / "torch"
    folder.mkdir(parents=True, exist_ok=True)
    name = "torch-%s-py3-none-any.whl" % version
    data = wheel_bytes(version, path, cuda, cudnn)
    (folder / name).write_bytes(data)
    sha = hashlib.sha256(data).hexdigest()
    if layout == "folder":
        # as a web server lists NVIDIA's folder: relative links, the local version's '+' escaped
        (folder / "index.html").write_text('<!DOCTYPE html>\n<html><body><pre>\n<a href="../">../</a>\n<a href="%s">%s</a>\n'
                                           '</pre></body></html>\n' % (name.replace("+", "%2B"), name))
    else:
        (root / "index.html").write_text('<!DOCTYPE html>\n<html><body>\n<a href="torch/">torch</a>\n</body></html>\n')
        (folder / "index.html").write_text(
            '<!DOCTYPE html>\n<html><body>\n<a href="%s#sha256=%s">%s</a>\n</body></html>\n' % (name, sha, name))
    (Path(out) / "README.md").write_text(
        "# FIXTURE Jetson PyTorch %s (dlbox.stack `edge` test)\n\nNot NVIDIA's or Jetson AI Lab's: a %s at %s holding "
        "one FIXTURE wheel, %s (a pure-Python stand-in, not PyTorch), built by molecule/edge/files/jetson_pypi.py.\n"
        % (layout, "PEP 503 index" if layout == "index" else "folder of wheels (as NVIDIA's redist folder)", path, name))
    return name


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("out")
    parser.add_argument("--path", required=True, help="the index's path, as in the plan's pytorch.index_url (/jp6/cu126)")
    parser.add_argument("--torch", required=True, help="the plan's PyTorch version (stack.pytorch.version)")
    parser.add_argument("--cuda", required=True, help="the CUDA the wheel reports (stack.pytorch.cuda)")
    parser.add_argument("--cudnn", required=True, help="the cuDNN the wheel reports (stack.pytorch.cudnn)")
    parser.add_argument("--layout", choices=["index", "folder"], default="index",
                        help="index: a PEP 503 index (the community index); folder: a folder of wheels with its listing "
                        "(NVIDIA's developer.download.nvidia.com/compute/redist/jp/v61/pytorch/)")
    args = parser.parse_args(argv)
    print(build(args.out, args.path, args.torch, args.cuda, args.cudnn, args.layout))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
