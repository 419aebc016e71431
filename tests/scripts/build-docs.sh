#!/usr/bin/env bash
# Copyright: (c) 2026, dlbox.stack contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# The collection's HTML docs site (`make docs`): antsibull-docs renders the modules, filters and roles
# (from their argument specs) of the collection that ANSIBLE_COLLECTIONS_PATH holds; Sphinx builds the
# site. Offline: intersphinx is off (its inventories live on docs.python.org and docs.ansible.com), so
# links to Ansible's own docs (ansible.builtin modules, 'common return values') stay plain text; those
# warnings are summed up, and any other warning (a broken link inside this collection) fails.
#   tests/scripts/build-docs.sh OUT_DIR        -> OUT_DIR/build/html/index.html
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:?usage: build-docs.sh OUT_DIR}
venv=${DLBOX_PACKAGING_VENV:-$root/build/packaging-venv}
bash "$root/tests/scripts/packaging-venv.sh" "$venv" "$root/tests/scripts/packaging-requirements.txt"
export PATH="$venv/bin:$PATH"
collection=$("$venv/bin/python" -c 'import sys, yaml; g = yaml.safe_load(open(sys.argv[1])); print("%s.%s" % (g["namespace"], g["name"]))' "$root/galaxy.yml")
rm -rf "$out"
mkdir -p "$(dirname "$out")"
mkdir -m 700 "$out"   # antsibull-docs wants a folder only its owner can write to
antsibull-docs sphinx-init --use-current --dest-dir "$out" "$collection" >/dev/null
printf '\n# dlbox.stack: built offline, no inventories fetched.\nintersphinx_mapping = {}\n' >>"$out/conf.py"
mkdir -m 700 "$out/rst/collections"
antsibull-docs --config-file "$out/antsibull-docs.cfg" collection --use-current --dest-dir "$out/rst" "$collection"
sphinx-build -M html "$out/rst" "$out/build" -q -c "$out" --keep-going 2>"$out/sphinx-warnings.log"
# Labels of Ansible's own docs look like 'common_return_values' or 'ansible_collections.ansible.builtin...'.
own=$(grep 'WARNING' "$out/sphinx-warnings.log" | grep -vE "undefined label: '(ansible_collections\.ansible\.builtin\.[^']*|[a-z0-9_]+)'" || true)
external=$(grep -c 'WARNING' "$out/sphinx-warnings.log" || true)
if [ -n "$own" ]; then
  printf '%s\n' "$own"
  echo "docs: FAILED, the warnings above are about this collection's own docs" >&2
  exit 1
fi
echo "docs: $out/build/html/index.html ($external link(s) to Ansible's own docs left as text: no intersphinx offline)"
