#!/usr/bin/env bash
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# The packaging judges' own venv (galaxy-importer, antsibull-docs), kept apart from .venv because
# their pins clash with the controller tools'. Made once; reused while the pins file is unchanged
# (a stamp holds the file's hash), so a warm run costs nothing.
#   tests/scripts/packaging-venv.sh VENV_DIR REQUIREMENTS_FILE
set -euo pipefail
venv=${1:?usage: packaging-venv.sh VENV_DIR REQUIREMENTS_FILE}
req=${2:?usage: packaging-venv.sh VENV_DIR REQUIREMENTS_FILE}
here=$(cd "$(dirname "$0")" && pwd)
want=$(sha256sum "$req" | cut -d' ' -f1)
stamp="$venv/.dlbox-pins"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x "$venv/bin/antsibull-docs" ]; then
  exit 0
fi
echo "packaging-venv: installing the pinned packaging judges into $venv"
rm -rf "$venv"
bash "$here/../../tools/venv.sh" "$venv" "$req"
echo "$want" > "$stamp"
