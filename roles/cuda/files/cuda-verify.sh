#!/usr/bin/env bash
# dlbox.stack.cuda verification (roles/cuda/files/cuda-verify.sh): one toolkit's nvcc.
#   --nvcc PATH         the nvcc to check
#   --release X.Y       the release nvcc --version must say (omitted: only printed)
#   --arch CC           compute capability without the dot (89), repeatable; none: nvcc's default
#   --ccbin PATH        host g++ for nvcc (-ccbin); never -allow-unsupported-compiler
#   --compile yes|no    compile and link the test program (default yes)
#   --run yes|no|auto   run it (auto: when nvidia-smi -L answers) (default auto)
#   --source FILE       the program (default: cuda-verify.cu beside this script)
# Prints key=value figures. Exit: 0 ok, 2 wrong release, 3 compile failed, 4 the program failed on the GPU.
# Dependency-free besides bash, coreutils and the toolkit (tests/scripts/gpu-cuda-check.sh runs it on GPU machines).
set -u -o pipefail
nvcc="" release="" ccbin="" compile=yes run=auto source="$(dirname "$0")/cuda-verify.cu"
archs=()
while [ $# -gt 0 ]; do
  case "$1" in
    --nvcc) nvcc=$2; shift 2 ;;
    --release) release=$2; shift 2 ;;
    --arch) [ -n "$2" ] && archs+=("$2"); shift 2 ;;
    --arch=*) archs+=("${1#--arch=}"); shift ;;
    --ccbin) ccbin=$2; shift 2 ;;
    --compile) compile=$2; shift 2 ;;
    --run) run=$2; shift 2 ;;
    --source) source=$2; shift 2 ;;
    *) echo "cuda-verify: unknown argument $1" >&2; exit 64 ;;
  esac
done
[ -x "$nvcc" ] || { echo "cuda-verify: nvcc '$nvcc' is not an executable" >&2; exit 64; }

version_text=$("$nvcc" --version 2>&1) || { echo "$version_text"; echo "cuda-verify: $nvcc --version failed" >&2; exit 2; }
got=$(printf '%s\n' "$version_text" | sed -n 's/.*release \([0-9][0-9]*\.[0-9][0-9]*\), V\([0-9.]*\).*/\1 \2/p' | head -n 1)
echo "nvcc=$nvcc nvcc_release=${got% *} nvcc_version=${got#* }"
if [ -n "$release" ] && [ "${got% *}" != "$release" ]; then
  echo "cuda-verify: $nvcc --version says release '${got% *}', not $release" >&2
  exit 2
fi
[ "$compile" = yes ] || exit 0

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
flags=()
for cc in "${archs[@]}"; do
  flags+=(-gencode "arch=compute_${cc},code=sm_${cc}")
done
[ -n "$ccbin" ] && flags+=(-ccbin "$ccbin")
host_cxx=${ccbin:-$(command -v g++ || echo none)}
echo "host_compiler=$host_cxx gcc=$("$host_cxx" -dumpfullversion -dumpversion 2>/dev/null || echo none) archs=${archs[*]:-default}"
start=$(date +%s%N)
if ! "$nvcc" "${flags[@]}" -o "$work/cuda-verify" "$source" >"$work/log" 2>&1; then
  cat "$work/log"
  echo "cuda-verify: $nvcc could not compile $source (${flags[*]})" >&2
  exit 3
fi
end=$(date +%s%N)
echo "compiled=yes compile_ms=$(( (end - start) / 1000000 )) binary_bytes=$(stat -c %s "$work/cuda-verify")"
# SASS for each architecture: cuobjdump --list-elf names each cubin (cuda-verify.1.sm_89.cubin); toolkits without
# cuobjdump (NVIDIA's nvcc wheels) are checked by the architecture name their fatbinary's ELF carries.
# Only the toolkit's own cuobjdump (beside its nvcc): another toolkit's may not read this nvcc's output.
cuobjdump=$(dirname "$nvcc")/cuobjdump
[ -x "$cuobjdump" ] || cuobjdump=""
if [ -n "$cuobjdump" ]; then
  "$cuobjdump" --list-elf "$work/cuda-verify" > "$work/elf" 2>&1 || true
else
  grep -a -o 'sm_[0-9][0-9]*[a-z]*' "$work/cuda-verify" | sort -u > "$work/elf" || true
fi
for cc in "${archs[@]}"; do
  if grep -q "sm_${cc}\b" "$work/elf"; then echo "sass_sm_${cc}=yes"; else echo "sass_sm_${cc}=no (${cuobjdump:-grep}: $(tr '\n' ' ' < "$work/elf"))"; exit 3; fi
done

if [ "$run" = auto ]; then
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then run=yes; else run=no; fi
fi
if [ "$run" = yes ]; then
  if ! "$work/cuda-verify"; then
    echo "cuda-verify: the program failed on the GPU" >&2
    exit 4
  fi
  echo "ran=yes"
else
  echo "ran=no (no GPU answered)"
fi
