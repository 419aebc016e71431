#!/usr/bin/env bash
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# Create .venv for dlbox.stack's controller tools (ansible-core 2.19 needs Python >= 3.11) and
# install the pinned requirements. On a fresh Debian/Ubuntu, as root, it installs what is missing:
# the venv module (python3-venv), and on Ubuntu 22.04, whose python3 is 3.10, python3.11 from universe.
#
#   tools/venv.sh VENV_DIR REQUIREMENTS_FILE       (PYTHON=/path/to/python3.x to choose the interpreter)
set -euo pipefail
venv=${1:?usage: tools/venv.sh VENV_DIR REQUIREMENTS_FILE}
req=${2:?usage: tools/venv.sh VENV_DIR REQUIREMENTS_FILE}
MIN_MINOR=11

say() { printf 'venv: %s\n' "$*"; }

new_enough() {  # python >= 3.MIN_MINOR
  "$1" -c "import sys; sys.exit(0 if sys.version_info[:2] >= (3, $MIN_MINOR) else 1)" >/dev/null 2>&1
}

pick() {  # the first new enough interpreter
  local c
  for c in ${PYTHON:-} python3.14 python3.13 python3.12 python3.11 python3; do
    command -v "$c" >/dev/null 2>&1 && new_enough "$(command -v "$c")" && { command -v "$c"; return 0; }
  done
  return 1
}

apt_install() {
  bash "$(dirname "$0")/apt-install.sh" venv "$@"
}

make_venv() {  # Debian's python has ensurepip only with pythonX.Y-venv: trying is the only sure test
  rm -rf "$venv"
  "$1" -m venv "$venv" >/dev/null 2>&1
}

need_help() {
  echo "venv: dlbox.stack needs Python >= 3.$MIN_MINOR with its venv module for the controller tools" \
       "(ansible-core 2.19). Install python3.$MIN_MINOR-venv (on Ubuntu 22.04: python3.11 and python3.11-venv" \
       "from universe), or set PYTHON=/path/to/python3.x, then run make again." >&2
  exit 2
}

if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -m pip --version >/dev/null 2>&1; then
  if ! py=$(pick); then
    apt_install "python3.$MIN_MINOR" "python3.$MIN_MINOR-venv" || need_help
    py=$(pick) || need_help
  fi
  if ! make_venv "$py"; then
    ver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
    apt_install "python$ver-venv" || need_help
    make_venv "$py" || need_help
  fi
  say "created $venv with $py"
fi
# The machine's pip configuration may name local package folders that do not exist; their warnings
# are noise here, everything else pip says is kept.
{ "$venv/bin/python" -m pip install -q --upgrade pip 2>&1 && "$venv/bin/python" -m pip install -q -r "$req" 2>&1; } \
  | { grep -v '^WARNING: Location .* is ignored' || true; }
