#!/usr/bin/env bash
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# A local stand-in for PyTorch's wheel index (https://download.pytorch.org/whl, unreachable from the test machines),
# laid out as a site mirror of it is (dlbox_site_mirrors.pytorch_index: the plan's variant folder, cpu, is appended):
#   build/pytorch-mirror/cpu/index.html, cpu/torch/index.html and the wheel beside it (PEP 503 simple index).
# It holds the one CPU PyTorch this machine kind has on its disk: torch 2.13.0+cpu for CPython 3.11 (pip's
# find-links configuration; docs/test-platform.md). No torchvision +cpu build and no cp310/cp312/cp313 wheel is
# on the machine: tests/fixtures/pytorch_cpu_mirror/vars.yml says what that leaves out.
#
#   tests/scripts/test-pytorch-mirror.sh     (prints the folder; a second run downloads nothing)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
dir=build/pytorch-mirror
mkdir -p build
exec 9>build/pytorch-mirror.build-lock
flock 9
if ! ls "$dir"/cpu/torch/torch-2.13.0+cpu-cp311-*.whl >/dev/null 2>&1; then
  rm -rf "$dir.tmp"
  mkdir -p "$dir.tmp/cpu/torch"
  "$root/.venv/bin/python" -m pip download --quiet --no-deps --only-binary :all: --python-version 3.11 \
    --platform manylinux_2_28_x86_64 'torch==2.13.0+cpu' -d "$dir.tmp/cpu/torch" >&2
  wheel=$(cd "$dir.tmp/cpu/torch" && ls torch-2.13.0+cpu-cp311-*.whl)
  sum=$(sha256sum "$dir.tmp/cpu/torch/$wheel" | cut -d' ' -f1)
  printf '<!DOCTYPE html><html><body>\n<a href="torch/">torch</a>\n</body></html>\n' > "$dir.tmp/cpu/index.html"
  printf '<!DOCTYPE html><html><body>\n<a href="%s#sha256=%s">%s</a>\n</body></html>\n' \
    "${wheel//+/%2B}" "$sum" "$wheel" > "$dir.tmp/cpu/torch/index.html"
  # the folder itself stays (a container may have it bind-mounted already): its cpu/ is replaced
  mkdir -p "$dir"
  rm -rf "$dir/cpu"
  mv "$dir.tmp/cpu" "$dir/cpu"
  rmdir "$dir.tmp"
fi
echo "$root/$dir"
