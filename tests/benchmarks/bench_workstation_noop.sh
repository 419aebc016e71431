#!/usr/bin/env bash
# Benchmark the no-op re-run of `make workstation`: playbooks/workstation.yml on a fresh CPU-only test container
# (dlbox-test:ubuntu2404 by default, systemd as in the Molecule platforms), once to converge, then BENCH_NOOP_RUNS
# (default 2) re-runs that have nothing to do: their time is what a lab pays to confirm a converged machine (issue 47:
# goal 10 s). Prints each run's wall time, task counts (ok/changed/skipped from its recap, tasks printed) and the
# controller's CPU seconds (ansible-playbook and its workers, user + system), then the 15 most expensive tasks of the
# re-runs (medians, with file:line: tests/benchmarks/bench_top_tasks.py). With this repository's ansible.cfg.
#
#   tests/benchmarks/bench_workstation_noop.sh      (BENCH_DISTRO=ubuntu2404; DLBOX_TEST_CACHE=0: no package cache;
#                                                    BENCH_CONNECTION=ssh (default: the Molecule scenarios' and a
#                                                    lab's, one multiplexed SSH master and pipelining,
#                                                    tests/scripts/molecule_containers.py) or docker (a `docker exec`
#                                                    a module run: about 80 ms more controller CPU each, the figures
#                                                    before 2026-12-07); BENCH_COLLECTIONS: another collections path;
#                                                    BENCH_AB="PATH_A PATH_B": two versions compared, their no-op
#                                                    re-runs alternated on the same host (below); logs in
#                                                    build/bench-noop/)
#
# The container reaches the real archives and PyPI through the suite's package cache (tests/scripts/test-cache.sh),
# as the Molecule scenarios do. It is removed at the end; a failed run prints its tail and exits 1.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
[ -x "$root/.venv/bin/ansible-playbook" ] && export PATH="$root/.venv/bin:$PATH"
distro=${BENCH_DISTRO:-ubuntu2404}
image=dlbox-test:$distro
name=dlbox-bench-noop-$$
work=$(mktemp -d /tmp/dlbox-bench-noop.XXXXXX)
keep="$root/build/bench-noop"
connection=${BENCH_CONNECTION:-ssh}
py=$(command -v python3)
[ -x "$root/.venv/bin/python" ] && py="$root/.venv/bin/python"
export ANSIBLE_COLLECTIONS_PATH="${BENCH_COLLECTIONS:-$root/build/collections}" ANSIBLE_NOCOLOR=1
export ANSIBLE_CALLBACK_PLUGINS="$root/tests/benchmarks/callback_plugins" ANSIBLE_CALLBACKS_ENABLED=dlbox_task_cpu
platforms="[{\"name\": \"$name\"}]"

cleanup() {
  mkdir -p "$keep" && cp "$work"/run-*.log "$work"/tasks-*.json "$work"/results "$keep/" 2>/dev/null
  if [ "$connection" = ssh ]; then
    echo "$platforms" | "$py" tests/scripts/molecule_containers.py destroy >/dev/null 2>&1
  else
    docker rm -f "$name" >/dev/null 2>&1
  fi
  [ -n "${DLBOX_TEST_CACHE_CLIENT:-}" ] && tests/scripts/test-cache.sh stop "$$" >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT

if ! docker image inspect "$image" >/dev/null 2>&1; then
  echo "bench: no image $image (run tests/images/build.sh first)" >&2
  exit 2
fi
rm -f "$keep"/run-*.log "$keep"/tasks-*.json "$keep"/results
client=.config/molecule/cache-off
if [ "${DLBOX_TEST_CACHE:-1}" = 1 ]; then
  tests/scripts/test-cache.sh start "$$" >/dev/null || exit 2
  client=build/test-cache/client
  export DLBOX_TEST_CACHE_CLIENT=$client
fi

case $connection in
  ssh)  # the container of .config/molecule/platform.yml, reached as the Molecule scenarios reach it
    export MOLECULE_DISTRO="$distro" ANSIBLE_PIPELINING=true \
      ANSIBLE_SSH_ARGS="-o ControlMaster=auto -o ControlPersist=60s" \
      ANSIBLE_SSH_CONTROL_PATH_DIR=/tmp/dlbox-cp ANSIBLE_SSH_CONTROL_PATH="%(directory)s/%%C"
    echo "$platforms" | "$py" tests/scripts/molecule_containers.py create >/dev/null || exit 2
    printf '%s ansible_connection=ssh ansible_ssh_common_args="-F %s/build/molecule-ssh/config"\n' "$name" "$root" \
      > "$work/hosts" ;;
  docker)
    docker run -d --name "$name" --cgroupns=host --cap-add SYS_ADMIN --tmpfs /run --tmpfs /run/lock --tmpfs /tmp \
      -v /sys/fs/cgroup:/sys/fs/cgroup:rw \
      -v "$root/$client/apt.conf:/etc/apt/apt.conf.d/01dlbox-test-cache:ro" \
      -v "$root/$client/pip.conf:/etc/xdg/pip/pip.conf:ro" \
      --stop-signal SIGRTMIN+3 "$image" /lib/systemd/systemd >/dev/null || exit 2
    printf '%s ansible_connection=community.docker.docker\n' "$name" > "$work/hosts" ;;
  *) echo "bench: BENCH_CONNECTION must be ssh or docker" >&2; exit 2 ;;
esac

# run N: `make workstation` against the container once; prints one line: wall s, controller CPU s, recap, tasks
run() {
  local start
  start=$(date +%s%N)
  # python_env off: since issue 45 a CPU-only host builds the plan's CPU PyTorch by default, from PyTorch's index,
  # which this machine cannot reach (and no CPU torch for ubuntu2404's Python 3.12 is on its disk); the figures
  # are the no-op run of the other roles, as before
  ANSIBLE_COLLECTIONS_PATH="${2:-$ANSIBLE_COLLECTIONS_PATH}" DLBOX_BENCH_TASK_CPU="$work/tasks-$1.json" /usr/bin/time -f "%U %S" -o "$work/cpu-$1" \
    ansible-playbook -i "$work/hosts" dlbox.stack.workstation -e dlbox_install_python_env=false \
    >"$work/run-$1.log" 2>&1
  run_done "$1" "$start" $?
}

. "$root/tests/benchmarks/bench_noop_lib.sh"

echo "make workstation on a CPU-only $distro test container (over $connection):"
run 1 || exit 1
noop_runs 2
ab_runs
