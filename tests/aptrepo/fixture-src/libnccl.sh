#!/bin/sh
# Prints the base64 of a FIXTURE libnccl (fixture-src/libnccl.c) for the specs.
# usage: libnccl.sh <NCCL major> <version code>   e.g. libnccl.sh 2 22707   (NCCL 2.27.7)
set -eu
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
gcc -shared -fPIC -Os -nostdlib -s -fno-asynchronous-unwind-tables -DNCCL_CODE="$2" \
  -Wl,-soname,"libnccl.so.$1" -Wl,--build-id=none -Wl,-z,noseparate-code -Wl,-z,norelro -Wl,--hash-style=gnu \
  -o "$dir/lib.so" "$(dirname "$0")/libnccl.c"
strip --remove-section=.comment "$dir/lib.so"
base64 -w0 "$dir/lib.so"
echo
