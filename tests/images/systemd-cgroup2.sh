#!/bin/sh
# PID 1 of the test images whose systemd needs the unified cgroup hierarchy (systemd >= 258 dropped cgroup v1: Ubuntu
# 26.04's systemd 259 exits at once, status 255, on a cgroup v1 host). Installed by the Dockerfile as
# /usr/lib/systemd/systemd (dpkg-divert: the real one is /usr/lib/systemd/dlbox-real/systemd) only in such images.
#
# The test machines are cgroup v1 hosts with a hybrid cgroup2 mount at /sys/fs/cgroup/unified (no controllers;
# docs: test-platform.md). When /sys/fs/cgroup is not cgroup2, this moves itself into a fresh sub-cgroup of that
# hierarchy (dlbox-test/<uuid>: one a container, so containers never share one), enters a cgroup namespace rooted
# there and mounts cgroup2 at /sys/fs/cgroup, then execs the real systemd as PID 1. Where /sys/fs/cgroup already is
# cgroup2 (a cgroup v2 host, or systemd's own daemon-reexec) it execs systemd directly. A test-image accommodation,
# not part of any role: a real Ubuntu 26.04 machine boots on cgroup v2.
set -eu
real=/usr/lib/systemd/dlbox-real/systemd
unified=/sys/fs/cgroup/unified
if [ "$(stat -fc %T /sys/fs/cgroup)" != cgroup2fs ] && [ "$(stat -fc %T "$unified" 2>/dev/null || true)" = cgroup2fs ]; then
  # empty sub-cgroups of stopped containers are removed (a busy one refuses rmdir); retried, as another container's
  # cleanup may remove a folder between its mkdir and the move
  find "$unified/dlbox-test" -mindepth 1 -depth -type d -empty -exec rmdir {} + 2>/dev/null || true
  id=$(cat /proc/sys/kernel/random/uuid)
  tries=0
  until mkdir -p "$unified/dlbox-test/$id" && echo $$ > "$unified/dlbox-test/$id/cgroup.procs" 2>/dev/null; do
    tries=$((tries + 1))
    [ "$tries" -lt 5 ] || { echo "systemd-cgroup2.sh: cannot move into $unified/dlbox-test/$id" >&2; exit 1; }
  done
  # shellcheck disable=SC2016  # expanded by the inner sh, in the new cgroup namespace
  exec unshare --cgroup sh -c 'umount -l /sys/fs/cgroup && mount -t cgroup2 -o nsdelegate cgroup2 /sys/fs/cgroup && exec "$0" "$@"' \
    "$real" "$@"
fi
exec "$real" "$@"
