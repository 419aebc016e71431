#!/usr/bin/env bash
# Benchmark workstation.yml's no-op re-run on the FIXTURE GPU host (tests/fixtures/gpu_host: a model of an RTX 4090
# machine, NOT a GPU), as molecule/gpu_host runs it (its prepare.yml and run.yml: NVIDIA's repository from the fixture
# CUDA repository, the driver, dlbox-check's environment and the summary; CUDA, cuDNN, NCCL and Docker off), reached
# over SSH with pipelining as the Molecule scenarios and a lab's hosts are (tests/scripts/molecule_containers.py), with
# this repository's ansible.cfg (as `make workstation`). Run 1 installs the driver ("pending reboot"), the stub reboot
# loads it, run 2 runs the GPU checks, then BENCH_NOOP_RUNS (default 2) re-runs that have nothing to do: their time is
# what a lab pays to confirm a converged GPU machine (issue 47: 39 s on this host before). Prints each run's wall time,
# task counts (ok/changed/skipped from its recap, tasks printed) and the controller's CPU seconds (ansible-playbook and
# its workers, user + system), then the 15 most expensive tasks of the no-op re-runs (medians, with file:line).
#
#   tests/benchmarks/bench_workstation_gpu_noop.sh        (BENCH_DISTRO=ubuntu2404 or ubuntu2204; DLBOX_TEST_CACHE=0:
#                                                          no package cache; BENCH_COLLECTIONS: another collections
#                                                          path; BENCH_AB="PATH_A PATH_B": two versions compared,
#                                                          their no-op re-runs alternated on the same host (below);
#                                                          logs in build/bench-gpu-noop/)
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
[ -x "$root/.venv/bin/ansible-playbook" ] && export PATH="$root/.venv/bin:$PATH"
distro=${BENCH_DISTRO:-ubuntu2404}
image=dlbox-test:$distro
name=dlbox-bench-gpu-$$
work=$(mktemp -d /tmp/dlbox-bench-gpu.XXXXXX)
keep="$root/build/bench-gpu-noop"
py=$(command -v python3)
[ -x "$root/.venv/bin/python" ] && py="$root/.venv/bin/python"
# run.yml and prepare.yml read the tree, the distribution and where to write the summary from Molecule's variables
export MOLECULE_PROJECT_DIRECTORY="$root" MOLECULE_DISTRO="$distro" MOLECULE_EPHEMERAL_DIRECTORY="$work"
export ANSIBLE_COLLECTIONS_PATH="${BENCH_COLLECTIONS:-$root/build/collections}" ANSIBLE_NOCOLOR=1
# the connection of the Molecule scenarios (.config/molecule/config.yml): one multiplexed SSH master, pipelining
export ANSIBLE_PIPELINING=true ANSIBLE_SSH_ARGS="-o ControlMaster=auto -o ControlPersist=60s" \
  ANSIBLE_SSH_CONTROL_PATH_DIR=/tmp/dlbox-cp ANSIBLE_SSH_CONTROL_PATH="%(directory)s/%%C"
export ANSIBLE_CALLBACK_PLUGINS="$root/tests/benchmarks/callback_plugins" ANSIBLE_CALLBACKS_ENABLED=dlbox_task_cpu
platforms="[{\"name\": \"$name\"}]"

cleanup() {
  mkdir -p "$keep" && cp "$work"/run-*.log "$work"/tasks-*.json "$work"/results "$keep/" 2>/dev/null
  echo "$platforms" | "$py" tests/scripts/molecule_containers.py destroy >/dev/null 2>&1
  [ -n "${DLBOX_TEST_CACHE_CLIENT:-}" ] && tests/scripts/test-cache.sh stop "$$" >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT

if ! docker image inspect "$image" >/dev/null 2>&1; then
  echo "bench: no image $image (run tests/images/build.sh first)" >&2
  exit 2
fi
rm -f "$keep"/run-*.log "$keep"/tasks-*.json "$keep"/results
if [ "${DLBOX_TEST_CACHE:-1}" = 1 ]; then
  tests/scripts/test-cache.sh start "$$" >/dev/null || exit 2
  export DLBOX_TEST_CACHE_CLIENT=build/test-cache/client
fi
echo "$platforms" | "$py" tests/scripts/molecule_containers.py create >/dev/null || exit 2
printf '%s ansible_connection=ssh ansible_ssh_common_args="-F %s/build/molecule-ssh/config"\n' "$name" "$root" \
  > "$work/hosts"

# play PLAYBOOK LOG: one ansible-playbook of a molecule/gpu_host playbook; a failure prints the tail and exits 1
play() {
  if ! ansible-playbook -i "$work/hosts" "$1" >"$work/$2.log" 2>&1; then
    tail -40 "$work/$2.log" >&2
    echo "bench: $1 failed" >&2
    exit 1
  fi
}

# run N: workstation.yml (molecule/gpu_host/run.yml) once; prints one line: wall s, controller CPU s, recap, tasks
run() {
  local start
  start=$(date +%s%N)
  ANSIBLE_COLLECTIONS_PATH="${2:-$ANSIBLE_COLLECTIONS_PATH}" DLBOX_BENCH_TASK_CPU="$work/tasks-$1.json" GPU_HOST_SUMMARY="$work/summary-$1.json" \
    /usr/bin/time -f "%U %S" -o "$work/cpu-$1" \
    ansible-playbook -i "$work/hosts" molecule/gpu_host/run.yml >"$work/run-$1.log" 2>&1
  run_done "$1" "$start" $?
}

. "$root/tests/benchmarks/bench_noop_lib.sh"

play molecule/gpu_host/prepare.yml prepare
echo "workstation.yml on the FIXTURE GPU host ($distro test container, over SSH):"
run 1 || exit 1
if ! ansible -i "$work/hosts" all -m ansible.builtin.reboot \
  -a "reboot_command=/opt/dlbox-fixture-gpu/bin/reboot boot_time_command=/opt/dlbox-fixture-gpu/bin/boot-id reboot_timeout=120" \
  >"$work/run-reboot.log" 2>&1; then
  tail -20 "$work/run-reboot.log" >&2
  exit 1
fi
echo "(the stub reboot)"
run 2 || exit 1
noop_runs 3
ab_runs
