#!/usr/bin/env bash
# Benchmark a fleet rollout: site.yml to 1, 3 and 6 fresh CPU-only test containers (dlbox-test:debian12, systemd as in
# the Molecule platforms), each size in one run: serial 100 % (one batch), forks 6, the suite's warm package cache;
# the role set is common (a real apt install of its build tools and probes) with the plan, the fitness report and
# the summaries around it (Docker and the framework environments off). Prints, per size, the first converge and the
# no-op re-run in seconds, and the ratio of 6 hosts to 1 (goal: at most 1.5). A benchmark that prints figures, not a
# timed test.
#
# Also per run: the controller's CPU seconds (ansible-playbook and its workers: user + system), to tell Ansible's own
# work per host from the hosts' (the containers share this machine's cores). Logs with per-task times
# (ansible.posix.profile_tasks when installed) are kept in build/bench-fleet/. BENCH_COLLECTIONS: another collections
# path (a copy of the collection, to compare two versions).
#
#   tests/benchmarks/bench_fleet.sh            (BENCH_SIZES="1 3 6"; BENCH_FORKS=6; BENCH_PIPELINING=1: Ansible's
#                                               pipelining on, as inventories/lab sets it; 0: off)
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
[ -x "$root/.venv/bin/ansible-playbook" ] && export PATH="$root/.venv/bin:$PATH"
export ANSIBLE_COLLECTIONS_PATH="${BENCH_COLLECTIONS:-$root/build/collections}" ANSIBLE_INJECT_FACT_VARS=false
image=dlbox-test:debian12
work=$(mktemp -d /tmp/dlbox-bench-fleet.XXXXXX)
keep="$root/build/bench-fleet${BENCH_TAG:+-$BENCH_TAG}"
mkdir -p "$keep"
export ANSIBLE_PIPELINING="${BENCH_PIPELINING:-1}" ANSIBLE_NOCOLOR=1
ansible-doc -t callback ansible.posix.profile_tasks >/dev/null 2>&1 && export ANSIBLE_CALLBACKS_ENABLED=ansible.posix.profile_tasks
names=()

cleanup() {
  cp "$work"/run-*.log "$keep/" 2>/dev/null
  [ ${#names[@]} -gt 0 ] && docker rm -f "${names[@]}" >/dev/null 2>&1
  tests/scripts/test-cache.sh stop "$$" >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT

docker image inspect "$image" >/dev/null 2>&1 || { echo "bench: no image $image (tests/images/build.sh)" >&2; exit 2; }
tests/scripts/test-cache.sh start "$$" >/dev/null || exit 2
client=build/test-cache/client

# one run of site.yml against the containers of $work/hosts-$1: "<wall seconds> <controller CPU seconds>" on stdout
run() {
  local start rc
  start=$(date +%s%N)
  (cd "$work" && ANSIBLE_CONFIG="$work/none.cfg" /usr/bin/time -f "%U %S" -o "cpu-$1-$2" \
    ansible-playbook -f "${BENCH_FORKS:-6}" -i "hosts-$1" dlbox.stack.site \
    -e "{\"dlbox_report_dir\": \"$work/reports\"}" >"run-$1-$2.log" 2>&1)
  rc=$?
  if [ $rc -ne 0 ]; then
    tail -30 "$work/run-$1-$2.log" >&2
    echo "bench: site.yml, $1 hosts, run $2 failed (rc $rc)" >&2
    exit 1
  fi
  echo "$(echo "scale=1; ($(date +%s%N) - $start) / 1000000000" | bc) $(awk '{ print $1 + $2 }' "$work/cpu-$1-$2")"
}

declare -A first second cpu1 cpu2
round=0
for n in ${BENCH_SIZES:-1 3 6}; do
  round=$((round + 1))  # a size may repeat (BENCH_SIZES="6 12 6 12": converge again on fresh containers)
  {
    echo "all:"
    echo "  vars: {ansible_connection: community.docker.docker, dlbox_install_docker: false, dlbox_install_python_env: false}"
    echo "  children: {workstations: {hosts: {"
  } > "$work/hosts-$n"
  for i in $(seq 1 "$n"); do
    name=dlbox-bench-fleet-$$-$round-$n-$i
    names+=("$name")
    docker run -d --name "$name" --cgroupns=host --cap-add SYS_ADMIN --tmpfs /run --tmpfs /run/lock --tmpfs /tmp \
      -v /sys/fs/cgroup:/sys/fs/cgroup:rw \
      -v "$root/$client/apt.conf:/etc/apt/apt.conf.d/01dlbox-test-cache:ro" \
      -v "$root/$client/pip.conf:/etc/xdg/pip/pip.conf:ro" \
      --stop-signal SIGRTMIN+3 "$image" /lib/systemd/systemd >/dev/null || exit 2
    echo "    $name: {}," >> "$work/hosts-$n"
  done
  echo "  }}}" >> "$work/hosts-$n"
  # Wait for each container's boot: systemd-tmpfiles-setup clears /tmp at boot (Debian's tmp.conf 'D /tmp'), and a
  # module payload Ansible put there before it ran is gone ('No such file or directory: /tmp/ansible_..._payload.zip'
  # on 2 of 12 hosts started at once, 2026-12-07). Over SSH the boot order does this (sshd starts after sysinit).
  # (systemctl answers "Failed to connect to bus" until systemd's bus is up: ask again until running or degraded.)
  for i in $(seq 1 "$n"); do
    state=
    for _ in $(seq 1 300); do
      state=$(timeout 60 docker exec "dlbox-bench-fleet-$$-$round-$n-$i" systemctl is-system-running --wait 2>/dev/null)
      case $state in running|degraded) break ;; esac
      sleep 1
    done
    case $state in running|degraded) ;; *) echo "bench: dlbox-bench-fleet-$$-$round-$n-$i did not finish booting ($state)" >&2; exit 2 ;; esac
  done
  read -r "first[$n]" "cpu1[$n]" < <(run "$n" 1) && [ -n "${first[$n]}" ] || exit 1
  read -r "second[$n]" "cpu2[$n]" < <(run "$n" 2) && [ -n "${second[$n]}" ] || exit 1
  echo "fleet rollout, $n host(s): first converge ${first[$n]} s (controller CPU ${cpu1[$n]} s)," \
       "no-op re-run ${second[$n]} s (controller CPU ${cpu2[$n]} s)"
done
if [ -n "${first[1]:-}" ] && [ -n "${first[6]:-}" ]; then
  echo "6 hosts / 1 host: first converge $(echo "scale=2; ${first[6]} / ${first[1]}" | bc)x," \
       "no-op re-run $(echo "scale=2; ${second[6]} / ${second[1]}" | bc)x (goal: at most 1.5x)"
fi
