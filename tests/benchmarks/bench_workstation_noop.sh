#!/usr/bin/env bash
# Benchmark the no-op re-run of `make workstation`: playbooks/workstation.yml run twice on a fresh CPU-only test
# container (dlbox-test:ubuntu2404 by default, systemd as in the Molecule platforms), the second run timed. The
# second run has nothing to do, so its time is what a lab pays to confirm a converged machine. Prints both times,
# the second run's task counts (ok/changed/skipped from its recap) and how many tasks it printed.
#
#   tests/benchmarks/bench_workstation_noop.sh            (BENCH_DISTRO=ubuntu2404; DLBOX_TEST_CACHE=0: no package cache)
#
# The container reaches the real archives and PyPI through the suite's package cache (tests/scripts/test-cache.sh),
# as the Molecule scenarios do. It is removed at the end; a failed run prints its tail and exits 1.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
[ -x "$root/.venv/bin/ansible-playbook" ] && export PATH="$root/.venv/bin:$PATH"
image=dlbox-test:${BENCH_DISTRO:-ubuntu2404}
name=dlbox-bench-noop-$$
work=$(mktemp -d /tmp/dlbox-bench-noop.XXXXXX)
client=.config/molecule/cache-off

cleanup() {
  docker rm -f "$name" >/dev/null 2>&1
  [ "$client" = build/test-cache/client ] && tests/scripts/test-cache.sh stop "$$" >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT

if ! docker image inspect "$image" >/dev/null 2>&1; then
  echo "bench: no image $image (run tests/images/build.sh first)" >&2
  exit 2
fi
if [ "${DLBOX_TEST_CACHE:-1}" = 1 ]; then
  tests/scripts/test-cache.sh start "$$" >/dev/null || exit 2
  client=build/test-cache/client
fi

docker run -d --name "$name" --cgroupns=host --cap-add SYS_ADMIN --tmpfs /run --tmpfs /run/lock --tmpfs /tmp \
  -v /sys/fs/cgroup:/sys/fs/cgroup:rw \
  -v "$root/$client/apt.conf:/etc/apt/apt.conf.d/01dlbox-test-cache:ro" \
  -v "$root/$client/pip.conf:/etc/xdg/pip/pip.conf:ro" \
  --stop-signal SIGRTMIN+3 "$image" /lib/systemd/systemd >/dev/null || exit 2
printf '%s ansible_connection=community.docker.docker\n' "$name" > "$work/hosts"

# one run of `make workstation` against the container: seconds on stdout, the log in $work/run-N.log
run() {
  local start rc
  start=$(date +%s%N)
  # python_env off: since issue 45 a CPU-only host builds the plan's CPU PyTorch by default, from PyTorch's index,
  # which this machine cannot reach (and no CPU torch for ubuntu2404's Python 3.12 is on its disk); the figures
  # are the no-op run of the other roles, as before
  ansible-playbook -i "$work/hosts" playbooks/workstation.yml -e dlbox_workstation_python_env=false >"$work/run-$1.log" 2>&1
  rc=$?
  if [ $rc -ne 0 ]; then
    tail -40 "$work/run-$1.log" >&2
    echo "bench: workstation.yml run $1 failed (rc $rc)" >&2
    exit 1
  fi
  echo "scale=1; ($(date +%s%N) - $start) / 1000000000" | bc
}

first=$(run 1) || exit 1
second=$(run 2) || exit 1
recap=$(grep -E "^$name +: " "$work/run-2.log" | sed "s/^$name *: *//; s/  */ /g")
tasks=$(grep -c '^TASK \[' "$work/run-2.log")
echo "make workstation on a CPU-only ${BENCH_DISTRO:-ubuntu2404} test container: first run ${first} s;" \
     "no-op re-run ${second} s (${recap}; ${tasks} tasks printed)"
