#!/usr/bin/env bash
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# Install Debian packages the project's own commands need, the one way they all do it:
#   tools/apt-install.sh WHO PACKAGE...
# As root with apt-get: refresh the lists and install. Otherwise say what to install and exit 2.
set -euo pipefail
who=${1:?usage: tools/apt-install.sh WHO PACKAGE...}
shift
[ $# -gt 0 ] || exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "$who: missing $*; install them (apt-get install $*) or run as root on a Debian-like machine." >&2
  exit 2
fi
echo "$who: installing $*"
apt-get update -qq >/dev/null
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
