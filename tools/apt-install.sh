#!/usr/bin/env bash
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# Install Debian packages the project's own commands need, the one way they all do it:
#   tools/apt-install.sh WHO PACKAGE...
# As root with apt-get: refresh the lists and install. Otherwise say what to install and exit 2.
# Callers may run at once (make -j2 builds host-deps and docker-engine side by side; on a fresh machine both install):
# one at a time, through a lock, and apt waits for a lock another apt holds instead of failing.
set -euo pipefail
who=${1:?usage: tools/apt-install.sh WHO PACKAGE...}
shift
[ $# -gt 0 ] || exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "$who: missing $*; install them (apt-get install $*) or run as root on a Debian-like machine." >&2
  exit 2
fi
lockdir=/run/lock
[ -d "$lockdir" ] || lockdir=/var/lib/apt
exec 9>"$lockdir/dlbox-apt-install.lock"
flock 9
echo "$who: installing $*"
apt-get -o DPkg::Lock::Timeout=600 update -qq >/dev/null
DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq "$@" >/dev/null
