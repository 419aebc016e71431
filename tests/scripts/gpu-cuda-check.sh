#!/usr/bin/env bash
# The cuda role's verification on a real GPU machine, without Ansible or network:
#   tests/scripts/gpu-cuda-check.sh [NVCC]
# NVCC defaults to nvcc on PATH, else /usr/local/cuda/bin/nvcc. The compute capability comes from nvidia-smi; the
# program (roles/cuda/files/cuda-verify.cu) is compiled for it and run by roles/cuda/files/cuda-verify.sh, exactly
# as the role's verify step does. Prints key=value figures; exits with cuda-verify.sh's code (0 ok).
set -u -o pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
nvcc=${1:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
release=$("$nvcc" --version | sed -n 's/.*release \([0-9][0-9]*\.[0-9][0-9]*\),.*/\1/p')
ccs=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | tr -d ' .' | sort -u)
nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader | sed 's/^/gpu=/'
args=()
for cc in $ccs; do args+=(--arch "$cc"); done
exec "$here/roles/cuda/files/cuda-verify.sh" --nvcc "$nvcc" --release "$release" "${args[@]}" --run yes
