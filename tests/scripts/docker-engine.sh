#!/usr/bin/env bash
# Make sure a Docker engine answers. When none does and we are root, install Debian's docker.io and
# start dockerd in the background (these machines have no systemd). Otherwise say what is missing.
set -euo pipefail
if docker info >/dev/null 2>&1; then exit 0; fi
if [ "$(id -u)" != 0 ]; then
  echo "docker-engine: no Docker engine answers and I am not root: start one (or run make test as root)." >&2
  exit 2
fi
if ! command -v dockerd >/dev/null 2>&1; then
  bash "$(dirname "$0")/../../tools/apt-install.sh" docker-engine docker.io
fi
if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
  systemctl start docker
else
  echo "docker-engine: starting dockerd in the background (log: /var/log/dockerd.log)"
  setsid dockerd >/var/log/dockerd.log 2>&1 < /dev/null &
fi
for _ in $(seq 1 60); do
  docker info >/dev/null 2>&1 && exit 0
  sleep 1
done
echo "docker-engine: dockerd did not answer within 60 s; see /var/log/dockerd.log" >&2
tail -20 /var/log/dockerd.log >&2 || true
exit 2
