# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Build the FIXTURE cuDNN tarball of the cudnn scenario, laid out as NVIDIA's
cudnn-linux-x86_64-<version>_cuda12-archive.tar.xz (LICENSE, include/, lib/ with the soname links), holding the
fixture libcudnn of tests/aptrepo/specs/_cuda-cudnn.yml (a real ELF answering cudnnGetVersion: 9.17.0, CUDA 12.9).
Writes <out>/<name> and <out>/<name>.sha256; prints the sha256. usage: make_tarball.py SPEC OUTDIR"""

import base64
import hashlib
import io
import sys
import tarfile
from pathlib import Path

import yaml

VERSION = "9.17.0.29"
TOP = "cudnn-linux-x86_64-%s_cuda12-archive" % VERSION
HEADER = b"""/* FIXTURE: dlbox.stack test tarball; not NVIDIA's header. */
#ifndef CUDNN_VERSION_H_
#define CUDNN_VERSION_H_
#define CUDNN_MAJOR 9
#define CUDNN_MINOR 17
#define CUDNN_PATCHLEVEL 0
#define CUDNN_VERSION (CUDNN_MAJOR * 10000 + CUDNN_MINOR * 100 + CUDNN_PATCHLEVEL)
#endif
"""


def member(archive, name, data=None, link=None, mode=0o644):
    info = tarfile.TarInfo("%s/%s" % (TOP, name))
    info.mtime = 1735689600
    info.mode = mode
    if link:
        info.type, info.linkname = tarfile.SYMTYPE, link
        archive.addfile(info)
    else:
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))


def main(spec, outdir):
    lib = base64.b64decode(next(f["content_base64"] for p in yaml.safe_load(Path(spec).read_text())["packages"]
                                if p["version"] == VERSION + "-1" for f in p.get("files", []) if "content_base64" in f))
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / (TOP + ".tar.xz")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:xz") as archive:
        member(archive, "LICENSE", b"FIXTURE: not NVIDIA's cuDNN; dlbox.stack test tarball.\n")
        member(archive, "include/cudnn_version.h", HEADER)
        member(archive, "lib/libcudnn.so.9.17.0", lib, mode=0o755)
        member(archive, "lib/libcudnn.so.9", link="libcudnn.so.9.17.0")
        member(archive, "lib/libcudnn.so", link="libcudnn.so.9")
    path.write_bytes(buf.getvalue())
    digest = hashlib.sha256(buf.getvalue()).hexdigest()
    (out / (path.name + ".sha256")).write_text(digest + "\n")
    print(digest)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
