#!/bin/sh
# Prints the base64 of a FIXTURE libcuda (fixture-src/libcuda.c) for the specs.
# usage: libcuda.sh stub                    the toolkit's link stub (cuda-driver-dev-X-Y lib/stubs/libcuda.so)
#        libcuda.sh compat <driver API>      cuda-compat-X-Y's compat/libcuda.so.<driver>, e.g. libcuda.sh compat 13000
set -eu
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
case "$1" in
  stub) define=-DDLBOX_STUB ;;
  compat) define="-DDRIVER_API=$2" ;;
  *) echo "usage: $0 stub | compat <driver API>" >&2; exit 2 ;;
esac
gcc -shared -fPIC -Os -nostdlib -s -fno-asynchronous-unwind-tables "$define" \
  -Wl,-soname,libcuda.so.1 -Wl,--build-id=none -Wl,-z,noseparate-code -Wl,-z,norelro -Wl,--hash-style=gnu \
  -o "$dir/lib.so" "$(dirname "$0")/libcuda.c"
strip --remove-section=.comment "$dir/lib.so"
base64 -w0 "$dir/lib.so"
echo
