#!/bin/sh
# Prints the base64 of a FIXTURE libcudnn (fixture-src/libcudnn.c) for the specs and the Molecule tarball.
# usage: libcudnn.sh <cuDNN major> <cudnnGetVersion value> <cudnnGetCudartVersion value>
#   e.g. libcudnn.sh 9 91002 12090   (cuDNN 9.10.2 built for CUDA 12.9)
set -eu
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
gcc -shared -fPIC -Os -nostdlib -s -fno-asynchronous-unwind-tables \
  -DCUDNN_NUMBER="$2UL" -DCUDART_NUMBER="$3UL" \
  -Wl,-soname,"libcudnn.so.$1" -Wl,--build-id=none -Wl,-z,noseparate-code -Wl,-z,norelro -Wl,--hash-style=gnu \
  -o "$dir/lib.so" "$(dirname "$0")/libcudnn.c"
strip --remove-section=.comment "$dir/lib.so"
base64 -w0 "$dir/lib.so"
echo
