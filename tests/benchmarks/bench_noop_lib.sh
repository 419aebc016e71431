#!/usr/bin/env bash
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# What the two no-op benches (bench_workstation_noop.sh, bench_workstation_gpu_noop.sh) share, sourced by both after
# they set root, py, work, name and their own run(): run_done (the end of one run: its line of figures) and ab_runs.

# run_done N START RC: after run N's ansible-playbook (started at START ns, exit status RC): its tail and exit 1 on a
# failure, else one line: wall s, controller CPU s, recap, tasks printed (and the figures appended to $work/results)
run_done() {
  local rc=$3 start=$2 recap wall cpu
  set -- "$1"
  if [ $rc -ne 0 ]; then
    tail -40 "$work/run-$1.log" >&2
    echo "bench: workstation.yml run $1 failed (rc $rc)" >&2
    exit 1
  fi
  wall=$(echo "scale=1; ($(date +%s%N) - $start) / 1000000000" | bc)
  cpu=$(awk '{ print $1 + $2 }' "$work/cpu-$1")
  recap=$(grep -E "^$name +: " "$work/run-$1.log" | sed "s/^$name *: *//; s/  */ /g")
  echo "$1 $wall $cpu" >> "$work/results"
  echo "run $1: $wall s wall, controller CPU $cpu s ($recap; $(grep -c '^TASK \[' "$work/run-$1.log") tasks printed)"
}

# noop_runs FIRST: BENCH_NOOP_RUNS (default 2) no-op re-runs numbered from FIRST, each checked to change nothing (said
# on stderr otherwise), then their 15 most expensive tasks
noop_runs() {
  local i line noop=()
  for i in $(seq "$1" $(($1 - 1 + ${BENCH_NOOP_RUNS:-2}))); do
    line=$(run "$i") || exit 1
    echo "$line (no-op re-run)"
    noop+=("$work/tasks-$i.json")
    grep -Eq "^$name +: .*changed=0 " "$work/run-$i.log" || echo "bench: run $i changed something: not a no-op" >&2
  done
  "$py" tests/benchmarks/bench_top_tasks.py -n 15 "${noop[@]}"
}

# BENCH_AB="PATH_A PATH_B" (two collections paths: two versions of the collection): after the re-runs above,
# BENCH_AB_RUNS (default 3) more no-op re-runs of each on the same converged host, alternating A, B, A, B, ... (back to
# back on a loaded machine); then each one's medians and its 15 most expensive tasks
ab_runs() {
  local i k line
  read -r -a ab <<< "${BENCH_AB:-}"
  [ ${#ab[@]} -gt 0 ] || return 0
  for i in $(seq 1 "${BENCH_AB_RUNS:-3}"); do
    for k in "${!ab[@]}"; do
      line=$(run "ab$k-$i" "${ab[$k]}") || exit 1
      echo "$line (${ab[$k]})"
    done
  done
  for k in "${!ab[@]}"; do
    echo "${ab[$k]}: median of $(grep -c "^ab$k-" "$work/results") no-op re-runs:" \
         "$(grep "^ab$k-" "$work/results" | sort -k2 -n | awk '{ w[NR] = $2 } END { print w[int((NR + 1) / 2)] }') s wall," \
         "controller CPU $(grep "^ab$k-" "$work/results" | sort -k3 -n | awk '{ c[NR] = $3 } END { print c[int((NR + 1) / 2)] }') s"
    "$py" tests/benchmarks/bench_top_tasks.py -n 15 "$work"/tasks-ab"$k"-*.json
  done
}
