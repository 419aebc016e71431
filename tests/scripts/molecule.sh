#!/usr/bin/env bash
# Run Molecule scenarios on every test platform that exists.
#
#   tests/scripts/molecule.sh [scenario ...]      (default: every scenario under molecule/ but `heavy` ones)
#
# Platforms come from MOLECULE_DISTROS (space-separated) or build/platforms, written by
# tests/images/build.sh. A scenario folder may hold:
#   dind       -> layer .config/molecule/dind.yml (Docker inside the test container)
#   platforms  -> the only distros it runs on, one a line
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
[ -x "$root/.venv/bin/molecule" ] && export PATH="$root/.venv/bin:$PATH"
export ANSIBLE_COLLECTIONS_PATH=${ANSIBLE_COLLECTIONS_PATH:-$root/build/collections}
scenarios=("$@")
if [ ${#scenarios[@]} -eq 0 ]; then
  # a folder holding `heavy` (multi-GB real installs) runs only when named (make test-heavy)
  for f in molecule/*/molecule.yml; do
    [ -f "$(dirname "$f")/heavy" ] || scenarios+=("$(basename "$(dirname "$f")")")
  done
fi
read -r -a distros <<< "${MOLECULE_DISTROS:-$(tr '\n' ' ' < build/platforms 2>/dev/null)}"
if [ ${#distros[@]} -eq 0 ]; then
  echo "molecule.sh: no test platforms (run tests/images/build.sh first)" >&2
  exit 2
fi
mkdir -p build/molecule-logs
passed=0 failed=0 failures=()
for s in "${scenarios[@]}"; do
  base=(--base-config .config/molecule/config.yml)
  [ -f "molecule/$s/dind" ] && base+=(--base-config .config/molecule/dind.yml)
  for d in "${distros[@]}"; do
    if [ -f "molecule/$s/platforms" ] && ! grep -qx "$d" "molecule/$s/platforms"; then
      continue
    fi
    log="build/molecule-logs/$s-$d.log"
    start=$(date +%s)
    if MOLECULE_DISTRO="$d" molecule "${base[@]}" test -s "$s" >"$log" 2>&1; then
      passed=$((passed + 1)); verdict=PASS
    else
      failed=$((failed + 1)); verdict=FAIL; failures+=("$s/$d")
    fi
    printf '[molecule] %-4s %-28s %-11s %4ss  (%s)\n' "$verdict" "$s" "$d" "$(( $(date +%s) - start ))" "$log"
    if [ "$verdict" = FAIL ]; then
      grep -E 'FAILED|fatal:|ERROR|AssertionError|failed=[1-9]|CRITICAL' "$log" | tail -25 | sed 's/^/    /'
    fi
  done
done
echo "molecule: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
