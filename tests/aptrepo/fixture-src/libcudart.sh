#!/bin/sh
# Prints the base64 of a FIXTURE libcudart (fixture-src/libcudart.c) for the specs.
# usage: libcudart.sh <CUDA major> <cudaRuntimeGetVersion value>     e.g. libcudart.sh 13 13000
set -eu
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
gcc -shared -fPIC -Os -nostdlib -s -fno-asynchronous-unwind-tables -DCUDART_NUMBER="$2" \
  -Wl,-soname,"libcudart.so.$1" -Wl,--build-id=none -Wl,-z,noseparate-code -Wl,-z,norelro -Wl,--hash-style=gnu \
  -o "$dir/lib.so" "$(dirname "$0")/libcudart.c"
strip --remove-section=.comment "$dir/lib.so"
base64 -w0 "$dir/lib.so"
echo
