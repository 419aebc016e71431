#!/usr/bin/env bash
# Run Molecule scenarios on every test platform that exists, several scenarios at a time.
#
#   tests/scripts/molecule.sh [scenario ...]      (default: every scenario under molecule/ but `heavy` ones)
#   tests/scripts/molecule.sh --heavy             (what `make test` leaves out: every `heavy` scenario, and the
#                                                  `heavy=PLATFORM,...` platforms of the others)
#
# Platforms come from MOLECULE_DISTROS (space-separated) or build/platforms, written by
# tests/images/build.sh. .config/molecule/scenarios.txt, one table, says which scenarios run on fewer
# platforms, with Docker inside (layer .config/molecule/dind.yml), or only when named (heavy: make test-heavy).
# DLBOX_TEST_CACHE (default 1) starts the suite's package cache (tests/scripts/test-cache.sh:
# apt-cacher-ng and proxpi in one container, kept under build/test-cache) and points every test container and the
# controller's pip at it; 0 fetches everything directly (the platforms then mount .config/molecule/cache-off).
# MOLECULE_JOBS (default 3): scenarios run at once. Scenarios mostly wait on apt and pip, so a 2-core
# machine runs three of them in about the time of the longest; one scenario's platforms run one after
# another (Molecule keeps one state folder a scenario). Longest scenarios start first.
# DLBOX_MOLECULE_EXTRA_CONFIG=FILE layers one more Molecule config last (an A/B of a harness setting).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
[ -x "$root/.venv/bin/molecule" ] && export PATH="$root/.venv/bin:$PATH"
export ANSIBLE_COLLECTIONS_PATH=${ANSIBLE_COLLECTIONS_PATH:-$root/build/collections}
jobs_max=${MOLECULE_JOBS:-3}
table=.config/molecule/scenarios.txt
# field SCENARIO N: column N of the scenario's line in the table ("" when it is not listed)
field() { awk -v s="$1" -v n="$2" '$1 !~ /^#/ && $1 == s { print $n; exit }' "$table"; }
# The heavy column: "heavy" leaves the whole scenario out of `make test`; "heavy=ubuntu2204" only that platform
# (it runs in `make test-heavy`). A scenario named on the command line runs on all its platforms.
mode=named
[ "${1:-}" = --heavy ] && { mode=heavy; shift; }
scenarios=("$@")
if [ ${#scenarios[@]} -eq 0 ]; then
  [ "$mode" = named ] && mode=light
  for f in molecule/*/molecule.yml; do
    s=$(basename "$(dirname "$f")")
    h=$(field "$s" 4)
    case "$mode:$h" in
      light:heavy|heavy:-|heavy:) ;;
      *) scenarios+=("$s") ;;
    esac
  done
fi
# Opt-in platforms: only the scenarios whose platforms column names one run on it ("all" and unlisted scenarios do
# not; "all,ubuntu2604" is every platform), so a new release costs make test only the scenarios chosen for it
# (Ubuntu 26.04: issue 53).
optin_platforms=",ubuntu2604,"
# platform_wanted SCENARIO DISTRO: whether this run takes the scenario on that platform
platform_wanted() {
  local h only
  only=$(field "$1" 2)
  if [ -n "$only" ] && [[ ",$only," != *",all,"* ]] && [[ ",$only," != *",$2,"* ]]; then return 1; fi
  if [[ "$optin_platforms" == *",$2,"* ]] && [[ ",$only," != *",$2,"* ]]; then return 1; fi
  h=$(field "$1" 4)
  case "$mode:$h" in
    light:heavy=*) [[ ",${h#heavy=}," != *",$2,"* ]] ;;
    heavy:heavy=*) [[ ",${h#heavy=}," == *",$2,"* ]] ;;
    *) return 0 ;;
  esac
}
read -r -a distros <<< "${MOLECULE_DISTROS:-$(tr '\n' ' ' < build/platforms 2>/dev/null)}"
if [ ${#distros[@]} -eq 0 ]; then
  echo "molecule.sh: no test platforms (run tests/images/build.sh first)" >&2
  exit 2
fi
mkdir -p build/molecule-logs build/molecule-results build/zipimport-cache build/ansiballz-cache

if [ "${DLBOX_TEST_CACHE:-1}" = 1 ]; then
  tests/scripts/test-cache.sh start "$$" || exit 2
  trap 'tests/scripts/test-cache.sh stop "$$"' EXIT
  # the test containers mount these files (.config/molecule/config.yml); the controller's pip (prepare.yml's
  # wheel downloads, test-wheelhouse.sh) uses the same PyPI cache
  export DLBOX_TEST_CACHE_CLIENT=build/test-cache/client PIP_INDEX_URL=http://127.0.0.1:3141/index/
else
  unset DLBOX_TEST_CACHE_CLIENT
fi

# Longest first: the last duration of each scenario here (build/molecule-results/<s>.seconds), else the
# committed one (tests/scripts/molecule-durations.txt).
ordered=()
while read -r _ s; do ordered+=("$s"); done < <(
  for s in "${scenarios[@]}"; do
    seconds=$(cat "build/molecule-results/$s.seconds" 2>/dev/null ||
              awk -v s="$s" '$1 == s {print $2}' tests/scripts/molecule-durations.txt)
    printf '%s %s\n' "${seconds:-0}" "$s"
  done | sort -rn)

# CPU seconds, not wall seconds, are what a 2-core machine runs out of (scenarios run 2-4x slower side by side), so
# each result line also says what the platform cost in CPU: the controller's share (molecule, ansible-playbook,
# the docker CLI: this shell's children, from `times`) and the test container's (its cgroup's CPU counter, read
# every 3 s while they live, every container of the scenario; cgroup v1 or v2; Docker-in-Docker scenarios' inner
# containers are not counted).
children_cpu() {  # FILE: CPU seconds of this shell's finished children (user + system) into FILE. The `times`
  # builtin runs in this shell: inside a $(...) it would count that subshell's children.
  times > "$1.times"
  awk 'NR == 2 { n = 0; for (i = 1; i <= 2; i++) { split($i, t, "m"); sub("s", "", t[2]); n += t[1] * 60 + t[2] }
                 printf "%d\n", n }' "$1.times" > "$1"
  rm -f "$1.times"
}
# platform_names SCENARIO DISTRO: the test containers the scenario starts (its molecule.yml's platforms, else the base
# configuration's dlbox-<scenario>-<distro>)
platform_names() {
  local names
  names=$(sed -n 's/^  - name: *//p' "molecule/$1/molecule.yml" |
          sed -e "s/\${MOLECULE_SCENARIO_NAME}/$1/g" -e "s/\${MOLECULE_DISTRO:-[a-z0-9]*}/$2/g")
  echo "${names:-dlbox-$1-$2}"
}
# watch_containers DIR NAME...: each container's CPU seconds so far in DIR/NAME, rewritten every 3 s until killed
# (its id is looked up until it exists, then only its cgroup's counter is read; a destroyed one keeps its last figure)
watch_containers() {
  local dir=$1 n id
  shift
  declare -A file=()
  while sleep 3; do
    for n in "$@"; do
      if [ -z "${file[$n]:-}" ]; then
        id=$(docker inspect -f '{{.Id}}' "$n" 2>/dev/null) || continue
        if [ -r "/sys/fs/cgroup/cpuacct/docker/$id/cpuacct.usage" ]; then file[$n]=/sys/fs/cgroup/cpuacct/docker/$id/cpuacct.usage
        elif [ -r "/sys/fs/cgroup/system.slice/docker-$id.scope/cpu.stat" ]; then file[$n]=/sys/fs/cgroup/system.slice/docker-$id.scope/cpu.stat
        else continue
        fi
      fi
      [ -r "${file[$n]}" ] || continue
      awk '$1 == "usage_usec" { printf "%d\n", $2 / 1e6; exit } NF == 1 { printf "%d\n", $1 / 1e9 }' "${file[$n]}" \
        > "$dir/$n.new" && mv "$dir/$n.new" "$dir/$n"
    done
  done
}

# One scenario on each of its platforms, in turn; one result line a platform.
run_scenario() {
  local s=$1 d log start verdict total=0 cpu0 cpu1 watcher seen names
  local base=(--base-config .config/molecule/config.yml)
  [ "$(field "$s" 3)" = dind ] && base+=(--base-config .config/molecule/dind.yml)
  base+=(--base-config .config/molecule/suite.yml)
  [ -n "${DLBOX_MOLECULE_EXTRA_CONFIG:-}" ] && base+=(--base-config "$DLBOX_MOLECULE_EXTRA_CONFIG")
  : > "build/molecule-results/$s.txt"
  for d in "${distros[@]}"; do
    platform_wanted "$s" "$d" || continue
    log="build/molecule-logs/$s-$d.log"
    seen="build/molecule-results/$s-$d.container-cpu"
    rm -rf "$seen" && mkdir -p "$seen"
    start=$(date +%s)
    children_cpu "$seen.before"; cpu0=$(cat "$seen.before")
    read -r -d '' -a names < <(platform_names "$s" "$d")
    # what an interrupted run left (suite.yml's sequence does not destroy before create): the containers and
    # Molecule's state folder of this scenario
    docker rm -f -v "${names[@]}" >/dev/null 2>&1
    rm -rf "$HOME"/.ansible/tmp/molecule.*."$s"
    watch_containers "$seen" "${names[@]}" &
    watcher=$!
    if MOLECULE_DISTRO="$d" molecule "${base[@]}" test -s "$s" >"$log" 2>&1; then verdict=PASS; else verdict=FAIL; fi
    kill "$watcher" 2>/dev/null
    wait "$watcher" 2>/dev/null
    children_cpu "$seen.after"; cpu1=$(cat "$seen.after")
    rm -f "$seen.before" "$seen.after"
    total=$(( total + $(date +%s) - start ))
    {
      printf '[molecule] %-4s %-28s %-11s %4ss  CPU %4ss + %4ss  (%s)\n' "$verdict" "$s" "$d" "$(( $(date +%s) - start ))" \
        "$(( cpu1 - cpu0 ))" "$(cat "$seen"/* 2>/dev/null | awk '{ n += $1 } END { print n + 0 }')" "$log"
      if [ "$verdict" = FAIL ]; then
        grep -E 'FAILED|fatal:|ERROR|AssertionError|failed=[1-9]|CRITICAL' "$log" | tail -25 | sed 's/^/    /'
      fi
    } | tee -a "build/molecule-results/$s.txt"
  done
  echo "$total" > "build/molecule-results/$s.seconds"
}

start_all=$(date +%s)
running=0
for s in "${ordered[@]}"; do
  if [ "$running" -ge "$jobs_max" ]; then
    wait -n
    running=$((running - 1))
  fi
  run_scenario "$s" &
  running=$((running + 1))
done
wait

passed=0 failed=0
for s in "${ordered[@]}"; do
  passed=$(( passed + $(grep -c '^\[molecule\] PASS' "build/molecule-results/$s.txt") ))
  failed=$(( failed + $(grep -c '^\[molecule\] FAIL' "build/molecule-results/$s.txt") ))
done
# The failures once more, last, in a few lines: CI shows only the end of the output.
for s in "${ordered[@]}"; do
  grep '^\[molecule\] FAIL' "build/molecule-results/$s.txt" | while read -r _ _ _ d _ _ _ _ _ log; do
    log=${log#(}; log=${log%)}
    echo "[molecule] FAILED $s on $d, its last failure ($log):"
    # the phase that failed; a failed verify shows pytest's own lines, else the last failed task
    sed -e 's/\x1b\[[0-9;]*m//g' -e 's/^[[:space:]│]*//' "$log" |
      awk '/➜ [a-z_]+: Executed: Failed/ && !phase { phase = $0 }
           /fatal: |FAILED! =>|ERROR! / { n = NR }
           /^E  |^tests\/.*:[0-9]+: |^FAILED tests/ { e[++ne] = $0 }
           { line[NR] = $0 }
           END { if (phase) print phase
                 if (phase ~ /verify/ && ne) { for (i = (ne > 8 ? ne - 7 : 1); i <= ne; i++) print e[i] }
                 else for (i = n; n && i < n + 8 && i <= NR; i++) print line[i] }' |
      cut -c1-400 | sed 's/^/    /'
  done
done
# CPU seconds of every platform run (controller + container), the figure a 2-core machine's wall time follows
cpu_all=$(for s in "${ordered[@]}"; do cat "build/molecule-results/$s.txt"; done |
          awk '$1 == "[molecule]" { for (i = 1; i <= NF; i++) if ($i == "CPU") { n += $(i + 1) + $(i + 3) } } END { print n + 0 }')
echo "molecule: $passed passed, $failed failed in $(( $(date +%s) - start_all )) s ($jobs_max scenarios at a time; ${cpu_all} CPU-s)"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
