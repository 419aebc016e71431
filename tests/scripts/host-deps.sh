#!/usr/bin/env bash
# Host packages the test suite needs: debootstrap (test images), dpkg-dev tools and gpg (fixture
# apt repositories), python3-venv. Installed only when missing; root is needed then.
set -euo pipefail
need=()
command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
command -v dpkg-deb >/dev/null 2>&1 || need+=(dpkg)
command -v gpg >/dev/null 2>&1 || need+=(gnupg)
command -v curl >/dev/null 2>&1 || need+=(curl)
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ]; then
  echo "host-deps: missing ${need[*]}; install them (apt-get install ${need[*]}) or run as root." >&2
  exit 2
fi
echo "host-deps: installing ${need[*]}"
apt-get update -qq >/dev/null
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
